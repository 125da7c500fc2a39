//! The `kairship.io/v1alpha1` `Instance` custom resource: one Karmada control plane managed by
//! Kairship, either provisioned through the karmada-operator or adopted through a kubeconfig.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// API group of Kairship's own resources.
pub const GROUP: &str = "kairship.io";
/// API version of Kairship's own resources.
pub const VERSION: &str = "v1alpha1";

/// Finalizer that keeps an Instance until its registrations, roles and (per `deletionPolicy`)
/// its Karmada install have been released.
pub const FINALIZER: &str = "kairship.io/instance-protection";
/// Annotation that, set to `"true"`, lets an Instance be deleted while it still has member
/// clusters.
pub const FORCE_DELETE_ANNOTATION: &str = "kairship.io/force-delete";
/// Annotation of an Adopt instance naming the host namespace its Karmada components run in
/// (where its Karmada release is read from; `karmada-system` without it).
pub const KARMADA_NAMESPACE_ANNOTATION: &str = "kairship.io/karmada-namespace";
/// Label carried by every object Kairship creates on behalf of an Instance; its value is the
/// Instance name.
pub const INSTANCE_LABEL: &str = "kairship.io/instance";
/// Label naming the instance role (`admin`, `edit`, `view`) on ClusterRoles and bindings.
pub const ROLE_LABEL: &str = "kairship.io/role";
/// The `app.kubernetes.io/managed-by` label key.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`] on objects Kairship owns.
pub const MANAGED_BY_VALUE: &str = "kairship";
/// Default key of the kubeconfig inside the Secret named by `spec.kubeconfigSecretRef`.
pub const DEFAULT_KUBECONFIG_KEY: &str = "kubeconfig";
/// Longest accepted Instance name: names are DNS-1035 labels because they end up in label
/// values, Service names created by the operator and object names derived from them.
pub const MAX_INSTANCE_NAME_LEN: usize = 63;

/// Condition types written to `status.conditions`.
pub mod condition_type {
    /// The instance's control plane answers and (for Provision) the operator reports Ready.
    pub const READY: &str = "Ready";
    /// Provision mode: the operator's `Karmada` object exists and reports Ready.
    pub const PROVISIONED: &str = "Provisioned";
    /// The instance is registered with the read backend (Clusterpedia or embedded cache).
    pub const REGISTERED: &str = "Registered";
    /// The instance's ClusterRoles exist and the global registry knows it.
    pub const ROLES_READY: &str = "RolesReady";
    /// Deletion is refused, e.g. because member clusters are still joined.
    pub const DELETION_BLOCKED: &str = "DeletionBlocked";
}

/// Machine-readable reasons used on conditions and in state transitions.
pub mod reason {
    /// Control plane probes succeed.
    pub const CONTROL_PLANE_READY: &str = "ControlPlaneReady";
    /// Probes have failed fewer times than the threshold; the state is kept.
    pub const PROBE_FAILING: &str = "ProbeFailing";
    /// Probes have failed at least the threshold number of times in a row.
    pub const CONTROL_PLANE_UNREACHABLE: &str = "ControlPlaneUnreachable";
    /// The karmada-operator is installing or upgrading the control plane.
    pub const PROVISIONING: &str = "Provisioning";
    /// No credentials for the control plane are available yet.
    pub const WAITING_FOR_CREDENTIALS: &str = "WaitingForCredentials";
    /// The instance is being deleted.
    pub const DELETING: &str = "Deleting";
    /// Deletion refused: member clusters are still joined.
    pub const MEMBER_CLUSTERS_PRESENT: &str = "MemberClustersPresent";
    /// Deletion proceeds because the force-delete annotation is set.
    pub const FORCED: &str = "ForceDelete";
    /// The referenced kubeconfig Secret or key does not exist or is unusable.
    pub const KUBECONFIG_INVALID: &str = "KubeconfigInvalid";
    /// Registration with the read backend succeeded.
    pub const REGISTERED: &str = "Registered";
    /// Registration with the read backend failed.
    pub const REGISTRATION_FAILED: &str = "RegistrationFailed";
}

