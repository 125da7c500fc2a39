//! REST handlers: each builds one request message from the path, query and body, and calls one
//! [`KairshipApi`] method.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use http::HeaderMap;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};

use super::extract::{ApiJson, ApiPath, ApiQuery, Authenticated, OptionalJson, PatchBody};
use super::objects::PatchOptions;
use crate::api::error::ApiError;
use crate::api::fields::{WriteOptions, with_field_validation};
use crate::api::kinds::ResourceKind;
use crate::api::members::rest::UnjoinOptions;
use crate::api::service::KairshipApi;
use crate::api::types::{
    CreateInstanceRequest, CreateKubeconfigRequest, CreateResourceRequest, DeleteInstanceRequest,
    DeleteResourceRequest, DeploymentAction, DeploymentActionRequest, GetClusterRequest,
    GetInstanceRequest, GetResourceRequest, GetWorkloadRequest, JoinClusterRequest, KubeObject,
    KubeconfigOptions, KubeconfigResponse, ListClustersRequest, ListInstancesRequest, ListOptions,
    ListResourcesRequest, ListWorkloadsRequest, Object, ObjectList, PatchObjectRequest,
    RemoveClusterRequest, UpdateClusterRequest, UpdateInstanceRequest, UpdateResourceRequest,
    Workload, WorkloadList,
};

/// What every REST handler shares.
#[derive(Clone)]
pub struct RestState {
    /// The service.
    pub api: Arc<dyn KairshipApi>,
}

impl std::fmt::Debug for RestState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestState").finish_non_exhaustive()
    }
}

pub(super) type Answer<T> = Result<Json<T>, ApiError>;

/// The answer of a write that carries an object: the object, and a `Warning` header per
/// dropped unknown field (`?fieldValidation=Warn`).
pub(super) type Written = Result<(HeaderMap, Json<Object>), ApiError>;

/// Most `Warning` headers one answer carries; more unknown fields are summed up in one more.
const MAX_WARNINGS: usize = 100;

/// Runs one write under the request's `fieldValidation` and answers its warnings as headers.
pub(super) async fn written<F>(options: WriteOptions, call: F) -> Written
where
    F: Future<Output = Result<Object, ApiError>>,
{
    let mode = options.field_validation.unwrap_or_default();
    let (result, warnings) = with_field_validation(mode, call).await;
    Ok((warning_headers(&warnings), Json(result?)))
}

/// `Warning: 299 - "<text>"` headers (RFC 7234, as kube-apiserver sends them), at most
/// `MAX_WARNINGS` and a summary of the rest.
pub fn warning_headers(warnings: &[String]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let mut texts: Vec<String> = warnings.iter().take(MAX_WARNINGS).cloned().collect();
    if warnings.len() > MAX_WARNINGS {
        texts.push(format!("{} more warnings", warnings.len() - MAX_WARNINGS));
    }
    for text in texts {
        // A quoted-string of visible ASCII: field names from the body may hold anything.
        let mut quoted = String::with_capacity(text.len() + 10);
        for c in text.chars() {
            match c {
                '"' | '\\' => {
                    quoted.push('\\');
                    quoted.push(c);
                }
                ' '..='~' => quoted.push(c),
                _ => quoted.push('?'),
            }
        }
        if let Ok(value) = http::HeaderValue::from_str(&format!("299 - \"{quoted}\"")) {
            headers.append(http::header::WARNING, value);
        }
    }
    headers
}

/// The error answers every operation may give, documented once.
pub struct ErrorResponses;

impl utoipa::IntoResponses for ErrorResponses {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        [
            ("400", "Bad request: malformed body or parameters, unknown fields, bad paging, oversized body, or a failed precondition"),
            ("401", "No valid bearer token"),
            ("403", "The caller may not do this on the instance"),
            ("404", "No such instance or object"),
            ("409", "The object already exists"),
            ("412", "A precondition (resourceVersion) failed"),
            ("500", "Internal error"),
            ("503", "The host cluster or the instance cannot be reached"),
        ]
        .into_iter()
        .map(|(status, description)| {
            let response = ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ApiError")))
                        .build(),
                )
                .build();
            (status.to_owned(), RefOr::T(response))
        })
        .collect()
    }
}

/// The error answers of reads: those of [`ErrorResponses`] but 409 and 412, which only
/// writes give.
pub struct ReadErrorResponses;

impl utoipa::IntoResponses for ReadErrorResponses {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut responses = ErrorResponses::responses();
        responses.retain(|status, _| status != "409" && status != "412");
        responses
    }
}

