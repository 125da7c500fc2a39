//! Conversions of the instances feature's messages (instances and their kubeconfigs)
//! between protobuf and the API's types.

use super::convert::{body, list_options};
use super::pb;
use crate::api::{
    ApiError, CreateInstanceRequest, CreateKubeconfigRequest, DeleteInstanceRequest,
    GetInstanceRequest, KubeconfigResponse, ListInstancesRequest, UpdateInstanceRequest,
};

/// `ListInstances`.
pub fn list_instances(m: pb::ListInstancesRequest) -> Result<ListInstancesRequest, ApiError> {
    Ok(ListInstancesRequest {
        options: list_options(m.options)?,
    })
}

/// `GetInstance`.
pub fn get_instance(m: pb::GetInstanceRequest) -> GetInstanceRequest {
    GetInstanceRequest {
        instance: m.instance,
    }
}

/// `CreateInstance`.
pub fn create_instance(m: pb::CreateInstanceRequest) -> Result<CreateInstanceRequest, ApiError> {
    Ok(CreateInstanceRequest {
        body: body(m.body)?,
    })
}

/// `UpdateInstance`.
pub fn update_instance(m: pb::UpdateInstanceRequest) -> Result<UpdateInstanceRequest, ApiError> {
    Ok(UpdateInstanceRequest {
        instance: m.instance,
        body: body(m.body)?,
    })
}

/// `DeleteInstance`.
pub fn delete_instance(m: pb::DeleteInstanceRequest) -> DeleteInstanceRequest {
    DeleteInstanceRequest {
        instance: m.instance,
        force: m.force.unwrap_or(false),
    }
}

/// `CreateKubeconfig`; `request_server` is the base URL the call arrived at.
pub fn create_kubeconfig(
    m: pb::CreateKubeconfigRequest,
    request_server: Option<String>,
) -> CreateKubeconfigRequest {
    CreateKubeconfigRequest {
        instance: m.instance,
        server: m.server,
        request_server,
    }
}

/// A kubeconfig.
pub fn kubeconfig(k: KubeconfigResponse) -> pb::KubeconfigResponse {
    pb::KubeconfigResponse {
        instance: k.instance,
        server: k.server,
        kubeconfig: k.kubeconfig,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Code;

    #[test]
    fn a_write_without_body_is_invalid() {
        let err = create_instance(pb::CreateInstanceRequest { body: None }).unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument);
        assert!(err.message.starts_with("body:"), "{}", err.message);
    }
}
