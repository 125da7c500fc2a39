//! `kairship.v1.KairshipService` over [`KairshipApi`]: each method authenticates the caller
//! from the `authorization` metadata, converts the request, calls the one service method and
//! converts the answer, exactly as the REST handlers do.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::applications;
use super::convert;
use super::pb;
use super::pb::kairship_service_server::KairshipService;
use super::{instances, members, resources, workloads};
use crate::access::{Authenticator, Caller};
use crate::api::{ApiError, BearerToken, Code, KairshipApi};
use crate::router::carried_version;

/// The base URL a call arrived at (`scheme://authority`), put on the request by the gRPC
/// routes so that `CreateKubeconfig` can point kubeconfigs back at this server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestBaseUrl(pub Option<String>);

/// The gRPC face of a [`KairshipApi`].
#[derive(Clone)]
pub struct GrpcApi {
    api: Arc<dyn KairshipApi>,
    authenticator: Arc<dyn Authenticator>,
}

impl std::fmt::Debug for GrpcApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcApi").finish_non_exhaustive()
    }
}

type Answer<T> = Result<Response<T>, Status>;

fn answer<T>(result: Result<T, ApiError>) -> Answer<T> {
    result
        .map(Response::new)
        .map_err(|err| convert::status(&err))
}

fn object(result: Result<serde_json::Value, ApiError>) -> Answer<prost_types::Struct> {
    answer(result.and_then(convert::json_to_struct))
}

/// Metadata key carrying the resourceVersion of a write of one resource: answered by a
/// generic write, brought back by the caller on reads of the same resource through any
/// replica, which then wait (bounded) until their read backend has seen it — what the
/// `kairship-written` cookie does for REST and the native proxy.
pub const WRITTEN_METADATA: &str = "kairship-written";

/// A written object's answer, with its resourceVersion in [`WRITTEN_METADATA`].
fn written_object(result: Result<serde_json::Value, ApiError>) -> Answer<prost_types::Struct> {
    let version = result
        .as_ref()
        .ok()
        .and_then(|o| o.pointer("/metadata/resourceVersion"))
        .and_then(serde_json::Value::as_str)
        .and_then(carried_version)
        .and_then(|v| tonic::metadata::MetadataValue::try_from(v).ok());
    let mut response = object(result)?;
    if let Some(version) = version {
        response.metadata_mut().insert(WRITTEN_METADATA, version);
    }
    Ok(response)
}

/// The written version a read's metadata carries, if any.
fn carried_write<T>(request: &Request<T>) -> Option<String> {
    let value = request.metadata().get(WRITTEN_METADATA)?.to_str().ok()?;
    carried_version(value).map(str::to_owned)
}

impl GrpcApi {
    /// Serves `api`, authenticating callers with `authenticator`.
    pub fn new(api: Arc<dyn KairshipApi>, authenticator: Arc<dyn Authenticator>) -> GrpcApi {
        GrpcApi { api, authenticator }
    }

    /// The caller of `request`, from `authorization: Bearer <token>`.
    async fn authenticate<T>(&self, request: &Request<T>) -> Result<(Caller, BearerToken), Status> {
        let token = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(crate::transport::parse_bearer)
            .ok_or_else(|| {
                Status::unauthenticated(
                    "no bearer token: send the metadata `authorization: Bearer <token>`",
                )
            })?;
        match self.authenticator.authenticate(token).await {
            Ok(caller) => Ok((caller, BearerToken::new(token))),
            Err(err) => {
                let err = ApiError::from(err);
                debug_assert!(err.code != Code::Ok);
                Err(convert::status(&err))
            }
        }
    }

    /// The caller of `request` and its message converted with `convert`, in that order: an
    /// unauthenticated call is refused before its message is looked at.
    async fn accept<T, R>(
        &self,
        request: Request<T>,
        convert: impl FnOnce(T) -> Result<R, ApiError>,
    ) -> Result<(Caller, R), Status> {
        let (caller, _) = self.authenticate(&request).await?;
        let req = convert(request.into_inner()).map_err(|e| convert::status(&e))?;
        Ok((caller, req))
    }
}

#[tonic::async_trait]
impl KairshipService for GrpcApi {
    async fn list_instances(
        &self,
        request: Request<pb::ListInstancesRequest>,
    ) -> Answer<pb::ObjectList> {
        let (caller, req) = self.accept(request, instances::list_instances).await?;
        answer(
            self.api
                .list_instances(&caller, req)
                .await
                .and_then(convert::object_list),
        )
    }

