//! Karmada's propagation and override policies (`policy.karmada.io/v1alpha1`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::{Deserialize, Serialize};

use super::{Extra, OpaqueStatus, root_object};

/// Selects resource templates by kind and name, namespace or labels.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSelector {
    /// API version of the target resources.
    pub api_version: String,
    /// Kind of the target resources.
    pub kind: String,
    /// Namespace of the target resource (defaults to the policy's namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name of the target resource; empty selects all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Label query over the target resources (ignored when `name` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A set of member clusters chosen by name, labels or fields.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAffinity {
    /// Clusters selected by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
    /// Clusters to leave out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Clusters selected by labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Unmodelled fields (`fieldSelector`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// How replicas are scheduled across clusters.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSchedulingStrategy {
    /// `Duplicated` or `Divided`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_scheduling_type: Option<String>,
    /// `Aggregated` or `Weighted` (for `Divided`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_division_preference: Option<String>,
    /// Unmodelled fields (`weightPreference`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Where propagated resources go.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// The clusters to propagate to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_affinity: Option<ClusterAffinity>,
    /// Taints of clusters that are tolerated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_tolerations: Vec<Toleration>,
    /// Replica scheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_scheduling: Option<ReplicaSchedulingStrategy>,
    /// Unmodelled fields (`clusterAffinities`, `spreadConstraints`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Spec of PropagationPolicy and ClusterPropagationPolicy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PropagationSpec {
    /// The resource templates the policy applies to.
    #[serde(default)]
    pub resource_selectors: Vec<ResourceSelector>,
    /// Where the selected resources go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// Explicit priority; higher wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// `Abort` or `Overwrite`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict_resolution: Option<String>,
    /// Whether dependencies (ConfigMaps, Secrets, ...) follow the workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagate_deps: Option<bool>,
    /// Unmodelled fields (`failover`, `suspension`, `preemption`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A `plaintext` JSON-patch style overrider.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PlaintextOverrider {
    /// JSON pointer of the field.
    pub path: String,
    /// `add`, `remove` or `replace`.
    pub operator: String,
    /// The value to apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Overrides part of an image reference.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ImageOverrider {
    /// `Registry`, `Repository` or `Tag`.
    pub component: String,
    /// `add`, `remove` or `replace`.
    pub operator: String,
    /// The value to apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Unmodelled fields (`predicate`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The overriders of one rule.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Overriders {
    /// JSON-patch style overriders.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plaintext: Vec<PlaintextOverrider>,
    /// Image overriders.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_overrider: Vec<ImageOverrider>,
    /// Label overriders (`operator`, `value` map).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels_overrider: Vec<MapOverrider>,
    /// Annotation overriders (`operator`, `value` map).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations_overrider: Vec<MapOverrider>,
    /// Unmodelled fields (`commandOverrider`, `argsOverrider`, `fieldOverrider`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Adds, removes or replaces labels or annotations.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MapOverrider {
    /// `add`, `remove` or `replace`.
    pub operator: String,
    /// The keys and values.
    #[serde(default)]
    pub value: BTreeMap<String, String>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One override rule: the clusters it targets and what it overrides.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuleWithCluster {
    /// Clusters the rule applies to; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cluster: Option<ClusterAffinity>,
    /// What the rule overrides.
    #[serde(default)]
    pub overriders: Overriders,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Spec of OverridePolicy and ClusterOverridePolicy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OverrideSpec {
    /// The resource templates the policy applies to; all when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_selectors: Vec<ResourceSelector>,
    /// Override rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub override_rules: Vec<RuleWithCluster>,
    /// Unmodelled fields (deprecated `targetCluster` and `overriders`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

root_object! {
    /// Propagates namespaced resource templates to member clusters.
    PropagationPolicy {
        group: "policy.karmada.io",
        version: "v1alpha1",
        kind: "PropagationPolicy",
        plural: "propagationpolicies",
        scope: kube::core::NamespaceResourceScope,
        spec: PropagationSpec,
        status: OpaqueStatus,
    }
}

root_object! {
    /// Propagates resource templates of any namespace, and cluster-scoped ones.
    ClusterPropagationPolicy {
        group: "policy.karmada.io",
        version: "v1alpha1",
        kind: "ClusterPropagationPolicy",
        plural: "clusterpropagationpolicies",
        scope: kube::core::ClusterResourceScope,
        spec: PropagationSpec,
        status: OpaqueStatus,
    }
}

root_object! {
    /// Overrides fields of namespaced resources per member cluster.
    OverridePolicy {
        group: "policy.karmada.io",
        version: "v1alpha1",
        kind: "OverridePolicy",
        plural: "overridepolicies",
        scope: kube::core::NamespaceResourceScope,
        spec: OverrideSpec,
        status: OpaqueStatus,
    }
}

root_object! {
    /// Overrides fields of resources of any namespace per member cluster.
    ClusterOverridePolicy {
        group: "policy.karmada.io",
        version: "v1alpha1",
        kind: "ClusterOverridePolicy",
        plural: "clusteroverridepolicies",
        scope: kube::core::ClusterResourceScope,
        spec: OverrideSpec,
        status: OpaqueStatus,
    }
}
