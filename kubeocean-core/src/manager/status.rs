//! A ClusterBinding's phase and conditions as a pure function of what the reconcile found.
//!
//! The syncer writes `Connected` and `SyncerReady` too (when it connects). To keep the two
//! writers from undoing each other, the manager replaces a condition only when the status
//! flips, or when the condition carries one of the manager's own reasons
//! ([`is_manager_reason`]); a `True` written by the syncer with its more specific reason
//! stays as it is.

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::templates::recorded_hash;
use crate::crd::{ClusterBindingPhase, cluster_binding_condition as ctype};
use kube_kit::conditions::{condition, upsert_condition};

/// Condition reasons the manager writes.
pub mod reason {
    /// The spec is invalid.
    pub const VALIDATION_FAILED: &str = "ValidationFailed";
    /// The worker cannot be reached with the binding's kubeconfig.
    pub const CONNECTIVITY_FAILED: &str = "ConnectivityFailed";
    /// The worker kubeconfig lacks permissions the syncer needs.
    pub const PERMISSION_DENIED: &str = "PermissionDenied";
    /// The binding's PriorityClass does not exist in the worker.
    pub const PRIORITY_CLASS_MISSING: &str = "PriorityClassMissing";
    /// The proxier workload could not be created or failed.
    pub const PROXIER_FAILED: &str = "ProxierFailed";
    /// The syncer workload could not be created or failed.
    pub const SYNCER_FAILED: &str = "SyncerFailed";
    /// The worker answers and grants every permission checked.
    pub const WORKER_REACHABLE: &str = "WorkerReachable";
    /// A workload is being created, updated or started.
    pub const PROGRESSING: &str = "Progressing";
    /// A Deployment has available replicas with the current template.
    pub const DEPLOYMENT_AVAILABLE: &str = "DeploymentAvailable";
    /// An embedded task is running in the manager.
    pub const TASK_RUNNING: &str = "TaskRunning";
    /// The proxier runs, but with a self-signed serving certificate: the cluster did not
    /// issue one (the message says why).
    pub const SELF_SIGNED_CERTIFICATE: &str = "SelfSignedCertificate";
    /// This manager runs no such workload (embedded mode without a proxier).
    pub const DISABLED: &str = "Disabled";
    /// Everything is in place.
    pub const READY: &str = "Ready";
    /// The binding is being deleted; the syncer drains first.
    pub const DELETING: &str = "Deleting";
    /// An older binding already has this binding's `clusterID`.
    pub const DUPLICATE_CLUSTER_ID: &str = "DuplicateClusterID";
}

const MANAGER_REASONS: [&str; 15] = [
    reason::VALIDATION_FAILED,
    reason::CONNECTIVITY_FAILED,
    reason::PERMISSION_DENIED,
    reason::PRIORITY_CLASS_MISSING,
    reason::PROXIER_FAILED,
    reason::SYNCER_FAILED,
    reason::WORKER_REACHABLE,
    reason::PROGRESSING,
    reason::DEPLOYMENT_AVAILABLE,
    reason::TASK_RUNNING,
    reason::SELF_SIGNED_CERTIFICATE,
    reason::DISABLED,
    reason::READY,
    reason::DELETING,
    reason::DUPLICATE_CLUSTER_ID,
];

/// Whether `reason` is one the manager writes (and may therefore overwrite).
pub fn is_manager_reason(reason: &str) -> bool {
    MANAGER_REASONS.contains(&reason)
}

/// Whether a reason reports a failure (Warning events, phase Failed).
pub fn is_failure_reason(reason: &str) -> bool {
    matches!(
        reason,
        reason::VALIDATION_FAILED
            | reason::CONNECTIVITY_FAILED
            | reason::PERMISSION_DENIED
            | reason::PRIORITY_CLASS_MISSING
            | reason::PROXIER_FAILED
            | reason::SYNCER_FAILED
            | reason::DUPLICATE_CLUSTER_ID
    )
}

/// How one workload (syncer or proxier) is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkloadState {
    /// Serving; the text says why the manager thinks so.
    Ready {
        /// Condition reason.
        reason: &'static str,
        /// Condition message.
        message: String,
    },
    /// Being created, updated or started.
    Progressing(String),
    /// Could not be created, or failed.
    Failed(String),
}

