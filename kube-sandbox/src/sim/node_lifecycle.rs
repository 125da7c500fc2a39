//! Node lifecycle: a node whose Lease stops being renewed turns Ready=Unknown (with the
//! unreachable taints), and Ready again when its Lease is renewed.

use crate::apiserver::api::WriteContext;
use crate::apiserver::resources::GroupResource;
use crate::apiserver::state::ClusterState;
use crate::sim::controllers::objects::at;
use serde_json::{Value, json};

/// Sets a node's Ready condition, and the unreachable taints that follow it.
pub(super) fn set_node_ready(
    state: &ClusterState,
    node: &str,
    status: &str,
    reason: &str,
    message: &str,
) {
    let Some(rt) = state.resource_type("", "nodes") else {
        return;
    };
    let now = crate::apiserver::meta::now_rfc3339();
    let ctx = WriteContext::system(crate::sim::controllers::objects::FIELD_MANAGER);
    let _ = state.update_with(&rt, "v1", "", node, Some("status"), &ctx, None, |old| {
        let mut new = old.clone();
        if let Some(conds) = new
            .pointer_mut("/status/conditions")
            .and_then(Value::as_array_mut)
        {
            for c in conds.iter_mut() {
                if c["type"] == "Ready" {
                    if c["status"] != status {
                        c["lastTransitionTime"] = json!(now);
                    }
                    c["status"] = json!(status);
                    c["reason"] = json!(reason);
                    c["message"] = json!(message);
                    c["lastHeartbeatTime"] = json!(now);
                }
            }
        }
        Ok(new)
    });
    // The unreachable taints follow the Ready condition, as node lifecycle keeps them.
    let _ = state.update_with(&rt, "v1", "", node, None, &ctx, None, |old| {
        let mut new = old.clone();
        let spec = new
            .as_object_mut()
            .map(|m| m.entry("spec").or_insert_with(|| json!({})));
        if let Some(Value::Object(spec)) = spec {
            let taints = spec.entry("taints").or_insert_with(|| json!([]));
            if let Value::Array(taints) = taints {
                taints.retain(|t| t["key"] != "node.kubernetes.io/unreachable");
                if status == "Unknown" {
                    for effect in ["NoSchedule", "NoExecute"] {
                        taints.push(json!({"key": "node.kubernetes.io/unreachable", "effect": effect, "timeAdded": now}));
                    }
                }
            }
        }
        Ok(new)
    });
}

pub(super) fn ready_conditions(now: &str, ready: &str) -> Value {
    let mut conds: Vec<Value> = ["MemoryPressure", "DiskPressure", "PIDPressure"]
        .iter()
        .map(|t| json!({"type": t, "status": "False", "reason": format!("KubeletHas{}", match *t {
            "MemoryPressure" => "SufficientMemory", "DiskPressure" => "NoDiskPressure", _ => "SufficientPID" }),
            "lastHeartbeatTime": now, "lastTransitionTime": now}))
        .collect();
    conds.push(json!({"type": "Ready", "status": ready, "reason": "KubeletReady",
        "message": "kubelet is posting ready status", "lastHeartbeatTime": now, "lastTransitionTime": now}));
    Value::Array(conds)
}

/// Node lifecycle: a node whose Lease and Ready heartbeat are older than the grace period
/// turns Ready=Unknown; a fresh Lease on a node we marked Unknown makes it Ready again.
pub(super) fn node_lifecycle_pass(state: &ClusterState) {
    let nodes = state
        .store
        .list(&GroupResource::new("", "nodes"), None, None, 0, &|_| true)
        .items;
    let leases = GroupResource::new("coordination.k8s.io", "leases");
    let now = jiff::Timestamp::now();
    let grace = state.options.node_monitor_grace.as_secs_f64();
    for node in nodes {
        let name = at(&node.value, &["metadata", "name"])
            .and_then(Value::as_str)
            .unwrap_or("");
        let ready = at(&node.value, &["status", "conditions"])
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready"));
        let Some(ready) = ready else { continue };
        let parse = |s: Option<&str>| s.and_then(|s| s.parse::<jiff::Timestamp>().ok());
        let heartbeat = parse(ready.get("lastHeartbeatTime").and_then(Value::as_str));
        let created =
            parse(at(&node.value, &["metadata", "creationTimestamp"]).and_then(Value::as_str));
        let renewed = state
            .store
            .get(&leases, "kube-node-lease", name)
            .and_then(|l| parse(at(&l.value, &["spec", "renewTime"]).and_then(Value::as_str)));
        let last = [heartbeat, renewed, created].into_iter().flatten().max();
        let Some(last) = last else { continue };
        let age = now.duration_since(last).as_secs_f64();
        let status = ready.get("status").and_then(Value::as_str).unwrap_or("");
        if age > grace && status != "Unknown" {
            set_node_ready(
                state,
                name,
                "Unknown",
                "NodeStatusUnknown",
                "Kubelet stopped posting node status.",
            );
        } else if age <= grace
            && status == "Unknown"
            && renewed.is_some_and(|r| heartbeat.is_none_or(|h| r > h))
            && ready.get("reason").and_then(Value::as_str) == Some("NodeStatusUnknown")
        {
            set_node_ready(
                state,
                name,
                "True",
                "KubeletReady",
                "kubelet is posting ready status",
            );
        }
    }
}
