//! Forced reclaim: with `forceReclaim`, a virtual node outside its policy's time windows is
//! reclaimed once `gracefulReclaimPeriodSeconds` have passed since the window closed.
//!
//! During the grace period the node carries `kubeocean.io/out-of-time-windows=true:NoSchedule`
//! with `timeAdded` = when the grace began, and nothing is evicted; at its end the taint turns
//! `NoExecute` and the syncer deletes the virtual pods that do not tolerate it. The taint is
//! `NoSchedule` first because a `NoExecute` taint makes kube-controller-manager's
//! taint-eviction controller delete every pod that does not tolerate it at once: the grace
//! period would not exist. After the grace, `NoExecute` lets that controller honour the
//! `tolerationSeconds` of pods that tolerate the taint for a while, and the syncer's own
//! deletion reclaims the rest where the controller does not run. The grace start is stored
//! on the node (`timeAdded`), so a restarted syncer resumes it.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::ListParams;

use super::virtual_pods::delete_virtual_pod;
use crate::labels;
use crate::leasing::{NO_EXECUTE, NO_SCHEDULE, taint};
use crate::syncer::context::Context;
use crate::syncer::error::SyncError;

/// Whether `tolerations` tolerate `taint`, by Kubernetes' rules: an empty key with `Exists`
/// tolerates everything; otherwise keys must match, `Exists` ignores the value, `Equal` (the
/// default) compares it; an empty effect matches every effect.
pub fn tolerates(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| {
        let effect_ok = t
            .effect
            .as_deref()
            .is_none_or(|e| e.is_empty() || e == taint.effect);
        let operator = t.operator.as_deref().unwrap_or("Equal");
        let key = t.key.as_deref().unwrap_or_default();
        if key.is_empty() {
            return operator == "Exists" && effect_ok;
        }
        let value_ok = match operator {
            "Exists" => true,
            "Equal" => {
                t.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default()
            }
            _ => false,
        };
        key == taint.key && value_ok && effect_ok
    })
}

/// The out-of-time-windows `NoExecute` taint of a virtual node, if it has one.
pub fn reclaim_taint(vnode: &Node) -> Option<&Taint> {
    vnode
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default()
        .iter()
        .find(|t| t.key == labels::TAINT_OUT_OF_TIME_WINDOWS && t.effect == NO_EXECUTE)
}

/// The out-of-time-windows taint a force-reclaimed virtual node carries now, and when its
/// pods are reclaimed.
#[derive(Clone, Debug, PartialEq)]
pub struct ReclaimStep {
    /// `NoSchedule` during the grace period, `NoExecute` from its end.
    pub taint: Taint,
    /// When the grace period ends (the pods not tolerating the taint are deleted then).
    pub due: Timestamp,
}

/// The reclaim step of a virtual node (`current`, as stored) outside its window with
/// `forceReclaim` and `grace_seconds`, at `now`: a `NoExecute` taint already there stays (the
/// grace is over, or upstream Kubeocean tainted it so); a `NoSchedule` one with `timeAdded`
/// started the grace then; otherwise the grace starts `now`.
pub fn reclaim_step(current: Option<&Node>, grace_seconds: i32, now: Timestamp) -> ReclaimStep {
    let taints = current
        .and_then(|n| n.spec.as_ref())
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default();
    let window = |effect: &str| {
        taints
            .iter()
            .find(|t| t.key == labels::TAINT_OUT_OF_TIME_WINDOWS && t.effect == effect)
    };
    let make = |effect: &str, added: Timestamp| Taint {
        time_added: Some(Time(added)),
        ..taint(labels::TAINT_OUT_OF_TIME_WINDOWS, Some("true"), effect)
    };
    if let Some(existing) = window(NO_EXECUTE) {
        let added = existing.time_added.as_ref().map_or(now, |t| t.0);
        return ReclaimStep {
            taint: make(NO_EXECUTE, added),
            due: added.min(now),
        };
    }
    let started = window(NO_SCHEDULE)
        .and_then(|t| t.time_added.as_ref())
        .map_or(now, |t| t.0);
    let due = reclaim_at(started, grace_seconds);
    if now >= due {
        ReclaimStep {
            taint: make(NO_EXECUTE, now),
            due,
        }
    } else {
        ReclaimStep {
            taint: make(NO_SCHEDULE, started),
            due,
        }
    }
}

/// `taints` (the leasing engine's) with its out-of-time-windows taint replaced by `step`'s.
pub fn with_reclaim_taint(taints: &mut Vec<Taint>, step: &ReclaimStep) {
    taints.retain(|t| t.key != labels::TAINT_OUT_OF_TIME_WINDOWS);
    taints.push(step.taint.clone());
}

/// When the pods of a node tainted at `tainted_at` are reclaimed.
pub fn reclaim_at(tainted_at: Timestamp, grace_seconds: i32) -> Timestamp {
    tainted_at
        .checked_add(SignedDuration::from_secs(i64::from(grace_seconds.max(0))))
        .unwrap_or(tainted_at)
}

