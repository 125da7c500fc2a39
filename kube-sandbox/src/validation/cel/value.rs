//! CEL values, the errors of compiling and evaluating a rule, and JSON to CEL values.

use std::collections::BTreeMap;

use serde_json::Value;

/// Nesting deeper than this is refused so user-supplied rules cannot exhaust the stack.
pub(super) const MAX_DEPTH: usize = 64;

/// A CEL value.
#[derive(Debug, Clone)]
pub enum CelValue {
    /// `null`.
    Null,
    /// A bool.
    Bool(bool),
    /// A signed 64-bit integer (`type: integer` fields).
    Int(i64),
    /// An unsigned 64-bit integer.
    Uint(u64),
    /// A double (`type: number` fields).
    Double(f64),
    /// A string.
    String(String),
    /// A list (`type: array`).
    List(Vec<CelValue>),
    /// A map with string keys (`type: object`).
    Map(BTreeMap<String, CelValue>),
    /// A value of a CEL type this interpreter does not model; it keeps its JSON text so that
    /// equality (as in `self == oldSelf`) still works, every other operation is unsupported.
    Opaque {
        /// Which CEL type the value has.
        kind: OpaqueKind,
        /// The JSON string the value came from.
        raw: String,
    },
}

/// CEL types that are carried but not interpreted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpaqueKind {
    /// `format: date-time` / `date` strings.
    Timestamp,
    /// `format: duration` strings.
    Duration,
    /// `format: byte` strings.
    Bytes,
}

impl CelValue {
    pub(super) fn type_name(&self) -> &'static str {
        match self {
            CelValue::Null => "null_type",
            CelValue::Bool(_) => "bool",
            CelValue::Int(_) => "int",
            CelValue::Uint(_) => "uint",
            CelValue::Double(_) => "double",
            CelValue::String(_) => "string",
            CelValue::List(_) => "list",
            CelValue::Map(_) => "map",
            CelValue::Opaque { kind, .. } => match kind {
                OpaqueKind::Timestamp => "google.protobuf.Timestamp",
                OpaqueKind::Duration => "google.protobuf.Duration",
                OpaqueKind::Bytes => "bytes",
            },
        }
    }
}

/// Why a rule cannot be compiled.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompileError {
    /// The rule is not valid CEL as far as this parser understands it.
    #[error("syntax error at offset {offset}: {message}")]
    Syntax {
        /// Byte offset into the rule.
        offset: usize,
        /// What was wrong.
        message: String,
    },
    /// The rule uses something outside the supported subset.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

/// Why evaluating a rule failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// A failure the apiserver reports too (`no such key: x`, division by zero, ...).
    #[error("{0}")]
    Runtime(String),
    /// The operation is outside the supported subset (or is a type error the apiserver's type
    /// checker would have rejected when the CRD was created); the rule should be skipped.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

/// Converts JSON to a CEL value the way the apiserver types it from the schema: `integer`
/// fields are ints, `number` fields doubles, int-or-string fields either; strings with
/// `format: date-time`, `date`, `duration` or `byte` become [`CelValue::Opaque`]. Without a
/// schema (preserved unknown fields) integral numbers are ints.
pub fn value_from_json(schema: Option<&Value>, json: &Value) -> CelValue {
    let schema = schema.filter(|s| s.is_object());
    let ty = schema.and_then(|s| s.get("type")).and_then(Value::as_str);
    let int_or_string = schema
        .and_then(|s| s.get("x-kubernetes-int-or-string"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    match json {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => {
            if ty == Some("number") && !int_or_string {
                return CelValue::Double(n.as_f64().unwrap_or(f64::NAN));
            }
            if let Some(i) = n.as_i64() {
                CelValue::Int(i)
            } else if let Some(u) = n.as_u64() {
                CelValue::Uint(u)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                let integral_schema = ty == Some("integer") || int_or_string;
                if integral_schema && f.fract() == 0.0 && f.abs() < 9.2e18 {
                    CelValue::Int(f as i64)
                } else {
                    CelValue::Double(f)
                }
            }
        }
        Value::String(s) => {
            let format = schema.and_then(|s| s.get("format")).and_then(Value::as_str);
            let kind = match (ty, format) {
                (Some("string"), Some("date-time" | "datetime" | "date")) => {
                    Some(OpaqueKind::Timestamp)
                }
                (Some("string"), Some("duration")) => Some(OpaqueKind::Duration),
                (Some("string"), Some("byte")) => Some(OpaqueKind::Bytes),
                _ => None,
            };
            match kind {
                Some(kind) => CelValue::Opaque {
                    kind,
                    raw: s.clone(),
                },
                None => CelValue::String(s.clone()),
            }
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.get("items"));
            CelValue::List(
                items
                    .iter()
                    .map(|v| value_from_json(item_schema, v))
                    .collect(),
            )
        }
        Value::Object(map) => {
            let props = schema.and_then(|s| s.get("properties"));
            let additional = schema
                .and_then(|s| s.get("additionalProperties"))
                .filter(|a| a.is_object());
            CelValue::Map(
                map.iter()
                    .map(|(k, v)| {
                        let sub = props.and_then(|p| p.get(k)).or(additional);
                        (k.clone(), value_from_json(sub, v))
                    })
                    .collect(),
            )
        }
    }
}
