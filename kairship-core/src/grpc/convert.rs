//! The conversions every feature's gRPC messages share, between the protobuf messages of
//! `kairship.v1` and the service's own messages: Kubernetes objects as
//! `google.protobuf.Struct` <-> JSON, list options and pages, and [`ApiError`] ->
//! [`tonic::Status`]. Each feature's own messages convert in its file beside this one
//! ([`super::instances`], [`super::members`], [`super::resources`], [`super::workloads`],
//! [`super::applications`]).

use prost_types::value::Kind;
use serde_json::{Map, Number, Value};

use super::pb;
use crate::api::{ApiError, Code, ListOptions, Object, ObjectList, Pagination, SortBy, SortDir};

/// Integers up to this magnitude survive the trip through a protobuf `double` exactly.
const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0; // 2^53

/// A JSON value as a protobuf `Value`. Numbers become doubles (protobuf's only number), so
/// integers beyond 2^53 lose precision, as with every JSON/Struct bridge.
pub fn json_to_value(value: Value) -> prost_types::Value {
    let kind = match value {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => Kind::StringValue(s),
        Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items.into_iter().map(json_to_value).collect(),
        }),
        Value::Object(map) => Kind::StructValue(map_to_struct(map)),
    };
    prost_types::Value { kind: Some(kind) }
}

fn map_to_struct(map: Map<String, Value>) -> prost_types::Struct {
    prost_types::Struct {
        fields: map
            .into_iter()
            .map(|(k, v)| (k, json_to_value(v)))
            .collect(),
    }
}

/// A JSON object as a `Struct`; anything else is an internal error (objects are always JSON
/// objects).
pub fn json_to_struct(value: Value) -> Result<prost_types::Struct, ApiError> {
    match value {
        Value::Object(map) => Ok(map_to_struct(map)),
        other => Err(ApiError::internal(format!(
            "expected a JSON object to send as google.protobuf.Struct, got {}",
            crate::api::body::type_name(&other)
        ))),
    }
}

/// A protobuf `Value` as JSON. Whole doubles within 2^53 become JSON integers, so Kubernetes
/// integers (replicas, ports) come back as they were sent; NaN and infinities become null.
pub fn value_to_json(value: prost_types::Value) -> Value {
    match value.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(b),
        Some(Kind::NumberValue(n)) => number_to_json(n),
        Some(Kind::StringValue(s)) => Value::String(s),
        Some(Kind::ListValue(list)) => {
            Value::Array(list.values.into_iter().map(value_to_json).collect())
        }
        Some(Kind::StructValue(s)) => struct_to_json(s),
    }
}

fn number_to_json(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() <= MAX_EXACT_INTEGER {
        // Exact: |n| <= 2^53 and whole.
        #[allow(clippy::cast_possible_truncation)]
        return Value::Number(Number::from(n as i64));
    }
    Number::from_f64(n).map_or(Value::Null, Value::Number)
}

/// A `Struct` as a JSON object.
pub fn struct_to_json(value: prost_types::Struct) -> Value {
    Value::Object(
        value
            .fields
            .into_iter()
            .map(|(k, v)| (k, value_to_json(v)))
            .collect(),
    )
}

/// The object body of a write; absent is an `InvalidArgument` naming the field.
pub(super) fn body(value: Option<prost_types::Struct>) -> Result<Object, ApiError> {
    value
        .map(struct_to_json)
        .ok_or_else(|| ApiError::invalid_field("body", "required: the object to write"))
}

/// The sort key; unspecified is the default (name).
pub fn sort_by(value: pb::SortBy) -> Option<SortBy> {
    match value {
        pb::SortBy::Unspecified => None,
        pb::SortBy::Name => Some(SortBy::Name),
        pb::SortBy::CreationTimestamp => Some(SortBy::CreationTimestamp),
        pb::SortBy::State => Some(SortBy::State),
        pb::SortBy::Namespace => Some(SortBy::Namespace),
    }
}

/// The sort direction; unspecified is the default (ascending).
pub fn sort_dir(value: pb::SortDir) -> Option<SortDir> {
    match value {
        pb::SortDir::Unspecified => None,
        pb::SortDir::Asc => Some(SortDir::Asc),
        pb::SortDir::Desc => Some(SortDir::Desc),
    }
}

pub(super) fn enum_value<E: TryFrom<i32>>(field: &str, number: i32) -> Result<E, ApiError> {
    E::try_from(number)
        .map_err(|_| ApiError::invalid_field(field, format!("unknown enum value {number}")))
}

/// List options; absent means the defaults.
pub fn list_options(value: Option<pb::ListOptions>) -> Result<ListOptions, ApiError> {
    let Some(o) = value else {
        return Ok(ListOptions::default());
    };
    Ok(ListOptions {
        page: o.page,
        page_size: o.page_size,
        sort_by: sort_by(enum_value("options.sortBy", o.sort_by)?),
        sort_dir: sort_dir(enum_value("options.sortDir", o.sort_dir)?),
        name: o.name,
        label_selector: o.label_selector,
        field_selector: o.field_selector,
        namespaces: o.namespaces,
        sort_field: o.sort_field,
    })
}

