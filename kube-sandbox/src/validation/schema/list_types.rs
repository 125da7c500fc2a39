//! x-kubernetes-list-type: uniqueness of set items and map keys.

use serde_json::{Map, Value};

use super::accessors::*;
use super::field_error::FieldError;

pub(super) fn list_types(schema: &Value, value: &Value, path: &str, out: &mut Vec<FieldError>) {
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
pub(super) fn first_repeats(keys: &[String]) -> Vec<usize> {
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

pub(super) fn list_map(schema: &Value, items: &[Value], path: &str, out: &mut Vec<FieldError>) {
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
