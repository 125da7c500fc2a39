//! Karmada's scheduling rules as plain functions: which member clusters a placement admits
//! (cluster affinity, exclusion, taints and tolerations, spread-constraint properties), and how
//! a workload's replicas are spread over them (Duplicated; Divided by static weights, by
//! available replicas or aggregated). Each cluster left out comes back with Karmada's reason.
//!
//! Followed from karmada-io/karmada at v1.19 (`pkg/scheduler/core/generic_scheduler.go`
//! `Schedule`, `pkg/scheduler/core/common.go`, `pkg/scheduler/core/assignment.go`,
//! `pkg/scheduler/core/division_algorithm.go`, `pkg/util/helper/webstermethod.go`,
//! `pkg/util/selector.go` `ClusterMatches`, the filter plugins under
//! `pkg/scheduler/framework/plugins/`, and the general estimator
//! `pkg/estimator/client/general.go`). The input is what a ResourceBinding carries (the
//! policy's placement, the workload's replicas and per-replica requests) and the Clusters.

mod divide;
mod filter;
mod replicas;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::{Deserialize, Serialize};

use crate::models::cluster::Cluster;

pub use divide::{available_replicas, webster};
pub use filter::{
    AFFINITY_MISMATCH, NOT_READY_TAINTS, affinity_matches, label_selector_matches,
    untolerated_taint,
};
pub use replicas::{pod_spec_requests, replicas, workload_of_template};

/// `replicaSchedulingType: Duplicated`.
pub const DUPLICATED: &str = "Duplicated";
/// `replicaSchedulingType: Divided`.
pub const DIVIDED: &str = "Divided";
/// `replicaDivisionPreference: Aggregated`.
pub const AGGREGATED: &str = "Aggregated";
/// `replicaDivisionPreference: Weighted`.
pub const WEIGHTED: &str = "Weighted";
/// `weightPreference.dynamicWeight: AvailableReplicas`.
pub const DYNAMIC_BY_AVAILABLE_REPLICAS: &str = "AvailableReplicas";

