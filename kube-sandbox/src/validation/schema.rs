//! CRD schema engine: what kube-apiserver does with a CustomResourceDefinition version's
//! `openAPIV3Schema` when the CRD is created and when custom resources are written.
//!
//! The recommended order for a create or update is the apiserver's:
//! [`prune_unknown`] (decoding) → [`default_object`] → [`validate_object`].
//!
//! ## Implemented
//!
//! * [`validate_crd_schema`] — structural-schema and CRD-API checks, with the apiserver's field
//!   paths and wording (paths are relative to `openAPIV3Schema`; prefix them with
//!   [`FieldError::with_prefix`]):
//!   every node has a `type` (unless `x-kubernetes-int-or-string` or
//!   `x-kubernetes-preserve-unknown-fields`); `type` is one of array, boolean, integer, number,
//!   object, string (`null` is forbidden); the root is an object without `additionalProperties`;
//!   arrays have `items` (a schema, not a list); `properties` and `additionalProperties` are
//!   exclusive; `$ref`, `id`, `patternProperties`, `definitions`, `dependencies`,
//!   `additionalItems` and `uniqueItems: true` are forbidden; `pattern` compiles;
//!   `x-kubernetes-preserve-unknown-fields` is true or absent and not combined with
//!   int-or-string; `x-kubernetes-embedded-resource` is an object; root `kind`/`apiVersion`
//!   are strings and root `metadata` restricts nothing but `name`/`generateName`;
//!   `allOf`/`anyOf`/`oneOf`/`not` carry no `type`, `default`, `description`, `title`,
//!   `nullable`, `additionalProperties` or `x-kubernetes-*` (except the two int-or-string
//!   patterns), never mention `metadata`, and only name properties/items that the structural
//!   schema declares; `x-kubernetes-list-type` is atomic/set/map on arrays, `map` has
//!   `x-kubernetes-list-map-keys` naming required-or-defaulted scalar item properties, and
//!   `set` items are scalars or atomic; `x-kubernetes-map-type` is atomic/granular;
//!   `x-kubernetes-validations` entries have a rule, a valid `reason` and a well-formed
//!   `fieldPath`; every `default` contains no field pruning would drop and validates against
//!   its schema (after the defaults nested inside it are applied).
//! * [`default_object`] — structural defaulting: non-nullable `null`s without a default are
//!   dropped, missing properties and non-nullable `null`s get the schema `default`
//!   (recursively, so defaults inside defaults apply; a root property such as `spec` with a
//!   `default` is created), for `properties`, `additionalProperties` and `items`.
//! * [`prune_unknown`] — structural pruning: unknown fields are dropped unless
//!   `x-kubernetes-preserve-unknown-fields: true` (known fields below such a node are still
//!   pruned); `additionalProperties` keeps every key (`additionalProperties: true` keeps the
//!   key but, as in the apiserver, empties nested objects); `apiVersion`, `kind` and `metadata` are
//!   kept at the root and in `x-kubernetes-embedded-resource` objects. Returns the dropped paths
//!   (`spec.foo`, `spec.items[0].bar`), which the apiserver reports as `unknown field` warnings.
//! * [`validate_object`] — kube-openapi validation as the apiserver converts it to field
//!   errors: `type` (with `nullable`, int-or-string, integral numbers for `integer`), `enum`,
//!   `required`, `properties`, `additionalProperties` (bool or schema), `items`,
//!   `maxLength`/`minLength` (Unicode code points), `pattern` (RE2, as Go's regexp),
//!   `format` (`date-time`, `date`, `byte`, `uuid`/`uuid3`/`uuid4`/`uuid5`, `ipv4`, `ipv6`,
//!   `cidr`, `mac`, `hostname`, `email`, `uri`, `duration`, `hexcolor`, `rgbcolor`,
//!   `bsonobjectid`, `ssn`, `password`), `minimum`/`maximum` with `exclusiveMinimum`/
//!   `exclusiveMaximum`, `multipleOf`, `minItems`/`maxItems`, `uniqueItems` (which CRDs cannot
//!   declare, but a stored schema might),
//!   `minProperties`/`maxProperties`, `allOf`/`anyOf`/`oneOf`/`not`; then the
//!   `x-kubernetes-list-type` set/map uniqueness checks; then, unless an earlier error is a
//!   blocking one (Required, NotSupported, TooLong, TooMany, TypeInvalid — the apiserver then
//!   adds its "some validation rules were not checked" error), the `x-kubernetes-validations`
//!   CEL rules through [`crate::validation::cel`]. Transition rules (mentioning `oldSelf`) run only on
//!   update where the old value exists (correlated through properties, map keys and list-type
//!   map keys). On update, validation ratchets as in Kubernetes 1.30+: errors (and
//!   non-transition rules) inside a value equal to its correlated old value are ignored. Root
//!   `metadata` is only checked for the `name`/`generateName` constraints the schema may carry.
//! * [`FieldError`] — apimachinery field errors with the apiserver's wording
//!   ([`FieldError::to_string_k8s`]) and Status cause reasons ([`FieldError::reason`]).
//! * [`unsupported_rules`] — the rules [`validate_object`] skips.
//!
//! ## Approximated or missing
//!
//! * `format: int32`/`int64`/`float`/`double` are not range-checked: the apiserver strips these
//!   formats from CRD schemas too. `isbn*` and `creditcard` formats are accepted unchecked;
//!   `email`, `uri`, `duration` and `hostname` are close approximations of Go's parsers.
//! * CEL: only the subset listed in [`crate::validation::cel`]; rules that do not parse, use anything else
//!   (timestamps, durations, quantities, optionals, `type()`...), set `optionalOldSelf`, or hit a
//!   type mismatch at run time are skipped, never failed; so are rules nested deeper than the
//!   parser allows or needing more than a million evaluation steps (the apiserver has a cost
//!   budget instead). `messageExpression` is ignored (the `message` is used).
//! * When `anyOf`/`oneOf` fail, the errors of the branch with the fewest errors are reported
//!   (kube-openapi picks the branch with the most passing checks).
//! * Validation stops at a node whose type is wrong (kube-openapi may add an `enum` error too).
//! * `additionalProperties: false` is enforced ("is a forbidden property"), as kube-openapi does.
//! * Embedded resources (`x-kubernetes-embedded-resource`) are not checked for
//!   `apiVersion`/`kind`/`metadata` validity.
//! * `x-kubernetes-validations` `fieldPath` is not checked against the schema when the CRD is
//!   created; rule compilation errors never reject a CRD.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::cel::{self, CelValue, EvalError};
use super::gocompat::{cached_regex, go_format_float, go_quote};

/// Field name the apiserver prints for an error without a path (a nil `field.Path`).
pub const NIL_FIELD: &str = "<nil>";

/// The kind of a field error (apimachinery `field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// `FieldValueInvalid`.
    Invalid,
    /// `FieldValueRequired`.
    Required,
    /// `FieldValueNotSupported`.
    NotSupported,
    /// `FieldValueTooLong`.
    TooLong,
    /// `FieldValueTooMany`.
    TooMany,
    /// `FieldValueDuplicate`.
    Duplicate,
    /// `FieldValueTypeInvalid`.
    TypeInvalid,
    /// `FieldValueForbidden`.
    Forbidden,
}

impl FieldErrorKind {
    /// The Status cause reason.
    pub fn reason(self) -> &'static str {
        match self {
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::NotSupported => "FieldValueNotSupported",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::TooMany => "FieldValueTooMany",
            FieldErrorKind::Duplicate => "FieldValueDuplicate",
            FieldErrorKind::TypeInvalid => "FieldValueTypeInvalid",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
        }
    }

    /// The human label apimachinery prints ("Invalid value", "Required value", ...).
    pub fn label(self) -> &'static str {
        match self {
            FieldErrorKind::Invalid | FieldErrorKind::TypeInvalid => "Invalid value",
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::TooMany => "Too many",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::Forbidden => "Forbidden",
        }
    }
}

/// A field-level validation error, as apimachinery's `field.Error`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.to_string_k8s())]
pub struct FieldError {
    /// What kind of error.
    pub kind: FieldErrorKind,
    /// The field path, e.g. `spec.timeWindows[0].start` (`<nil>` for the object itself).
    pub field: String,
    /// The detail, e.g. `spec.clusterID in body should match '^[a-z]'`; may be empty.
    pub message: String,
    /// The offending value, printed for every kind but Required, Forbidden and TooLong.
    pub bad_value: Option<Value>,
}

impl FieldError {
    fn new(
        kind: FieldErrorKind,
        field: impl Into<String>,
        bad_value: Option<Value>,
        message: impl Into<String>,
    ) -> Self {
        FieldError {
            kind,
            field: field.into(),
            message: message.into(),
            bad_value,
        }
    }

    /// `field.Invalid`.
    pub fn invalid(
        field: impl Into<String>,
        bad_value: Option<Value>,
        message: impl Into<String>,
    ) -> Self {
        Self::new(FieldErrorKind::Invalid, field, bad_value, message)
    }

    /// `field.TypeInvalid`.
    pub fn type_invalid(
        field: impl Into<String>,
        bad_value: Option<Value>,
        message: impl Into<String>,
    ) -> Self {
        Self::new(FieldErrorKind::TypeInvalid, field, bad_value, message)
    }

    /// `field.Required`.
    pub fn required(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Required, field, None, message)
    }

    /// `field.Forbidden`.
    pub fn forbidden(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Forbidden, field, None, message)
    }

    /// `field.Duplicate`.
    pub fn duplicate(field: impl Into<String>, bad_value: Value) -> Self {
        Self::new(FieldErrorKind::Duplicate, field, Some(bad_value), "")
    }

    /// `field.NotSupported` with the list of supported values.
    pub fn not_supported(field: impl Into<String>, bad_value: Value, supported: &[String]) -> Self {
        let message = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(
            FieldErrorKind::NotSupported,
            field,
            Some(bad_value),
            message,
        )
    }

    /// `field.TooLongMaxLength`.
    pub fn too_long(field: impl Into<String>, bad_value: Value, max: i64) -> Self {
        Self::new(
            FieldErrorKind::TooLong,
            field,
            Some(bad_value),
            format!("may not be longer than {max}"),
        )
    }

    /// `field.TooMany`.
    pub fn too_many(field: impl Into<String>, actual: usize, max: i64) -> Self {
        Self::new(
            FieldErrorKind::TooMany,
            field,
            Some(Value::from(actual)),
            format!("must have at most {max} items"),
        )
    }

    /// The Status cause reason (`FieldValueInvalid`, ...).
    pub fn reason(&self) -> &'static str {
        self.kind.reason()
    }

    /// The message without the field (`ErrorBody`), used as the Status cause message.
    pub fn error_body(&self) -> String {
        let mut body = self.kind.label().to_string();
        if !matches!(
            self.kind,
            FieldErrorKind::Required | FieldErrorKind::Forbidden | FieldErrorKind::TooLong
        ) {
            body.push_str(": ");
            body.push_str(&go_value(self.bad_value.as_ref()));
        }
        if !self.message.is_empty() {
            body.push_str(": ");
            body.push_str(&self.message);
        }
        body
    }

    /// The apiserver's rendering, e.g.
    /// `spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`.
    pub fn to_string_k8s(&self) -> String {
        format!("{}: {}", self.field, self.error_body())
    }

    /// Puts `prefix` in front of the field (`<nil>` becomes the prefix itself), e.g. to turn
    /// [`validate_crd_schema`] paths into `spec.versions[0].schema.openAPIV3Schema....`.
    pub fn with_prefix(mut self, prefix: &str) -> Self {
        self.field = if self.field == NIL_FIELD || self.field.is_empty() {
            prefix.to_string()
        } else if prefix.is_empty() {
            self.field
        } else if self.field.starts_with('[') {
            format!("{prefix}{}", self.field)
        } else {
            format!("{prefix}.{}", self.field)
        };
        self
    }
}

/// Formats a bad value as Go's `ErrorBody` does: strings quoted, numbers and bools plain, nil as
/// `"null"`, maps and slices in `%#v` syntax.
fn go_value(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => go_quote("null"),
        Some(Value::String(s)) => go_quote(s),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => go_number(n),
        Some(other) => go_sharp_v(other),
    }
}

fn go_number(n: &serde_json::Number) -> String {
    if n.is_f64() {
        go_format_float(n.as_f64().unwrap_or(f64::NAN))
    } else {
        n.to_string()
    }
}

/// Go's `%#v` of an unstructured value.
fn go_sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            let s = go_number(n);
            if n.is_f64() && !s.contains(['.', 'e', 'I', 'N']) {
                format!("{s}.0")
            } else {
                s
            }
        }
        Value::String(s) => go_quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", parts.join(", "))
        }
        Value::Object(m) => {
            let sorted: BTreeMap<&String, &Value> = m.iter().collect();
            let parts: Vec<String> = sorted
                .iter()
                .map(|(k, v)| format!("{}:{}", go_quote(k), go_sharp_v(v)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Schema accessors

const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
const INT_OR_STRING: &str = "x-kubernetes-int-or-string";
const EMBEDDED: &str = "x-kubernetes-embedded-resource";
const LIST_TYPE: &str = "x-kubernetes-list-type";
const LIST_MAP_KEYS: &str = "x-kubernetes-list-map-keys";
const MAP_TYPE: &str = "x-kubernetes-map-type";
const VALIDATIONS: &str = "x-kubernetes-validations";

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn str_of<'a>(schema: &'a Value, key: &str) -> Option<&'a str> {
    schema.get(key).and_then(Value::as_str)
}

fn num_of(schema: &Value, key: &str) -> Option<f64> {
    schema.get(key).and_then(Value::as_f64)
}

fn int_of(schema: &Value, key: &str) -> Option<i64> {
    let v = schema.get(key)?;
    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
}

fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

fn items_schema(schema: &Value) -> Option<&Value> {
    schema.get("items").filter(|i| i.is_object())
}

/// What `additionalProperties` says about keys not in `properties`.
enum Additional<'a> {
    /// Not set: unknown keys are pruned (or preserved with preserve-unknown-fields).
    Unset,
    /// `true` or `false`.
    Bool(bool),
    /// A schema for every other key.
    Schema(&'a Value),
}

fn additional(schema: &Value) -> Additional<'_> {
    match schema.get("additionalProperties") {
        Some(Value::Bool(b)) => Additional::Bool(*b),
        Some(s @ Value::Object(_)) => Additional::Schema(s),
        _ => Additional::Unset,
    }
}