/// The kind named by a URL segment.
fn parse_kind(plural: &str) -> Result<ResourceKind, ApiError> {
    ResourceKind::from_plural(plural).ok_or_else(|| {
        let served: Vec<&str> = ResourceKind::ALL.iter().map(|k| k.plural()).collect();
        ApiError::not_found(format!(
            "unknown resource kind {plural:?}; served: {}",
            served.join(", ")
        ))
    })
}

/// `name` of `name:verb` and the deployment verb.
fn parse_action(segment: &str) -> Result<(String, DeploymentAction), ApiError> {
    let Some((name, verb)) = segment.rsplit_once(':') else {
        return Err(ApiError::not_found(format!(
            "POST on an object needs a verb: {segment}:pause, :resume or :restart"
        )));
    };
    let action = DeploymentAction::parse(verb).ok_or_else(|| {
        ApiError::not_found(format!(
            "unknown deployment verb {verb:?}; use pause, resume or restart"
        ))
    })?;
    Ok((name.to_owned(), action))
}

/// The base URL of this request (`scheme://host`), from `X-Forwarded-*` proxy headers, the
/// `Host` header, or (HTTP/2) the request's authority.
pub fn request_base_url(headers: &HeaderMap, uri: &http::Uri, tls: bool) -> Option<String> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(',').next().unwrap_or(v).trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let host = header("x-forwarded-host")
        .or_else(|| header("host"))
        .or_else(|| uri.authority().map(|a| a.as_str().to_owned()))?;
    let scheme = header("x-forwarded-proto")
        .unwrap_or_else(|| if tls { "https" } else { "http" }.to_owned());
    Some(format!("{scheme}://{host}"))
}

/// Whether the server speaks TLS (set by the server as a request extension).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServedOverTls(pub bool);

/// One call on objects of one kind: the caller, and where the path puts them
/// (`…/instances/{instance}[/namespaces/{namespace}]/{kind}[/{name}]`).
///
/// The kind is parsed when the call is made, after every other extractor has accepted the
/// request, so a bad body or query is reported before an unknown kind.
#[derive(Debug)]
pub struct KindCall {
    state: RestState,
    auth: Authenticated,
    path: KindPath,
}

/// The path parameters of a [`KindCall`], by name; `namespace` is absent on instance-wide and
/// cluster-scoped paths, `name` on collection paths.
#[derive(Debug, serde::Deserialize)]
struct KindPath {
    instance: String,
    #[serde(default)]
    namespace: Option<String>,
    kind: String,
    #[serde(default)]
    name: Option<String>,
}

impl FromRequestParts<RestState> for KindCall {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &RestState,
    ) -> Result<Self, Self::Rejection> {
        let auth = Authenticated::from_request_parts(parts, state).await?;
        let ApiPath(path) = ApiPath::<KindPath>::from_request_parts(parts, state).await?;
        Ok(KindCall {
            state: state.clone(),
            auth,
            path,
        })
    }
}

impl KindCall {
    /// The instance, the parsed kind and the namespace.
    fn at(&self) -> Result<(String, ResourceKind, Option<String>), ApiError> {
        let kind = parse_kind(&self.path.kind)?;
        Ok((
            self.path.instance.clone(),
            kind,
            self.path.namespace.clone(),
        ))
    }

    /// The object name; every route with a `{name}` segment hands one.
    fn name(&self) -> Result<String, ApiError> {
        self.path
            .name
            .clone()
            .ok_or_else(|| ApiError::invalid("the path names no object"))
    }

    async fn list(self, options: ListOptions) -> Answer<ObjectList> {
        let (instance, kind, namespace) = self.at()?;
        let req = ListResourcesRequest {
            instance,
            kind,
            namespace,
            options,
        };
        self.state
            .api
            .list_resources(&self.auth.caller, req)
            .await
            .map(Json)
    }

    async fn create(self, write: WriteOptions, body: Object) -> Written {
        let (instance, kind, namespace) = self.at()?;
        let req = CreateResourceRequest {
            instance,
            kind,
            namespace,
            body,
        };
        written(
            write,
            self.state.api.create_resource(&self.auth.caller, req),
        )
        .await
    }

    async fn get(self) -> Answer<Object> {
        let (instance, kind, namespace) = self.at()?;
        let req = GetResourceRequest {
            instance,
            kind,
            namespace,
            name: self.name()?,
        };
        self.state
            .api
            .get_resource(&self.auth.caller, req)
            .await
            .map(Json)
    }

