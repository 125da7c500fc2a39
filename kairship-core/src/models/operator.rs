//! The karmada-operator's `Karmada` (`operator.karmada.io/v1alpha1`, namespaced): one
//! Karmada control plane the operator installs and keeps running.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Extra, NamespacedSecretRef, ObjectCondition, find_condition, root_object};

/// The operator's Ready condition type.
pub const KARMADA_CONDITION_READY: &str = "Ready";

/// Image and replica settings shared by every component.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ComponentSpec {
    /// Image repository, e.g. `docker.io/karmada/karmada-scheduler`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_repository: Option<String>,
    /// Image tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_tag: Option<String>,
    /// Number of replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Unmodelled fields (`resources`, `extraArgs`, `serviceType`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// etcd settings: a local (operator-managed) or external etcd.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EtcdSpec {
    /// Operator-managed etcd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<ComponentSpec>,
    /// External etcd (`endpoints`, `secretRef`), kept as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<serde_json::Value>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The control-plane components; absent optional components are not installed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KarmadaComponents {
    /// etcd (required by the CRD).
    #[serde(default)]
    pub etcd: EtcdSpec,
    /// karmada-apiserver (a kube-apiserver).
    #[serde(
        rename = "karmadaAPIServer",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub karmada_api_server: Option<ComponentSpec>,
    /// karmada-aggregated-apiserver.
    #[serde(
        rename = "karmadaAggregatedAPIServer",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub karmada_aggregated_api_server: Option<ComponentSpec>,
    /// kube-controller-manager.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_controller_manager: Option<ComponentSpec>,
    /// karmada-controller-manager.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub karmada_controller_manager: Option<ComponentSpec>,
    /// karmada-scheduler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub karmada_scheduler: Option<ComponentSpec>,
    /// karmada-webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub karmada_webhook: Option<ComponentSpec>,
    /// karmada-descheduler (optional component).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub karmada_descheduler: Option<ComponentSpec>,
    /// karmada-search (optional component).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub karmada_search: Option<ComponentSpec>,
    /// karmada-metrics-adapter (optional component).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub karmada_metrics_adapter: Option<ComponentSpec>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The registry all images are pulled from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PrivateRegistry {
    /// Registry host, e.g. `registry.example.com`.
    pub registry: String,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Desired state of a Karmada install.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KarmadaSpec {
    /// Component settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<KarmadaComponents>,
    /// Global image registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_registry: Option<PrivateRegistry>,
    /// Feature gates for all components.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// Pauses reconciliation by the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Unmodelled fields (`hostCluster`, `crdTarball`, `customCertificate`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The Service of the installed Karmada apiserver.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ApiServerService {
    /// Service name.
    pub name: String,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Observed state of a Karmada install.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KarmadaStatus {
    /// Generation the operator last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Secret holding the admin kubeconfig, published once installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<NamespacedSecretRef>,
    /// The apiserver's Service.
    #[serde(
        rename = "apiServerService",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub api_server_service: Option<ApiServerService>,
    /// Conditions; `Ready` says whether the install is complete and healthy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ObjectCondition>,
    /// Installed Karmada version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub karmada_version: Option<String>,
    /// Kubernetes version of the Karmada apiserver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

root_object! {
    /// A Karmada control plane installed by the karmada-operator.
    Karmada {
        group: "operator.karmada.io",
        version: "v1alpha1",
        kind: "Karmada",
        plural: "karmadas",
        scope: kube::core::NamespaceResourceScope,
        spec: KarmadaSpec,
        status: KarmadaStatus,
    }
}

impl Karmada {
    /// The operator's Ready condition: `Some(true)` / `Some(false)` once reported, `None`
    /// before the operator has written one, or when it reports `Unknown`.
    pub fn ready(&self) -> Option<bool> {
        let condition = find_condition(&self.status.as_ref()?.conditions, KARMADA_CONDITION_READY)?;
        match condition.status.as_str() {
            "True" => Some(true),
            "False" => Some(false),
            _ => None,
        }
    }

    /// Whether the operator has reconciled the current generation.
    pub fn observed_current_generation(&self) -> bool {
        match (
            self.metadata.generation,
            self.status.as_ref().and_then(|s| s.observed_generation),
        ) {
            (Some(generation), Some(observed)) => observed >= generation,
            (None, _) => true,
            (Some(_), None) => false,
        }
    }
}