fn additional_schema(schema: &Value) -> Option<&Value> {
    match additional(schema) {
        Additional::Schema(s) => Some(s),
        _ => None,
    }
}

fn schema_types(schema: &Value) -> Vec<&str> {
    if flag(schema, INT_OR_STRING) {
        vec!["integer", "string"]
    } else {
        str_of(schema, "type").into_iter().collect()
    }
}

/// The JSON type name as Go decodes JSON: integers without fraction or exponent are `integer`.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// go-openapi's `IsFloat64AJSONInteger`.
fn is_json_integer(f: f64) -> bool {
    f.is_finite() && f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0
}

fn type_matches(types: &[&str], v: &Value) -> bool {
    let t = json_type(v);
    types.contains(&t)
        || (t == "number" && types.contains(&"integer") && v.as_f64().is_some_and(is_json_integer))
        || (t == "integer" && types.contains(&"number"))
}

/// Deep equality with numbers compared by value (so `1` equals `1.0`).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(p), Some(q)) => p == q,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(p), Some(q)) => p == q,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// Canonical text of a value for set membership, keeping Go's distinction between `1` and
/// `1.0` for scalars and sorting object keys as `json.Marshal` does.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, &Value> = m.iter().collect();
            let parts: Vec<String> = sorted
                .iter()
                .map(|(k, v)| format!("{}:{}", Value::String((*k).clone()), canonical(v)))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Number(n) if n.is_f64() => format!("f{n}"),
        other => other.to_string(),
    }
}

/// Object entries in key order, whatever order the map keeps, so errors come out stably.
fn sorted_entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// kube-openapi joins property names with dots and no leading dot.
fn join_name(base: &str, key: &str) -> String {
    if base.is_empty() {
        key.to_string()
    } else {
        format!("{base}.{key}")
    }
}

/// apimachinery `field.Path.Child`.
fn path_child(base: &str, name: &str) -> String {
    join_name(base, name)
}

/// apimachinery `field.Path.Key` / `Index`.
fn path_sub(base: &str, key: impl std::fmt::Display) -> String {
    format!("{base}[{key}]")
}

fn nil_if_empty(path: &str) -> String {
    if path.is_empty() {
        NIL_FIELD.to_string()
    } else {
        path.to_string()
    }
}