    async fn update(self, write: WriteOptions, body: Object) -> Written {
        let (instance, kind, namespace) = self.at()?;
        let req = UpdateResourceRequest {
            instance,
            kind,
            namespace,
            name: self.name()?,
            body,
        };
        written(
            write,
            self.state.api.update_resource(&self.auth.caller, req),
        )
        .await
    }

    /// A typed PATCH is the generic one of the kind's resource: the same checks, patch types
    /// and answers.
    async fn patch(
        self,
        options: PatchOptions,
        PatchBody(patch_type, patch): PatchBody,
    ) -> Written {
        let (instance, kind, namespace) = self.at()?;
        let (group, version, _, plural) = kind.gvk_plural();
        let req = PatchObjectRequest {
            instance,
            group: if group.is_empty() { "core" } else { group }.to_owned(),
            version: version.to_owned(),
            resource: plural.to_owned(),
            namespace,
            name: self.name()?,
            patch_type,
            patch,
            field_manager: options.field_manager,
            force: options.force,
        };
        let write = WriteOptions {
            field_validation: options.field_validation,
        };
        written(write, self.state.api.patch_object(&self.auth.caller, req)).await
    }

    async fn delete(self) -> Answer<Object> {
        let (instance, kind, namespace) = self.at()?;
        let req = DeleteResourceRequest {
            instance,
            kind,
            namespace,
            name: self.name()?,
        };
        self.state
            .api
            .delete_resource(&self.auth.caller, req)
            .await
            .map(Json)
    }
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

/// Join a member cluster.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters", tag = "clusters",
    operation_id = "JoinCluster", params(("instance" = String, Path, description = "Instance name"), WriteOptions),
    request_body(content = KubeObject, description = "A cluster.karmada.io/v1alpha1 Cluster"),
    responses((status = 200, body = Object, description = "The created Cluster"), ErrorResponses))]
pub async fn join_cluster(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
    ApiQuery(write): ApiQuery<WriteOptions>,
    ApiJson(body): ApiJson<Object>,
) -> Written {
    let req = JoinClusterRequest { instance, body };
    written(write, s.api.join_cluster(&auth.caller, req)).await
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

// ---- namespaced resources -----------------------------------------------------------------

/// List objects of one kind in a namespace.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}",
    tag = "resources", operation_id = "ListNamespacedResources",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("kind" = ResourceKind, Path, description = "A namespaced kind"), ListOptions),
    responses((status = 200, body = ObjectList, description = "A page of objects"), ReadErrorResponses))]
pub async fn list_namespaced(
    call: KindCall,
    ApiQuery(options): ApiQuery<ListOptions>,
) -> Answer<ObjectList> {
    call.list(options).await
}

/// Create an object in a namespace (policies may be sent as `{"data": "<YAML or JSON>"}`).
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}",
    tag = "resources", operation_id = "CreateNamespacedResource",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("kind" = ResourceKind, Path, description = "A namespaced kind"), WriteOptions),
    request_body(content = KubeObject, description = "The object, or for policies {\"data\": \"<YAML or JSON>\"}"),
    responses((status = 200, body = Object, description = "The created object"), ErrorResponses))]
pub async fn create_namespaced(
    call: KindCall,
    ApiQuery(write): ApiQuery<WriteOptions>,
    ApiJson(body): ApiJson<Object>,
) -> Written {
    call.create(write, body).await
}

/// Read an object in a namespace.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}/{name}",
    tag = "resources", operation_id = "GetNamespacedResource",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("kind" = ResourceKind, Path, description = "A namespaced kind"),
        ("name" = String, Path, description = "Object name")),
    responses((status = 200, body = Object, description = "The object"), ReadErrorResponses))]
pub async fn get_namespaced(call: KindCall) -> Answer<Object> {
    call.get().await
}

/// Replace an object in a namespace.
#[utoipa::path(put, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}/{name}",
    tag = "resources", operation_id = "UpdateNamespacedResource",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("kind" = ResourceKind, Path, description = "A namespaced kind"),
        ("name" = String, Path, description = "Object name"), WriteOptions),
    request_body(content = KubeObject, description = "The new object (include metadata.resourceVersion to guard against concurrent changes)"),
    responses((status = 200, body = Object, description = "The updated object"), ErrorResponses))]
