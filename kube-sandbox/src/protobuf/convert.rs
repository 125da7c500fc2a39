//! Protobuf messages of built-in kinds to and from the JSON the sandbox stores, driven by the
//! message descriptors alone: the Kubernetes `generated.proto` files name every field as its
//! JSON name, so one walk covers every kind. The types whose JSON is not an object of their
//! proto fields are special cases (times, quantities, int-or-string, raw JSON).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, Value,
};
use serde_json::{Map, Value as Json};
use std::collections::HashMap;

/// Why a value could not be converted, with the JSON path where it happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ConvertError {
    /// Where (`spec.replicas`), empty for the object itself.
    pub path: String,
    /// What was wrong.
    pub message: String,
}

fn error(path: &str, message: impl Into<String>) -> ConvertError {
    ConvertError {
        path: if path.is_empty() {
            "<root>".into()
        } else {
            path.to_string()
        },
        message: message.into(),
    }
}

/// Prefix of fields that stand for an embedded Go struct (`json:",inline"`): their fields are
/// the parent's in JSON.
const INLINE: &str = "inline_";

const TIME: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.Time";
const MICRO_TIME: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime";
const DURATION: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.Duration";
const FIELDS_V1: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1";
const QUANTITY: &str = "k8s.io.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "k8s.io.apimachinery.pkg.util.intstr.IntOrString";
const RAW_EXTENSION: &str = "k8s.io.apimachinery.pkg.runtime.RawExtension";
const APIEXTENSIONS: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.";

/// The message types whose JSON form is not an object of their fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Special {
    Time,
    MicroTime,
    Duration,
    Quantity,
    IntOrString,
    /// `raw` bytes holding JSON: RawExtension, FieldsV1, apiextensions JSON.
    RawJson,
    /// JSONSchemaPropsOrBool: `allows` (1) or a schema (2).
    PropsOrBool,
    /// JSONSchemaPropsOrArray: a schema (1) or a list of schemas (2).
    PropsOrArray,
    /// JSONSchemaPropsOrStringArray: a schema (1) or a list of strings (2).
    PropsOrStringArray,
}

fn special(desc: &MessageDescriptor) -> Option<Special> {
    let name = desc.full_name();
    Some(match name {
        TIME => Special::Time,
        MICRO_TIME => Special::MicroTime,
        DURATION => Special::Duration,
        QUANTITY => Special::Quantity,
        INT_OR_STRING => Special::IntOrString,
        RAW_EXTENSION | FIELDS_V1 => Special::RawJson,
        _ => match name
            .strip_prefix(APIEXTENSIONS)
            .and_then(|n| n.split_once('.'))
        {
            Some((_, "JSON")) => Special::RawJson,
            Some((_, "JSONSchemaPropsOrBool")) => Special::PropsOrBool,
            Some((_, "JSONSchemaPropsOrArray")) => Special::PropsOrArray,
            Some((_, "JSONSchemaPropsOrStringArray")) => Special::PropsOrStringArray,
            _ => return None,
        },
    })
}

/// Whether a message's JSON is a scalar or free-form JSON rather than an object of its fields.
pub fn is_free_form(desc: &MessageDescriptor) -> bool {
    special(desc).is_some()
}

