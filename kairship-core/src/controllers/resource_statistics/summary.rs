//! The resource-statistics controller's arithmetic: sums over member clusters and counts of
//! objects, combined into `status.summary`, and the comparison that decides whether a write
//! is needed.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use kube_kit::quantity::{Quantity, QuantityError};

use crate::instance::{
    CountSummary, InstanceSummary, PolicyTotalNum, ResourceSummary, ResourceTotalNum,
    WorkloadSummary,
};
use crate::models::cluster::Cluster;

/// Which of a member's `resourceSummary` maps a quantity came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceBucket {
    /// `allocatable`.
    Allocatable,
    /// `allocating`.
    Allocating,
    /// `allocated`.
    Allocated,
}

/// A member's quantity that could not be parsed and was left out of the sums.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedQuantity {
    /// Member cluster name.
    pub cluster: String,
    /// Which map it was in.
    pub bucket: ResourceBucket,
    /// Resource name (`cpu`, ...).
    pub resource: String,
    /// Why it was skipped.
    pub error: QuantityError,
}

/// Sums over the member clusters of one instance.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterAndResourceSummary {
    /// Member clusters: all, and those whose Ready condition is `True`.
    pub cluster_summary: CountSummary,
    /// Sum of the members' `nodeSummary`.
    pub node_summary: CountSummary,
    /// Per-resource sums of the members' `resourceSummary`, in canonical form.
    pub resource_summary: ResourceSummary,
    /// Quantities left out because they do not parse (for logging; they never fail the sum).
    pub skipped: Vec<SkippedQuantity>,
}

/// Counts of objects in an instance's control plane, as read from watch caches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObjectCounts {
    /// Services.
    pub services: usize,
    /// Secrets.
    pub secrets: usize,
    /// ConfigMaps.
    pub configmaps: usize,
    /// PersistentVolumeClaims.
    pub persistentvolumeclaims: usize,
    /// PropagationPolicies.
    pub propagation_policies: usize,
    /// ClusterPropagationPolicies.
    pub cluster_propagation_policies: usize,
    /// OverridePolicies.
    pub override_policies: usize,
    /// ClusterOverridePolicies.
    pub cluster_override_policies: usize,
    /// Deployments, total and ready (see [`deployment_counts`]).
    pub deployments: CountSummary,
}

fn to_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Adds `values` into `totals`, recording the ones that do not parse.
fn add_quantities(
    totals: &mut BTreeMap<String, Quantity>,
    values: &BTreeMap<String, K8sQuantity>,
    cluster: &str,
    bucket: ResourceBucket,
    skipped: &mut Vec<SkippedQuantity>,
) {
    for (resource, raw) in values {
        match Quantity::try_from(raw) {
            Ok(q) => {
                let total = totals.entry(resource.clone()).or_insert(Quantity::ZERO);
                *total += q;
            }
            Err(error) => skipped.push(SkippedQuantity {
                cluster: cluster.to_owned(),
                bucket,
                resource: resource.clone(),
                error,
            }),
        }
    }
}

fn canonical(totals: BTreeMap<String, Quantity>) -> BTreeMap<String, K8sQuantity> {
    totals
        .into_iter()
        .map(|(k, q)| (k, K8sQuantity::from(q)))
        .collect()
}

/// Sums the members' node and resource summaries and counts clusters (ready = the `Ready`
/// condition has status `"True"`).
///
/// Members are visited in name order so that the printed format of a sum (decided by the
/// first non-zero addend, as in apimachinery) does not depend on cache iteration order.
pub fn aggregate(clusters: &[Cluster]) -> ClusterAndResourceSummary {
    let mut ordered: Vec<&Cluster> = clusters.iter().collect();
    ordered.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));

    let mut nodes_total: i64 = 0;
    let mut nodes_ready: i64 = 0;
    let mut allocatable = BTreeMap::new();
    let mut allocating = BTreeMap::new();
    let mut allocated = BTreeMap::new();
    let mut skipped = Vec::new();
    for cluster in &ordered {
        let Some(status) = &cluster.status else {
            continue;
        };
        if let Some(nodes) = &status.node_summary {
            nodes_total += i64::from(nodes.total_num.max(0));
            nodes_ready += i64::from(nodes.ready_num.max(0));
        }
        if let Some(resources) = &status.resource_summary {
            let name = cluster.metadata.name.as_deref().unwrap_or_default();
            add_quantities(
                &mut allocatable,
                &resources.allocatable,
                name,
                ResourceBucket::Allocatable,
                &mut skipped,
            );
            add_quantities(
                &mut allocating,
                &resources.allocating,
                name,
                ResourceBucket::Allocating,
                &mut skipped,
            );
            add_quantities(
                &mut allocated,
                &resources.allocated,
                name,
                ResourceBucket::Allocated,
                &mut skipped,
            );
        }
    }
    ClusterAndResourceSummary {
        cluster_summary: CountSummary {
            total_num: to_i32(ordered.len()),
            ready_num: to_i32(ordered.iter().filter(|c| c.is_ready()).count()),
        },
        node_summary: CountSummary {
            total_num: i32::try_from(nodes_total).unwrap_or(i32::MAX),
            ready_num: i32::try_from(nodes_ready).unwrap_or(i32::MAX),
        },
        resource_summary: ResourceSummary {
            allocatable: canonical(allocatable),
            allocating: canonical(allocating),
            allocated: canonical(allocated),
        },
        skipped,
    }
}