pub async fn update_namespaced(
    call: KindCall,
    ApiQuery(write): ApiQuery<WriteOptions>,
    ApiJson(body): ApiJson<Object>,
) -> Written {
    call.update(write, body).await
}

/// Patch an object in a namespace; the `Content-Type` says how (as the generic
/// `resources/{group}/{version}/{resource}/{name}` PATCH of the kind).
#[utoipa::path(patch, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}/{name}",
    tag = "resources", operation_id = "PatchNamespacedResource",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("kind" = ResourceKind, Path, description = "A namespaced kind"),
        ("name" = String, Path, description = "Object name"), PatchOptions),
    request_body(description = "A JSON merge patch, a JSON patch (array of operations), a strategic merge patch (built-in kinds), or the intended object for server-side apply (YAML or JSON)",
        content((Object = "application/merge-patch+json"), (Vec<Object> = "application/json-patch+json"),
            (Object = "application/strategic-merge-patch+json"), (Object = "application/apply-patch+yaml"))),
    responses((status = 200, body = Object, description = "The patched object"), ErrorResponses))]
pub async fn patch_namespaced(
    call: KindCall,
    ApiQuery(options): ApiQuery<PatchOptions>,
    patch: PatchBody,
) -> Written {
    call.patch(options, patch).await
}

/// Delete an object in a namespace (a PropagationPolicy still in use is kept).
#[utoipa::path(delete, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}/{name}",
    tag = "resources", operation_id = "DeleteNamespacedResource",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("kind" = ResourceKind, Path, description = "A namespaced kind"),
        ("name" = String, Path, description = "Object name")),
    responses((status = 200, body = Object, description = "The object being deleted, or a Status"), ErrorResponses))]
pub async fn delete_namespaced(call: KindCall) -> Answer<Object> {
    call.delete().await
}

/// Runs `action` on the Deployment the path `(instance, namespace, name)` names.
async fn deployment_action(
    s: &RestState,
    auth: &Authenticated,
    (instance, namespace, name): (String, String, String),
    action: DeploymentAction,
) -> Answer<Object> {
    let req = DeploymentActionRequest {
        instance,
        namespace,
        name,
        action,
    };
    s.api.deployment_action(&auth.caller, req).await.map(Json)
}

/// Pause a Deployment (`spec.paused = true`).
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/deployments/{name}:pause",
    tag = "resources", operation_id = "PauseDeployment",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("name" = String, Path, description = "Deployment name")),
    responses((status = 200, body = Object, description = "The patched Deployment"), ErrorResponses))]
pub async fn pause_deployment(
    s: &RestState,
    auth: &Authenticated,
    path: (String, String, String),
) -> Answer<Object> {
    deployment_action(s, auth, path, DeploymentAction::Pause).await
}

/// Resume a paused Deployment (`spec.paused = false`).
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/deployments/{name}:resume",
    tag = "resources", operation_id = "ResumeDeployment",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("name" = String, Path, description = "Deployment name")),
    responses((status = 200, body = Object, description = "The patched Deployment"), ErrorResponses))]
pub async fn resume_deployment(
    s: &RestState,
    auth: &Authenticated,
    path: (String, String, String),
) -> Answer<Object> {
    deployment_action(s, auth, path, DeploymentAction::Resume).await
}

/// Restart a Deployment's pods (the `kubectl.kubernetes.io/restartedAt` template annotation,
/// as `kubectl rollout restart`).
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/deployments/{name}:restart",
    tag = "resources", operation_id = "RestartDeployment",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("name" = String, Path, description = "Deployment name")),
    responses((status = 200, body = Object, description = "The patched Deployment"), ErrorResponses))]
pub async fn restart_deployment(
    s: &RestState,
    auth: &Authenticated,
    path: (String, String, String),
) -> Answer<Object> {
    deployment_action(s, auth, path, DeploymentAction::Restart).await
}

/// `POST …/namespaces/{namespace}/{kind}/{name}:verb`: the router cannot match a parameter
/// followed by a suffix, so the verb arrives inside the last segment and is dispatched here to
/// the documented operations above.
pub async fn object_verb(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, namespace, kind, segment)): ApiPath<(String, String, String, String)>,
) -> Answer<Object> {
    let kind = parse_kind(&kind)?;
    if matches!(kind, ResourceKind::Jobs | ResourceKind::Cronjobs) {
        let path = (instance, namespace);
        return super::applications::job_verb(&s, &auth, path, kind, &segment).await;
    }
    let (name, action) = parse_action(&segment)?;
    if kind != ResourceKind::Deployments {
        return Err(ApiError::not_found(format!(
            "{kind} have no verbs; :{} is a deployment verb",
            action.as_str()
        )));
    }
    let path = (instance, namespace, name);
    match action {
        DeploymentAction::Pause => pause_deployment(&s, &auth, path).await,
        DeploymentAction::Resume => resume_deployment(&s, &auth, path).await,
        DeploymentAction::Restart => restart_deployment(&s, &auth, path).await,
    }
}

