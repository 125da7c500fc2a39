//! Writing a virtual pod's status: the merge patch of what differs (and, with the mapping's
//! annotations, the reference in the same write). Shared by the PhysicalPod reconciler, the
//! unscheduled-pod check and the VirtualPod reconciler.

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use kube_kit::slim::Slim;
use serde_json::json;

use super::error::{Side, TopDownError, request};
use super::mapping::patch::merge_patch;
use super::state::TopDown;
use crate::syncer::context::Context;

/// The merge patch for pods/status that turns `current` status into `desired` and, with a
/// `reference` merge patch (`{"metadata": ...}`), records it in the same write; `None` when
/// there is nothing to write.
pub fn status_patch(
    current: Option<&PodStatus>,
    desired: &PodStatus,
    reference: Option<&serde_json::Value>,
) -> Option<serde_json::Value> {
    let to_value = |s: &PodStatus| serde_json::to_value(s).unwrap_or(serde_json::Value::Null);
    let old = current.map(to_value).unwrap_or_else(|| json!({}));
    let diff = merge_patch(&old, &to_value(desired));
    let mut patch = match reference {
        Some(reference) => reference.clone(),
        None if diff.is_none() => return None,
        None => json!({}),
    };
    if let (Some(diff), Some(map)) = (diff, patch.as_object_mut()) {
        map.insert("status".into(), diff);
    }
    Some(patch)
}

/// Writes `status` on virtual pod `pod` (a merge patch of what differs from the status the
/// store holds), with the `reference` annotations from
/// [`super::physical_pod::decide`] when given.
pub(crate) async fn write_status(
    ctx: &Context,
    td: &TopDown,
    pod: &Pod,
    status: &PodStatus,
    reference: Option<&serde_json::Value>,
) -> Result<(), TopDownError> {
    let key = kube_kit::controller::object_key(pod);
    let Some(patch) = status_patch(pod.status.as_ref(), status, reference) else {
        return Ok(());
    };
    // The answer is read without managedFields: nothing here needs them.
    let api: Api<Slim<Pod>> = Api::namespaced(
        ctx.computing.clone(),
        pod.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let patched = request(
        ctx.config.request_timeout,
        Side::Computing,
        "update the status of",
        "Pod",
        &key,
        api.patch_status(
            &pod.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        ),
    )
    .await?;
    td.remember_virtual_pod(patched.into_inner());
    Ok(())
}
