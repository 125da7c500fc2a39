//! The health of Pull members, as Karmada's cluster controller keeps it
//! (karmada-io/karmada `pkg/controllers/cluster/cluster_controller.go`,
//! `monitorClusterHealth` and `tryUpdateClusterHealth`): a Pull member's karmada-agent posts
//! its status and renews the Lease `karmada-cluster/<cluster>` in the Karmada control plane.
//! When neither happened for a grace period, the controller marks `Ready` `Unknown`:
//! `ClusterStatusNeverUpdated` for a member that never posted a status (after the startup
//! grace period, counted from the Cluster's creation), `ClusterStatusUnknown` for one that
//! stopped (after the monitor grace period). Push members are left to the cluster-status
//! controller ([`super::cluster_status`]), as upstream returns early for them.
//!
//! Upstream keeps the time of the last sign of life in memory; here it is read from what is
//! stored: the later of the Lease's `renewTime`, the `Ready` condition's `lastTransitionTime`
//! and the Cluster's creation.

use std::time::Duration;

use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};

/// The namespace of the agents' Leases (`util.NamespaceClusterLease`).
pub const LEASE_NAMESPACE: &str = "karmada-cluster";

/// The grace periods of the cluster controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Graces {
    /// `--cluster-startup-grace-period`: how long a new Pull member may go without a status.
    pub startup: Duration,
    /// `--cluster-monitor-grace-period`: how long a Pull member may go without a sign of life.
    pub monitor: Duration,
}

impl Default for Graces {
    /// Karmada's defaults (`cmd/controller-manager/app/options/options.go`): 60 s and 40 s.
    fn default() -> Graces {
        Graces {
            startup: Duration::from_secs(60),
            monitor: Duration::from_secs(40),
        }
    }
}

fn time_at(value: &Value, pointer: &str) -> Option<jiff::Timestamp> {
    value.pointer(pointer)?.as_str()?.parse().ok()
}

fn ready_of(cluster: &Value) -> Option<&Value> {
    cluster
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == "Ready")
}

/// The conditions the cluster controller writes on Pull member `cluster` at `now`, given the
/// `renewTime` of its agent's Lease, or `None` when they stay as they are.
pub fn pull_conditions(
    cluster: &Value,
    lease_renewed: Option<jiff::Timestamp>,
    now: jiff::Timestamp,
    graces: Graces,
) -> Option<Vec<Value>> {
    if cluster.pointer("/spec/syncMode").and_then(Value::as_str) != Some("Pull") {
        return None;
    }
    let ready = ready_of(cluster);
    let grace = if ready.is_some() {
        graces.monitor
    } else {
        graces.startup
    };
    let last_sign = [
        time_at(cluster, "/metadata/creationTimestamp"),
        ready.and_then(|r| time_at(r, "/lastTransitionTime")),
        lease_renewed,
    ]
    .into_iter()
    .flatten()
    .max()?;
    let deadline = last_sign
        .checked_add(jiff::SignedDuration::try_from(grace).ok()?)
        .ok()?;
    if now <= deadline {
        return None;
    }
    let now = now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let mut conditions: Vec<Value> = cluster
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    match conditions.iter_mut().find(|c| c["type"] == "Ready") {
        None => conditions.push(json!({
            "type": "Ready", "status": "Unknown", "reason": "ClusterStatusNeverUpdated",
            "message": "Cluster status controller never posted cluster status.",
            "lastTransitionTime": now,
        })),
        Some(c) if c["status"] != "Unknown" => {
            c["status"] = json!("Unknown");
            c["reason"] = json!("ClusterStatusUnknown");
            c["message"] = json!("Cluster status controller stopped posting cluster status.");
            c["lastTransitionTime"] = json!(now);
        }
        Some(_) => return None,
    }
    Some(conditions)
}

fn leases() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease"),
        "leases",
    )
}

