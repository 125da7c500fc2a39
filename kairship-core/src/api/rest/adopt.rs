//! REST handler of `POST instances/{instance}/adopt`: adopting a Karmada from an inline
//! kubeconfig.

use axum::Json;
use axum::extract::State;

use super::extract::{ApiJson, ApiPath, Authenticated};
use super::handlers::{Answer, ErrorResponses, RestState};
use crate::api::instance_create::{AdoptInstanceOptions, AdoptInstanceRequest};
use crate::api::types::Object;

/// Adopt a Karmada from its kubeconfig: the kubeconfig is stored in the host Secret
/// `{secretNamespace}/{instance}-kubeconfig` (labelled `kairship.io/instance`, owned by the
/// Instance, so deleting the Instance removes it) and the Adopt-mode Instance pointing at it
/// is created; both or neither. The kubeconfig is checked first (it parses; its current
/// context names a cluster with an http(s) server) and never returned. An existing Secret of
/// that name is `AlreadyExists`, never overwritten.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/adopt", tag = "instances",
    operation_id = "AdoptInstance", params(("instance" = String, Path, description = "Name of the Instance to create")),
    request_body(content = AdoptInstanceOptions, description = "The kubeconfig and the Instance's optional settings"),
    responses((status = 200, body = Object, description = "The created Instance (without the kubeconfig)"), ErrorResponses))]
pub async fn adopt_instance(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
    ApiJson(options): ApiJson<AdoptInstanceOptions>,
) -> Answer<Object> {
    let req = AdoptInstanceRequest { instance, options };
    s.api.adopt_instance(&auth.caller, req).await.map(Json)
}