/// Whether a field stands for an embedded Go struct whose fields are its parent's in JSON.
pub fn is_inline(field: &FieldDescriptor) -> bool {
    field.name().starts_with(INLINE)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

// ---------------------------------------------------------------------------------------------
// protobuf -> JSON

/// The JSON of a decoded message, as kube-apiserver would serve it. `None` for a value JSON
/// leaves out (a zero time).
pub fn message_to_json(msg: &DynamicMessage) -> Result<Json, ConvertError> {
    message_json(msg, "").map(|v| v.unwrap_or(Json::Null))
}

fn message_json(msg: &DynamicMessage, path: &str) -> Result<Option<Json>, ConvertError> {
    let desc = msg.descriptor();
    if let Some(kind) = special(&desc) {
        return special_json(kind, msg, path);
    }
    let mut out = Map::new();
    object_fields(msg, path, &mut out)?;
    Ok(Some(Json::Object(out)))
}

fn object_fields(
    msg: &DynamicMessage,
    path: &str,
    out: &mut Map<String, Json>,
) -> Result<(), ConvertError> {
    for (field, value) in msg.fields() {
        if field.name().starts_with(INLINE) {
            if let Value::Message(inner) = value {
                object_fields(inner, path, out)?;
            }
            continue;
        }
        let name = field.json_name();
        let field_path = join(path, name);
        if let Some(json) = field_json(&field, value, &field_path)? {
            out.insert(name.to_string(), json);
        }
    }
    Ok(())
}

fn field_json(
    field: &FieldDescriptor,
    value: &Value,
    path: &str,
) -> Result<Option<Json>, ConvertError> {
    match value {
        Value::List(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let item_path = format!("{path}[{i}]");
                out.push(single_json(item, &item_path)?.unwrap_or(Json::Null));
            }
            Ok((!out.is_empty()).then_some(Json::Array(out)))
        }
        Value::Map(entries) => {
            let mut out = Map::new();
            for (key, item) in entries {
                let key = match key {
                    MapKey::String(s) => s.clone(),
                    other => format!("{other:?}"),
                };
                let item_path = join(path, &key);
                let value = match item {
                    Value::Bytes(b) => Some(Json::String(STANDARD.encode(b))),
                    Value::Message(m) => message_json(m, &item_path)?,
                    other => scalar_json(other),
                };
                out.insert(key, value.unwrap_or(Json::Null));
            }
            Ok((!out.is_empty()).then_some(Json::Object(out)))
        }
        single => {
            let json = single_json(single, path)?;
            // Go writes its non-pointer fields even when empty, where its JSON leaves them
            // out. Empty strings go (`storageClassName: ""` is the one with a meaning of its
            // own); zero numbers stay, as pointers (`replicas: 0`) cannot be told apart, but
            // for the ports and `metadata.generation`, whose zero means "unset".
            let unset = match (&json, field.json_name()) {
                (Some(Json::String(s)), name) => s.is_empty() && name != "storageClassName",
                (
                    Some(Json::Number(n)),
                    "targetPort" | "nodePort" | "healthCheckNodePort" | "hostPort" | "generation",
                ) => n.as_i64() == Some(0),
                _ => false,
            };
            Ok(if unset { None } else { json })
        }
    }
}

fn single_json(value: &Value, path: &str) -> Result<Option<Json>, ConvertError> {
    match value {
        Value::Message(m) => message_json(m, path),
        Value::Bytes(b) => Ok(Some(Json::String(STANDARD.encode(b)))),
        other => Ok(scalar_json(other)),
    }
}

fn scalar_json(value: &Value) -> Option<Json> {
    Some(match value {
        Value::Bool(b) => Json::Bool(*b),
        Value::I32(n) => Json::from(*n),
        Value::I64(n) => Json::from(*n),
        Value::U32(n) => Json::from(*n),
        Value::U64(n) => Json::from(*n),
        Value::F32(n) => serde_json::Number::from_f64(f64::from(*n)).map(Json::Number)?,
        Value::F64(n) => serde_json::Number::from_f64(*n).map(Json::Number)?,
        Value::String(s) => Json::String(s.clone()),
        Value::EnumNumber(n) => Json::from(*n),
        _ => return None,
    })
}

fn field_by_number(msg: &DynamicMessage, number: u32) -> Option<Value> {
    msg.has_field_by_number(number)
        .then(|| msg.get_field_by_number(number).map(|v| v.into_owned()))
        .flatten()
}

