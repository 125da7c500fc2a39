//! Taint-based eviction, as kube-controller-manager's taint-eviction-controller does it
//! (kubernetes `pkg/controller/tainteviction/taint_eviction.go`, `processPodOnNode`): a pod
//! bound to a node with `NoExecute` taints is deleted at once unless it tolerates every one of
//! them; when it tolerates them all, it is deleted `tolerationSeconds` (the smallest of the
//! tolerations used) after the controller first saw it so, and never when none of those
//! tolerations has `tolerationSeconds`. Before deleting, the controller adds the pod condition
//! `DisruptionTarget` (reason `DeletionByTaintManager`), as the real one does.

use super::Simulator;
use crate::apiserver::api::{DeleteOptions, WriteContext};
use crate::apiserver::resources::GroupResource;
use crate::sim::controllers::objects::at;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// What happens to a pod on a tainted node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eviction {
    /// Left alone: no `NoExecute` taint, or every one tolerated for ever.
    Keep,
    /// Deleted at this time (now or earlier: at once).
    At(Timestamp),
}

/// Whether `toleration` tolerates `taint` (kubernetes `Toleration.ToleratesTaint`): the
/// effects match when the toleration's is empty or equal; the keys when the toleration's is
/// empty (with `Exists`) or equal; `Exists` ignores the value, `Equal` (the default)
/// compares it.
pub fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let effect = field(toleration, "effect");
    if !effect.is_empty() && effect != field(taint, "effect") {
        return false;
    }
    let key = field(toleration, "key");
    if !key.is_empty() && key != field(taint, "key") {
        return false;
    }
    match field(toleration, "operator").as_str() {
        "Exists" => true,
        "" | "Equal" => field(toleration, "value") == field(taint, "value"),
        _ => false,
    }
}

/// When a pod with `tolerations` on a node with `taints` is evicted, counting
/// `tolerationSeconds` from `first_seen` (when the controller first saw the pod there).
/// Kubernetes' `GetMatchingTolerations` then `getMinTolerationTime`: the first toleration
/// matching each `NoExecute` taint is used; a taint none tolerates evicts at once; the
/// smallest `tolerationSeconds` of those used counts (`<= 0`: at once); none: never.
pub fn eviction(taints: &[Value], tolerations: &[Value], first_seen: Timestamp) -> Eviction {
    let no_execute: Vec<&Value> = taints
        .iter()
        .filter(|t| t.get("effect").and_then(Value::as_str) == Some("NoExecute"))
        .collect();
    if no_execute.is_empty() {
        return Eviction::Keep;
    }
    let mut shortest: Option<i64> = None;
    for taint in no_execute {
        let Some(used) = tolerations.iter().find(|t| tolerates(t, taint)) else {
            return Eviction::At(first_seen);
        };
        if let Some(seconds) = used.get("tolerationSeconds").and_then(Value::as_i64) {
            shortest = Some(shortest.map_or(seconds, |s| s.min(seconds)));
        }
    }
    match shortest {
        None => Eviction::Keep,
        Some(seconds) => Eviction::At(
            first_seen
                .checked_add(SignedDuration::from_secs(seconds.max(0)))
                .unwrap_or(first_seen),
        ),
    }
}

/// When the controller first saw each pod (by UID) on a node whose taints it must tolerate.
#[derive(Default)]
pub struct Scheduled(Mutex<HashMap<String, Timestamp>>);

/// One pass: evicts what is due on nodes with `NoExecute` taints.
pub(super) fn taint_eviction_pass(sim: &Simulator) {
    let state = &sim.state;
    let nodes = state
        .store
        .list(&GroupResource::new("", "nodes"), None, None, 0, &|_| true)
        .items;
    let tainted: HashMap<String, Vec<Value>> = nodes
        .iter()
        .filter_map(|node| {
            let taints = at(&node.value, &["spec", "taints"])?.as_array()?;
            taints
                .iter()
                .any(|t| t["effect"] == "NoExecute")
                .then(|| {
                    let name = at(&node.value, &["metadata", "name"])?.as_str()?;
                    Some((name.to_owned(), taints.clone()))
                })
                .flatten()
        })
        .collect();
    let mut scheduled = sim
        .taint_evictions
        .0
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if tainted.is_empty() {
        scheduled.clear();
        return;
    }
    let pods = state
        .store
        .list(&GroupResource::new("", "pods"), None, None, 0, &|pod| {
            at(&pod.value, &["spec", "nodeName"])
                .and_then(Value::as_str)
                .is_some_and(|n| tainted.contains_key(n))
        })
        .items;
    let now = sim.controller_now();
    let mut seen = HashSet::new();
    for pod in pods {
        let pod = &pod.value;
        if at(pod, &["metadata", "deletionTimestamp"]).is_some() {
            continue;
        }
        let uid = at(pod, &["metadata", "uid"])
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let node = at(pod, &["spec", "nodeName"])
            .and_then(Value::as_str)
            .unwrap_or("");
        let Some(taints) = tainted.get(node) else {
            continue;
        };
        let tolerations = at(pod, &["spec", "tolerations"])
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let first_seen = *scheduled.entry(uid.clone()).or_insert(now);
        seen.insert(uid);
        match eviction(taints, tolerations, first_seen) {
            Eviction::Keep => {}
            Eviction::At(due) if due <= now => evict(sim, pod),
            Eviction::At(_) => {}
        }
    }
    scheduled.retain(|uid, _| seen.contains(uid));
}

