//! POST subresources: pods/binding, pods/eviction and serviceaccounts/token; and the write
//! rules of pods/ephemeralcontainers and pods/resize.

use crate::apiserver::error::ApiError;
use crate::apiserver::resources::ResourceType;
use crate::apiserver::state::ClusterState;
use crate::apiserver::write_options::{DeleteOptions, WriteContext};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use std::sync::Arc;

fn created(value: &Value) -> Response {
    let mut response = (StatusCode::CREATED, value.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn success() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}

/// Serves `POST .../{name}/{subresource}`.
pub fn create(
    state: &Arc<ClusterState>,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    subresource: &str,
    body: &[u8],
    ctx: &WriteContext,
) -> Result<Response, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized or malformed JSON: {e}"
        ))
    })?;
    match (rt.plural.as_str(), subresource) {
        ("pods", "binding") => {
            let node = value
                .pointer("/target/name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| {
                    ApiError::invalid(
                        "",
                        "Binding",
                        name,
                        vec![crate::apiserver::error::Cause {
                            reason: "FieldValueRequired".into(),
                            message: "target.name: Required value".into(),
                            field: "target.name".into(),
                        }],
                    )
                })?
                .to_string();
            bind_pod(state, namespace, name, &node, ctx)?;
            Ok(created(&success()))
        }
        ("pods", "eviction") => {
            let opts = value
                .get("deleteOptions")
                .map(|o| DeleteOptions::from_body(o.to_string().as_bytes()))
                .transpose()?
                .unwrap_or_default();
            state.delete(rt, namespace, name, &opts)?;
            Ok(created(&success()))
        }
        ("serviceaccounts", "token") => {
            let sa = state
                .store
                .get(&rt.group_resource(), namespace, name)
                .ok_or_else(|| ApiError::not_found("", "serviceaccounts", name))?;
            let audiences: Vec<String> = Some(crate::apiserver::meta::string_list(
                value.pointer("/spec/audiences"),
            ))
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| vec!["https://kubernetes.default.svc.cluster.local".into()]);
            let expiration = value
                .pointer("/spec/expirationSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(3600);
            let bound_pod = match value.pointer("/spec/boundObjectRef") {
                Some(r) if r.get("kind").and_then(Value::as_str) == Some("Pod") => {
                    let pod_name = r.get("name").and_then(Value::as_str).unwrap_or("");
                    let pod = state
                        .store
                        .get(
                            &crate::apiserver::resources::GroupResource::new("", "pods"),
                            namespace,
                            pod_name,
                        )
                        .ok_or_else(|| ApiError::not_found("", "pods", pod_name))?;
                    Some((pod_name.to_string(), pod.uid().to_string()))
                }
                _ => None,
            };
            let (token, expiry) = state
                .auth
                .issue_token(
                    namespace,
                    name,
                    sa.uid(),
                    &audiences,
                    expiration,
                    bound_pod.as_ref().map(|(n, u)| (n.as_str(), u.as_str())),
                )
                .map_err(|e| ApiError::internal(e.to_string()))?;
            let mut out = json!({
                "kind": "TokenRequest",
                "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": null},
                "spec": value.get("spec").cloned().unwrap_or_default(),
                "status": {"token": token, "expirationTimestamp": expiry},
            });
            out["spec"]["audiences"] = json!(audiences);
            out["spec"]["expirationSeconds"] = json!(expiration.max(600));
            Ok(created(&out))
        }
        _ => Err(ApiError::method_not_supported(
            &format!("create {subresource}"),
            &rt.group,
            &rt.plural,
        )),
    }
}

