//! The ReplicaSet controller: keeps `spec.replicas` active pods from the template, removes the
//! extra ones in upstream's order (unscheduled, pending, not ready, newest first) and reports
//! replicas, fullyLabeledReplicas, readyReplicas, availableReplicas and observedGeneration.

use super::Pass;
use super::objects::{
    PodName, Writer, at, int_at, is_active, is_available, is_deleting, is_ready, is_terminal,
    labels_match, name_of, namespace_of, owned_by, phase, pod_from_template, ready_since, str_at,
    uid_of,
};
use serde_json::{Value, json};
use std::cmp::Reverse;

/// The field manager of its writes.
pub const NAME: &str = "replicaset-controller";

/// Most pods created or deleted for one ReplicaSet in one pass (upstream's burst replicas).
const BURST: usize = 500;

/// Syncs every ReplicaSet.
pub fn sync_all(pass: &Pass) {
    let writer = Writer {
        state: pass.state,
        manager: NAME,
    };
    for rs in pass.list("apps", "replicasets") {
        if is_deleting(&rs) {
            continue;
        }
        let pods = pass.pods_in(namespace_of(&rs));
        let all_owned = owned_by(&pods, uid_of(&rs));
        // Pods on their way out that have not finished (upstream `FilterTerminatingPods`).
        let terminating = all_owned
            .iter()
            .filter(|p| is_deleting(p) && !is_terminal(p))
            .count();
        let owned: Vec<&Value> = all_owned.into_iter().filter(|p| is_active(p)).collect();
        let desired = int_at(&rs, &["spec", "replicas"]).unwrap_or(1).max(0) as usize;
        let template = at(&rs, &["spec", "template"]).cloned().unwrap_or(json!({}));
        if owned.len() < desired {
            let prefix = format!("{}-", name_of(&rs));
            for _ in 0..(desired - owned.len()).min(BURST) {
                let pod = pod_from_template(&template, &rs, PodName::Generate(&prefix), &[]);
                match writer.create("", "pods", namespace_of(&rs), pod) {
                    Ok(created) => writer.event(
                        &rs,
                        "Normal",
                        "SuccessfulCreate",
                        &format!("Created pod: {}", name_of(&created.value)),
                    ),
                    Err(e) => {
                        tracing::debug!(rs = name_of(&rs), "cannot create a pod: {e}");
                        writer.event(
                            &rs,
                            "Warning",
                            "FailedCreate",
                            &format!("Error creating: {}", e.message),
                        );
                        break;
                    }
                }
            }
        } else if owned.len() > desired {
            let mut victims = owned.clone();
            victims.sort_by_key(|p| deletion_rank(p));
            for pod in victims.iter().take((owned.len() - desired).min(BURST)) {
                if writer.delete("", "pods", pod).is_ok() {
                    writer.event(
                        &rs,
                        "Normal",
                        "SuccessfulDelete",
                        &format!("Deleted pod: {}", name_of(pod)),
                    );
                }
            }
        }
        let min_ready = int_at(&rs, &["spec", "minReadySeconds"]).unwrap_or(0);
        let template_labels = template
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let count = |f: &dyn Fn(&Value) -> bool| owned.iter().filter(|p| f(p)).count();
        let mut status = at(&rs, &["status"])
            .cloned()
            .filter(Value::is_object)
            .unwrap_or(json!({}));
        status["replicas"] = json!(owned.len());
        status["fullyLabeledReplicas"] = json!(count(&|p| labels_match(
            &template_labels,
            at(p, &["metadata", "labels"]).and_then(Value::as_object)
        )));
        status["readyReplicas"] = json!(count(&|p| is_ready(p)));
        status["availableReplicas"] = json!(count(&|p| is_available(p, min_ready, pass.now)));
        // `terminatingReplicas` (DeploymentReplicaSetTerminatingReplicas, on in v1.36):
        // kubernetes `pkg/controller/replicaset/replica_set_utils.go`, `calculateStatus`.
        status["terminatingReplicas"] = json!(terminating);
        status["observedGeneration"] = json!(int_at(&rs, &["metadata", "generation"]));
        if let Err(e) = writer.set_status("apps", "replicasets", &rs, status) {
            tracing::debug!(rs = name_of(&rs), "cannot write status: {e}");
        }
    }
}

/// Which pods go first when scaling down (upstream `controller.ActivePods` order): unscheduled
/// before scheduled, Pending before Unknown before Running, not ready before ready, ready for
/// less time first, then the newest.
fn deletion_rank(pod: &Value) -> (bool, u8, bool, Reverse<i64>, Reverse<String>) {
    let phase_rank = match phase(pod) {
        "Pending" | "" => 0,
        "Unknown" => 1,
        _ => 2,
    };
    let ready_at = ready_since(pod).map(|t| t.as_second()).unwrap_or(0);
    (
        !str_at(pod, &["spec", "nodeName"]).is_empty(),
        phase_rank,
        is_ready(pod),
        Reverse(ready_at),
        Reverse(str_at(pod, &["metadata", "creationTimestamp"]).to_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unscheduled_and_unready_pods_go_first() {
        let unscheduled = json!({"metadata": {"name": "a"}, "status": {"phase": "Pending"}});
        let pending = json!({"metadata": {"name": "b"}, "spec": {"nodeName": "n"}, "status": {"phase": "Pending"}});
        let ready = json!({"metadata": {"name": "c", "creationTimestamp": "2024-01-01T00:00:00Z"}, "spec": {"nodeName": "n"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:01Z"}]}});
        let newer_ready = json!({"metadata": {"name": "d", "creationTimestamp": "2024-01-01T00:00:05Z"}, "spec": {"nodeName": "n"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:06Z"}]}});
        let mut pods = [&ready, &newer_ready, &pending, &unscheduled];
        pods.sort_by_key(|p| deletion_rank(p));
        let names: Vec<&str> = pods.iter().map(|p| name_of(p)).collect();
        assert_eq!(names, ["a", "b", "d", "c"]);
    }
}
