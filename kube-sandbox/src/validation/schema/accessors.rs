//! Reading schema nodes: types, properties, items and the x-kubernetes extensions.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::field_error::NIL_FIELD;

pub(super) const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
pub(super) const INT_OR_STRING: &str = "x-kubernetes-int-or-string";
pub(super) const EMBEDDED: &str = "x-kubernetes-embedded-resource";
pub(super) const LIST_TYPE: &str = "x-kubernetes-list-type";
pub(super) const LIST_MAP_KEYS: &str = "x-kubernetes-list-map-keys";
pub(super) const MAP_TYPE: &str = "x-kubernetes-map-type";
pub(super) const VALIDATIONS: &str = "x-kubernetes-validations";

pub(super) fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

pub(super) fn str_of<'a>(schema: &'a Value, key: &str) -> Option<&'a str> {
    schema.get(key).and_then(Value::as_str)
}

pub(super) fn num_of(schema: &Value, key: &str) -> Option<f64> {
    schema.get(key).and_then(Value::as_f64)
}

pub(super) fn int_of(schema: &Value, key: &str) -> Option<i64> {
    let v = schema.get(key)?;
    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
}

pub(super) fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

pub(super) fn items_schema(schema: &Value) -> Option<&Value> {
    schema.get("items").filter(|i| i.is_object())
}

/// What `additionalProperties` says about keys not in `properties`.
pub(super) enum Additional<'a> {
    /// Not set: unknown keys are pruned (or preserved with preserve-unknown-fields).
    Unset,
    /// `true` or `false`.
    Bool(bool),
    /// A schema for every other key.
    Schema(&'a Value),
}

pub(super) fn additional(schema: &Value) -> Additional<'_> {
    match schema.get("additionalProperties") {
        Some(Value::Bool(b)) => Additional::Bool(*b),
        Some(s @ Value::Object(_)) => Additional::Schema(s),
        _ => Additional::Unset,
    }
}

pub(super) fn additional_schema(schema: &Value) -> Option<&Value> {
    match additional(schema) {
        Additional::Schema(s) => Some(s),
        _ => None,
    }
}

pub(super) fn schema_types(schema: &Value) -> Vec<&str> {
    if flag(schema, INT_OR_STRING) {
        vec!["integer", "string"]
    } else {
        str_of(schema, "type").into_iter().collect()
    }
}

/// The JSON type name as Go decodes JSON: integers without fraction or exponent are `integer`.
pub(super) fn json_type(v: &Value) -> &'static str {
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
pub(super) fn is_json_integer(f: f64) -> bool {
    f.is_finite() && f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0
}

pub(super) fn type_matches(types: &[&str], v: &Value) -> bool {
    let t = json_type(v);
    types.contains(&t)
        || (t == "number" && types.contains(&"integer") && v.as_f64().is_some_and(is_json_integer))
        || (t == "integer" && types.contains(&"number"))
}

/// Deep equality with numbers compared by value (so `1` equals `1.0`).
pub(super) fn json_equal(a: &Value, b: &Value) -> bool {
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
pub(super) fn canonical(v: &Value) -> String {
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
pub(super) fn sorted_entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// kube-openapi joins property names with dots and no leading dot.
pub(super) fn join_name(base: &str, key: &str) -> String {
    if base.is_empty() {
        key.to_string()
    } else {
        format!("{base}.{key}")
    }
}

/// apimachinery `field.Path.Child`.
pub(super) fn path_child(base: &str, name: &str) -> String {
    join_name(base, name)
}

/// apimachinery `field.Path.Key` / `Index`.
pub(super) fn path_sub(base: &str, key: impl std::fmt::Display) -> String {
    format!("{base}[{key}]")
}

pub(super) fn nil_if_empty(path: &str) -> String {
    if path.is_empty() {
        NIL_FIELD.to_string()
    } else {
        path.to_string()
    }
}

/// The old list item a new item of a list-type `map` (by keys) or `set` (by value) correlates
/// with; other lists do not correlate items.
pub(super) fn correlate_item<'a>(
    schema: &Value,
    old: Option<&'a Value>,
    item: &Value,
) -> Option<&'a Value> {
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