    async fn get_instance(
        &self,
        request: Request<pb::GetInstanceRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self
            .accept(request, |m| Ok(instances::get_instance(m)))
            .await?;
        object(self.api.get_instance(&caller, req).await)
    }

    async fn create_instance(
        &self,
        request: Request<pb::CreateInstanceRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self.accept(request, instances::create_instance).await?;
        object(self.api.create_instance(&caller, req).await)
    }

    async fn update_instance(
        &self,
        request: Request<pb::UpdateInstanceRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self.accept(request, instances::update_instance).await?;
        object(self.api.update_instance(&caller, req).await)
    }

    async fn delete_instance(
        &self,
        request: Request<pb::DeleteInstanceRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self
            .accept(request, |m| Ok(instances::delete_instance(m)))
            .await?;
        object(self.api.delete_instance(&caller, req).await)
    }

    async fn create_kubeconfig(
        &self,
        request: Request<pb::CreateKubeconfigRequest>,
    ) -> Answer<pb::KubeconfigResponse> {
        let (caller, token) = self.authenticate(&request).await?;
        let base = request
            .extensions()
            .get::<RequestBaseUrl>()
            .and_then(|b| b.0.clone());
        let req = instances::create_kubeconfig(request.into_inner(), base);
        answer(
            self.api
                .create_kubeconfig(&caller, &token, req)
                .await
                .map(instances::kubeconfig),
        )
    }

    async fn list_clusters(
        &self,
        request: Request<pb::ListClustersRequest>,
    ) -> Answer<pb::ObjectList> {
        let (caller, req) = self.accept(request, members::list_clusters).await?;
        answer(
            self.api
                .list_clusters(&caller, req)
                .await
                .and_then(convert::object_list),
        )
    }

    async fn get_cluster(
        &self,
        request: Request<pb::GetClusterRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self
            .accept(request, |m| Ok(members::get_cluster(m)))
            .await?;
        object(self.api.get_cluster(&caller, req).await)
    }

    async fn join_cluster(
        &self,
        request: Request<pb::JoinClusterRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self.accept(request, members::join_cluster).await?;
        object(self.api.create_cluster(&caller, req).await)
    }

    async fn update_cluster(
        &self,
        request: Request<pb::UpdateClusterRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self.accept(request, members::update_cluster).await?;
        object(self.api.update_cluster(&caller, req).await)
    }

    async fn remove_cluster(
        &self,
        request: Request<pb::RemoveClusterRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self
            .accept(request, |m| Ok(members::remove_cluster(m)))
            .await?;
        object(self.api.remove_cluster(&caller, req).await)
    }

    async fn list_resources(
        &self,
        request: Request<pb::ListResourcesRequest>,
    ) -> Answer<pb::ObjectList> {
        let (caller, req) = self.accept(request, resources::list_resources).await?;
        answer(
            self.api
                .list_resources(&caller, req)
                .await
                .and_then(convert::object_list),
        )
    }

    async fn get_resource(
        &self,
        request: Request<pb::GetResourceRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self.accept(request, resources::get_resource).await?;
        object(self.api.get_resource(&caller, req).await)
    }

    async fn create_resource(
        &self,
        request: Request<pb::CreateResourceRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self.accept(request, resources::create_resource).await?;
        object(self.api.create_resource(&caller, req).await)
    }

    async fn update_resource(
        &self,
        request: Request<pb::UpdateResourceRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self.accept(request, resources::update_resource).await?;
        object(self.api.update_resource(&caller, req).await)
    }

    async fn delete_resource(
        &self,
        request: Request<pb::DeleteResourceRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self.accept(request, resources::delete_resource).await?;
        object(self.api.delete_resource(&caller, req).await)
    }

    async fn list_objects(
        &self,
        request: Request<pb::ListObjectsRequest>,
    ) -> Answer<pb::ObjectList> {
        let carried = carried_write(&request);
        let (caller, req) = self.accept(request, resources::list_objects).await?;
        if let Some(version) = carried {
            self.api.await_written(
                &req.instance,
                &req.group,
                &req.version,
                &req.resource,
                &version,
            );
        }
        answer(
            self.api
                .list_objects(&caller, req)
                .await
                .and_then(convert::object_list),
        )
    }