/// Whether a Deployment counts as ready: its controller has observed the current
/// generation and all desired replicas (default 1) are ready.
pub fn deployment_is_ready(deployment: &Deployment) -> bool {
    let status = deployment
        .status
        .as_ref()
        .map(|s| (s.observed_generation, s.ready_replicas));
    is_ready(
        deployment.metadata.generation,
        deployment.spec.as_ref().and_then(|s| s.replicas),
        status,
    )
}

/// The rule of [`deployment_is_ready`] over the fields it reads: `metadata.generation`,
/// `spec.replicas` and, when there is a status, its `observedGeneration` and `readyReplicas`.
fn is_ready(
    generation: Option<i64>,
    replicas: Option<i32>,
    status: Option<(Option<i64>, Option<i32>)>,
) -> bool {
    let desired = replicas.unwrap_or(1);
    let Some((observed_generation, ready_replicas)) = status else {
        return desired == 0;
    };
    let observed = match (generation, observed_generation) {
        (Some(generation), Some(observed)) => observed >= generation,
        (Some(_), None) => false,
        (None, _) => true,
    };
    observed && ready_replicas.unwrap_or(0) >= desired
}

/// What [`deployment_json_is_ready`] reads of a Deployment's JSON; serde skips the rest of the
/// text without building anything of it.
#[derive(serde::Deserialize)]
struct ReadinessFields {
    #[serde(default)]
    metadata: ReadinessMeta,
    #[serde(default)]
    spec: Option<ReadinessSpec>,
    #[serde(default)]
    status: Option<ReadinessStatus>,
}

#[derive(serde::Deserialize, Default)]
struct ReadinessMeta {
    #[serde(default)]
    generation: Option<i64>,
}

#[derive(serde::Deserialize)]
struct ReadinessSpec {
    #[serde(default)]
    replicas: Option<i32>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadinessStatus {
    #[serde(default)]
    observed_generation: Option<i64>,
    #[serde(default)]
    ready_replicas: Option<i32>,
}

/// [`deployment_is_ready`] of a Deployment given as its JSON (as the shared instance cache
/// keeps it), reading only the fields the rule needs; an error when the JSON is not a
/// Deployment's.
pub fn deployment_json_is_ready(json: &[u8]) -> Result<bool, serde_json::Error> {
    let fields: ReadinessFields = serde_json::from_slice(json)?;
    Ok(is_ready(
        fields.metadata.generation,
        fields.spec.and_then(|s| s.replicas),
        fields
            .status
            .map(|s| (s.observed_generation, s.ready_replicas)),
    ))
}

/// Total and ready Deployments, from whether each one is ready.
pub fn deployment_summary(readiness: impl IntoIterator<Item = bool>) -> CountSummary {
    let (total, ready) = readiness
        .into_iter()
        .fold((0usize, 0usize), |(t, r), ready| {
            (t + 1, r + usize::from(ready))
        });
    CountSummary {
        total_num: to_i32(total),
        ready_num: to_i32(ready),
    }
}

/// Total and ready Deployments.
pub fn deployment_counts<'a>(
    deployments: impl IntoIterator<Item = &'a Deployment>,
) -> CountSummary {
    deployment_summary(deployments.into_iter().map(deployment_is_ready))
}

