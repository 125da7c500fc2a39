//! Messages of the member-cluster views and of `:promote` (see [`KairshipApi`](crate::api::KairshipApi)): what a
//! Karmada instance's member clusters hold, read through Karmada's cluster proxy, and taking a
//! member's workload into the instance.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::ListOptions;

/// Annotation naming the member cluster an object was read from, as Karmada's own
/// multi-cluster reads mark their objects.
pub const CLUSTER_ANNOTATION: &str = "resource.karmada.io/cached-from-cluster";

/// A workload kind whose pods can be listed per member cluster and which can be promoted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    /// `apps/v1` Deployment.
    Deployments,
    /// `apps/v1` StatefulSet.
    Statefulsets,
    /// `apps/v1` DaemonSet.
    Daemonsets,
    /// `batch/v1` Job.
    Jobs,
    /// `batch/v1` CronJob.
    Cronjobs,
}

impl WorkloadKind {
    /// Every kind.
    pub const ALL: [WorkloadKind; 5] = [
        WorkloadKind::Deployments,
        WorkloadKind::Statefulsets,
        WorkloadKind::Daemonsets,
        WorkloadKind::Jobs,
        WorkloadKind::Cronjobs,
    ];

    /// The plural, as in URLs.
    pub fn plural(self) -> &'static str {
        match self {
            WorkloadKind::Deployments => "deployments",
            WorkloadKind::Statefulsets => "statefulsets",
            WorkloadKind::Daemonsets => "daemonsets",
            WorkloadKind::Jobs => "jobs",
            WorkloadKind::Cronjobs => "cronjobs",
        }
    }

    /// The kind (`Deployment`).
    pub fn kind(self) -> &'static str {
        match self {
            WorkloadKind::Deployments => "Deployment",
            WorkloadKind::Statefulsets => "StatefulSet",
            WorkloadKind::Daemonsets => "DaemonSet",
            WorkloadKind::Jobs => "Job",
            WorkloadKind::Cronjobs => "CronJob",
        }
    }

    /// API group.
    pub fn group(self) -> &'static str {
        match self {
            WorkloadKind::Jobs | WorkloadKind::Cronjobs => "batch",
            _ => "apps",
        }
    }

    /// `apiVersion`.
    pub fn api_version(self) -> &'static str {
        match self {
            WorkloadKind::Jobs | WorkloadKind::Cronjobs => "batch/v1",
            _ => "apps/v1",
        }
    }

    /// The kind of a URL segment (`deployments`).
    pub fn parse(text: &str) -> Option<WorkloadKind> {
        Self::ALL.into_iter().find(|k| k.plural() == text)
    }

    /// The name of the ResourceBinding Karmada keeps for workload `name` of this kind
    /// (`web-deployment`).
    pub fn binding_name(self, name: &str) -> String {
        format!("{name}-{}", self.kind().to_lowercase())
    }
}

impl std::fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.plural())
    }
}

/// `ListMemberNodes`: the nodes of one member cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListMemberNodesRequest {
    /// Instance name.
    pub instance: String,
    /// Member cluster name.
    pub cluster: String,
    /// Selectors, fuzzy name, sorting and paging.
    #[serde(default)]
    pub options: ListOptions,
}

/// `ListMemberObjects`: objects of any resource of one member cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListMemberObjectsRequest {
    /// Instance name.
    pub instance: String,
    /// Member cluster name.
    pub cluster: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
    /// Namespace; absent: cluster-scoped, or all namespaces.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Selectors, fuzzy name, sorting and paging.
    #[serde(default)]
    pub options: ListOptions,
}

/// `GetMemberObject`: one object of a member cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetMemberObjectRequest {
    /// Instance name.
    pub instance: String,
    /// Member cluster name.
    pub cluster: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
    /// Namespace of a namespaced object.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
}
