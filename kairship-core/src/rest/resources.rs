//! REST handlers of the resources feature's typed kinds:
//! `…/instances/{instance}[/namespaces/{namespace}]/{kind}[/{name}]`, and of the resources an
//! instance serves, `…/instances/{instance}/apiresources` (the generic
//! `…/resources/{group}/{version}/{resource}` calls and events are in [`super::objects`]).

use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;

use super::extract::{ApiJson, ApiPath, ApiQuery, Authenticated, PatchBody};
use super::handler::{
    Answer, ErrorResponses, ReadErrorResponses, RestState, Written, WrittenCookie, kind_operation,
    written,
};
use super::objects::PatchOptions;
use crate::api::fields::WriteOptions;
use crate::api::{
    ApiError, ApiResourceList, CORE_GROUP, CreateResourceRequest, DeleteResourceRequest,
    GetResourceRequest, KubeObject, ListApiResourcesRequest, ListOptions, ListResourcesRequest,
    Object, ObjectList, PatchObjectRequest, RenderedObjectList, ResourceKind,
    UpdateResourceRequest,
};

/// The kind named by a URL segment.
pub(super) fn parse_kind(plural: &str) -> Result<ResourceKind, ApiError> {
    ResourceKind::from_plural(plural).ok_or_else(|| {
        let served: Vec<&str> = ResourceKind::ALL.iter().map(|k| k.plural()).collect();
        ApiError::not_found(format!(
            "unknown resource kind {plural:?}; served: {}",
            served.join(", ")
        ))
    })
}

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
    /// Read-your-writes across replicas, when the path names a kind.
    written: Option<WrittenCookie>,
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
        let written = ResourceKind::from_plural(&path.kind).map(|kind| {
            let (group, version, _, plural) = kind.gvk_plural();
            let group = if group.is_empty() { CORE_GROUP } else { group };
            WrittenCookie::of(parts, &path.instance, group, version, plural)
        });
        Ok(KindCall {
            state: state.clone(),
            auth,
            path,
            written,
        })
    }
}

impl KindCall {
    /// See [`WrittenCookie::await_carried`].
    fn await_carried_write(&self) {
        if let Some(written) = &self.written {
            written.await_carried(self.state.api.as_ref());
        }
    }

    /// `call`'s answer, with the `kairship-written` cookie (see [`WrittenCookie::written`]).
    async fn written<F>(
        written_cookie: Option<WrittenCookie>,
        write: WriteOptions,
        call: F,
    ) -> Written
    where
        F: std::future::Future<Output = Result<Object, ApiError>>,
    {
        match written_cookie {
            Some(cookie) => cookie.written(write, call).await,
            None => written(write, call).await,
        }
    }

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

    async fn list(self, options: ListOptions) -> Answer<RenderedObjectList> {
        self.await_carried_write();
        let (instance, kind, namespace) = self.at()?;
        let req = ListResourcesRequest {
            instance,
            kind,
            namespace,
            options,
        };
        self.state
            .api
            .list_resources_rendered(&self.auth.caller, req)
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
        let call = self.state.api.create_resource(&self.auth.caller, req);
        Self::written(self.written, write, call).await
    }

