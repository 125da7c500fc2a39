//! The applications feature: `CreateApplication` (a workload, its Service, PropagationPolicy
//! and OverridePolicies in one call; planned by the plain functions of [`create`], run by
//! [`calls`]) and `:promote` (a member's workload taken into the instance; [`promote`]).

pub mod calls;
pub mod create;
pub mod promote;
mod service;
pub mod types;

use async_trait::async_trait;

use crate::access::Caller;
use crate::api::{ApiError, Code};

pub use create::{APPLICATION_LABEL, cluster_zones};
pub use types::{
    ApplicationPort, ApplicationResult, ApplicationService, ApplicationSpec, ClusterOverride,
    CreateApplicationRequest, EnvVar, Placement, PromoteWorkloadRequest, PromoteWorkloadResponse,
};

/// The applications part of [`KairshipApi`](crate::api::KairshipApi), which [`KairshipService`](crate::api::KairshipService)
/// implements.
#[async_trait]
pub trait ApplicationsApi: Send + Sync {
    /// Creates a multicloud application in one call: its workload, Service,
    /// PropagationPolicy and per-cluster OverridePolicies, in that order, or none of them (a
    /// failure removes what the call created); a dry run creates nothing and returns the
    /// objects as the instance would store them.
    async fn create_application(
        &self,
        caller: &Caller,
        req: CreateApplicationRequest,
    ) -> Result<ApplicationResult, ApiError>;

    /// Takes a workload of a member cluster into the instance with the ConfigMaps and Secrets
    /// it refers to and a PropagationPolicy keeping it there; all or nothing, or a dry run.
    async fn promote_workload(
        &self,
        caller: &Caller,
        req: PromoteWorkloadRequest,
    ) -> Result<PromoteWorkloadResponse, ApiError> {
        let _ = (caller, req);
        Err(ApiError::new(
            Code::Unimplemented,
            "member-cluster views are not served by this implementation",
        ))
    }
}
