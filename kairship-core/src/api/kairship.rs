//! [`KairshipService`], the implementation of [`KairshipApi`]: Instances on the host cluster,
//! everything inside an instance through the read-write split router.

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::core::{ApiResource, DynamicObject};
use serde_json::Value;

use crate::access::Authorizer;
use crate::api::inside::Gvr;
use crate::api::list::pagination;
use crate::api::{ApiError, Object, ObjectList};
use crate::instance::Instance;
use crate::router::{DiscoveryCache, InstanceClients, ObjectPage, ReadWriteRouter, RouterError};

#[path = "kairship_steps.rs"]
mod steps;

/// Settings of [`KairshipService`].
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// Base URL clients reach the API server at, written into kubeconfigs when the request
    /// does not say (`https://kairship.example.com`).
    pub external_url: Option<String>,
    /// CA certificate (PEM) written into kubeconfigs, for servers whose certificate is not
    /// publicly trusted.
    pub ca_pem: Option<String>,
    /// Time one call to the host cluster may take.
    pub host_timeout: Duration,
    /// How long unjoining a member waits for Karmada to remove its `Cluster` before
    /// answering that Karmada is not done yet (`karmadactl unjoin --wait`'s default: 60 s).
    pub unjoin_wait: Duration,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            external_url: None,
            ca_pem: None,
            host_timeout: Duration::from_secs(10),
            unjoin_wait: Duration::from_secs(60),
        }
    }
}

/// The Kairship API over a host cluster (Instances) and a [`ReadWriteRouter`] (everything
/// inside the instances), with an [`Authorizer`] deciding who may do what.
pub struct KairshipService {
    pub(super) host: Client,
    pub(super) router: Arc<dyn ReadWriteRouter>,
    pub(super) authorizer: Arc<dyn Authorizer>,
    pub(super) config: ServiceConfig,
    pub(super) discovery: Option<Discovery>,
}

/// How generic calls learn which resources an instance serves.
pub(super) struct Discovery {
    pub(super) clients: Arc<dyn InstanceClients>,
    pub(super) cache: Arc<DiscoveryCache>,
}

/// Field manager of apply patches that name none.
pub const DEFAULT_FIELD_MANAGER: &str = "kairship";

impl std::fmt::Debug for KairshipService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KairshipService")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

pub(super) fn instance_resource() -> ApiResource {
    ApiResource::erase::<Instance>(&())
}

pub(super) const INSTANCE_API_VERSION: &str = "kairship.io/v1alpha1";

pub(super) fn to_object<T: serde::Serialize>(value: &T, what: &str) -> Result<Object, ApiError> {
    serde_json::to_value(value)
        .map_err(|e| ApiError::internal(format!("cannot encode {what}: {e}")))
}

pub(super) fn object_list(page: ObjectPage) -> Result<ObjectList, ApiError> {
    let items = page
        .items
        .iter()
        .map(|o| to_object(o.as_ref(), "a listed object"))
        .collect::<Result<_, _>>()?;
    Ok(ObjectList {
        items,
        pagination: pagination(page.pagination),
    })
}

pub(super) fn dynamic(body: Value, what: &str) -> Result<DynamicObject, ApiError> {
    serde_json::from_value(body).map_err(|e| ApiError::invalid(format!("{what}: {e}")))
}

/// The objects of a list, where a not-found answer means "no such list": the resource type
/// itself is not served (a Karmada without bindings yet), so nothing refers to anything.
pub(super) fn items_or_none_served(
    result: Result<ObjectPage, RouterError>,
) -> Result<Vec<Arc<DynamicObject>>, ApiError> {
    match result {
        Ok(page) => Ok(page.items),
        Err(err) if err.is_not_found() => Ok(Vec::new()),
        Err(err) => Err(err.into()),
    }
}

pub(super) fn gvr<'a>(group: &'a str, version: &'a str, resource: &'a str) -> Gvr<'a> {
    Gvr {
        group,
        version,
        resource,
    }
}
