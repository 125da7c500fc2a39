//! REST handlers of the generic resource API:
//! `…/instances/{instance}[/namespaces/{namespace}]/resources/{group}/{version}/{resource}[/{name}]`,
//! where `group` is `core` for the core group.

use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use serde::Deserialize;
use utoipa::IntoParams;

use super::extract::{ApiJson, ApiPath, ApiQuery, Authenticated, PatchBody};
use super::handler::{
    Answer, ErrorResponses, ReadErrorResponses, RestState, Written, WrittenCookie, object_operation,
};
use crate::api::ApiError;
use crate::api::fields::{FieldValidation, WriteOptions};
use crate::api::{
    CreateObjectRequest, DeleteObjectRequest, GetObjectRequest, ListEventsRequest,
    ListObjectsRequest, ListOptions, Object, ObjectList, PatchObjectRequest, RenderedObjectList,
    SortBy, SortDir, UpdateObjectRequest,
};

/// Query parameters of a PATCH.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PatchOptions {
    /// Who manages the fields; apply patches default to `kairship`.
    #[param(min_length = 1, max_length = 128)]
    pub field_manager: Option<String>,
    /// Apply patches only: take over fields other managers own.
    pub force: Option<bool>,
    /// Unknown fields of an apply patch: `Strict` (default), `Warn` or `Ignore`.
    #[param(inline)]
    pub field_validation: Option<FieldValidation>,
}

/// The path parameters of a generic call.
#[derive(Debug, Deserialize)]
struct ObjectsPath {
    instance: String,
    #[serde(default)]
    namespace: Option<String>,
    group: String,
    version: String,
    resource: String,
    #[serde(default)]
    name: Option<String>,
}

/// One generic call: the caller and where the path puts the objects.
#[derive(Debug)]
pub struct ObjectsCall {
    state: RestState,
    auth: Authenticated,
    path: ObjectsPath,
    written: WrittenCookie,
}

impl FromRequestParts<RestState> for ObjectsCall {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &RestState,
    ) -> Result<Self, Self::Rejection> {
        let auth = Authenticated::from_request_parts(parts, state).await?;
        let ApiPath(path) = ApiPath::<ObjectsPath>::from_request_parts(parts, state).await?;
        let written = WrittenCookie::of(
            parts,
            &path.instance,
            &path.group,
            &path.version,
            &path.resource,
        );
        Ok(ObjectsCall {
            state: state.clone(),
            auth,
            path,
            written,
        })
    }
}

/// A request message of the generic API: the five path fields (`instance`, `namespace`,
/// `group`, `version`, `resource`) from `$path`, the others as given.
macro_rules! at_path {
    ($request:ident from $path:ident { $($field:tt)* }) => {
        $request {
            instance: $path.instance,
            namespace: $path.namespace,
            group: $path.group,
            version: $path.version,
            resource: $path.resource,
            $($field)*
        }
    };
}

impl ObjectsCall {
    fn name(&self) -> Result<String, ApiError> {
        self.path
            .name
            .clone()
            .ok_or_else(|| ApiError::invalid("the path names no object"))
    }

    async fn list(self, options: ListOptions) -> Answer<RenderedObjectList> {
        self.written.await_carried(self.state.api.as_ref());
        let p = self.path;
        let req = at_path!(ListObjectsRequest from p { options });
        self.state
            .api
            .list_objects_rendered(&self.auth.caller, req)
            .await
            .map(Json)
    }

    async fn get(self) -> Answer<Object> {
        self.written.await_carried(self.state.api.as_ref());
        let name = self.name()?;
        let p = self.path;
        let req = at_path!(GetObjectRequest from p { name });
        self.state
            .api
            .get_object(&self.auth.caller, req)
            .await
            .map(Json)
    }

    async fn create(self, write: WriteOptions, body: Object) -> Written {
        let p = self.path;
        let req = at_path!(CreateObjectRequest from p { body });
        let call = self.state.api.create_object(&self.auth.caller, req);
        self.written.written(write, call).await
    }

    async fn update(self, write: WriteOptions, body: Object) -> Written {
        let name = self.name()?;
        let p = self.path;
        let req = at_path!(UpdateObjectRequest from p { name, body });
        let call = self.state.api.update_object(&self.auth.caller, req);
        self.written.written(write, call).await
    }

    async fn patch(
        self,
        options: PatchOptions,
        PatchBody(patch_type, patch): PatchBody,
    ) -> Written {
        let name = self.name()?;
        let p = self.path;
        let req = at_path!(PatchObjectRequest from p { name, patch_type, patch, field_manager: options.field_manager, force: options.force });
        let write = WriteOptions {
            field_validation: options.field_validation,
        };
        let call = self.state.api.patch_object(&self.auth.caller, req);
        self.written.written(write, call).await
    }

