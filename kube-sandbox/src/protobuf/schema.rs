//! The JSON Schema of a built-in kind, derived from its protobuf descriptor: which fields an
//! object may have, for `fieldValidation` (the walk itself is `kube_kit::fields`). Every
//! message becomes `{"type": "object", "properties": ...}` (closed) under `$defs`; the types
//! whose JSON is not an object of their fields (times, quantities, raw JSON) allow anything.

use super::convert;
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The schema of objects of `desc`'s kind, built once per kind.
pub fn for_kind(desc: &MessageDescriptor) -> Arc<Value> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Value>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let name = desc.full_name().to_string();
    if let Ok(map) = cache.lock()
        && let Some(schema) = map.get(&name)
    {
        return schema.clone();
    }
    let schema = Arc::new(build(desc, true));
    if let Ok(mut map) = cache.lock() {
        map.insert(name, schema.clone());
    }
    schema
}

/// The schema of `metadata` (ObjectMeta) alone, for objects whose own schema comes elsewhere.
pub fn object_meta() -> Option<Arc<Value>> {
    let desc = super::pool().get_message_by_name(OBJECT_META)?;
    Some(for_kind(&desc))
}

const OBJECT_META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";

fn build(desc: &MessageDescriptor, top_level: bool) -> Value {
    let mut defs = Map::new();
    let mut root = message_schema(desc, &mut defs);
    if top_level && let Some(props) = root.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert("apiVersion".into(), json!({"type": "string"}));
        props.insert("kind".into(), json!({"type": "string"}));
    }
    if let Value::Object(map) = &mut root {
        map.insert("$defs".into(), Value::Object(defs));
    }
    root
}

fn reference(desc: &MessageDescriptor, defs: &mut Map<String, Value>) -> Value {
    if convert::is_free_form(desc) {
        return json!({});
    }
    let name = desc.full_name().to_string();
    if !defs.contains_key(&name) {
        // Placeholder first: messages refer to themselves (JSONSchemaProps).
        defs.insert(name.clone(), Value::Null);
        let schema = message_schema(desc, defs);
        defs.insert(name.clone(), schema);
    }
    json!({"$ref": format!("#/$defs/{name}")})
}

fn message_schema(desc: &MessageDescriptor, defs: &mut Map<String, Value>) -> Value {
    let mut properties = Map::new();
    add_fields(desc, defs, &mut properties);
    json!({"type": "object", "properties": properties})
}

fn add_fields(
    desc: &MessageDescriptor,
    defs: &mut Map<String, Value>,
    out: &mut Map<String, Value>,
) {
    for field in desc.fields() {
        if convert::is_inline(&field) {
            if let Kind::Message(inner) = field.kind() {
                add_fields(&inner, defs, out);
            }
            continue;
        }
        out.insert(field.json_name().to_string(), field_schema(&field, defs));
    }
}

fn field_schema(field: &FieldDescriptor, defs: &mut Map<String, Value>) -> Value {
    if field.is_map() {
        let value = match field.kind() {
            Kind::Message(entry) => kind_schema(&entry.map_entry_value_field().kind(), defs),
            _ => json!({}),
        };
        return json!({"type": "object", "additionalProperties": value});
    }
    let single = kind_schema(&field.kind(), defs);
    if field.is_list() {
        json!({"type": "array", "items": single})
    } else {
        single
    }
}

fn kind_schema(kind: &Kind, defs: &mut Map<String, Value>) -> Value {
    match kind {
        Kind::Message(desc) => reference(desc, defs),
        Kind::String | Kind::Bytes => json!({"type": "string"}),
        Kind::Bool => json!({"type": "boolean"}),
        Kind::Double | Kind::Float => json!({"type": "number"}),
        _ => json!({"type": "integer"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::pool;

    #[test]
    fn unknown_fields_of_built_in_kinds_are_found() {
        let cases = [
            (
                "k8s.io.api.core.v1.ConfigMap",
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "bogusMeta": 1, "labels": {"any.key/x": "v"}}, "data": {"a": "b"}, "bogus": true}),
                vec!["bogus", "metadata.bogusMeta"],
            ),
            (
                "k8s.io.api.apps.v1.Deployment",
                json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "bogus": 1, "resources": {"limits": {"cpu": 1}},
                    "livenessProbe": {"exec": {"command": ["x"]}, "periodSeconds": 3}}],
                    "volumes": [{"name": "v", "configMap": {"name": "c"}, "nope": {}}]}},
                    "strategy": {"rollingUpdate": {"maxSurge": "25%"}}}, "status": {"replicas": 1}}),
                vec![
                    "spec.template.spec.containers[0].bogus",
                    "spec.template.spec.volumes[0].nope",
                ],
            ),
            (
                "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
                json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"a": {"type": "string", "default": {"any": "thing"}}}}}, "extra": 1}]}}),
                vec!["spec.versions[0].extra"],
            ),
        ];
        for (message, value, want) in cases {
            let desc = pool().get_message_by_name(message).unwrap();
            let schema = for_kind(&desc);
            let mut found = kube_kit::fields::unknown_fields(&schema, &value);
            found.sort();
            assert_eq!(found, want, "{message}");
        }
    }
}