    async fn get_object(
        &self,
        request: Request<pb::GetObjectRequest>,
    ) -> Answer<prost_types::Struct> {
        let carried = carried_write(&request);
        let (caller, req) = self
            .accept(request, |m| Ok(resources::get_object(m)))
            .await?;
        if let Some(version) = carried {
            self.api.await_written(
                &req.instance,
                &req.group,
                &req.version,
                &req.resource,
                &version,
            );
        }
        object(self.api.get_object(&caller, req).await)
    }

    async fn create_object(
        &self,
        request: Request<pb::CreateObjectRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self.accept(request, resources::create_object).await?;
        written_object(self.api.create_object(&caller, req).await)
    }

    async fn update_object(
        &self,
        request: Request<pb::UpdateObjectRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self.accept(request, resources::update_object).await?;
        written_object(self.api.update_object(&caller, req).await)
    }

    async fn patch_object(
        &self,
        request: Request<pb::PatchObjectRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self.accept(request, resources::patch_object).await?;
        written_object(self.api.patch_object(&caller, req).await)
    }

    async fn delete_object(
        &self,
        request: Request<pb::DeleteObjectRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self
            .accept(request, |m| Ok(resources::delete_object(m)))
            .await?;
        object(self.api.delete_object(&caller, req).await)
    }

    async fn list_events(&self, request: Request<pb::ListEventsRequest>) -> Answer<pb::ObjectList> {
        let (caller, req) = self.accept(request, resources::list_events).await?;
        answer(
            self.api
                .list_events(&caller, req)
                .await
                .and_then(convert::object_list),
        )
    }

    async fn deployment_action(
        &self,
        request: Request<pb::DeploymentActionRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self
            .accept(request, workloads::deployment_action_request)
            .await?;
        object(self.api.deployment_action(&caller, req).await)
    }

    async fn list_workloads(
        &self,
        request: Request<pb::ListWorkloadsRequest>,
    ) -> Answer<pb::WorkloadList> {
        let (caller, req) = self.accept(request, workloads::list_workloads).await?;
        answer(
            self.api
                .list_workloads(&caller, req)
                .await
                .and_then(workloads::workload_list),
        )
    }

    async fn get_workload(&self, request: Request<pb::GetWorkloadRequest>) -> Answer<pb::Workload> {
        let (caller, req) = self
            .accept(request, |m| Ok(workloads::get_workload(m)))
            .await?;
        answer(
            self.api
                .get_workload(&caller, req)
                .await
                .and_then(workloads::workload),
        )
    }

    async fn create_application(
        &self,
        request: Request<pb::CreateApplicationRequest>,
    ) -> Answer<pb::ApplicationResult> {
        let (caller, req) = self
            .accept(request, |m| Ok(applications::create_application(m)))
            .await?;
        answer(
            self.api
                .create_application(&caller, req)
                .await
                .and_then(applications::application_result),
        )
    }

    async fn restart_job(
        &self,
        request: Request<pb::RestartJobRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self
            .accept(request, |m| Ok(applications::restart_job(m)))
            .await?;
        object(self.api.restart_job(&caller, req).await)
    }

    async fn cron_job_action(
        &self,
        request: Request<pb::CronJobActionRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self.accept(request, applications::cronjob_action).await?;
        object(self.api.cronjob_action(&caller, req).await)
    }

    async fn join_member(
        &self,
        request: Request<pb::JoinMemberRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self
            .accept(request, |m| Ok(super::members::join_member(m)))
            .await?;
        object(self.api.join_member(&caller, req).await)
    }

    async fn register_member(
        &self,
        request: Request<pb::RegisterMemberRequest>,
    ) -> Answer<pb::RegisterMemberResponse> {
        let (caller, req) = self
            .accept(request, |m| Ok(super::members::register_member(m)))
            .await?;
        answer(
            self.api
                .register_member(&caller, req)
                .await
                .and_then(super::members::register_member_response),
        )
    }

    async fn update_member(
        &self,
        request: Request<pb::UpdateMemberRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self.accept(request, super::members::update_member).await?;
        object(self.api.update_member(&caller, req).await)
    }

    async fn list_workload_pods(
        &self,
        request: Request<pb::ListWorkloadPodsRequest>,
    ) -> Answer<pb::ObjectList> {
        let (caller, req) = self
            .accept(request, super::workloads::list_workload_pods)
            .await?;
        answer(
            self.api
                .list_workload_pods(&caller, req)
                .await
                .and_then(convert::object_list),
        )
    }

