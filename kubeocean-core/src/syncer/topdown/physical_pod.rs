//! The PhysicalPod reconciler: the mapping is recorded on the virtual pod (the
//! `kubeocean.io/physical-pod-*` annotations), the physical pod's status flows up to it
//! (written only when it changes), and a physical pod with our label but no live virtual
//! owner is deleted (orphan collection). A physical pod that vanished is handled by the
//! VirtualPod reconciler (`PhysicalPodLost`).

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kube::api::{DeleteParams, Preconditions};
use kube::{Api, ResourceExt};
use tokio::time::Instant;

use super::error::{Side, TopDownError, request, request_opt};
use super::mapping::{
    back_reference, gate_readiness, physical_pod_reference, reference_patch, virtual_pod_status,
};
pub use super::pod_status::status_patch;
use super::pod_status::write_status;
use super::state::TopDown;
use super::store::{object_key, pod_finished};
use crate::syncer::context::Context;

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
    /// The mapping is all there is to record, and the physical pod has just been created:
    /// its first status change (scheduled, started) follows within moments and carries the
    /// mapping up in the same write. Look again after this long at the latest.
    Settle(std::time::Duration),
    /// No back-reference: not something this syncer can judge.
    Unknown,
}

/// How long a new physical pod may wait for its first status change before its mapping is
/// recorded on the virtual pod without one.
pub const PHYSICAL_POD_SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// How long physical pod `pod`, not started yet, may still settle at `now`: until
/// [`PHYSICAL_POD_SETTLE`] after its creation. `None` once started or settled, and when its
/// creation time is unknown or ahead of `now` by more than the settle time (clock skew
/// between the clusters must not hold the write back for long).
pub fn settle_left(pod: &Pod, now: Timestamp) -> Option<std::time::Duration> {
    let status = pod.status.as_ref();
    let started = status.is_some_and(|s| s.start_time.is_some())
        || status.and_then(|s| s.phase.as_deref()).unwrap_or("Pending") != "Pending";
    if started {
        return None;
    }
    let created = pod.metadata.creation_timestamp.as_ref()?.0;
    let settle = SignedDuration::try_from(PHYSICAL_POD_SETTLE).ok()?;
    let age = now.duration_since(created);
    if age >= settle || age < -settle {
        return None;
    }
    std::time::Duration::try_from(settle - age.max(SignedDuration::ZERO)).ok()
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

/// Decides about `physical` at `now` given `owner`, the virtual pod the stores hold under
/// the physical pod's back-reference.
pub fn decide(physical: &Pod, owner: Option<&Pod>, now: Timestamp) -> PhysicalAction {
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
        .map(|s| {
            let mut desired = virtual_pod_status(s, &current);
            let gates = owner
                .spec
                .as_ref()
                .and_then(|s| s.readiness_gates.as_deref());
            gate_readiness(&mut desired, gates.unwrap_or_default());
            desired
        })
        .filter(|desired| *desired != current)
        .map(Box::new);
    if reference.is_some()
        && status.is_none()
        && let Some(left) = settle_left(physical, now)
    {
        return PhysicalAction::Settle(left);
    }
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
    let deadline = match super::unscheduled::check(ctx, td, &physical, owner.as_deref()).await? {
        super::unscheduled::Check::Done => return Ok(None),
        super::unscheduled::Check::Until(at) => Some(at),
        super::unscheduled::Check::Continue => None,
    };
    let next = decide_and_act(ctx, td, name, &physical, owner, &owner_key).await?;
    Ok(match (next, deadline) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    })
}