// ---- workloads ----------------------------------------------------------------------------

/// List the Deployments of a namespace with their per-cluster status.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/workloads",
    tag = "workloads", operation_id = "ListWorkloads",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"), ListOptions),
    responses((status = 200, body = WorkloadList, description = "A page of workloads"), ReadErrorResponses))]
pub async fn list_workloads(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, namespace)): ApiPath<(String, String)>,
    ApiQuery(options): ApiQuery<ListOptions>,
) -> Answer<WorkloadList> {
    let req = ListWorkloadsRequest {
        instance,
        namespace,
        options,
    };
    s.api.list_workloads(&auth.caller, req).await.map(Json)
}

/// One Deployment with its per-cluster status.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/workloads/{name}",
    tag = "workloads", operation_id = "GetWorkload",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("name" = String, Path, description = "Deployment name")),
    responses((status = 200, body = Workload, description = "The workload"), ReadErrorResponses))]
pub async fn get_workload(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, namespace, name)): ApiPath<(String, String, String)>,
) -> Answer<Workload> {
    let req = GetWorkloadRequest {
        instance,
        namespace,
        name,
    };
    s.api.get_workload(&auth.caller, req).await.map(Json)
}

// ---- instance-wide and cluster-scoped resources -------------------------------------------

/// List objects of one kind across all namespaces, or of a cluster-scoped kind.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/{kind}",
    tag = "resources", operation_id = "ListResources",
    params(("instance" = String, Path, description = "Instance name"),
        ("kind" = ResourceKind, Path, description = "Any kind"), ListOptions),
    responses((status = 200, body = ObjectList, description = "A page of objects"), ReadErrorResponses))]
pub async fn list_in_instance(
    call: KindCall,
    ApiQuery(options): ApiQuery<ListOptions>,
) -> Answer<ObjectList> {
    call.list(options).await
}

/// Create a cluster-scoped object (ClusterPropagationPolicy, ClusterOverridePolicy).
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/{kind}",
    tag = "resources", operation_id = "CreateClusterResource",
    params(("instance" = String, Path, description = "Instance name"),
        ("kind" = ResourceKind, Path, description = "A cluster-scoped kind"), WriteOptions),
    request_body(content = KubeObject, description = "The object, or {\"data\": \"<YAML or JSON>\"}"),
    responses((status = 200, body = Object, description = "The created object"), ErrorResponses))]
pub async fn create_cluster_scoped(
    call: KindCall,
    ApiQuery(write): ApiQuery<WriteOptions>,
    ApiJson(body): ApiJson<Object>,
) -> Written {
    call.create(write, body).await
}

/// Read a cluster-scoped object.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/{kind}/{name}",
    tag = "resources", operation_id = "GetClusterResource",
    params(("instance" = String, Path, description = "Instance name"),
        ("kind" = ResourceKind, Path, description = "A cluster-scoped kind"),
        ("name" = String, Path, description = "Object name")),
    responses((status = 200, body = Object, description = "The object"), ReadErrorResponses))]
pub async fn get_cluster_scoped(call: KindCall) -> Answer<Object> {
    call.get().await
}

/// Replace a cluster-scoped object.
#[utoipa::path(put, path = "/apis/kairship.io/v1alpha1/instances/{instance}/{kind}/{name}",
    tag = "resources", operation_id = "UpdateClusterResource",
    params(("instance" = String, Path, description = "Instance name"),
        ("kind" = ResourceKind, Path, description = "A cluster-scoped kind"),
        ("name" = String, Path, description = "Object name"), WriteOptions),
    request_body(content = KubeObject, description = "The new object"),
    responses((status = 200, body = Object, description = "The updated object"), ErrorResponses))]
pub async fn update_cluster_scoped(
    call: KindCall,
    ApiQuery(write): ApiQuery<WriteOptions>,
    ApiJson(body): ApiJson<Object>,
) -> Written {
    call.update(write, body).await
}