/// How Kairship obtains the Karmada control plane of an instance.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum InstanceMode {
    /// Kairship creates an `operator.karmada.io/v1alpha1` `Karmada` object and the
    /// karmada-operator installs the control plane.
    Provision,
    /// An existing Karmada control plane is reached through `spec.kubeconfigSecretRef`.
    Adopt,
}

/// What happens to the Karmada install when the Instance is deleted.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum DeletionPolicy {
    /// Provision mode: delete the operator's `Karmada` object (the operator uninstalls the
    /// control plane). Adopt mode: nothing beyond Kairship's own objects is touched.
    #[default]
    Delete,
    /// Leave the Karmada install (and the operator's `Karmada` object) in place.
    Retain,
}

/// Reference to one key of a Secret on the host cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyReference {
    /// Namespace of the Secret.
    #[schemars(length(min = 1, max = 63))]
    pub namespace: String,
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Key inside the Secret's data holding the kubeconfig. Given, exactly this key is read
    /// (a missing key is reported, never replaced by another); left out, the first of
    /// `kubeconfig`, `karmada.config` and `config` that the Secret has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub key: Option<String>,
}

/// A Karmada control-plane component the operator can install.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum KarmadaComponent {
    /// Built-in etcd (always installed).
    Etcd,
    /// The Karmada API server, a kube-apiserver (always installed).
    #[serde(rename = "karmadaAPIServer")]
    KarmadaApiServer,
    /// karmada-aggregated-apiserver (always installed).
    #[serde(rename = "karmadaAggregatedAPIServer")]
    KarmadaAggregatedApiServer,
    /// kube-controller-manager of the control plane (always installed).
    KubeControllerManager,
    /// karmada-controller-manager (always installed).
    KarmadaControllerManager,
    /// karmada-scheduler (always installed).
    KarmadaScheduler,
    /// karmada-webhook (always installed).
    KarmadaWebhook,
    /// karmada-descheduler (optional).
    KarmadaDescheduler,
    /// karmada-search (optional).
    KarmadaSearch,
    /// karmada-metrics-adapter (optional).
    KarmadaMetricsAdapter,
}

impl KarmadaComponent {
    /// Every component, in install order.
    pub const ALL: [KarmadaComponent; 10] = [
        KarmadaComponent::Etcd,
        KarmadaComponent::KarmadaApiServer,
        KarmadaComponent::KarmadaAggregatedApiServer,
        KarmadaComponent::KubeControllerManager,
        KarmadaComponent::KarmadaControllerManager,
        KarmadaComponent::KarmadaScheduler,
        KarmadaComponent::KarmadaWebhook,
        KarmadaComponent::KarmadaDescheduler,
        KarmadaComponent::KarmadaSearch,
        KarmadaComponent::KarmadaMetricsAdapter,
    ];

    /// The field name of this component under the operator's `spec.components`.
    pub fn field_name(self) -> &'static str {
        match self {
            KarmadaComponent::Etcd => "etcd",
            KarmadaComponent::KarmadaApiServer => "karmadaAPIServer",
            KarmadaComponent::KarmadaAggregatedApiServer => "karmadaAggregatedAPIServer",
            KarmadaComponent::KubeControllerManager => "kubeControllerManager",
            KarmadaComponent::KarmadaControllerManager => "karmadaControllerManager",
            KarmadaComponent::KarmadaScheduler => "karmadaScheduler",
            KarmadaComponent::KarmadaWebhook => "karmadaWebhook",
            KarmadaComponent::KarmadaDescheduler => "karmadaDescheduler",
            KarmadaComponent::KarmadaSearch => "karmadaSearch",
            KarmadaComponent::KarmadaMetricsAdapter => "karmadaMetricsAdapter",
        }
    }

    /// Parses an operator component field name.
    pub fn from_field_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.field_name() == name)
    }

    /// Whether the component is optional (installed only when listed in `components`).
    pub fn is_optional(self) -> bool {
        matches!(
            self,
            KarmadaComponent::KarmadaDescheduler
                | KarmadaComponent::KarmadaSearch
                | KarmadaComponent::KarmadaMetricsAdapter
        )
    }

    /// Whether the component's image is released by Karmada (tagged with the Karmada
    /// version) rather than by Kubernetes or etcd.
    pub fn is_karmada_image(self) -> bool {
        !matches!(
            self,
            KarmadaComponent::Etcd
                | KarmadaComponent::KarmadaApiServer
                | KarmadaComponent::KubeControllerManager
        )
    }
}

