//! JSON merge patches (RFC 7386) computed from two versions of an object, so that a write
//! sends only what changed and needs no resourceVersion.

use serde_json::{Map, Value};

/// The merge patch that turns `old` into `new`, or `None` when they are equal. Object
/// members missing from `new` become `null`; everything else that differs (lists
/// included, which merge patches replace whole) is taken from `new`.
pub fn merge_patch(old: &Value, new: &Value) -> Option<Value> {
    if old == new {
        return None;
    }
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = Map::new();
            for (key, old_value) in old {
                match new.get(key) {
                    None => {
                        patch.insert(key.clone(), Value::Null);
                    }
                    Some(new_value) => {
                        if let Some(diff) = merge_patch(old_value, new_value) {
                            patch.insert(key.clone(), diff);
                        }
                    }
                }
            }
            for (key, new_value) in new {
                if !old.contains_key(key) && !new_value.is_null() {
                    patch.insert(key.clone(), without_nulls(new_value));
                }
            }
            Some(Value::Object(patch))
        }
        // A null inside a new object would mean "delete" in a merge patch.
        (_, new) => Some(without_nulls(new)),
    }
}

/// `value` with the null members of its objects dropped (they mean "absent").
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Applies a merge patch (RFC 7386) to `target`; used to check [`merge_patch`].
#[cfg(test)]
fn apply_merge_patch(target: &Value, patch: &Value) -> Value {
    let Value::Object(patch) = patch else {
        return patch.clone();
    };
    let mut out = match target {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    for (key, value) in patch {
        if value.is_null() {
            out.remove(key);
        } else {
            let current = out.get(key).cloned().unwrap_or(Value::Null);
            out.insert(key.clone(), apply_merge_patch(&current, value));
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patches_turn_old_into_new() {
        let table = [
            ("equal", json!({"a": 1}), json!({"a": 1}), None),
            (
                "changed scalar",
                json!({"phase": "Pending", "qos": "Burstable"}),
                json!({"phase": "Running", "qos": "Burstable"}),
                Some(json!({"phase": "Running"})),
            ),
            (
                "removed member",
                json!({"phase": "Running", "message": "x"}),
                json!({"phase": "Running"}),
                Some(json!({"message": null})),
            ),
            (
                "added nested member",
                json!({"status": {}}),
                json!({"status": {"podIP": "10.0.0.1", "x": null}}),
                Some(json!({"status": {"podIP": "10.0.0.1"}})),
            ),
            (
                "lists are replaced whole",
                json!({"c": [{"t": "Ready", "s": "False"}, {"t": "PodScheduled"}]}),
                json!({"c": [{"t": "Ready", "s": "True"}]}),
                Some(json!({"c": [{"t": "Ready", "s": "True"}]})),
            ),
            (
                "object replaced by scalar",
                json!({"a": {"b": 1}}),
                json!({"a": 2}),
                Some(json!({"a": 2})),
            ),
        ];
        for (case, old, new, want) in table {
            let got = merge_patch(&old, &new);
            assert_eq!(got, want, "{case}");
            if let Some(patch) = got {
                let applied = apply_merge_patch(&old, &patch);
                assert_eq!(applied, without_nulls(&new), "{case}: applying the patch");
            }
        }
    }
}
