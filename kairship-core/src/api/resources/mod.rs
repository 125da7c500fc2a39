//! The resources feature: the typed kinds (`instances/{i}[/namespaces/{ns}]/{kind}`), any
//! resource an instance serves by group, version and resource (`…/resources/{g}/{v}/{r}`),
//! events, and which resources an instance serves (`…/apiresources`, from its discovery).
//! Reads go through the router's read backend, writes through its write backend.

pub mod discovery;
mod service;
pub mod types;

use async_trait::async_trait;

use crate::access::Caller;
use crate::api::{ApiError, Object, ObjectList};

pub use discovery::ServedResources;
pub use types::{
    ApiResourceInfo, ApiResourceList, CreateObjectRequest, CreateResourceRequest,
    DeleteObjectRequest, DeleteResourceRequest, GetObjectRequest, GetResourceRequest,
    ListApiResourcesRequest, ListEventsRequest, ListObjectsRequest, ListResourcesRequest,
    PatchObjectRequest, PatchType, RenderedItems, RenderedObjectList, UpdateObjectRequest,
    UpdateResourceRequest,
};

/// The resources part of [`KairshipApi`](crate::api::KairshipApi), which [`KairshipService`](crate::api::KairshipService)
/// implements.
#[async_trait]
pub trait ResourcesApi: Send + Sync {
    /// Objects of one kind.
    async fn list_resources(
        &self,
        caller: &Caller,
        req: ListResourcesRequest,
    ) -> Result<ObjectList, ApiError>;

    /// [`ResourcesApi::list_resources`] for an answer written out as JSON: the items may be
    /// the read backend's JSON, copied as they are (the same document once encoded). The
    /// default decodes them.
    async fn list_resources_rendered(
        &self,
        caller: &Caller,
        req: ListResourcesRequest,
    ) -> Result<RenderedObjectList, ApiError> {
        self.list_resources(caller, req).await.map(Into::into)
    }

    /// One object.
    async fn get_resource(
        &self,
        caller: &Caller,
        req: GetResourceRequest,
    ) -> Result<Object, ApiError>;

    /// Creates an object.
    async fn create_resource(
        &self,
        caller: &Caller,
        req: CreateResourceRequest,
    ) -> Result<Object, ApiError>;

    /// Replaces an object.
    async fn update_resource(
        &self,
        caller: &Caller,
        req: UpdateResourceRequest,
    ) -> Result<Object, ApiError>;

    /// Deletes an object; `FailedPrecondition` for a (Cluster)PropagationPolicy that a
    /// ResourceBinding still uses.
    async fn delete_resource(
        &self,
        caller: &Caller,
        req: DeleteResourceRequest,
    ) -> Result<Object, ApiError>;

    /// Objects of any resource the instance serves (found by the instance's discovery; an
    /// unknown group, version or resource is `NotFound`).
    async fn list_objects(
        &self,
        caller: &Caller,
        req: ListObjectsRequest,
    ) -> Result<ObjectList, ApiError>;

    /// [`ResourcesApi::list_objects`] for an answer written out as JSON (see
    /// [`ResourcesApi::list_resources_rendered`]).
    async fn list_objects_rendered(
        &self,
        caller: &Caller,
        req: ListObjectsRequest,
    ) -> Result<RenderedObjectList, ApiError> {
        self.list_objects(caller, req).await.map(Into::into)
    }

    /// Makes the next reads of `resource` of `group` (`core` for the core group) and `version`
    /// in `instance` wait, bounded, until the read backend has seen `resource_version`: a
    /// write the caller made through another API server replica (read-your-writes across
    /// replicas, carried by the `kairship-written` cookie or gRPC metadata). The default does
    /// nothing.
    fn await_written(
        &self,
        instance: &str,
        group: &str,
        version: &str,
        resource: &str,
        resource_version: &str,
    ) {
        let _ = (instance, group, version, resource, resource_version);
    }

    /// One object of any resource.
    async fn get_object(&self, caller: &Caller, req: GetObjectRequest) -> Result<Object, ApiError>;

    /// Creates an object of any resource.
    async fn create_object(
        &self,
        caller: &Caller,
        req: CreateObjectRequest,
    ) -> Result<Object, ApiError>;

    /// Replaces an object of any resource.
    async fn update_object(
        &self,
        caller: &Caller,
        req: UpdateObjectRequest,
    ) -> Result<Object, ApiError>;

    /// Patches an object of any resource (merge, JSON, strategic merge or apply).
    async fn patch_object(
        &self,
        caller: &Caller,
        req: PatchObjectRequest,
    ) -> Result<Object, ApiError>;

    /// Deletes an object of any resource; a (Cluster)PropagationPolicy still in use is kept,
    /// as with [`ResourcesApi::delete_resource`].
    async fn delete_object(
        &self,
        caller: &Caller,
        req: DeleteObjectRequest,
    ) -> Result<Object, ApiError>;

    /// Events of an instance, a namespace or one object, filtered by type, reason and kind.
    async fn list_events(
        &self,
        caller: &Caller,
        req: ListEventsRequest,
    ) -> Result<ObjectList, ApiError>;

    /// The resources the instance serves, from its discovery (`kubectl api-resources`), for
    /// whoever may read inside the instance. The default answers `Unimplemented`: an
    /// implementation without instance clients knows no discovery.
    async fn list_api_resources(
        &self,
        caller: &Caller,
        req: ListApiResourcesRequest,
    ) -> Result<ApiResourceList, ApiError> {
        let _ = caller;
        Err(ApiError::new(
            crate::api::Code::Unimplemented,
            format!(
                "listing the resources of instance {} is not implemented by this server",
                req.instance
            ),
        ))
    }
}
