//! REST handlers of the generic resource API:
//! `…/instances/{instance}[/namespaces/{namespace}]/resources/{group}/{version}/{resource}[/{name}]`,
//! where `group` is `core` for the core group.

use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use serde::Deserialize;
use utoipa::IntoParams;

use super::extract::{ApiJson, ApiPath, ApiQuery, Authenticated, PatchBody};
use super::handler::{Answer, ErrorResponses, ReadErrorResponses, RestState, Written, written};
use crate::api::ApiError;
use crate::api::fields::{FieldValidation, WriteOptions};
use crate::api::{
    CreateObjectRequest, DeleteObjectRequest, GetObjectRequest, ListEventsRequest,
    ListObjectsRequest, ListOptions, Object, ObjectList, PatchObjectRequest, SortBy, SortDir,
    UpdateObjectRequest,
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
}

impl FromRequestParts<RestState> for ObjectsCall {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &RestState,
    ) -> Result<Self, Self::Rejection> {
        let auth = Authenticated::from_request_parts(parts, state).await?;
        let ApiPath(path) = ApiPath::<ObjectsPath>::from_request_parts(parts, state).await?;
        Ok(ObjectsCall {
            state: state.clone(),
            auth,
            path,
        })
    }
}

impl ObjectsCall {
    fn name(&self) -> Result<String, ApiError> {
        self.path
            .name
            .clone()
            .ok_or_else(|| ApiError::invalid("the path names no object"))
    }

    async fn list(self, options: ListOptions) -> Answer<ObjectList> {
        let p = self.path;
        let req = ListObjectsRequest {
            instance: p.instance,
            group: p.group,
            version: p.version,
            resource: p.resource,
            namespace: p.namespace,
            options,
        };
        self.state
            .api
            .list_objects(&self.auth.caller, req)
            .await
            .map(Json)
    }

    async fn get(self) -> Answer<Object> {
        let name = self.name()?;
        let p = self.path;
        let req = GetObjectRequest {
            instance: p.instance,
            group: p.group,
            version: p.version,
            resource: p.resource,
            namespace: p.namespace,
            name,
        };
        self.state
            .api
            .get_object(&self.auth.caller, req)
            .await
            .map(Json)
    }

    async fn create(self, write: WriteOptions, body: Object) -> Written {
        let p = self.path;
        let req = CreateObjectRequest {
            instance: p.instance,
            group: p.group,
            version: p.version,
            resource: p.resource,
            namespace: p.namespace,
            body,
        };
        written(write, self.state.api.create_object(&self.auth.caller, req)).await
    }

    async fn update(self, write: WriteOptions, body: Object) -> Written {
        let name = self.name()?;
        let p = self.path;
        let req = UpdateObjectRequest {
            instance: p.instance,
            group: p.group,
            version: p.version,
            resource: p.resource,
            namespace: p.namespace,
            name,
            body,
        };
        written(write, self.state.api.update_object(&self.auth.caller, req)).await
    }

    async fn patch(
        self,
        options: PatchOptions,
        PatchBody(patch_type, patch): PatchBody,
    ) -> Written {
        let name = self.name()?;
        let p = self.path;
        let req = PatchObjectRequest {
            instance: p.instance,
            group: p.group,
            version: p.version,
            resource: p.resource,
            namespace: p.namespace,
            name,
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
        let req = DeleteObjectRequest {
            instance: p.instance,
            group: p.group,
            version: p.version,
            resource: p.resource,
            namespace: p.namespace,
            name,
        };
        self.state
            .api
            .delete_object(&self.auth.caller, req)
            .await
            .map(Json)
    }
}

/// List objects of any resource: of a cluster-scoped resource, or of a namespaced one across all namespaces (found by the instance's discovery).
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/resources/{group}/{version}/{resource}", tag = "resources", operation_id = "ListObjects",
    params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ListOptions),
    responses((status = 200, body = ObjectList, description = "A page of objects"), ReadErrorResponses))]
pub async fn list_cluster_objects(
    call: ObjectsCall,
    ApiQuery(options): ApiQuery<ListOptions>,
) -> Answer<ObjectList> {
    call.list(options).await
}