/// How a Deployment the manager keeps is doing: `Ready` once the controller has observed
/// the current generation, the pod template is the one the manager last applied (`hash`),
/// and at least one replica is available; `Failed` when it reports `ReplicaFailure` or has
/// exceeded its progress deadline; `Progressing` otherwise.
pub fn deployment_state(deployment: &Deployment, hash: &str) -> WorkloadState {
    let name = deployment.metadata.name.as_deref().unwrap_or_default();
    if recorded_hash(&deployment.metadata) != Some(hash) {
        return WorkloadState::Progressing(format!("Deployment {name} is being updated"));
    }
    let status = deployment.status.clone().unwrap_or_default();
    for c in status.conditions.iter().flatten() {
        let failed = (c.type_ == "ReplicaFailure" && c.status == "True")
            || (c.type_ == "Progressing"
                && c.status == "False"
                && c.reason.as_deref() == Some("ProgressDeadlineExceeded"));
        if failed {
            return WorkloadState::Failed(format!(
                "Deployment {name}: {}",
                c.message.as_deref().unwrap_or(c.type_.as_str())
            ));
        }
    }
    let observed = match (status.observed_generation, deployment.metadata.generation) {
        (Some(seen), Some(current)) => seen >= current,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if !observed {
        return WorkloadState::Progressing(format!(
            "Deployment {name} has not been rolled out yet"
        ));
    }
    let available = status.available_replicas.unwrap_or(0);
    let wanted = deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    if available >= 1 {
        WorkloadState::Ready {
            reason: reason::DEPLOYMENT_AVAILABLE,
            message: format!("Deployment {name} has {available}/{wanted} available replicas"),
        }
    } else {
        WorkloadState::Progressing(format!(
            "Deployment {name} has 0/{wanted} available replicas"
        ))
    }
}

/// What one reconcile of a live (not deleting) binding found, in the order it checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The spec is invalid: one message per problem.
    Invalid(Vec<String>),
    /// An older binding (`owner`) already has this `clusterID`: this one is refused.
    DuplicateClusterId {
        /// The shared `clusterID`.
        cluster_id: String,
        /// The binding that owns it.
        owner: String,
    },
    /// The worker could not be reached; the cause.
    Unreachable(String),
    /// The worker kubeconfig lacks permissions; what is missing.
    PermissionDenied(String),
    /// The binding's PriorityClass (named) does not exist in the worker.
    PriorityClassMissing(String),
    /// Connected; the workloads are in these states.
    Workloads {
        /// The syncer.
        syncer: WorkloadState,
        /// The proxier.
        proxier: WorkloadState,
    },
}

/// The status the manager wants: a phase (when it sets one) and conditions.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredStatus {
    /// The phase; `None` leaves it as it is.
    pub phase: Option<ClusterBindingPhase>,
    /// Conditions to upsert (see the module docs for the merge rule).
    pub conditions: Vec<Condition>,
}

fn workload_condition(
    type_: &str,
    state: &WorkloadState,
    failed_reason: &'static str,
    generation: Option<i64>,
    now: Timestamp,
) -> Condition {
    match state {
        WorkloadState::Ready { reason, message } => {
            condition(type_, true, reason, message.clone(), generation, now)
        }
        WorkloadState::Progressing(message) => condition(
            type_,
            false,
            reason::PROGRESSING,
            message.clone(),
            generation,
            now,
        ),
        WorkloadState::Failed(message) => condition(
            type_,
            false,
            failed_reason,
            message.clone(),
            generation,
            now,
        ),
    }
}

