//! The PhysicalPod reconciler: the mapping is recorded on the virtual pod (the
//! `kubeocean.io/physical-pod-*` annotations), the physical pod's status flows up to it
//! (written only when it changes), and a physical pod with our label but no live virtual
//! owner is deleted (orphan collection). A physical pod that vanished is handled by the
//! VirtualPod reconciler (`PhysicalPodLost`).

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::{Api, ResourceExt};
use serde_json::json;
use tokio::time::Instant;

use super::error::{Side, TopDownError, request, request_opt};
use super::patch::merge_patch;
use super::session::TopDown;
use super::store::{object_key, pod_finished};
use super::virtual_pod::reference_patch;
use super::{back_reference, physical_pod_reference, virtual_pod_status};
use crate::bottomup::Context;

/// Name of this reconciler in metrics and logs.
pub const NAME: &str = "physical-pod";

/// What to do about a physical pod given what the stores say of its virtual owner.
#[derive(Clone, Debug, PartialEq)]
pub enum PhysicalAction {
    /// Bring the owner in step: record the mapping on it (when it lacks it) and write this
    /// status (when it differs). Both may be nothing to do.
    Sync {
        /// The annotations to record on the virtual pod, as a merge patch.
        reference: Option<serde_json::Value>,
        /// The virtual pod's new status.
        status: Option<Box<PodStatus>>,
    },
    /// The owner is not in the store: an orphan, unless the computing cluster says
    /// otherwise.
    CheckOrphan,
    /// No back-reference: not something this syncer can judge.
    Unknown,
}

impl PhysicalAction {
    /// Whether there is nothing to do.
    pub fn is_nothing(&self) -> bool {
        matches!(
            self,
            PhysicalAction::Sync {
                reference: None,
                status: None
            }
        )
    }
}

/// Decides about `physical` given `owner`, the virtual pod the stores hold under the
/// physical pod's back-reference.
pub fn decide(physical: &Pod, owner: Option<&Pod>) -> PhysicalAction {
    let back = back_reference(&physical.metadata);
    if back.namespace.is_none() || back.name.is_none() {
        return PhysicalAction::Unknown;
    }
    let Some(owner) = owner.filter(|o| back.uid.is_none() || o.metadata.uid == back.uid) else {
        return PhysicalAction::CheckOrphan;
    };
    let nothing = PhysicalAction::Sync {
        reference: None,
        status: None,
    };
    // Terminal phases are final in Kubernetes.
    if pod_finished(owner) {
        return nothing;
    }
    let reference = reference_patch(owner, &physical_pod_reference(physical));
    let current = owner.status.clone().unwrap_or_default();
    let status = physical
        .status
        .as_ref()
        .map(|s| virtual_pod_status(s, &current))
        .filter(|desired| *desired != current)
        .map(Box::new);
    PhysicalAction::Sync { reference, status }
}

/// Reconciles physical pod `name` of the mount namespace.
pub(crate) async fn reconcile(
    ctx: &Context,
    td: &TopDown,
    name: &str,
) -> Result<Option<Instant>, TopDownError> {
    let Some(physical) = td.physical_pod(name) else {
        return Ok(None);
    };
    let back = back_reference(&physical.metadata);
    let owner_key = object_key(
        back.namespace.as_deref().unwrap_or_default(),
        back.name.as_deref().unwrap_or_default(),
    );
    let owner = td.virtual_pod(&owner_key);
    match decide(&physical, owner.as_deref()) {
        PhysicalAction::Unknown => {
            tracing::warn!(physical = %td.physical_key(name), "labelled as ours but names no virtual pod; left alone");
            Ok(None)
        }
        PhysicalAction::CheckOrphan => {
            collect_orphan(ctx, td, &physical, &owner_key, back.uid.as_deref()).await
        }
        PhysicalAction::Sync { reference, status } => {
            let Some(mut owner) = owner.map(|o| (*o).clone()) else {
                return Ok(None);
            };
            if let Some(patch) = reference {
                owner = record_reference(ctx, td, &owner, &patch).await?;
            }
            if let Some(status) = status {
                write_status(ctx, td, &owner, &status).await?;
            }
            Ok(None)
        }
    }
}