    async fn events(self, query: EventQuery) -> Answer<ObjectList> {
        let p = self.path;
        let mut req = query.into_request(p.instance, p.namespace);
        req.group = Some(p.group);
        req.version = Some(p.version);
        req.resource = Some(p.resource);
        req.name = p.name;
        self.state
            .api
            .list_events(&self.auth.caller, req)
            .await
            .map(Json)
    }

    async fn delete(self) -> Answer<Object> {
        let name = self.name()?;
        let p = self.path;
        let req = at_path!(DeleteObjectRequest from p { name });
        self.state
            .api
            .delete_object(&self.auth.caller, req)
            .await
            .map(Json)
    }
}

object_operation! {
    get collection
    /// List objects of any resource: of a cluster-scoped resource, or of a namespaced one across all namespaces (found by the instance's discovery).
    cluster list_cluster_objects "ListObjects"
        "/apis/kairship.io/v1alpha1/instances/{instance}/resources/{group}/{version}/{resource}",
    /// List objects of any resource in a namespace (found by the instance's discovery).
    namespaced list_namespaced_objects "ListNamespacedObjects"
        "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}",
    query [ListOptions],
    doc [responses((status = 200, body = ObjectList, description = "A page of objects"), ReadErrorResponses)],
    fn (call: ObjectsCall, ApiQuery(options): ApiQuery<ListOptions>) -> Answer<RenderedObjectList> {
        call.list(options).await
    }
}

object_operation! {
    post collection
    /// Create an object of a cluster-scoped resource.
    cluster create_cluster_object "CreateClusterObject"
        "/apis/kairship.io/v1alpha1/instances/{instance}/resources/{group}/{version}/{resource}",
    /// Create an object in a namespace.
    namespaced create_namespaced_object "CreateNamespacedObject"
        "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}",
    query [WriteOptions],
    doc [request_body(content = Object, description = "The object, with the fields of its resource (apiVersion, kind and namespace are filled in when absent)"),
    responses((status = 200, body = Object, description = "The created object"), ErrorResponses)],
    fn (call: ObjectsCall, ApiQuery(write): ApiQuery<WriteOptions>, ApiJson(body): ApiJson<Object>) -> Written {
        call.create(write, body).await
    }
}

object_operation! {
    get object
    /// Read an object of a cluster-scoped resource.
    cluster get_cluster_object "GetClusterObject"
        "/apis/kairship.io/v1alpha1/instances/{instance}/resources/{group}/{version}/{resource}/{name}",
    /// Read an object in a namespace.
    namespaced get_namespaced_object "GetNamespacedObject"
        "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}",
    query [],
    doc [responses((status = 200, body = Object, description = "The object"), ReadErrorResponses)],
    fn (call: ObjectsCall) -> Answer<Object> {
        call.get().await
    }
}

object_operation! {
    put object
    /// Replace an object of a cluster-scoped resource.
    cluster update_cluster_object "UpdateClusterObject"
        "/apis/kairship.io/v1alpha1/instances/{instance}/resources/{group}/{version}/{resource}/{name}",
    /// Replace an object in a namespace.
    namespaced update_namespaced_object "UpdateNamespacedObject"
        "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}",
    query [WriteOptions],
    doc [request_body(content = Object, description = "The new object, with the fields of its resource (include metadata.resourceVersion to guard against concurrent changes)"),
    responses((status = 200, body = Object, description = "The updated object"), ErrorResponses)],
    fn (call: ObjectsCall, ApiQuery(write): ApiQuery<WriteOptions>, ApiJson(body): ApiJson<Object>) -> Written {
        call.update(write, body).await
    }
}

object_operation! {
    patch object
    /// Patch an object of a cluster-scoped resource; the `Content-Type` says how.
    cluster patch_cluster_object "PatchClusterObject"
        "/apis/kairship.io/v1alpha1/instances/{instance}/resources/{group}/{version}/{resource}/{name}",
    /// Patch an object in a namespace; the `Content-Type` says how.
    namespaced patch_namespaced_object "PatchNamespacedObject"
        "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}",
    query [PatchOptions],
    doc [request_body(description = "A JSON merge patch, a JSON patch (array of operations), a strategic merge patch, or the intended object for server-side apply (YAML or JSON)",
        content((Object = "application/merge-patch+json"), (Vec<Object> = "application/json-patch+json"),
            (Object = "application/strategic-merge-patch+json"), (Object = "application/apply-patch+yaml"))),
    responses((status = 200, body = Object, description = "The patched object"), ErrorResponses)],
    fn (call: ObjectsCall, ApiQuery(options): ApiQuery<PatchOptions>, patch: PatchBody) -> Written {
        call.patch(options, patch).await
    }
}