fn special_json(
    kind: Special,
    msg: &DynamicMessage,
    path: &str,
) -> Result<Option<Json>, ConvertError> {
    match kind {
        Special::Time | Special::MicroTime => {
            let seconds = field_by_number(msg, 1).and_then(|v| v.as_i64());
            let nanos = field_by_number(msg, 2).and_then(|v| v.as_i32());
            if seconds.is_none() && nanos.is_none() {
                return Ok(None);
            }
            let micro = kind == Special::MicroTime;
            format_time(seconds.unwrap_or(0), nanos.unwrap_or(0), micro)
                .map(|s| Some(Json::String(s)))
                .ok_or_else(|| error(path, "time out of range"))
        }
        Special::Duration => Ok(field_by_number(msg, 1)
            .and_then(|v| v.as_i64())
            .map(|ns| Json::String(format_duration(ns)))),
        Special::Quantity => Ok(field_by_number(msg, 1)
            .and_then(|v| v.as_str().map(str::to_string))
            .map(Json::String)),
        Special::IntOrString => {
            let is_string = field_by_number(msg, 1).and_then(|v| v.as_i64()) == Some(1);
            if is_string {
                Ok(Some(Json::String(
                    field_by_number(msg, 3)
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                )))
            } else {
                Ok(Some(Json::from(
                    field_by_number(msg, 2)
                        .and_then(|v| v.as_i32())
                        .unwrap_or(0),
                )))
            }
        }
        Special::RawJson => {
            let Some(Value::Bytes(raw)) = field_by_number(msg, 1) else {
                return Ok(None);
            };
            if raw.is_empty() {
                return Ok(None);
            }
            serde_json::from_slice(&raw)
                .map(Some)
                .map_err(|e| error(path, format!("raw data is not JSON: {e}")))
        }
        Special::PropsOrBool => match field_by_number(msg, 2) {
            Some(Value::Message(schema)) => message_json(&schema, path),
            _ => Ok(Some(Json::Bool(
                field_by_number(msg, 1)
                    .and_then(|v| v.as_bool())
                    .unwrap_or(false),
            ))),
        },
        Special::PropsOrArray | Special::PropsOrStringArray => {
            if let Some(Value::Message(schema)) = field_by_number(msg, 1) {
                return message_json(&schema, path);
            }
            let Some(Value::List(items)) = field_by_number(msg, 2) else {
                return Ok(None);
            };
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                out.push(match item {
                    Value::Message(m) => {
                        message_json(m, &format!("{path}[{i}]"))?.unwrap_or(Json::Null)
                    }
                    other => scalar_json(other).unwrap_or(Json::Null),
                });
            }
            Ok(Some(Json::Array(out)))
        }
    }
}

/// RFC 3339 in UTC: seconds for `Time`, microseconds for `MicroTime`, as Go formats them.
pub fn format_time(seconds: i64, nanos: i32, micro: bool) -> Option<String> {
    let ts = jiff::Timestamp::new(seconds, if micro { nanos } else { 0 }).ok()?;
    let format = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Some(ts.strftime(format).to_string())
}

fn parse_time(text: &str) -> Option<(i64, i32)> {
    let ts: jiff::Timestamp = text.parse().ok()?;
    Some((ts.as_second(), ts.subsec_nanosecond()))
}

/// A duration as Go's `time.Duration.String` writes it (`1h2m3.5s`, `150ms`, `0s`).
pub fn format_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < 1_000_000_000 {
        let (unit, div) = if n < 1_000 {
            ("ns", 1)
        } else if n < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{sign}{}{unit}", fraction(n, div));
    }
    let hours = n / 3_600_000_000_000;
    let minutes = (n / 60_000_000_000) % 60;
    let rest = n % 60_000_000_000;
    let mut out = sign.to_string();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&format!("{}s", fraction(rest, 1_000_000_000)));
    out
}

/// `n / div` with the fraction's trailing zeros dropped (`1.5`, `2`).
fn fraction(n: u64, div: u64) -> String {
    let whole = n / div;
    let frac = n % div;
    if frac == 0 {
        return whole.to_string();
    }
    let width = div.to_string().len() - 1;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Parses a Go duration (`1h30m`, `1.5s`, `-2ms`) into nanoseconds.
pub fn parse_duration(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * scale;
    }
    let nanos = total.round() as i64;
    Some(if negative { -nanos } else { nanos })
}

// ---------------------------------------------------------------------------------------------
// JSON -> protobuf

/// The message of type `desc` holding `value`. Fields the message does not have are skipped
/// (the stored JSON may know fields of newer versions); a value of the wrong type is an error.
pub fn json_to_message(
    desc: &MessageDescriptor,
    value: &Json,
) -> Result<DynamicMessage, ConvertError> {
    message_from(desc, value, "")
}

