//! Request and response messages of joining, registering, updating and unjoining member
//! clusters. The member's kubeconfig is never printed: [`JoinMemberRequest`]'s `Debug` hides
//! it, and no response carries it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::{KubeObject, ListOptions, Object};

/// A taint of a member cluster (`spec.taints[]` of the Karmada `Cluster`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemberTaint {
    /// Taint key.
    pub key: String,
    /// Taint value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// Where a member cluster is and how it is scheduled to: labels, taints, provider, region and
/// zone of its `Cluster`, as a join or registration asks for them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberPlacement {
    /// Labels of the `Cluster`.
    pub labels: BTreeMap<String, String>,
    /// Taints of the `Cluster`.
    pub taints: Vec<MemberTaint>,
    /// `spec.provider`.
    pub provider: Option<String>,
    /// `spec.region`.
    pub region: Option<String>,
    /// `spec.zones: [zone]`.
    pub zone: Option<String>,
}

/// `JoinMember`: joins a cluster in Push mode from its kubeconfig. Kairship creates in the
/// member a ServiceAccount with its ClusterRole, ClusterRoleBinding and token Secret (and the
/// impersonator's), then in the instance the credential Secrets and the `Cluster`.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JoinMemberRequest {
    /// Instance name (from the path in REST).
    #[serde(default)]
    pub instance: String,
    /// Name of the member cluster (the `Cluster` object): a DNS label of at most 48
    /// characters.
    pub name: String,
    /// The member's kubeconfig (YAML), with rights to create namespaces, ServiceAccounts,
    /// Secrets and RBAC objects. Used for this call only: never stored, returned or logged.
    pub kubeconfig: String,
    /// Context of the kubeconfig to use (its current context when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The member's API endpoint as Karmada reaches it (the kubeconfig's server when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_endpoint: Option<String>,
    /// Labels of the `Cluster` (placement by cluster labels).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Taints of the `Cluster`.
    #[serde(default)]
    pub taints: Vec<MemberTaint>,
    /// Cloud provider (`spec.provider`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Region (`spec.region`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Zone (stored as `spec.zones: [zone]`; Karmada deprecated `spec.zone`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
}

impl std::fmt::Debug for JoinMemberRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinMemberRequest")
            .field("instance", &self.instance)
            .field("name", &self.name)
            .field("kubeconfig", &"<redacted>")
            .field("context", &self.context)
            .field("api_endpoint", &self.api_endpoint)
            .field("labels", &self.labels)
            .field("taints", &self.taints)
            .field("provider", &self.provider)
            .field("region", &self.region)
            .field("zone", &self.zone)
            .finish()
    }
}

/// `RegisterMember`: prepares a Pull-mode join as `karmadactl register` does. Kairship creates
/// in the instance the agent's RBAC (karmadactl's) and the `Cluster`, obtains the agent's
/// client certificate through a CSR posted with a short-lived bootstrap token (deleted once the
/// certificate is issued), and returns the manifests to apply in the member (the karmada-agent
/// and a kubeconfig holding that certificate and its key).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegisterMemberRequest {
    /// Instance name (from the path in REST).
    #[serde(default)]
    pub instance: String,
    /// Name of the member cluster: a DNS label of at most 48 characters.
    pub name: String,
    /// The instance's API endpoint as the member reaches it (the server of the instance's
    /// kubeconfig when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub karmada_endpoint: Option<String>,
    /// The member's API endpoint as Karmada reaches it (the agent's `--cluster-api-endpoint`
    /// and the `Cluster`'s `spec.apiEndpoint`). Without it Karmada's cluster proxy cannot
    /// reach the member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_endpoint: Option<String>,
    /// The longest the bootstrap token may live, in seconds (default 86400, at most 604800);
    /// it is deleted as soon as the agent's certificate is issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ttl_seconds: Option<u32>,
    /// The karmada-agent image (`docker.io/karmada/karmada-agent:<instance's Karmada
    /// version>` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_image: Option<String>,
    /// Labels of the `Cluster` (placement by cluster labels).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Taints of the `Cluster`.
    #[serde(default)]
    pub taints: Vec<MemberTaint>,
    /// Cloud provider (`spec.provider`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Region (`spec.region`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Zone (stored as `spec.zones: [zone]`; Karmada deprecated `spec.zone`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
}

/// What a Pull-mode join needs in the member.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegisterMemberResponse {
    /// Member cluster name.
    pub cluster: String,
    /// The instance API endpoint the agent's kubeconfig names.
    pub karmada_endpoint: String,
    /// The id of the bootstrap token that posted the agent's certificate request (its Secret
    /// `kube-system/bootstrap-token-<id>` is deleted once the certificate is issued).
    pub token_id: String,
    /// When the agent's client certificate expires (RFC 3339).
    pub expiration: String,
    /// The objects to apply in the member, in order.
    #[schema(value_type = Vec<Object>)]
    pub manifests: Vec<Object>,
    /// The same objects as one YAML stream (`kubectl apply -f -`).
    pub yaml: String,
}

/// `UpdateMember`: changes labels, taints, provider, region or zone of a member cluster.
/// Absent fields are kept.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateMemberRequest {
    /// Instance name (from the path in REST).
    #[serde(default)]
    pub instance: String,
    /// Member cluster name (from the path in REST).
    #[serde(default)]
    pub cluster: String,
    /// Labels to set; a `null` value removes the label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, Option<String>>>,
    /// The new taints (all of them; `[]` removes every taint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taints: Option<Vec<MemberTaint>>,
    /// The new provider; `""` clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The new region; `""` clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// The new zone (`spec.zones: [zone]`, `spec.zone` cleared); `""` clears both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
}

impl JoinMemberRequest {
    /// The placement fields of the request.
    pub fn placement(&self) -> MemberPlacement {
        MemberPlacement {
            labels: self.labels.clone(),
            taints: self.taints.clone(),
            provider: self.provider.clone(),
            region: self.region.clone(),
            zone: self.zone.clone(),
        }
    }
}

impl RegisterMemberRequest {
    /// The placement fields of the request.
    pub fn placement(&self) -> MemberPlacement {
        MemberPlacement {
            labels: self.labels.clone(),
            taints: self.taints.clone(),
            provider: self.provider.clone(),
            region: self.region.clone(),
            zone: self.zone.clone(),
        }
    }
}
/// `ListClusters`: Karmada member clusters of an instance.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListClustersRequest {
    /// Instance name.
    pub instance: String,
    /// Selectors, fuzzy name, sorting and paging.
    #[serde(default)]
    pub options: ListOptions,
}

/// `GetCluster`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetClusterRequest {
    /// Instance name.
    pub instance: String,
    /// Member cluster name.
    pub cluster: String,
}

/// `JoinCluster`: creates a `cluster.karmada.io/v1alpha1` Cluster in the instance.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JoinClusterRequest {
    /// Instance name.
    pub instance: String,
    /// The Cluster object.
    #[schema(value_type = KubeObject)]
    pub body: Object,
}

/// `UpdateCluster`: replaces a member Cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateClusterRequest {
    /// Instance name.
    pub instance: String,
    /// Member cluster name.
    pub cluster: String,
    /// The new Cluster object.
    #[schema(value_type = KubeObject)]
    pub body: Object,
}

/// `RemoveCluster`: deletes a member Cluster from the instance.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoveClusterRequest {
    /// Instance name.
    pub instance: String,
    /// Member cluster name.
    pub cluster: String,
    /// Unjoin even while bindings still schedule to the member (and when the member cannot
    /// be reached to remove Kairship's objects there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
}