/// Provision-mode settings, handed to the karmada-operator's `Karmada` object.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisionSpec {
    /// Karmada release to install, e.g. `v1.14.0`; the image tag of Karmada's own components.
    #[schemars(regex(pattern = r"^v[0-9]+\.[0-9]+\.[0-9]+([-+].*)?$"))]
    pub karmada_version: String,
    /// Namespace on the host cluster where the operator's `Karmada` object and the control
    /// plane live.
    #[schemars(length(min = 1, max = 63))]
    pub host_namespace: String,
    /// Registry every image is pulled from (the operator's `spec.privateRegistry`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_registry: Option<String>,
    /// Per-component image tag overrides, keyed by operator component field name
    /// (`etcd`, `karmadaAPIServer`, `karmadaScheduler`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[x_kube(validation = kube::core::Rule::new(
        "self.all(k, k in ['etcd', 'karmadaAPIServer', 'karmadaAggregatedAPIServer', 'kubeControllerManager', 'karmadaControllerManager', 'karmadaScheduler', 'karmadaWebhook', 'karmadaDescheduler', 'karmadaSearch', 'karmadaMetricsAdapter'])"
    ).message("spec.provision.imageTags keys must be operator component names"))]
    pub image_tags: BTreeMap<String, String>,
    /// Optional components to install in addition to the core ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<KarmadaComponent>,
    /// Feature gates passed to the operator (`spec.featureGates`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
}

/// Desired state of an Instance.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "kairship.io",
    version = "v1alpha1",
    kind = "Instance",
    plural = "instances",
    shortname = "ki",
    category = "kairship",
    status = "InstanceStatus",
    derive = "PartialEq",
    doc = "A Karmada control plane managed by Kairship.",
    validation = kube::core::Rule::new(
        "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 63"
    )
    .message("metadata.name must be a DNS-1035 label of at most 63 characters")
    // Without it kube-apiserver reports the root object's path, `<nil>`.
    .field_path(".metadata.name"),
    printcolumn(name = "State", type_ = "string", json_path = ".status.state"),
    printcolumn(
        name = "Clusters",
        type_ = "integer",
        json_path = ".status.summary.clusterSummary.totalNum",
        description = "member clusters joined to the instance"
    ),
    printcolumn(
        name = "Ready",
        type_ = "integer",
        json_path = ".status.summary.clusterSummary.readyNum",
        description = "member clusters whose Ready condition is True"
    ),
    printcolumn(name = "Version", type_ = "string", json_path = ".status.karmadaVersion"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(
    validation = kube::core::Rule::new("self.mode != 'Adopt' || has(self.kubeconfigSecretRef)")
        .message("Adopt mode requires spec.kubeconfigSecretRef"),
    validation = kube::core::Rule::new("self.mode != 'Provision' || has(self.provision)")
        .message("Provision mode requires spec.provision"),
    validation = kube::core::Rule::new("self.mode != 'Adopt' || !has(self.provision)")
        .message("spec.provision is only valid in Provision mode"),
    validation = kube::core::Rule::new("self.mode != 'Provision' || !has(self.kubeconfigSecretRef)")
        .message("spec.kubeconfigSecretRef is only valid in Adopt mode")
)]
#[serde(rename_all = "camelCase")]
pub struct InstanceSpec {
    /// `Provision` (install through the karmada-operator) or `Adopt` (connect to an
    /// existing Karmada). Immutable.
    #[x_kube(validation = kube::core::Rule::new("self == oldSelf").message("spec.mode is immutable"))]
    pub mode: InstanceMode,
    /// Adopt mode: the Secret key holding the Karmada apiserver's kubeconfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret_ref: Option<SecretKeyReference>,
    /// Provision mode: what the karmada-operator installs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provision: Option<ProvisionSpec>,
    /// Human-friendly display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// Whether deleting the Instance releases the Karmada install (`Delete`, default) or
    /// leaves it running (`Retain`).
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
}

