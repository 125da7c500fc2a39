//! Request and response messages of [`KairshipApi`](super::KairshipApi): plain serde structs,
//! the same for REST and gRPC (the proto files mirror them field by field). Kubernetes objects
//! travel as JSON ([`Object`]; `google.protobuf.Struct` in proto).

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::kinds::ResourceKind;

/// A Kubernetes object as JSON (`apiVersion`, `kind`, `metadata`, ...).
pub type Object = serde_json::Value;

/// What lists are sorted by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum SortBy {
    /// `metadata.name` (the default).
    #[default]
    Name,
    /// `metadata.creationTimestamp`.
    CreationTimestamp,
    /// `status.state` (instances only).
    State,
    /// `metadata.namespace`, then name (objects inside an instance).
    Namespace,
}

/// Sort direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortDir {
    /// Ascending (the default).
    #[default]
    Asc,
    /// Descending.
    Desc,
}

/// Filtering, sorting and paging of a list (query parameters in REST).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListOptions {
    /// 1-based page number (default 1).
    #[param(minimum = 1)]
    #[schema(minimum = 1)]
    pub page: Option<u32>,
    /// Items per page, 1 to 10000; absent: 10000, the maximum (`pagination.pageSize` always
    /// reports the size applied).
    #[param(minimum = 1, maximum = 10000)]
    #[schema(minimum = 1, maximum = 10000)]
    pub page_size: Option<u32>,
    /// Sort key (default `name`; `state` only for instances, `namespace` only for objects
    /// inside an instance).
    pub sort_by: Option<SortBy>,
    /// Sort direction (default `asc`).
    pub sort_dir: Option<SortDir>,
    /// Sort objects inside an instance by this field instead of `sortBy`: a printer column's
    /// JSONPath of field names (`.spec.replicas`, `.status.readyReplicas`); ties by name;
    /// objects without the field first.
    #[param(max_length = 512)]
    #[schema(max_length = 512)]
    pub sort_field: Option<String>,
    /// Fuzzy name filter: case-insensitive substring of `metadata.name`.
    pub name: Option<String>,
    /// Kubernetes label selector (`app=web,tier!=db`).
    pub label_selector: Option<String>,
    /// Kubernetes field selector (`metadata.namespace=default`).
    pub field_selector: Option<String>,
    /// Only objects of these namespaces, comma-separated (`team-a,team-b`): lists of a
    /// namespaced resource across namespaces only.
    #[param(pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(,[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")]
    #[schema(pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(,[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")]
    pub namespaces: Option<String>,
}

/// Paging facts of a list answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Pagination {
    /// Matching objects over all pages.
    pub total: u64,
    /// This page (1-based).
    pub page: u32,
    /// The page size used (the total when everything is on one page).
    pub page_size: u32,
    /// Number of pages.
    pub pages: u32,
}

/// A page of objects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectList {
    /// The objects of this page, in order.
    #[schema(value_type = Vec<Object>)]
    pub items: Vec<Object>,
    /// Paging facts.
    pub pagination: Pagination,
}

/// The accepted shape of an object body: these top-level fields and no others. Policy bodies
/// may instead be `{"data": "<the policy as YAML or JSON text>"}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeObject {
    /// `group/version` (filled in when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Kind (filled in when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Object metadata (`name`, `namespace`, `labels`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Value>,
    /// Desired state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub spec: Option<serde_json::Value>,
    /// Observed state (ignored by most writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub status: Option<serde_json::Value>,
    /// ConfigMap/Secret data (an object), or a whole policy as YAML/JSON text (a string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
    /// ConfigMap binary data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub binary_data: Option<serde_json::Value>,
    /// Secret string data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub string_data: Option<serde_json::Value>,
    /// Secret type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// ConfigMap/Secret immutability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub immutable: Option<bool>,
}

/// `ListInstances`: instances the caller may `get`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListInstancesRequest {
    /// Filtering, sorting (`name`, `creationTimestamp`, `state`) and paging.
    #[serde(default)]
    pub options: ListOptions,
}

/// `GetInstance`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetInstanceRequest {
    /// Instance name.
    pub instance: String,
}

/// `CreateInstance`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateInstanceRequest {
    /// The `kairship.io/v1alpha1` Instance.
    #[schema(value_type = KubeObject)]
    pub body: Object,
}

