//! REST handlers of the member-cluster views and of `:promote`:
//! `…/instances/{instance}/namespaces/{namespace}/{kind}/{name}/pods`,
//! `…/instances/{instance}/clusters/{cluster}/nodes`,
//! `…/instances/{instance}/clusters/{cluster}[/namespaces/{namespace}]/resources/{group}/{version}/{resource}[/{name}]`
//! and `POST …/instances/{instance}/clusters/{cluster}/namespaces/{namespace}/{kind}/{name}:promote`.

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;

use super::extract::{ApiPath, ApiQuery, Authenticated};
use super::handlers::{Answer, ErrorResponses, ReadErrorResponses, RestState};
use super::{RestRoute, verb_doc};
use crate::api::error::ApiError;
use crate::api::member_types::{
    GetMemberObjectRequest, ListMemberNodesRequest, ListMemberObjectsRequest,
    ListWorkloadPodsRequest, PromoteWorkloadRequest, PromoteWorkloadResponse, WorkloadKind,
};
use crate::api::types::{ListOptions, Object, ObjectList};

/// The route of `:promote`, whose last segment carries the verb.
pub const PROMOTE_ROUTE: &str = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}/namespaces/{namespace}/{kind}/{name}";

fn workload_kind(text: &str) -> Result<WorkloadKind, ApiError> {
    WorkloadKind::parse(text).ok_or_else(|| {
        let kinds: Vec<&str> = WorkloadKind::ALL.iter().map(|k| k.plural()).collect();
        ApiError::not_found(format!(
            "unknown workload kind {text:?}; one of: {}",
            kinds.join(", ")
        ))
    })
}

/// List the pods of a workload in every member cluster it is placed on (each pod's cluster in its `resource.karmada.io/cached-from-cluster` annotation).
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}/{name}/pods", tag = "members", operation_id = "ListWorkloadPods",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("kind" = WorkloadKind, Path, description = "Workload kind: deployments, statefulsets, daemonsets or jobs"),
        ("name" = String, Path, description = "Workload name"), ListOptions),
    responses((status = 200, body = ObjectList, description = "A page of v1 Pods of all member clusters"), ReadErrorResponses))]
pub async fn list_workload_pods(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, namespace, kind, name)): ApiPath<(String, String, String, String)>,
    ApiQuery(options): ApiQuery<ListOptions>,
) -> Answer<ObjectList> {
    let req = ListWorkloadPodsRequest {
        instance,
        namespace,
        kind: workload_kind(&kind)?,
        name,
        options,
    };
    s.api.list_workload_pods(&auth.caller, req).await.map(Json)
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

/// List objects of any resource of a member cluster: cluster-scoped, or of every namespace.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}/resources/{group}/{version}/{resource}", tag = "members", operation_id = "ListMemberObjects",
    params(("instance" = String, Path, description = "Instance name"),
        ("cluster" = String, Path, description = "Member cluster name"),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ListOptions),
    responses((status = 200, body = ObjectList, description = "A page of the member's objects"), ReadErrorResponses))]
pub async fn list_member_cluster_objects(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(p): ApiPath<MemberPath>,
    ApiQuery(options): ApiQuery<ListOptions>,
) -> Answer<ObjectList> {
    list_objects(s, auth, p, options).await
}

/// Read one cluster-scoped object of a member cluster.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}/resources/{group}/{version}/{resource}/{name}", tag = "members", operation_id = "GetMemberObject",
    params(("instance" = String, Path, description = "Instance name"),
        ("cluster" = String, Path, description = "Member cluster name"),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ("name" = String, Path, description = "Object name")),
    responses((status = 200, body = Object, description = "The member's object"), ReadErrorResponses))]
pub async fn get_member_cluster_object(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(p): ApiPath<MemberPath>,
) -> Answer<Object> {
    get_object(s, auth, p).await
}

/// List objects of a namespaced resource of a member cluster in one namespace.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}/namespaces/{namespace}/resources/{group}/{version}/{resource}", tag = "members", operation_id = "ListMemberNamespacedObjects",
    params(("instance" = String, Path, description = "Instance name"),
        ("cluster" = String, Path, description = "Member cluster name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ListOptions),
    responses((status = 200, body = ObjectList, description = "A page of the member's objects"), ReadErrorResponses))]
pub async fn list_member_namespaced_objects(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(p): ApiPath<MemberPath>,
    ApiQuery(options): ApiQuery<ListOptions>,
) -> Answer<ObjectList> {
    list_objects(s, auth, p, options).await
}

/// Read one namespaced object of a member cluster.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}", tag = "members", operation_id = "GetMemberNamespacedObject",
    params(("instance" = String, Path, description = "Instance name"),
        ("cluster" = String, Path, description = "Member cluster name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ("name" = String, Path, description = "Object name")),
    responses((status = 200, body = Object, description = "The member's object"), ReadErrorResponses))]
pub async fn get_member_namespaced_object(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(p): ApiPath<MemberPath>,
) -> Answer<Object> {
    get_object(s, auth, p).await
}

/// Query of `:promote`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PromoteQuery {
    /// Create nothing; answer what would be created.
    pub dry_run: Option<bool>,
}

/// Promote a workload of a member cluster into the instance: copies it and the ConfigMaps and Secrets it refers to, and creates a PropagationPolicy keeping them on that cluster (all or nothing).
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}/namespaces/{namespace}/{kind}/{name}:promote", tag = "members", operation_id = "PromoteWorkload",
    params(("instance" = String, Path, description = "Instance name"),
        ("cluster" = String, Path, description = "Member cluster the workload runs in"),
        ("namespace" = String, Path, description = "Namespace"),
        ("kind" = WorkloadKind, Path, description = "Workload kind"),
        ("name" = String, Path, description = "Workload name"), PromoteQuery),
    responses((status = 200, body = PromoteWorkloadResponse, description = "What was created (or would be, in a dry run)"), ErrorResponses))]
#[allow(dead_code)]
async fn promote_workload() {}

/// Serves `{name}:promote`.
async fn promote_verb(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, cluster, namespace, kind, segment)): ApiPath<(
        String,
        String,
        String,
        String,
        String,
    )>,
    ApiQuery(query): ApiQuery<PromoteQuery>,
) -> Answer<PromoteWorkloadResponse> {
    let Some((name, "promote")) = segment.rsplit_once(':') else {
        return Err(ApiError::not_found(format!(
            "POST on a member's workload needs the verb: {segment}:promote"
        )));
    };
    let req = PromoteWorkloadRequest {
        instance,
        cluster,
        namespace,
        kind: workload_kind(&kind)?,
        name: name.to_owned(),
        dry_run: query.dry_run.unwrap_or(false),
    };
    s.api.promote_workload(&auth.caller, req).await.map(Json)
}

/// Adds the `:promote` route to `router`, documented as `{name}:promote`.
pub(super) fn add_promote(
    mut router: OpenApiRouter<RestState>,
    routes: &mut Vec<RestRoute>,
) -> OpenApiRouter<RestState> {
    router = router.route(PROMOTE_ROUTE, post(promote_verb));
    let (path, method, operation) = verb_doc::<__path_promote_workload>();
    router
        .get_openapi_mut()
        .paths
        .add_path_operation(&path, vec![method], operation);
    routes.push(RestRoute {
        method: "POST".into(),
        path: PROMOTE_ROUTE.into(),
        documented_as: vec![path],
    });
    router
}
