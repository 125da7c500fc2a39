//! REST handlers of the members feature: the `Cluster` objects (`instances/{i}/clusters[/{c}]`),
//! joins (`clusters:join`, `clusters:register`, `PATCH clusters/{c}`) and the member views
//! (`clusters/{c}/nodes`, `clusters/{c}[/namespaces/{ns}]/resources/…`).

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

use super::extract::{ApiJson, ApiPath, ApiQuery, Authenticated};
use super::handler::{
    Answer, ErrorResponses, ReadErrorResponses, RestState, Written, member_object_operation,
    written,
};
use crate::api::fields::WriteOptions;
use crate::api::{
    ApiError, GetClusterRequest, JoinClusterRequest, JoinMemberRequest, KubeObject,
    ListClustersRequest, ListOptions, Object, ObjectList, RegisterMemberRequest,
    RegisterMemberResponse, RemoveClusterRequest, UpdateClusterRequest, UpdateMemberRequest,
};
use crate::api::{GetMemberObjectRequest, ListMemberNodesRequest, ListMemberObjectsRequest};

/// Query parameters of an unjoin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UnjoinOptions {
    /// Unjoin even while ResourceBindings or ClusterResourceBindings still schedule to the
    /// member, and even when the member cannot be reached to remove Kairship's objects there.
    #[serde(default)]
    pub force: Option<bool>,
}

/// The instance of a request body must be absent or the one of the path.
fn same_instance(path: String, body: &str) -> Result<String, ApiError> {
    if body.is_empty() || body == path {
        Ok(path)
    } else {
        Err(ApiError::invalid_field(
            "instance",
            format!("the body names instance {body:?}, the path {path:?}"),
        ))
    }
}

/// Join a member cluster in Push mode from its kubeconfig.
///
/// Creates in the member the namespace `karmada-cluster`, the ServiceAccount
/// `karmada-<name>` with its ClusterRole and ClusterRoleBinding
/// `karmada-controller-manager:karmada-<name>` and token Secret, and the impersonator's
/// ServiceAccount, ClusterRole, ClusterRoleBinding and token; then in the instance the
/// Secrets `karmada-cluster/<name>` and `karmada-cluster/<name>-impersonator` and the
/// `Cluster`. Running it again converges; a failure removes what the call created and the
/// error names the failed step. The kubeconfig is never stored, returned or logged.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters:join", tag = "clusters",
    operation_id = "JoinMember", params(("instance" = String, Path, description = "Instance name")),
    request_body(content = JoinMemberRequest, description = "The member's name, kubeconfig and placement"),
    responses((status = 200, body = Object, description = "The Cluster"), ErrorResponses))]
pub async fn join_member(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
    ApiJson(mut req): ApiJson<JoinMemberRequest>,
) -> Result<Json<Object>, ApiError> {
    req.instance = same_instance(instance, &req.instance)?;
    s.api.join_member(&auth.caller, req).await.map(Json)
}

/// Prepare a Pull-mode join: returns the manifests to apply in the member.
///
/// Creates in the instance a bootstrap token (`kube-system/bootstrap-token-<id>`, with an
/// expiration), the agent's ClusterRole and ClusterRoleBinding (bound to the token's group)
/// and the `Cluster` (`syncMode: Pull`); returns the karmada-agent's namespace,
/// ServiceAccount, RBAC, kubeconfig Secret and Deployment.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters:register", tag = "clusters",
    operation_id = "RegisterMember", params(("instance" = String, Path, description = "Instance name")),
    request_body(content = RegisterMemberRequest, description = "The member's name and placement"),
    responses((status = 200, body = RegisterMemberResponse, description = "The manifests to apply in the member"), ErrorResponses))]
pub async fn register_member(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
    ApiJson(mut req): ApiJson<RegisterMemberRequest>,
) -> Result<Json<RegisterMemberResponse>, ApiError> {
    req.instance = same_instance(instance, &req.instance)?;
    s.api.register_member(&auth.caller, req).await.map(Json)
}