/// Coarse lifecycle phase of an Instance.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum InstancePhase {
    /// Accepted, nothing done yet.
    Pending,
    /// Provision mode: the operator's `Karmada` object exists and is not Ready yet.
    Provisioning,
    /// Credentials are known and the control plane is being probed or used.
    Active,
    /// Deletion started; cleanup is in progress.
    Deleting,
    /// Deletion refused (see the `DeletionBlocked` condition).
    DeletionBlocked,
}

/// Health state of an Instance, after DCE's instance states.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum InstanceState {
    /// Being installed or connected; not yet seen healthy.
    #[serde(rename = "INPROCESS")]
    InProcess,
    /// The control plane answers probes.
    #[serde(rename = "RUNNING")]
    Running,
    /// Probes failed the configured number of times in a row.
    #[serde(rename = "UNAVAILABLE")]
    Unavailable,
    /// The instance is being deleted.
    #[serde(rename = "TERMINAL")]
    Terminal,
    /// Not determined yet (also used for values this version does not know).
    #[default]
    #[serde(rename = "UNKNOWN", other)]
    Unknown,
}

impl InstanceState {
    /// The wire name of the state (`RUNNING`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            InstanceState::InProcess => "INPROCESS",
            InstanceState::Running => "RUNNING",
            InstanceState::Unavailable => "UNAVAILABLE",
            InstanceState::Terminal => "TERMINAL",
            InstanceState::Unknown => "UNKNOWN",
        }
    }
}

impl std::fmt::Display for InstanceState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Total and ready counts (clusters, nodes, deployments).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CountSummary {
    /// Total number.
    #[serde(default)]
    pub total_num: i32,
    /// Number that are ready.
    #[serde(default)]
    pub ready_num: i32,
}

/// Resource quantities summed over member clusters, keyed by resource name (`cpu`, `memory`,
/// `pods`, ...).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSummary {
    /// Resources available for scheduling.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "quantity_map_schema")]
    pub allocatable: BTreeMap<String, Quantity>,
    /// Resources requested by pods waiting for scheduling.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "quantity_map_schema")]
    pub allocating: BTreeMap<String, Quantity>,
    /// Resources requested by scheduled pods.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "quantity_map_schema")]
    pub allocated: BTreeMap<String, Quantity>,
}

/// Schema of a resource name -> quantity map: an int-or-string per resource, without the
/// long Quantity description repeated on every map.
fn quantity_map_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": { "x-kubernetes-int-or-string": true }
    })
}

/// Counts of plain resources in the instance's control plane.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub struct ResourceTotalNum {
    /// Services.
    #[serde(default)]
    pub services: i64,
    /// Secrets.
    #[serde(default)]
    pub secrets: i64,
    /// ConfigMaps.
    #[serde(default)]
    pub configmaps: i64,
    /// PersistentVolumeClaims.
    #[serde(default)]
    pub persistentvolumeclaims: i64,
}

/// Counts of Karmada policies (namespaced and cluster-scoped together).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub struct PolicyTotalNum {
    /// PropagationPolicies plus ClusterPropagationPolicies.
    #[serde(default)]
    pub propagationpolicies: i64,
    /// OverridePolicies plus ClusterOverridePolicies.
    #[serde(default)]
    pub overridepolicies: i64,
}

/// Workload counts in the instance's control plane.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSummary {
    /// Deployments, total and ready.
    #[serde(default)]
    pub deployments: CountSummary,
}

/// Everything the resource-statistics controller writes to `status.summary`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceSummary {
    /// Member clusters, total and Ready=True.
    #[serde(default)]
    pub cluster_summary: CountSummary,
    /// Nodes of all member clusters, total and ready.
    #[serde(default)]
    pub node_summary: CountSummary,
    /// Resources of all member clusters.
    #[serde(default)]
    pub resource_summary: ResourceSummary,
    /// Counts of services, secrets, configmaps and PVCs.
    #[serde(default)]
    pub resource_total_num: ResourceTotalNum,
    /// Counts of propagation and override policies.
    #[serde(default)]
    pub policy_total_num: PolicyTotalNum,
    /// Workload counts.
    #[serde(default)]
    pub workload_summary: WorkloadSummary,
}