/// Patch a cluster-scoped object; the `Content-Type` says how (as the generic
/// `resources/{group}/{version}/{resource}/{name}` PATCH of the kind).
#[utoipa::path(patch, path = "/apis/kairship.io/v1alpha1/instances/{instance}/{kind}/{name}",
    tag = "resources", operation_id = "PatchClusterResource",
    params(("instance" = String, Path, description = "Instance name"),
        ("kind" = ResourceKind, Path, description = "A cluster-scoped kind"),
        ("name" = String, Path, description = "Object name"), PatchOptions),
    request_body(description = "A JSON merge patch, a JSON patch (array of operations), or the intended object for server-side apply (YAML or JSON)",
        content((Object = "application/merge-patch+json"), (Vec<Object> = "application/json-patch+json"),
            (Object = "application/strategic-merge-patch+json"), (Object = "application/apply-patch+yaml"))),
    responses((status = 200, body = Object, description = "The patched object"), ErrorResponses))]
pub async fn patch_cluster_scoped(
    call: KindCall,
    ApiQuery(options): ApiQuery<PatchOptions>,
    patch: PatchBody,
) -> Written {
    call.patch(options, patch).await
}

/// Delete a cluster-scoped object (a ClusterPropagationPolicy still in use is kept).
#[utoipa::path(delete, path = "/apis/kairship.io/v1alpha1/instances/{instance}/{kind}/{name}",
    tag = "resources", operation_id = "DeleteClusterResource",
    params(("instance" = String, Path, description = "Instance name"),
        ("kind" = ResourceKind, Path, description = "A cluster-scoped kind"),
        ("name" = String, Path, description = "Object name")),
    responses((status = 200, body = Object, description = "The object being deleted, or a Status"), ErrorResponses))]
pub async fn delete_cluster_scoped(call: KindCall) -> Answer<Object> {
    call.delete().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Code;

    #[test]
    fn warning_headers_table() {
        let values = |warnings: &[String]| -> Vec<String> {
            warning_headers(warnings)
                .get_all(http::header::WARNING)
                .iter()
                .map(|v| v.to_str().unwrap().to_owned())
                .collect()
        };
        assert!(values(&[]).is_empty());
        assert_eq!(
            values(&[
                r#"unknown field "spec.bogus""#.to_owned(),
                "a\\b é\n".to_owned()
            ]),
            [
                r#"299 - "unknown field \"spec.bogus\"""#,
                r#"299 - "a\\b ??""#
            ]
        );
        let many: Vec<String> = (0..MAX_WARNINGS + 5).map(|i| format!("w{i}")).collect();
        let got = values(&many);
        assert_eq!(got.len(), MAX_WARNINGS + 1);
        assert_eq!(got[MAX_WARNINGS], r#"299 - "5 more warnings""#);
    }

    #[test]
    fn actions_and_kinds_parse() {
        assert_eq!(
            parse_action("web:restart").unwrap(),
            ("web".to_owned(), DeploymentAction::Restart)
        );
        assert_eq!(parse_action("web").unwrap_err().code, Code::NotFound);
        assert_eq!(parse_action("web:scale").unwrap_err().code, Code::NotFound);
        assert_eq!(parse_kind("configmaps").unwrap(), ResourceKind::Configmaps);
        let err = parse_kind("pods").unwrap_err();
        assert_eq!(err.code, Code::NotFound);
        assert!(err.message.contains("deployments"), "{}", err.message);
    }

    #[test]
    fn base_url_from_headers() {
        let headers = |pairs: &[(&str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(
                    http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    v.parse().unwrap(),
                );
            }
            h
        };
        for (pairs, tls, want) in [
            (
                vec![("host", "k.example.com:8443")],
                true,
                Some("https://k.example.com:8443"),
            ),
            (
                vec![("host", "127.0.0.1:1")],
                false,
                Some("http://127.0.0.1:1"),
            ),
            (
                vec![
                    ("host", "internal:80"),
                    ("x-forwarded-host", "api.example.com"),
                    ("x-forwarded-proto", "https"),
                ],
                false,
                Some("https://api.example.com"),
            ),
            (vec![], false, None),
        ] {
            let none = http::Uri::from_static("/x");
            assert_eq!(
                request_base_url(&headers(&pairs), &none, tls).as_deref(),
                want,
                "{pairs:?}"
            );
        }
        let h2 = http::Uri::from_static("https://api.example.com:8443/x");
        assert_eq!(
            request_base_url(&HeaderMap::new(), &h2, true).as_deref(),
            Some("https://api.example.com:8443")
        );
    }
}
