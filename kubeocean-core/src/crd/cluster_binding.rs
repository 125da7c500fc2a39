//! `ClusterBinding`: registers a worker cluster with the computing cluster.

use k8s_openapi::api::core::v1::{NodeSelector, SecretReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema;

/// Priority class given to physical pods when the binding names none.
pub const DEFAULT_POD_PRIORITY_CLASS_NAME: &str = "kubeocean-default";

/// Value of the `kubeocean-default` PriorityClass the worker chart installs (upstream
/// Kubeocean's default): borrowed pods rank below the worker's own.
pub const DEFAULT_POD_PRIORITY_VALUE: i32 = -10000;

/// Preemption policy of the `kubeocean-default` PriorityClass: borrowed pods never evict
/// anything to make room.
pub const DEFAULT_POD_PREEMPTION_POLICY: &str = "Never";

/// Key of the binding Secret that holds the worker cluster's kubeconfig.
pub const KUBECONFIG_SECRET_KEY: &str = "kubeconfig";

/// Desired state of a ClusterBinding: which worker cluster, how to reach it and which of
/// its nodes to pool.
// kube's `printcolumn(...)` entries repeat `type_`/`json_path`, which is not duplication.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "cloud.tencent.com",
    version = "v1beta1",
    kind = "ClusterBinding",
    plural = "clusterbindings",
    singular = "clusterbinding",
    shortname = "cb",
    status = "ClusterBindingStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "ClusterBinding binds a worker cluster to the computing cluster: the worker's selected nodes appear here as virtual nodes.",
    printcolumn(name = "ClusterID", type_ = "string", json_path = ".spec.clusterID"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterBindingSpec {
    /// Unique identifier of the worker cluster, used in virtual node names
    /// (`vnode-<clusterID>-<node>`). A DNS label of at most 24 characters; immutable.
    #[serde(rename = "clusterID")]
    #[schemars(schema_with = "schema::cluster_id")]
    pub cluster_id: String,

    /// Secret whose key `kubeconfig` holds the kubeconfig of the worker cluster.
    pub secret_ref: SecretReference,

    /// Selects the worker nodes to pool; empty selects all nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,

    /// Namespace of the worker cluster that receives every mapped object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_namespace: Option<String>,

    /// Namespaces of the computing cluster whose Services are synced to the worker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_namespaces: Vec<String>,

    /// Do not add the default `kubeocean.io/vnode:NoSchedule` taint to virtual nodes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable_node_default_taint: bool,

    /// Map DaemonSet pods without the `kubeocean.io/running-daemonset: "true"` annotation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub running_daemonset_by_default: bool,

    /// Pin physical pods with `spec.nodeName` instead of node affinity.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub direct_scheduling: bool,

    /// Priority class of physical pods; `kubeocean-default` when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_priority_class_name: Option<String>,
}

impl ClusterBindingSpec {
    /// The priority class for physical pods, falling back to `kubeocean-default`.
    pub fn pod_priority_class_name(&self) -> &str {
        match self.pod_priority_class_name.as_deref() {
            Some(name) if !name.is_empty() => name,
            _ => DEFAULT_POD_PRIORITY_CLASS_NAME,
        }
    }
}

/// Lifecycle phase of a ClusterBinding. Upstream's `phase` is a free string with the values
/// `Pending`, `Ready` and `Failed`; `Deleting` is added for a binding that is being drained.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ClusterBindingPhase {
    /// Accepted, not yet connected.
    #[default]
    Pending,
    /// Connected; syncer and proxier are running.
    Ready,
    /// Validation, connectivity or workload creation failed (see the conditions).
    Failed,
    /// Deleted; the syncer drains the worker before the finalizer goes (the `Ready`
    /// condition says what the deletion waits for).
    Deleting,
}

/// Observed state of a ClusterBinding.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterBindingStatus {
    /// Current phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ClusterBindingPhase>,

    /// Conditions `Ready`, `Connected`, `ProxierReady` and `SyncerReady`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,

    /// When the binding was last synced successfully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_time: Option<Time>,
}

/// Condition types reported on a ClusterBinding.
pub mod condition {
    /// Everything the binding needs is in place.
    pub const READY: &str = "Ready";
    /// The worker cluster is reachable with the given kubeconfig and permissions.
    pub const CONNECTED: &str = "Connected";
    /// The proxier workload is available.
    pub const PROXIER_READY: &str = "ProxierReady";
    /// The syncer workload is available.
    pub const SYNCER_READY: &str = "SyncerReady";
}