/// Observed state of an Instance.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceStatus {
    /// Coarse lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<InstancePhase>,
    /// Health state: INPROCESS, RUNNING, UNAVAILABLE, TERMINAL or UNKNOWN.
    #[serde(default)]
    pub state: InstanceState,
    /// Whether the Karmada control plane currently answers.
    #[serde(default)]
    pub control_plane_ready: bool,
    /// Karmada release: the operator's (Provision); for Adopt, the image tag of Karmada's
    /// component Deployments on the host (unset when none is found). Never the API server's
    /// `/version`, which is the Kubernetes version (`kubernetesVersion`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub karmada_version: Option<String>,
    /// Kubernetes version reported by the Karmada apiserver's `/version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// Standard conditions: Ready, Provisioned, Registered, RolesReady, DeletionBlocked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` the status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Failed control-plane probes in a row.
    #[serde(default)]
    pub consecutive_probe_failures: i32,
    /// Aggregated member and object statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<InstanceSummary>,
}

/// Why an [`InstanceSpec`] is invalid (mirrors the CRD's validation rules so API callers get
/// the same answer before anything reaches the host cluster).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstanceSpecError {
    /// Adopt mode without a kubeconfig reference.
    #[error("Adopt mode requires spec.kubeconfigSecretRef")]
    MissingKubeconfigRef,
    /// Provision mode without provision settings.
    #[error("Provision mode requires spec.provision")]
    MissingProvision,
    /// Provision settings given in Adopt mode.
    #[error("spec.provision is only valid in Provision mode")]
    UnexpectedProvision,
    /// Kubeconfig reference given in Provision mode.
    #[error("spec.kubeconfigSecretRef is only valid in Adopt mode")]
    UnexpectedKubeconfigRef,
    /// A required string is empty.
    #[error("{field} must not be empty")]
    Empty {
        /// JSON path of the field.
        field: &'static str,
    },
    /// `spec.provision.karmadaVersion` is not `vMAJOR.MINOR.PATCH`.
    #[error("spec.provision.karmadaVersion {0:?} is not of the form vMAJOR.MINOR.PATCH")]
    BadKarmadaVersion(String),
    /// An image tag override names an unknown component.
    #[error("spec.provision.imageTags has unknown component {0:?}")]
    UnknownComponent(String),
    /// The mode changed on update.
    #[error("spec.mode is immutable (was {old:?}, now {new:?})")]
    ModeChanged {
        /// Previous mode.
        old: InstanceMode,
        /// Requested mode.
        new: InstanceMode,
    },
}

impl InstanceSpec {
    /// Checks the spec as the CRD's schema and CEL rules do; `old` is the stored spec on
    /// update.
    pub fn validate(&self, old: Option<&InstanceSpec>) -> Result<(), InstanceSpecError> {
        if let Some(old) = old
            && old.mode != self.mode
        {
            return Err(InstanceSpecError::ModeChanged {
                old: old.mode,
                new: self.mode,
            });
        }
        match self.mode {
            InstanceMode::Adopt => {
                if self.provision.is_some() {
                    return Err(InstanceSpecError::UnexpectedProvision);
                }
                let secret = self
                    .kubeconfig_secret_ref
                    .as_ref()
                    .ok_or(InstanceSpecError::MissingKubeconfigRef)?;
                non_empty(&secret.namespace, "spec.kubeconfigSecretRef.namespace")?;
                non_empty(&secret.name, "spec.kubeconfigSecretRef.name")?;
                if let Some(key) = &secret.key {
                    non_empty(key, "spec.kubeconfigSecretRef.key")?;
                }
            }
            InstanceMode::Provision => {
                if self.kubeconfig_secret_ref.is_some() {
                    return Err(InstanceSpecError::UnexpectedKubeconfigRef);
                }
                let provision = self
                    .provision
                    .as_ref()
                    .ok_or(InstanceSpecError::MissingProvision)?;
                non_empty(&provision.host_namespace, "spec.provision.hostNamespace")?;
                if !is_release_version(&provision.karmada_version) {
                    return Err(InstanceSpecError::BadKarmadaVersion(
                        provision.karmada_version.clone(),
                    ));
                }
                if let Some(unknown) = provision
                    .image_tags
                    .keys()
                    .find(|k| KarmadaComponent::from_field_name(k).is_none())
                {
                    return Err(InstanceSpecError::UnknownComponent(unknown.clone()));
                }
            }
        }
        Ok(())
    }
}

