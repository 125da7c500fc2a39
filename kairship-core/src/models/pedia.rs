//! Clusterpedia's `PediaCluster` (`cluster.clusterpedia.io/v1alpha2`, cluster-scoped): a
//! cluster whose resources Clusterpedia synchronises and serves from its storage.

use k8s_openapi::ByteString;
use serde::{Deserialize, Serialize};

use super::{Extra, ObjectCondition, root_object};

/// A key of a Secret in Clusterpedia's own namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// Secret name.
    pub name: String,
    /// Key within the Secret.
    pub key: String,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Where Clusterpedia reads credentials from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationFrom {
    /// A kubeconfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig: Option<SecretKeyRef>,
    /// Unmodelled fields (`ca`, `token`, `cert`, `key`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// One API group whose resources are synchronised.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterGroupResources {
    /// API group; empty for the core group.
    #[serde(default)]
    pub group: String,
    /// Versions to use; empty lets Clusterpedia choose.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
    /// Resource names (plural), `*` for all.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Unmodelled fields (`eventsInvolvedResources`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Desired state of a PediaCluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PediaClusterSpec {
    /// The cluster's API server URL (optional when a kubeconfig is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apiserver: Option<String>,
    /// An inline kubeconfig (base64 on the wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig: Option<ByteString>,
    /// Credentials read from Secrets in Clusterpedia's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication_from: Option<AuthenticationFrom>,
    /// Resources to synchronise (required by the CRD).
    #[serde(default)]
    pub sync_resources: Vec<ClusterGroupResources>,
    /// Whether every custom resource is synchronised too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_all_custom_resources: Option<bool>,
    /// Name of a shared sync-resources object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_resources_ref_name: Option<String>,
    /// Unmodelled fields (`caData`, `tokenData`, `shardingName`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Observed state of a PediaCluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PediaClusterStatus {
    /// Conditions (`Ready`, `Validated`, `SynchroRunning`, `ClusterHealthy`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ObjectCondition>,
    /// Kubernetes version of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The API server in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apiserver: Option<String>,
    /// Unmodelled fields (`syncResources`, `shardingName`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

root_object! {
    /// A cluster registered with Clusterpedia.
    PediaCluster {
        group: "cluster.clusterpedia.io",
        version: "v1alpha2",
        kind: "PediaCluster",
        plural: "pediaclusters",
        scope: kube::core::ClusterResourceScope,
        spec: PediaClusterSpec,
        status: PediaClusterStatus,
    }
}