/// Combines the member sums with object counts into `status.summary`. Policy counts add
/// the namespaced and the cluster-scoped kinds.
pub fn instance_summary(
    members: &ClusterAndResourceSummary,
    counts: &ObjectCounts,
) -> InstanceSummary {
    InstanceSummary {
        cluster_summary: members.cluster_summary,
        node_summary: members.node_summary,
        resource_summary: members.resource_summary.clone(),
        resource_total_num: ResourceTotalNum {
            services: to_i64(counts.services),
            secrets: to_i64(counts.secrets),
            configmaps: to_i64(counts.configmaps),
            persistentvolumeclaims: to_i64(counts.persistentvolumeclaims),
        },
        policy_total_num: PolicyTotalNum {
            propagationpolicies: to_i64(
                counts
                    .propagation_policies
                    .saturating_add(counts.cluster_propagation_policies),
            ),
            overridepolicies: to_i64(
                counts
                    .override_policies
                    .saturating_add(counts.cluster_override_policies),
            ),
        },
        workload_summary: WorkloadSummary {
            deployments: counts.deployments,
        },
    }
}

/// Whether two quantity maps hold the same values (`1Gi` equals `1024Mi`); a value that
/// does not parse is compared as text.
fn same_quantities(a: &BTreeMap<String, K8sQuantity>, b: &BTreeMap<String, K8sQuantity>) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|((ka, va), (kb, vb))| {
            ka == kb
                && match (Quantity::try_from(va), Quantity::try_from(vb)) {
                    (Ok(x), Ok(y)) => x == y,
                    _ => va == vb,
                }
        })
}

