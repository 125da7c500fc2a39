//! The workload view: a workload (a Deployment, or a StatefulSet, DaemonSet or Job) joined with
//! its ResourceBinding's per-cluster status.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use kube::core::DynamicObject;
use serde_json::Value;

use crate::api::{ClusterWorkloadStatus, Workload};
use crate::models::work::{
    CLUSTER_PROPAGATION_POLICY_NAME_KEY, PROPAGATION_POLICY_NAME_KEY,
    PROPAGATION_POLICY_NAMESPACE_KEY, ResourceBinding, binding_name,
};
use crate::router::ObjectPage;

/// The name of the ResourceBinding Karmada keeps for Deployment `name`.
pub fn deployment_binding_name(name: &str) -> String {
    binding_name("deployment", name)
}

fn int(value: &Value, pointer: &str) -> Option<i32> {
    value
        .pointer(pointer)
        .and_then(Value::as_i64)
        .and_then(|n| i32::try_from(n).ok())
}

fn meta_value<'a>(
    meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .or_else(|| meta.labels.as_ref().and_then(|l| l.get(key)))
        .map(String::as_str)
}

/// The policy a binding names: `namespace/name` for a PropagationPolicy, the name of a
/// ClusterPropagationPolicy.
pub fn policy_of(binding: &ResourceBinding) -> Option<String> {
    let meta = &binding.metadata;
    if let Some(name) = meta_value(meta, PROPAGATION_POLICY_NAME_KEY) {
        return Some(match meta_value(meta, PROPAGATION_POLICY_NAMESPACE_KEY) {
            Some(ns) => format!("{ns}/{name}"),
            None => name.to_owned(),
        });
    }
    meta_value(meta, CLUSTER_PROPAGATION_POLICY_NAME_KEY).map(str::to_owned)
}

/// The objects of `page` whose names are in `wanted`, by name. A page from the embedded cache
/// carries each object as JSON; only the wanted ones are decoded, so a page of 20 workloads
/// costs 20 decodes however many bindings the namespace holds.
pub fn named_objects(
    page: &ObjectPage,
    wanted: &HashSet<String>,
) -> HashMap<String, Arc<DynamicObject>> {
    page.items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| {
            let name = item
                .metadata
                .name
                .as_ref()
                .filter(|n| wanted.contains(*n))?;
            let object = match page.rendered.as_ref().and_then(|r| r.get(i)) {
                Some(json) => Arc::new(serde_json::from_slice::<DynamicObject>(json).ok()?),
                None => item.clone(),
            };
            Some((name.clone(), object))
        })
        .collect()
}

/// Reads a binding object; `None` when it is not a readable ResourceBinding.
pub fn parse_binding(object: &DynamicObject) -> Option<ResourceBinding> {
    serde_json::to_value(object)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
}

/// What a member reports of a workload of `kind` (its `aggregatedStatus` item's `status`, as
/// Karmada's interpreter reflects it): `(replicas, ready, available, updated)`. A DaemonSet
/// counts nodes (`desiredNumberScheduled`, `numberReady`, `numberAvailable`,
/// `updatedNumberScheduled`); a Job its running pods (`active`) only.
pub fn member_numbers(kind: &str, status: &Value) -> [Option<i32>; 4] {
    match kind {
        "DaemonSet" => [
            int(status, "/desiredNumberScheduled"),
            int(status, "/numberReady"),
            int(status, "/numberAvailable"),
            int(status, "/updatedNumberScheduled"),
        ],
        "Job" => [int(status, "/active"), None, None, None],
        _ => [
            int(status, "/replicas"),
            int(status, "/readyReplicas"),
            int(status, "/availableReplicas"),
            int(status, "/updatedReplicas"),
        ],
    }
}

/// The replicas a workload of `kind` asks for: `spec.replicas` (default 1), a Job's
/// `spec.parallelism` (default 1), a DaemonSet's nodes (`status.desiredNumberScheduled`,
/// which Karmada sums over the members).
fn desired(kind: &str, data: &Value) -> i32 {
    match kind {
        "DaemonSet" => int(data, "/status/desiredNumberScheduled").unwrap_or(0),
        "Job" => int(data, "/spec/parallelism").unwrap_or(1),
        _ => int(data, "/spec/replicas").unwrap_or(1),
    }
}

