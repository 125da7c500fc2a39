//! REST handlers of the applications feature: `…/namespaces/{ns}/applications` and
//! `…/clusters/{c}/namespaces/{ns}/{kind}/{name}:promote`.

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;

use super::extract::{ApiJson, ApiPath, ApiQuery, Authenticated};
use super::handler::{Answer, ErrorResponses, RestRoute, RestState, verb_doc, workload_kind};
use crate::api::ApiError;
use crate::api::applications::{ApplicationResult, ApplicationSpec, CreateApplicationRequest};
use crate::api::{PromoteWorkloadRequest, PromoteWorkloadResponse, WorkloadKind};

/// The route of `:promote`, whose last segment carries the verb.
pub const PROMOTE_ROUTE: &str = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}/namespaces/{namespace}/{kind}/{name}";

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

/// Create a multicloud application in one call: the workload, optionally its Service, the
/// PropagationPolicy placing them and one OverridePolicy per cluster override, in that order.
/// All or nothing: when an object fails, the objects created before it are deleted and the
/// error names the object. With `dryRun: true` the instance validates every object
/// (`dryRun=All`) and nothing is created.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/applications",
    tag = "applications", operation_id = "CreateApplication",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace of every object")),
    request_body(content = ApplicationSpec, description = "The workload, Service, placement and per-cluster overrides"),
    responses((status = 200, body = ApplicationResult, description = "The objects created (or, in a dry run, that would be created), in creation order"), ErrorResponses))]
pub async fn create_application(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, namespace)): ApiPath<(String, String)>,
    ApiJson(application): ApiJson<ApplicationSpec>,
) -> Answer<ApplicationResult> {
    let req = CreateApplicationRequest {
        instance,
        namespace,
        application,
    };
    s.api.create_application(&auth.caller, req).await.map(Json)
}
