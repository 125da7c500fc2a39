//! Structural defaulting.

use super::*;

/// Applies schema defaults to `obj` in place, as the apiserver does when decoding a custom
/// resource: drops non-nullable `null`s that have no default, then fills missing properties
/// (and non-nullable `null`s) from `default`, recursing into objects, maps and lists, including
/// into values that were just defaulted.
pub fn default_object(schema: &Value, obj: &mut Value) {
    default_node(schema, obj);
}

pub(super) fn default_node(schema: &Value, v: &mut Value) {
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