/// A placement field selector requirement (`key` is `provider`, `region` or `zone`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FieldRequirement {
    /// `provider`, `region` or `zone`.
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`.
    pub operator: String,
    /// The values for `In` and `NotIn`.
    #[serde(default)]
    pub values: Vec<String>,
}

/// `clusterAffinity.fieldSelector`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FieldSelector {
    /// All must hold.
    #[serde(default)]
    pub match_expressions: Vec<FieldRequirement>,
}

/// A set of clusters by name, labels and fields, minus the excluded ones.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAffinity {
    /// Clusters by name (empty: any).
    #[serde(default)]
    pub cluster_names: Vec<String>,
    /// Clusters never selected.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Clusters by label.
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    /// Clusters by provider, region and zones.
    #[serde(default)]
    pub field_selector: Option<FieldSelector>,
}

/// A `spreadConstraints` entry.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SpreadConstraint {
    /// `cluster`, `region`, `zone` or `provider`.
    #[serde(default)]
    pub spread_by_field: Option<String>,
    /// A cluster label to spread by.
    #[serde(default)]
    pub spread_by_label: Option<String>,
    /// At most this many groups.
    #[serde(default)]
    pub max_groups: usize,
    /// At least this many groups.
    #[serde(default)]
    pub min_groups: usize,
}

/// A `staticWeightList` entry.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StaticWeight {
    /// The clusters this weight is for.
    pub target_cluster: ClusterAffinity,
    /// Their weight.
    pub weight: i64,
}

/// `replicaScheduling.weightPreference`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WeightPreference {
    /// Fixed weights.
    #[serde(default)]
    pub static_weight_list: Vec<StaticWeight>,
    /// `AvailableReplicas`: weights from what each cluster can still hold.
    #[serde(default)]
    pub dynamic_weight: Option<String>,
}

/// `placement.replicaScheduling`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaScheduling {
    /// `Duplicated` (the default) or `Divided`.
    #[serde(default)]
    pub replica_scheduling_type: Option<String>,
    /// `Aggregated` or `Weighted` (for `Divided`).
    #[serde(default)]
    pub replica_division_preference: Option<String>,
    /// Weights for `Weighted`.
    #[serde(default)]
    pub weight_preference: Option<WeightPreference>,
}

/// The scheduling part of a policy's `placement`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// Which clusters may be chosen.
    #[serde(default)]
    pub cluster_affinity: Option<ClusterAffinity>,
    /// Cluster taints tolerated.
    #[serde(default)]
    pub cluster_tolerations: Vec<Toleration>,
    /// How many groups of clusters to choose.
    #[serde(default)]
    pub spread_constraints: Vec<SpreadConstraint>,
    /// How replicas go to the chosen clusters.
    #[serde(default)]
    pub replica_scheduling: Option<ReplicaScheduling>,
}

impl Placement {
    /// The placement of a policy's `spec.placement` (unknown fields ignored).
    pub fn from_value(placement: &serde_json::Value) -> Result<Placement, serde_json::Error> {
        serde_json::from_value(placement.clone())
    }

    fn scheduling_type(&self) -> &str {
        self.replica_scheduling
            .as_ref()
            .and_then(|r| r.replica_scheduling_type.as_deref())
            .unwrap_or(DUPLICATED)
    }
}

/// What one replica of the workload asks for, and how many replicas it has.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Workload {
    /// Desired replicas (0 for objects without replicas: they go whole to every cluster).
    pub replicas: i32,
    /// Per-replica requests (`cpu`, `memory`, ...), as quantities.
    pub resource_request: BTreeMap<String, String>,
    /// Whether the object has replicas at all (`spec.replicaRequirements` is set).
    pub has_replica_requirements: bool,
    /// The current assignment (the binding's `spec.clusters`), kept where the rules allow.
    pub scheduled: Vec<TargetCluster>,
    /// The resource template's uid: breaks ties in the division as Karmada does.
    pub uid: String,
}

/// A chosen cluster and its replicas.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct TargetCluster {
    /// Cluster name.
    pub name: String,
    /// Replicas placed there (omitted from the binding when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replicas: i32,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// Which rule left a cluster out.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
pub enum Exclusion {
    /// The placement's cluster affinity (names, labels, fields, `exclude`) does not match it.
    ClusterAffinity,
    /// It has a NoSchedule or NoExecute taint the placement does not tolerate.
    Taint,
    /// It is not Ready: it carries the taint Karmada's cluster controller puts on clusters
    /// that are not Ready ([`NOT_READY_TAINTS`]) and the placement does not tolerate it.
    NotReady,
    /// The spread constraints: it lacks the property spread by, or was not among the groups
    /// chosen.
    SpreadConstraint,
    /// Not enough allocatable resources: it can hold no replica (dynamic division), or the
    /// clusters together cannot hold the replicas.
    Resources,
    /// The division gave it no replica (a static weight of 0, or fewer replicas than
    /// clusters).
    NoReplicas,
}

/// A cluster that was not chosen and why, in Karmada's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOut {
    /// Cluster name.
    pub cluster: String,
    /// Which rule left it out.
    pub exclusion: Exclusion,
    /// Karmada's filter or selection reason.
    pub reason: String,
}

/// The outcome of scheduling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Chosen clusters in name order, with their replicas.
    pub clusters: Vec<TargetCluster>,
    /// Every cluster left out, with its reason.
    pub left_out: Vec<LeftOut>,
}

/// Why nothing could be scheduled: Karmada's message (the Scheduled condition's message) and
/// every cluster, each with the reason it was left out (the filters' reason, or the
/// selection's or the division's failure for the clusters that passed the filters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unschedulable {
    /// The message Karmada's scheduler reports.
    pub message: String,
    /// Every cluster left out, with its reason.
    pub left_out: Vec<LeftOut>,
}

impl std::fmt::Display for Unschedulable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Unschedulable {}

/// Left out because spread constraints or the division gave it nothing.
pub const NOT_SELECTED: &str = "cluster(s) were not selected by the spread constraints";
/// Left out because the division gave it no replica.
pub const NO_REPLICAS: &str = "cluster(s) were assigned no replicas";
/// Left out by a dynamic division because it can hold no replica.
pub const NO_ROOM: &str = "cluster(s) did not have enough allocatable resources for one replica";

/// Chooses clusters and replicas for `workload` under `placement` among `clusters`, as
/// Karmada's `genericScheduler.Schedule` does: filter, select (spread constraints), assign.
pub fn schedule(
    placement: &Placement,
    workload: &Workload,
    clusters: &[Cluster],
) -> Result<Decision, Unschedulable> {
    let mut left_out = Vec::new();
    let mut feasible = Vec::new();
    let mut total = 0usize;
    for cluster in clusters {
        // Clusters being deleted are skipped without a reason (`findClustersThatFit`).
        if cluster.metadata.deletion_timestamp.is_some() {
            continue;
        }
        total += 1;
        match filter::reason(placement, workload, cluster) {
            Some((exclusion, reason)) => left_out.push(LeftOut {
                cluster: name(cluster).to_owned(),
                exclusion,
                reason,
            }),
            None => feasible.push(cluster),
        }
    }
    if feasible.is_empty() {
        left_out.sort_by(|a, b| a.cluster.cmp(&b.cluster));
        return Err(Unschedulable {
            message: fit_error(total, &left_out),
            left_out,
        });
    }
    // Candidates with what each can still hold, sorted as `generateClustersInfo` does:
    // available replicas (plus what it holds already) descending, then name.
    let mut candidates: Vec<divide::Candidate> = feasible
        .iter()
        .map(|c| {
            let allocatable = available_replicas(c, &workload.resource_request);
            let held = workload
                .scheduled
                .iter()
                .find(|t| t.name == name(c))
                .map_or(0, |t| i64::from(t.replicas));
            divide::Candidate {
                name: name(c).to_owned(),
                cluster: (*c).clone(),
                allocatable,
                available: i64::from(allocatable) + held,
            }
        })
        .collect();
    candidates.sort_by(|a, b| b.available.cmp(&a.available).then(a.name.cmp(&b.name)));
    // A failed selection or division leaves out every cluster that passed the filters.
    let unschedulable =
        |message: String, mut left_out: Vec<LeftOut>, candidates: &[divide::Candidate]| {
            let exclusion = if message.contains("enough") {
                Exclusion::Resources
            } else if message.starts_with("failed to select") {
                Exclusion::SpreadConstraint
            } else {
                Exclusion::NoReplicas
            };
            for c in candidates {
                left_out.push(LeftOut {
                    cluster: c.name.clone(),
                    exclusion,
                    reason: message.clone(),
                });
            }
            left_out.sort_by(|a, b| a.cluster.cmp(&b.cluster));
            Unschedulable { message, left_out }
        };
    let selected = match divide::select(placement, workload, candidates.clone()) {
        Ok(selected) => selected,
        Err(message) => return Err(unschedulable(message, left_out, &candidates)),
    };
    let assigned = match divide::assign(placement, workload, &selected.chosen) {
        Ok(assigned) => assigned,
        Err(message) => return Err(unschedulable(message, left_out, &candidates)),
    };
    for c in &selected.dropped {
        left_out.push(LeftOut {
            cluster: c.clone(),
            exclusion: Exclusion::SpreadConstraint,
            reason: NOT_SELECTED.to_owned(),
        });
    }
    let dynamic = divide::is_dynamic(placement);
    let mut chosen: Vec<TargetCluster> = Vec::new();
    for c in &selected.chosen {
        match assigned.iter().find(|t| t.name == c.name) {
            Some(t) => chosen.push(t.clone()),
            // A dynamic division weighs clusters by what they can hold: one that can hold
            // nothing was left out for want of resources.
            None if dynamic && c.allocatable <= 0 => left_out.push(LeftOut {
                cluster: c.name.clone(),
                exclusion: Exclusion::Resources,
                reason: NO_ROOM.to_owned(),
            }),
            None => left_out.push(LeftOut {
                cluster: c.name.clone(),
                exclusion: Exclusion::NoReplicas,
                reason: NO_REPLICAS.to_owned(),
            }),
        }
    }
    chosen.sort_by(|a, b| a.name.cmp(&b.name));
    left_out.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    Ok(Decision {
        clusters: chosen,
        left_out,
    })
}

fn name(cluster: &Cluster) -> &str {
    cluster.metadata.name.as_deref().unwrap_or_default()
}

/// `FitError.Error` (`pkg/scheduler/framework/types.go`): "0/N clusters are available: ..."
/// with each reason counted, sorted.
fn fit_error(total: usize, left_out: &[LeftOut]) -> String {
    if total == 0 || left_out.is_empty() {
        return format!("0/{total} clusters are available: no cluster exists.");
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for l in left_out {
        *counts.entry(l.reason.as_str()).or_default() += 1;
    }
    let mut parts: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    format!("0/{total} clusters are available: {}.", parts.join(", "))
}
