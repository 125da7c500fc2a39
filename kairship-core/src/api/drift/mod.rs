//! The drift feature: where a member cluster's copy of a propagated object no longer matches
//! what Karmada applies to it. What Karmada applies is read from the Works of each member's
//! execution space (`karmada-es-<cluster>`: the template after the matching overrides, as
//! the execution controller applies it), the member's copy through Karmada's cluster proxy as
//! the caller, and the two are compared by [`crate::drift::field_drift`] (which ignores what
//! the member's controllers own). The plain steps are in [`applied`].

pub mod applied;
mod service;
pub mod types;

use async_trait::async_trait;

use crate::access::Caller;
use crate::api::{ApiError, Code};

pub use types::{
    DriftState, GetInstanceDriftRequest, GetObjectDriftRequest, InstanceDrift, MemberDrift,
    ObjectDrift, UnreachableMember,
};

/// The drift part of [`KairshipApi`](crate::api::KairshipApi), which
/// [`KairshipService`](crate::api::KairshipService) implements.
#[async_trait]
pub trait DriftApi: Send + Sync {
    /// Every propagated object of the instance whose copy in a member differs from what
    /// Karmada applies there (or is gone), with the fields per member.
    async fn instance_drift(
        &self,
        caller: &Caller,
        req: GetInstanceDriftRequest,
    ) -> Result<InstanceDrift, ApiError> {
        let _ = (caller, req);
        Err(ApiError::new(
            Code::Unimplemented,
            "drift is not served by this implementation",
        ))
    }

    /// One resource template: per member it is applied to, whether the member's copy matches
    /// what Karmada applies, and the fields where it does not.
    async fn object_drift(
        &self,
        caller: &Caller,
        req: GetObjectDriftRequest,
    ) -> Result<ObjectDrift, ApiError> {
        let _ = (caller, req);
        Err(ApiError::new(
            Code::Unimplemented,
            "drift is not served by this implementation",
        ))
    }
}
