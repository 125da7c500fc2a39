//! A physical pod the worker does not schedule: the computing cluster chose its virtual
//! node, but the physical node turned out not to take it (a host port in use, resources
//! taken meanwhile, a taint). As upstream, once it has been unscheduled for longer than the
//! syncer's timeout (5 minutes by default) it is deleted and the virtual pod gets a Warning
//! Event `FailedSchedulingPod`; **(ours)** the virtual pod also fails with a condition that
//! says why, so that its controller replaces it (the computing scheduler may then choose
//! another node), instead of a pod left Pending with no word.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Event reason on the virtual pod (upstream's).
pub const FAILED_SCHEDULING_POD: &str = "FailedSchedulingPod";
/// Condition type on the virtual pod **(ours)**.
pub const PHYSICAL_POD_SCHEDULED: &str = "kubeocean.io/PhysicalPodScheduled";
/// Reason of the condition and of the failed virtual pod.
pub const SCHEDULING_TIMEOUT: &str = "PhysicalPodSchedulingTimeout";

/// Where a physical pod stands with the worker's scheduler at a given time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchedulingWait {
    /// Bound to a node, being deleted or finished: nothing to watch.
    NotWaiting,
    /// Unscheduled; the timeout expires after this long.
    Waiting(Duration),
    /// Unscheduled for longer than the timeout.
    Expired,
}

/// How long `physical` has left to be scheduled at `now` with `timeout`. A pod without a
/// creation time has expired (as upstream treats it).
pub fn scheduling_wait(physical: &Pod, now: Timestamp, timeout: Duration) -> SchedulingWait {
    let bound = physical
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    let phase = physical
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending");
    if bound || physical.metadata.deletion_timestamp.is_some() || phase != "Pending" {
        return SchedulingWait::NotWaiting;
    }
    let Some(created) = physical.metadata.creation_timestamp.as_ref() else {
        return SchedulingWait::Expired;
    };
    let age = now.duration_since(created.0).max(SignedDuration::ZERO);
    let timeout = SignedDuration::try_from(timeout).unwrap_or(SignedDuration::MAX);
    if age >= timeout {
        return SchedulingWait::Expired;
    }
    Duration::try_from(timeout - age)
        .map(SchedulingWait::Waiting)
        .unwrap_or(SchedulingWait::Expired)
}

/// What the worker's scheduler last said about `physical` (its `PodScheduled` condition).
pub fn scheduler_message(physical: &Pod) -> Option<String> {
    physical
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .and_then(|c| c.message.clone().or_else(|| c.reason.clone()))
        .filter(|m| !m.is_empty())
}

/// The note of the Event and the message of the condition.
pub fn unschedulable_note(physical_key: &str, timeout: Duration, physical: &Pod) -> String {
    let mut note = format!(
        "physical pod {physical_key} was not scheduled in the worker cluster within {}s; it was deleted and this pod failed",
        timeout.as_secs()
    );
    if let Some(message) = scheduler_message(physical) {
        note.push_str(&format!(" (the worker's scheduler said: {message})"));
    }
    note
}

/// The virtual pod's status once its physical pod gave up on scheduling: `Failed`, with the
/// reason, the note, and the condition [`PHYSICAL_POD_SCHEDULED`] `False`.
pub fn unschedulable_pod_status(current: &PodStatus, note: &str, now: Timestamp) -> PodStatus {
    let mut status = current.clone();
    status.phase = Some("Failed".to_owned());
    status.reason = Some(SCHEDULING_TIMEOUT.to_owned());
    status.message = Some(note.to_owned());
    let condition = PodCondition {
        type_: PHYSICAL_POD_SCHEDULED.to_owned(),
        status: "False".to_owned(),
        reason: Some(SCHEDULING_TIMEOUT.to_owned()),
        message: Some(note.to_owned()),
        last_transition_time: Some(Time(now)),
        last_probe_time: None,
        observed_generation: None,
    };
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    conditions.retain(|c| c.type_ != PHYSICAL_POD_SCHEDULED);
    for c in conditions.iter_mut() {
        if c.type_ == "Ready" || c.type_ == "ContainersReady" {
            c.status = "False".to_owned();
        }
    }
    conditions.push(condition);
    status
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(created: Option<&str>, node: Option<&str>, phase: &str, deleting: bool) -> Pod {
        serde_json::from_value(json!({
            "metadata": {
                "name": "p", "namespace": "w",
                "creationTimestamp": created,
                "deletionTimestamp": deleting.then_some("2026-01-01T00:10:00Z"),
            },
            "spec": { "containers": [], "nodeName": node },
            "status": { "phase": phase, "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/1 nodes are available: 1 node(s) didn't have free ports"}
            ]},
        }))
        .unwrap()
    }

    #[test]
    fn waits_and_expiry() {
        let now: Timestamp = "2026-01-01T00:05:00Z".parse().unwrap();
        let timeout = Duration::from_secs(300);
        let cases = [
            (
                "bound",
                pod(Some("2026-01-01T00:00:00Z"), Some("n1"), "Pending", false),
                SchedulingWait::NotWaiting,
            ),
            (
                "running",
                pod(Some("2026-01-01T00:00:00Z"), None, "Running", false),
                SchedulingWait::NotWaiting,
            ),
            (
                "deleting",
                pod(Some("2026-01-01T00:00:00Z"), None, "Pending", true),
                SchedulingWait::NotWaiting,
            ),
            (
                "exactly at the timeout",
                pod(Some("2026-01-01T00:00:00Z"), None, "Pending", false),
                SchedulingWait::Expired,
            ),
            (
                "one minute in",
                pod(Some("2026-01-01T00:04:00Z"), None, "Pending", false),
                SchedulingWait::Waiting(Duration::from_secs(240)),
            ),
            (
                "created ahead of our clock",
                pod(Some("2026-01-01T00:06:00Z"), None, "Pending", false),
                SchedulingWait::Waiting(timeout),
            ),
            (
                "no creation time",
                pod(None, None, "Pending", false),
                SchedulingWait::Expired,
            ),
        ];
        for (case, p, want) in cases {
            assert_eq!(scheduling_wait(&p, now, timeout), want, "{case}");
        }
    }

    #[test]
    fn the_virtual_pod_fails_with_a_condition_saying_why() {
        let p = pod(Some("2026-01-01T00:00:00Z"), None, "Pending", false);
        let note = unschedulable_note("w/p", Duration::from_secs(300), &p);
        assert!(note.contains("within 300s"), "{note}");
        assert!(note.contains("didn't have free ports"), "{note}");
        let current: PodStatus = serde_json::from_value(json!({
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}]
        }))
        .unwrap();
        let now: Timestamp = "2026-01-01T00:05:00Z".parse().unwrap();
        let status = unschedulable_pod_status(&current, &note, now);
        assert_eq!(status.phase.as_deref(), Some("Failed"));
        assert_eq!(status.reason.as_deref(), Some(SCHEDULING_TIMEOUT));
        let conditions = status.conditions.unwrap();
        let ours: Vec<_> = conditions
            .iter()
            .filter(|c| c.type_ == PHYSICAL_POD_SCHEDULED)
            .collect();
        assert_eq!(ours.len(), 1);
        assert_eq!(ours[0].status, "False");
        assert_eq!(ours[0].message.as_deref(), Some(note.as_str()));
        assert!(
            conditions
                .iter()
                .any(|c| c.type_ == "PodScheduled" && c.status == "True")
        );
    }
}
