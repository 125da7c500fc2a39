//! Deleting a ClusterBinding: the finalizer `kubeocean.io/manager` holds it until the syncer
//! has drained what it made — no virtual node of the binding left in the computing cluster,
//! no Pod, ConfigMap, Secret or PVC labelled `kubeocean.io/managed-by=kubeocean` left in the
//! binding's mount namespace in the worker (counted by
//! [`crate::syncer::topdown::remaining_physical_objects`]). Only then does the manager
//! remove the workloads and the finalizer.
//!
//! The worker is reached through the binding's Secret, or, when the Secret went first, with
//! the last client of this manager process that reached it. A worker that cannot be reached
//! cannot be drained: the manager reports it and keeps waiting, unless the binding is annotated `kubeocean.io/force-delete=true`. Then the
//! manager removes the binding's virtual nodes itself (finalizers included) and lets the
//! binding go; whatever the syncer left in the worker stays there for the operator.

use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use kube_kit::client::is_not_found;
use serde_json::json;

use crate::crd::ClusterBinding;
use crate::labels;

/// Annotation that lets a binding be deleted while its worker is unreachable.
pub const FORCE_DELETE_ANNOTATION: &str = "kubeocean.io/force-delete";

/// Whether `binding` is annotated `kubeocean.io/force-delete=true`.
pub fn force_delete(binding: &ClusterBinding) -> bool {
    binding
        .annotations()
        .get(FORCE_DELETE_ANNOTATION)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// What the manager learnt about the worker side of a deletion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkerDrain {
    /// Objects still in the mount namespace.
    Remaining(usize),
    /// The binding has no mount namespace: nothing can have been mapped.
    NothingMapped,
    /// The worker could not be asked; the cause.
    Unreachable(String),
}

/// What to do next with a binding being deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeletionStep {
    /// Keep waiting; the message says for what.
    Wait(String),
    /// Drained: remove the workloads and the finalizer.
    Finish,
    /// Forced past an unreachable worker: remove the virtual nodes, then finish.
    Force,
}

/// The next step, from the virtual nodes left, the worker side and the force annotation.
pub fn deletion_step(virtual_nodes: usize, worker: &WorkerDrain, force: bool) -> DeletionStep {
    match worker {
        WorkerDrain::Unreachable(_) if force => DeletionStep::Force,
        WorkerDrain::Unreachable(cause) => DeletionStep::Wait(format!(
            "the worker cluster is unreachable ({cause}), so the syncer cannot drain it; \
             annotate the binding {FORCE_DELETE_ANNOTATION}=true to delete it anyway \
             (objects in the worker are then left behind)"
        )),
        _ if virtual_nodes > 0 => DeletionStep::Wait(format!(
            "waiting for the syncer to drain {virtual_nodes} virtual node(s)"
        )),
        WorkerDrain::Remaining(n) if *n > 0 => DeletionStep::Wait(format!(
            "waiting for the syncer to remove {n} object(s) from the worker's mount namespace"
        )),
        WorkerDrain::Remaining(_) | WorkerDrain::NothingMapped => DeletionStep::Finish,
    }
}

fn binding_selector(binding: &str) -> ListParams {
    ListParams::default().labels(&format!("{}={binding}", labels::CLUSTER_BINDING))
}

/// Virtual nodes of `binding` left in the computing cluster.
pub async fn virtual_nodes_left(computing: &Client, binding: &str) -> Result<usize, kube::Error> {
    let nodes: Api<Node> = Api::all(computing.clone());
    Ok(nodes
        .list_metadata(&binding_selector(binding))
        .await?
        .items
        .len())
}

/// Removes the virtual nodes of `binding` without the syncer: strips their finalizers and
/// deletes them. Returns how many there were.
pub async fn force_remove_virtual_nodes(
    computing: &Client,
    binding: &str,
) -> Result<usize, kube::Error> {
    let nodes: Api<Node> = Api::all(computing.clone());
    let list = nodes.list_metadata(&binding_selector(binding)).await?;
    for node in &list.items {
        let name = node.name_any();
        if !node.finalizers().is_empty() {
            let patch = json!({"metadata": {"finalizers": null}});
            match nodes
                .patch_metadata(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {}
                Err(err) if is_not_found(&err) => continue,
                Err(e) => return Err(e),
            }
        }
        match nodes.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(err) if is_not_found(&err) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(list.items.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletion_step_table() {
        let unreachable = WorkerDrain::Unreachable("connection refused".into());
        for (vnodes, worker, force, want) in [
            (0, WorkerDrain::Remaining(0), false, "finish"),
            (0, WorkerDrain::NothingMapped, false, "finish"),
            (
                2,
                WorkerDrain::Remaining(0),
                false,
                "wait: 2 virtual node(s)",
            ),
            (
                2,
                WorkerDrain::NothingMapped,
                true,
                "wait: 2 virtual node(s)",
            ),
            (
                0,
                WorkerDrain::Remaining(3),
                false,
                "wait: remove 3 object(s)",
            ),
            (
                0,
                WorkerDrain::Remaining(3),
                true,
                "wait: remove 3 object(s)",
            ),
            (1, unreachable.clone(), false, "wait: connection refused"),
            (
                0,
                unreachable.clone(),
                false,
                "wait: kubeocean.io/force-delete=true",
            ),
            (1, unreachable.clone(), true, "force"),
        ] {
            let got = deletion_step(vnodes, &worker, force);
            match (want.strip_prefix("wait: "), &got) {
                (Some(fragment), DeletionStep::Wait(message)) => {
                    assert!(message.contains(fragment), "{message}");
                }
                (None, DeletionStep::Finish) => assert_eq!(want, "finish"),
                (None, DeletionStep::Force) => assert_eq!(want, "force"),
                _ => panic!("{vnodes} {worker:?} {force}: got {got:?}, want {want}"),
            }
        }
    }

    #[test]
    fn force_annotation_table() {
        for (value, want) in [
            (Some("true"), true),
            (Some("True"), true),
            (Some("yes"), false),
            (Some("false"), false),
            (None, false),
        ] {
            let mut b = ClusterBinding::new("b", Default::default());
            if let Some(v) = value {
                b.annotations_mut()
                    .insert(FORCE_DELETE_ANNOTATION.into(), v.into());
            }
            assert_eq!(force_delete(&b), want, "{value:?}");
        }
    }
}
