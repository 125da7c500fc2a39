//! Conversions of the resources feature's messages (the typed kinds, generic objects and
//! events) between protobuf and the API's types.

use super::convert::{body, enum_value, list_options, value_to_json};
use super::pb;
use crate::api::{
    ApiError, CreateObjectRequest, CreateResourceRequest, DeleteObjectRequest,
    DeleteResourceRequest, GetObjectRequest, GetResourceRequest, ListEventsRequest,
    ListObjectsRequest, ListResourcesRequest, PatchObjectRequest, PatchType, ResourceKind,
    UpdateObjectRequest, UpdateResourceRequest,
};

/// The resource kind; it must be given.
pub fn resource_kind(number: i32) -> Result<ResourceKind, ApiError> {
    let kind = match enum_value::<pb::ResourceKind>("kind", number)? {
        pb::ResourceKind::Unspecified => {
            return Err(ApiError::invalid_field(
                "kind",
                "required: one of RESOURCE_KIND_DEPLOYMENTS, ..._SERVICES, ..._CONFIGMAPS, \
                 ..._SECRETS, ..._JOBS, ..._CRONJOBS, ..._PROPAGATIONPOLICIES, \
                 ..._OVERRIDEPOLICIES, ..._CLUSTERPROPAGATIONPOLICIES, ..._CLUSTEROVERRIDEPOLICIES",
            ));
        }
        pb::ResourceKind::Deployments => ResourceKind::Deployments,
        pb::ResourceKind::Services => ResourceKind::Services,
        pb::ResourceKind::Configmaps => ResourceKind::Configmaps,
        pb::ResourceKind::Secrets => ResourceKind::Secrets,
        pb::ResourceKind::Jobs => ResourceKind::Jobs,
        pb::ResourceKind::Cronjobs => ResourceKind::Cronjobs,
        pb::ResourceKind::Propagationpolicies => ResourceKind::Propagationpolicies,
        pb::ResourceKind::Overridepolicies => ResourceKind::Overridepolicies,
        pb::ResourceKind::Clusterpropagationpolicies => ResourceKind::Clusterpropagationpolicies,
        pb::ResourceKind::Clusteroverridepolicies => ResourceKind::Clusteroverridepolicies,
    };
    Ok(kind)
}

/// `ListResources`.
pub fn list_resources(m: pb::ListResourcesRequest) -> Result<ListResourcesRequest, ApiError> {
    Ok(ListResourcesRequest {
        instance: m.instance,
        kind: resource_kind(m.kind)?,
        namespace: m.namespace,
        options: list_options(m.options)?,
    })
}

/// `GetResource`.
pub fn get_resource(m: pb::GetResourceRequest) -> Result<GetResourceRequest, ApiError> {
    Ok(GetResourceRequest {
        instance: m.instance,
        kind: resource_kind(m.kind)?,
        namespace: m.namespace,
        name: m.name,
    })
}

/// `CreateResource`.
pub fn create_resource(m: pb::CreateResourceRequest) -> Result<CreateResourceRequest, ApiError> {
    Ok(CreateResourceRequest {
        instance: m.instance,
        kind: resource_kind(m.kind)?,
        namespace: m.namespace,
        body: body(m.body)?,
    })
}

/// `UpdateResource`.
pub fn update_resource(m: pb::UpdateResourceRequest) -> Result<UpdateResourceRequest, ApiError> {
    Ok(UpdateResourceRequest {
        instance: m.instance,
        kind: resource_kind(m.kind)?,
        namespace: m.namespace,
        name: m.name,
        body: body(m.body)?,
    })
}

/// `DeleteResource`.
pub fn delete_resource(m: pb::DeleteResourceRequest) -> Result<DeleteResourceRequest, ApiError> {
    Ok(DeleteResourceRequest {
        instance: m.instance,
        kind: resource_kind(m.kind)?,
        namespace: m.namespace,
        name: m.name,
    })
}

/// The patch type; unspecified is a merge patch.
pub fn patch_type(number: i32) -> Result<PatchType, ApiError> {
    Ok(match enum_value::<pb::PatchType>("patchType", number)? {
        pb::PatchType::Unspecified | pb::PatchType::Merge => PatchType::Merge,
        pb::PatchType::Json => PatchType::Json,
        pb::PatchType::Strategic => PatchType::Strategic,
        pb::PatchType::Apply => PatchType::Apply,
    })
}

/// `ListObjects`.
pub fn list_objects(m: pb::ListObjectsRequest) -> Result<ListObjectsRequest, ApiError> {
    Ok(ListObjectsRequest {
        instance: m.instance,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        options: list_options(m.options)?,
    })
}

/// `GetObject`.
pub fn get_object(m: pb::GetObjectRequest) -> GetObjectRequest {
    GetObjectRequest {
        instance: m.instance,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        name: m.name,
    }
}

/// `CreateObject`.
pub fn create_object(m: pb::CreateObjectRequest) -> Result<CreateObjectRequest, ApiError> {
    Ok(CreateObjectRequest {
        instance: m.instance,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        body: body(m.body)?,
    })
}

/// `UpdateObject`.
pub fn update_object(m: pb::UpdateObjectRequest) -> Result<UpdateObjectRequest, ApiError> {
    Ok(UpdateObjectRequest {
        instance: m.instance,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        name: m.name,
        body: body(m.body)?,
    })
}

/// `PatchObject`.
pub fn patch_object(m: pb::PatchObjectRequest) -> Result<PatchObjectRequest, ApiError> {
    Ok(PatchObjectRequest {
        instance: m.instance,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        name: m.name,
        patch_type: patch_type(m.patch_type)?,
        patch: m
            .patch
            .map(value_to_json)
            .ok_or_else(|| ApiError::invalid_field("patch", "required: the patch"))?,
        field_manager: m.field_manager,
        force: m.force,
    })
}

/// `ListEvents`.
pub fn list_events(m: pb::ListEventsRequest) -> Result<ListEventsRequest, ApiError> {
    Ok(ListEventsRequest {
        instance: m.instance,
        namespace: m.namespace,
        group: m.group,
        version: m.version,
        resource: m.resource,
        name: m.name,
        type_: m.r#type,
        reason: m.reason,
        kind: m.kind,
        options: list_options(m.options)?,
    })
}

/// `DeleteObject`.
pub fn delete_object(m: pb::DeleteObjectRequest) -> DeleteObjectRequest {
    DeleteObjectRequest {
        instance: m.instance,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        name: m.name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Code;

    #[test]
    fn every_proto_kind_maps_to_a_distinct_service_kind() {
        let mut seen = std::collections::BTreeSet::new();
        for number in 1..=10 {
            seen.insert(resource_kind(number).unwrap());
        }
        assert_eq!(seen.len(), ResourceKind::ALL.len());
        for bad in [0, 11, -1] {
            assert_eq!(
                resource_kind(bad).unwrap_err().code,
                Code::InvalidArgument,
                "{bad}"
            );
        }
    }
}