fn message_from(
    desc: &MessageDescriptor,
    value: &Json,
    path: &str,
) -> Result<DynamicMessage, ConvertError> {
    if let Some(kind) = special(desc) {
        return special_from(kind, desc, value, path);
    }
    let Json::Object(map) = value else {
        return Err(error(path, format!("expected an object, got {value}")));
    };
    let mut msg = DynamicMessage::new(desc.clone());
    let inline: Vec<FieldDescriptor> = desc
        .fields()
        .filter(|f| f.name().starts_with(INLINE))
        .collect();
    let mut embedded: HashMap<String, Map<String, Json>> = HashMap::new();
    for (key, item) in map {
        if item.is_null() {
            continue;
        }
        if let Some(field) = desc.get_field_by_json_name(key) {
            let field_path = join(path, key);
            let value = field_from(&field, item, &field_path)?;
            set(&mut msg, &field, value, &field_path)?;
            continue;
        }
        if let Some(host) = inline.iter().find(|f| accepts(f, key)) {
            embedded
                .entry(host.name().to_string())
                .or_default()
                .insert(key.clone(), item.clone());
        }
    }
    for field in inline {
        if let Some(fields) = embedded.remove(field.name())
            && let Kind::Message(inner) = field.kind()
        {
            let value = message_from(&inner, &Json::Object(fields), path)?;
            set(&mut msg, &field, Value::Message(value), path)?;
        }
    }
    Ok(msg)
}

/// Whether an embedded struct field holds the JSON key `key` (directly or embedded deeper).
fn accepts(field: &FieldDescriptor, key: &str) -> bool {
    let Kind::Message(inner) = field.kind() else {
        return false;
    };
    inner.get_field_by_json_name(key).is_some()
        || inner
            .fields()
            .filter(|f| f.name().starts_with(INLINE))
            .any(|f| accepts(&f, key))
}

fn set(
    msg: &mut DynamicMessage,
    field: &FieldDescriptor,
    value: Value,
    path: &str,
) -> Result<(), ConvertError> {
    msg.try_set_field(field, value)
        .map_err(|e| error(path, e.to_string()))
}

fn field_from(field: &FieldDescriptor, value: &Json, path: &str) -> Result<Value, ConvertError> {
    if field.is_map() {
        let Json::Object(map) = value else {
            return Err(error(path, format!("expected an object, got {value}")));
        };
        let Kind::Message(entry) = field.kind() else {
            return Err(error(path, "map field without an entry type"));
        };
        let value_field = entry.map_entry_value_field();
        let mut out = HashMap::with_capacity(map.len());
        for (key, item) in map {
            if item.is_null() {
                continue;
            }
            let item_path = join(path, key);
            out.insert(
                MapKey::String(key.clone()),
                single_from(&value_field.kind(), item, &item_path)?,
            );
        }
        return Ok(Value::Map(out));
    }
    if field.is_list() {
        let Json::Array(items) = value else {
            return Err(error(path, format!("expected an array, got {value}")));
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            out.push(single_from(&field.kind(), item, &format!("{path}[{i}]"))?);
        }
        return Ok(Value::List(out));
    }
    single_from(&field.kind(), value, path)
}

fn single_from(kind: &Kind, value: &Json, path: &str) -> Result<Value, ConvertError> {
    let wrong = |want: &str| error(path, format!("expected {want}, got {value}"));
    Ok(match kind {
        Kind::Message(desc) => Value::Message(message_from(desc, value, path)?),
        Kind::String => match value {
            Json::String(s) => Value::String(s.clone()),
            _ => return Err(wrong("a string")),
        },
        Kind::Bytes => match value {
            Json::String(s) => Value::Bytes(
                STANDARD
                    .decode(s)
                    .map_err(|e| error(path, format!("invalid base64: {e}")))?
                    .into(),
            ),
            _ => return Err(wrong("a base64 string")),
        },
        Kind::Bool => Value::Bool(value.as_bool().ok_or_else(|| wrong("a boolean"))?),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(
            value
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| wrong("a 32-bit integer"))?,
        ),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            Value::I64(value.as_i64().ok_or_else(|| wrong("an integer"))?)
        }
        Kind::Uint32 | Kind::Fixed32 => Value::U32(
            value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| wrong("an unsigned 32-bit integer"))?,
        ),
        Kind::Uint64 | Kind::Fixed64 => {
            Value::U64(value.as_u64().ok_or_else(|| wrong("an unsigned integer"))?)
        }
        Kind::Double => Value::F64(value.as_f64().ok_or_else(|| wrong("a number"))?),
        Kind::Float => Value::F32(value.as_f64().ok_or_else(|| wrong("a number"))? as f32),
        Kind::Enum(_) => Value::EnumNumber(
            value
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| wrong("an enum number"))?,
        ),
    })
}