/// The rest of [`reconcile`]: what [`decide`] says.
async fn decide_and_act(
    ctx: &Context,
    td: &TopDown,
    name: &str,
    physical: &Pod,
    owner: Option<std::sync::Arc<Pod>>,
    owner_key: &str,
) -> Result<Option<Instant>, TopDownError> {
    let back = back_reference(&physical.metadata);
    match decide(physical, owner.as_deref(), ctx.config.clock.now()) {
        PhysicalAction::Settle(left) => Ok(Some(Instant::now() + left)),
        PhysicalAction::Unknown => {
            tracing::warn!(physical = %td.physical_key(name), "labelled as ours but names no virtual pod; left alone");
            Ok(None)
        }
        PhysicalAction::CheckOrphan => {
            collect_orphan(ctx, td, physical, owner_key, back.uid.as_deref()).await
        }
        PhysicalAction::Sync { reference, status } => {
            let Some(owner) = owner else {
                return Ok(None);
            };
            // One write records both: pods/status keeps annotation changes, as
            // kube-apiserver's pod status strategy does.
            let unset = PodStatus::default();
            let desired = status
                .as_deref()
                .or(owner.status.as_ref())
                .unwrap_or(&unset);
            write_status(ctx, td, &owner, desired, reference.as_ref()).await?;
            Ok(None)
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels;
    use serde_json::json;

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
            let got = match decide(&physical, owner, Timestamp::UNIX_EPOCH) {
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
                PhysicalAction::Settle(_) => "settle".to_owned(),
                PhysicalAction::Unknown => "unknown".to_owned(),
            };
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn new_physical_pods_settle_before_the_mapping_is_recorded_alone() {
        let now: Timestamp = "2026-01-01T00:00:10Z".parse().unwrap();
        let pod = |created: Option<&str>, status: serde_json::Value| -> Pod {
            serde_json::from_value(json!({
                "metadata": { "name": "p", "creationTimestamp": created },
                "status": status,
            }))
            .unwrap()
        };
        let pending = json!({ "phase": "Pending" });
        let secs = std::time::Duration::from_secs;
        let table = [
            (
                "just created",
                pod(Some("2026-01-01T00:00:10Z"), pending.clone()),
                Some(secs(2)),
            ),
            (
                "a second old",
                pod(Some("2026-01-01T00:00:09Z"), pending.clone()),
                Some(secs(1)),
            ),
            (
                "settled",
                pod(Some("2026-01-01T00:00:08Z"), pending.clone()),
                None,
            ),
            (
                "no status yet",
                pod(Some("2026-01-01T00:00:10Z"), json!(null)),
                Some(secs(2)),
            ),
            (
                "slightly ahead",
                pod(Some("2026-01-01T00:00:11Z"), pending.clone()),
                Some(secs(2)),
            ),
            (
                "far ahead (skew)",
                pod(Some("2026-01-01T00:00:13Z"), pending.clone()),
                None,
            ),
            ("unknown creation", pod(None, pending.clone()), None),
            (
                "started",
                pod(
                    Some("2026-01-01T00:00:10Z"),
                    json!({ "phase": "Pending", "startTime": "2026-01-01T00:00:10Z" }),
                ),
                None,
            ),
            (
                "running",
                pod(Some("2026-01-01T00:00:10Z"), json!({ "phase": "Running" })),
                None,
            ),
        ];
        for (case, pod, want) in table {
            assert_eq!(settle_left(&pod, now), want, "{case}");
        }

        // Only a mapping to record, on a fresh pod: settle; with a status to write: both now.
        let mut fresh = physical("u1", Some("Pending"));
        fresh.metadata.creation_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
        if let Some(status) = fresh.status.as_mut() {
            status.pod_ip = None;
        }
        let mut unrecorded = owner("u1", "Pending", None, false);
        assert_eq!(
            decide(&fresh, Some(&unrecorded), now),
            PhysicalAction::Settle(secs(2))
        );
        let later = now + SignedDuration::from_secs(2);
        assert!(matches!(
            decide(&fresh, Some(&unrecorded), later),
            PhysicalAction::Sync {
                reference: Some(_),
                status: None
            }
        ));
        unrecorded.status = None;
        assert!(matches!(
            decide(&fresh, Some(&unrecorded), now),
            PhysicalAction::Sync {
                reference: Some(_),
                status: Some(_)
            }
        ));
    }

    #[test]
    fn status_patches_carry_the_reference_in_the_same_write() {
        let status = |phase: &str| -> PodStatus {
            serde_json::from_value(json!({ "phase": phase })).unwrap()
        };
        let reference = json!({ "metadata": { "annotations": { "a": "b" } } });
        let table = [
            (
                "same status, nothing to record",
                Some(status("Pending")),
                status("Pending"),
                None,
                None,
            ),
            (
                "same status, a reference",
                Some(status("Pending")),
                status("Pending"),
                Some(&reference),
                Some(json!({ "metadata": { "annotations": { "a": "b" } } })),
            ),
            (
                "no status yet",
                None,
                status("Pending"),
                None,
                Some(json!({ "status": { "phase": "Pending" } })),
            ),
            (
                "status and reference",
                Some(status("Pending")),
                status("Running"),
                Some(&reference),
                Some(json!({ "metadata": { "annotations": { "a": "b" } },
                    "status": { "phase": "Running" } })),
            ),
        ];
        for (case, current, desired, reference, want) in table {
            assert_eq!(
                status_patch(current.as_ref(), &desired, reference),
                want,
                "{case}"
            );
        }
    }
}
