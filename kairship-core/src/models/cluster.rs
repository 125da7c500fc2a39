//! Karmada's member `Cluster` (`cluster.karmada.io/v1alpha1`, cluster-scoped), served by
//! karmada-aggregated-apiserver.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::{Deserialize, Serialize};

use super::{Extra, NamespacedSecretRef, ObjectCondition, find_condition, root_object};

/// The Ready condition type of a member cluster.
pub const CLUSTER_CONDITION_READY: &str = "Ready";

/// How a member cluster receives resources from the control plane.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClusterSyncMode {
    /// The control plane pushes resources to the member.
    Push,
    /// An agent on the member pulls resources from the control plane.
    Pull,
}

/// Desired state of a member cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// Push or Pull.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_mode: Option<ClusterSyncMode>,
    /// The member's API endpoint (hostname, hostname:port, IP or IP:port, or a URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_endpoint: Option<String>,
    /// Secret holding the member's `token` and `caBundle`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<NamespacedSecretRef>,
    /// Cloud provider name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Region the member runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Zone the member runs in: deprecated by Karmada for `zones`, which its API server
    /// fills from `zone` when only `zone` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Zones the member runs in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
    /// Taints on the member cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    /// Unmodelled fields (`id`, `proxyURL`, `resourceModels`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Node counts of a member cluster.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct NodeSummary {
    /// Total nodes.
    #[serde(default)]
    pub total_num: i32,
    /// Ready nodes.
    #[serde(default)]
    pub ready_num: i32,
}

/// Resource totals of a member cluster, keyed by resource name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterResourceSummary {
    /// Allocatable resources of all nodes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocatable: BTreeMap<String, Quantity>,
    /// Requests of pods waiting for scheduling.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocating: BTreeMap<String, Quantity>,
    /// Requests of scheduled pods.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocated: BTreeMap<String, Quantity>,
    /// Unmodelled fields (`allocatableModelings`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Observed state of a member cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// The member's Kubernetes version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// Conditions; `Ready` is the one that matters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ObjectCondition>,
    /// Node counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_summary: Option<NodeSummary>,
    /// Resource totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_summary: Option<ClusterResourceSummary>,
    /// Unmodelled fields (`apiEnablements`, `remedyActions`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

root_object! {
    /// A member cluster of a Karmada instance.
    Cluster {
        group: "cluster.karmada.io",
        version: "v1alpha1",
        kind: "Cluster",
        plural: "clusters",
        scope: kube::core::ClusterResourceScope,
        spec: ClusterSpec,
        status: ClusterStatus,
    }
}

impl Cluster {
    /// Whether the cluster's `Ready` condition has status `"True"`.
    pub fn is_ready(&self) -> bool {
        self.status
            .as_ref()
            .and_then(|s| find_condition(&s.conditions, CLUSTER_CONDITION_READY))
            .is_some_and(ObjectCondition::is_true)
    }
}
