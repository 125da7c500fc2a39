//! REST handlers of the instances feature: `instances[/{instance}]`, `…/kubeconfig` and
//! `…:adopt`.

use axum::Json;
use axum::extract::State;
use http::HeaderMap;

use super::extract::{ApiJson, ApiPath, ApiQuery, Authenticated, OptionalJson};
use super::handler::{Answer, ErrorResponses, ReadErrorResponses, RestState, Written, written};
use crate::api::fields::WriteOptions;
use crate::api::instances::adopt::{AdoptInstanceOptions, AdoptInstanceRequest};
use crate::api::{
    CreateInstanceRequest, CreateKubeconfigRequest, DeleteInstanceRequest, GetInstanceRequest,
    KubeObject, KubeconfigOptions, KubeconfigResponse, ListInstancesRequest, ListOptions, Object,
    ObjectList, UpdateInstanceRequest,
};
use crate::transport::{ServedOverTls, request_base_url};

/// Adopt a Karmada from its kubeconfig: the kubeconfig is stored in the host Secret
/// `{secretNamespace}/{instance}-kubeconfig` (labelled `kairship.io/instance`, owned by the
/// Instance, so deleting the Instance removes it) and the Adopt-mode Instance pointing at it
/// is created; both or neither. The kubeconfig is checked first (it parses; its current
/// context names a cluster with an http(s) server) and never returned. An existing Secret of
/// that name is `AlreadyExists`, never overwritten.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/adopt", tag = "instances",
    operation_id = "AdoptInstance", params(("instance" = String, Path, description = "Name of the Instance to create")),
    request_body(content = AdoptInstanceOptions, description = "The kubeconfig and the Instance's optional settings"),
    responses((status = 200, body = Object, description = "The created Instance (without the kubeconfig)"), ErrorResponses))]
pub async fn adopt_instance(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
    ApiJson(options): ApiJson<AdoptInstanceOptions>,
) -> Answer<Object> {
    let req = AdoptInstanceRequest { instance, options };
    s.api.adopt_instance(&auth.caller, req).await.map(Json)
}

// ---- instances --------------------------------------------------------------------------

/// List instances the caller may read.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances", tag = "instances",
    operation_id = "ListInstances", params(ListOptions),
    responses((status = 200, body = ObjectList, description = "A page of Instances"), ReadErrorResponses))]
pub async fn list_instances(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiQuery(options): ApiQuery<ListOptions>,
) -> Answer<ObjectList> {
    let req = ListInstancesRequest { options };
    s.api.list_instances(&auth.caller, req).await.map(Json)
}

/// Create an instance.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances", tag = "instances",
    operation_id = "CreateInstance", params(WriteOptions), request_body(content = KubeObject, description = "A kairship.io/v1alpha1 Instance"),
    responses((status = 200, body = Object, description = "The created Instance"), ErrorResponses))]
pub async fn create_instance(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiQuery(write): ApiQuery<WriteOptions>,
    ApiJson(body): ApiJson<Object>,
) -> Written {
    let req = CreateInstanceRequest { body };
    written(write, s.api.create_instance(&auth.caller, req)).await
}

/// Read an instance.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}", tag = "instances",
    operation_id = "GetInstance", params(("instance" = String, Path, description = "Instance name")),
    responses((status = 200, body = Object, description = "The Instance"), ReadErrorResponses))]
pub async fn get_instance(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
) -> Answer<Object> {
    let req = GetInstanceRequest { instance };
    s.api.get_instance(&auth.caller, req).await.map(Json)
}

/// Replace an instance.
#[utoipa::path(put, path = "/apis/kairship.io/v1alpha1/instances/{instance}", tag = "instances",
    operation_id = "UpdateInstance", params(("instance" = String, Path, description = "Instance name"), WriteOptions),
    request_body(content = KubeObject, description = "The new Instance (include metadata.resourceVersion to guard against concurrent changes)"),
    responses((status = 200, body = Object, description = "The updated Instance"), ErrorResponses))]
pub async fn update_instance(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
    ApiQuery(write): ApiQuery<WriteOptions>,
    ApiJson(body): ApiJson<Object>,
) -> Written {
    let req = UpdateInstanceRequest { instance, body };
    written(write, s.api.update_instance(&auth.caller, req)).await
}

/// Query parameters of an instance's deletion.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeleteInstanceOptions {
    /// Delete even while member clusters are joined or cannot be counted (the instance cannot
    /// be reached): sets the `kairship.io/force-delete` annotation first.
    #[serde(default)]
    pub force: Option<bool>,
}

/// Delete an instance (refused while member clusters are joined, or cannot be counted because
/// the instance cannot be reached, unless `force=true`).
#[utoipa::path(delete, path = "/apis/kairship.io/v1alpha1/instances/{instance}", tag = "instances",
    operation_id = "DeleteInstance", params(("instance" = String, Path, description = "Instance name"), DeleteInstanceOptions),
    responses((status = 200, body = Object, description = "The Instance being deleted, or a Status"), ErrorResponses))]
pub async fn delete_instance(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
    ApiQuery(options): ApiQuery<DeleteInstanceOptions>,
) -> Answer<Object> {
    let req = DeleteInstanceRequest {
        instance,
        force: options.force.unwrap_or(false),
    };
    s.api.delete_instance(&auth.caller, req).await.map(Json)
}

/// A kubeconfig that reaches the instance through the native proxy with the caller's token.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/kubeconfig", tag = "instances",
    operation_id = "CreateKubeconfig", params(("instance" = String, Path, description = "Instance name")),
    request_body(content = Option<KubeconfigOptions>, description = "Optional: the base URL clients reach this server at"),
    responses((status = 200, body = KubeconfigResponse, description = "The kubeconfig"), ErrorResponses))]
pub async fn create_kubeconfig(
    State(s): State<RestState>,
    auth: Authenticated,
    headers: HeaderMap,
    uri: http::Uri,
    tls: Option<axum::Extension<ServedOverTls>>,
    ApiPath(instance): ApiPath<String>,
    OptionalJson(options): OptionalJson<KubeconfigOptions>,
) -> Answer<KubeconfigResponse> {
    let tls = tls.is_some_and(|axum::Extension(t)| t.0);
    let req = CreateKubeconfigRequest {
        instance,
        server: options.server,
        request_server: request_base_url(&headers, &uri, tls),
    };
    s.api
        .create_kubeconfig(&auth.caller, &auth.token, req)
        .await
        .map(Json)
}
