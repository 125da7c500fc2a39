//! The `scale` subresource of Deployments, ReplicaSets and StatefulSets (`autoscaling/v1`
//! `Scale`): GET, PUT and PATCH (merge, JSON and strategic merge patch of the Scale), as
//! `kubectl scale` and autoscalers use it. Writing it changes the object's `spec.replicas`.

use crate::apiserver::api::{PatchType, WriteContext};
use crate::apiserver::error::ApiError;
use crate::apiserver::resources::ResourceType;
use crate::apiserver::state::ClusterState;
use crate::patch;
use serde_json::{Value, json};

/// Whether the resource's scale subresource is served here.
pub fn serves(rt: &ResourceType) -> bool {
    matches!(
        (rt.group.as_str(), rt.plural.as_str()),
        ("apps", "deployments" | "replicasets" | "statefulsets") | ("", "replicationcontrollers")
    )
}

/// A label selector as the `status.selector` string of a Scale (`a=b,c in (x,y)`).
pub fn selector_string(selector: &Value) -> String {
    // A ReplicationController's selector is a plain map of labels.
    let is_label_map = selector
        .as_object()
        .is_some_and(|m| m.values().all(Value::is_string) && !m.is_empty());
    if is_label_map {
        let mut parts: Vec<String> = selector
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
            .collect();
        parts.sort();
        return parts.join(",");
    }
    let mut parts: Vec<String> = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    for e in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let mut values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let values = values.join(",");
        parts.push(
            match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => format!("{key} in ({values})"),
                "NotIn" => format!("{key} notin ({values})"),
                "Exists" => key.to_string(),
                "DoesNotExist" => format!("!{key}"),
                _ => continue,
            },
        );
    }
    parts.sort();
    parts.join(",")
}

/// The Scale of an object.
pub fn scale_of(obj: &Value) -> Value {
    let meta = &obj["metadata"];
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": {"replicas": obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)},
        "status": {
            "replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            "selector": obj.pointer("/spec/selector").map(selector_string).unwrap_or_default(),
        },
    })
}

fn get_object(
    state: &ClusterState,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
) -> Result<Value, ApiError> {
    state
        .store
        .get(&rt.group_resource(), namespace, name)
        .map(|s| s.value.clone())
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))
}

/// GET `.../{name}/scale`.
pub fn get(
    state: &ClusterState,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
) -> Result<Value, ApiError> {
    Ok(scale_of(&get_object(state, rt, namespace, name)?))
}

/// Writes `replicas` from a new Scale; a `resourceVersion` in it must be current.
fn write(
    state: &ClusterState,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    scale: &Value,
    ctx: &WriteContext,
) -> Result<Value, ApiError> {
    // kubernetes `pkg/apis/autoscaling/validation/validation.go`, `ValidateScale`:
    // `ValidateNonnegativeField` of `spec.replicas` (unset is 0).
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if replicas < 0 {
        return Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            name,
            vec![crate::apiserver::error::Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {replicas}: must be greater than or equal to 0"),
                field: "spec.replicas".into(),
            }],
        ));
    }
    let expected = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .map(str::to_string);
    let version = rt.storage_version().to_string();
    let stored = state.update_with(rt, &version, namespace, name, None, ctx, expected, |old| {
        let mut new = old.clone();
        new["spec"]["replicas"] = json!(replicas);
        Ok(new)
    })?;
    Ok(scale_of(&stored.value))
}

/// PUT `.../{name}/scale`.
pub fn update(
    state: &ClusterState,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    body: &Value,
    ctx: &WriteContext,
) -> Result<Value, ApiError> {
    write(state, rt, namespace, name, body, ctx)
}

/// The patch type of a PATCH's `Content-Type` (parameters ignored).
pub fn patch_type(content_type: &str) -> Result<PatchType, ApiError> {
    match content_type.split(';').next().unwrap_or("").trim() {
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/strategic-merge-patch+json" => Ok(PatchType::StrategicMerge),
        "application/apply-patch+yaml" | "application/apply-patch+json" => {
            Ok(PatchType::Apply { force: false })
        }
        other => Err(ApiError::unsupported_media_type(other)),
    }
}

/// PATCH `.../{name}/scale`: the patch applies to the current Scale.
pub fn patch(
    state: &ClusterState,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    patch_type: PatchType,
    body: &[u8],
    ctx: &WriteContext,
) -> Result<Value, ApiError> {
    let current = get(state, rt, namespace, name)?;
    let patch_value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    let bad = |e: patch::PatchError| ApiError::bad_request(e.to_string());
    let mut patched = match patch_type {
        PatchType::Merge => {
            let mut target = current.clone();
            patch::merge_patch(&mut target, &patch_value);
            target
        }
        PatchType::Json => patch::json_patch(&current, &patch_value).map_err(bad)?,
        PatchType::StrategicMerge => {
            // A Scale has no lists, so a strategic merge patch is a merge patch.
            let mut target = current.clone();
            patch::merge_patch(&mut target, &patch_value);
            target
        }
        PatchType::Apply { .. } => {
            return Err(ApiError::method_not_supported(
                "apply scale",
                &rt.group,
                &rt.plural,
            ));
        }
    };
    // The patch is applied to the version just read; only a version it names is checked.
    if patch_value.pointer("/metadata/resourceVersion").is_none()
        && let Some(meta) = patched.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("resourceVersion");
    }
    write(state, rt, namespace, name, &patched, ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_print_as_label_selector_strings() {
        let cases = [
            (json!({"matchLabels": {"app": "web"}}), "app=web"),
            (
                json!({"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["y", "x"]},
                    {"key": "gone", "operator": "DoesNotExist"}
                ]}),
                "!gone,a=1,b=2,tier in (x,y)",
            ),
            (json!({}), ""),
        ];
        for (selector, expected) in cases {
            assert_eq!(selector_string(&selector), expected);
        }
    }
}