object_operation! {
    delete object
    /// Delete an object of a cluster-scoped resource (a PropagationPolicy still in use is kept).
    cluster delete_cluster_object "DeleteClusterObject"
        "/apis/kairship.io/v1alpha1/instances/{instance}/resources/{group}/{version}/{resource}/{name}",
    /// Delete an object in a namespace (a PropagationPolicy still in use is kept).
    namespaced delete_namespaced_object "DeleteNamespacedObject"
        "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}",
    query [],
    doc [responses((status = 200, body = Object, description = "The object being deleted, or a Status"), ErrorResponses)],
    fn (call: ObjectsCall) -> Answer<Object> {
        call.delete().await
    }
}

object_operation! {
    get object
    /// List the events of a cluster-scoped object.
    cluster list_cluster_object_events "ListClusterObjectEvents"
        "/apis/kairship.io/v1alpha1/instances/{instance}/resources/{group}/{version}/{resource}/{name}/events",
    /// List the events of an object in a namespace.
    namespaced list_namespaced_object_events "ListNamespacedObjectEvents"
        "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}/events",
    query [EventQuery],
    doc [responses((status = 200, body = ObjectList, description = "A page of v1 Events"), ReadErrorResponses)],
    fn (call: ObjectsCall, ApiQuery(query): ApiQuery<EventQuery>) -> Answer<ObjectList> {
        call.events(query).await
    }
}

/// Query parameters of an event list: the list options and the event filters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventQuery {
    /// 1-based page number (default 1).
    #[param(minimum = 1)]
    pub page: Option<u32>,
    /// Items per page, 1 to 10000 (default 10000).
    #[param(minimum = 1, maximum = 10000)]
    pub page_size: Option<u32>,
    /// Sort key: `name`, `creationTimestamp` or `namespace`.
    #[param(inline)]
    pub sort_by: Option<SortBy>,
    /// Sort direction.
    #[param(inline)]
    pub sort_dir: Option<SortDir>,
    /// Sort by this field (`.lastTimestamp`, `.count`) instead of `sortBy`.
    #[param(max_length = 512)]
    pub sort_field: Option<String>,
    /// Fuzzy name filter.
    pub name: Option<String>,
    /// Kubernetes label selector.
    pub label_selector: Option<String>,
    /// Kubernetes field selector (`involvedObject.name=web`).
    pub field_selector: Option<String>,
    /// Only these namespaces, comma-separated.
    #[param(pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(,[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")]
    pub namespaces: Option<String>,
    /// Only events of this type.
    #[serde(rename = "type")]
    #[param(rename = "type", pattern = "^(Normal|Warning)$")]
    pub type_: Option<String>,
    /// Only events with this reason.
    #[param(pattern = "^[A-Za-z0-9_.-]{1,128}$")]
    pub reason: Option<String>,
    /// Only events about objects of this kind.
    #[param(pattern = "^[A-Za-z0-9_.-]{1,128}$")]
    pub kind: Option<String>,
}

impl EventQuery {
    fn into_request(self, instance: String, namespace: Option<String>) -> ListEventsRequest {
        ListEventsRequest {
            instance,
            namespace,
            type_: self.type_,
            reason: self.reason,
            kind: self.kind,
            options: ListOptions {
                page: self.page,
                page_size: self.page_size,
                sort_by: self.sort_by,
                sort_dir: self.sort_dir,
                sort_field: self.sort_field,
                name: self.name,
                label_selector: self.label_selector,
                field_selector: self.field_selector,
                namespaces: self.namespaces,
            },
            ..ListEventsRequest::default()
        }
    }
}

/// List the events of an instance (every namespace).
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/events", tag = "resources",
    operation_id = "ListEvents", params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253), EventQuery),
    responses((status = 200, body = ObjectList, description = "A page of v1 Events"), ReadErrorResponses))]
pub async fn list_events(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
    ApiQuery(query): ApiQuery<EventQuery>,
) -> Answer<ObjectList> {
    let req = query.into_request(instance, None);
    s.api.list_events(&auth.caller, req).await.map(Json)
}

/// List the events of a namespace.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/events", tag = "resources",
    operation_id = "ListNamespacedEvents", params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253), ("namespace" = String, Path, description = "Namespace", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253), EventQuery),
    responses((status = 200, body = ObjectList, description = "A page of v1 Events"), ReadErrorResponses))]
pub async fn list_namespaced_events(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, namespace)): ApiPath<(String, String)>,
    ApiQuery(query): ApiQuery<EventQuery>,
) -> Answer<ObjectList> {
    let req = query.into_request(instance, Some(namespace));
    s.api.list_events(&auth.caller, req).await.map(Json)
}