/// `UpdateInstance`: replaces the Instance (pass `metadata.resourceVersion` to guard against
/// concurrent changes).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateInstanceRequest {
    /// Instance name.
    pub instance: String,
    /// The new Instance.
    #[schema(value_type = KubeObject)]
    pub body: Object,
}

/// `DeleteInstance`: refused while member clusters are joined, and while the instance
/// cannot be reached to count them, unless forced.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteInstanceRequest {
    /// Instance name.
    pub instance: String,
    /// Delete even with member clusters, or when they cannot be counted: sets the
    /// `kairship.io/force-delete` annotation, then deletes.
    #[serde(default)]
    pub force: bool,
}

/// Body of `POST instances/{i}/kubeconfig` (optional).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeconfigOptions {
    /// Base URL clients reach this API server at (`https://kairship.example.com`); default:
    /// the server's configured external URL, else the URL of this request.
    #[serde(default)]
    pub server: Option<String>,
}

/// `CreateKubeconfig`: a kubeconfig that reaches the instance through the native proxy with
/// the caller's own bearer token.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateKubeconfigRequest {
    /// Instance name.
    pub instance: String,
    /// Base URL of this API server as clients reach it; default: the server's configured
    /// external URL, else `request_server`.
    #[serde(default)]
    pub server: Option<String>,
    /// Base URL the request arrived at, as the transport saw it (`Host` header), used when
    /// neither `server` nor a configured external URL is known.
    #[serde(default)]
    pub request_server: Option<String>,
}

/// A kubeconfig.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeconfigResponse {
    /// Instance name.
    pub instance: String,
    /// The proxy URL the kubeconfig points at.
    pub server: String,
    /// The kubeconfig YAML (it holds the caller's token: keep it safe).
    pub kubeconfig: String,
}

impl std::fmt::Debug for KubeconfigResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The kubeconfig holds a bearer token: never print it.
        f.debug_struct("KubeconfigResponse")
            .field("instance", &self.instance)
            .field("server", &self.server)
            .finish_non_exhaustive()
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

/// `ListResources`: objects of one kind in one namespace, or in all namespaces
/// (`namespace` absent), or of a cluster-scoped kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListResourcesRequest {
    /// Instance name.
    pub instance: String,
    /// The kind.
    pub kind: ResourceKind,
    /// Namespace; absent for all namespaces or cluster-scoped kinds.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Selectors, fuzzy name, sorting and paging.
    #[serde(default)]
    pub options: ListOptions,
}

/// `GetResource`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetResourceRequest {
    /// Instance name.
    pub instance: String,
    /// The kind.
    pub kind: ResourceKind,
    /// Namespace (required for namespaced kinds, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
}

/// `CreateResource`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateResourceRequest {
    /// Instance name.
    pub instance: String,
    /// The kind.
    pub kind: ResourceKind,
    /// Namespace (required for namespaced kinds, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// The object; policies may be given as `{"data": "<YAML or JSON>"}`.
    #[schema(value_type = KubeObject)]
    pub body: Object,
}

/// `UpdateResource`: replaces an object (pass `metadata.resourceVersion` to guard against
/// concurrent changes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateResourceRequest {
    /// Instance name.
    pub instance: String,
    /// The kind.
    pub kind: ResourceKind,
    /// Namespace (required for namespaced kinds, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
    /// The new object; policies may be given as `{"data": "<YAML or JSON>"}`.
    #[schema(value_type = KubeObject)]
    pub body: Object,
}

/// `DeleteResource`: a (Cluster)PropagationPolicy still used by a ResourceBinding is kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteResourceRequest {
    /// Instance name.
    pub instance: String,
    /// The kind.
    pub kind: ResourceKind,
    /// Namespace (required for namespaced kinds, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
}

/// How the API spells the core group (`v1` objects: ConfigMaps, Pods, Namespaces, ...) in
/// generic resource paths and messages: `resources/core/v1/configmaps`.
pub const CORE_GROUP: &str = "core";

/// `ListObjects`: objects of any resource the instance serves, named by group, version and
/// plural, in one namespace, in all namespaces (`namespace` absent), or cluster-scoped.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListObjectsRequest {
    /// Instance name.
    pub instance: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version (`v1`, `v1alpha1`).
    pub version: String,
    /// Resource plural (`deployments`, `nodes`).
    pub resource: String,
    /// Namespace; absent for all namespaces or cluster-scoped resources.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Selectors, fuzzy name, sorting and paging.
    #[serde(default)]
    pub options: ListOptions,
}