/// The old list item a new item of a list-type `map` (by keys) or `set` (by value) correlates
/// with; other lists do not correlate items.
fn correlate_item<'a>(schema: &Value, old: Option<&'a Value>, item: &Value) -> Option<&'a Value> {
    let old_items = old?.as_array()?;
    match str_of(schema, LIST_TYPE) {
        Some("map") => {
            let keys: Vec<&str> = schema
                .get(LIST_MAP_KEYS)?
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let item = item.as_object()?;
            old_items.iter().find(|o| {
                o.as_object().is_some_and(|o| {
                    keys.iter().all(|k| match (item.get(*k), o.get(*k)) {
                        (Some(a), Some(b)) => json_equal(a, b),
                        (None, None) => true,
                        _ => false,
                    })
                })
            })
        }
        Some("set") => old_items.iter().find(|o| json_equal(o, item)),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Defaulting

/// Applies schema defaults to `obj` in place, as the apiserver does when decoding a custom
/// resource: drops non-nullable `null`s that have no default, then fills missing properties
/// (and non-nullable `null`s) from `default`, recursing into objects, maps and lists, including
/// into values that were just defaulted.
pub fn default_object(schema: &Value, obj: &mut Value) {
    default_node(schema, obj);
}

fn default_node(schema: &Value, v: &mut Value) {
    match v {
        Value::Object(map) => {
            let props = properties(schema);
            let extra = additional_schema(schema);
            let null_keys: Vec<String> = map
                .iter()
                .filter(|(_, v)| v.is_null())
                .map(|(k, _)| k.clone())
                .collect();
            for key in null_keys {
                let Some(sub) = props.and_then(|p| p.get(&key)).or(extra) else {
                    continue;
                };
                if flag(sub, "nullable") {
                    continue;
                }
                match sub.get("default") {
                    Some(d) => {
                        map.insert(key, d.clone());
                    }
                    None => {
                        map.remove(&key);
                    }
                }
            }
            if let Some(props) = props {
                for (key, prop) in props {
                    if let Some(d) = prop.get("default")
                        && !map.contains_key(key)
                    {
                        map.insert(key.clone(), d.clone());
                    }
                }
            }
            for (key, child) in map.iter_mut() {
                if let Some(sub) = props.and_then(|p| p.get(key)).or(extra) {
                    default_node(sub, child);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = items_schema(schema) else {
                return;
            };
            for item in items.iter_mut() {
                if item.is_null()
                    && !flag(item_schema, "nullable")
                    && let Some(d) = item_schema.get("default")
                {
                    *item = d.clone();
                }
                default_node(item_schema, item);
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Pruning

/// Drops the fields of `obj` the schema does not declare, as the apiserver does when decoding a
/// custom resource, and returns their paths (`spec.foo`, `spec.list[0].bar`).
pub fn prune_unknown(schema: &Value, obj: &mut Value) -> Vec<String> {
    let mut pruned = Vec::new();
    prune_node(Some(schema), obj, "", true, &mut pruned);
    pruned.sort();
    pruned
}

fn is_meta_field(key: &str) -> bool {
    matches!(key, "apiVersion" | "kind" | "metadata")
}

fn prune_node(
    schema: Option<&Value>,
    v: &mut Value,
    path: &str,
    resource_root: bool,
    pruned: &mut Vec<String>,
) {
    let schema = schema.filter(|s| s.is_object());
    if let Some(s) = schema
        && flag(s, PRESERVE)
    {
        skip_prune(s, v, path, resource_root, pruned);
        return;
    }
    match v {
        Value::Object(map) => {
            let Some(s) = schema else {
                pruned.extend(map.keys().map(|k| join_name(path, k)));
                map.clear();
                return;
            };
            let embedded = resource_root || flag(s, EMBEDDED);
            let props = properties(s);
            let extra = additional(s);
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                if embedded && is_meta_field(&key) {
                    continue;
                }
                let child_path = join_name(path, &key);
                let Some(child) = map.get_mut(&key) else {
                    continue;
                };
                if let Some(prop) = props.and_then(|p| p.get(&key)) {
                    prune_node(Some(prop), child, &child_path, false, pruned);
                    continue;
                }
                match extra {
                    Additional::Schema(a) => prune_node(Some(a), child, &child_path, false, pruned),
                    // Kept, but without a schema whatever is nested below is unknown.
                    Additional::Bool(_) => prune_node(None, child, &child_path, false, pruned),
                    Additional::Unset => {
                        map.remove(&key);
                        pruned.push(child_path);
                    }
                }
            }
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(items_schema);
            for (i, item) in items.iter_mut().enumerate() {
                prune_node(item_schema, item, &path_sub(path, i), false, pruned);
            }
        }
        _ => {}
    }
}

/// Below `x-kubernetes-preserve-unknown-fields`: unknown fields stay, known ones are pruned by
/// their own schemas.
fn skip_prune(
    schema: &Value,
    v: &mut Value,
    path: &str,
    resource_root: bool,
    pruned: &mut Vec<String>,
) {
    match v {
        Value::Object(map) => {
            let embedded = resource_root || flag(schema, EMBEDDED);
            let props = properties(schema);
            let extra = additional(schema);
            for (key, child) in map.iter_mut() {
                if embedded && is_meta_field(key) {
                    continue;
                }
                let child_path = join_name(path, key);
                if let Some(prop) = props.and_then(|p| p.get(key)) {
                    prune_node(Some(prop), child, &child_path, false, pruned);
                } else {
                    match extra {
                        Additional::Schema(a) => {
                            prune_node(Some(a), child, &child_path, false, pruned)
                        }
                        Additional::Bool(_) => prune_node(None, child, &child_path, false, pruned),
                        Additional::Unset => {}
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = items_schema(schema) {
                for (i, item) in items.iter_mut().enumerate() {
                    skip_prune(item_schema, item, &path_sub(path, i), false, pruned);
                }
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Object validation

/// Validates a custom resource against the schema as the apiserver does on create (`old` is
/// `None`) or update (`old` is the stored object): OpenAPI value validation, list-type
/// uniqueness, then the CEL rules. Call it after [`prune_unknown`] and [`default_object`].
pub fn validate_object(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let validator = OpenApi { prefix: None };
    validator.node(schema, obj, old, "", true, &mut errors);
    list_types(schema, obj, "", &mut errors);
    if !has_rules(schema) {
        return errors;
    }
    if errors.iter().any(is_blocking) {
        errors.push(FieldError::invalid(
            NIL_FIELD,
            None,
            "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ));
    } else {
        cel_node(schema, obj, old, "", true, &mut errors);
    }
    errors
}

/// Whether any node of the schema carries `x-kubernetes-validations` (the apiserver only has a
/// CEL validator then).
fn has_rules(schema: &Value) -> bool {
    schema
        .get(VALIDATIONS)
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty())
        || properties(schema).is_some_and(|p| p.values().any(has_rules))
        || items_schema(schema).is_some_and(has_rules)
        || additional_schema(schema).is_some_and(has_rules)
}

/// Errors after which the apiserver does not run CEL rules.
fn is_blocking(e: &FieldError) -> bool {
    matches!(
        e.kind,
        FieldErrorKind::NotSupported
            | FieldErrorKind::Required
            | FieldErrorKind::TooLong
            | FieldErrorKind::TooMany
            | FieldErrorKind::TypeInvalid
    )
}

/// kube-openapi's schema validator, with its errors converted to field errors the way the
/// apiextensions apiserver converts them.
struct OpenApi<'p> {
    /// Field path in front of every error (set when validating a `default`).
    prefix: Option<&'p str>,
}

impl OpenApi<'_> {
    fn field(&self, name: &str) -> String {
        match (self.prefix, name.is_empty()) {
            (None, true) => NIL_FIELD.to_string(),
            (None, false) => name.to_string(),
            (Some(p), true) => p.to_string(),
            (Some(p), false) => format!("{p}.{name}"),
        }
    }

    fn type_error(&self, name: &str, expected: &str, actual: &str) -> FieldError {
        FieldError::type_invalid(
            self.field(name),
            Some(Value::String(actual.to_string())),
            format!(
                "{name} in body must be of type {expected}: {}",
                go_quote(actual)
            ),
        )
    }

    /// An error kube-openapi does not attribute to a field (anyOf/oneOf/allOf/not summaries).
    fn composite(&self, message: String) -> FieldError {
        FieldError::invalid(self.field(""), Some(Value::String(String::new())), message)
    }

    fn node(
        &self,
        schema: &Value,
        value: &Value,
        old: Option<&Value>,
        name: &str,
        root: bool,
        out: &mut Vec<FieldError>,
    ) {
        // Ratcheting: an unchanged value keeps passing even if the schema got stricter.
        if old.is_some_and(|o| json_equal(o, value)) {
            return;
        }
        if !schema.is_object() {
            return;
        }
        let types = schema_types(schema);
        if value.is_null() {
            if !types.is_empty() && !flag(schema, "nullable") {
                out.push(self.type_error(name, &types.join(","), "null"));
            }
            return;
        }
        if !types.is_empty() && !type_matches(&types, value) {
            out.push(self.type_error(name, &types.join(","), json_type(value)));
            return;
        }
        self.junctions(schema, value, old, name, root, out);
        match value {
            Value::String(s) => self.string(schema, s, value, name, out),
            Value::Number(n) => self.number(schema, n, value, name, out),
            Value::Array(items) => self.array(schema, items, old, name, out),
            _ => {}
        }
        if let Some(Value::Array(allowed)) = schema.get("enum")
            && !allowed.iter().any(|a| json_equal(a, value))
        {
            let supported: Vec<String> = allowed
                .iter()
                .map(|a| match a {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            out.push(FieldError::not_supported(
                self.field(name),
                value.clone(),
                &supported,
            ));
        }
        if let Value::Object(map) = value {
            self.object(schema, map, old, name, root, out);
        }
    }

    fn branch(
        &self,
        schema: &Value,
        value: &Value,
        old: Option<&Value>,
        name: &str,
        root: bool,
    ) -> Vec<FieldError> {
        let mut errs = Vec::new();
        self.node(schema, value, old, name, root, &mut errs);
        errs
    }

    fn junctions(
        &self,
        schema: &Value,
        value: &Value,
        old: Option<&Value>,
        name: &str,
        root: bool,
        out: &mut Vec<FieldError>,
    ) {
        let quoted = go_quote(name);
        if let Some(Value::Array(any_of)) = schema.get("anyOf")
            && !any_of.is_empty()
        {
            let results: Vec<Vec<FieldError>> = any_of
                .iter()
                .map(|s| self.branch(s, value, old, name, root))
                .collect();
            if !results.iter().any(Vec::is_empty) {
                out.push(self.composite(format!(
                    "{quoted} must validate at least one schema (anyOf)"
                )));
                if let Some(best) = results.into_iter().min_by_key(Vec::len) {
                    out.extend(best);
                }
            }
        }
        if let Some(Value::Array(one_of)) = schema.get("oneOf")
            && !one_of.is_empty()
        {
            let results: Vec<Vec<FieldError>> = one_of
                .iter()
                .map(|s| self.branch(s, value, old, name, root))
                .collect();
            let valid = results.iter().filter(|r| r.is_empty()).count();
            if valid != 1 {
                let detail = if valid == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                out.push(self.composite(format!(
                    "{quoted} must validate one and only one schema (oneOf). {detail}"
                )));
                if valid == 0
                    && let Some(best) = results.into_iter().min_by_key(Vec::len)
                {
                    out.extend(best);
                }
            }
        }
        if let Some(Value::Array(all_of)) = schema.get("allOf")
            && !all_of.is_empty()
        {
            let mut validated = 0;
            let mut collected = Vec::new();
            for s in all_of {
                let errs = self.branch(s, value, old, name, root);
                if errs.is_empty() {
                    validated += 1;
                }
                collected.extend(errs);
            }
            out.extend(collected);
            if validated != all_of.len() {
                let extra = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                out.push(self.composite(format!(
                    "{quoted} must validate all the schemas (allOf){extra}"
                )));
            }
        }
        if let Some(not) = schema.get("not").filter(|n| n.is_object())
            && self.branch(not, value, old, name, root).is_empty()
        {
            out.push(self.composite(format!("{quoted} must not validate the schema (not)")));
        }
    }

    fn string(
        &self,
        schema: &Value,
        s: &str,
        value: &Value,
        name: &str,
        out: &mut Vec<FieldError>,
    ) {
        let len = i64::try_from(s.chars().count()).unwrap_or(i64::MAX);
        if let Some(max) = int_of(schema, "maxLength")
            && len > max
        {
            out.push(FieldError::too_long(self.field(name), value.clone(), max));
        }
        if let Some(min) = int_of(schema, "minLength")
            && len < min
        {
            out.push(FieldError::invalid(
                self.field(name),
                Some(value.clone()),
                format!("{name} in body should be at least {min} chars long"),
            ));
        }
        if let Some(pattern) = str_of(schema, "pattern") {
            let failure = match cached_regex(pattern) {
                Ok(re) if re.is_match(s) => None,
                Ok(_) => Some(pattern.to_string()),
                Err(e) => Some(format!(
                    "{pattern}, but pattern is invalid: {}",
                    regex_error_text(&e, pattern)
                )),
            };
            if let Some(shown) = failure {
                out.push(FieldError::invalid(
                    self.field(name),
                    Some(value.clone()),
                    format!("{name} in body should match '{shown}'"),
                ));
            }
        }
        if let Some(format) = str_of(schema, "format")
            && check_format(format, s) == Some(false)
        {
            out.push(FieldError::type_invalid(
                self.field(name),
                Some(value.clone()),
                format!("{name} in body must be of type {format}: {}", go_quote(s)),
            ));
        }
    }

    fn number(
        &self,
        schema: &Value,
        n: &serde_json::Number,
        value: &Value,
        name: &str,
        out: &mut Vec<FieldError>,
    ) {
        let int = n.as_i64();
        let data = n.as_f64().unwrap_or(f64::NAN);
        let invalid =
            |message: String| FieldError::invalid(self.field(name), Some(value.clone()), message);
        if let Some(factor) = num_of(schema, "multipleOf")
            && factor > 0.0
        {
            let failed = match int {
                Some(i) if factor >= 1.0 && factor.fract() == 0.0 => {
                    let f = factor as i64;
                    (f != 0 && i % f != 0).then(|| f.to_string())
                }
                _ => {
                    let mult = if factor < 1.0 {
                        1.0 / factor * data
                    } else {
                        data / factor
                    };
                    (!is_json_integer(mult)).then(|| go_format_float(factor))
                }
            };
            if let Some(shown) = failed {
                out.push(invalid(format!(
                    "{name} in body should be a multiple of {shown}"
                )));
            }
        }
        // Integer data is compared with the bound truncated to an integer, as kube-openapi does.
        let bound_text = |bound: f64| match int {
            Some(_) => (bound as i64).to_string(),
            None => go_format_float(bound),
        };
        // Whether the value lies beyond the bound on the given side (or on it, if exclusive).
        let exceeds = |bound: f64, exclusive: bool, beyond: std::cmp::Ordering| -> bool {
            let ordering = match int {
                Some(i) => Some(i.cmp(&(bound as i64))),
                None => data.partial_cmp(&bound),
            };
            ordering.is_some_and(|o| o == beyond || (exclusive && o == std::cmp::Ordering::Equal))
        };
        if let Some(max) = num_of(schema, "maximum") {
            let exclusive = flag(schema, "exclusiveMaximum");
            if exceeds(max, exclusive, std::cmp::Ordering::Greater) {
                let relation = if exclusive {
                    "less than"
                } else {
                    "less than or equal to"
                };
                out.push(invalid(format!(
                    "{name} in body should be {relation} {}",
                    bound_text(max)
                )));
            }
        }
        if let Some(min) = num_of(schema, "minimum") {
            let exclusive = flag(schema, "exclusiveMinimum");
            if exceeds(min, exclusive, std::cmp::Ordering::Less) {
                let relation = if exclusive {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                out.push(invalid(format!(
                    "{name} in body should be {relation} {}",
                    bound_text(min)
                )));
            }
        }
    }

    fn array(
        &self,
        schema: &Value,
        items: &[Value],
        old: Option<&Value>,
        name: &str,
        out: &mut Vec<FieldError>,
    ) {
        let len = items.len();
        let len_i64 = i64::try_from(len).unwrap_or(i64::MAX);
        if let Some(min) = int_of(schema, "minItems")
            && len_i64 < min
        {
            out.push(FieldError::invalid(
                self.field(name),
                Some(Value::from(len)),
                format!("{name} in body should have at least {min} items"),
            ));
        }
        if let Some(max) = int_of(schema, "maxItems")
            && len_i64 > max
        {
            out.push(FieldError::too_many(self.field(name), len, max));
        }
        if flag(schema, "uniqueItems") {
            let mut seen = std::collections::HashSet::new();
            if !items.iter().all(|i| seen.insert(canonical(i))) {
                out.push(FieldError::invalid(
                    self.field(name),
                    Some(Value::String(String::new())),
                    format!("{name} in body shouldn't contain duplicates"),
                ));
            }
        }
        if let Some(item_schema) = items_schema(schema) {
            for (i, item) in items.iter().enumerate() {
                let old_item = correlate_item(schema, old, item);
                self.node(
                    item_schema,
                    item,
                    old_item,
                    &format!("{name}[{i}]"),
                    false,
                    out,
                );
            }
        }
    }

    fn object(
        &self,
        schema: &Value,
        map: &Map<String, Value>,
        old: Option<&Value>,
        name: &str,
        root: bool,
        out: &mut Vec<FieldError>,
    ) {
        let count = map.len();
        let count_i64 = i64::try_from(count).unwrap_or(i64::MAX);
        if let Some(min) = int_of(schema, "minProperties")
            && count_i64 < min
        {
            out.push(FieldError::invalid(
                self.field(name),
                Some(Value::from(count)),
                format!("{name} in body should have at least {min} properties"),
            ));
            return;
        }
        if let Some(max) = int_of(schema, "maxProperties")
            && count_i64 > max
        {
            out.push(FieldError::too_many(self.field(name), count, max));
            return;
        }
        let props = properties(schema);
        let old_map = old.and_then(Value::as_object);
        for (key, child) in sorted_entries(map) {
            let child_name = join_name(name, key);
            let old_child = old_map.and_then(|o| o.get(key));
            if let Some(prop) = props.and_then(|p| p.get(key)) {
                if root && key == "metadata" {
                    self.metadata(prop, child, old_child, &child_name, out);
                } else {
                    self.node(prop, child, old_child, &child_name, false, out);
                }
                continue;
            }
            if root && is_meta_field(key) {
                continue;
            }
            match additional(schema) {
                Additional::Bool(false) => out.push(FieldError::invalid(
                    self.field(name),
                    Some(Value::String(key.clone())),
                    format!("{name}.{key} in body is a forbidden property"),
                )),
                Additional::Schema(a) => self.node(a, child, old_child, &child_name, false, out),
                Additional::Bool(true) | Additional::Unset => {}
            }
        }
        if let Some(Value::Array(required)) = schema.get("required") {
            for key in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(key) {
                    out.push(FieldError::required(self.field(&join_name(name, key)), ""));
                }
            }
        }
    }

    /// Root `metadata` belongs to the apiserver; only the `name`/`generateName` constraints a
    /// schema may declare apply.
    fn metadata(
        &self,
        schema: &Value,
        value: &Value,
        old: Option<&Value>,
        name: &str,
        out: &mut Vec<FieldError>,
    ) {
        let mut restricted = Map::new();
        restricted.insert("type".into(), Value::String("object".into()));
        if let Some(props) = properties(schema) {
            let kept: Map<String, Value> = props
                .iter()
                .filter(|(k, _)| k.as_str() == "name" || k.as_str() == "generateName")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            restricted.insert("properties".into(), Value::Object(kept));
        }
        self.node(&Value::Object(restricted), value, old, name, false, out);
    }
}

/// A one-line description of a regex compile error, phrased like Go's `regexp` errors.
fn regex_error_text(e: &regex::Error, pattern: &str) -> String {
    let reason = match e {
        regex::Error::Syntax(text) => text
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or("invalid syntax")
            .to_string(),
        regex::Error::CompiledTooBig(_) => "expression too large".to_string(),
        other => other.to_string(),
    };
    format!("error parsing regexp: {reason}: `{pattern}`")
}

// ---------------------------------------------------------------------------------------------
// List types

fn list_types(schema: &Value, value: &Value, path: &str, out: &mut Vec<FieldError>) {
    match value {
        Value::Object(map) => {
            for (key, child) in sorted_entries(map) {
                if let Some(prop) = properties(schema).and_then(|p| p.get(key)) {
                    list_types(prop, child, &path_child(path, key), out);
                } else if let Some(extra) = additional_schema(schema) {
                    list_types(extra, child, &path_sub(path, key), out);
                }
            }
        }
        Value::Array(items) => {
            match str_of(schema, LIST_TYPE) {
                Some("set") => {
                    let keys: Vec<String> = items.iter().map(canonical).collect();
                    for i in first_repeats(&keys) {
                        out.push(FieldError::duplicate(path_sub(path, i), items[i].clone()));
                    }
                }
                Some("map") => list_map(schema, items, path, out),
                _ => {}
            }
            if let Some(item_schema) = items_schema(schema) {
                for (i, item) in items.iter().enumerate() {
                    list_types(item_schema, item, &path_sub(path, i), out);
                }
            }
        }
        _ => {}
    }
}

/// The index of the second occurrence of every value that occurs more than once.
fn first_repeats(keys: &[String]) -> Vec<usize> {
    let mut counts: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut repeats = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let n = counts.entry(k.as_str()).or_insert(0);
        *n += 1;
        if *n == 2 {
            repeats.push(i);
        }
    }
    repeats
}

fn list_map(schema: &Value, items: &[Value], path: &str, out: &mut Vec<FieldError>) {
    if let Some((i, item)) = items
        .iter()
        .enumerate()
        .find(|(_, x)| !x.is_null() && !x.is_object())
    {
        out.push(FieldError::invalid(
            path_sub(path, i),
            Some(item.clone()),
            "must be an object for an array of list-type map",
        ));
        return;
    }
    let key_fields: Vec<&str> = schema
        .get(LIST_MAP_KEYS)
        .and_then(Value::as_array)
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let key_maps: Vec<Map<String, Value>> = items
        .iter()
        .map(|item| {
            key_fields
                .iter()
                .filter_map(|k| item.get(*k).map(|v| (k.to_string(), v.clone())))
                .collect()
        })
        .collect();
    let keys: Vec<String> = key_maps
        .iter()
        .map(|m| canonical(&Value::Object(m.clone())))
        .collect();
    for i in first_repeats(&keys) {
        out.push(FieldError::duplicate(
            path_sub(path, i),
            Value::Object(key_maps[i].clone()),
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// CEL rules

fn cel_node(
    schema: &Value,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    root: bool,
    out: &mut Vec<FieldError>,
) {
    if value.is_null() || !schema.is_object() {
        return;
    }
    if let Some(Value::Array(rules)) = schema.get(VALIDATIONS) {
        let unchanged = old.is_some_and(|o| json_equal(o, value));
        let mut self_value: Option<CelValue> = None;
        let mut old_value: Option<CelValue> = None;
        for rule in rules {
            let Some(text) = str_of(rule, "rule") else {
                continue;
            };
            if flag(rule, "optionalOldSelf") {
                continue;
            }
            let Ok(program) = cel::compile(text) else {
                continue;
            };
            let old_self = match (program.uses_old_self(), old) {
                (true, None) => continue,
                (true, Some(o)) => {
                    Some(&*old_value.get_or_insert_with(|| cel_input(schema, o, root)))
                }
                (false, _) if unchanged => continue,
                (false, _) => None,
            };
            let this = self_value.get_or_insert_with(|| cel_input(schema, value, root));
            match program.eval(this, old_self) {
                Ok(CelValue::Bool(false)) => out.push(rule_failure(schema, rule, text, path)),
                Err(EvalError::Runtime(msg)) => out.push(FieldError::invalid(
                    nil_if_empty(path),
                    Some(Value::String(
                        str_of(schema, "type").unwrap_or_default().to_string(),
                    )),
                    format!("{msg} evaluating rule: {}", rule_error_string(rule, text)),
                )),
                // True, a non-bool result (a CRD the apiserver would have rejected) or
                // something outside the supported subset.
                _ => {}
            }
        }
    }
    let old_map = old.and_then(Value::as_object);
    match value {
        Value::Object(map) => {
            for (key, child) in sorted_entries(map) {
                let old_child = old_map.and_then(|o| o.get(key));
                if let Some(prop) = properties(schema).and_then(|p| p.get(key)) {
                    if !(root && key == "metadata") {
                        cel_node(prop, child, old_child, &path_child(path, key), false, out);
                    }
                } else if let Some(extra) = additional_schema(schema) {
                    cel_node(extra, child, old_child, &path_sub(path, key), false, out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = items_schema(schema) {
                for (i, item) in items.iter().enumerate() {
                    // Only list-type map items correlate with old items for CEL.
                    let old_item = if str_of(schema, LIST_TYPE) == Some("map") {
                        correlate_item(schema, old, item)
                    } else {
                        None
                    };
                    cel_node(item_schema, item, old_item, &path_sub(path, i), false, out);
                }
            }
        }
        _ => {}
    }
}

/// `self` for a rule; at the resource root `metadata` only exposes `name` and `generateName`.
fn cel_input(schema: &Value, value: &Value, root: bool) -> CelValue {
    if root
        && let Value::Object(map) = value
        && let Some(Value::Object(meta)) = map.get("metadata")
    {
        let mut copy = map.clone();
        let visible: Map<String, Value> = meta
            .iter()
            .filter(|(k, _)| k.as_str() == "name" || k.as_str() == "generateName")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        copy.insert("metadata".into(), Value::Object(visible));
        return cel::value_from_json(Some(schema), &Value::Object(copy));
    }
    cel::value_from_json(Some(schema), value)
}

fn rule_error_string(rule: &Value, text: &str) -> String {
    match str_of(rule, "message")
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        Some(m) => m.to_string(),
        None => text.trim().to_string(),
    }
}

fn rule_failure(schema: &Value, rule: &Value, text: &str, path: &str) -> FieldError {
    let message = match str_of(rule, "message")
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        Some(m) => m.to_string(),
        None => format!("failed rule: {}", text.trim()),
    };
    let mut field = path.to_string();
    if let Some(extra) = str_of(rule, "fieldPath").and_then(normalize_field_path) {
        field = if field.is_empty() {
            extra
        } else if extra.starts_with('[') {
            format!("{field}{extra}")
        } else {
            format!("{field}.{extra}")
        };
    }
    let field = nil_if_empty(&field);
    let type_value = Value::String(str_of(schema, "type").unwrap_or_default().to_string());
    match str_of(rule, "reason") {
        Some("FieldValueForbidden") => FieldError::forbidden(field, message),
        Some("FieldValueRequired") => FieldError::required(field, message),
        Some("FieldValueDuplicate") => FieldError::duplicate(field, type_value),
        _ => FieldError::invalid(field, Some(type_value), message),
    }
}

/// Turns a rule `fieldPath` (`.spec.name`, `.labels['a.b']`, `.list[0]`) into field-path text
/// without the leading dot; `None` if it is not of that shape.
fn normalize_field_path(fp: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = fp.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty() {
                return None;
            }
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(name);
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']')?;
            let inner = after[..close].trim();
            let key = inner
                .strip_prefix('\'')
                .and_then(|k| k.strip_suffix('\''))
                .or_else(|| inner.strip_prefix('"').and_then(|k| k.strip_suffix('"')))
                .unwrap_or(inner);
            out.push('[');
            out.push_str(key);
            out.push(']');
            rest = &after[close + 1..];
        } else {
            return None;
        }
    }
    Some(out)
}

/// The `x-kubernetes-validations` rules [`validate_object`] skips because they do not compile
/// in the supported CEL subset (or use `optionalOldSelf`), as
/// `<schema path>.x-kubernetes-validations[i]: <rule>: <reason>` lines.
pub fn unsupported_rules(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_unsupported(schema, "", &mut out);
    out
}

fn collect_unsupported(schema: &Value, path: &str, out: &mut Vec<String>) {
    if !schema.is_object() {
        return;
    }
    if let Some(Value::Array(rules)) = schema.get(VALIDATIONS) {
        for (i, rule) in rules.iter().enumerate() {
            let at = path_sub(&path_child(path, VALIDATIONS), i);
            let text = str_of(rule, "rule").unwrap_or_default();
            let problem = if flag(rule, "optionalOldSelf") {
                Some("optionalOldSelf is not supported".to_string())
            } else {
                cel::compile(text).err().map(|e| e.to_string())
            };
            if let Some(problem) = problem {
                out.push(format!("{at}: {text}: {problem}"));
            }
        }
    }
    if let Some(props) = properties(schema) {
        for (key, prop) in props {
            collect_unsupported(prop, &path_sub(&path_child(path, "properties"), key), out);
        }
    }
    if let Some(items) = items_schema(schema) {
        collect_unsupported(items, &path_child(path, "items"), out);
    }
    if let Some(extra) = additional_schema(schema) {
        collect_unsupported(extra, &path_child(path, "additionalProperties"), out);
    }
}

// ---------------------------------------------------------------------------------------------
// CRD schema validation

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

const SCHEMA_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// Checks a CRD version's `openAPIV3Schema` as the apiserver does when the CRD is created or
/// updated. Field paths are relative to the schema (`properties[spec].type`; `type` for the root
/// itself); see [`FieldError::with_prefix`]. The list is sorted like the apiserver's.
pub fn validate_crd_schema(schema: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if !schema.is_object() {
        errors.push(FieldError::required(NIL_FIELD, "must be a schema object"));
        return errors;
    }
    check_schema_node(schema, "", Level::Root, false, &mut errors);
    errors.sort_by_key(FieldError::to_string_k8s);
    errors.dedup();
    errors
}

fn check_schema_node(
    schema: &Value,
    path: &str,
    level: Level,
    inside_meta: bool,
    out: &mut Vec<FieldError>,
) {
    let Some(node) = schema.as_object() else {
        out.push(FieldError::invalid(
            nil_if_empty(path),
            Some(schema.clone()),
            "must be a schema object",
        ));
        return;
    };
    let at = |name: &str| path_child(path, name);
    check_generic_keywords(schema, path, out);

    let ty = str_of(schema, "type").unwrap_or_default();
    let int_or_string = flag(schema, INT_OR_STRING);
    let preserve = node.get(PRESERVE);
    let embedded = flag(schema, EMBEDDED);

    if let Some(Value::Bool(false)) = preserve {
        out.push(FieldError::invalid(
            at(PRESERVE),
            Some(Value::Bool(false)),
            "must be true or undefined",
        ));
    }
    if int_or_string && flag(schema, PRESERVE) {
        out.push(FieldError::invalid(
            at(PRESERVE),
            Some(Value::Bool(true)),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        out.push(FieldError::invalid(
            at(EMBEDDED),
            Some(Value::Bool(true)),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if embedded && ty != "object" {
        if ty.is_empty() {
            out.push(FieldError::required(
                at("type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            out.push(FieldError::invalid(
                at("type"),
                Some(Value::String(ty.into())),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if ty.is_empty() && !int_or_string && !flag(schema, PRESERVE) {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(FieldError::required(at("type"), detail));
    }
    if embedded && !flag(schema, PRESERVE) && properties(schema).is_none_or(Map::is_empty) {
        out.push(FieldError::required(
            at("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
    if level == Level::Root && !ty.is_empty() && ty != "object" {
        out.push(FieldError::invalid(
            at("type"),
            Some(Value::String(ty.into())),
            "must be object at the root",
        ));
    }
    if ty == "array" && node.get("items").is_none() {
        out.push(FieldError::required(at("items"), "must be specified"));
    }

    // additionalProperties
    if let Some(extra) = node.get("additionalProperties") {
        if level == Level::Root {
            out.push(FieldError::forbidden(
                at("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if embedded {
            out.push(FieldError::forbidden(
                at("additionalProperties"),
                "must not be used if x-kubernetes-embedded-resource is set",
            ));
        }
        let has_props = properties(schema).is_some_and(|p| !p.is_empty());
        if has_props && !matches!(extra, Value::Bool(true)) {
            out.push(FieldError::forbidden(
                at("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if extra.is_object() {
            check_schema_node(
                extra,
                &at("additionalProperties"),
                Level::Field,
                inside_meta,
                out,
            );
        }
    }

    // Root kind/apiVersion/metadata.
    if level == Level::Root || embedded {
        check_meta_types(schema, path, out);
    }
    if level == Level::Root
        && let Some(meta) = properties(schema).and_then(|p| p.get("metadata"))
        && !metadata_schema_allowed(meta)
    {
        out.push(FieldError::forbidden(
            path_sub(&at("properties"), "metadata"),
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }

    check_list_and_map_types(schema, path, out);
    check_validation_rules(schema, path, out);

    if let Some(default) = node.get("default") {
        if inside_meta {
            out.push(FieldError::forbidden(
                at("default"),
                "must not be set inside metadata",
            ));
        } else {
            check_default(schema, default, &at("default"), out);
        }
    }

    // Value validations.
    let skip_any_of = is_int_or_string_any_of(schema.get("anyOf"));
    let skip_first_all_of_any_of = schema
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .is_some_and(|first| is_int_or_string_any_of(first.get("anyOf")));
    check_value_validation(schema, path, skip_any_of, skip_first_all_of_any_of, out);
    check_completeness(schema, schema, path, path, out);

    // Children.
    if let Some(props) = properties(schema) {
        for (key, prop) in props {
            let child_path = path_sub(&at("properties"), key);
            let child_meta = inside_meta || (level == Level::Root && key == "metadata");
            check_schema_node(prop, &child_path, Level::Field, child_meta, out);
        }
    }
    match node.get("items") {
        Some(items @ Value::Object(_)) => {
            check_schema_node(items, &at("items"), Level::Item, inside_meta, out)
        }
        Some(Value::Array(_)) => out.push(FieldError::forbidden(
            at("items"),
            "items must be a schema object and not an array",
        )),
        _ => {}
    }
}

fn check_generic_keywords(schema: &Value, path: &str, out: &mut Vec<FieldError>) {
    let at = |name: &str| path_child(path, name);
    for (key, what) in [
        ("$ref", "$ref is not supported"),
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
    ] {
        if schema.get(key).is_some_and(|v| !v.is_null()) {
            out.push(FieldError::forbidden(at(key), what));
        }
    }
    if let Some(ty) = schema.get("type") {
        match ty.as_str() {
            Some("null") => out.push(FieldError::forbidden(
                at("type"),
                "type cannot be set to null, use nullable as an alternative",
            )),
            Some(t) if !SCHEMA_TYPES.contains(&t) => {
                let supported: Vec<String> = SCHEMA_TYPES.iter().map(|s| s.to_string()).collect();
                out.push(FieldError::not_supported(
                    at("type"),
                    ty.clone(),
                    &supported,
                ));
            }
            Some(_) => {}
            None => out.push(FieldError::invalid(
                at("type"),
                Some(ty.clone()),
                "must be a string",
            )),
        }
    }
    if flag(schema, "uniqueItems") {
        out.push(FieldError::forbidden(
            at("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Some(pattern) = str_of(schema, "pattern")
        && let Err(e) = cached_regex(pattern)
    {
        out.push(FieldError::invalid(
            at("pattern"),
            Some(Value::String(pattern.into())),
            format!(
                "must be a valid regular expression, but isn't: {}",
                regex_error_text(&e, pattern)
            ),
        ));
    }
}

fn check_meta_types(schema: &Value, path: &str, out: &mut Vec<FieldError>) {
    let Some(props) = properties(schema) else {
        return;
    };
    for (key, want) in [
        ("kind", "string"),
        ("apiVersion", "string"),
        ("metadata", "object"),
    ] {
        if let Some(prop) = props.get(key) {
            let ty = str_of(prop, "type").unwrap_or_default();
            if ty != want {
                out.push(FieldError::invalid(
                    path_child(&path_sub(&path_child(path, "properties"), key), "type"),
                    Some(Value::String(ty.into())),
                    format!("must be {want}"),
                ));
            }
        }
    }
}

/// Root `metadata` may only say it is an object and constrain `name`/`generateName`.
fn metadata_schema_allowed(meta: &Value) -> bool {
    let Some(node) = meta.as_object() else {
        return false;
    };
    node.iter().all(|(k, v)| match k.as_str() {
        // The default is checked on its own; nothing else may be said about metadata (not even a
        // description: the structural schema keeps it, so the apiserver refuses it).
        "type" | "default" => true,
        "nullable" => v == &Value::Bool(false),
        "properties" => v
            .as_object()
            .is_some_and(|p| p.keys().all(|k| k == "name" || k == "generateName")),
        _ => false,
    })
}

fn check_list_and_map_types(schema: &Value, path: &str, out: &mut Vec<FieldError>) {
    let at = |name: &str| path_child(path, name);
    let ty = str_of(schema, "type").unwrap_or_default();
    let list_type = schema.get(LIST_TYPE);
    let map_keys = schema.get(LIST_MAP_KEYS).and_then(Value::as_array);
    if let Some(lt) = list_type {
        let supported = ["atomic", "set", "map"];
        match lt.as_str() {
            Some(s) if supported.contains(&s) => {
                if ty != "array" {
                    out.push(FieldError::invalid(
                        at(LIST_TYPE),
                        Some(lt.clone()),
                        "must only be used if type is array",
                    ));
                }
            }
            _ => {
                let supported: Vec<String> = supported.iter().map(|s| s.to_string()).collect();
                out.push(FieldError::not_supported(
                    at(LIST_TYPE),
                    lt.clone(),
                    &supported,
                ));
            }
        }
    }
    let is_map = list_type.and_then(Value::as_str) == Some("map");
    if map_keys.is_some_and(|k| !k.is_empty()) && !is_map {
        out.push(FieldError::invalid(
            at(LIST_TYPE),
            list_type.cloned(),
            "must be map if x-kubernetes-list-map-keys is non-empty",
        ));
    }
    let items = items_schema(schema);
    if is_map {
        match map_keys.filter(|k| !k.is_empty()) {
            None => out.push(FieldError::required(
                at(LIST_MAP_KEYS),
                "must not be empty if x-kubernetes-list-type is map",
            )),
            Some(keys) => {
                if let Some(items) = items {
                    if str_of(items, "type") != Some("object") {
                        out.push(FieldError::invalid(
                            path_child(&at("items"), "type"),
                            items.get("type").cloned(),
                            "must be object if parent array's x-kubernetes-list-type is map",
                        ));
                    } else {
                        check_map_keys(items, keys, path, out);
                    }
                }
            }
        }
    }
    if list_type.and_then(Value::as_str) == Some("set")
        && let Some(items) = items
        && str_of(items, "type") == Some("object")
        && str_of(items, MAP_TYPE) != Some("atomic")
    {
        out.push(FieldError::invalid(
            path_child(&at("items"), MAP_TYPE),
            items.get(MAP_TYPE).cloned(),
            "must be atomic as item of a list with x-kubernetes-list-type=set",
        ));
    }
    if let Some(mt) = schema.get(MAP_TYPE) {
        match mt.as_str() {
            Some("atomic" | "granular") => {
                if ty != "object" {
                    out.push(FieldError::invalid(
                        at(MAP_TYPE),
                        Some(mt.clone()),
                        "must only be used if type is object",
                    ));
                }
            }
            _ => {
                let supported = vec!["granular".to_string(), "atomic".to_string()];
                out.push(FieldError::not_supported(
                    at(MAP_TYPE),
                    mt.clone(),
                    &supported,
                ));
            }
        }
    }
}

fn check_map_keys(items: &Value, keys: &[Value], path: &str, out: &mut Vec<FieldError>) {
    let at = path_child(path, LIST_MAP_KEYS);
    let required: Vec<&str> = items
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for key in keys {
        let Some(name) = key.as_str() else {
            out.push(FieldError::invalid(
                at.clone(),
                Some(key.clone()),
                "must be a string",
            ));
            continue;
        };
        let Some(prop) = properties(items).and_then(|p| p.get(name)) else {
            out.push(FieldError::invalid(
                at.clone(),
                Some(Value::Array(keys.to_vec())),
                "entries must all be names of item properties",
            ));
            continue;
        };
        if !matches!(
            str_of(prop, "type"),
            Some("string" | "integer" | "number" | "boolean")
        ) && !flag(prop, INT_OR_STRING)
        {
            out.push(FieldError::invalid(
                path_child(
                    &path_sub(&path_child(&path_child(path, "items"), "properties"), name),
                    "type",
                ),
                prop.get("type").cloned(),
                "must be a scalar type if parent array's x-kubernetes-list-type is map",
            ));
        }
        if !required.contains(&name) && prop.get("default").is_none() {
            out.push(FieldError::required(
                path_child(&path_sub(&path_child(&path_child(path, "items"), "properties"), name), "default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
    }
}

fn check_validation_rules(schema: &Value, path: &str, out: &mut Vec<FieldError>) {
    let Some(rules) = schema.get(VALIDATIONS) else {
        return;
    };
    let Some(rules) = rules.as_array() else {
        out.push(FieldError::invalid(
            path_child(path, VALIDATIONS),
            Some(rules.clone()),
            "must be a list",
        ));
        return;
    };
    let reasons = [
        "FieldValueRequired",
        "FieldValueForbidden",
        "FieldValueInvalid",
        "FieldValueDuplicate",
    ];
    for (i, rule) in rules.iter().enumerate() {
        let at = path_sub(&path_child(path, VALIDATIONS), i);
        if str_of(rule, "rule").is_none_or(|r| r.trim().is_empty()) {
            out.push(FieldError::required(path_child(&at, "rule"), ""));
        }
        if let Some(reason) = rule.get("reason")
            && !reason.as_str().is_some_and(|r| reasons.contains(&r))
        {
            let supported: Vec<String> = reasons.iter().map(|s| s.to_string()).collect();
            out.push(FieldError::not_supported(
                path_child(&at, "reason"),
                reason.clone(),
                &supported,
            ));
        }
        if let Some(fp) = str_of(rule, "fieldPath")
            && normalize_field_path(fp).is_none()
        {
            out.push(FieldError::invalid(
                path_child(&at, "fieldPath"),
                Some(Value::String(fp.into())),
                "fieldPath must be a valid path",
            ));
        }
    }
}

/// A default must survive pruning unchanged and validate against its own schema (after the
/// defaults nested inside it are applied, as they would be on a real object).
fn check_default(schema: &Value, default: &Value, path: &str, out: &mut Vec<FieldError>) {
    let mut copy = default.clone();
    if !prune_subtree(schema, &mut copy).is_empty() {
        out.push(FieldError::invalid(
            path,
            Some(default.clone()),
            "must not have unknown fields",
        ));
        return;
    }
    default_node(schema, &mut copy);
    let validator = OpenApi { prefix: Some(path) };
    validator.node(schema, &copy, None, "", false, out);
}

fn prune_subtree(schema: &Value, v: &mut Value) -> Vec<String> {
    let mut pruned = Vec::new();
    prune_node(Some(schema), v, "", false, &mut pruned);
    pruned
}

fn is_int_or_string_any_of(any_of: Option<&Value>) -> bool {
    let Some(Value::Array(branches)) = any_of else {
        return false;
    };
    branches.len() == 2
        && branches.iter().zip(["integer", "string"]).all(|(b, t)| {
            b.as_object()
                .is_some_and(|o| o.len() == 1 && o.get("type").and_then(Value::as_str) == Some(t))
        })
}

/// `allOf`/`anyOf`/`oneOf`/`not` may only hold value validations.
fn check_value_validation(
    schema: &Value,
    path: &str,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    out: &mut Vec<FieldError>,
) {
    for (junction, skip) in [("anyOf", skip_any_of), ("allOf", false), ("oneOf", false)] {
        if skip {
            continue;
        }
        if let Some(Value::Array(branches)) = schema.get(junction) {
            for (i, branch) in branches.iter().enumerate() {
                let skip_nested_any_of = junction == "allOf" && i == 0 && skip_first_all_of_any_of;
                check_nested_value_validation(
                    branch,
                    &path_sub(&path_child(path, junction), i),
                    skip_nested_any_of,
                    out,
                );
            }
        }
    }
    if let Some(not) = schema.get("not") {
        check_nested_value_validation(not, &path_child(path, "not"), false, out);
    }
}

fn check_nested_value_validation(
    v: &Value,
    path: &str,
    skip_any_of: bool,
    out: &mut Vec<FieldError>,
) {
    let at = |name: &str| path_child(path, name);
    if !v.is_object() {
        out.push(FieldError::invalid(
            path,
            Some(v.clone()),
            "must be a schema object",
        ));
        return;
    }
    check_generic_keywords(v, path, out);
    check_value_validation(v, path, skip_any_of, false, out);
    if let Some(items) = v.get("items") {
        check_nested_value_validation(items, &at("items"), false, out);
    }
    if let Some(props) = properties(v) {
        for (key, prop) in props {
            check_nested_value_validation(prop, &path_sub(&at("properties"), key), false, out);
        }
        if props.contains_key("metadata") {
            out.push(FieldError::forbidden(
                path_sub(&at("properties"), "metadata"),
                "must not be specified in a nested context",
            ));
        }
    }
    for (key, detail) in [
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        (LIST_MAP_KEYS, "must be empty to be structural"),
        (LIST_TYPE, "must be undefined to be structural"),
    ] {
        if v.get(key).is_some_and(|x| !x.is_null()) {
            out.push(FieldError::forbidden(at(key), detail));
        }
    }
    for key in ["nullable", PRESERVE, EMBEDDED, INT_OR_STRING] {
        if flag(v, key) {
            out.push(FieldError::forbidden(
                at(key),
                "must be false to be structural",
            ));
        }
    }
}

/// Every property or items schema named inside a value validation must exist in the structural
/// schema at the same place.
fn check_completeness(
    value_node: &Value,
    structural: &Value,
    s_path: &str,
    v_path: &str,
    out: &mut Vec<FieldError>,
) {
    for junction in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = value_node.get(junction) {
            for (i, branch) in branches.iter().enumerate() {
                nested_completeness(
                    branch,
                    Some(structural),
                    s_path,
                    &path_sub(&path_child(v_path, junction), i),
                    out,
                );
            }
        }
    }
    if let Some(not) = value_node.get("not") {
        nested_completeness(
            not,
            Some(structural),
            s_path,
            &path_child(v_path, "not"),
            out,
        );
    }
}

fn nested_completeness(
    v: &Value,
    structural: Option<&Value>,
    s_path: &str,
    v_path: &str,
    out: &mut Vec<FieldError>,
) {
    let Some(s) = structural else {
        out.push(FieldError::required(
            nil_if_empty(s_path),
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    check_completeness(v, s, s_path, v_path, out);
    if let Some(items) = v.get("items") {
        nested_completeness(
            items,
            items_schema(s),
            &path_child(s_path, "items"),
            &path_child(v_path, "items"),
            out,
        );
    }
    if let Some(props) = properties(v) {
        for (key, prop) in props {
            let s_child = path_sub(&path_child(s_path, "properties"), key);
            let v_child = path_sub(&path_child(v_path, "properties"), key);
            match properties(s).and_then(|p| p.get(key)) {
                Some(sp) => nested_completeness(prop, Some(sp), &s_child, &v_child, out),
                None => out.push(FieldError::required(
                    s_child,
                    format!("because it is defined in {v_child}"),
                )),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Formats

/// Whether `s` is valid for `format`; `None` when the apiserver ignores the format (it strips
/// every format but the ones below from CRD schemas).
fn check_format(format: &str, s: &str) -> Option<bool> {
    let normalized = format.replace('-', "");
    let ok = match normalized.as_str() {
        "datetime" => is_datetime(s),
        "date" => is_date(s),
        "byte" => is_base64(s),
        "uuid" => is_uuid(s, None),
        "uuid3" => is_uuid(s, Some('3')),
        "uuid4" => is_uuid(s, Some('4')),
        "uuid5" => is_uuid(s, Some('5')),
        "ipv4" => s.parse::<IpAddr>().is_ok() && s.contains('.'),
        "ipv6" => s.parse::<IpAddr>().is_ok() && s.contains(':'),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "hostname" => is_hostname(s),
        "email" => is_email(s),
        "uri" => is_uri(s),
        "duration" => is_duration(s),
        "hexcolor" => static_regex(&HEXCOLOR, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", s),
        "rgbcolor" => static_regex(
            &RGBCOLOR,
            r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
            s,
        ),
        "bsonobjectid" => s.len() == 24 && s.chars().all(|c| c.is_ascii_hexdigit()),
        "ssn" => static_regex(&SSN, r"^\d{3}[- ]?\d{2}[- ]?\d{4}$", s),
        "password" | "isbn" | "isbn10" | "isbn13" | "creditcard" => true,
        _ => return None,
    };
    Some(ok)
}

static HEXCOLOR: OnceLock<Option<Regex>> = OnceLock::new();
static RGBCOLOR: OnceLock<Option<Regex>> = OnceLock::new();
static SSN: OnceLock<Option<Regex>> = OnceLock::new();
static HOSTNAME: OnceLock<Option<Regex>> = OnceLock::new();

fn static_regex(cell: &OnceLock<Option<Regex>>, pattern: &str, s: &str) -> bool {
    // The patterns are constants; if one failed to compile the check is skipped.
    cell.get_or_init(|| Regex::new(pattern).ok())
        .as_ref()
        .is_none_or(|re| re.is_match(s))
}

fn digits(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn is_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return false;
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(y), digits(m), digits(d)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// RFC 3339 date-time as go-openapi's `IsDateTime` accepts it.
fn is_datetime(s: &str) -> bool {
    let Some(split) = s.find(['T', 't']) else {
        return false;
    };
    let (date, time) = (&s[..split], &s[split + 1..]);
    if !is_date(date) {
        return false;
    }
    let (clock, zone) = match time.find(['Z', 'z', '+', '-']) {
        Some(i) => (&time[..i], &time[i..]),
        None => return false,
    };
    let (hms, fraction) = match clock.split_once('.') {
        Some((hms, f)) => (hms, Some(f)),
        None => (clock, None),
    };
    if fraction.is_some_and(|f| {
        digits(f).is_none() && !(f.len() > 9 && f.bytes().all(|b| b.is_ascii_digit()))
    }) {
        return false;
    }
    let two = |t: &str, max: u32| t.len() == 2 && digits(t).is_some_and(|v| v <= max);
    let hms: Vec<&str> = hms.split(':').collect();
    let [h, m, sec] = hms.as_slice() else {
        return false;
    };
    if !(two(h, 23) && two(m, 59) && two(sec, 60)) {
        return false;
    }
    match zone {
        "Z" | "z" => true,
        z => {
            let offset = &z[1..];
            match offset.split_once(':') {
                Some((oh, om)) => two(oh, 23) && two(om, 59),
                None => false,
            }
        }
    }
}

/// Go's `base64.StdEncoding.DecodeString`, which skips `\r` and `\n`.
fn is_base64(s: &str) -> bool {
    let cleaned: Vec<u8> = s.bytes().filter(|b| *b != b'\r' && *b != b'\n').collect();
    if !cleaned.len().is_multiple_of(4) {
        return false;
    }
    let padding = cleaned.iter().rev().take_while(|b| **b == b'=').count();
    if padding > 2 {
        return false;
    }
    cleaned[..cleaned.len() - padding]
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
}

fn is_uuid(s: &str, version: Option<char>) -> bool {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    let groups: Vec<&str> = s.split('-').collect();
    let dashed_ok = groups.len() == 1
        || (groups.len() == 5 && groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12]));
    if !dashed_ok || hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return false;
    }
    match version {
        None => true,
        Some(v) => {
            let chars: Vec<char> = hex.chars().collect();
            let variant_ok =
                v == '3' || matches!(chars[16].to_ascii_lowercase(), '8' | '9' | 'a' | 'b');
            chars[12] == v && variant_ok
        }
    }
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Some(bits) = digits(bits) else {
        return false;
    };
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => bits <= 32,
        Ok(IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets separated by `:` or `-`, or dotted groups of four.
fn is_mac(s: &str) -> bool {
    let valid_len = |n: usize| matches!(n, 6 | 8 | 20);
    if s.contains('.') {
        let groups: Vec<&str> = s.split('.').collect();
        return valid_len(groups.len() * 2)
            && groups
                .iter()
                .all(|g| g.len() == 4 && g.chars().all(|c| c.is_ascii_hexdigit()));
    }
    for sep in [':', '-'] {
        if s.contains(sep) {
            let groups: Vec<&str> = s.split(sep).collect();
            return valid_len(groups.len())
                && groups
                    .iter()
                    .all(|g| g.len() == 2 && g.chars().all(|c| c.is_ascii_hexdigit()));
        }
    }
    false
}

fn is_hostname(s: &str) -> bool {
    const PATTERN: &str = r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$";
    s.len() <= 255
        && s.split('.').all(|label| label.len() <= 63)
        && static_regex(&HOSTNAME, PATTERN, s)
}

/// An approximation of Go's `net/mail.ParseAddress`: `local@domain`, optionally as
/// `Name <local@domain>`.
fn is_email(s: &str) -> bool {
    let addr = match (s.find('<'), s.strip_suffix('>')) {
        (Some(i), Some(inner)) => &inner[i + 1..],
        (None, None) => s.trim(),
        _ => return false,
    };
    match addr.rsplit_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.is_empty()
                && !addr
                    .chars()
                    .any(|c| c.is_whitespace() || c == '<' || c == '>')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }
        None => false,
    }
}

/// An approximation of Go's `url.ParseRequestURI`: an absolute URI or an absolute path.
fn is_uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    match s.split_once(':') {
        Some((scheme, _)) => {
            let mut chars = scheme.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// Go's `time.ParseDuration` syntax, plus the day/week units go-openapi adds.
fn is_duration(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s).trim();
    if body == "0" {
        return true;
    }
    let units = [
        "ns", "us", "µs", "ms", "s", "m", "h", "d", "w", "sec", "secs", "second", "seconds", "min",
        "mins", "minute", "minutes", "hr", "hrs", "hour", "hours", "day", "days", "wk", "wks",
        "week", "weeks",
    ];
    let mut rest = body;
    let mut any = false;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..num_len];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return false;
        }
        rest = rest[num_len..].trim_start();
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.' || c.is_whitespace())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        if !units.contains(&unit) {
            return false;
        }
        rest = rest[unit_len..].trim_start();
        any = true;
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The `openAPIV3Schema` of the kubeocean ResourceLeasingPolicy CRD (descriptions dropped).
    const RLP_SCHEMA: &str = r#"
{
 "properties": {
  "apiVersion": {
   "type": "string"
  },
  "kind": {
   "type": "string"
  },
  "metadata": {
   "type": "object"
  },
  "spec": {
   "properties": {
    "cluster": {
     "type": "string"
    },
    "forceReclaim": {
     "type": "boolean"
    },
    "gracefulReclaimPeriodSeconds": {
     "format": "int32",
     "type": "integer"
    },
    "nodeSelector": {
     "properties": {
      "nodeSelectorTerms": {
       "items": {
        "properties": {
         "matchExpressions": {
          "items": {
           "properties": {
            "key": {
             "type": "string"
            },
            "operator": {
             "type": "string"
            },
            "values": {
             "items": {
              "type": "string"
             },
             "type": "array",
             "x-kubernetes-list-type": "atomic"
            }
           },
           "required": [
            "key",
            "operator"
           ],
           "type": "object"
          },
          "type": "array",
          "x-kubernetes-list-type": "atomic"
         },
         "matchFields": {
          "items": {
           "properties": {
            "key": {
             "type": "string"
            },
            "operator": {
             "type": "string"
            },
            "values": {
             "items": {
              "type": "string"
             },
             "type": "array",
             "x-kubernetes-list-type": "atomic"
            }
           },
           "required": [
            "key",
            "operator"
           ],
           "type": "object"
          },
          "type": "array",
          "x-kubernetes-list-type": "atomic"
         }
        },
        "type": "object",
        "x-kubernetes-map-type": "atomic"
       },
       "type": "array",
       "x-kubernetes-list-type": "atomic"
      }
     },
     "required": [
      "nodeSelectorTerms"
     ],
     "type": "object",
     "x-kubernetes-map-type": "atomic"
    },
    "resourceLimits": {
     "items": {
      "properties": {
       "percent": {
        "format": "int32",
        "type": "integer"
       },
       "quantity": {
        "anyOf": [
         {
          "type": "integer"
         },
         {
          "type": "string"
         }
        ],
        "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
        "x-kubernetes-int-or-string": true
       },
       "resource": {
        "type": "string"
       }
      },
      "required": [
       "resource"
      ],
      "type": "object"
     },
     "type": "array"
    },
    "timeWindows": {
     "items": {
      "properties": {
       "days": {
        "items": {
         "type": "string"
        },
        "type": "array"
       },
       "end": {
        "type": "string"
       },
       "start": {
        "type": "string"
       }
      },
      "required": [
       "end",
       "start"
      ],
      "type": "object"
     },
     "type": "array"
    }
   },
   "required": [
    "cluster"
   ],
   "type": "object"
  },
  "status": {
   "properties": {
    "activeTimeWindow": {
     "type": "boolean"
    },
    "conditions": {
     "items": {
      "properties": {
       "lastTransitionTime": {
        "format": "date-time",
        "type": "string"
       },
       "message": {
        "maxLength": 32768,
        "type": "string"
       },
       "observedGeneration": {
        "format": "int64",
        "minimum": 0,
        "type": "integer"
       },
       "reason": {
        "maxLength": 1024,
        "minLength": 1,
        "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        "type": "string"
       },
       "status": {
        "enum": [
         "True",
         "False",
         "Unknown"
        ],
        "type": "string"
       },
       "type": {
        "maxLength": 316,
        "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
        "type": "string"
       }
      },
      "required": [
       "lastTransitionTime",
       "message",
       "reason",
       "status",
       "type"
      ],
      "type": "object"
     },
     "type": "array"
    },
    "lastAppliedTime": {
     "format": "date-time",
     "type": "string"
    },
    "phase": {
     "type": "string"
    }
   },
   "type": "object"
  }
 },
 "type": "object"
}
"#;

    fn rlp_schema() -> Value {
        serde_json::from_str(RLP_SCHEMA).expect("the RLP schema is valid JSON")
    }

    fn texts(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(FieldError::to_string_k8s).collect()
    }

    /// A root schema whose `spec` has the given properties (and optional extra keywords).
    fn spec_schema(spec: Value) -> Value {
        json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": spec
            }
        })
    }

    fn with_spec(spec: Value) -> Value {
        json!({"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "a"}, "spec": spec})
    }

    #[test]
    fn value_validation_keywords_use_apiserver_wording() {
        let cases: Vec<(&str, Value, Value, Vec<&str>)> = vec![
            (
                "type",
                json!({"type": "object", "properties": {"replicas": {"type": "integer"}}}),
                json!({"replicas": "3"}),
                vec![
                    r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#,
                ],
            ),
            (
                "integral float is an integer",
                json!({"type": "object", "properties": {"replicas": {"type": "integer"}}}),
                json!({"replicas": 3.0}),
                vec![],
            ),
            (
                "fractional float is not",
                json!({"type": "object", "properties": {"replicas": {"type": "integer"}}}),
                json!({"replicas": 3.5}),
                vec![
                    r#"spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number""#,
                ],
            ),
            (
                "required",
                json!({"type": "object", "required": ["clusterID"], "properties": {"clusterID": {"type": "string"}}}),
                json!({}),
                vec!["spec.clusterID: Required value"],
            ),
            (
                "enum",
                json!({"type": "object", "properties": {"mode": {"type": "string", "enum": ["Provision", "Adopt"]}}}),
                json!({"mode": "x"}),
                vec![
                    r#"spec.mode: Unsupported value: "x": supported values: "Provision", "Adopt""#,
                ],
            ),
            (
                "integer enum",
                json!({"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}}),
                json!({"n": 3}),
                vec![r#"spec.n: Unsupported value: 3: supported values: "1", "2""#],
            ),
            (
                "maxLength",
                json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 24}}}),
                json!({"name": "a-name-that-is-longer-than-24"}),
                vec!["spec.name: Too long: may not be longer than 24"],
            ),
            (
                "maxLength counts characters, not bytes",
                json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}}),
                json!({"name": "äöü"}),
                vec![],
            ),
            (
                "minLength",
                json!({"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}}),
                json!({"name": ""}),
                vec![
                    r#"spec.name: Invalid value: "": spec.name in body should be at least 1 chars long"#,
                ],
            ),
            (
                "pattern",
                json!({"type": "object", "properties": {"clusterID": {"type": "string", "pattern": "^[a-z]"}}}),
                json!({"clusterID": "ABC"}),
                vec![
                    r#"spec.clusterID: Invalid value: "ABC": spec.clusterID in body should match '^[a-z]'"#,
                ],
            ),
            (
                "minimum",
                json!({"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1}}}),
                json!({"replicas": 0}),
                vec![
                    "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
                ],
            ),
            (
                "exclusiveMaximum",
                json!({"type": "object", "properties": {"n": {"type": "integer", "maximum": 10, "exclusiveMaximum": true}}}),
                json!({"n": 10}),
                vec!["spec.n: Invalid value: 10: spec.n in body should be less than 10"],
            ),
            (
                "exclusiveMinimum on a number",
                json!({"type": "object", "properties": {"r": {"type": "number", "minimum": 0.5, "exclusiveMinimum": true}}}),
                json!({"r": 0.5}),
                vec!["spec.r: Invalid value: 0.5: spec.r in body should be greater than 0.5"],
            ),
            (
                "maximum on a number",
                json!({"type": "object", "properties": {"r": {"type": "number", "maximum": 1}}}),
                json!({"r": 1.5}),
                vec![
                    "spec.r: Invalid value: 1.5: spec.r in body should be less than or equal to 1",
                ],
            ),
            (
                "multipleOf int",
                json!({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 5}}}),
                json!({"n": 7}),
                vec!["spec.n: Invalid value: 7: spec.n in body should be a multiple of 5"],
            ),
            (
                "multipleOf fraction",
                json!({"type": "object", "properties": {"r": {"type": "number", "multipleOf": 0.5}}}),
                json!({"r": 0.25}),
                vec!["spec.r: Invalid value: 0.25: spec.r in body should be a multiple of 0.5"],
            ),
            (
                "maxItems",
                json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 2, "items": {"type": "string"}}}}),
                json!({"l": ["a", "b", "c"]}),
                vec!["spec.l: Too many: 3: must have at most 2 items"],
            ),
            (
                "minItems",
                json!({"type": "object", "properties": {"l": {"type": "array", "minItems": 1, "items": {"type": "string"}}}}),
                json!({"l": []}),
                vec!["spec.l: Invalid value: 0: spec.l in body should have at least 1 items"],
            ),
            (
                "uniqueItems",
                json!({"type": "object", "properties": {"l": {"type": "array", "uniqueItems": true, "items": {"type": "integer"}}}}),
                json!({"l": [1, 2, 1]}),
                vec![r#"spec.l: Invalid value: "": spec.l in body shouldn't contain duplicates"#],
            ),
            (
                "minProperties",
                json!({"type": "object", "properties": {"m": {"type": "object", "minProperties": 2, "additionalProperties": {"type": "string"}}}}),
                json!({"m": {"a": "x"}}),
                vec!["spec.m: Invalid value: 1: spec.m in body should have at least 2 properties"],
            ),
            (
                "maxProperties",
                json!({"type": "object", "properties": {"m": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}}}}),
                json!({"m": {"a": "x", "b": "y"}}),
                vec!["spec.m: Too many: 2: must have at most 1 items"],
            ),
            (
                "additionalProperties schema",
                json!({"type": "object", "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}}}),
                json!({"labels": {"a": 1}}),
                vec![
                    r#"spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer""#,
                ],
            ),
            (
                "additionalProperties false",
                json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": false}}}),
                json!({"m": {"x": 1}}),
                vec![r#"spec.m: Invalid value: "x": spec.m.x in body is a forbidden property"#],
            ),
            (
                "nullable",
                json!({"type": "object", "properties": {"a": {"type": "string", "nullable": true}, "b": {"type": "string"}}}),
                json!({"a": null, "b": null}),
                vec![
                    r#"spec.b: Invalid value: "null": spec.b in body must be of type string: "null""#,
                ],
            ),
            (
                "int-or-string",
                json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true}}}),
                json!({"port": true}),
                vec![
                    r#"spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#,
                ],
            ),
            (
                "int-or-string accepts both",
                json!({"type": "object", "properties": {"a": {"x-kubernetes-int-or-string": true}, "b": {"x-kubernetes-int-or-string": true}}}),
                json!({"a": 8080, "b": "http"}),
                vec![],
            ),
            (
                "format date-time",
                json!({"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}, "ok": {"type": "string", "format": "date-time"}}}),
                json!({"at": "yesterday", "ok": "2024-02-29T10:00:00.5+01:00"}),
                vec![
                    r#"spec.at: Invalid value: "yesterday": spec.at in body must be of type date-time: "yesterday""#,
                ],
            ),
            (
                "format int32 is stripped by the apiserver",
                json!({"type": "object", "properties": {"n": {"type": "integer", "format": "int32"}}}),
                json!({"n": 5_000_000_000_i64}),
                vec![],
            ),
            (
                "format byte and uuid",
                json!({"type": "object", "properties": {"b": {"type": "string", "format": "byte"}, "u": {"type": "string", "format": "uuid"}}}),
                json!({"b": "aGVsbG8=", "u": "not-a-uuid"}),
                vec![
                    r#"spec.u: Invalid value: "not-a-uuid": spec.u in body must be of type uuid: "not-a-uuid""#,
                ],
            ),
            (
                "anyOf none",
                json!({"type": "object", "properties": {"s": {"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^bb"}]}}}),
                json!({"s": "c"}),
                vec![
                    r#"<nil>: Invalid value: "": "spec.s" must validate at least one schema (anyOf)"#,
                    r#"spec.s: Invalid value: "c": spec.s in body should match '^a'"#,
                ],
            ),
            (
                "oneOf two valid",
                json!({"type": "object", "properties": {"s": {"type": "string", "oneOf": [{"minLength": 1}, {"maxLength": 5}]}}}),
                json!({"s": "abc"}),
                vec![
                    r#"<nil>: Invalid value: "": "spec.s" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
                ],
            ),
            (
                "allOf",
                json!({"type": "object", "properties": {"n": {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 3}]}}}),
                json!({"n": 5}),
                vec![
                    "spec.n: Invalid value: 5: spec.n in body should be less than or equal to 3",
                    r#"<nil>: Invalid value: "": "spec.n" must validate all the schemas (allOf)"#,
                ],
            ),
            (
                "not",
                json!({"type": "object", "properties": {"s": {"type": "string", "not": {"enum": ["forbidden"]}}}}),
                json!({"s": "forbidden"}),
                vec![r#"<nil>: Invalid value: "": "spec.s" must not validate the schema (not)"#],
            ),
            (
                "nested items",
                json!({"type": "object", "properties": {"timeWindows": {"type": "array", "items": {
                    "type": "object", "required": ["start"], "properties": {"start": {"type": "string"}}}}}}),
                json!({"timeWindows": [{"start": "08:00"}, {}]}),
                vec!["spec.timeWindows[1].start: Required value"],
            ),
            (
                "list-type set",
                json!({"type": "object", "properties": {"days": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}),
                json!({"days": ["monday", "tuesday", "monday", "monday"]}),
                vec![r#"spec.days[2]: Duplicate value: "monday""#],
            ),
            (
                "list-type map",
                json!({"type": "object", "properties": {"ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}}}),
                json!({"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}, {"name": "http", "port": 8080}]}),
                vec![r#"spec.ports[2]: Duplicate value: map[string]interface {}{"name":"http"}"#],
            ),
            (
                "list-type map with two keys",
                json!({"type": "object", "properties": {"ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["port", "protocol"], "items": {"type": "object",
                    "properties": {"port": {"type": "integer"}, "protocol": {"type": "string"}}}}}}),
                json!({"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}),
                vec![
                    r#"spec.ports[2]: Duplicate value: map[string]interface {}{"port":53, "protocol":"UDP"}"#,
                ],
            ),
        ];
        for (name, spec, value, want) in cases {
            let errors = validate_object(&spec_schema(spec), &with_spec(value), None);
            assert_eq!(texts(&errors), want, "case {name}");
        }
    }

    #[test]
    fn field_errors_render_like_apimachinery() {
        let cases: Vec<(FieldError, &str, &str)> = vec![
            (
                FieldError::required("spec.a", ""),
                "FieldValueRequired",
                "spec.a: Required value",
            ),
            (
                FieldError::forbidden("spec.a", "nope"),
                "FieldValueForbidden",
                "spec.a: Forbidden: nope",
            ),
            (
                FieldError::too_long("spec.a", json!("xxxx"), 3),
                "FieldValueTooLong",
                "spec.a: Too long: may not be longer than 3",
            ),
            (
                FieldError::too_many("spec.a", 4, 3),
                "FieldValueTooMany",
                "spec.a: Too many: 4: must have at most 3 items",
            ),
            (
                FieldError::duplicate("spec.a[1]", json!({"b": 1.5, "a": [true, null]})),
                "FieldValueDuplicate",
                r#"spec.a[1]: Duplicate value: map[string]interface {}{"a":[]interface {}{true, interface {}(nil)}, "b":1.5}"#,
            ),
            (
                FieldError::not_supported("spec.a", json!("x\"y"), &["A".to_string()]),
                "FieldValueNotSupported",
                r#"spec.a: Unsupported value: "x\"y": supported values: "A""#,
            ),
            (
                FieldError::invalid("spec.a", Some(json!(1e6)), "d"),
                "FieldValueInvalid",
                "spec.a: Invalid value: 1e+06: d",
            ),
            (
                FieldError::invalid(NIL_FIELD, None, "d"),
                "FieldValueInvalid",
                r#"<nil>: Invalid value: "null": d"#,
            ),
            (
                FieldError::type_invalid("spec.a", Some(json!("string")), "m"),
                "FieldValueTypeInvalid",
                r#"spec.a: Invalid value: "string": m"#,
            ),
        ];
        for (error, reason, text) in cases {
            assert_eq!(error.reason(), reason);
            assert_eq!(error.to_string_k8s(), text);
            assert_eq!(error.to_string(), text);
        }
        let prefixed = FieldError::required("properties[spec].type", "x")
            .with_prefix("spec.versions[0].schema.openAPIV3Schema");
        assert_eq!(
            prefixed.field,
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].type"
        );
        assert_eq!(
            FieldError::required(NIL_FIELD, "").with_prefix("p").field,
            "p"
        );
    }

    #[test]
    fn root_metadata_is_only_checked_for_name_constraints() {
        let schema = json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}},
            "spec": {"type": "object"}
        }});
        let obj = json!({"metadata": {"name": "toolong", "labels": {"a": "b"}, "resourceVersion": "1"}, "spec": {}});
        assert_eq!(
            texts(&validate_object(&schema, &obj, None)),
            ["metadata.name: Too long: may not be longer than 5"]
        );
        let obj = json!({"metadata": {"name": "ok", "labels": {"a": "b"}}, "spec": {}});
        assert!(validate_object(&schema, &obj, None).is_empty());
    }

    #[test]
    fn unchanged_values_ratchet_on_update() {
        let schema = spec_schema(json!({"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 3},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer", "maximum": 100}}}}
        }}));
        let old = with_spec(json!({"name": "toolong", "ports": [{"name": "a", "port": 200}]}));
        // Unchanged invalid values (also reordered list-map items) keep passing.
        let new = with_spec(
            json!({"name": "toolong", "ports": [{"name": "b", "port": 1}, {"name": "a", "port": 200}]}),
        );
        assert!(validate_object(&schema, &new, Some(&old)).is_empty());
        // A changed value is validated again, and so is everything on create.
        let new = with_spec(json!({"name": "toolonger", "ports": [{"name": "a", "port": 201}]}));
        assert_eq!(
            texts(&validate_object(&schema, &new, Some(&old))),
            [
                "spec.name: Too long: may not be longer than 3",
                "spec.ports[0].port: Invalid value: 201: spec.ports[0].port in body should be less than or equal to 100",
            ]
        );
        assert_eq!(validate_object(&schema, &old, None).len(), 2);
    }

    fn rules_schema() -> Value {
        spec_schema(json!({
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas"},
                {"rule": "!has(self.quantity) || self.quantity != ''"},
                {"rule": "!has(self.name) || !self.name.startsWith('x')", "reason": "FieldValueForbidden", "fieldPath": ".name", "message": "name must not start with x"}
            ],
            "properties": {
                "minReplicas": {"type": "integer"},
                "maxReplicas": {"type": "integer"},
                "quantity": {"type": "string"},
                "clusterID": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Value is immutable"}]},
                "name": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "self.size() <= 24"},
                    {"rule": "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')", "message": "must be a DNS label"}
                ]},
                "days": {"type": "array", "items": {"type": "string"}, "x-kubernetes-validations": [
                    {"rule": "self.all(d, d in ['monday', 'tuesday'])", "message": "only monday and tuesday"}
                ]},
                "labels": {"type": "object", "additionalProperties": {"type": "string",
                    "x-kubernetes-validations": [{"rule": "self != 'bad'"}]}},
                "at": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "self == timestamp('2024-01-01T00:00:00Z')"},
                    {"rule": "self.missing == 1", "optionalOldSelf": true}
                ]}
            }
        }))
    }

    #[test]
    fn cel_rules_fail_with_their_messages() {
        let schema = rules_schema();
        let cases: Vec<(&str, Value, Vec<&str>)> = vec![
            (
                "valid",
                json!({"minReplicas": 1, "maxReplicas": 2, "name": "web", "days": ["monday"], "labels": {"a": "ok"}, "at": "x"}),
                vec![],
            ),
            (
                "object rule with message",
                json!({"minReplicas": 3, "maxReplicas": 2}),
                vec![r#"spec: Invalid value: "object": minReplicas must not exceed maxReplicas"#],
            ),
            (
                "rule without message",
                json!({"minReplicas": 1, "maxReplicas": 2, "quantity": ""}),
                vec![
                    r#"spec: Invalid value: "object": failed rule: !has(self.quantity) || self.quantity != ''"#,
                ],
            ),
            (
                "string rules, reason and fieldPath",
                json!({"minReplicas": 1, "maxReplicas": 2, "name": "x-Name-that-is-far-too-long"}),
                vec![
                    "spec.name: Forbidden: name must not start with x",
                    r#"spec.name: Invalid value: "string": failed rule: self.size() <= 24"#,
                    r#"spec.name: Invalid value: "string": must be a DNS label"#,
                ],
            ),
            (
                "list macro",
                json!({"minReplicas": 1, "maxReplicas": 2, "days": ["monday", "sunday"]}),
                vec![r#"spec.days: Invalid value: "array": only monday and tuesday"#],
            ),
            (
                "map values use key paths",
                json!({"minReplicas": 1, "maxReplicas": 2, "labels": {"k": "bad"}}),
                vec![r#"spec.labels[k]: Invalid value: "string": failed rule: self != 'bad'"#],
            ),
            (
                "runtime error",
                json!({"maxReplicas": 2}),
                vec![
                    r#"spec: Invalid value: "object": no such key: minReplicas evaluating rule: minReplicas must not exceed maxReplicas"#,
                ],
            ),
        ];
        for (name, spec, want) in cases {
            let errors = validate_object(&schema, &with_spec(spec), None);
            assert_eq!(texts(&errors), want, "case {name}");
        }
    }

    #[test]
    fn transition_rules_run_only_on_update() {
        let schema = rules_schema();
        let base = json!({"minReplicas": 1, "maxReplicas": 2});
        let mut created = base.clone();
        created["clusterID"] = json!("c1");
        assert!(validate_object(&schema, &with_spec(created.clone()), None).is_empty());
        assert!(
            validate_object(
                &schema,
                &with_spec(created.clone()),
                Some(&with_spec(created.clone()))
            )
            .is_empty()
        );
        let mut changed = base.clone();
        changed["clusterID"] = json!("c2");
        assert_eq!(
            texts(&validate_object(
                &schema,
                &with_spec(changed.clone()),
                Some(&with_spec(created))
            )),
            [r#"spec.clusterID: Invalid value: "string": Value is immutable"#]
        );
        // Without an old value for the field (it was unset before) the rule does not run.
        assert!(validate_object(&schema, &with_spec(changed), Some(&with_spec(base))).is_empty());
    }

    #[test]
    fn transition_rules_correlate_list_map_items_by_key() {
        let schema = spec_schema(json!({"type": "object", "properties": {"ports": {
            "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"},
                "port": {"type": "integer", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}]}}}
        }}}));
        let old = with_spec(json!({"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}));
        let reordered = with_spec(
            json!({"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 1}, {"name": "c", "port": 3}]}),
        );
        assert!(validate_object(&schema, &reordered, Some(&old)).is_empty());
        let changed =
            with_spec(json!({"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 5}]}));
        assert_eq!(
            texts(&validate_object(&schema, &changed, Some(&old))),
            [r#"spec.ports[1].port: Invalid value: "integer": immutable"#]
        );
    }

    #[test]
    fn unsupported_rules_are_skipped_and_listed() {
        let schema = rules_schema();
        assert_eq!(
            unsupported_rules(&schema),
            [
                "properties[spec].properties[at].x-kubernetes-validations[0]: self == timestamp('2024-01-01T00:00:00Z'): unsupported: function timestamp() with 1 argument(s)",
                "properties[spec].properties[at].x-kubernetes-validations[1]: self.missing == 1: optionalOldSelf is not supported",
            ]
        );
        let spec = json!({"minReplicas": 1, "maxReplicas": 2, "at": "2023-01-01T00:00:00Z"});
        assert!(validate_object(&schema, &with_spec(spec), None).is_empty());
        assert!(unsupported_rules(&rlp_schema()).is_empty());
    }

    #[test]
    fn blocking_schema_errors_skip_cel_rules() {
        let schema = rules_schema();
        let spec = json!({"minReplicas": "3", "maxReplicas": 2});
        assert_eq!(
            texts(&validate_object(&schema, &with_spec(spec), None)),
            [
                r#"spec.minReplicas: Invalid value: "string": spec.minReplicas in body must be of type integer: "string""#,
                r#"<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#,
            ]
        );
    }

    #[test]
    fn root_rules_see_only_name_in_metadata() {
        let schema = json!({"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.metadata.name.size() <= 5", "message": "name too long"},
                {"rule": "!has(self.metadata.labels)"}
            ],
            "properties": {"metadata": {"type": "object"}, "spec": {"type": "object"}}});
        let obj = json!({"metadata": {"name": "abcdefg", "labels": {"a": "b"}}, "spec": {}});
        assert_eq!(
            texts(&validate_object(&schema, &obj, None)),
            [r#"<nil>: Invalid value: "object": name too long"#]
        );
    }

    #[test]
    fn defaulting_fills_missing_fields_recursively() {
        let schema = json!({"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "default": {}, "properties": {
                "replicas": {"type": "integer", "default": 1},
                "mode": {"type": "string", "default": "Provision"},
                "strategy": {"type": "object", "default": {"type": "Rolling"}, "properties": {
                    "type": {"type": "string"}, "maxSurge": {"type": "integer", "default": 25}}},
                "note": {"type": "string"},
                "maybe": {"type": "string", "nullable": true},
                "windows": {"type": "array", "items": {"type": "object", "properties": {
                    "days": {"type": "integer", "default": 7}}}},
                "limits": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                    "percent": {"type": "integer", "default": 100}}}}
            }}
        }});
        let cases: Vec<(&str, Value, Value)> = vec![
            (
                "root spec default",
                json!({"metadata": {"name": "a"}}),
                json!({"metadata": {"name": "a"}, "spec": {"replicas": 1, "mode": "Provision", "strategy": {"type": "Rolling", "maxSurge": 25}}}),
            ),
            (
                "present values win, nulls are dropped or defaulted",
                json!({"spec": {"replicas": 3, "mode": null, "note": null, "maybe": null, "strategy": {"type": "Recreate"}}}),
                json!({"spec": {"replicas": 3, "mode": "Provision", "maybe": null, "strategy": {"type": "Recreate", "maxSurge": 25}}}),
            ),
            (
                "items and additionalProperties",
                json!({"spec": {"windows": [{}, {"days": 2}], "limits": {"cpu": {}, "memory": {"percent": 50}}}}),
                json!({"spec": {"replicas": 1, "mode": "Provision", "strategy": {"type": "Rolling", "maxSurge": 25},
                    "windows": [{"days": 7}, {"days": 2}], "limits": {"cpu": {"percent": 100}, "memory": {"percent": 50}}}}),
            ),
        ];
        for (name, mut obj, want) in cases {
            default_object(&schema, &mut obj);
            assert_eq!(obj, want, "case {name}");
        }
    }

    #[test]
    fn pruning_drops_unknown_fields_and_reports_them() {
        let schema = json!({"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "known": {"type": "string"},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                    "typed": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "list": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}}
            }}
        }});
        let mut obj = json!({
            "apiVersion": "x.io/v1", "kind": "X",
            "metadata": {"name": "a", "labels": {"l": "v"}, "whatever": 1},
            "status": {"phase": "Ready"},
            "spec": {
                "known": "k", "unknown": 1,
                "free": {"anything": {"deep": true}, "typed": {"a": "x", "b": "dropped"}},
                "labels": {"any": "kept"},
                "list": [{"name": "n", "extra": 1}, {"extra": 2}],
                "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}, "other": 1}
            }
        });
        let pruned = prune_unknown(&schema, &mut obj);
        assert_eq!(
            pruned,
            [
                "spec.embedded.other",
                "spec.embedded.spec.x",
                "spec.free.typed.b",
                "spec.list[0].extra",
                "spec.list[1].extra",
                "spec.unknown",
                "status",
            ]
        );
        assert_eq!(
            obj,
            json!({
                "apiVersion": "x.io/v1", "kind": "X",
                "metadata": {"name": "a", "labels": {"l": "v"}, "whatever": 1},
                "spec": {
                    "known": "k",
                    "free": {"anything": {"deep": true}, "typed": {"a": "x"}},
                    "labels": {"any": "kept"},
                    "list": [{"name": "n"}, {}],
                    "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
                }
            })
        );
    }

    #[test]
    fn preserve_unknown_fields_at_the_root_keeps_everything_unknown() {
        let schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}});
        let mut obj = json!({"spec": {"a": "x", "b": 1}, "status": {"c": 2}});
        assert_eq!(prune_unknown(&schema, &mut obj), ["spec.b"]);
        assert_eq!(obj, json!({"spec": {"a": "x"}, "status": {"c": 2}}));
    }

    #[test]
    fn resource_leasing_policy_schema() {
        let schema = rlp_schema();
        assert_eq!(validate_crd_schema(&schema), []);
        let valid = json!({
            "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
            "metadata": {"name": "rlp"},
            "spec": {
                "cluster": "cb-1",
                "gracefulReclaimPeriodSeconds": 30,
                "resourceLimits": [{"resource": "cpu", "quantity": "10"}, {"resource": "memory", "quantity": "10Gi"}, {"resource": "pods", "quantity": 5}],
                "timeWindows": [{"start": "08:00", "end": "18:00", "days": ["monday"]}],
                "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}]}
            },
            "status": {"phase": "Active", "conditions": [{"type": "Ready", "status": "True", "reason": "Ok", "message": "", "lastTransitionTime": "2024-05-01T10:00:00Z"}]}
        });
        assert_eq!(
            texts(&validate_object(&schema, &valid, None)),
            Vec::<String>::new()
        );

        let mut invalid = valid.clone();
        invalid["spec"]["unknownField"] = json!(1);
        assert_eq!(prune_unknown(&schema, &mut invalid), ["spec.unknownField"]);
        if let Some(spec) = invalid["spec"].as_object_mut() {
            spec.remove("cluster");
        }
        invalid["spec"]["resourceLimits"][0]["quantity"] = json!("lots");
        invalid["spec"]["timeWindows"][0] = json!({"start": "08:00"});
        invalid["spec"]["gracefulReclaimPeriodSeconds"] = json!("30s");
        invalid["status"]["conditions"][0]["status"] = json!("Maybe");
        invalid["status"]["conditions"][0]["lastTransitionTime"] = json!("May 1st");
        let pattern = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";
        let mut got = texts(&validate_object(&schema, &invalid, None));
        got.sort();
        let mut want = vec![
            r#"spec.gracefulReclaimPeriodSeconds: Invalid value: "string": spec.gracefulReclaimPeriodSeconds in body must be of type integer: "string""#.to_string(),
            format!(r#"spec.resourceLimits[0].quantity: Invalid value: "lots": spec.resourceLimits[0].quantity in body should match '{pattern}'"#),
            "spec.timeWindows[0].end: Required value".to_string(),
            "spec.cluster: Required value".to_string(),
            r#"status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown""#.to_string(),
            r#"status.conditions[0].lastTransitionTime: Invalid value: "May 1st": status.conditions[0].lastTransitionTime in body must be of type date-time: "May 1st""#.to_string(),
        ];
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn crd_schema_violations_use_apiserver_paths() {
        let cases: Vec<(&str, Value, Vec<&str>)> = vec![
            (
                "missing types",
                json!({"type": "object", "properties": {"spec": {"properties": {"a": {}}}}}),
                vec![
                    "properties[spec].properties[a].type: Required value: must not be empty for specified object fields",
                    "properties[spec].type: Required value: must not be empty for specified object fields",
                ],
            ),
            (
                "root type, array items",
                json!({"type": "array"}),
                vec![
                    "items: Required value: must be specified",
                    r#"type: Invalid value: "array": must be object at the root"#,
                ],
            ),
            (
                "missing item type",
                json!({"type": "object", "properties": {"l": {"type": "array", "items": {}}}}),
                vec![
                    "properties[l].items.type: Required value: must not be empty for specified array items",
                ],
            ),
            (
                "nested defaults count when validating a default, metadata may constrain its name",
                json!({"type": "object", "properties": {
                    "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}},
                    "spec": {"type": "object", "default": {}, "required": ["replicas"],
                        "properties": {"replicas": {"type": "integer", "default": 1}}}}}),
                vec![],
            ),
            (
                "metadata restrictions",
                json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
                vec![
                    "properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
                ],
            ),
            (
                "unsupported keywords",
                json!({"type": "object", "properties": {
                    "a": {"$ref": "#/definitions/x", "type": "string"},
                    "b": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
                    "c": {"type": "null"},
                    "d": {"type": "text"},
                    "e": {"type": "string", "pattern": "(unclosed"}
                }}),
                vec![
                    "properties[a].$ref: Forbidden: $ref is not supported",
                    "properties[b].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
                    "properties[c].type: Forbidden: type cannot be set to null, use nullable as an alternative",
                    r#"properties[d].type: Unsupported value: "text": supported values: "array", "boolean", "integer", "number", "object", "string""#,
                    r#"properties[e].pattern: Invalid value: "(unclosed": must be a valid regular expression, but isn't: error parsing regexp: unclosed group: `(unclosed`"#,
                ],
            ),
            (
                "properties with additionalProperties",
                json!({"type": "object", "properties": {"m": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}),
                vec![
                    "properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
                ],
            ),
            (
                "value validations stay structural",
                json!({"type": "object", "properties": {"s": {"type": "string", "anyOf": [{"type": "string"}, {"properties": {"x": {}}}]},
                    "q": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}}),
                vec![
                    "properties[s].anyOf[0].type: Forbidden: must be empty to be structural",
                    "properties[s].properties[x]: Required value: because it is defined in properties[s].anyOf[1].properties[x]",
                ],
            ),
            (
                "list types",
                json!({"type": "object", "properties": {
                    "a": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}},
                    "b": {"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}},
                    "c": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
                }}),
                vec![
                    "properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
                    r#"properties[b].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map""#,
                    "properties[c].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                ],
            ),
            (
                "defaults must validate and be pruned",
                json!({"type": "object", "properties": {
                    "n": {"type": "integer", "default": "one"},
                    "o": {"type": "object", "default": {"x": 1}, "properties": {"y": {"type": "integer"}}}
                }}),
                vec![
                    r#"properties[n].default: Invalid value: "string":  in body must be of type integer: "string""#,
                    r#"properties[o].default: Invalid value: map[string]interface {}{"x":1}: must not have unknown fields"#,
                ],
            ),
            (
                "rule reasons",
                json!({"type": "object", "x-kubernetes-validations": [{"rule": "true", "reason": "Nope"}, {"rule": ""}]}),
                vec![
                    "x-kubernetes-validations[1].rule: Required value",
                    r#"x-kubernetes-validations[0].reason: Unsupported value: "Nope": supported values: "FieldValueRequired", "FieldValueForbidden", "FieldValueInvalid", "FieldValueDuplicate""#,
                ],
            ),
            (
                "preserve-unknown-fields false",
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false}),
                vec![
                    "x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined",
                ],
            ),
        ];
        for (name, schema, want) in cases {
            let mut want: Vec<String> = want.into_iter().map(String::from).collect();
            want.sort();
            assert_eq!(texts(&validate_crd_schema(&schema)), want, "case {name}");
        }
    }

    #[test]
    fn formats_follow_go_openapi() {
        let cases: &[(&str, &str, bool)] = &[
            ("date-time", "2024-01-31T23:59:60Z", true),
            ("date-time", "2024-02-30T00:00:00Z", false),
            ("date-time", "2024-01-01 00:00:00Z", false),
            ("date-time", "2024-01-01T00:00:00", false),
            ("date", "2023-02-29", false),
            ("date", "2024-02-29", true),
            ("byte", "aGk=", true),
            ("byte", "aGk", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
            ("uuid4", "123e4567-e89b-12d3-a456-426614174000", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0.256", false),
            ("ipv6", "fe80::1", true),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("mac", "00:1a:2b:3c:4d:5e", true),
            ("mac", "00:1a:2b", false),
            ("hostname", "my-host.example.com", true),
            ("hostname", "-bad-", false),
            ("email", "a@b.io", true),
            ("email", "not an email", false),
            ("uri", "https://example.com/x", true),
            ("uri", "relative/path", false),
            ("duration", "1h30m", true),
            ("duration", "3 days", true),
            ("duration", "soon", false),
            ("hexcolor", "#ff00aa", true),
            ("bsonobjectid", "507f1f77bcf86cd799439011", true),
        ];
        for (format, value, want) in cases {
            assert_eq!(check_format(format, value), Some(*want), "{format} {value}");
        }
        assert_eq!(check_format("int32", "x"), None);
    }
}