/// Whether `desired` differs from the stored summary in value, so the controller writes only
/// on a real change (a stored `1024Mi` and a computed `1Gi` are the same).
pub fn needs_update(current: Option<&InstanceSummary>, desired: &InstanceSummary) -> bool {
    let Some(current) = current else { return true };
    let (cr, dr) = (&current.resource_summary, &desired.resource_summary);
    current.cluster_summary != desired.cluster_summary
        || current.node_summary != desired.node_summary
        || current.resource_total_num != desired.resource_total_num
        || current.policy_total_num != desired.policy_total_num
        || current.workload_summary != desired.workload_summary
        || !same_quantities(&cr.allocatable, &dr.allocatable)
        || !same_quantities(&cr.allocating, &dr.allocating)
        || !same_quantities(&cr.allocated, &dr.allocated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::ObjectCondition;
    use crate::models::cluster::{ClusterResourceSummary, ClusterSpec, ClusterStatus, NodeSummary};
    use k8s_openapi::api::apps::v1::{DeploymentSpec, DeploymentStatus};

    fn q(s: &str) -> K8sQuantity {
        K8sQuantity(s.to_owned())
    }

    fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, K8sQuantity> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), q(v))).collect()
    }

    fn member(
        name: &str,
        ready: Option<&str>,
        nodes: (i32, i32),
        allocatable: &[(&str, &str)],
    ) -> Cluster {
        let mut c = Cluster::new(name, ClusterSpec::default());
        c.status = Some(ClusterStatus {
            conditions: ready
                .map(|s| ObjectCondition {
                    type_: "Ready".into(),
                    status: s.into(),
                    ..Default::default()
                })
                .into_iter()
                .collect(),
            node_summary: Some(NodeSummary {
                total_num: nodes.0,
                ready_num: nodes.1,
            }),
            resource_summary: Some(ClusterResourceSummary {
                allocatable: quantities(allocatable),
                allocated: quantities(&[("cpu", "500m")]),
                ..Default::default()
            }),
            ..Default::default()
        });
        c
    }

    #[test]
    fn aggregate_cases() {
        struct Case {
            name: &'static str,
            clusters: Vec<Cluster>,
            clusters_total_ready: (i32, i32),
            nodes: (i32, i32),
            allocatable: &'static [(&'static str, &'static str)],
            skipped: usize,
        }
        let no_status = Cluster::new("bare", ClusterSpec::default());
        let cases = vec![
            Case {
                name: "empty",
                clusters: vec![],
                clusters_total_ready: (0, 0),
                nodes: (0, 0),
                allocatable: &[],
                skipped: 0,
            },
            Case {
                name: "two ready members",
                clusters: vec![
                    member(
                        "a",
                        Some("True"),
                        (3, 3),
                        &[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")],
                    ),
                    member(
                        "b",
                        Some("True"),
                        (2, 1),
                        &[("cpu", "1500m"), ("memory", "4Gi"), ("pods", "110")],
                    ),
                ],
                clusters_total_ready: (2, 2),
                nodes: (5, 4),
                allocatable: &[("cpu", "5500m"), ("memory", "12Gi"), ("pods", "220")],
                skipped: 0,
            },
            Case {
                name: "ready only when status is exactly True",
                clusters: vec![
                    member("a", Some("True"), (1, 1), &[("cpu", "1")]),
                    member("b", Some("False"), (1, 0), &[("cpu", "1")]),
                    member("c", Some("Unknown"), (1, 0), &[("cpu", "1")]),
                    member("d", None, (1, 1), &[("cpu", "1")]),
                    no_status.clone(),
                ],
                clusters_total_ready: (5, 1),
                nodes: (4, 2),
                allocatable: &[("cpu", "4")],
                skipped: 0,
            },
            Case {
                name: "mixed units and formats",
                clusters: vec![
                    member(
                        "a",
                        Some("True"),
                        (1, 1),
                        &[("memory", "1Gi"), ("ephemeral-storage", "100G")],
                    ),
                    member(
                        "b",
                        Some("True"),
                        (1, 1),
                        &[("memory", "512Mi"), ("ephemeral-storage", "0.5T")],
                    ),
                    member("c", Some("True"), (1, 1), &[("nvidia.com/gpu", "2")]),
                ],
                clusters_total_ready: (3, 3),
                nodes: (3, 3),
                allocatable: &[
                    ("memory", "1536Mi"),
                    ("ephemeral-storage", "600G"),
                    ("nvidia.com/gpu", "2"),
                ],
                skipped: 0,
            },
            Case {
                name: "unparseable quantity is skipped, the rest still sums",
                clusters: vec![
                    member(
                        "a",
                        Some("True"),
                        (1, 1),
                        &[("cpu", "2"), ("memory", "lots")],
                    ),
                    member(
                        "b",
                        Some("True"),
                        (1, 1),
                        &[("cpu", "2"), ("memory", "1Gi")],
                    ),
                ],
                clusters_total_ready: (2, 2),
                nodes: (2, 2),
                allocatable: &[("cpu", "4"), ("memory", "1Gi")],
                skipped: 1,
            },
        ];
        for case in cases {
            let got = aggregate(&case.clusters);
            assert_eq!(
                (got.cluster_summary.total_num, got.cluster_summary.ready_num),
                case.clusters_total_ready,
                "{}: clusters",
                case.name
            );
            assert_eq!(
                (got.node_summary.total_num, got.node_summary.ready_num),
                case.nodes,
                "{}: nodes",
                case.name
            );
            assert_eq!(
                got.resource_summary.allocatable,
                quantities(case.allocatable),
                "{}: allocatable",
                case.name
            );
            assert_eq!(got.skipped.len(), case.skipped, "{}: skipped", case.name);
        }
    }

    #[test]
    fn aggregate_sums_every_bucket_and_is_order_independent() {
        let a = member("a", Some("True"), (1, 1), &[("memory", "1000Mi")]);
        let b = member("b", Some("True"), (1, 1), &[("memory", "1G")]);
        let forward = aggregate(&[a.clone(), b.clone()]);
        let backward = aggregate(&[b, a]);
        assert_eq!(forward, backward);
        assert_eq!(
            forward.resource_summary.allocated,
            quantities(&[("cpu", "1")])
        );
        assert!(forward.resource_summary.allocating.is_empty());
    }

    fn deployment(
        replicas: Option<i32>,
        ready: Option<i32>,
        generation: Option<i64>,
        observed: Option<i64>,
    ) -> Deployment {
        Deployment {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                generation,
                ..Default::default()
            },
            spec: Some(DeploymentSpec {
                replicas,
                ..Default::default()
            }),
            status: Some(DeploymentStatus {
                ready_replicas: ready,
                observed_generation: observed,
                ..Default::default()
            }),
        }
    }

    #[test]
    fn readiness_from_json_is_readiness_of_the_decoded_deployment() {
        let template = serde_json::json!({"metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        // (generation, spec.replicas, observedGeneration, readyReplicas, status present)
        let cases = [
            (Some(2), Some(3), Some(2), Some(3), true),
            (Some(2), Some(3), Some(1), Some(3), true),
            (Some(2), Some(3), Some(2), Some(2), true),
            (Some(1), None, Some(1), Some(1), true),
            (Some(1), Some(0), None, None, false),
            (Some(1), Some(1), None, None, false),
            (None, Some(1), None, Some(1), true),
            (None, None, None, None, false),
            (Some(3), Some(2), Some(4), Some(5), true),
        ];
        for (generation, replicas, observed, ready, has_status) in cases {
            let mut whole = serde_json::json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "n", "resourceVersion": "7",
                    "generation": generation, "annotations": {"a": "b"},
                    "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "a"}},
                    "template": template},
            });
            if has_status {
                whole["status"] = serde_json::json!({"observedGeneration": observed,
                    "readyReplicas": ready,
                    "conditions": [{"type": "Available", "status": "True"}]});
            }
            let text = whole.to_string();
            let decoded: Deployment = serde_json::from_str(&text).unwrap();
            assert_eq!(
                deployment_json_is_ready(text.as_bytes()).unwrap(),
                deployment_is_ready(&decoded),
                "{text}"
            );
        }
        // As list items arrive (no apiVersion or kind), and objects without spec or status.
        for (json, want) in [
            (r#"{"metadata":{"name":"d"},"spec":{"replicas":0}}"#, true),
            (r#"{"metadata":{"name":"d"}}"#, false),
            (
                r#"{"metadata":{"name":"d"},"spec":null,"status":null}"#,
                false,
            ),
            (
                r#"{"metadata":{"name":"d"},"status":{"readyReplicas":1}}"#,
                true,
            ),
        ] {
            assert_eq!(
                deployment_json_is_ready(json.as_bytes()).unwrap(),
                want,
                "{json}"
            );
        }
        for bad in [
            "7",
            "{\"metadata\":{\"generation\":\"two\"}}",
            "{\"spec\":{\"replicas\":[]}}",
        ] {
            assert!(deployment_json_is_ready(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn deployment_readiness() {
        let cases = [
            (deployment(Some(3), Some(3), Some(2), Some(2)), true),
            (deployment(Some(3), Some(2), Some(2), Some(2)), false),
            (deployment(None, Some(1), None, None), true),
            (deployment(None, None, None, None), false),
            (deployment(Some(0), None, Some(1), Some(1)), true),
            (deployment(Some(2), Some(2), Some(3), Some(2)), false),
            (deployment(Some(2), Some(2), Some(3), None), false),
        ];
        for (i, (d, want)) in cases.iter().enumerate() {
            assert_eq!(deployment_is_ready(d), *want, "case {i}");
        }
        let counts = deployment_counts(cases.iter().map(|(d, _)| d));
        assert_eq!(
            counts,
            CountSummary {
                total_num: 7,
                ready_num: 3
            }
        );
    }

    #[test]
    fn instance_summary_combines_counts() {
        let members = aggregate(&[member("a", Some("True"), (2, 2), &[("cpu", "2")])]);
        let counts = ObjectCounts {
            services: 4,
            secrets: 5,
            configmaps: 6,
            persistentvolumeclaims: 1,
            propagation_policies: 3,
            cluster_propagation_policies: 2,
            override_policies: 1,
            cluster_override_policies: 1,
            deployments: CountSummary {
                total_num: 9,
                ready_num: 8,
            },
        };
        let s = instance_summary(&members, &counts);
        assert_eq!(
            s.cluster_summary,
            CountSummary {
                total_num: 1,
                ready_num: 1
            }
        );
        assert_eq!(
            s.policy_total_num,
            PolicyTotalNum {
                propagationpolicies: 5,
                overridepolicies: 2
            }
        );
        assert_eq!(s.resource_total_num.configmaps, 6);
        assert_eq!(s.workload_summary.deployments.ready_num, 8);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["resourceTotalNum"]["persistentvolumeclaims"], 1);
        assert_eq!(json["policyTotalNum"]["propagationpolicies"], 5);
        assert_eq!(json["workloadSummary"]["deployments"]["totalNum"], 9);
        assert_eq!(json["resourceSummary"]["allocatable"]["cpu"], "2");
    }

    #[test]
    fn update_only_on_real_change() {
        let members = aggregate(&[member(
            "a",
            Some("True"),
            (2, 2),
            &[("memory", "1Gi"), ("cpu", "1")],
        )]);
        let desired = instance_summary(&members, &ObjectCounts::default());
        assert!(needs_update(None, &desired));
        assert!(!needs_update(Some(&desired), &desired));
        let mut respelled = desired.clone();
        respelled
            .resource_summary
            .allocatable
            .insert("memory".into(), q("1024Mi"));
        respelled
            .resource_summary
            .allocatable
            .insert("cpu".into(), q("1000m"));
        assert!(
            !needs_update(Some(&respelled), &desired),
            "same values, other spelling"
        );
        let mut changed = desired.clone();
        changed
            .resource_summary
            .allocatable
            .insert("cpu".into(), q("1001m"));
        assert!(needs_update(Some(&changed), &desired));
        let mut extra_key = desired.clone();
        extra_key
            .resource_summary
            .allocating
            .insert("cpu".into(), q("0"));
        assert!(needs_update(Some(&extra_key), &desired));
        let mut count = desired.clone();
        count.node_summary.ready_num = 1;
        assert!(needs_update(Some(&count), &desired));
    }
}