/// Create an object of a cluster-scoped resource.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/resources/{group}/{version}/{resource}", tag = "resources", operation_id = "CreateClusterObject",
    params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        WriteOptions),
    request_body(content = Object, description = "The object, with the fields of its resource (apiVersion, kind and namespace are filled in when absent)"),
    responses((status = 200, body = Object, description = "The created object"), ErrorResponses))]
pub async fn create_cluster_object(
    call: ObjectsCall,
    ApiQuery(write): ApiQuery<WriteOptions>,
    ApiJson(body): ApiJson<Object>,
) -> Written {
    call.create(write, body).await
}

/// Read an object of a cluster-scoped resource.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/resources/{group}/{version}/{resource}/{name}", tag = "resources", operation_id = "GetClusterObject",
    params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ("name" = String, Path, description = "Object name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253)),
    responses((status = 200, body = Object, description = "The object"), ReadErrorResponses))]
pub async fn get_cluster_object(call: ObjectsCall) -> Answer<Object> {
    call.get().await
}

/// Replace an object of a cluster-scoped resource.
#[utoipa::path(put, path = "/apis/kairship.io/v1alpha1/instances/{instance}/resources/{group}/{version}/{resource}/{name}", tag = "resources", operation_id = "UpdateClusterObject",
    params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ("name" = String, Path, description = "Object name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        WriteOptions),
    request_body(content = Object, description = "The new object, with the fields of its resource (include metadata.resourceVersion to guard against concurrent changes)"),
    responses((status = 200, body = Object, description = "The updated object"), ErrorResponses))]
pub async fn update_cluster_object(
    call: ObjectsCall,
    ApiQuery(write): ApiQuery<WriteOptions>,
    ApiJson(body): ApiJson<Object>,
) -> Written {
    call.update(write, body).await
}

/// Patch an object of a cluster-scoped resource; the `Content-Type` says how.
#[utoipa::path(patch, path = "/apis/kairship.io/v1alpha1/instances/{instance}/resources/{group}/{version}/{resource}/{name}", tag = "resources", operation_id = "PatchClusterObject",
    params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ("name" = String, Path, description = "Object name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        PatchOptions),
    request_body(description = "A JSON merge patch, a JSON patch (array of operations), a strategic merge patch, or the intended object for server-side apply (YAML or JSON)",
        content((Object = "application/merge-patch+json"), (Vec<Object> = "application/json-patch+json"),
            (Object = "application/strategic-merge-patch+json"), (Object = "application/apply-patch+yaml"))),
    responses((status = 200, body = Object, description = "The patched object"), ErrorResponses))]
pub async fn patch_cluster_object(
    call: ObjectsCall,
    ApiQuery(options): ApiQuery<PatchOptions>,
    patch: PatchBody,
) -> Written {
    call.patch(options, patch).await
}

/// Delete an object of a cluster-scoped resource (a PropagationPolicy still in use is kept).
#[utoipa::path(delete, path = "/apis/kairship.io/v1alpha1/instances/{instance}/resources/{group}/{version}/{resource}/{name}", tag = "resources", operation_id = "DeleteClusterObject",
    params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ("name" = String, Path, description = "Object name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253)),
    responses((status = 200, body = Object, description = "The object being deleted, or a Status"), ErrorResponses))]
pub async fn delete_cluster_object(call: ObjectsCall) -> Answer<Object> {
    call.delete().await
}

/// List objects of any resource in a namespace (found by the instance's discovery).
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}", tag = "resources", operation_id = "ListNamespacedObjects",
    params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("namespace" = String, Path, description = "Namespace", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ListOptions),
    responses((status = 200, body = ObjectList, description = "A page of objects"), ReadErrorResponses))]
pub async fn list_namespaced_objects(
    call: ObjectsCall,
    ApiQuery(options): ApiQuery<ListOptions>,
) -> Answer<ObjectList> {
    call.list(options).await
}

/// Create an object in a namespace.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}", tag = "resources", operation_id = "CreateNamespacedObject",
    params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("namespace" = String, Path, description = "Namespace", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        WriteOptions),
    request_body(content = Object, description = "The object, with the fields of its resource (apiVersion, kind and namespace are filled in when absent)"),
    responses((status = 200, body = Object, description = "The created object"), ErrorResponses))]