/// Update labels, taints, provider, region or zone of a member cluster.
#[utoipa::path(patch, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}", tag = "clusters",
    operation_id = "UpdateMember", params(("instance" = String, Path, description = "Instance name"),
        ("cluster" = String, Path, description = "Member cluster name")),
    request_body(content = UpdateMemberRequest, description = "What to change; absent fields are kept"),
    responses((status = 200, body = Object, description = "The updated Cluster"), ErrorResponses))]
pub async fn update_member(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, cluster)): ApiPath<(String, String)>,
    ApiJson(mut req): ApiJson<UpdateMemberRequest>,
) -> Result<Json<Object>, ApiError> {
    req.instance = same_instance(instance, &req.instance)?;
    if !req.cluster.is_empty() && req.cluster != cluster {
        return Err(ApiError::invalid_field(
            "cluster",
            format!(
                "the body names cluster {:?}, the path {cluster:?}",
                req.cluster
            ),
        ));
    }
    req.cluster = cluster;
    s.api.update_member(&auth.caller, req).await.map(Json)
}

// ---- member clusters ----------------------------------------------------------------------

/// List the member clusters of an instance.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters", tag = "clusters",
    operation_id = "ListClusters", params(("instance" = String, Path, description = "Instance name"), ListOptions),
    responses((status = 200, body = ObjectList, description = "A page of cluster.karmada.io/v1alpha1 Clusters"), ReadErrorResponses))]
pub async fn list_clusters(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
    ApiQuery(options): ApiQuery<ListOptions>,
) -> Answer<ObjectList> {
    let req = ListClustersRequest { instance, options };
    s.api.list_clusters(&auth.caller, req).await.map(Json)
}

// Creates the `Cluster` object as sent and joins nothing (the joins are `clusters:join` and
// `clusters:register`), hence the operation id `CreateCluster`; gRPC keeps `JoinCluster`.
/// Join a member cluster.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters", tag = "clusters",
    operation_id = "CreateCluster", params(("instance" = String, Path, description = "Instance name"), WriteOptions),
    request_body(content = KubeObject, description = "A cluster.karmada.io/v1alpha1 Cluster"),
    responses((status = 200, body = Object, description = "The created Cluster"), ErrorResponses))]
pub async fn create_cluster(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
    ApiQuery(write): ApiQuery<WriteOptions>,
    ApiJson(body): ApiJson<Object>,
) -> Written {
    let req = JoinClusterRequest { instance, body };
    written(write, s.api.create_cluster(&auth.caller, req)).await
}

/// Read a member cluster.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}", tag = "clusters",
    operation_id = "GetCluster", params(("instance" = String, Path, description = "Instance name"),
        ("cluster" = String, Path, description = "Member cluster name")),
    responses((status = 200, body = Object, description = "The Cluster"), ReadErrorResponses))]
pub async fn get_cluster(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, cluster)): ApiPath<(String, String)>,
) -> Answer<Object> {
    let req = GetClusterRequest { instance, cluster };
    s.api.get_cluster(&auth.caller, req).await.map(Json)
}

/// Replace a member cluster.
#[utoipa::path(put, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}", tag = "clusters",
    operation_id = "UpdateCluster", params(("instance" = String, Path, description = "Instance name"),
        ("cluster" = String, Path, description = "Member cluster name"), WriteOptions),
    request_body(content = KubeObject, description = "The new Cluster"),
    responses((status = 200, body = Object, description = "The updated Cluster"), ErrorResponses))]
pub async fn update_cluster(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, cluster)): ApiPath<(String, String)>,
    ApiQuery(write): ApiQuery<WriteOptions>,
    ApiJson(body): ApiJson<Object>,
) -> Written {
    let req = UpdateClusterRequest {
        instance,
        cluster,
        body,
    };
    written(write, s.api.update_cluster(&auth.caller, req)).await
}

/// Unjoin a member cluster: refused (FailedPrecondition, naming them) while bindings still
/// schedule to it unless `force`; removes the Cluster, its credential Secrets and, for a Push
/// join, Kairship's objects in the member.
#[utoipa::path(delete, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}", tag = "clusters",
    operation_id = "RemoveCluster", params(("instance" = String, Path, description = "Instance name"),
        ("cluster" = String, Path, description = "Member cluster name"), UnjoinOptions),
    responses((status = 200, body = Object, description = "The Cluster being removed, or a Status"), ErrorResponses))]
