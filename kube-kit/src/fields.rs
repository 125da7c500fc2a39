//! Unknown fields of a JSON object, found from its kind's schema, as kube-apiserver's
//! `fieldValidation` finds them: the paths are kube-apiserver's (`spec.template.spec.
//! containers[0].bogus`), and the fields can be listed ([`unknown_fields`]) or dropped
//! ([`drop_unknown_fields`]).
//!
//! The schema is plain JSON: a JSON Schema as `schemars` writes it (`$ref` into `$defs` or
//! `definitions`) or a CRD's structural OpenAPI v3 schema. What is understood:
//! - `properties`: the known fields of an object; an object schema with `properties` and no
//!   `additionalProperties` is closed, as Kubernetes types are.
//! - `additionalProperties`: a map (`true` or a schema for every value); `false` closes it.
//! - `x-kubernetes-preserve-unknown-fields: true`: unknown fields are kept (known ones are
//!   still checked).
//! - an object schema without `properties` (`RawExtension`'s `{"type": "object"}`), `{}` and
//!   `true`: anything goes.
//! - `items` (arrays), `$ref`, `allOf`/`anyOf`/`oneOf` (a field known to any branch is known),
//!   and scalar schemas such as `x-kubernetes-int-or-string` (IntOrString, Quantity), which
//!   never have fields.
//!
//! Type mismatches are not reported: they are the API server's to judge.

use serde_json::{Map, Value};

/// How deep `$ref`s and combinators are followed for one value; guards against cycles in a
/// schema (`{"$ref": "#"}`), which a finite value alone would not stop.
const MAX_SCHEMA_HOPS: usize = 32;

/// The schema that allows anything.
static OPEN: Value = Value::Bool(true);

/// The paths of the fields of `value` that `schema` does not know, in key order.
pub fn unknown_fields(schema: &Value, value: &Value) -> Vec<String> {
    let mut copy = value.clone();
    drop_unknown_fields(schema, &mut copy)
}

/// Removes the fields of `value` that `schema` does not know, returning their paths in
/// document order.
pub fn drop_unknown_fields(schema: &Value, value: &mut Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, &[schema], value, "", &mut found);
    found
}

/// The schemas `schema` stands for: itself, or what its `$ref` points at, and the branches of
/// `allOf`/`anyOf`/`oneOf`, each resolved.
fn branches<'s>(root: &'s Value, schema: &'s Value) -> Vec<&'s Value> {
    let mut out = Vec::new();
    collect(root, schema, 0, &mut out);
    out
}

fn collect<'s>(root: &'s Value, schema: &'s Value, hops: usize, out: &mut Vec<&'s Value>) {
    if hops > MAX_SCHEMA_HOPS {
        return;
    }
    let Some(map) = schema.as_object() else {
        out.push(schema);
        return;
    };
    if let Some(target) = map.get("$ref").and_then(Value::as_str) {
        // An unresolvable reference knows nothing: treat it as open rather than fail.
        let resolved = target
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer));
        match resolved {
            Some(resolved) => collect(root, resolved, hops + 1, out),
            None => out.push(&OPEN),
        }
    }
    let combined: Vec<&Value> = ["allOf", "anyOf", "oneOf"]
        .iter()
        .filter_map(|k| map.get(*k).and_then(Value::as_array))
        .flatten()
        .collect();
    for branch in &combined {
        collect(root, branch, hops + 1, out);
    }
    // `{"$ref": ..., "description": ...}` stands for its target alone; a schema that says
    // more (`type`, `properties`, ...) is a branch of its own too.
    let refers = !combined.is_empty() || map.contains_key("$ref");
    let only_annotations = map.keys().all(|k| {
        matches!(
            k.as_str(),
            "$ref"
                | "allOf"
                | "anyOf"
                | "oneOf"
                | "description"
                | "title"
                | "default"
                | "examples"
                | "deprecated"
                | "readOnly"
                | "writeOnly"
                | "nullable"
                | "$comment"
        )
    });
    if !(refers && only_annotations) {
        out.push(schema);
    }
}

/// Whether `schema` describes something other than objects (`type: string`, `null`, ...).
fn is_not_object(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t != "object",
        Some(Value::Array(types)) => !types.iter().any(|t| t == "object"),
        _ => false,
    }
}

/// What the applicable branches say about the fields of an object.
struct ObjectRule<'s> {
    /// Field name to its schema.
    properties: Vec<(&'s str, &'s Value)>,
    /// The schema of fields not in `properties`, if any.
    additional: Option<&'s Value>,
    /// Whether fields nothing describes are kept.
    open: bool,
}

