//! Karmada's scheduler loop (karmada-io/karmada `pkg/scheduler/scheduler.go`): every binding
//! with a placement is scheduled by [`crate::scheduling`] against the Clusters; the result goes
//! to `spec.clusters` with the placement recorded in `policy.karmada.io/applied-placement`,
//! then the status gets `schedulerObservedGeneration`, `lastScheduledTime` and the Scheduled
//! condition (`getConditionByError` in `pkg/scheduler/helper.go`).

use std::collections::BTreeMap;

use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::core::DynamicObject;
use serde_json::{Map, Value, json};

use super::events::{EventType, ObjectRef, component};
use super::informers::{Pending, version, versions};
use super::karmada::Karmada;
use super::objects::*;
use crate::models::cluster::Cluster;
use crate::scheduling::{Placement, TargetCluster, Workload, schedule};

/// `successfulSchedulingMessage`.
pub const SCHEDULED_MESSAGE: &str = "Binding has been scheduled successfully.";

/// The placement serialized in the order of Karmada's Go types, as the scheduler records
/// it in `policy.karmada.io/applied-placement`.
pub fn applied_placement(placement: &Value) -> String {
    ordered(placement, PLACEMENT_ORDER).to_string()
}

// Field orders of `policyv1alpha1.Placement` and the types inside it.
const PLACEMENT_ORDER: &[&str] = &[
    "clusterAffinity",
    "clusterAffinities",
    "clusterTolerations",
    "spreadConstraints",
    "replicaScheduling",
];
const NESTED_ORDER: &[&str] = &[
    "affinityName",
    "labelSelector",
    "matchLabels",
    "matchExpressions",
    "fieldSelector",
    "key",
    "operator",
    "values",
    "value",
    "effect",
    "tolerationSeconds",
    "clusterNames",
    "exclude",
    "spreadByField",
    "spreadByLabel",
    "maxGroups",
    "minGroups",
    "replicaSchedulingType",
    "replicaDivisionPreference",
    "weightPreference",
    "staticWeightList",
    "targetCluster",
    "weight",
    "dynamicWeight",
];

/// `value` as a string of JSON with object keys in `order` (unknown keys last, by name).
/// serde_json's maps sort keys, so the text is built by hand.
fn ordered(value: &Value, order: &[&str]) -> OrderedJson {
    OrderedJson(
        value.clone(),
        order.iter().map(|s| (*s).to_owned()).collect(),
    )
}

struct OrderedJson(Value, Vec<String>);

impl std::fmt::Display for OrderedJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write_ordered(f, &self.0, &self.1)
    }
}

fn write_ordered(f: &mut std::fmt::Formatter<'_>, v: &Value, order: &[String]) -> std::fmt::Result {
    match v {
        Value::Object(map) => {
            let rank = |k: &str| {
                order
                    .iter()
                    .position(|o| o == k)
                    .or_else(|| NESTED_ORDER.iter().position(|o| *o == k).map(|p| p + 100))
                    .unwrap_or(usize::MAX)
            };
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.cmp(b)));
            f.write_str("{")?;
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                write!(f, "{}:", Value::String((*k).clone()))?;
                write_ordered(f, &map[*k], &[])?;
            }
            f.write_str("}")
        }
        Value::Array(list) => {
            f.write_str("[")?;
            for (i, item) in list.iter().enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                write_ordered(f, item, &[])?;
            }
            f.write_str("]")
        }
        other => write!(f, "{other}"),
    }
}

