//! The ResourceLeasingPolicy reconciler: validate each policy of this binding and write its
//! status (`phase` Active/Inactive/Failed, conditions `Valid` and `Active` with reasons,
//! `activeTimeWindow`, `lastAppliedTime`), then look again exactly at its next window edge.
//! Nodes are re-evaluated by the PhysicalNode reconciler, which the policy watch queues.
//! Upstream Kubeocean's policy finalizer is released from this binding's policies, and from
//! any policy being deleted.

use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use kube_kit::client::is_not_found;
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::crd::{
    ResourceLeasingPolicy, ResourceLeasingPolicyPhase, ResourceLeasingPolicyStatus,
    leasing_policy_condition,
};
use crate::leasing::{Schedule, validate_policy};
use crate::syncer::context::Context;
use crate::syncer::error::SyncError;
use crate::syncer::queue::FailureCounts;
use crate::syncer::queue::WorkQueue;
use crate::syncer::upstream::set_finalizers;
use crate::syncer::worker;
use crate::upgrade::{UPSTREAM_POLICY_FINALIZER, without_finalizer};
use kube_kit::conditions::{condition, upsert_condition};

/// Condition reasons written on policies.
pub mod reason {
    /// The spec passed validation.
    pub const VALID: &str = "Valid";
    /// The spec failed validation; the message lists every problem.
    pub const VALIDATION_FAILED: &str = "ValidationFailed";
    /// Inside one of the time windows (or no windows).
    pub const IN_TIME_WINDOW: &str = "InTimeWindow";
    /// Outside every time window.
    pub const OUT_OF_TIME_WINDOW: &str = "OutOfTimeWindow";
    /// Not evaluated because the policy is invalid.
    pub const INVALID: &str = "InvalidPolicy";
    /// The ClusterBinding the policy names is being deleted or gone: nothing is lent.
    pub const BINDING_GONE: &str = "BindingGone";
}

/// The status of a policy whose ClusterBinding (`binding`) is being deleted: `Inactive`, and
/// `Active=False` with reason [`reason::BINDING_GONE`], whatever its windows say (its nodes
/// are drained and no longer lent); the `Valid` condition as [`desired_status`] has it.
pub fn binding_gone_status(
    policy: &ResourceLeasingPolicy,
    current: Option<&ResourceLeasingPolicyStatus>,
    binding: &str,
    now: Timestamp,
) -> ResourceLeasingPolicyStatus {
    let (mut status, _) = desired_status(policy, current, now);
    if status.phase != Some(ResourceLeasingPolicyPhase::Failed) {
        status.last_applied_time = current
            .filter(|c| c.phase == Some(ResourceLeasingPolicyPhase::Inactive))
            .and_then(|c| c.last_applied_time.clone())
            .or(Some(Time(now)));
        status.phase = Some(ResourceLeasingPolicyPhase::Inactive);
        status.active_time_window = Some(false);
    }
    // From the stored condition, so that its transition time stays once written.
    if let Some(previous) = current.and_then(|c| {
        c.conditions
            .iter()
            .find(|c| c.type_ == leasing_policy_condition::ACTIVE)
    }) && let Some(slot) = status
        .conditions
        .iter_mut()
        .find(|c| c.type_ == leasing_policy_condition::ACTIVE)
    {
        *slot = previous.clone();
    }
    let active = condition(
        leasing_policy_condition::ACTIVE,
        false,
        reason::BINDING_GONE,
        format!("ClusterBinding {binding} is being deleted or no longer exists: nothing is lent"),
        policy.metadata.generation,
        now,
    );
    upsert_condition(&mut status.conditions, active);
    status
}

/// The status a policy should have at `now`, and the next instant it can change.
/// `lastAppliedTime` is taken from `current` unless the phase changes.
pub fn desired_status(
    policy: &ResourceLeasingPolicy,
    current: Option<&ResourceLeasingPolicyStatus>,
    now: Timestamp,
) -> (ResourceLeasingPolicyStatus, Option<Timestamp>) {
    let generation = policy.metadata.generation;
    let mut status = current.cloned().unwrap_or_default();
    let (phase, valid, active, active_window, next) =
        match validate_policy(policy).and_then(|()| Schedule::parse(&policy.spec)) {
            Err(problems) => (
                ResourceLeasingPolicyPhase::Failed,
                condition(
                    leasing_policy_condition::VALID,
                    false,
                    reason::VALIDATION_FAILED,
                    format!("policy is not applied: {}", problems.join("; ")),
                    generation,
                    now,
                ),
                condition(
                    leasing_policy_condition::ACTIVE,
                    false,
                    reason::INVALID,
                    "the policy is invalid",
                    generation,
                    now,
                ),
                None,
                None,
            ),
            Ok(schedule) => {
                let state = schedule.state(now);
                let (phase, why, message) = if state.in_window {
                    (
                        ResourceLeasingPolicyPhase::Active,
                        reason::IN_TIME_WINDOW,
                        "inside a time window",
                    )
                } else {
                    (
                        ResourceLeasingPolicyPhase::Inactive,
                        reason::OUT_OF_TIME_WINDOW,
                        "outside every time window",
                    )
                };
                (
                    phase,
                    condition(
                        leasing_policy_condition::VALID,
                        true,
                        reason::VALID,
                        "the policy is valid",
                        generation,
                        now,
                    ),
                    condition(
                        leasing_policy_condition::ACTIVE,
                        state.in_window,
                        why,
                        message,
                        generation,
                        now,
                    ),
                    Some(state.in_window),
                    state.next_change,
                )
            }
        };
    if status.phase != Some(phase) || status.last_applied_time.is_none() {
        status.last_applied_time = Some(Time(now));
    }
    status.phase = Some(phase);
    status.active_time_window = active_window;
    upsert_condition(&mut status.conditions, valid);
    upsert_condition(&mut status.conditions, active);
    (status, next)
}