/// Marks the pod `DisruptionTarget` and deletes it with its own grace period.
fn evict(sim: &Simulator, pod: &Value) {
    let state = &sim.state;
    let Some(rt) = state.resource_type("", "pods") else {
        return;
    };
    let field = |path: &[&str]| at(pod, path).and_then(Value::as_str).unwrap_or("");
    let (namespace, name) = (
        field(&["metadata", "namespace"]),
        field(&["metadata", "name"]),
    );
    let ctx = WriteContext::system(crate::sim::controllers::objects::FIELD_MANAGER);
    let now = crate::apiserver::meta::now_rfc3339();
    let _ = state.update_with(
        &rt,
        "v1",
        namespace,
        name,
        Some("status"),
        &ctx,
        None,
        |old| {
            let mut new = old.clone();
            let status = new
                .as_object_mut()
                .map(|m| m.entry("status").or_insert_with(|| json!({})));
            if let Some(Value::Object(status)) = status {
                let conditions = status.entry("conditions").or_insert_with(|| json!([]));
                if let Value::Array(conditions) = conditions {
                    conditions.retain(|c| c["type"] != "DisruptionTarget");
                    conditions.push(json!({"type": "DisruptionTarget", "status": "True",
                    "reason": "DeletionByTaintManager",
                    "message": "Taint manager: deleting due to NoExecute taint",
                    "lastTransitionTime": now}));
                }
            }
            Ok(new)
        },
    );
    let options = DeleteOptions {
        precondition_uid: at(pod, &["metadata", "uid"])
            .and_then(Value::as_str)
            .map(str::to_owned),
        ..DeleteOptions::default()
    };
    let _ = state.delete(&rt, namespace, name, &options);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t0() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn plus(seconds: i64) -> Timestamp {
        t0().checked_add(SignedDuration::from_secs(seconds))
            .unwrap()
    }

    #[test]
    fn toleration_matching() {
        let taint = json!({"key": "k", "value": "v", "effect": "NoExecute"});
        for (toleration, want) in [
            (json!({"operator": "Exists"}), true),
            (json!({"key": "k", "operator": "Exists"}), true),
            (json!({"key": "k", "value": "v"}), true),
            (json!({"key": "k", "operator": "Equal", "value": "v"}), true),
            (json!({"key": "k", "value": "w"}), false),
            (json!({"key": "other", "operator": "Exists"}), false),
            (
                json!({"key": "k", "operator": "Exists", "effect": "NoSchedule"}),
                false,
            ),
            (
                json!({"key": "k", "operator": "Exists", "effect": "NoExecute"}),
                true,
            ),
            (json!({"key": "k", "operator": "Lt", "value": "v"}), false),
        ] {
            assert_eq!(tolerates(&toleration, &taint), want, "{toleration}");
        }
    }

    #[test]
    fn eviction_table() {
        let no_execute = json!({"key": "k", "value": "v", "effect": "NoExecute"});
        let other = json!({"key": "o", "effect": "NoExecute"});
        let no_schedule = json!({"key": "s", "effect": "NoSchedule"});
        let forever = json!({"key": "k", "operator": "Exists"});
        let for_30 = json!({"key": "k", "operator": "Exists", "tolerationSeconds": 30});
        let other_10 = json!({"key": "o", "operator": "Exists", "tolerationSeconds": 10});
        let negative = json!({"key": "k", "operator": "Exists", "tolerationSeconds": -5});
        // (what, taints, tolerations, want)
        let cases = [
            ("no taint", vec![], vec![], Eviction::Keep),
            (
                "NoSchedule only",
                vec![no_schedule.clone()],
                vec![],
                Eviction::Keep,
            ),
            (
                "not tolerated: at once",
                vec![no_execute.clone()],
                vec![],
                Eviction::At(t0()),
            ),
            (
                "tolerated for ever",
                vec![no_execute.clone(), no_schedule.clone()],
                vec![forever.clone()],
                Eviction::Keep,
            ),
            (
                "tolerated for 30 s",
                vec![no_execute.clone()],
                vec![for_30.clone()],
                Eviction::At(plus(30)),
            ),
            (
                "the first matching toleration counts",
                vec![no_execute.clone()],
                vec![forever.clone(), for_30.clone()],
                Eviction::Keep,
            ),
            (
                "the shortest of the used tolerations",
                vec![no_execute.clone(), other.clone()],
                vec![for_30.clone(), other_10.clone()],
                Eviction::At(plus(10)),
            ),
            (
                "one of two taints not tolerated",
                vec![no_execute.clone(), other.clone()],
                vec![forever.clone()],
                Eviction::At(t0()),
            ),
            (
                "negative seconds: at once",
                vec![no_execute.clone()],
                vec![negative],
                Eviction::At(t0()),
            ),
        ];
        for (what, taints, tolerations, want) in cases {
            assert_eq!(eviction(&taints, &tolerations, t0()), want, "{what}");
        }
    }
}
