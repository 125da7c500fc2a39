//! Conversions of the member-view and `:promote` messages between proto and the API types.

use super::convert::{json_to_struct, list_options};
use super::pb;
use crate::api::{
    ApiError, GetMemberObjectRequest, ListMemberNodesRequest, ListMemberObjectsRequest,
    ListWorkloadPodsRequest, PromoteWorkloadRequest, PromoteWorkloadResponse, WorkloadKind,
};

fn kind(text: &str) -> Result<WorkloadKind, ApiError> {
    WorkloadKind::parse(text).ok_or_else(|| {
        ApiError::invalid_field(
            "kind",
            format!(
                "unknown workload kind {text:?}; one of: deployments, statefulsets, daemonsets, jobs, cronjobs"
            ),
        )
    })
}

/// `ListWorkloadPods`.
pub fn list_workload_pods(
    m: pb::ListWorkloadPodsRequest,
) -> Result<ListWorkloadPodsRequest, ApiError> {
    Ok(ListWorkloadPodsRequest {
        instance: m.instance,
        namespace: m.namespace,
        kind: kind(&m.kind)?,
        name: m.name,
        options: list_options(m.options)?,
    })
}

/// `ListMemberNodes`.
pub fn list_member_nodes(
    m: pb::ListMemberNodesRequest,
) -> Result<ListMemberNodesRequest, ApiError> {
    Ok(ListMemberNodesRequest {
        instance: m.instance,
        cluster: m.cluster,
        options: list_options(m.options)?,
    })
}

/// `ListMemberObjects`.
pub fn list_member_objects(
    m: pb::ListMemberObjectsRequest,
) -> Result<ListMemberObjectsRequest, ApiError> {
    Ok(ListMemberObjectsRequest {
        instance: m.instance,
        cluster: m.cluster,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        options: list_options(m.options)?,
    })
}

/// `GetMemberObject`.
pub fn get_member_object(m: pb::GetMemberObjectRequest) -> GetMemberObjectRequest {
    GetMemberObjectRequest {
        instance: m.instance,
        cluster: m.cluster,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        name: m.name,
    }
}

/// `PromoteWorkload`.
pub fn promote_workload(m: pb::PromoteWorkloadRequest) -> Result<PromoteWorkloadRequest, ApiError> {
    Ok(PromoteWorkloadRequest {
        instance: m.instance,
        cluster: m.cluster,
        namespace: m.namespace,
        kind: kind(&m.kind)?,
        name: m.name,
        dry_run: m.dry_run,
    })
}

/// The answer of `PromoteWorkload`.
pub fn promote_response(
    r: PromoteWorkloadResponse,
) -> Result<pb::PromoteWorkloadResponse, ApiError> {
    Ok(pb::PromoteWorkloadResponse {
        dry_run: r.dry_run,
        objects: r
            .objects
            .into_iter()
            .map(json_to_struct)
            .collect::<Result<_, _>>()?,
    })
}

/// The API form of a `PromoteWorkload` answer (for clients).
pub fn promote_response_from_pb(r: pb::PromoteWorkloadResponse) -> PromoteWorkloadResponse {
    PromoteWorkloadResponse {
        dry_run: r.dry_run,
        objects: r
            .objects
            .into_iter()
            .map(super::convert::struct_to_json)
            .collect(),
    }
}