/// Name of this reconciler in metrics and logs.
pub const NAME: &str = "leasing-policy";

/// Takes policy names off the queue and reconciles them until `token` is cancelled.
pub async fn run_worker(ctx: Arc<Context>, token: CancellationToken) {
    worker::run(ctx, Policies, token).await;
}

/// The policy status reconciler, for the worker loop.
struct Policies;

impl worker::Reconciler for Policies {
    type Error = SyncError;

    fn name(&self) -> &'static str {
        NAME
    }

    fn queue<'a>(&'a self, ctx: &'a Context) -> &'a WorkQueue {
        &ctx.policies
    }

    fn failures<'a>(&'a self, ctx: &'a Context) -> &'a FailureCounts {
        &ctx.policy_failures
    }

    async fn reconcile(&self, ctx: &Context, key: &str) -> Result<Option<Instant>, SyncError> {
        reconcile(ctx, key).await
    }

    /// None: policies live in the worker cluster, Events are recorded in the computing one
    /// (a failed status write is in the logs and the `reason` metric).
    fn failure_target(&self, _ctx: &Context, _key: &str) -> Option<ObjectReference> {
        None
    }
}

/// Reconciles the status of policy `name`; returns when to look again.
pub async fn reconcile(ctx: &Context, name: &str) -> Result<Option<Instant>, SyncError> {
    let Some(policy) = ctx.worker_index().policy(name) else {
        return Ok(None);
    };
    if policy.metadata.deletion_timestamp.is_some() {
        // Whichever binding it was for: nothing else would let it go.
        release_upstream_finalizer(ctx, &policy).await?;
        return Ok(None);
    }
    if policy.spec.cluster != ctx.config.binding_name
        || policy.metadata.deletion_timestamp.is_some()
    {
        return Ok(None);
    }
    let now = ctx.config.clock.now();
    let binding_live = ctx
        .computing_index()
        .binding()
        .is_some_and(|b| b.metadata.deletion_timestamp.is_none());
    let (status, next) = if binding_live {
        desired_status(&policy, policy.status.as_ref(), now)
    } else {
        let status = binding_gone_status(
            &policy,
            policy.status.as_ref(),
            &ctx.config.binding_name,
            now,
        );
        (status, None)
    };
    let unchanged = policy.status.as_ref().is_some_and(|have| {
        have.phase == status.phase
            && have.active_time_window == status.active_time_window
            && have.conditions == status.conditions
    });
    if !unchanged {
        let api: Api<ResourceLeasingPolicy> = Api::all(ctx.worker.clone());
        let mut patch = json!({ "status": status });
        // A merge patch keeps fields it omits: clear the window flag of a Failed policy.
        if status.active_time_window.is_none() {
            patch["status"]["activeTimeWindow"] = serde_json::Value::Null;
        }
        match api
            .patch_status(
                &policy.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => {
                tracing::info!(policy = %name, phase = ?status.phase, "policy status written");
            }
            Err(err) if is_not_found(&err) => return Ok(None),
            Err(source) => {
                return Err(SyncError::PolicyStatus {
                    name: name.to_owned(),
                    source,
                });
            }
        }
    }
    // Released while the binding lives, so that deleting the policy later never hangs.
    release_upstream_finalizer(ctx, &policy).await?;
    Ok(next.map(|at| ctx.config.clock.instant_at(at)))
}