/// An API error as a gRPC status: the same code number, the same message.
pub fn status(err: &ApiError) -> tonic::Status {
    tonic::Status::new(
        tonic::Code::from_i32(err.code.number()),
        err.message.clone(),
    )
}

/// A gRPC status as an API error (for clients comparing the two transports).
pub fn api_error(status: &tonic::Status) -> ApiError {
    let code = Code::from_number(status.code() as i32).unwrap_or(Code::Unknown);
    ApiError::new(code, status.message())
}

/// Paging facts.
pub fn pagination(p: Pagination) -> pb::Pagination {
    pb::Pagination {
        total: p.total,
        page: p.page,
        page_size: p.page_size,
        pages: p.pages,
    }
}

/// A page of objects.
pub fn object_list(list: ObjectList) -> Result<pb::ObjectList, ApiError> {
    Ok(pb::ObjectList {
        items: list
            .items
            .into_iter()
            .map(json_to_struct)
            .collect::<Result<_, _>>()?,
        pagination: Some(pagination(list.pagination)),
    })
}

pub(super) fn pagination_from_pb(p: Option<pb::Pagination>) -> Pagination {
    let p = p.unwrap_or_default();
    Pagination {
        total: p.total,
        page: p.page,
        page_size: p.page_size,
        pages: p.pages,
    }
}

/// A gRPC page of objects as the service's [`ObjectList`].
pub fn object_list_from_pb(list: pb::ObjectList) -> ObjectList {
    ObjectList {
        items: list.items.into_iter().map(struct_to_json).collect(),
        pagination: pagination_from_pb(list.pagination),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_survives_the_struct_round_trip() {
        for value in [
            json!({}),
            json!({"a": null, "b": true, "c": "s"}),
            json!({"replicas": 3, "port": 8080, "negative": -7, "big": 9_007_199_254_740_992_i64}),
            json!({"ratio": 0.25, "nested": {"list": [1, "two", {"three": [3.5]}], "empty": []}}),
            json!({"metadata": {"name": "web", "labels": {"app": "web"}, "generation": 1}}),
        ] {
            let back = struct_to_json(json_to_struct(value.clone()).unwrap());
            assert_eq!(back, value);
        }
    }

    #[test]
    fn numbers_table() {
        for (n, want) in [
            (0.0, json!(0)),
            (3.0, json!(3)),
            (-2.0, json!(-2)),
            (1.5, json!(1.5)),
            (MAX_EXACT_INTEGER, json!(9_007_199_254_740_992_i64)),
            (MAX_EXACT_INTEGER * 4.0, json!(36_028_797_018_963_968.0)),
            (f64::NAN, Value::Null),
            (f64::INFINITY, Value::Null),
        ] {
            assert_eq!(number_to_json(n), want, "{n}");
        }
    }

    #[test]
    fn only_objects_become_structs() {
        for value in [json!(null), json!(1), json!("x"), json!([1])] {
            let err = json_to_struct(value).unwrap_err();
            assert_eq!(err.code, Code::Internal);
        }
    }

    #[test]
    fn list_options_defaults_and_values() {
        assert_eq!(list_options(None).unwrap(), ListOptions::default());
        let got = list_options(Some(pb::ListOptions {
            page: Some(2),
            page_size: Some(10),
            sort_by: pb::SortBy::CreationTimestamp as i32,
            sort_dir: pb::SortDir::Desc as i32,
            name: Some("we".into()),
            label_selector: Some("app=web".into()),
            field_selector: None,
            namespaces: Some("a,b".into()),
            sort_field: Some(".spec.replicas".into()),
        }))
        .unwrap();
        assert_eq!(
            got,
            ListOptions {
                page: Some(2),
                page_size: Some(10),
                sort_by: Some(SortBy::CreationTimestamp),
                sort_dir: Some(SortDir::Desc),
                name: Some("we".into()),
                label_selector: Some("app=web".into()),
                field_selector: None,
                namespaces: Some("a,b".into()),
                sort_field: Some(".spec.replicas".into()),
            }
        );
        let bad = list_options(Some(pb::ListOptions {
            sort_by: 42,
            ..Default::default()
        }))
        .unwrap_err();
        assert!(bad.message.contains("options.sortBy"), "{}", bad.message);
    }

    #[test]
    fn object_lists_round_trip() {
        let objects = ObjectList {
            items: vec![json!({"a": 1}), json!({"b": [true]})],
            pagination: Pagination {
                total: 2,
                page: 1,
                page_size: 2,
                pages: 1,
            },
        };
        assert_eq!(
            object_list_from_pb(object_list(objects.clone()).unwrap()),
            objects
        );
    }

    #[test]
    fn status_keeps_code_and_message() {
        for code in Code::ALL {
            let err = ApiError::new(code, "what failed");
            let status = status(&err);
            assert_eq!(status.code() as i32, code.number());
            assert_eq!(status.message(), "what failed");
            assert_eq!(api_error(&status), err);
        }
    }
}