pub async fn create_namespaced_object(
    call: ObjectsCall,
    ApiQuery(write): ApiQuery<WriteOptions>,
    ApiJson(body): ApiJson<Object>,
) -> Written {
    call.create(write, body).await
}

/// Read an object in a namespace.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}", tag = "resources", operation_id = "GetNamespacedObject",
    params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("namespace" = String, Path, description = "Namespace", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ("name" = String, Path, description = "Object name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253)),
    responses((status = 200, body = Object, description = "The object"), ReadErrorResponses))]
pub async fn get_namespaced_object(call: ObjectsCall) -> Answer<Object> {
    call.get().await
}

/// Replace an object in a namespace.
#[utoipa::path(put, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}", tag = "resources", operation_id = "UpdateNamespacedObject",
    params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("namespace" = String, Path, description = "Namespace", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ("name" = String, Path, description = "Object name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        WriteOptions),
    request_body(content = Object, description = "The new object, with the fields of its resource (include metadata.resourceVersion to guard against concurrent changes)"),
    responses((status = 200, body = Object, description = "The updated object"), ErrorResponses))]
pub async fn update_namespaced_object(
    call: ObjectsCall,
    ApiQuery(write): ApiQuery<WriteOptions>,
    ApiJson(body): ApiJson<Object>,
) -> Written {
    call.update(write, body).await
}

/// Patch an object in a namespace; the `Content-Type` says how.
#[utoipa::path(patch, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}", tag = "resources", operation_id = "PatchNamespacedObject",
    params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("namespace" = String, Path, description = "Namespace", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ("name" = String, Path, description = "Object name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        PatchOptions),
    request_body(description = "A JSON merge patch, a JSON patch (array of operations), a strategic merge patch, or the intended object for server-side apply (YAML or JSON)",
        content((Object = "application/merge-patch+json"), (Vec<Object> = "application/json-patch+json"),
            (Object = "application/strategic-merge-patch+json"), (Object = "application/apply-patch+yaml"))),
    responses((status = 200, body = Object, description = "The patched object"), ErrorResponses))]
pub async fn patch_namespaced_object(
    call: ObjectsCall,
    ApiQuery(options): ApiQuery<PatchOptions>,
    patch: PatchBody,
) -> Written {
    call.patch(options, patch).await
}

/// Delete an object in a namespace (a PropagationPolicy still in use is kept).
#[utoipa::path(delete, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}", tag = "resources", operation_id = "DeleteNamespacedObject",
    params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("namespace" = String, Path, description = "Namespace", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ("name" = String, Path, description = "Object name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253)),
    responses((status = 200, body = Object, description = "The object being deleted, or a Status"), ErrorResponses))]
pub async fn delete_namespaced_object(call: ObjectsCall) -> Answer<Object> {
    call.delete().await
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

/// List the events of a cluster-scoped object.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/resources/{group}/{version}/{resource}/{name}/events", tag = "resources",
    operation_id = "ListClusterObjectEvents", params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253), ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ("name" = String, Path, description = "Object name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253), EventQuery),
    responses((status = 200, body = ObjectList, description = "A page of v1 Events"), ReadErrorResponses))]
pub async fn list_cluster_object_events(
    call: ObjectsCall,
    ApiQuery(query): ApiQuery<EventQuery>,
) -> Answer<ObjectList> {
    call.events(query).await
}

/// List the events of an object in a namespace.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}/events", tag = "resources",
    operation_id = "ListNamespacedObjectEvents", params(("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253), ("namespace" = String, Path, description = "Namespace", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253), ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
        ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
        ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),
        ("name" = String, Path, description = "Object name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253), EventQuery),
    responses((status = 200, body = ObjectList, description = "A page of v1 Events"), ReadErrorResponses))]
pub async fn list_namespaced_object_events(
    call: ObjectsCall,
    ApiQuery(query): ApiQuery<EventQuery>,
) -> Answer<ObjectList> {
    call.events(query).await
}
