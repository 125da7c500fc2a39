//! Structural pruning of unknown fields.

use super::*;

/// Drops the fields of `obj` the schema does not declare, as the apiserver does when decoding a
/// custom resource, and returns their paths (`spec.foo`, `spec.list[0].bar`).
pub fn prune_unknown(schema: &Value, obj: &mut Value) -> Vec<String> {
    let mut pruned = Vec::new();
    prune_node(Some(schema), obj, "", true, &mut pruned);
    pruned.sort();
    pruned
}

pub(super) fn is_meta_field(key: &str) -> bool {
    matches!(key, "apiVersion" | "kind" | "metadata")
}

pub(super) fn prune_node(
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
pub(super) fn skip_prune(
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