fn special_from(
    kind: Special,
    desc: &MessageDescriptor,
    value: &Json,
    path: &str,
) -> Result<DynamicMessage, ConvertError> {
    let mut msg = DynamicMessage::new(desc.clone());
    let mut put = |number: u32, v: Value| -> Result<(), ConvertError> {
        let field = desc
            .get_field(number)
            .ok_or_else(|| error(path, format!("{} has no field {number}", desc.name())))?;
        set(&mut msg, &field, v, path)
    };
    match kind {
        Special::Time | Special::MicroTime => {
            let text = value
                .as_str()
                .ok_or_else(|| error(path, format!("expected a time string, got {value}")))?;
            let (seconds, nanos) = parse_time(text)
                .ok_or_else(|| error(path, format!("invalid RFC 3339 time {text:?}")))?;
            put(1, Value::I64(seconds))?;
            let nanos = if kind == Special::MicroTime {
                nanos - nanos % 1000
            } else {
                0
            };
            put(2, Value::I32(nanos))?;
        }
        Special::Duration => {
            let text = value
                .as_str()
                .ok_or_else(|| error(path, format!("expected a duration string, got {value}")))?;
            let nanos = parse_duration(text)
                .ok_or_else(|| error(path, format!("invalid duration {text:?}")))?;
            put(1, Value::I64(nanos))?;
        }
        Special::Quantity => {
            let text = match value {
                Json::String(s) => s.clone(),
                Json::Number(n) => n.to_string(),
                _ => return Err(error(path, format!("expected a quantity, got {value}"))),
            };
            put(1, Value::String(text))?;
        }
        Special::IntOrString => match value {
            Json::String(s) => {
                put(1, Value::I64(1))?;
                put(3, Value::String(s.clone()))?;
            }
            Json::Number(n) => {
                let n = n
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| error(path, format!("expected a 32-bit integer, got {n}")))?;
                put(1, Value::I64(0))?;
                put(2, Value::I32(n))?;
            }
            _ => {
                return Err(error(
                    path,
                    format!("expected an integer or a string, got {value}"),
                ));
            }
        },
        Special::RawJson => {
            let raw = serde_json::to_vec(value).map_err(|e| error(path, e.to_string()))?;
            put(1, Value::Bytes(raw.into()))?;
        }
        Special::PropsOrBool => match value {
            Json::Bool(b) => put(1, Value::Bool(*b))?,
            other => {
                let schema = schema_message(desc, 2, other, path)?;
                put(1, Value::Bool(true))?;
                put(2, Value::Message(schema))?;
            }
        },
        Special::PropsOrArray | Special::PropsOrStringArray => match value {
            Json::Array(items) => {
                let field = desc
                    .get_field(2)
                    .ok_or_else(|| error(path, "no list field"))?;
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    out.push(single_from(&field.kind(), item, &format!("{path}[{i}]"))?);
                }
                put(2, Value::List(out))?;
            }
            other => {
                let schema = schema_message(desc, 1, other, path)?;
                put(1, Value::Message(schema))?;
            }
        },
    }
    Ok(msg)
}