fn object_rule<'s>(branches: &[&'s Value]) -> ObjectRule<'s> {
    let mut rule = ObjectRule {
        properties: Vec::new(),
        additional: None,
        open: false,
    };
    let mut any_object_branch = false;
    for branch in branches {
        let map = match branch {
            Value::Bool(true) => {
                rule.open = true;
                any_object_branch = true;
                continue;
            }
            Value::Object(map) if !is_not_object(branch) => map,
            _ => continue,
        };
        any_object_branch = true;
        if map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
            rule.open = true;
        }
        let properties = map.get("properties").and_then(Value::as_object);
        if let Some(properties) = properties {
            rule.properties
                .extend(properties.iter().map(|(k, v)| (k.as_str(), v)));
        }
        match map.get("additionalProperties") {
            Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => rule.open = true,
            Some(schema @ Value::Object(_)) => {
                rule.additional.get_or_insert(schema);
            }
            // Kubernetes objects with properties are closed; without, they are free-form.
            _ => {
                if properties.is_none() {
                    rule.open = true;
                }
            }
        }
    }
    // A schema that says nothing about objects does not judge this one.
    if !any_object_branch {
        rule.open = true;
    }
    rule
}

fn items_schema<'s>(branches: &[&'s Value]) -> Option<&'s Value> {
    branches.iter().find_map(|b| b.get("items"))
}

fn field_path(parent: &str, field: &str) -> String {
    if parent.is_empty() {
        field.to_owned()
    } else {
        format!("{parent}.{field}")
    }
}

fn walk(root: &Value, schemas: &[&Value], value: &mut Value, path: &str, found: &mut Vec<String>) {
    let branches: Vec<&Value> = schemas.iter().flat_map(|s| branches(root, s)).collect();
    match value {
        Value::Object(object) => walk_object(root, &branches, object, path, found),
        Value::Array(items) => {
            let Some(item_schema) = items_schema(&branches) else {
                return;
            };
            for (i, item) in items.iter_mut().enumerate() {
                walk(root, &[item_schema], item, &format!("{path}[{i}]"), found);
            }
        }
        _ => {}
    }
}

