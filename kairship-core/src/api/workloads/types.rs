//! Messages of the workloads feature: Deployments joined with their per-cluster propagation
//! status, Deployment/Job/CronJob actions and a workload's pods per member cluster.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::members::view_types::WorkloadKind;
use crate::api::{ListOptions, Object, Pagination};

/// A verb on a Deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeploymentAction {
    /// Sets `spec.paused`.
    Pause,
    /// Clears `spec.paused`.
    Resume,
    /// Restarts the pods: sets the `kubectl.kubernetes.io/restartedAt` template annotation.
    Restart,
}

impl DeploymentAction {
    /// Every action.
    pub const ALL: [DeploymentAction; 3] = [
        DeploymentAction::Pause,
        DeploymentAction::Resume,
        DeploymentAction::Restart,
    ];

    /// The verb as in URLs (`pause`).
    pub fn as_str(self) -> &'static str {
        match self {
            DeploymentAction::Pause => "pause",
            DeploymentAction::Resume => "resume",
            DeploymentAction::Restart => "restart",
        }
    }

    /// The action spelled `verb`.
    pub fn parse(verb: &str) -> Option<DeploymentAction> {
        DeploymentAction::ALL
            .into_iter()
            .find(|a| a.as_str() == verb)
    }
}

/// `DeploymentAction`: `POST …/deployments/{name}:pause|:resume|:restart`, and the restart of
/// a StatefulSet or DaemonSet (`…/statefulsets/{name}:restart`, `…/daemonsets/{name}:restart`),
/// as `kubectl rollout` offers them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeploymentActionRequest {
    /// Instance name.
    pub instance: String,
    /// Namespace.
    pub namespace: String,
    /// Workload name.
    pub name: String,
    /// What to do.
    pub action: DeploymentAction,
    /// The workload's kind: a Deployment when absent (every verb); `statefulsets` and
    /// `daemonsets` take `restart` only.
    #[serde(default)]
    pub kind: Option<WorkloadKind>,
}

/// `ListWorkloads`: Deployments of a namespace joined with their ResourceBindings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListWorkloadsRequest {
    /// Instance name.
    pub instance: String,
    /// Namespace.
    pub namespace: String,
    /// Selectors, fuzzy name, sorting and paging (of the Deployments).
    #[serde(default)]
    pub options: ListOptions,
}

/// `GetWorkload`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetWorkloadRequest {
    /// Instance name.
    pub instance: String,
    /// Namespace.
    pub namespace: String,
    /// Deployment name.
    pub name: String,
}

/// How a workload fares in one member cluster (from the ResourceBinding).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterWorkloadStatus {
    /// Member cluster name.
    pub cluster: String,
    /// Replicas the scheduler assigned to the cluster.
    #[serde(default)]
    pub scheduled_replicas: Option<i32>,
    /// Replicas the member reports.
    #[serde(default)]
    pub replicas: Option<i32>,
    /// Ready replicas the member reports.
    #[serde(default)]
    pub ready_replicas: Option<i32>,
    /// Available replicas the member reports.
    #[serde(default)]
    pub available_replicas: Option<i32>,
    /// Updated replicas the member reports.
    #[serde(default)]
    pub updated_replicas: Option<i32>,
    /// Whether the manifest was applied to the member.
    #[serde(default)]
    pub applied: Option<bool>,
    /// `Healthy`, `Unhealthy` or `Unknown`.
    #[serde(default)]
    pub health: Option<String>,
    /// Why applying failed, when it did.
    #[serde(default)]
    pub message: Option<String>,
}

/// A Deployment with its propagation status across member clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workload {
    /// Deployment name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// Desired replicas (`spec.replicas`, default 1).
    pub replicas: i32,
    /// Ready replicas summed over member clusters (the template's own status when it is not
    /// propagated).
    pub ready_replicas: i32,
    /// Available replicas, summed likewise.
    pub available_replicas: i32,
    /// Whether the Deployment is paused.
    pub paused: bool,
    /// Name of the ResourceBinding (`<name>-deployment`), when one exists.
    #[serde(default)]
    pub binding: Option<String>,
    /// The propagation policy that placed it (`namespace/name`, or a cluster policy's name).
    #[serde(default)]
    pub policy: Option<String>,
    /// Per member cluster status, by cluster name.
    pub clusters: Vec<ClusterWorkloadStatus>,
    /// The workload object: the Deployment (the console joins its StatefulSet, DaemonSet and
    /// Job pages the same way, with the object here).
    #[schema(value_type = Object)]
    pub deployment: Object,
}

/// A page of workloads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadList {
    /// The workloads of this page, in order.
    pub items: Vec<Workload>,
    /// Paging facts.
    pub pagination: Pagination,
}

/// `ListWorkloadPods`: the pods of a workload in every member cluster it is placed on (by its
/// ResourceBinding), each marked with its cluster in the `resource.karmada.io/cached-from-cluster`
/// annotation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListWorkloadPodsRequest {
    /// Instance name.
    pub instance: String,
    /// Namespace of the workload.
    pub namespace: String,
    /// Kind of the workload (`cronjobs` have no pods of their own).
    pub kind: WorkloadKind,
    /// Workload name.
    pub name: String,
    /// Selectors, fuzzy name, sorting and paging (over the pods of all clusters).
    #[serde(default)]
    pub options: ListOptions,
}