/// Binds a pending pod to a node, as `pods/binding` and the scheduler do.
pub fn bind_pod(
    state: &ClusterState,
    namespace: &str,
    name: &str,
    node: &str,
    ctx: &WriteContext,
) -> Result<(), ApiError> {
    let Some(rt) = state.resource_type("", "pods") else {
        return Err(ApiError::internal("pods are not served"));
    };
    let node = node.to_string();
    let now = crate::apiserver::meta::now_rfc3339();
    // One write, like kube-apiserver's binding: the node and the PodScheduled condition.
    state.update_with(
        &rt,
        "v1",
        namespace,
        name,
        Some("binding"),
        ctx,
        None,
        |old| {
            if let Some(current) = old.pointer("/spec/nodeName").and_then(Value::as_str)
                && !current.is_empty()
            {
                return Err(ApiError::conflict(
                    "",
                    "pods",
                    name,
                    &format!("pod {name} is already assigned to node \"{current}\""),
                ));
            }
            if old.pointer("/metadata/deletionTimestamp").is_some() {
                return Err(ApiError::conflict("", "pods", name, "pod is being deleted"));
            }
            let mut new = old.clone();
            new["spec"]["nodeName"] = json!(node);
            if !new.get("status").is_some_and(Value::is_object) {
                new["status"] = json!({});
            }
            let conditions = new["status"]
                .as_object_mut()
                .map(|s| s.entry("conditions").or_insert_with(|| json!([])));
            if let Some(Value::Array(conditions)) = conditions {
                conditions
                    .retain(|c| c.get("type").and_then(Value::as_str) != Some("PodScheduled"));
                conditions.push(json!({"type": "PodScheduled", "status": "True",
                "lastProbeTime": null, "lastTransitionTime": now}));
            }
            Ok(new)
        },
    )?;
    Ok(())
}

/// A write through `pods/resize`: the stored pod with only its containers' `resources` (and
/// `resizePolicy`) taken from the request, matched by name (kubernetes
/// `pkg/registry/core/pod/strategy.go`, `podResizeStrategy.PrepareForUpdate`). The simulated
/// kubelet does not act on a resize.
pub fn resize_write(old: &Value, new: &Value) -> Value {
    let mut out = old.clone();
    for list in ["initContainers", "containers"] {
        let Some(requested) = new
            .pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        let Some(containers) = out
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for container in containers.iter_mut() {
            let name = container.get("name").cloned();
            if let Some(wanted) = requested.iter().find(|c| c.get("name") == name.as_ref()) {
                for field in ["resources", "resizePolicy"] {
                    match wanted.get(field) {
                        Some(value) => container[field] = value.clone(),
                        None => {
                            if let Some(map) = container.as_object_mut() {
                                map.remove(field);
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// A write through `pods/ephemeralcontainers`: the stored pod with only
/// `spec.ephemeralContainers` taken from `new`. As kube-apiserver, existing ephemeral
/// containers may be neither changed nor removed (422), only new ones added.
pub fn ephemeral_containers_write(old: &Value, new: &Value, name: &str) -> Result<Value, ApiError> {
    let list = |pod: &Value| -> Vec<Value> {
        pod.pointer("/spec/ephemeralContainers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (before, after) = (list(old), list(new));
    let forbidden = |message: String| {
        ApiError::invalid(
            "",
            "Pod",
            name,
            vec![crate::apiserver::error::Cause {
                reason: "FieldValueForbidden".into(),
                message,
                field: "spec.ephemeralContainers".into(),
            }],
        )
    };
    for existing in &before {
        let container = existing.get("name").and_then(Value::as_str).unwrap_or("");
        match after
            .iter()
            .find(|c| c.get("name").and_then(Value::as_str) == Some(container))
        {
            None => {
                return Err(forbidden(format!(
                    "Forbidden: existing ephemeral containers \"{container}\" may not be removed"
                )));
            }
            Some(c) if c != existing => {
                return Err(forbidden(format!(
                    "Forbidden: existing ephemeral containers \"{container}\" may not be changed"
                )));
            }
            Some(_) => {}
        }
    }
    let mut out = old.clone();
    out["spec"]["ephemeralContainers"] = json!(after);
    if let (Some(m), Some(mf)) = (
        crate::apiserver::meta::metadata_mut(&mut out),
        new.pointer("/metadata/managedFields").cloned(),
    ) {
        m.insert("managedFields".into(), mf);
    }
    Ok(out)
}