/// The phase and conditions for `outcome`.
pub fn desired_status(outcome: &Outcome, generation: Option<i64>, now: Timestamp) -> DesiredStatus {
    let failed = |reason: &str, message: String, extra: Option<Condition>| DesiredStatus {
        phase: Some(ClusterBindingPhase::Failed),
        conditions: extra
            .into_iter()
            .chain([condition(
                ctype::READY,
                false,
                reason,
                message,
                generation,
                now,
            )])
            .collect(),
    };
    match outcome {
        Outcome::Invalid(problems) => failed(
            reason::VALIDATION_FAILED,
            format!("invalid spec: {}", problems.join("; ")),
            None,
        ),
        Outcome::DuplicateClusterId { cluster_id, owner } => failed(
            reason::DUPLICATE_CLUSTER_ID,
            format!(
                "clusterID {cluster_id} is already used by ClusterBinding {owner} (created \
                 earlier); this binding is not synced: give it another clusterID or delete it"
            ),
            None,
        ),
        Outcome::Unreachable(cause) => failed(
            reason::CONNECTIVITY_FAILED,
            cause.clone(),
            Some(condition(
                ctype::CONNECTED,
                false,
                reason::CONNECTIVITY_FAILED,
                cause.clone(),
                generation,
                now,
            )),
        ),
        Outcome::PermissionDenied(missing) => {
            let message = format!("the worker kubeconfig lacks permissions: {missing}");
            failed(
                reason::PERMISSION_DENIED,
                message.clone(),
                Some(condition(
                    ctype::CONNECTED,
                    false,
                    reason::PERMISSION_DENIED,
                    message,
                    generation,
                    now,
                )),
            )
        }
        Outcome::PriorityClassMissing(class) => failed(
            reason::PRIORITY_CLASS_MISSING,
            format!(
                "PriorityClass {class} does not exist in the worker cluster, so no physical pod \
                 can be created; the kubeocean-worker chart creates {}",
                crate::crd::DEFAULT_POD_PRIORITY_CLASS_NAME
            ),
            None,
        ),
        Outcome::Workloads { syncer, proxier } => {
            let connected = condition(
                ctype::CONNECTED,
                true,
                reason::WORKER_REACHABLE,
                "the worker cluster answers and grants the syncer's permissions",
                generation,
                now,
            );
            let syncer_c = workload_condition(
                ctype::SYNCER_READY,
                syncer,
                reason::SYNCER_FAILED,
                generation,
                now,
            );
            let proxier_c = workload_condition(
                ctype::PROXIER_READY,
                proxier,
                reason::PROXIER_FAILED,
                generation,
                now,
            );
            let (phase, ready) = match (syncer, proxier) {
                (WorkloadState::Failed(m), _) => (
                    ClusterBindingPhase::Failed,
                    condition(
                        ctype::READY,
                        false,
                        reason::SYNCER_FAILED,
                        m.clone(),
                        generation,
                        now,
                    ),
                ),
                (_, WorkloadState::Failed(m)) => (
                    ClusterBindingPhase::Failed,
                    condition(
                        ctype::READY,
                        false,
                        reason::PROXIER_FAILED,
                        m.clone(),
                        generation,
                        now,
                    ),
                ),
                (WorkloadState::Progressing(m), _) | (_, WorkloadState::Progressing(m)) => (
                    ClusterBindingPhase::Pending,
                    condition(
                        ctype::READY,
                        false,
                        reason::PROGRESSING,
                        m.clone(),
                        generation,
                        now,
                    ),
                ),
                _ => (
                    ClusterBindingPhase::Ready,
                    condition(
                        ctype::READY,
                        true,
                        reason::READY,
                        "the worker is connected and the syncer and proxier are running",
                        generation,
                        now,
                    ),
                ),
            };
            DesiredStatus {
                phase: Some(phase),
                conditions: vec![connected, syncer_c, proxier_c, ready],
            }
        }
    }
}

/// Why a deletion cannot go on by itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeletionBlocker {
    /// Nothing: the syncer is draining.
    None,
    /// The worker kubeconfig lacks permissions the drain needs; what is missing.
    PermissionDenied(String),
}

/// The status of a binding being deleted: phase `Deleting`, `Ready=False` with reason
/// `Deleting` and what the deletion waits for — or reason `PermissionDenied` naming what the
/// worker kubeconfig lacks when the syncer cannot finish the drain without it.
pub fn deleting_status(
    message: String,
    blocker: &DeletionBlocker,
    generation: Option<i64>,
    now: Timestamp,
) -> DesiredStatus {
    let (reason, message) = match blocker {
        DeletionBlocker::None => (reason::DELETING, message),
        DeletionBlocker::PermissionDenied(missing) => (
            reason::PERMISSION_DENIED,
            format!(
                "{message}, but the worker kubeconfig lacks permissions the syncer needs for \
                 that: {missing}"
            ),
        ),
    };
    DesiredStatus {
        phase: Some(ClusterBindingPhase::Deleting),
        conditions: vec![condition(
            ctype::READY,
            false,
            reason,
            message,
            generation,
            now,
        )],
    }
}

