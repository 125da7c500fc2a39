//! The virtual pods of a virtual node, deleted as a kubelet would: gracefully while their
//! physical pod lives (that side finishes the deletion), at once otherwise. Used when a
//! virtual node is removed ([`super::physical_node`]) and on forced reclaim
//! ([`super::reclaim`]).

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, ResourceExt};
use kube_kit::client::ignore_not_found;

use crate::labels;
use crate::syncer::context::Context;
use crate::syncer::error::SyncError;

/// Deletes the virtual pods bound to `vnode`. Pods whose physical pod is gone (or that never
/// had one) are deleted at once, as a kubelet does for pods it no longer runs; the others
/// are deleted gracefully and their physical side finishes first. Returns whether none is
/// left.
pub(crate) async fn delete_virtual_pods(ctx: &Context, vnode: &str) -> Result<bool, SyncError> {
    let api: Api<Pod> = Api::all(ctx.computing.clone());
    let fail = |action, source| SyncError::VirtualPods {
        action,
        node: vnode.to_owned(),
        source,
    };
    let pods = api
        .list(&ListParams::default().fields(&format!("spec.nodeName={vnode}")))
        .await
        .map_err(|e| fail("list", e))?;
    if pods.items.is_empty() {
        return Ok(true);
    }
    for pod in &pods.items {
        if pod.metadata.deletion_timestamp.is_some() && physical_pod_alive(ctx, pod) {
            continue;
        }
        delete_virtual_pod(ctx, pod)
            .await
            .map_err(|e| fail("delete", e))?;
    }
    Ok(false)
}

/// Whether the physical pod of a virtual pod still exists in the worker.
fn physical_pod_alive(ctx: &Context, pod: &Pod) -> bool {
    let annotations = pod.annotations();
    match (
        annotations.get(labels::PHYSICAL_POD_NAMESPACE),
        annotations.get(labels::PHYSICAL_POD_NAME),
    ) {
        (Some(ns), Some(name)) => ctx.worker_index().has_own_pod(ns, name),
        _ => false,
    }
}

/// Deletes a virtual pod: gracefully while its physical pod lives (that side finishes the
/// deletion), at once otherwise, as a kubelet does for pods it does not run.
pub(crate) async fn delete_virtual_pod(ctx: &Context, pod: &Pod) -> Result<(), kube::Error> {
    let params = if physical_pod_alive(ctx, pod) {
        DeleteParams::default()
    } else {
        DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        }
    };
    let api: Api<Pod> =
        Api::namespaced(ctx.computing.clone(), &pod.namespace().unwrap_or_default());
    ignore_not_found(api.delete(&pod.name_any(), &params).await).map(drop)
}
