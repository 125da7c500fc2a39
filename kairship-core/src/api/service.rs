//! The service trait every transport (REST, gRPC, the console) calls: the sum of the features'
//! traits.

use super::{ApplicationsApi, AuditApi, InstancesApi, MembersApi, ResourcesApi, WorkloadsApi};
use super::{DriftApi, PlacementApi, SearchApi};

/// The Kairship API. One implementation ([`KairshipService`](super::KairshipService)); REST
/// and gRPC are thin adapters that authenticate the caller, build the request message and
/// call one method each, so the two transports never disagree.
///
/// Every method checks that `caller` may apply the method's verb to the instance before it
/// touches anything; writes a caller may not make are never forwarded.
///
/// It is the sum of one trait per feature and is implemented for every type implementing
/// them all: an embedder implements (or, wrapping an `Arc<dyn KairshipApi>`, forwards) the
/// feature traits and hands out `Arc<dyn KairshipApi>`. Callers bring the feature traits into
/// scope to call their methods (`use kairship_core::api::prelude::*`).
pub trait KairshipApi:
    InstancesApi
    + MembersApi
    + ResourcesApi
    + WorkloadsApi
    + ApplicationsApi
    + PlacementApi
    + DriftApi
    + AuditApi
    + SearchApi
{
}

impl<T> KairshipApi for T where
    T: InstancesApi
        + MembersApi
        + ResourcesApi
        + WorkloadsApi
        + ApplicationsApi
        + PlacementApi
        + DriftApi
        + AuditApi
        + SearchApi
        + ?Sized
{
}