fn schema_message(
    desc: &MessageDescriptor,
    number: u32,
    value: &Json,
    path: &str,
) -> Result<DynamicMessage, ConvertError> {
    match desc.get_field(number).map(|f| f.kind()) {
        Some(Kind::Message(schema)) => message_from(&schema, value, path),
        _ => Err(error(path, "no schema field")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::pool;
    use serde_json::json;

    fn round_trip(message: &str, value: Json) -> Json {
        let desc = pool().get_message_by_name(message).unwrap();
        let msg = json_to_message(&desc, &value).unwrap();
        let bytes = prost::Message::encode_to_vec(&msg);
        let back = DynamicMessage::decode(desc, bytes.as_slice()).unwrap();
        message_to_json(&back).unwrap()
    }

    #[test]
    fn objects_survive_a_round_trip() {
        let cases = [
            (
                "k8s.io.api.core.v1.ConfigMap",
                json!({"metadata": {"name": "c", "labels": {"a": "b"}, "creationTimestamp": "2024-05-01T10:20:30Z"}, "data": {"k": "v"}}),
            ),
            (
                "k8s.io.api.core.v1.Secret",
                json!({"metadata": {"name": "s"}, "type": "Opaque", "data": {"bin": "AAEC/w=="}}),
            ),
            (
                "k8s.io.api.apps.v1.Deployment",
                json!({"metadata": {"name": "d"}, "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "d"}},
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                    "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i",
                        "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
                        "readinessProbe": {"httpGet": {"path": "/", "port": 8080}},
                        "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}],
                        "volumes": [{"name": "v", "emptyDir": {}}]}}}}),
            ),
            (
                "k8s.io.api.coordination.v1.Lease",
                json!({"metadata": {"name": "l"}, "spec": {"renewTime": "2024-05-01T10:20:30.123456Z", "leaseDurationSeconds": 15}}),
            ),
            (
                "k8s.io.api.core.v1.Service",
                json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80, "targetPort": "http"}], "storageClassName": ""}}),
            ),
            (
                "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
                json!({"metadata": {"name": "ws.example.com"}, "spec": {"group": "example.com", "names": {"plural": "ws", "kind": "W"}, "scope": "Namespaced",
                    "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"spec": {"type": "object", "additionalProperties": false, "default": {"a": [1, "x"]},
                            "properties": {"items": {"type": "array", "items": {"type": "string"}}}}}}}}]}}),
            ),
        ];
        for (message, value) in cases {
            let mut want = value.clone();
            // A Service has no storageClassName: fields a message lacks are skipped.
            if let Some(spec) = want.pointer_mut("/spec").and_then(Json::as_object_mut) {
                spec.remove("storageClassName");
            }
            assert_eq!(round_trip(message, value), want, "{message}");
        }
    }

    #[test]
    fn go_zero_values_read_as_kube_apiserver_writes_json() {
        let desc = pool()
            .get_message_by_name("k8s.io.api.core.v1.ConfigMap")
            .unwrap();
        let meta = desc.get_field_by_name("metadata").unwrap();
        let Kind::Message(meta_desc) = meta.kind() else {
            panic!()
        };
        let mut m = DynamicMessage::new(meta_desc.clone());
        m.set_field_by_name("name", Value::String("c".into()));
        m.set_field_by_name("namespace", Value::String(String::new()));
        m.set_field_by_name("generation", Value::I64(0));
        let time = match meta_desc
            .get_field_by_name("creationTimestamp")
            .unwrap()
            .kind()
        {
            Kind::Message(t) => DynamicMessage::new(t),
            _ => panic!(),
        };
        m.set_field_by_name("creationTimestamp", Value::Message(time));
        let mut cm = DynamicMessage::new(desc);
        cm.set_field(&meta, Value::Message(m));
        assert_eq!(
            message_to_json(&cm).unwrap(),
            json!({"metadata": {"name": "c"}})
        );
    }

    #[test]
    fn wrong_types_name_the_path() {
        let desc = pool()
            .get_message_by_name("k8s.io.api.apps.v1.Deployment")
            .unwrap();
        let cases = [
            (json!({"spec": {"replicas": "x"}}), "spec.replicas"),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"name": 1}]}}}}),
                "spec.template.spec.containers[0].name",
            ),
            (
                json!({"metadata": {"creationTimestamp": "yesterday"}}),
                "metadata.creationTimestamp",
            ),
            (
                json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": true}}}}),
                "spec.strategy.rollingUpdate.maxSurge",
            ),
        ];
        for (value, path) in cases {
            assert_eq!(json_to_message(&desc, &value).unwrap_err().path, path);
        }
    }

    #[test]
    fn durations_read_and_write_as_go_does() {
        let cases = [
            (0, "0s"),
            (1_500_000_000, "1.5s"),
            (90 * 60 * 1_000_000_000, "1h30m0s"),
            (2_000_000, "2ms"),
            (-61_000_000_000, "-1m1s"),
        ];
        for (nanos, text) in cases {
            assert_eq!(format_duration(nanos), text);
            assert_eq!(parse_duration(text), Some(nanos), "{text}");
        }
        assert_eq!(parse_duration("1x"), None);
        assert_eq!(parse_duration(""), None);
    }
}