fn workload_of(binding: &Value) -> Workload {
    let spec = &binding["spec"];
    let request: BTreeMap<String, String> = spec["replicaRequirements"]["resourceRequest"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect();
    let scheduled: Vec<TargetCluster> =
        serde_json::from_value(spec["clusters"].clone()).unwrap_or_default();
    Workload {
        replicas: spec["replicas"]
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .unwrap_or(0),
        resource_request: request,
        has_replica_requirements: spec
            .get("replicaRequirements")
            .is_some_and(|r| !r.is_null()),
        scheduled,
        uid: text(binding, "/spec/resource/uid").to_owned(),
    }
}

/// The condition and, when scheduled, the clusters for `binding`.
pub fn decide(binding: &Value, clusters: &[Cluster]) -> (Value, Option<Vec<TargetCluster>>) {
    let placement = match Placement::from_value(&binding["spec"]["placement"]) {
        Ok(p) => p,
        Err(e) => {
            return (
                condition(
                    "False",
                    "SchedulerError",
                    &format!("invalid placement: {e}"),
                ),
                None,
            );
        }
    };
    match schedule(&placement, &workload_of(binding), clusters) {
        Ok(decision) => (
            condition("True", "Success", SCHEDULED_MESSAGE),
            Some(decision.clusters),
        ),
        Err(e) => {
            let reason = if e.message.starts_with("0/") {
                "NoClusterFit"
            } else {
                "Unschedulable"
            };
            (condition("False", reason, &e.message), None)
        }
    }
}

fn condition(status: &str, reason: &str, message: &str) -> Value {
    json!({"type": "Scheduled", "status": status, "reason": reason, "message": message, "lastTransitionTime": now()})
}

/// One pass over the bindings `pending` names (every binding when a Cluster changed).
pub async fn pass(k: &Karmada, pending: &Pending) -> Result<bool, String> {
    let clusters: Vec<Cluster> = k
        .clusters
        .values()
        .into_iter()
        .filter_map(|c| serde_json::from_value(c).ok())
        .collect();
    let cluster_versions = versions(&k.clusters);
    let mut again = false;
    for (informer, cluster_scoped) in [(&k.rbs, false), (&k.crbs, true)] {
        for object in informer.pending(pending) {
            if object.metadata.deletion_timestamp.is_some()
                || object.data["spec"]["placement"].is_null()
            {
                continue;
            }
            let key = format!(
                "{}/{}",
                object.metadata.namespace.as_deref().unwrap_or_default(),
                object.metadata.name.as_deref().unwrap_or_default()
            );
            let fingerprint = format!("{}|{cluster_versions}", version(&object));
            if k.memo.unchanged("scheduler", &key, &fingerprint) {
                continue;
            }
            let binding = informer.value(&object);
            match schedule_one(k, &binding, &clusters, cluster_scoped).await {
                Ok(()) => k.memo.record("scheduler", &key, fingerprint),
                Err(why) => {
                    tracing::debug!(binding = %text(&binding, "/metadata/name"), reason = %why, "scheduler");
                    again = true;
                }
            }
        }
    }
    Ok(again)
}

async fn schedule_one(
    k: &Karmada,
    binding: &Value,
    clusters: &[Cluster],
    cluster_scoped: bool,
) -> Result<(), String> {
    let name = text(binding, "/metadata/name");
    let api: Api<DynamicObject> = if cluster_scoped {
        Api::all_with(k.client.clone(), &cluster_resource_bindings())
    } else {
        Api::namespaced_with(
            k.client.clone(),
            text(binding, "/metadata/namespace"),
            &resource_bindings(),
        )
    };
    let (cond, chosen) = decide(binding, clusters);
    let placement = applied_placement(&binding["spec"]["placement"]);
    let mut generation = binding["metadata"]["generation"].as_i64().unwrap_or(0);
    let mut rv = binding["metadata"]["resourceVersion"].clone();
    if let Some(chosen) = &chosen {
        let current: Vec<TargetCluster> =
            serde_json::from_value(binding["spec"]["clusters"].clone()).unwrap_or_default();
        if &current != chosen || annotation(binding, APPLIED_PLACEMENT) != Some(placement.as_str())
        {
            let patch = json!({
                "metadata": {"annotations": {APPLIED_PLACEMENT: placement}},
                "spec": {"clusters": chosen},
            });
            let updated = api
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| e.to_string())?;
            generation = updated.metadata.generation.unwrap_or(generation);
            rv = json!(updated.metadata.resource_version);
        }
    }
    let status = &binding["status"];
    let conditions = set_condition(&status["conditions"], cond.clone());
    let observed = status["schedulerObservedGeneration"].as_i64();
    let same_condition = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| {
            c["type"] == "Scheduled"
                && c["status"] == cond["status"]
                && c["reason"] == cond["reason"]
                && c["message"] == cond["message"]
        });
    if same_condition && observed == Some(generation) {
        return Ok(());
    }
    let mut status_patch = Map::new();
    status_patch.insert("conditions".into(), conditions);
    if chosen.is_some() {
        status_patch.insert("schedulerObservedGeneration".into(), json!(generation));
        status_patch.insert("lastScheduledTime".into(), json!(now()));
    }
    // Against the resourceVersion read: a write from a stale view fails (and is redone)
    // rather than drop another controller's condition.
    let patch = json!({"metadata": {"resourceVersion": rv}, "status": status_patch});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| e.to_string())?;
    record_result(k, binding, chosen.as_deref(), &cond, cluster_scoped);
    Ok(())
}