/// Joins a workload (a Deployment, StatefulSet, DaemonSet or Job) with its binding (if
/// Karmada made one). The object is kept in [`Workload::deployment`] whatever its kind.
pub fn workload(object: &DynamicObject, binding: Option<&ResourceBinding>) -> Workload {
    let data = &object.data;
    let kind = object
        .types
        .as_ref()
        .map(|t| t.kind.as_str())
        .unwrap_or("Deployment");
    let mut clusters: BTreeMap<String, ClusterWorkloadStatus> = BTreeMap::new();
    if let Some(binding) = binding {
        for target in &binding.spec.clusters {
            let entry = clusters.entry(target.name.clone()).or_default();
            entry.cluster.clone_from(&target.name);
            entry.scheduled_replicas = target.replicas;
        }
        for item in binding
            .status
            .as_ref()
            .map(|s| s.aggregated_status.as_slice())
            .unwrap_or_default()
        {
            let entry = clusters.entry(item.cluster_name.clone()).or_default();
            entry.cluster.clone_from(&item.cluster_name);
            let status = item.status.clone().unwrap_or(Value::Null);
            [
                entry.replicas,
                entry.ready_replicas,
                entry.available_replicas,
                entry.updated_replicas,
            ] = member_numbers(kind, &status);
            entry.applied = item.applied;
            entry.health.clone_from(&item.health);
            entry.message = item.applied_message.clone().filter(|m| !m.is_empty());
        }
    }
    let reported: Vec<&ClusterWorkloadStatus> = clusters
        .values()
        .filter(|c| c.replicas.is_some() || c.ready_replicas.is_some())
        .collect();
    let [_, own_ready, own_available, _] = member_numbers(kind, &data["status"]);
    let (ready, available) = if reported.is_empty() {
        (own_ready.unwrap_or(0), own_available.unwrap_or(0))
    } else {
        reported.iter().fold((0i32, 0i32), |(r, a), c| {
            (
                r.saturating_add(c.ready_replicas.unwrap_or(0)),
                a.saturating_add(c.available_replicas.unwrap_or(0)),
            )
        })
    };
    Workload {
        name: object.metadata.name.clone().unwrap_or_default(),
        namespace: object.metadata.namespace.clone().unwrap_or_default(),
        replicas: desired(kind, data),
        ready_replicas: ready,
        available_replicas: available,
        paused: data
            .pointer("/spec/paused")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        binding: binding.and_then(|b| b.metadata.name.clone()),
        policy: binding.and_then(policy_of),
        clusters: clusters.into_values().collect(),
        deployment: serde_json::to_value(object).unwrap_or(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use crate::router::Pagination;

    #[test]
    fn named_objects_decodes_only_the_wanted_names() {
        let object = |name: &str, replicas: i64| -> DynamicObject {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                "metadata": {"name": name}, "spec": {"replicas": replicas}
            }))
            .unwrap()
        };
        let meta_only = |name: &str| {
            let mut o = object(name, 0);
            o.data = serde_json::Value::Null;
            Arc::new(o)
        };
        let full = [object("a", 1), object("b", 2), object("c", 3)];
        let rendered: Vec<bytes::Bytes> = full
            .iter()
            .map(|o| serde_json::to_vec(o).unwrap().into())
            .collect();
        let wanted: HashSet<String> = ["a", "c", "z"].map(String::from).into();
        for (what, page) in [
            (
                "rendered: decoded from the bytes",
                ObjectPage {
                    items: ["a", "b", "c"].map(meta_only).to_vec(),
                    pagination: Pagination {
                        total: 3,
                        page: 1,
                        page_size: 3,
                        pages: 1,
                    },
                    resource_version: None,
                    rendered: Some(rendered.clone()),
                },
            ),
            (
                "decoded: taken as they are",
                ObjectPage {
                    items: full.iter().cloned().map(Arc::new).collect(),
                    pagination: Pagination {
                        total: 3,
                        page: 1,
                        page_size: 3,
                        pages: 1,
                    },
                    resource_version: None,
                    rendered: None,
                },
            ),
        ] {
            let found = named_objects(&page, &wanted);
            let mut names: Vec<_> = found.keys().cloned().collect();
            names.sort();
            assert_eq!(names, ["a", "c"], "{what}");
            assert_eq!(found["c"].data["spec"]["replicas"], 3, "{what}");
        }
    }

    use super::*;
    use serde_json::json;

    fn deployment(replicas: Option<i64>, ready: i64, paused: bool) -> DynamicObject {
        let mut spec = json!({"paused": paused});
        if let Some(r) = replicas {
            spec["replicas"] = json!(r);
        }
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "team-a"},
            "spec": spec,
            "status": {"readyReplicas": ready, "availableReplicas": ready},
        }))
        .unwrap()
    }

    fn binding() -> ResourceBinding {
        serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "web-deployment", "namespace": "team-a",
                "annotations": {"propagationpolicy.karmada.io/name": "spread",
                                "propagationpolicy.karmada.io/namespace": "team-a"}},
            "spec": {
                "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "clusters": [{"name": "east", "replicas": 2}, {"name": "west", "replicas": 1},
                             {"name": "north", "replicas": 1}]
            },
            "status": {"aggregatedStatus": [
                {"clusterName": "west", "applied": true, "health": "Healthy",
                 "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "updatedReplicas": 1}},
                {"clusterName": "east", "applied": true, "health": "Unhealthy",
                 "status": {"replicas": 2, "readyReplicas": 1, "availableReplicas": 0}},
                {"clusterName": "north", "applied": false, "appliedMessage": "quota exceeded"}
            ]}
        }))
        .unwrap()
    }

    #[test]
    fn a_propagated_deployment_sums_member_status() {
        let w = workload(&deployment(Some(4), 0, false), Some(&binding()));
        assert_eq!((w.name.as_str(), w.namespace.as_str()), ("web", "team-a"));
        assert_eq!(w.replicas, 4);
        assert_eq!((w.ready_replicas, w.available_replicas), (2, 1));
        assert_eq!(w.binding.as_deref(), Some("web-deployment"));
        assert_eq!(w.policy.as_deref(), Some("team-a/spread"));
        let names: Vec<&str> = w.clusters.iter().map(|c| c.cluster.as_str()).collect();
        assert_eq!(names, ["east", "north", "west"]);
        let east = &w.clusters[0];
        assert_eq!(east.scheduled_replicas, Some(2));
        assert_eq!(east.ready_replicas, Some(1));
        assert_eq!(east.health.as_deref(), Some("Unhealthy"));
        let north = &w.clusters[1];
        assert_eq!(north.applied, Some(false));
        assert_eq!(north.message.as_deref(), Some("quota exceeded"));
        assert_eq!(north.replicas, None);
        assert_eq!(w.deployment["metadata"]["name"], "web");
    }

    #[test]
    fn an_unpropagated_deployment_reports_its_own_status() {
        let w = workload(&deployment(None, 1, true), None);
        assert_eq!(w.replicas, 1, "spec.replicas defaults to 1");
        assert_eq!((w.ready_replicas, w.available_replicas), (1, 1));
        assert!(w.paused);
        assert!(w.clusters.is_empty());
        assert_eq!((w.binding, w.policy), (None, None));
        assert_eq!(deployment_binding_name("Web:v1"), "web.v1-deployment");
    }

    #[test]
    fn daemonsets_count_nodes_and_statefulsets_replicas() {
        let daemonset: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "team-a"},
            "status": {"desiredNumberScheduled": 5, "numberReady": 4}
        }))
        .unwrap();
        let binding: ResourceBinding = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "agent-daemonset", "namespace": "team-a"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent"},
                "clusters": [{"name": "east"}, {"name": "west"}]},
            "status": {"aggregatedStatus": [
                {"clusterName": "east", "applied": true, "health": "Healthy",
                 "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3,
                    "numberReady": 3, "numberAvailable": 3, "updatedNumberScheduled": 3}},
                {"clusterName": "west", "applied": true, "health": "Unhealthy",
                 "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2,
                    "numberReady": 1, "numberAvailable": 1, "updatedNumberScheduled": 2}}
            ]}
        }))
        .unwrap();
        let w = workload(&daemonset, Some(&binding));
        assert_eq!(w.replicas, 5, "a DaemonSet wants its nodes");
        assert_eq!((w.ready_replicas, w.available_replicas), (4, 4));
        let west = &w.clusters[1];
        assert_eq!(
            (
                west.scheduled_replicas,
                west.replicas,
                west.ready_replicas,
                west.updated_replicas
            ),
            (None, Some(2), Some(1), Some(2))
        );
        let statefulset = json!({"readyReplicas": 2, "replicas": 3, "currentReplicas": 3,
            "updatedReplicas": 1, "availableReplicas": 2});
        assert_eq!(
            member_numbers("StatefulSet", &statefulset),
            [Some(3), Some(2), Some(2), Some(1)]
        );
        assert_eq!(
            member_numbers("Job", &json!({"active": 2, "succeeded": 1})),
            [Some(2), None, None, None]
        );
        let job: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
            "spec": {"parallelism": 4}
        }))
        .unwrap();
        assert_eq!(workload(&job, None).replicas, 4);
    }

    #[test]
    fn binding_objects_parse_and_name_cluster_policies() {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "web-deployment", "namespace": "team-a",
                "labels": {"clusterpropagationpolicy.karmada.io/name": "global"}},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}
        }))
        .unwrap();
        let parsed = parse_binding(&object).unwrap();
        let w = workload(&deployment(Some(1), 0, false), Some(&parsed));
        assert_eq!(w.policy.as_deref(), Some("global"));
        assert!(w.clusters.is_empty());
    }
}