/// Deletes the virtual pods on `vnode` that do not tolerate `taint`; returns how many.
pub async fn reclaim(ctx: &Context, vnode: &str, taint: &Taint) -> Result<usize, SyncError> {
    let fail = |action, source| SyncError::VirtualPods {
        action,
        node: vnode.to_owned(),
        source,
    };
    let pods = Api::<Pod>::all(ctx.computing.clone())
        .list(&ListParams::default().fields(&format!("spec.nodeName={vnode}")))
        .await
        .map_err(|e| fail("list", e))?;
    let mut deleted = 0;
    for pod in pods.items {
        let tolerations = pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.as_deref())
            .unwrap_or_default();
        if pod.metadata.deletion_timestamp.is_some() || tolerates(tolerations, taint) {
            continue;
        }
        delete_virtual_pod(ctx, &pod)
            .await
            .map_err(|e| fail("reclaim", e))?;
        deleted += 1;
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toleration(key: &str, operator: &str, value: &str, effect: &str) -> Toleration {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        Toleration {
            key: opt(key),
            operator: opt(operator),
            value: opt(value),
            effect: opt(effect),
            toleration_seconds: None,
        }
    }

    #[test]
    fn toleration_table() {
        let t = taint(labels::TAINT_OUT_OF_TIME_WINDOWS, Some("true"), NO_EXECUTE);
        let key = labels::TAINT_OUT_OF_TIME_WINDOWS;
        let table = [
            (vec![], false),
            (vec![toleration("", "Exists", "", "")], true),
            (vec![toleration("", "Exists", "", "NoSchedule")], false),
            (vec![toleration(key, "Exists", "", "")], true),
            (vec![toleration(key, "", "true", "NoExecute")], true),
            (vec![toleration(key, "Equal", "false", "")], false),
            (vec![toleration("other", "Exists", "", "")], false),
            (
                vec![
                    toleration("other", "Exists", "", ""),
                    toleration(key, "Equal", "true", ""),
                ],
                true,
            ),
        ];
        for (i, (tolerations, want)) in table.into_iter().enumerate() {
            assert_eq!(tolerates(&tolerations, &t), want, "case {i}");
        }
    }

    #[test]
    fn reclaim_time_adds_the_grace_period() {
        let t0: Timestamp = "2025-01-06T12:00:00Z".parse().unwrap();
        assert_eq!(reclaim_at(t0, 30), "2025-01-06T12:00:30Z".parse().unwrap());
        assert_eq!(reclaim_at(t0, -5), t0);
    }

    fn node_with(taints: Vec<Taint>) -> Node {
        Node {
            spec: Some(k8s_openapi::api::core::v1::NodeSpec {
                taints: Some(taints),
                ..Default::default()
            }),
            ..Node::default()
        }
    }

    fn window(effect: &str, added: Option<&str>) -> Taint {
        Taint {
            time_added: added.map(|a| Time(a.parse().unwrap())),
            ..taint(labels::TAINT_OUT_OF_TIME_WINDOWS, Some("true"), effect)
        }
    }

    #[test]
    fn reclaim_step_table() {
        let at = |s: &str| -> Timestamp { s.parse().unwrap() };
        let now = at("2025-01-06T12:00:00Z");
        let vnode = taint(labels::TAINT_VNODE, None, NO_SCHEDULE);
        // (what, stored taints, grace, want taint, want due)
        let cases = [
            (
                "the window just closed: the grace starts now, NoSchedule",
                Some(vec![vnode.clone()]),
                600,
                window(NO_SCHEDULE, Some("2025-01-06T12:00:00Z")),
                at("2025-01-06T12:10:00Z"),
            ),
            (
                "no node yet",
                None,
                600,
                window(NO_SCHEDULE, Some("2025-01-06T12:00:00Z")),
                at("2025-01-06T12:10:00Z"),
            ),
            (
                "during the grace: NoSchedule, its start kept",
                Some(vec![window(NO_SCHEDULE, Some("2025-01-06T11:55:00Z"))]),
                600,
                window(NO_SCHEDULE, Some("2025-01-06T11:55:00Z")),
                at("2025-01-06T12:05:00Z"),
            ),
            (
                "the grace is over: NoExecute from now",
                Some(vec![window(NO_SCHEDULE, Some("2025-01-06T11:50:00Z"))]),
                600,
                window(NO_EXECUTE, Some("2025-01-06T12:00:00Z")),
                at("2025-01-06T12:00:00Z"),
            ),
            (
                "a NoSchedule taint without a start (forceReclaim just turned on)",
                Some(vec![window(NO_SCHEDULE, None)]),
                60,
                window(NO_SCHEDULE, Some("2025-01-06T12:00:00Z")),
                at("2025-01-06T12:01:00Z"),
            ),
            (
                "no grace: NoExecute at once",
                Some(vec![]),
                0,
                window(NO_EXECUTE, Some("2025-01-06T12:00:00Z")),
                now,
            ),
            (
                "NoExecute stays (upstream's taint or a finished grace)",
                Some(vec![window(NO_EXECUTE, Some("2025-01-06T11:00:00Z"))]),
                600,
                window(NO_EXECUTE, Some("2025-01-06T11:00:00Z")),
                at("2025-01-06T11:00:00Z"),
            ),
        ];
        for (what, taints, grace, want_taint, want_due) in cases {
            let node = taints.map(node_with);
            let step = reclaim_step(node.as_ref(), grace, now);
            assert_eq!(step.taint, want_taint, "{what}");
            assert_eq!(step.due, want_due, "{what}");
        }
        let mut taints = vec![vnode.clone(), window(NO_EXECUTE, None)];
        let step = reclaim_step(None, 600, now);
        with_reclaim_taint(&mut taints, &step);
        assert_eq!(taints, vec![vnode, step.taint]);
    }
}
