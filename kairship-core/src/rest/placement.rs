//! REST handler of the placement feature: `POST …/instances/{instance}/placements:preview`.

use axum::Json;
use axum::extract::State;

use super::extract::{ApiJson, ApiPath, Authenticated};
use super::handler::{Answer, ReadErrorResponses, RestState};
use crate::api::{PlacementPreview, PlacementPreviewSpec, PreviewPlacementRequest};

/// Preview where Karmada would place a workload: the member clusters a PropagationPolicy
/// (or an application's placement) chooses, the replicas of each, and why each other cluster
/// is left out (cluster affinity, an untolerated taint, not Ready, spread constraints, not
/// enough allocatable resources), computed with Karmada's scheduling rules against the
/// instance's Clusters. Nothing is created. A placement that selects nothing answers no
/// cluster and every reason; a malformed one is a 400 naming the field.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/placements:preview",
    tag = "placements", operation_id = "PreviewPlacement",
    params(("instance" = String, Path, description = "Instance name")),
    request_body(content = PlacementPreviewSpec, description = "A policy (or an application placement) and a workload (or a reference to one)"),
    responses((status = 200, body = PlacementPreview, description = "The clusters chosen with their replicas, and every other cluster with its reason"), ReadErrorResponses))]
pub async fn preview_placement(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
    ApiJson(preview): ApiJson<PlacementPreviewSpec>,
) -> Answer<PlacementPreview> {
    let req = PreviewPlacementRequest { instance, preview };
    s.api.preview_placement(&auth.caller, req).await.map(Json)
}
