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

mod accessors;
mod crd;
mod defaulting;
mod formats;
mod list_types;
mod pruning;
mod rules;
#[cfg(test)]
mod tests;
mod validate;

use accessors::*;
pub use crd::*;
pub use defaulting::*;
use formats::*;
use list_types::*;
pub use pruning::*;
pub use rules::*;
pub use validate::*;

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
