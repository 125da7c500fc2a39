//! Adding and removing a finalizer with a guarded JSON patch.
//!
//! The patch first `test`s `/metadata/finalizers` against the list the caller read, so a
//! writer that changed the list meanwhile is never clobbered: the API server answers 422 (or
//! 409) and the reconciler re-reads the object and tries again. The builders are pure; [`add`]
//! and [`remove`] send them.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, ReplaceOperation, TestOperation};
use kube::api::{Patch as KubePatch, PatchParams};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use serde_json::Value;

fn finalizers_path() -> PointerBuf {
    PointerBuf::from_tokens(["metadata", "finalizers"])
}

fn list(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}

/// The JSON patch that sets the finalizers from `current` (as read) to `wanted`.
///
/// With no list read (`None`) it adds the whole list, which fails if one appeared meanwhile;
/// otherwise it tests that the list is still `current`, then replaces it.
pub fn set_patch(current: Option<&[String]>, wanted: &[String]) -> Patch {
    let ops = match current {
        None => vec![PatchOperation::Add(AddOperation {
            path: finalizers_path(),
            value: list(wanted),
        })],
        Some(current) => vec![
            PatchOperation::Test(TestOperation {
                path: finalizers_path(),
                value: list(current),
            }),
            PatchOperation::Replace(ReplaceOperation {
                path: finalizers_path(),
                value: list(wanted),
            }),
        ],
    };
    Patch(ops)
}

/// The patch adding `finalizer` to `current`, or `None` if it is already there.
pub fn add_patch(current: Option<&[String]>, finalizer: &str) -> Option<Patch> {
    let held = current.unwrap_or_default();
    if held.iter().any(|f| f == finalizer) {
        return None;
    }
    let mut wanted = held.to_vec();
    wanted.push(finalizer.to_owned());
    Some(set_patch(current, &wanted))
}

/// The patch removing `finalizer` from `current`, or `None` if it is not there.
pub fn remove_patch(current: Option<&[String]>, finalizer: &str) -> Option<Patch> {
    let held = current.unwrap_or_default();
    if !held.iter().any(|f| f == finalizer) {
        return None;
    }
    let wanted: Vec<String> = held.iter().filter(|f| *f != finalizer).cloned().collect();
    Some(set_patch(current, &wanted))
}

/// Adds `finalizer` to `obj` (as read) unless it holds it already. Returns whether a patch
/// was sent. A 409 or 422 means the finalizers changed meanwhile: re-read and retry.
pub async fn add<K>(api: &Api<K>, obj: &K, finalizer: &str) -> Result<bool, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let patch = add_patch(obj.meta().finalizers.as_deref(), finalizer);
    send(api, obj, patch).await
}

/// Removes `finalizer` from `obj` (as read) if it holds it. Returns whether a patch was sent.
/// A 409 or 422 means the finalizers changed meanwhile: re-read and retry.
pub async fn remove<K>(api: &Api<K>, obj: &K, finalizer: &str) -> Result<bool, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let patch = remove_patch(obj.meta().finalizers.as_deref(), finalizer);
    send(api, obj, patch).await
}

async fn send<K>(api: &Api<K>, obj: &K, patch: Option<Patch>) -> Result<bool, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let Some(patch) = patch else {
        return Ok(false);
    };
    let name = obj.meta().name.as_deref().unwrap_or_default();
    api.patch(name, &PatchParams::default(), &KubePatch::<()>::Json(patch))
        .await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn patches() {
        type Case = (&'static str, Option<Vec<String>>, Option<Value>);
        let add_cases: Vec<Case> = vec![
            (
                "no list: add the whole list",
                None,
                Some(json!([{"op": "add", "path": "/metadata/finalizers", "value": ["f"]}])),
            ),
            (
                "other finalizers: test, then replace",
                Some(strings(&["a"])),
                Some(json!([
                    {"op": "test", "path": "/metadata/finalizers", "value": ["a"]},
                    {"op": "replace", "path": "/metadata/finalizers", "value": ["a", "f"]},
                ])),
            ),
            (
                "empty list: test the empty list",
                Some(vec![]),
                Some(json!([
                    {"op": "test", "path": "/metadata/finalizers", "value": []},
                    {"op": "replace", "path": "/metadata/finalizers", "value": ["f"]},
                ])),
            ),
            ("already held: nothing", Some(strings(&["f"])), None),
        ];
        for (name, current, want) in add_cases {
            let got = add_patch(current.as_deref(), "f").map(|p| serde_json::to_value(p).unwrap());
            assert_eq!(got, want, "add: {name}");
        }

        let remove_cases: Vec<Case> = vec![
            ("no list: nothing", None, None),
            ("not held: nothing", Some(strings(&["a"])), None),
            (
                "held with others: keep the others",
                Some(strings(&["a", "f", "b"])),
                Some(json!([
                    {"op": "test", "path": "/metadata/finalizers", "value": ["a", "f", "b"]},
                    {"op": "replace", "path": "/metadata/finalizers", "value": ["a", "b"]},
                ])),
            ),
            (
                "the only one: an empty list",
                Some(strings(&["f"])),
                Some(json!([
                    {"op": "test", "path": "/metadata/finalizers", "value": ["f"]},
                    {"op": "replace", "path": "/metadata/finalizers", "value": []},
                ])),
            ),
        ];
        for (name, current, want) in remove_cases {
            let got =
                remove_patch(current.as_deref(), "f").map(|p| serde_json::to_value(p).unwrap());
            assert_eq!(got, want, "remove: {name}");
        }
    }

    #[test]
    fn the_guard_refuses_a_changed_list() {
        let Some(patch) = remove_patch(Some(&strings(&["a", "f"])), "f") else {
            panic!("a patch");
        };
        let mut changed = json!({"metadata": {"finalizers": ["a", "f", "b"]}});
        assert!(json_patch::patch(&mut changed, &patch).is_err());
        let mut same = json!({"metadata": {"finalizers": ["a", "f"]}});
        json_patch::patch(&mut same, &patch).unwrap();
        assert_eq!(same, json!({"metadata": {"finalizers": ["a"]}}));
    }
}