/// Records the physical pod on virtual pod `pod` (the merge patch from [`decide`]); returns
/// the virtual pod as written.
async fn record_reference(
    ctx: &Context,
    td: &TopDown,
    pod: &Pod,
    patch: &serde_json::Value,
) -> Result<Pod, TopDownError> {
    let key = object_key(
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default(),
    );
    let api: Api<Pod> = Api::namespaced(
        ctx.computing.clone(),
        pod.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let patched = request(
        ctx.config.request_timeout,
        Side::Computing,
        "annotate",
        "Pod",
        &key,
        api.patch(
            &pod.name_any(),
            &PatchParams::default(),
            &Patch::Merge(patch),
        ),
    )
    .await?;
    td.remember_virtual_pod(patched.clone());
    Ok(patched)
}

/// Deletes a physical pod whose virtual owner is gone, after asking the computing cluster
/// (the store may be behind).
async fn collect_orphan(
    ctx: &Context,
    td: &TopDown,
    physical: &Pod,
    owner_key: &str,
    owner_uid: Option<&str>,
) -> Result<Option<Instant>, TopDownError> {
    let timeout = ctx.config.request_timeout;
    let (namespace, name) = owner_key.split_once('/').unwrap_or(("", owner_key));
    let virtual_pods: Api<Pod> = Api::namespaced(ctx.computing.clone(), namespace);
    let owner = request_opt(
        timeout,
        Side::Computing,
        "get",
        "Pod",
        owner_key,
        virtual_pods.get(name),
    )
    .await?;
    if let Some(owner) = owner
        && owner_uid.is_none_or(|uid| owner.metadata.uid.as_deref() == Some(uid))
    {
        td.remember_virtual_pod(owner);
        return Ok(Some(Instant::now() + ctx.config.retry_interval));
    }
    let physical_name = physical.name_any();
    let physical_key = td.physical_key(&physical_name);
    let api: Api<Pod> = Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: physical.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    if physical.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    match request(
        timeout,
        Side::Worker,
        "delete",
        "Pod",
        &physical_key,
        api.delete(&physical_name, &params),
    )
    .await
    {
        Ok(_) => {
            tracing::info!(physical = %physical_key, owner = %owner_key, "orphaned physical pod deleted");
            Ok(None)
        }
        Err(err) if matches!(err.code(), Some(404 | 409)) => Ok(None),
        Err(err) => Err(err),
    }
}

/// Writes `status` on virtual pod `pod` (a merge patch of what differs from the status the
/// store holds).
pub(crate) async fn write_status(
    ctx: &Context,
    td: &TopDown,
    pod: &Pod,
    status: &PodStatus,
) -> Result<(), TopDownError> {
    let key = object_key(
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default(),
    );
    let to_value = |s: &PodStatus| serde_json::to_value(s).unwrap_or(serde_json::Value::Null);
    let old = to_value(&pod.status.clone().unwrap_or_default());
    let Some(diff) = merge_patch(&old, &to_value(status)) else {
        return Ok(());
    };
    let api: Api<Pod> = Api::namespaced(
        ctx.computing.clone(),
        pod.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let patch = json!({ "status": diff });
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
    td.remember_virtual_pod(patched);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels;

    fn physical(uid: &str, phase: Option<&str>) -> Pod {
        let status = phase.map(|p| json!({ "phase": p, "podIP": "10.1.0.5" }));
        serde_json::from_value(json!({
            "metadata": { "name": "web-x", "namespace": "w", "uid": "p-uid", "annotations": {
                labels::VIRTUAL_POD_NAMESPACE: "ns", labels::VIRTUAL_POD_NAME: "web",
                labels::VIRTUAL_POD_UID: uid } },
            "status": status,
        }))
        .unwrap()
    }

    fn owner(uid: &str, phase: &str, ip: Option<&str>, recorded: bool) -> Pod {
        let annotations = recorded.then(|| {
            json!({ labels::PHYSICAL_POD_NAMESPACE: "w", labels::PHYSICAL_POD_NAME: "web-x",
                labels::PHYSICAL_POD_UID: "p-uid" })
        });
        serde_json::from_value(json!({
            "metadata": { "name": "web", "namespace": "ns", "uid": uid, "annotations": annotations },
            "status": { "phase": phase, "podIP": ip },
        }))
        .unwrap()
    }

    #[test]
    fn decisions() {
        let no_back: Pod = serde_json::from_value(json!({ "metadata": { "name": "x" } })).unwrap();
        let running = owner("u1", "Running", Some("10.1.0.5"), true);
        let pending = owner("u1", "Pending", None, true);
        let unrecorded = owner("u1", "Running", Some("10.1.0.5"), false);
        let failed = owner("u1", "Failed", None, false);
        let other_uid = owner("u2", "Running", None, true);
        // (case, physical, owner, want: "unknown" | "orphan" | "nothing" | "record" |
        // "status" | "record+status")
        let table: [(&str, Pod, Option<&Pod>, &str); 8] = [
            ("no back-reference", no_back, None, "unknown"),
            (
                "owner missing",
                physical("u1", Some("Running")),
                None,
                "orphan",
            ),
            (
                "owner replaced",
                physical("u1", Some("Running")),
                Some(&other_uid),
                "orphan",
            ),
            (
                "in step",
                physical("u1", Some("Running")),
                Some(&running),
                "nothing",
            ),
            (
                "no status yet",
                physical("u1", None),
                Some(&pending),
                "nothing",
            ),
            (
                "owner finished",
                physical("u1", Some("Running")),
                Some(&failed),
                "nothing",
            ),
            (
                "status differs",
                physical("u1", Some("Running")),
                Some(&pending),
                "status",
            ),
            (
                "mapping not recorded",
                physical("u1", Some("Running")),
                Some(&unrecorded),
                "record",
            ),
        ];
        for (case, physical, owner, want) in table {
            let got = match decide(&physical, owner) {
                action if action.is_nothing() => "nothing".to_owned(),
                PhysicalAction::Sync { reference, status } => {
                    let mut parts = Vec::new();
                    if let Some(patch) = reference {
                        let annotations = &patch["metadata"]["annotations"];
                        assert_eq!(annotations[labels::PHYSICAL_POD_UID], "p-uid", "{case}");
                        assert_eq!(annotations[labels::PHYSICAL_POD_NAMESPACE], "w", "{case}");
                        parts.push("record");
                    }
                    if let Some(status) = status {
                        assert_eq!(status.phase.as_deref(), Some("Running"), "{case}");
                        assert_eq!(status.pod_ip.as_deref(), Some("10.1.0.5"), "{case}");
                        parts.push("status");
                    }
                    parts.join("+")
                }
                PhysicalAction::CheckOrphan => "orphan".to_owned(),
                PhysicalAction::Unknown => "unknown".to_owned(),
            };
            assert_eq!(got, want, "{case}");
        }
    }
}
