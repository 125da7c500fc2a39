//! Karmada's ResourceBinding and ClusterResourceBinding (`work.karmada.io/v1alpha2`, the
//! served storage version; v1alpha1 is served too but is not used here).

use serde::{Deserialize, Serialize};

use super::policy::Placement;
use super::{Extra, ObjectCondition, root_object};

/// Annotation (older Karmada: label) naming the PropagationPolicy a binding came from.
pub const PROPAGATION_POLICY_NAME_KEY: &str = "propagationpolicy.karmada.io/name";
/// Annotation (older Karmada: label) naming that PropagationPolicy's namespace.
pub const PROPAGATION_POLICY_NAMESPACE_KEY: &str = "propagationpolicy.karmada.io/namespace";
/// Annotation (older Karmada: label) naming the ClusterPropagationPolicy a binding came from.
pub const CLUSTER_PROPAGATION_POLICY_NAME_KEY: &str = "clusterpropagationpolicy.karmada.io/name";

/// The resource template a binding refers to.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// API version of the referent.
    pub api_version: String,
    /// Kind of the referent.
    pub kind: String,
    /// Namespace of the referent; empty for cluster-scoped ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name of the referent.
    pub name: String,
    /// UID of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// resourceVersion of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A scheduling result: a cluster and the replicas it got.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TargetCluster {
    /// Member cluster name.
    pub name: String,
    /// Replicas assigned to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Desired state of a binding.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBindingSpec {
    /// The resource template being propagated.
    #[serde(default)]
    pub resource: ObjectReference,
    /// Total replicas of the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Placement copied from the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// Scheduling result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<TargetCluster>,
    /// Unmodelled fields (`replicaRequirements`, `gracefulEvictionTasks`, `requiredBy`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The status of the template's copy in one member cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AggregatedStatusItem {
    /// Member cluster name.
    pub cluster_name: String,
    /// The member object's status, as reflected by Karmada.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<serde_json::Value>,
    /// Whether the manifest was applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<bool>,
    /// Why applying failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_message: Option<String>,
    /// `Healthy`, `Unhealthy` or `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<String>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Observed state of a binding.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBindingStatus {
    /// Per-cluster status of the propagated object.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregated_status: Vec<AggregatedStatusItem>,
    /// Conditions (`Scheduled`, `FullyApplied`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ObjectCondition>,
    /// Generation the scheduler last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_observed_generation: Option<i64>,
    /// Unmodelled fields (`lastScheduledTime`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

root_object! {
    /// Binds a namespaced resource template to the clusters a policy chose.
    ResourceBinding {
        group: "work.karmada.io",
        version: "v1alpha2",
        kind: "ResourceBinding",
        plural: "resourcebindings",
        scope: kube::core::NamespaceResourceScope,
        spec: ResourceBindingSpec,
        status: ResourceBindingStatus,
    }
}

root_object! {
    /// Binds a cluster-scoped resource template to the clusters a policy chose.
    ClusterResourceBinding {
        group: "work.karmada.io",
        version: "v1alpha2",
        kind: "ClusterResourceBinding",
        plural: "clusterresourcebindings",
        scope: kube::core::ClusterResourceScope,
        spec: ResourceBindingSpec,
        status: ResourceBindingStatus,
    }
}

/// Looks a key up in annotations, then labels (older Karmada releases used labels).
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

impl ResourceBinding {
    /// Whether the binding was produced by the PropagationPolicy `namespace/name`.
    pub fn uses_propagation_policy(&self, namespace: &str, name: &str) -> bool {
        meta_value(&self.metadata, PROPAGATION_POLICY_NAME_KEY) == Some(name)
            && meta_value(&self.metadata, PROPAGATION_POLICY_NAMESPACE_KEY) == Some(namespace)
    }

    /// Whether the binding was produced by the ClusterPropagationPolicy `name`.
    pub fn uses_cluster_propagation_policy(&self, name: &str) -> bool {
        meta_value(&self.metadata, CLUSTER_PROPAGATION_POLICY_NAME_KEY) == Some(name)
    }
}

impl ClusterResourceBinding {
    /// Whether the binding was produced by the ClusterPropagationPolicy `name`.
    pub fn uses_cluster_propagation_policy(&self, name: &str) -> bool {
        meta_value(&self.metadata, CLUSTER_PROPAGATION_POLICY_NAME_KEY) == Some(name)
    }
}

/// The name Karmada gives the binding of a resource template: `<name>-<kind>` in lower case,
/// with `:` (allowed in RBAC object names) replaced by `.`.
pub fn binding_name(kind: &str, name: &str) -> String {
    format!("{}-{}", name.replace(':', "."), kind).to_lowercase()
}
