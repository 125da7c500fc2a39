//! Conversions of the resources feature's messages (the typed kinds, generic objects and
//! events) between protobuf and the API's types.

use super::convert::{body, enum_value, list_options, value_to_json};
use super::pb;
use crate::api::{
    ApiError, ApiResourceInfo, ApiResourceList, CreateObjectRequest, CreateResourceRequest,
    DeleteObjectRequest, DeleteResourceRequest, GetObjectRequest, GetResourceRequest,
    ListApiResourcesRequest, ListEventsRequest, ListObjectsRequest, ListResourcesRequest,
    PatchObjectRequest, PatchType, ResourceKind, UpdateObjectRequest, UpdateResourceRequest,
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

/// `ListApiResources`.
pub fn list_api_resources(m: pb::ListApiResourcesRequest) -> ListApiResourcesRequest {
    ListApiResourcesRequest {
        instance: m.instance,
    }
}

/// The resources an instance serves, as proto.
pub fn api_resource_list(list: ApiResourceList) -> pb::ApiResourceList {
    pb::ApiResourceList {
        items: list
            .items
            .into_iter()
            .map(|r| pb::ApiResourceInfo {
                group: r.group,
                version: r.version,
                preferred: r.preferred,
                resource: r.resource,
                singular: r.singular,
                kind: r.kind,
                namespaced: r.namespaced,
                verbs: r.verbs,
                short_names: r.short_names,
                categories: r.categories,
                subresources: r.subresources,
            })
            .collect(),
    }
}

/// The resources of a `ListApiResources` answer, as the API's type (what REST answers).
pub fn api_resource_list_from_pb(list: pb::ApiResourceList) -> ApiResourceList {
    ApiResourceList {
        items: list
            .items
            .into_iter()
            .map(|r| ApiResourceInfo {
                group: r.group,
                version: r.version,
                preferred: r.preferred,
                resource: r.resource,
                singular: r.singular,
                kind: r.kind,
                namespaced: r.namespaced,
                verbs: r.verbs,
                short_names: r.short_names,
                categories: r.categories,
                subresources: r.subresources,
            })
            .collect(),
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

    #[test]
    fn api_resource_lists_round_trip() {
        let list = ApiResourceList {
            items: vec![ApiResourceInfo {
                group: "apps".into(),
                version: "v1".into(),
                preferred: true,
                resource: "deployments".into(),
                singular: "deployment".into(),
                kind: "Deployment".into(),
                namespaced: true,
                verbs: vec!["list".into()],
                short_names: vec!["deploy".into()],
                categories: vec!["all".into()],
                subresources: vec!["scale".into(), "status".into()],
            }],
        };
        assert_eq!(
            api_resource_list_from_pb(api_resource_list(list.clone())),
            list
        );
    }
}