fn non_empty(value: &str, field: &'static str) -> Result<(), InstanceSpecError> {
    if value.is_empty() {
        Err(InstanceSpecError::Empty { field })
    } else {
        Ok(())
    }
}

/// `vMAJOR.MINOR.PATCH` optionally followed by `-pre` or `+build`, as the CRD pattern says.
fn is_release_version(version: &str) -> bool {
    let Some(rest) = version.strip_prefix('v') else {
        return false;
    };
    let core_end = rest.find(['-', '+']).unwrap_or(rest.len());
    let (core, suffix) = rest.split_at(core_end);
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && (suffix.is_empty() || suffix.len() > 1)
}

impl Instance {
    /// Whether the force-delete annotation is set to `"true"`.
    pub fn force_delete_requested(&self) -> bool {
        self.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(FORCE_DELETE_ANNOTATION))
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }

    /// Whether the Instance carries a deletion timestamp.
    pub fn is_deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    /// Whether the Kairship finalizer is present.
    pub fn has_finalizer(&self) -> bool {
        self.metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|f| f == FINALIZER))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adopt() -> InstanceSpec {
        InstanceSpec {
            mode: InstanceMode::Adopt,
            kubeconfig_secret_ref: Some(SecretKeyReference {
                namespace: "kairship-system".into(),
                name: "prod-kubeconfig".into(),
                key: Some("kubeconfig".into()),
            }),
            provision: None,
            alias: Some("Production".into()),
            deletion_policy: DeletionPolicy::Retain,
        }
    }

    fn provision() -> InstanceSpec {
        InstanceSpec {
            mode: InstanceMode::Provision,
            kubeconfig_secret_ref: None,
            provision: Some(ProvisionSpec {
                karmada_version: "v1.14.0".into(),
                host_namespace: "karmada-prod".into(),
                image_registry: None,
                image_tags: BTreeMap::new(),
                components: vec![],
                feature_gates: BTreeMap::new(),
            }),
            alias: None,
            deletion_policy: DeletionPolicy::Delete,
        }
    }

    #[test]
    fn spec_validation() {
        let mut adopt_with_provision = adopt();
        adopt_with_provision.provision = provision().provision;
        let mut adopt_without_ref = adopt();
        adopt_without_ref.kubeconfig_secret_ref = None;
        let mut adopt_empty_key = adopt();
        if let Some(r) = adopt_empty_key.kubeconfig_secret_ref.as_mut() {
            r.key = Some(String::new());
        }
        let mut provision_without = provision();
        provision_without.provision = None;
        let mut provision_with_ref = provision();
        provision_with_ref.kubeconfig_secret_ref = adopt().kubeconfig_secret_ref;
        let with_provision = |f: &dyn Fn(&mut ProvisionSpec)| {
            let mut spec = provision();
            if let Some(p) = spec.provision.as_mut() {
                f(p);
            }
            spec
        };
        type Case = (
            &'static str,
            InstanceSpec,
            Option<InstanceSpec>,
            Result<(), InstanceSpecError>,
        );
        let cases: Vec<Case> = vec![
            ("adopt", adopt(), None, Ok(())),
            ("provision", provision(), None, Ok(())),
            (
                "adopt without ref",
                adopt_without_ref,
                None,
                Err(InstanceSpecError::MissingKubeconfigRef),
            ),
            (
                "adopt with provision",
                adopt_with_provision,
                None,
                Err(InstanceSpecError::UnexpectedProvision),
            ),
            (
                "adopt with empty key",
                adopt_empty_key,
                None,
                Err(InstanceSpecError::Empty {
                    field: "spec.kubeconfigSecretRef.key",
                }),
            ),
            (
                "provision without settings",
                provision_without,
                None,
                Err(InstanceSpecError::MissingProvision),
            ),
            (
                "provision with ref",
                provision_with_ref,
                None,
                Err(InstanceSpecError::UnexpectedKubeconfigRef),
            ),
            (
                "bad version",
                with_provision(&|p| p.karmada_version = "1.14".into()),
                None,
                Err(InstanceSpecError::BadKarmadaVersion("1.14".into())),
            ),
            (
                "pre-release version",
                with_provision(&|p| p.karmada_version = "v1.15.0-rc.1".into()),
                None,
                Ok(()),
            ),
            (
                "unknown component tag",
                with_provision(&|p| {
                    p.image_tags.insert("karmadaFoo".into(), "v1".into());
                }),
                None,
                Err(InstanceSpecError::UnknownComponent("karmadaFoo".into())),
            ),
            (
                "empty host namespace",
                with_provision(&|p| p.host_namespace.clear()),
                None,
                Err(InstanceSpecError::Empty {
                    field: "spec.provision.hostNamespace",
                }),
            ),
            (
                "mode change",
                provision(),
                Some(adopt()),
                Err(InstanceSpecError::ModeChanged {
                    old: InstanceMode::Adopt,
                    new: InstanceMode::Provision,
                }),
            ),
        ];
        for (what, spec, old, want) in cases {
            assert_eq!(spec.validate(old.as_ref()), want, "{what}");
        }
    }

    #[test]
    fn instance_yaml_round_trip() {
        let yaml = r#"
apiVersion: kairship.io/v1alpha1
kind: Instance
metadata:
  name: prod
  annotations:
    kairship.io/force-delete: "TRUE"
spec:
  mode: Adopt
  kubeconfigSecretRef:
    namespace: kairship-system
    name: prod-kubeconfig
  alias: Production
status:
  state: RUNNING
  phase: Active
  controlPlaneReady: true
  karmadaVersion: v1.14.0
  kubernetesVersion: v1.31.2
  consecutiveProbeFailures: 0
  summary:
    clusterSummary: {totalNum: 2, readyNum: 1}
    nodeSummary: {totalNum: 5, readyNum: 5}
    resourceSummary:
      allocatable: {cpu: "8", memory: 32Gi}
    resourceTotalNum: {services: 3, secrets: 4, configmaps: 5, persistentvolumeclaims: 0}
    policyTotalNum: {propagationpolicies: 2, overridepolicies: 1}
    workloadSummary:
      deployments: {totalNum: 7, readyNum: 6}
"#;
        let instance: Instance = serde_saphyr::from_str(yaml).unwrap();
        assert_eq!(
            instance.spec.kubeconfig_secret_ref.as_ref().unwrap().key,
            None
        );
        assert_eq!(instance.spec.deletion_policy, DeletionPolicy::Delete);
        assert!(instance.force_delete_requested());
        assert!(!instance.is_deleting() && !instance.has_finalizer());
        let status = instance.status.as_ref().unwrap();
        assert_eq!(status.state, InstanceState::Running);
        let summary = status.summary.as_ref().unwrap();
        assert_eq!(summary.workload_summary.deployments.ready_num, 6);
        assert_eq!(summary.resource_summary.allocatable["memory"].0, "32Gi");
        let json = serde_json::to_value(&instance).unwrap();
        assert_eq!(json["apiVersion"], "kairship.io/v1alpha1");
        assert_eq!(json["status"]["summary"]["clusterSummary"]["readyNum"], 1);
        let back: Instance = serde_json::from_value(json).unwrap();
        assert_eq!(back, instance);
    }

    #[test]
    fn unknown_state_values_read_as_unknown() {
        let cases = [
            ("INPROCESS", InstanceState::InProcess),
            ("UNAVAILABLE", InstanceState::Unavailable),
            ("TERMINAL", InstanceState::Terminal),
            ("UPGRADING", InstanceState::Unknown),
        ];
        for (wire, want) in cases {
            let got: InstanceState = serde_json::from_value(serde_json::json!(wire)).unwrap();
            assert_eq!(got, want, "{wire}");
            if want != InstanceState::Unknown {
                assert_eq!(serde_json::to_value(got).unwrap(), wire);
                assert_eq!(got.to_string(), wire);
            }
        }
    }

    #[test]
    fn component_names_round_trip() {
        for c in KarmadaComponent::ALL {
            assert_eq!(KarmadaComponent::from_field_name(c.field_name()), Some(c));
            assert_eq!(serde_json::to_value(c).unwrap(), c.field_name());
        }
        assert_eq!(
            KarmadaComponent::ALL
                .iter()
                .filter(|c| c.is_optional())
                .count(),
            3
        );
    }
}
