//! How an edit made with a form reaches the stored object (the policy form, an instance's edit
//! page): a three-way merge of what the form showed (`before`: the stored object as the form
//! sees it) and what it sends back (`after`) into the stored object. Only what the user changed
//! in the form changes; every field the form does not know (annotations, `activationPreference`,
//! a field selector the form cannot show, ...) stays as stored.

use serde_json::{Map, Value, json};

/// The object an edit stores: `stored` with the change from `before` to `after` merged in
/// ([`merge_edit`]), carrying `resource_version` (the version the form was filled from; empty:
/// the stored one) so that a change made meanwhile is refused rather than overwritten.
pub fn edited_object(
    stored: &Value,
    before: &Value,
    after: &Value,
    resource_version: &str,
) -> Value {
    let mut merged = merge_edit(stored, before, after);
    if !resource_version.is_empty() {
        merged["metadata"]["resourceVersion"] = json!(resource_version);
    }
    if let Some(metadata) = merged["metadata"].as_object_mut() {
        // Read-only bookkeeping the update need not carry.
        metadata.remove("managedFields");
    }
    merged
}

/// `stored` with the change from `before` to `after` applied.
///
/// Objects merge key by key. A value the form did not change is kept as stored. A removed
/// object is emptied of what the form knew (what else it holds stays). A list the form
/// changed is merged item by item when the form showed every stored item and kept their
/// number; otherwise it becomes the form's list followed by the stored items the form did not
/// show.
pub fn merge_edit(stored: &Value, before: &Value, after: &Value) -> Value {
    merge(Some(stored), Some(before), Some(after)).unwrap_or(Value::Null)
}

fn merge(stored: Option<&Value>, before: Option<&Value>, after: Option<&Value>) -> Option<Value> {
    if before == after {
        return stored.cloned();
    }
    let empty = Value::Object(Map::new());
    match after {
        None => match (stored, before) {
            // The form cleared an object: only what it knew of it goes.
            (Some(Value::Object(_)), Some(Value::Object(_))) => {
                let merged = merge(stored, before, Some(&empty))?;
                match &merged {
                    Value::Object(m) if m.is_empty() => None,
                    _ => Some(merged),
                }
            }
            _ => None,
        },
        Some(Value::Object(new)) => match stored {
            Some(Value::Object(old)) => {
                let before = before.and_then(Value::as_object);
                let mut out = Map::new();
                let keys = old
                    .keys()
                    .chain(new.keys())
                    .chain(before.into_iter().flat_map(Map::keys));
                for key in keys {
                    if out.contains_key(key) {
                        continue;
                    }
                    let merged = merge(old.get(key), before.and_then(|b| b.get(key)), new.get(key));
                    if let Some(v) = merged {
                        out.insert(key.clone(), v);
                    }
                }
                Some(Value::Object(out))
            }
            _ => Some(Value::Object(new.clone())),
        },
        Some(Value::Array(new)) => match (stored, before) {
            (Some(Value::Array(old)), Some(Value::Array(shown))) => {
                Some(Value::Array(merge_list(old, shown, new)))
            }
            _ => Some(Value::Array(new.clone())),
        },
        Some(scalar) => Some(scalar.clone()),
    }
}

fn merge_list(stored: &[Value], shown: &[Value], new: &[Value]) -> Vec<Value> {
    // Item by item only when each item the form showed is what the stored item at that place
    // holds (the form's view of it), and the form kept their number.
    let aligned =
        stored.len() == shown.len() && stored.iter().zip(shown).all(|(s, b)| is_part_of(b, s));
    if aligned && new.len() == shown.len() {
        return stored
            .iter()
            .zip(shown)
            .zip(new)
            .filter_map(|((s, b), n)| merge(Some(s), Some(b), Some(n)))
            .collect();
    }
    // The form's list, then the stored items it did not show at all.
    let mut out = new.to_vec();
    out.extend(
        stored
            .iter()
            .filter(|s| !shown.iter().any(|b| is_part_of(b, s)))
            .cloned(),
    );
    out
}