pub async fn remove_cluster(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, cluster)): ApiPath<(String, String)>,
    ApiQuery(options): ApiQuery<UnjoinOptions>,
) -> Answer<Object> {
    let req = RemoveClusterRequest {
        instance,
        cluster,
        force: options.force,
    };
    s.api.remove_cluster(&auth.caller, req).await.map(Json)
}

/// List the nodes of a member cluster.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}/nodes", tag = "members", operation_id = "ListMemberNodes",
    params(("instance" = String, Path, description = "Instance name"),
        ("cluster" = String, Path, description = "Member cluster name"), ListOptions),
    responses((status = 200, body = ObjectList, description = "A page of v1 Nodes"), ReadErrorResponses))]
pub async fn list_member_nodes(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, cluster)): ApiPath<(String, String)>,
    ApiQuery(options): ApiQuery<ListOptions>,
) -> Answer<ObjectList> {
    let req = ListMemberNodesRequest {
        instance,
        cluster,
        options,
    };
    s.api.list_member_nodes(&auth.caller, req).await.map(Json)
}

/// Path of a member object call.
#[derive(Debug, Deserialize)]
pub struct MemberPath {
    instance: String,
    cluster: String,
    #[serde(default)]
    namespace: Option<String>,
    group: String,
    version: String,
    resource: String,
    #[serde(default)]
    name: Option<String>,
}

async fn list_objects(
    s: RestState,
    auth: Authenticated,
    p: MemberPath,
    options: ListOptions,
) -> Answer<ObjectList> {
    let req = ListMemberObjectsRequest {
        instance: p.instance,
        cluster: p.cluster,
        group: p.group,
        version: p.version,
        resource: p.resource,
        namespace: p.namespace,
        options,
    };
    s.api.list_member_objects(&auth.caller, req).await.map(Json)
}

async fn get_object(s: RestState, auth: Authenticated, p: MemberPath) -> Answer<Object> {
    let name = p
        .name
        .ok_or_else(|| ApiError::invalid("the path names no object"))?;
    let req = GetMemberObjectRequest {
        instance: p.instance,
        cluster: p.cluster,
        group: p.group,
        version: p.version,
        resource: p.resource,
        namespace: p.namespace,
        name,
    };
    s.api.get_member_object(&auth.caller, req).await.map(Json)
}

member_object_operation! {
    get collection
    /// List objects of any resource of a member cluster: cluster-scoped, or of every namespace.
    cluster list_member_cluster_objects "ListMemberObjects"
        "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}/resources/{group}/{version}/{resource}",
    /// List objects of a namespaced resource of a member cluster in one namespace.
    namespaced list_member_namespaced_objects "ListMemberNamespacedObjects"
        "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}/namespaces/{namespace}/resources/{group}/{version}/{resource}",
    query [ListOptions],
    doc [responses((status = 200, body = ObjectList, description = "A page of the member's objects"), ReadErrorResponses)],
    fn (State(s): State<RestState>, auth: Authenticated, ApiPath(p): ApiPath<MemberPath>, ApiQuery(options): ApiQuery<ListOptions>) -> Answer<ObjectList> {
        list_objects(s, auth, p, options).await
    }
}

member_object_operation! {
    get object
    /// Read one cluster-scoped object of a member cluster.
    cluster get_member_cluster_object "GetMemberObject"
        "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}/resources/{group}/{version}/{resource}/{name}",
    /// Read one namespaced object of a member cluster.
    namespaced get_member_namespaced_object "GetMemberNamespacedObject"
        "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}",
    query [],
    doc [responses((status = 200, body = Object, description = "The member's object"), ReadErrorResponses)],
    fn (State(s): State<RestState>, auth: Authenticated, ApiPath(p): ApiPath<MemberPath>) -> Answer<Object> {
        get_object(s, auth, p).await
    }
}
