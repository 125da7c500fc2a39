//! The DaemonSet controller: one pod per node that should run it (nodeSelector, required node
//! affinity, taints against the template's tolerations plus the ones DaemonSet pods always
//! get), created with a node affinity on that node name so that the scheduler binds it there;
//! pods on nodes that should not run them go, a RollingUpdate replaces out-of-date pods
//! `maxUnavailable` at a time, and status counts per node.

use super::Pass;
use super::objects::{
    PodName, Writer, at, int_at, is_available, is_deleting, is_ready, is_terminal, name_of,
    namespace_of, owned_by, pod_from_template, str_at, uid_of,
};
use super::rollout::{controller_revision_hash, scaled_value};
use crate::sim::scheduler::{node_accepts, pinned_node_names};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The field manager of its writes.
pub const NAME: &str = "daemonset-controller";

/// The tolerations every DaemonSet pod gets (upstream `AddOrUpdateDaemonPodTolerations`);
/// `node.kubernetes.io/network-unavailable` only for host-network pods.
pub fn daemon_tolerations(host_network: bool) -> Vec<Value> {
    let mut tolerations = vec![
        json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}),
        json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}),
        json!({"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"}),
        json!({"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}),
        json!({"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"}),
        json!({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}),
    ];
    if host_network {
        tolerations.push(json!({"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}));
    }
    tolerations
}

/// The template's pod with the DaemonSet tolerations added (those it already has kept).
fn daemon_pod(template: &Value, set: &Value) -> Value {
    let mut pod = pod_from_template(template, set, PodName::Generate(""), &[]);
    let host_network = at(&pod, &["spec", "hostNetwork"]).and_then(Value::as_bool) == Some(true);
    let mut tolerations: Vec<Value> = at(&pod, &["spec", "tolerations"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for t in daemon_tolerations(host_network) {
        if !tolerations
            .iter()
            .any(|x| x["key"] == t["key"] && x["effect"] == t["effect"])
        {
            tolerations.push(t);
        }
    }
    pod["spec"]["tolerations"] = json!(tolerations);
    pod
}

/// Whether a node should run the DaemonSet's pod (upstream `NodeShouldRunDaemonPod`): its
/// taints, selector and affinity against the pod, whatever the node's readiness (a node that
/// turns NotReady keeps its daemon pods; its taints are among the tolerated ones).
fn should_run(node: &Value, pod: &Value) -> bool {
    let mut ready = node.clone();
    ready["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
    node_accepts(&ready, pod)
}

/// The node a daemon pod is for: its `nodeName`, or the one its node affinity names.
fn node_of(pod: &Value) -> Option<String> {
    let bound = str_at(pod, &["spec", "nodeName"]);
    if !bound.is_empty() {
        return Some(bound.to_string());
    }
    let names = pinned_node_names(pod)?;
    (names.len() == 1)
        .then(|| names.into_iter().next().map(str::to_string))
        .flatten()
}

/// Deletes one of the set's pods, with upstream's event.
fn delete_pod(w: &Writer, set: &Value, pod: &Value) {
    if w.delete("", "pods", pod).is_ok() {
        w.event(
            set,
            "Normal",
            "SuccessfulDelete",
            &format!("Deleted pod: {}", name_of(pod)),
        );
    }
}

/// Syncs every DaemonSet.
pub fn sync_all(pass: &Pass) {
    let writer = Writer {
        state: pass.state,
        manager: NAME,
    };
    let nodes = pass.list("", "nodes");
    for set in pass.list("apps", "daemonsets") {
        if !is_deleting(&set) {
            sync(pass, &writer, &set, &nodes);
        }
    }
}

fn sync(pass: &Pass, w: &Writer, set: &Value, nodes: &[Value]) {
    let namespace = namespace_of(set);
    let template = at(set, &["spec", "template"]).cloned().unwrap_or(json!({}));
    let collisions = int_at(set, &["status", "collisionCount"]).map(|c| c as u32);
    let hash = controller_revision_hash(&template, collisions);
    let generation = int_at(set, &["metadata", "generation"])
        .unwrap_or(1)
        .to_string();
    let probe = daemon_pod(&template, set);
    let wanted: Vec<&str> = nodes
        .iter()
        .filter(|n| !is_deleting(n) && should_run(n, &probe))
        .map(name_of)
        .collect();
    let all_pods = pass.pods_in(namespace);
    let mut by_node: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for pod in owned_by(&all_pods, uid_of(set)) {
        if let Some(node) = node_of(pod) {
            by_node.entry(node).or_default().push(pod);
        }
    }
    let is_current =
        |p: &Value| str_at(p, &["metadata", "labels", "controller-revision-hash"]) == hash;
    let prefix = format!("{}-", name_of(set));
    for node in &wanted {
        let pods: Vec<&Value> = by_node
            .get(*node)
            .map(|p| p.iter().copied().filter(|p| !is_deleting(p)).collect())
            .unwrap_or_default();
        for failed in pods.iter().filter(|p| is_terminal(p)) {
            delete_pod(w, set, failed);
        }
        let running: Vec<&Value> = pods.into_iter().filter(|p| !is_terminal(p)).collect();
        if running.is_empty() {
            let mut pod = daemon_pod(&template, set);
            pod["metadata"]["generateName"] = json!(prefix);
            pod["metadata"]["labels"]["controller-revision-hash"] = json!(hash);
            pod["metadata"]["labels"]["pod-template-generation"] = json!(generation);
            // Upstream replaces the required node affinity with the node's name; the node was
            // checked against the original affinity above.
            pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json!({
                "nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}
                ]}]
            });
            match w.create("", "pods", namespace, pod) {
                Ok(created) => w.event(
                    set,
                    "Normal",
                    "SuccessfulCreate",
                    &format!("Created pod: {}", name_of(&created.value)),
                ),
                Err(e) => {
                    tracing::debug!(daemonset = name_of(set), node, "cannot create a pod: {e}")
                }
            }
        } else {
            // Only one pod per node: the oldest stays.
            for extra in running.iter().skip(1) {
                delete_pod(w, set, extra);
            }
        }
    }
    for (node, pods) in &by_node {
        if !wanted.contains(&node.as_str()) {
            for pod in pods.iter().filter(|p| !is_deleting(p)) {
                delete_pod(w, set, pod);
            }
        }
    }

    let min_ready = int_at(set, &["spec", "minReadySeconds"]).unwrap_or(0);
    let live_on = |node: &str| -> Vec<&Value> {
        by_node
            .get(node)
            .map(|p| {
                p.iter()
                    .copied()
                    .filter(|p| !is_deleting(p) && !is_terminal(p))
                    .collect()
            })
            .unwrap_or_default()
    };
    let desired = wanted.len() as i64;
    let scheduled = wanted.iter().filter(|n| !live_on(n).is_empty()).count() as i64;
    let ready = wanted
        .iter()
        .filter(|n| live_on(n).iter().any(|p| is_ready(p)))
        .count() as i64;
    let available = wanted
        .iter()
        .filter(|n| {
            live_on(n)
                .iter()
                .any(|p| is_available(p, min_ready, pass.now))
        })
        .count() as i64;
    let updated = wanted
        .iter()
        .filter(|n| live_on(n).iter().any(|p| is_current(p)))
        .count() as i64;
    let misscheduled = by_node
        .keys()
        .filter(|n| !wanted.contains(&n.as_str()) && !live_on(n).is_empty())
        .count() as i64;

    // RollingUpdate: out-of-date pods go while no more than maxUnavailable nodes lack an
    // available pod.
    let rolling = str_at(set, &["spec", "updateStrategy", "type"]) != "OnDelete";
    if rolling {
        let max_unavailable = scaled_value(
            at(
                set,
                &["spec", "updateStrategy", "rollingUpdate", "maxUnavailable"],
            ),
            "1",
            desired,
            true,
        )
        .max(1);
        let mut budget = max_unavailable - (desired - available);
        for node in &wanted {
            if budget <= 0 {
                break;
            }
            for pod in live_on(node) {
                if !is_current(pod) && is_available(pod, min_ready, pass.now) {
                    delete_pod(w, set, pod);
                    budget -= 1;
                }
            }
        }
    }

    let mut status = json!({
        "observedGeneration": int_at(set, &["metadata", "generation"]).unwrap_or(0),
        "desiredNumberScheduled": desired,
        "currentNumberScheduled": scheduled,
        "numberMisscheduled": misscheduled,
        "numberReady": ready,
        "numberAvailable": available,
        "updatedNumberScheduled": updated,
    });
    if desired > available {
        status["numberUnavailable"] = json!(desired - available);
    }
    if let Err(e) = w.set_status("apps", "daemonsets", set, status) {
        tracing::debug!(daemonset = name_of(set), "cannot write status: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemon_pods_tolerate_node_conditions_but_not_other_taints() {
        let set = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "uid": "u"}});
        let template = json!({"spec": {"containers": [{"name": "c"}]}});
        let node = |taints: Value| {
            json!({
                "metadata": {"name": "n1"},
                "spec": {"taints": taints},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}
            })
        };
        let pod = daemon_pod(&template, &set);
        let cases = [
            (json!([]), true),
            (
                json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]),
                true,
            ),
            (
                json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]),
                true,
            ),
            (
                json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
                false,
            ),
            (
                json!([{"key": "dedicated", "value": "gpu", "effect": "PreferNoSchedule"}]),
                true,
            ),
        ];
        for (taints, expected) in cases {
            assert_eq!(
                node_accepts(&node(taints.clone()), &pod),
                expected,
                "{taints}"
            );
        }
        let tolerant = json!({"spec": {"containers": [{"name": "c"}], "tolerations": [{"key": "dedicated", "operator": "Exists"}]}});
        let tainted = node(json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]));
        assert!(should_run(&tainted, &daemon_pod(&tolerant, &set)));
    }
}