    async fn get(self) -> Answer<Object> {
        self.await_carried_write();
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
        let call = self.state.api.update_resource(&self.auth.caller, req);
        Self::written(self.written, write, call).await
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
        let call = self.state.api.patch_object(&self.auth.caller, req);
        Self::written(self.written, write, call).await
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

// ---- the typed kinds: each operation for the instance-wide or cluster-scoped path and the namespaced one

kind_operation! {
    get collection
    /// List objects of one kind across all namespaces, or of a cluster-scoped kind.
    cluster list_in_instance "ListResources"
        "/apis/kairship.io/v1alpha1/instances/{instance}/{kind}"
        kind "Any kind" doc [responses((status = 200, body = ObjectList, description = "A page of objects"), ReadErrorResponses)],
    /// List objects of one kind in a namespace.
    namespaced list_namespaced "ListNamespacedResources"
        "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}"
        kind "A namespaced kind" doc [responses((status = 200, body = ObjectList, description = "A page of objects"), ReadErrorResponses)],
    query [ListOptions],
    fn (call: KindCall, ApiQuery(options): ApiQuery<ListOptions>) -> Answer<RenderedObjectList> {
        call.list(options).await
    }
}

kind_operation! {
    post collection
    /// Create a cluster-scoped object (ClusterPropagationPolicy, ClusterOverridePolicy).
    cluster create_cluster_scoped "CreateClusterResource"
        "/apis/kairship.io/v1alpha1/instances/{instance}/{kind}"
        kind "A cluster-scoped kind" doc [request_body(content = KubeObject, description = "The object, or {\"data\": \"<YAML or JSON>\"}"),
    responses((status = 200, body = Object, description = "The created object"), ErrorResponses)],
    /// Create an object in a namespace (policies may be sent as `{"data": "<YAML or JSON>"}`).
    namespaced create_namespaced "CreateNamespacedResource"
        "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}"
        kind "A namespaced kind" doc [request_body(content = KubeObject, description = "The object, or for policies {\"data\": \"<YAML or JSON>\"}"),
    responses((status = 200, body = Object, description = "The created object"), ErrorResponses)],
    query [WriteOptions],
    fn (call: KindCall, ApiQuery(write): ApiQuery<WriteOptions>, ApiJson(body): ApiJson<Object>) -> Written {
        call.create(write, body).await
    }
}

kind_operation! {
    get object
    /// Read a cluster-scoped object.
    cluster get_cluster_scoped "GetClusterResource"
        "/apis/kairship.io/v1alpha1/instances/{instance}/{kind}/{name}"
        kind "A cluster-scoped kind" doc [responses((status = 200, body = Object, description = "The object"), ReadErrorResponses)],
    /// Read an object in a namespace.
    namespaced get_namespaced "GetNamespacedResource"
        "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}/{name}"
        kind "A namespaced kind" doc [responses((status = 200, body = Object, description = "The object"), ReadErrorResponses)],
    query [],
    fn (call: KindCall) -> Answer<Object> {
        call.get().await
    }
}

kind_operation! {
    put object
    /// Replace a cluster-scoped object.
    cluster update_cluster_scoped "UpdateClusterResource"
        "/apis/kairship.io/v1alpha1/instances/{instance}/{kind}/{name}"
        kind "A cluster-scoped kind" doc [request_body(content = KubeObject, description = "The new object"),
    responses((status = 200, body = Object, description = "The updated object"), ErrorResponses)],
    /// Replace an object in a namespace.
    namespaced update_namespaced "UpdateNamespacedResource"
        "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}/{name}"
        kind "A namespaced kind" doc [request_body(content = KubeObject, description = "The new object (include metadata.resourceVersion to guard against concurrent changes)"),
    responses((status = 200, body = Object, description = "The updated object"), ErrorResponses)],
    query [WriteOptions],
    fn (call: KindCall, ApiQuery(write): ApiQuery<WriteOptions>, ApiJson(body): ApiJson<Object>) -> Written {
        call.update(write, body).await
    }
}

kind_operation! {
    patch object
    /// Patch a cluster-scoped object; the `Content-Type` says how (as the generic
    /// `resources/{group}/{version}/{resource}/{name}` PATCH of the kind).
    cluster patch_cluster_scoped "PatchClusterResource"
        "/apis/kairship.io/v1alpha1/instances/{instance}/{kind}/{name}"
        kind "A cluster-scoped kind" doc [request_body(description = "A JSON merge patch, a JSON patch (array of operations), or the intended object for server-side apply (YAML or JSON)",
        content((Object = "application/merge-patch+json"), (Vec<Object> = "application/json-patch+json"),
            (Object = "application/strategic-merge-patch+json"), (Object = "application/apply-patch+yaml"))),
    responses((status = 200, body = Object, description = "The patched object"), ErrorResponses)],
    /// Patch an object in a namespace; the `Content-Type` says how (as the generic
    /// `resources/{group}/{version}/{resource}/{name}` PATCH of the kind).
    namespaced patch_namespaced "PatchNamespacedResource"
        "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}/{name}"
        kind "A namespaced kind" doc [request_body(description = "A JSON merge patch, a JSON patch (array of operations), a strategic merge patch (built-in kinds), or the intended object for server-side apply (YAML or JSON)",
        content((Object = "application/merge-patch+json"), (Vec<Object> = "application/json-patch+json"),
            (Object = "application/strategic-merge-patch+json"), (Object = "application/apply-patch+yaml"))),
    responses((status = 200, body = Object, description = "The patched object"), ErrorResponses)],
    query [PatchOptions],
    fn (call: KindCall, ApiQuery(options): ApiQuery<PatchOptions>, patch: PatchBody) -> Written {
        call.patch(options, patch).await
    }
}

kind_operation! {
    delete object
    /// Delete a cluster-scoped object (a ClusterPropagationPolicy still in use is kept).
    cluster delete_cluster_scoped "DeleteClusterResource"
        "/apis/kairship.io/v1alpha1/instances/{instance}/{kind}/{name}"
        kind "A cluster-scoped kind" doc [responses((status = 200, body = Object, description = "The object being deleted, or a Status"), ErrorResponses)],
    /// Delete an object in a namespace (a PropagationPolicy still in use is kept).
    namespaced delete_namespaced "DeleteNamespacedResource"
        "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}/{name}"
        kind "A namespaced kind" doc [responses((status = 200, body = Object, description = "The object being deleted, or a Status"), ErrorResponses)],
    query [],
    fn (call: KindCall) -> Answer<Object> {
        call.delete().await
    }
}

/// List the resources the instance serves, from its discovery (as `kubectl api-resources`):
/// each resource of each group version with its kind, scope, verbs, short names, categories
/// and subresources, the core group (`core`) first, then the groups in the instance's order,
/// each group's preferred version first. Answers are at most a few seconds old, so a CRD
/// created in the instance is listed within seconds.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/apiresources", tag = "resources",
    operation_id = "ListApiResources",
    params(("instance" = String, Path, description = "Instance name")),
    responses((status = 200, body = ApiResourceList, description = "The resources the instance serves"),
        ReadErrorResponses))]
pub async fn list_api_resources(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
) -> Answer<ApiResourceList> {
    let req = ListApiResourcesRequest { instance };
    s.api.list_api_resources(&auth.caller, req).await.map(Json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Code;

    #[test]
    fn kinds_parse() {
        assert_eq!(parse_kind("configmaps").unwrap(), ResourceKind::Configmaps);
        let err = parse_kind("pods").unwrap_err();
        assert_eq!(err.code, Code::NotFound);
        assert!(err.message.contains("deployments"), "{}", err.message);
    }
}