/// The result as `recordScheduleResultEventForResourceBinding` (and its ClusterResourceBinding
/// twin, whose message has no colon after `Result`) records it, on the binding and its template.
fn record_result(
    k: &Karmada,
    binding: &Value,
    chosen: Option<&[TargetCluster]>,
    condition: &Value,
    cluster_scoped: bool,
) {
    let (event_type, reason, message) = match chosen {
        Some(clusters) => (
            EventType::Normal,
            "ScheduleBindingSucceed",
            format!(
                "{SCHEDULED_MESSAGE} Result{} {{{}}}",
                if cluster_scoped { "" } else { ":" },
                result_text(clusters)
            ),
        ),
        None => (
            EventType::Warning,
            "ScheduleBindingFailed",
            text(condition, "/message").to_owned(),
        ),
    };
    for about in [ObjectRef::of(binding), ObjectRef::template_of(binding)] {
        k.events.record_about(
            component::SCHEDULER,
            about,
            event_type,
            reason,
            message.clone(),
        );
    }
}

/// `targetClustersToString`: `member1:1, member2:2`.
pub fn result_text(clusters: &[TargetCluster]) -> String {
    clusters
        .iter()
        .map(|c| format!("{}:{}", c.name, c.replicas))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_applied_placement_reads_as_recorded() {
        // kairship-core/tests/data/karmada-v1.19/resourcebinding-shop-deployment.json.
        let placement = json!({"clusterAffinity": {"clusterNames": ["msb", "mreal"]},
            "replicaScheduling": {"replicaDivisionPreference": "Weighted", "replicaSchedulingType": "Divided",
                "weightPreference": {"staticWeightList": [
                    {"targetCluster": {"clusterNames": ["mreal"]}, "weight": 1},
                    {"targetCluster": {"clusterNames": ["msb"]}, "weight": 3}]}}});
        assert_eq!(
            applied_placement(&placement),
            "{\"clusterAffinity\":{\"clusterNames\":[\"msb\",\"mreal\"]},\"replicaScheduling\":{\"replicaSchedulingType\":\"Divided\",\"replicaDivisionPreference\":\"Weighted\",\"weightPreference\":{\"staticWeightList\":[{\"targetCluster\":{\"clusterNames\":[\"mreal\"]},\"weight\":1},{\"targetCluster\":{\"clusterNames\":[\"msb\"]},\"weight\":3}]}}}"
        );
    }

    #[test]
    fn the_result_reads_as_recorded() {
        // events-demo.json: "Binding has been scheduled successfully. Result: {mreal:1, msb:3}".
        let clusters: Vec<TargetCluster> = serde_json::from_value(
            json!([{"name": "mreal", "replicas": 1}, {"name": "msb", "replicas": 3}]),
        )
        .unwrap_or_default();
        assert_eq!(result_text(&clusters), "mreal:1, msb:3");
        assert_eq!(result_text(&[]), "");
    }

    #[test]
    fn unschedulable_bindings_say_why() {
        let binding = json!({"spec": {"replicas": 1, "placement": {"clusterAffinity": {"clusterNames": ["nowhere"]}}}});
        let c: Cluster = serde_json::from_value(json!({"metadata": {"name": "m1"}, "spec": {}}))
            .unwrap_or_default();
        let (cond, chosen) = decide(&binding, &[c]);
        assert!(chosen.is_none());
        assert_eq!(cond["reason"], "NoClusterFit");
        assert_eq!(
            cond["message"],
            "0/1 clusters are available: 1 cluster(s) did not match the placement cluster affinity constraint."
        );
    }
}
