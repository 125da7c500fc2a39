//! REST handlers of the drift feature: `GET …/instances/{instance}/drift` and
//! `GET …/namespaces/{ns}/resources/{group}/{version}/{resource}/{name}/drift`.

use axum::Json;
use axum::extract::State;

use super::extract::{ApiPath, Authenticated};
use super::handler::{Answer, ReadErrorResponses, RestState};
use crate::api::{GetInstanceDriftRequest, GetObjectDriftRequest, InstanceDrift, ObjectDrift};

/// List the propagated objects of an instance whose copy in a member cluster differs from
/// what Karmada applies there (the Work's manifest: the template plus the matching
/// overrides), or is missing, with the drifted fields per member. What the members'
/// controllers own (status, defaults, managedFields) is not drift.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/drift",
    tag = "drift", operation_id = "GetInstanceDrift",
    params(("instance" = String, Path, description = "Instance name")),
    responses((status = 200, body = InstanceDrift, description = "The drifted objects"), ReadErrorResponses))]
pub async fn instance_drift(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath(instance): ApiPath<String>,
) -> Answer<InstanceDrift> {
    let req = GetInstanceDriftRequest { instance };
    s.api.instance_drift(&auth.caller, req).await.map(Json)
}

/// Compare a resource template's copy in every member it is applied to with what Karmada
/// applies there: per member `InSync`, `Drifted` (with the fields), `Missing` or
/// `Unreachable`.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}/drift",
    tag = "drift", operation_id = "GetObjectDrift",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("group" = String, Path, description = "API group (`core` for the core group)"),
        ("version" = String, Path, description = "Version"),
        ("resource" = String, Path, description = "Resource (plural)"),
        ("name" = String, Path, description = "Name of the resource template")),
    responses((status = 200, body = ObjectDrift, description = "The template's copies per member"), ReadErrorResponses))]
pub async fn object_drift(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, namespace, group, version, resource, name)): ApiPath<(
        String,
        String,
        String,
        String,
        String,
        String,
    )>,
) -> Answer<ObjectDrift> {
    let req = GetObjectDriftRequest {
        instance,
        group,
        version,
        resource,
        namespace: Some(namespace),
        name,
    };
    s.api.object_drift(&auth.caller, req).await.map(Json)
}