fn walk_object(
    root: &Value,
    branches: &[&Value],
    object: &mut Map<String, Value>,
    path: &str,
    found: &mut Vec<String>,
) {
    let rule = object_rule(branches);
    let mut unknown = Vec::new();
    for (key, child) in object.iter_mut() {
        let child_path = field_path(path, key);
        let known: Vec<&Value> = rule
            .properties
            .iter()
            .filter(|(name, _)| *name == key)
            .map(|(_, schema)| *schema)
            .collect();
        if !known.is_empty() {
            walk(root, &known, child, &child_path, found);
        } else if let Some(additional) = rule.additional {
            walk(root, &[additional], child, &child_path, found);
        } else if !rule.open {
            found.push(child_path);
            unknown.push(key.clone());
        }
    }
    for key in unknown {
        object.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment_like() -> Value {
        json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"$ref": "#/$defs/ObjectMeta"},
                "spec": {"$ref": "#/$defs/Spec"},
            },
            "$defs": {
                "ObjectMeta": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                }},
                "Spec": {"type": "object", "properties": {
                    "replicas": {"type": "integer"},
                    "strategy": {"anyOf": [{"$ref": "#/$defs/Strategy"}, {"type": "null"}]},
                    "defaulted": {"$ref": "#/$defs/Strategy", "default": {}, "description": "d"},
                    "template": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "containers": {"type": "array", "items": {"$ref": "#/$defs/Container"}},
                        }},
                    }},
                    "raw": {"type": "object"},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                             "properties": {"known": {"type": "object", "properties": {"a": {}}}}},
                    "port": {"x-kubernetes-int-or-string": true},
                    "resources": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true}},
                    "byName": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Container"}},
                    "closed": {"type": "object", "additionalProperties": false},
                    "any": {},
                    "yes": true,
                }},
                "Strategy": {"type": "object", "properties": {"type": {"type": "string"}}},
                "Container": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "ports": {"type": "array", "items": {"type": "object", "properties": {"containerPort": {}}}},
                }},
            },
        })
    }

    #[test]
    fn unknown_fields_table() {
        let schema = deployment_like();
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (
                json!({"apiVersion": "apps/v1", "metadata": {"name": "a"}}),
                vec![],
            ),
            (json!({"bogus": 1}), vec!["bogus"]),
            (json!({"spec": {"bogus": 1}}), vec!["spec.bogus"]),
            (
                json!({"metadata": {"bogusMeta": 1, "labels": {"any": "thing"}}}),
                vec!["metadata.bogusMeta"],
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "b", "bogusC": 1}]}}}}),
                vec!["spec.template.spec.containers[1].bogusC"],
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"ports": [{"containerPort": 80, "x": 1}]}]}}}}),
                vec!["spec.template.spec.containers[0].ports[0].x"],
            ),
            // anyOf with null, $ref, and a $ref with annotations beside it.
            (
                json!({"spec": {"strategy": {"type": "Recreate", "bogus": true}}}),
                vec!["spec.strategy.bogus"],
            ),
            (
                json!({"spec": {"defaulted": {"type": "Recreate", "bogus": true}}}),
                vec!["spec.defaulted.bogus"],
            ),
            // RawExtension-like, preserve-unknown-fields, {} and true are open.
            (
                json!({"spec": {"raw": {"a": {"b": 1}}, "any": {"c": 1}, "yes": {"d": 1}}}),
                vec![],
            ),
            (
                json!({"spec": {"free": {"anything": 1, "known": {"a": 1, "b": 2}}}}),
                vec!["spec.free.known.b"],
            ),
            // IntOrString / Quantity: scalars, or objects nobody describes.
            (
                json!({"spec": {"port": "http", "resources": {"cpu": "1", "memory": 5}}}),
                vec![],
            ),
            // Maps of objects check each value.
            (
                json!({"spec": {"byName": {"web": {"name": "web", "oops": 1}}}}),
                vec!["spec.byName.web.oops"],
            ),
            (json!({"spec": {"closed": {"k": 1}}}), vec!["spec.closed.k"]),
            // Several unknown fields, in key order; type mismatches are not ours to judge.
            (
                json!({"spec": {"replicas": {"x": 1}, "zz": 1}, "a": 1}),
                vec!["a", "spec.zz"],
            ),
        ];
        for (value, want) in cases {
            assert_eq!(unknown_fields(&schema, &value), want, "{value}");
        }
    }

    #[test]
    fn dropping_removes_exactly_the_unknown_fields() {
        let schema = deployment_like();
        let mut value = json!({
            "metadata": {"name": "a", "bogusMeta": 1},
            "spec": {"replicas": 2, "bogus": {"deep": 1},
                     "template": {"spec": {"containers": [{"name": "c", "bogusC": 1}]}}},
        });
        let dropped = drop_unknown_fields(&schema, &mut value);
        assert_eq!(
            dropped,
            [
                "metadata.bogusMeta",
                "spec.bogus",
                "spec.template.spec.containers[0].bogusC"
            ]
        );
        assert_eq!(
            value,
            json!({"metadata": {"name": "a"},
                   "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}})
        );
    }

    #[test]
    fn definitions_pointers_and_cycles() {
        // OpenAPI v2 style `definitions`, a recursive type, and a self-referencing schema.
        let schema = json!({
            "$ref": "#/definitions/Node",
            "definitions": {"Node": {"type": "object", "properties": {
                "value": {}, "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}},
            }}},
        });
        let value = json!({"value": 1, "children": [{"children": [{"oops": 1}]}]});
        assert_eq!(
            unknown_fields(&schema, &value),
            ["children[0].children[0].oops"]
        );
        let cyclic = json!({"$ref": "#"});
        assert!(unknown_fields(&cyclic, &json!({"a": 1})).is_empty());
        let dangling = json!({"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}});
        assert!(unknown_fields(&dangling, &json!({"a": {"b": 1}})).is_empty());
    }

    #[test]
    fn a_crd_schema_is_understood() {
        // The shape of a CRD's openAPIV3Schema (structural, inline).
        let schema = json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {"type": "object", "required": ["resourceSelectors"], "properties": {
                    "resourceSelectors": {"type": "array", "items": {"type": "object", "properties": {
                        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                    }}},
                    "placement": {"type": "object", "properties": {
                        "clusterAffinity": {"type": "object", "properties": {"clusterNames": {"type": "array", "items": {"type": "string"}}}},
                    }},
                    "overrideRules": {"type": "array", "items": {"type": "object", "properties": {
                        "value": {"x-kubernetes-preserve-unknown-fields": true},
                    }}},
                }},
            },
        });
        let value = json!({
            "metadata": {"anything": 1},
            "spec": {"resourceSelectors": [{"kind": "Deployment", "nme": "x"}],
                     "placement": {"clusterAffinity": {"clusterNames": ["a"], "bad": 1}},
                     "overrideRules": [{"value": {"free": {"form": 1}}}]},
        });
        assert_eq!(
            unknown_fields(&schema, &value),
            [
                "spec.placement.clusterAffinity.bad",
                "spec.resourceSelectors[0].nme"
            ]
        );
    }
}
