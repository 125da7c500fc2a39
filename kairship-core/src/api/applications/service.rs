//! [`ApplicationsApi`](super::ApplicationsApi) as [`KairshipService`] implements it.

use async_trait::async_trait;

use super::ApplicationsApi;
use crate::access::Caller;
use crate::api::kairship::KairshipService;
use crate::api::{
    ApiError, ApplicationResult, CreateApplicationRequest, PromoteWorkloadRequest,
    PromoteWorkloadResponse,
};

#[async_trait]
impl ApplicationsApi for KairshipService {
    async fn create_application(
        &self,
        caller: &Caller,
        req: CreateApplicationRequest,
    ) -> Result<ApplicationResult, ApiError> {
        self.run_create_application(caller, req).await
    }

    async fn promote_workload(
        &self,
        caller: &Caller,
        req: PromoteWorkloadRequest,
    ) -> Result<PromoteWorkloadResponse, ApiError> {
        self.promote(caller, req).await
    }
}
