//! The taints Karmada's cluster controller keeps on a Cluster from its `Ready` condition
//! (karmada-io/karmada `pkg/controllers/cluster/cluster_controller.go`,
//! `taintClusterByCondition`, with `SetCurrentClusterTaints` and `GenerateTaintsMessage` of
//! `pkg/util/helper/taint.go`): `cluster.karmada.io/not-ready:NoSchedule` while Ready is False
//! or not reported yet, `cluster.karmada.io/unreachable:NoSchedule` while it is Unknown, and
//! neither once it is True. The scheduler leaves a tainted cluster out of new placements.

use serde_json::{Value, json};

/// `TaintClusterNotReady`.
pub const NOT_READY: &str = "cluster.karmada.io/not-ready";
/// `TaintClusterUnreachable`.
pub const UNREACHABLE: &str = "cluster.karmada.io/unreachable";
const EFFECT: &str = "NoSchedule";

fn ready_status(cluster: &Value) -> Option<&str> {
    cluster
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .map(|c| c["status"].as_str().unwrap_or_default())
}

/// `TaintExists`: the same key and effect.
fn has(taints: &[Value], key: &str) -> bool {
    taints
        .iter()
        .any(|t| t["key"] == key && t["effect"] == EFFECT)
}

/// The taints the cluster controller sets on `cluster` at `now`, or `None` when they stay
/// as they are. Taints it does not own are kept in their order; one it adds goes last with
/// its `timeAdded`.
pub fn taints_for(cluster: &Value, now: &str) -> Option<Vec<Value>> {
    let (add, remove): (&[&str], &[&str]) = match ready_status(cluster) {
        Some("False") => (&[NOT_READY], &[UNREACHABLE]),
        Some("Unknown") => (&[UNREACHABLE], &[NOT_READY]),
        Some("True") => (&[], &[NOT_READY, UNREACHABLE]),
        // Not reported yet (`else` branch): a new cluster is not ready.
        None => (&[NOT_READY], &[]),
        Some(_) => return None,
    };
    let current: Vec<Value> = cluster
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let adding: Vec<&str> = add.iter().copied().filter(|k| !has(&current, k)).collect();
    let removing: Vec<&str> = remove
        .iter()
        .copied()
        .filter(|k| has(&current, k))
        .collect();
    if adding.is_empty() && removing.is_empty() {
        return None;
    }
    let mut taints: Vec<Value> = current
        .into_iter()
        .filter(|t| {
            !removing
                .iter()
                .any(|k| t["key"] == *k && t["effect"] == EFFECT)
        })
        .collect();
    taints.extend(
        adding
            .iter()
            .map(|k| json!({"key": k, "effect": EFFECT, "timeAdded": now})),
    );
    Some(taints)
}

/// `GenerateTaintsMessage`, as the `TaintClusterSucceed` event says it.
pub fn taints_message(taints: &[Value]) -> String {
    if taints.is_empty() {
        return "cluster now does not have taints".to_owned();
    }
    let text = |t: &Value, f: &str| t[f].as_str().unwrap_or_default().to_owned();
    let listed: Vec<String> = taints
        .iter()
        .map(|t| match text(t, "value").as_str() {
            "" => format!("{{Key:{},Effect:{}}}", text(t, "key"), text(t, "effect")),
            v => format!(
                "{{Key:{},Value:{v},Effect:{}}}",
                text(t, "key"),
                text(t, "effect")
            ),
        })
        .collect();
    format!("cluster now has taints([{}])", listed.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(ready: Option<&str>, taints: Value) -> Value {
        let conditions = match ready {
            Some(s) => json!([{"type": "Ready", "status": s}]),
            None => json!([]),
        };
        json!({"spec": {"taints": taints}, "status": {"conditions": conditions}})
    }

    const NOW: &str = "2026-11-28T20:14:04Z";

    #[test]
    fn taints_follow_the_ready_condition() {
        let not_ready = json!({"key": NOT_READY, "effect": "NoSchedule", "timeAdded": NOW});
        let unreachable = json!({"key": UNREACHABLE, "effect": "NoSchedule", "timeAdded": NOW});
        let own = json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"});
        let old_not_ready = json!({"key": NOT_READY, "effect": "NoSchedule", "timeAdded": "t0"});
        for (ready, taints, want) in [
            // cluster-msb-after-member-stopped.json: Ready False -> not-ready.
            (Some("False"), json!([]), Some(json!([not_ready]))),
            // cluster-edge-1-pull-no-agent.json: Ready Unknown -> unreachable.
            (Some("Unknown"), json!([]), Some(json!([unreachable]))),
            (
                Some("Unknown"),
                json!([old_not_ready]),
                Some(json!([unreachable])),
            ),
            (None, json!([]), Some(json!([not_ready]))),
            (
                Some("True"),
                json!([own, old_not_ready]),
                Some(json!([own])),
            ),
            // Already as it should be: no write, and the old timeAdded stays.
            (Some("False"), json!([old_not_ready]), None),
            (Some("True"), json!([own]), None),
            (None, json!([own, old_not_ready]), None),
        ] {
            let c = cluster(ready, taints.clone());
            assert_eq!(
                taints_for(&c, NOW).map(Value::Array),
                want,
                "{ready:?} {taints}"
            );
        }
    }

    #[test]
    fn messages_read_as_recorded() {
        // events-cluster-mreal.json.
        assert_eq!(
            taints_message(&[json!({"key": NOT_READY, "effect": "NoSchedule"})]),
            "cluster now has taints([{Key:cluster.karmada.io/not-ready,Effect:NoSchedule}])"
        );
        assert_eq!(taints_message(&[]), "cluster now does not have taints");
        assert_eq!(
            taints_message(&[
                json!({"key": "a", "value": "b", "effect": "NoExecute"}),
                json!({"key": "c", "effect": "NoSchedule"})
            ]),
            "cluster now has taints([{Key:a,Value:b,Effect:NoExecute},{Key:c,Effect:NoSchedule}])"
        );
    }
}