/// `GetObject`: one object of any resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetObjectRequest {
    /// Instance name.
    pub instance: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
    /// Namespace (required for namespaced resources, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
}

/// `CreateObject`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateObjectRequest {
    /// Instance name.
    pub instance: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
    /// Namespace (required for namespaced resources, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// The object (`apiVersion`, `kind` and the namespace are filled in when absent); Karmada
    /// policies may be given as `{"data": "<YAML or JSON>"}`.
    #[schema(value_type = Object)]
    pub body: Object,
}

/// `UpdateObject`: replaces an object (pass `metadata.resourceVersion` to guard against
/// concurrent changes).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateObjectRequest {
    /// Instance name.
    pub instance: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
    /// Namespace (required for namespaced resources, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
    /// The new object.
    #[schema(value_type = Object)]
    pub body: Object,
}

/// How a patch is to be applied (in REST, the request's `Content-Type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PatchType {
    /// JSON merge patch (RFC 7386), `application/merge-patch+json`.
    #[default]
    Merge,
    /// JSON patch (RFC 6902, an array of operations), `application/json-patch+json`.
    Json,
    /// Kubernetes strategic merge patch (built-in kinds only),
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// Server-side apply of the whole intended object, `application/apply-patch+yaml` (YAML
    /// or JSON).
    Apply,
}

impl PatchType {
    /// Every patch type.
    pub const ALL: [PatchType; 4] = [
        PatchType::Merge,
        PatchType::Json,
        PatchType::Strategic,
        PatchType::Apply,
    ];

    /// The media type of the patch type.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Merge => "application/merge-patch+json",
            PatchType::Json => "application/json-patch+json",
            PatchType::Strategic => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }

    /// The patch type of a media type (parameters such as `; charset=utf-8` ignored).
    pub fn from_content_type(content_type: &str) -> Option<PatchType> {
        let essence = content_type.split(';').next().unwrap_or_default().trim();
        if essence.eq_ignore_ascii_case("application/apply-patch+json") {
            return Some(PatchType::Apply);
        }
        PatchType::ALL
            .into_iter()
            .find(|t| essence.eq_ignore_ascii_case(t.content_type()))
    }
}

/// `PatchObject`: changes an object with a merge, JSON, strategic merge or apply patch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PatchObjectRequest {
    /// Instance name.
    pub instance: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
    /// Namespace (required for namespaced resources, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
    /// How `patch` applies.
    #[serde(default)]
    pub patch_type: PatchType,
    /// The patch: an object, or for `json` an array of operations.
    pub patch: serde_json::Value,
    /// Who manages the fields (apply; default `kairship`).
    #[serde(default)]
    pub field_manager: Option<String>,
    /// Apply only: take over fields other managers own.
    #[serde(default)]
    pub force: Option<bool>,
}

/// `DeleteObject`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteObjectRequest {
    /// Instance name.
    pub instance: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
    /// Namespace (required for namespaced resources, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
}

/// `ListEvents`: `core/v1` Events of an instance, of one namespace, or of one object, filtered
/// by type, reason and the kind of object they are about.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListEventsRequest {
    /// Instance name.
    pub instance: String,
    /// Namespace of the events (and of the object, if namespaced); absent: all namespaces.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The object's API group (`core` for the core group); with `version`, `resource` and
    /// `name`, only the events of that object.
    #[serde(default)]
    pub group: Option<String>,
    /// The object's API version.
    #[serde(default)]
    pub version: Option<String>,
    /// The object's resource plural.
    #[serde(default)]
    pub resource: Option<String>,
    /// The object's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Only events of this type: `Normal` or `Warning`.
    #[serde(default, rename = "type")]
    pub type_: Option<String>,
    /// Only events with this reason (`FailedScheduling`).
    #[serde(default)]
    pub reason: Option<String>,
    /// Only events about objects of this kind (`Deployment`).
    #[serde(default)]
    pub kind: Option<String>,
    /// Selectors, fuzzy name, sorting and paging.
    #[serde(default)]
    pub options: ListOptions,
}

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

/// `DeploymentAction`: `POST …/deployments/{name}:pause|:resume|:restart`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeploymentActionRequest {
    /// Instance name.
    pub instance: String,
    /// Namespace.
    pub namespace: String,
    /// Deployment name.
    pub name: String,
    /// What to do.
    pub action: DeploymentAction,
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
    /// The Deployment object.
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