/// `tryUpdateClusterHealth` for one Cluster of `api`: reads its agent's Lease and writes
/// the `Ready` condition when the member went quiet for longer than its grace period.
pub(crate) async fn update_pull_health(api: &Api<DynamicObject>, cluster: &Value, graces: Graces) {
    if cluster.pointer("/spec/syncMode").and_then(Value::as_str) != Some("Pull") {
        return;
    }
    let name = cluster
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let lease_api: Api<DynamicObject> =
        Api::namespaced_with(api.clone().into_client(), LEASE_NAMESPACE, &leases());
    let renewed = match lease_api.get_opt(name).await {
        Ok(lease) => lease
            .and_then(|l| serde_json::to_value(l).ok())
            .and_then(|l| time_at(&l, "/spec/renewTime")),
        Err(err) => {
            tracing::debug!(cluster = %name, error = %err, "cannot read the agent's lease");
            return;
        }
    };
    let Some(conditions) = pull_conditions(cluster, renewed, jiff::Timestamp::now(), graces) else {
        return;
    };
    let patch = json!({
        "metadata": {"resourceVersion": cluster.pointer("/metadata/resourceVersion")},
        "status": {"conditions": conditions},
    });
    if let Err(err) = api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        tracing::debug!(cluster = %name, error = %err, "cannot write the cluster's health");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> jiff::Timestamp {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn pull(status: Value) -> Value {
        json!({"metadata": {"name": "edge", "creationTimestamp": "2026-11-28T20:00:00Z"},
            "spec": {"syncMode": "Pull"}, "status": status})
    }

    fn ready(status: &str, since: &str) -> Value {
        json!({"conditions": [{"type": "Ready", "status": status, "reason": "ClusterReady",
            "message": "cluster is healthy and ready to accept workloads",
            "lastTransitionTime": since}]})
    }

    #[test]
    fn quiet_pull_members_turn_unknown_after_their_grace() {
        let graces = Graces::default();
        let never = pull(json!({}));
        let posted = pull(ready("True", "2026-11-28T20:00:10Z"));
        let unknown = pull(json!({"conditions": [{"type": "Ready", "status": "Unknown",
            "reason": "ClusterStatusUnknown", "lastTransitionTime": "2026-11-28T20:00:55Z"}]}));
        let mut push = posted.clone();
        push["spec"]["syncMode"] = json!("Push");
        // (case, cluster, lease renewed, now, the Ready condition written: reason, message)
        type Written<'a> = Option<(&'a str, &'a str)>;
        let cases: Vec<(&str, &Value, Option<&str>, &str, Written)> = vec![
            (
                "new, within the startup grace",
                &never,
                None,
                "2026-11-28T20:00:59Z",
                None,
            ),
            (
                "never posted, past the startup grace",
                &never,
                None,
                "2026-11-28T20:01:01Z",
                Some((
                    "ClusterStatusNeverUpdated",
                    "Cluster status controller never posted cluster status.",
                )),
            ),
            (
                "never posted but renewing its lease",
                &never,
                Some("2026-11-28T20:00:50Z"),
                "2026-11-28T20:01:30Z",
                None,
            ),
            (
                "posted, within the monitor grace",
                &posted,
                None,
                "2026-11-28T20:00:49Z",
                None,
            ),
            (
                "posted, quiet past the monitor grace",
                &posted,
                None,
                "2026-11-28T20:00:51Z",
                Some((
                    "ClusterStatusUnknown",
                    "Cluster status controller stopped posting cluster status.",
                )),
            ),
            (
                "posted, its lease renewed",
                &posted,
                Some("2026-11-28T20:05:00Z"),
                "2026-11-28T20:05:30Z",
                None,
            ),
            (
                "already Unknown",
                &unknown,
                None,
                "2026-11-28T21:00:00Z",
                None,
            ),
            ("a Push member", &push, None, "2026-11-28T21:00:00Z", None),
        ];
        for (case, cluster, lease, now, want) in cases {
            let got = pull_conditions(cluster, lease.map(at), at(now), graces);
            match (got, want) {
                (None, None) => {}
                (Some(conditions), Some((reason, message))) => {
                    let ready = conditions.iter().find(|c| c["type"] == "Ready").unwrap();
                    assert_eq!(ready["status"], "Unknown", "{case}");
                    assert_eq!(ready["reason"], reason, "{case}");
                    assert_eq!(ready["message"], message, "{case}");
                    assert_eq!(ready["lastTransitionTime"], now, "{case}");
                    assert_eq!(conditions.len(), 1, "{case}");
                }
                (got, want) => panic!("{case}: wrote {got:?}, expected {want:?}"),
            }
        }
    }
}
