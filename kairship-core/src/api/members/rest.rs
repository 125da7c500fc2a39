//! REST handlers of joining, registering, updating and unjoining member clusters.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

use super::types::{
    JoinMemberRequest, RegisterMemberRequest, RegisterMemberResponse, UpdateMemberRequest,
};
use crate::api::error::ApiError;
use crate::api::rest::extract::{ApiJson, ApiPath, Authenticated};
use crate::api::rest::handlers::{ErrorResponses, RestState};
use crate::api::types::Object;

/// Query parameters of an unjoin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UnjoinOptions {
    /// Unjoin even while ResourceBindings or ClusterResourceBindings still schedule to the
    /// member, and even when the member cannot be reached to remove Kairship's objects there.
    #[serde(default)]
    pub force: Option<bool>,
}

/// The instance of a request body must be absent or the one of the path.
fn same_instance(path: String, body: &str) -> Result<String, ApiError> {
    if body.is_empty() || body == path {
        Ok(path)
    } else {
        Err(ApiError::invalid_field(
            "instance",
            format!("the body names instance {body:?}, the path {path:?}"),
        ))
    }
}

/// Join a member cluster in Push mode from its kubeconfig.
///
/// Creates in the member the namespace `karmada-cluster`, the ServiceAccount
/// `karmada-<name>` with its ClusterRole and ClusterRoleBinding
/// `karmada-controller-manager:karmada-<name>` and token Secret, and the impersonator's
/// ServiceAccount, ClusterRole, ClusterRoleBinding and token; then in the instance the
/// Secrets `karmada-cluster/<name>` and `karmada-cluster/<name>-impersonator` and the
/// `Cluster`. Running it again converges; a failure removes what the call created and the
/// error names the failed step. The kubeconfig is never stored, returned or logged.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters:join", tag = "clusters",
    operation_id = "JoinMember", params(("instance" = String, Path, description = "Instance name")),
    request_body(content = JoinMemberRequest, description = "The member's name, kubeconfig and placement"),
    responses((status = 200, body = Object, description = "The Cluster"), ErrorResponses))]
pub async fn join_member(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
    ApiJson(mut req): ApiJson<JoinMemberRequest>,
) -> Result<Json<Object>, ApiError> {
    req.instance = same_instance(instance, &req.instance)?;
    s.api.join_member(&auth.caller, req).await.map(Json)
}

/// Prepare a Pull-mode join: returns the manifests to apply in the member.
///
/// Creates in the instance a bootstrap token (`kube-system/bootstrap-token-<id>`, with an
/// expiration), the agent's ClusterRole and ClusterRoleBinding (bound to the token's group)
/// and the `Cluster` (`syncMode: Pull`); returns the karmada-agent's namespace,
/// ServiceAccount, RBAC, kubeconfig Secret and Deployment.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters:register", tag = "clusters",
    operation_id = "RegisterMember", params(("instance" = String, Path, description = "Instance name")),
    request_body(content = RegisterMemberRequest, description = "The member's name and placement"),
    responses((status = 200, body = RegisterMemberResponse, description = "The manifests to apply in the member"), ErrorResponses))]
pub async fn register_member(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
    ApiJson(mut req): ApiJson<RegisterMemberRequest>,
) -> Result<Json<RegisterMemberResponse>, ApiError> {
    req.instance = same_instance(instance, &req.instance)?;
    s.api.register_member(&auth.caller, req).await.map(Json)
}

/// Update labels, taints, provider, region or zone of a member cluster.
#[utoipa::path(patch, path = "/apis/kairship.io/v1alpha1/instances/{instance}/clusters/{cluster}", tag = "clusters",
    operation_id = "UpdateMember", params(("instance" = String, Path, description = "Instance name"),
        ("cluster" = String, Path, description = "Member cluster name")),
    request_body(content = UpdateMemberRequest, description = "What to change; absent fields are kept"),
    responses((status = 200, body = Object, description = "The updated Cluster"), ErrorResponses))]
pub async fn update_member(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, cluster)): ApiPath<(String, String)>,
    ApiJson(mut req): ApiJson<UpdateMemberRequest>,
) -> Result<Json<Object>, ApiError> {
    req.instance = same_instance(instance, &req.instance)?;
    if !req.cluster.is_empty() && req.cluster != cluster {
        return Err(ApiError::invalid_field(
            "cluster",
            format!(
                "the body names cluster {:?}, the path {cluster:?}",
                req.cluster
            ),
        ));
    }
    req.cluster = cluster;
    s.api.update_member(&auth.caller, req).await.map(Json)
}