/// Removes upstream Kubeocean's `policy.kubeocean.io/finalizer` from `policy`, if it holds
/// it: nothing of ours uses it, so a deletion would hang on it.
async fn release_upstream_finalizer(
    ctx: &Context,
    policy: &ResourceLeasingPolicy,
) -> Result<(), SyncError> {
    let Some(wanted) = without_finalizer(policy.finalizers(), UPSTREAM_POLICY_FINALIZER) else {
        return Ok(());
    };
    let api: Api<ResourceLeasingPolicy> = Api::all(ctx.worker.clone());
    set_finalizers(&api, &policy.metadata, &wanted)
        .await
        .map_err(|source| SyncError::PolicyFinalizer {
            name: policy.name_any(),
            source,
        })?;
    tracing::info!(policy = %policy.name_any(), "released upstream Kubeocean's policy finalizer");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_kit::conditions::find;
    use serde_json::json;

    fn policy(spec: serde_json::Value) -> ResourceLeasingPolicy {
        serde_json::from_value(
            json!({ "metadata": { "name": "p", "generation": 3 }, "spec": spec }),
        )
        .unwrap()
    }

    #[test]
    fn status_table() {
        let monday_noon: Timestamp = "2025-01-06T12:00:00Z".parse().unwrap();
        // (spec, phase, Valid reason, Active reason, active window, next change)
        let table = [
            (
                json!({ "cluster": "b" }),
                ResourceLeasingPolicyPhase::Active,
                reason::VALID,
                reason::IN_TIME_WINDOW,
                Some(true),
                None,
            ),
            (
                json!({ "cluster": "b", "timeWindows": [{ "start": "09:00", "end": "17:00" }] }),
                ResourceLeasingPolicyPhase::Active,
                reason::VALID,
                reason::IN_TIME_WINDOW,
                Some(true),
                Some("2025-01-06T17:01:00Z"),
            ),
            (
                json!({ "cluster": "b", "timeWindows": [{ "start": "20:00", "end": "06:00" }] }),
                ResourceLeasingPolicyPhase::Inactive,
                reason::VALID,
                reason::OUT_OF_TIME_WINDOW,
                Some(false),
                Some("2025-01-06T20:00:00Z"),
            ),
            (
                json!({ "cluster": "b", "timezone": "Mars/Olympus_Mons" }),
                ResourceLeasingPolicyPhase::Failed,
                reason::VALIDATION_FAILED,
                reason::INVALID,
                None,
                None,
            ),
        ];
        for (spec, phase, valid, active, window, next) in table {
            let p = policy(spec.clone());
            let (status, got_next) = desired_status(&p, None, monday_noon);
            assert_eq!(status.phase, Some(phase), "{spec}");
            assert_eq!(
                find(&status.conditions, "Valid").unwrap().reason,
                valid,
                "{spec}"
            );
            assert_eq!(
                find(&status.conditions, "Active").unwrap().reason,
                active,
                "{spec}"
            );
            assert_eq!(status.active_time_window, window, "{spec}");
            assert_eq!(got_next, next.map(|n| n.parse().unwrap()), "{spec}");
            assert_eq!(
                find(&status.conditions, "Valid")
                    .unwrap()
                    .observed_generation,
                Some(3)
            );
        }
    }

    #[test]
    fn failed_status_names_the_bad_field() {
        let p = policy(json!({ "cluster": "b", "timezone": "Mars/Olympus_Mons" }));
        let (status, _) = desired_status(&p, None, Timestamp::UNIX_EPOCH);
        let message = &find(&status.conditions, "Valid").unwrap().message;
        assert!(message.contains("spec.timezone"), "{message}");
        assert!(message.contains("Mars/Olympus_Mons"), "{message}");
    }

    #[test]
    fn a_policy_of_a_binding_being_deleted_is_inactive_with_a_reason() {
        let t0: Timestamp = "2025-01-06T12:00:00Z".parse().unwrap();
        let t1: Timestamp = "2025-01-06T13:00:00Z".parse().unwrap();
        let p = policy(json!({ "cluster": "b" }));
        let (active, _) = desired_status(&p, None, t0);
        assert_eq!(active.phase, Some(ResourceLeasingPolicyPhase::Active));
        let gone = binding_gone_status(&p, Some(&active), "b", t1);
        assert_eq!(gone.phase, Some(ResourceLeasingPolicyPhase::Inactive));
        assert_eq!(gone.active_time_window, Some(false));
        assert_eq!(gone.last_applied_time, Some(Time(t1)));
        let condition = find(&gone.conditions, "Active").unwrap();
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            ("False", reason::BINDING_GONE)
        );
        assert!(condition.message.contains("ClusterBinding b"));
        assert_eq!(
            find(&gone.conditions, "Valid").unwrap().reason,
            reason::VALID
        );
        // Written once: the same status an hour later.
        let t2: Timestamp = "2025-01-06T14:00:00Z".parse().unwrap();
        assert_eq!(binding_gone_status(&p, Some(&gone), "b", t2), gone);
        // An invalid policy stays Failed.
        let invalid = policy(json!({ "cluster": "b", "timezone": "Mars/Olympus_Mons" }));
        assert_eq!(
            binding_gone_status(&invalid, None, "b", t1).phase,
            Some(ResourceLeasingPolicyPhase::Failed)
        );
    }

    #[test]
    fn unchanged_status_keeps_times() {
        let p = policy(json!({ "cluster": "b" }));
        let t0: Timestamp = "2025-01-06T12:00:00Z".parse().unwrap();
        let t1: Timestamp = "2025-01-06T13:00:00Z".parse().unwrap();
        let (first, _) = desired_status(&p, None, t0);
        let (second, _) = desired_status(&p, Some(&first), t1);
        assert_eq!(first, second);
    }
}
