//! Conversions of the members feature's messages (the `Cluster` objects, join, register,
//! update, the member views) between protobuf and the API's types.

use super::convert::{body, json_to_struct, list_options};
use super::pb;
use crate::api::members::types::{
    JoinMemberRequest, MemberTaint, RegisterMemberRequest, RegisterMemberResponse,
    UpdateMemberRequest,
};
use crate::api::{
    ApiError, GetClusterRequest, GetMemberObjectRequest, JoinClusterRequest, ListClustersRequest,
    ListMemberNodesRequest, ListMemberObjectsRequest, RemoveClusterRequest, UpdateClusterRequest,
};

fn taint(t: pb::MemberTaint) -> MemberTaint {
    MemberTaint {
        key: t.key,
        value: t.value,
        effect: t.effect,
    }
}

/// `JoinMember`.
pub fn join_member(m: pb::JoinMemberRequest) -> JoinMemberRequest {
    JoinMemberRequest {
        instance: m.instance,
        name: m.name,
        kubeconfig: m.kubeconfig,
        context: m.context,
        api_endpoint: m.api_endpoint,
        labels: m.labels.into_iter().collect(),
        taints: m.taints.into_iter().map(taint).collect(),
        provider: m.provider,
        region: m.region,
        zone: m.zone,
    }
}

/// `RegisterMember`.
pub fn register_member(m: pb::RegisterMemberRequest) -> RegisterMemberRequest {
    RegisterMemberRequest {
        instance: m.instance,
        name: m.name,
        karmada_endpoint: m.karmada_endpoint,
        api_endpoint: m.api_endpoint,
        token_ttl_seconds: m.token_ttl_seconds,
        agent_image: m.agent_image,
        labels: m.labels.into_iter().collect(),
        taints: m.taints.into_iter().map(taint).collect(),
        provider: m.provider,
        region: m.region,
        zone: m.zone,
    }
}

/// `UpdateMember`: `labels` set, `remove_labels` removed (a label in both is refused).
pub fn update_member(m: pb::UpdateMemberRequest) -> Result<UpdateMemberRequest, ApiError> {
    let labels = if m.labels.is_empty() && m.remove_labels.is_empty() {
        None
    } else {
        let mut labels: std::collections::BTreeMap<String, Option<String>> =
            m.labels.into_iter().map(|(k, v)| (k, Some(v))).collect();
        for key in m.remove_labels {
            if labels.insert(key.clone(), None).is_some() {
                return Err(ApiError::invalid_field(
                    "remove_labels",
                    format!("label {key:?} is both set and removed"),
                ));
            }
        }
        Some(labels)
    };
    Ok(UpdateMemberRequest {
        instance: m.instance,
        cluster: m.cluster,
        labels,
        taints: m.taints.map(|t| t.items.into_iter().map(taint).collect()),
        provider: m.provider,
        region: m.region,
        zone: m.zone,
    })
}

/// The answer of `RegisterMember`.
pub fn register_member_response(
    r: RegisterMemberResponse,
) -> Result<pb::RegisterMemberResponse, ApiError> {
    Ok(pb::RegisterMemberResponse {
        cluster: r.cluster,
        karmada_endpoint: r.karmada_endpoint,
        token_id: r.token_id,
        expiration: r.expiration,
        manifests: r
            .manifests
            .into_iter()
            .map(json_to_struct)
            .collect::<Result<_, _>>()?,
        yaml: r.yaml,
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

/// `ListClusters`.
pub fn list_clusters(m: pb::ListClustersRequest) -> Result<ListClustersRequest, ApiError> {
    Ok(ListClustersRequest {
        instance: m.instance,
        options: list_options(m.options)?,
    })
}

/// `GetCluster`.
pub fn get_cluster(m: pb::GetClusterRequest) -> GetClusterRequest {
    GetClusterRequest {
        instance: m.instance,
        cluster: m.cluster,
    }
}

/// `JoinCluster`.
pub fn join_cluster(m: pb::JoinClusterRequest) -> Result<JoinClusterRequest, ApiError> {
    Ok(JoinClusterRequest {
        instance: m.instance,
        body: body(m.body)?,
    })
}

/// `UpdateCluster`.
pub fn update_cluster(m: pb::UpdateClusterRequest) -> Result<UpdateClusterRequest, ApiError> {
    Ok(UpdateClusterRequest {
        instance: m.instance,
        cluster: m.cluster,
        body: body(m.body)?,
    })
}

/// `RemoveCluster`.
pub fn remove_cluster(m: pb::RemoveClusterRequest) -> RemoveClusterRequest {
    RemoveClusterRequest {
        instance: m.instance,
        cluster: m.cluster,
        force: m.force,
    }
}
