//! The instances feature: Karmada instances (`kairship.io/v1alpha1` Instance on the host
//! cluster): list, read, create, replace, delete, adopt an existing Karmada, and kubeconfigs
//! that reach an instance through Kairship's native proxy.

pub mod adopt;
pub mod kubeconfig;
mod service;
pub mod types;

use async_trait::async_trait;

use crate::access::Caller;
use crate::api::{ApiError, Object, ObjectList};

pub use adopt::{AdoptInstanceOptions, AdoptInstanceRequest};
pub use types::{
    BearerToken, CreateInstanceRequest, CreateKubeconfigRequest, DeleteInstanceRequest,
    GetInstanceRequest, KubeconfigOptions, KubeconfigResponse, ListInstancesRequest,
    UpdateInstanceRequest,
};

/// The instances part of [`KairshipApi`](crate::api::KairshipApi), which [`KairshipService`](crate::api::KairshipService)
/// implements.
#[async_trait]
pub trait InstancesApi: Send + Sync {
    /// Instances the caller may `get`, filtered, sorted and paged.
    async fn list_instances(
        &self,
        caller: &Caller,
        req: ListInstancesRequest,
    ) -> Result<ObjectList, ApiError>;

    /// One Instance.
    async fn get_instance(
        &self,
        caller: &Caller,
        req: GetInstanceRequest,
    ) -> Result<Object, ApiError>;

    /// Creates an Instance.
    async fn create_instance(
        &self,
        caller: &Caller,
        req: CreateInstanceRequest,
    ) -> Result<Object, ApiError>;

    /// Replaces an Instance.
    async fn update_instance(
        &self,
        caller: &Caller,
        req: UpdateInstanceRequest,
    ) -> Result<Object, ApiError>;

    /// Deletes an Instance; `FailedPrecondition` while member clusters are joined (unless the
    /// Instance carries the force-delete annotation).
    async fn delete_instance(
        &self,
        caller: &Caller,
        req: DeleteInstanceRequest,
    ) -> Result<Object, ApiError>;

    /// A kubeconfig reaching the instance through the native proxy as the caller (`token` is
    /// the caller's own bearer token).
    async fn create_kubeconfig(
        &self,
        caller: &Caller,
        token: &BearerToken,
        req: CreateKubeconfigRequest,
    ) -> Result<KubeconfigResponse, ApiError>;

    /// Adopts a Karmada from a kubeconfig given inline: stores it in a Secret on the host
    /// (labelled with the instance, owned by the Instance) and creates the Adopt-mode
    /// Instance pointing at it, both or neither. The kubeconfig is never returned.
    async fn adopt_instance(
        &self,
        caller: &Caller,
        req: AdoptInstanceRequest,
    ) -> Result<Object, ApiError>;
}