/// Whether `whole` holds everything `part` holds (objects may have more keys).
pub fn is_part_of(part: &Value, whole: &Value) -> bool {
    match (part, whole) {
        (Value::Object(p), Value::Object(w)) => p
            .iter()
            .all(|(k, v)| w.get(k).is_some_and(|wv| is_part_of(v, wv))),
        (Value::Array(p), Value::Array(w)) => {
            p.len() == w.len() && p.iter().zip(w).all(|(a, b)| is_part_of(a, b))
        }
        _ => part == whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_what_the_form_changed_changes() {
        let stored = json!({"metadata": {"name": "p", "annotations": {"a": "1"}},
            "spec": {"activationPreference": "Lazy", "priority": 1,
                "placement": {"clusterAffinity": {"clusterNames": ["x"], "exclude": ["z"]},
                    "replicaScheduling": {"weightPreference": {"staticWeightList": [
                        {"targetCluster": {"clusterNames": ["x"], "exclude": ["q"]}, "weight": 1},
                        {"targetCluster": {"clusterNames": ["y"]}, "weight": 1}]}}}}});
        // What the form shows: no annotations, no activationPreference, no excludes.
        let before = json!({"metadata": {"name": "p"},
            "spec": {"priority": 1, "placement": {"clusterAffinity": {"clusterNames": ["x"]},
                "replicaScheduling": {"weightPreference": {"staticWeightList": [
                    {"targetCluster": {"clusterNames": ["x"]}, "weight": 1},
                    {"targetCluster": {"clusterNames": ["y"]}, "weight": 1}]}}}}});
        for (case, after, want) in [
            ("unchanged", before.clone(), stored.clone()),
            (
                "a weight changed: item by item, the stored exclude kept",
                {
                    let mut a = before.clone();
                    a["spec"]["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"]
                        [1]["weight"] = json!(2);
                    a
                },
                {
                    let mut w = stored.clone();
                    w["spec"]["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"]
                        [1]["weight"] = json!(2);
                    w
                },
            ),
            (
                "cluster names cleared: the affinity keeps what the form does not show",
                {
                    let mut a = before.clone();
                    a["spec"]["placement"]
                        .as_object_mut()
                        .unwrap()
                        .remove("clusterAffinity");
                    a
                },
                {
                    let mut w = stored.clone();
                    w["spec"]["placement"]["clusterAffinity"] = json!({"exclude": ["z"]});
                    w
                },
            ),
            (
                "priority removed, a weight row added",
                {
                    let mut a = before.clone();
                    a["spec"].as_object_mut().unwrap().remove("priority");
                    a["spec"]["placement"]["replicaScheduling"]["weightPreference"]
                        ["staticWeightList"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"targetCluster": {"clusterNames": ["w"]}, "weight": 3}));
                    a
                },
                {
                    let mut w = stored.clone();
                    w["spec"].as_object_mut().unwrap().remove("priority");
                    w["spec"]["placement"]["replicaScheduling"]["weightPreference"]
                        ["staticWeightList"] =
                        before["spec"]["placement"]["replicaScheduling"]["weightPreference"]
                            ["staticWeightList"]
                            .clone();
                    w["spec"]["placement"]["replicaScheduling"]["weightPreference"]
                        ["staticWeightList"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"targetCluster": {"clusterNames": ["w"]}, "weight": 3}));
                    w
                },
            ),
        ] {
            assert_eq!(merge_edit(&stored, &before, &after), want, "{case}");
        }
        // A list holding items the form cannot show keeps them after the form's.
        let stored = json!({"m": [{"key": "region", "operator": "In", "values": ["eu"]},
            {"key": "zone", "operator": "NotIn", "values": ["z1"]}]});
        let before = json!({"m": [{"key": "region", "operator": "In", "values": ["eu"]}]});
        let after = json!({"m": [{"key": "region", "operator": "In", "values": ["us"]}]});
        assert_eq!(
            merge_edit(&stored, &before, &after),
            json!({"m": [{"key": "region", "operator": "In", "values": ["us"]},
                {"key": "zone", "operator": "NotIn", "values": ["z1"]}]})
        );
        // Items the form shows in another order are not merged across places.
        let stored =
            json!({"m": [{"key": "zone", "values": ["z"]}, {"key": "region", "values": ["r"]}]});
        let before =
            json!({"m": [{"key": "region", "values": ["r"]}, {"key": "zone", "values": ["z"]}]});
        let after =
            json!({"m": [{"key": "region", "values": ["s"]}, {"key": "zone", "values": ["z"]}]});
        assert_eq!(merge_edit(&stored, &before, &after), after);
        assert!(is_part_of(
            &json!({"a": [1, {"b": 2}]}),
            &json!({"a": [1, {"b": 2, "c": 3}], "d": 4})
        ));
        assert!(!is_part_of(&json!({"a": [1]}), &json!({"a": [1, 2]})));
    }
}