    async fn list_member_nodes(
        &self,
        request: Request<pb::ListMemberNodesRequest>,
    ) -> Answer<pb::ObjectList> {
        let (caller, req) = self
            .accept(request, super::members::list_member_nodes)
            .await?;
        answer(
            self.api
                .list_member_nodes(&caller, req)
                .await
                .and_then(convert::object_list),
        )
    }

    async fn list_member_objects(
        &self,
        request: Request<pb::ListMemberObjectsRequest>,
    ) -> Answer<pb::ObjectList> {
        let (caller, req) = self
            .accept(request, super::members::list_member_objects)
            .await?;
        answer(
            self.api
                .list_member_objects(&caller, req)
                .await
                .and_then(convert::object_list),
        )
    }

    async fn get_member_object(
        &self,
        request: Request<pb::GetMemberObjectRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self
            .accept(request, |m| Ok(super::members::get_member_object(m)))
            .await?;
        object(self.api.get_member_object(&caller, req).await)
    }

    async fn promote_workload(
        &self,
        request: Request<pb::PromoteWorkloadRequest>,
    ) -> Answer<pb::PromoteWorkloadResponse> {
        let (caller, req) = self
            .accept(request, super::applications::promote_workload)
            .await?;
        answer(
            self.api
                .promote_workload(&caller, req)
                .await
                .and_then(super::applications::promote_response),
        )
    }

    async fn preview_placement(
        &self,
        request: Request<pb::PreviewPlacementRequest>,
    ) -> Answer<pb::PlacementPreview> {
        let (caller, req) = self
            .accept(request, |m| Ok(super::placement::preview_placement(m)))
            .await?;
        answer(
            self.api
                .preview_placement(&caller, req)
                .await
                .and_then(super::placement::placement_preview),
        )
    }

    async fn get_instance_drift(
        &self,
        request: Request<pb::GetInstanceDriftRequest>,
    ) -> Answer<pb::InstanceDrift> {
        let (caller, req) = self
            .accept(request, |m| Ok(super::drift::instance_drift_request(m)))
            .await?;
        answer(
            self.api
                .instance_drift(&caller, req)
                .await
                .and_then(super::drift::instance_drift),
        )
    }

    async fn get_object_drift(
        &self,
        request: Request<pb::GetObjectDriftRequest>,
    ) -> Answer<pb::ObjectDrift> {
        let (caller, req) = self
            .accept(request, |m| Ok(super::drift::object_drift_request(m)))
            .await?;
        answer(
            self.api
                .object_drift(&caller, req)
                .await
                .and_then(super::drift::object_drift),
        )
    }

    async fn list_audit(
        &self,
        request: Request<pb::ListAuditRequest>,
    ) -> Answer<pb::AuditRecordList> {
        let (caller, req) = self.accept(request, super::audit::list_audit).await?;
        answer(
            self.api
                .list_audit(&caller, req)
                .await
                .and_then(super::audit::audit_record_list),
        )
    }

    async fn list_api_resources(
        &self,
        request: Request<pb::ListApiResourcesRequest>,
    ) -> Answer<pb::ApiResourceList> {
        let (caller, req) = self
            .accept(request, |m| Ok(resources::list_api_resources(m)))
            .await?;
        answer(
            self.api
                .list_api_resources(&caller, req)
                .await
                .map(resources::api_resource_list),
        )
    }

    async fn search(&self, request: Request<pb::SearchRequest>) -> Answer<pb::SearchResult> {
        let (caller, req) = self.accept(request, super::search::search_request).await?;
        answer(
            self.api
                .search(&caller, req)
                .await
                .map(super::search::search_result),
        )
    }

    async fn adopt_instance(
        &self,
        request: Request<pb::AdoptInstanceRequest>,
    ) -> Answer<prost_types::Struct> {
        let (caller, req) = self
            .accept(request, |m| {
                Ok(crate::api::AdoptInstanceRequest {
                    instance: m.instance,
                    options: crate::api::AdoptInstanceOptions {
                        kubeconfig: m.kubeconfig,
                        alias: m.alias,
                        deletion_policy: m.deletion_policy,
                        secret_namespace: m.secret_namespace,
                        labels: m.labels.into_iter().collect(),
                    },
                })
            })
            .await?;
        object(self.api.adopt_instance(&caller, req).await)
    }
}
