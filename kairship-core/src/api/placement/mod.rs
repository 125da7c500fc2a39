//! The placement feature: where Karmada would place a workload under a policy, and why each
//! other member cluster is left out, computed by [`crate::scheduling`] (the rules the
//! sandbox's Karmada emulation schedules with) against the instance's `Cluster` objects.
//! The request is checked and turned into a placement and a workload by the plain functions
//! of [`preview`].

pub mod preview;
mod service;
pub mod types;

use async_trait::async_trait;

use crate::access::Caller;
use crate::api::{ApiError, Code};

pub use types::{
    PlacementPreview, PlacementPreviewSpec, PreviewLeftOut, PreviewPlacementRequest, PreviewTarget,
    WorkloadReference,
};

/// The placement part of [`KairshipApi`](crate::api::KairshipApi), which
/// [`KairshipService`](crate::api::KairshipService) implements.
#[async_trait]
pub trait PlacementApi: Send + Sync {
    /// The clusters a PropagationPolicy (or an application's placement) would choose for a
    /// workload, the replicas of each, and the reason each other cluster is left out. A
    /// placement that selects nothing answers no cluster and every reason, not an error.
    async fn preview_placement(
        &self,
        caller: &Caller,
        req: PreviewPlacementRequest,
    ) -> Result<PlacementPreview, ApiError> {
        let _ = (caller, req);
        Err(ApiError::new(
            Code::Unimplemented,
            "placement previews are not served by this implementation",
        ))
    }
}