/// Upserts `wanted` into `conditions` by the merge rule of the module docs; returns the
/// conditions that changed.
pub fn merge_conditions(conditions: &mut Vec<Condition>, wanted: Vec<Condition>) -> Vec<Condition> {
    let mut changed = Vec::new();
    for new in wanted {
        let replace = match conditions.iter().find(|c| c.type_ == new.type_) {
            Some(old) => old.status != new.status || is_manager_reason(&old.reason),
            None => true,
        };
        if replace && upsert_condition(conditions, new.clone()) {
            changed.push(new);
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn deployment(value: serde_json::Value) -> Deployment {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn deployment_state_table() {
        let meta = json!({"name": "s", "generation": 2, "annotations": {"kubeocean.io/template-hash": "h1"}});
        let ready = |s: &WorkloadState| matches!(s, WorkloadState::Ready { .. });
        let progressing = |s: &WorkloadState| matches!(s, WorkloadState::Progressing(_));
        let failed = |s: &WorkloadState| matches!(s, WorkloadState::Failed(_));
        type Check = fn(&WorkloadState) -> bool;
        let cases: Vec<(&str, serde_json::Value, &str, Check)> = vec![
            (
                "available",
                json!({"metadata": meta, "spec": {"replicas": 1, "selector": {}, "template": {}},
                       "status": {"observedGeneration": 2, "availableReplicas": 1}}),
                "h1",
                ready,
            ),
            (
                "old hash",
                json!({"metadata": meta, "status": {"observedGeneration": 2, "availableReplicas": 1}}),
                "h2",
                progressing,
            ),
            (
                "generation not observed",
                json!({"metadata": meta, "status": {"observedGeneration": 1, "availableReplicas": 1}}),
                "h1",
                progressing,
            ),
            (
                "no status yet",
                json!({"metadata": meta}),
                "h1",
                progressing,
            ),
            (
                "none available",
                json!({"metadata": meta, "status": {"observedGeneration": 2, "availableReplicas": 0}}),
                "h1",
                progressing,
            ),
            (
                "deadline exceeded",
                json!({"metadata": meta, "status": {"observedGeneration": 2, "conditions": [
                    {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                     "message": "ReplicaSet s-1 has timed out progressing"}]}}),
                "h1",
                failed,
            ),
            (
                "replica failure",
                json!({"metadata": meta, "status": {"observedGeneration": 2, "conditions": [
                    {"type": "ReplicaFailure", "status": "True", "message": "pods forbidden"}]}}),
                "h1",
                failed,
            ),
        ];
        for (name, value, hash, check) in cases {
            let state = deployment_state(&deployment(value), hash);
            assert!(check(&state), "{name}: {state:?}");
        }
    }

    fn find<'a>(s: &'a DesiredStatus, t: &str) -> &'a Condition {
        s.conditions.iter().find(|c| c.type_ == t).unwrap()
    }

    #[test]
    fn desired_status_table() {
        let ready = WorkloadState::Ready {
            reason: reason::DEPLOYMENT_AVAILABLE,
            message: "up".into(),
        };
        let cases = vec![
            (
                Outcome::Invalid(vec!["a".into(), "b".into()]),
                ClusterBindingPhase::Failed,
                reason::VALIDATION_FAILED,
                "invalid spec: a; b",
            ),
            (
                Outcome::Unreachable("connection refused".into()),
                ClusterBindingPhase::Failed,
                reason::CONNECTIVITY_FAILED,
                "connection refused",
            ),
            (
                Outcome::PermissionDenied("nodes: list".into()),
                ClusterBindingPhase::Failed,
                reason::PERMISSION_DENIED,
                "the worker kubeconfig lacks permissions: nodes: list",
            ),
            (
                Outcome::PriorityClassMissing("low".into()),
                ClusterBindingPhase::Failed,
                reason::PRIORITY_CLASS_MISSING,
                "PriorityClass low does not exist in the worker cluster, so no physical pod \
                 can be created; the kubeocean-worker chart creates kubeocean-default",
            ),
            (
                Outcome::Workloads {
                    syncer: ready.clone(),
                    proxier: ready.clone(),
                },
                ClusterBindingPhase::Ready,
                reason::READY,
                "the worker is connected and the syncer and proxier are running",
            ),
            (
                Outcome::Workloads {
                    syncer: WorkloadState::Progressing("rolling".into()),
                    proxier: ready.clone(),
                },
                ClusterBindingPhase::Pending,
                reason::PROGRESSING,
                "rolling",
            ),
            (
                Outcome::Workloads {
                    syncer: WorkloadState::Progressing("rolling".into()),
                    proxier: WorkloadState::Failed("no cert".into()),
                },
                ClusterBindingPhase::Failed,
                reason::PROXIER_FAILED,
                "no cert",
            ),
            (
                Outcome::Workloads {
                    syncer: WorkloadState::Failed("forbidden".into()),
                    proxier: WorkloadState::Failed("no cert".into()),
                },
                ClusterBindingPhase::Failed,
                reason::SYNCER_FAILED,
                "forbidden",
            ),
        ];
        for (outcome, phase, ready_reason, message) in cases {
            let s = desired_status(&outcome, Some(3), now());
            assert_eq!(s.phase, Some(phase), "{outcome:?}");
            let r = find(&s, ctype::READY);
            assert_eq!(r.reason, ready_reason, "{outcome:?}");
            assert_eq!(r.message, message, "{outcome:?}");
            assert_eq!(r.status == "True", phase == ClusterBindingPhase::Ready);
            assert_eq!(r.observed_generation, Some(3));
        }
        let s = desired_status(&Outcome::Unreachable("x".into()), None, now());
        assert_eq!(find(&s, ctype::CONNECTED).status, "False");
        let s = desired_status(
            &Outcome::Workloads {
                syncer: ready.clone(),
                proxier: WorkloadState::Failed("f".into()),
            },
            None,
            now(),
        );
        assert_eq!(find(&s, ctype::CONNECTED).status, "True");
        assert_eq!(find(&s, ctype::SYNCER_READY).status, "True");
        assert_eq!(
            find(&s, ctype::PROXIER_READY).reason,
            reason::PROXIER_FAILED
        );
    }

    #[test]
    fn merge_keeps_the_syncers_conditions_unless_the_status_flips() {
        let c = |t: &str, status: bool, reason: &str, msg: &str| {
            condition(t, status, reason, msg, None, now())
        };
        let mut conditions = vec![
            c(ctype::SYNCER_READY, true, "Syncing", "syncing"),
            c(ctype::CONNECTED, false, "WorkerUnreachable", "refused"),
            c(ctype::READY, false, reason::PROGRESSING, "rolling"),
        ];
        let changed = merge_conditions(
            &mut conditions,
            vec![
                // Same status as the syncer's: kept.
                c(ctype::SYNCER_READY, true, reason::TASK_RUNNING, "running"),
                c(
                    ctype::CONNECTED,
                    false,
                    reason::CONNECTIVITY_FAILED,
                    "refused!",
                ),
                // A manager reason: replaced.
                c(ctype::READY, true, reason::READY, "ok"),
                // New: added.
                c(ctype::PROXIER_READY, true, reason::TASK_RUNNING, "serving"),
            ],
        );
        let types: Vec<&str> = changed.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, vec![ctype::READY, ctype::PROXIER_READY]);
        assert_eq!(conditions[0].reason, "Syncing");
        assert_eq!(conditions[1].reason, "WorkerUnreachable");
        // A flip replaces the syncer's condition.
        let changed = merge_conditions(
            &mut conditions,
            vec![c(ctype::CONNECTED, true, reason::WORKER_REACHABLE, "ok")],
        );
        assert_eq!(changed.len(), 1);
        assert_eq!(conditions[1].reason, reason::WORKER_REACHABLE);
        // Writing the same again changes nothing.
        let again = merge_conditions(
            &mut conditions,
            vec![c(ctype::CONNECTED, true, reason::WORKER_REACHABLE, "ok")],
        );
        assert!(again.is_empty());
    }

    #[test]
    fn deleting_status_table() {
        for (blocker, want_reason, fragments) in [
            (
                DeletionBlocker::None,
                reason::DELETING,
                vec!["waiting for the syncer to remove 1 object(s)"],
            ),
            (
                DeletionBlocker::PermissionDenied("pods in namespace m: deletecollection".into()),
                reason::PERMISSION_DENIED,
                vec![
                    "waiting for the syncer to remove 1 object(s)",
                    "lacks permissions",
                    "pods in namespace m: deletecollection",
                ],
            ),
        ] {
            let s = deleting_status(
                "waiting for the syncer to remove 1 object(s)".into(),
                &blocker,
                Some(2),
                now(),
            );
            assert_eq!(s.phase, Some(ClusterBindingPhase::Deleting), "{blocker:?}");
            let ready = find(&s, ctype::READY);
            assert_eq!(ready.status, "False");
            assert_eq!(ready.reason, want_reason, "{blocker:?}");
            for fragment in fragments {
                assert!(
                    ready.message.contains(fragment),
                    "{fragment} in {}",
                    ready.message
                );
            }
        }
    }

    #[test]
    fn reasons_are_classified() {
        for (r, manager, failure) in [
            (reason::CONNECTIVITY_FAILED, true, true),
            (reason::READY, true, false),
            (reason::DELETING, true, false),
            ("Syncing", false, false),
            ("WorkerUnreachable", false, false),
        ] {
            assert_eq!(
                (is_manager_reason(r), is_failure_reason(r)),
                (manager, failure),
                "{r}"
            );
        }
    }
}
