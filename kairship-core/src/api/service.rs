//! The service trait every transport (REST, gRPC) calls.

use async_trait::async_trait;

use super::applications::{ApplicationResult, CreateApplicationRequest};
use super::error::ApiError;
use super::instance_create::AdoptInstanceRequest;
use super::job_actions::{CronJobActionRequest, RestartJobRequest};
use super::members::types::{
    JoinMemberRequest, RegisterMemberRequest, RegisterMemberResponse, UpdateMemberRequest,
};
use super::types::{
    CreateInstanceRequest, CreateKubeconfigRequest, CreateObjectRequest, CreateResourceRequest,
    DeleteInstanceRequest, DeleteObjectRequest, DeleteResourceRequest, DeploymentActionRequest,
    GetClusterRequest, GetInstanceRequest, GetObjectRequest, GetResourceRequest,
    GetWorkloadRequest, JoinClusterRequest, KubeconfigResponse, ListClustersRequest,
    ListEventsRequest, ListInstancesRequest, ListObjectsRequest, ListResourcesRequest,
    ListWorkloadsRequest, Object, ObjectList, PatchObjectRequest, RemoveClusterRequest,
    UpdateClusterRequest, UpdateInstanceRequest, UpdateObjectRequest, UpdateResourceRequest,
    Workload, WorkloadList,
};
use crate::access::Caller;

/// The bearer token a caller authenticated with, handed to the one method that needs it
/// ([`KairshipApi::create_kubeconfig`] writes it into the kubeconfig). Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(String);

impl BearerToken {
    /// Wraps a token.
    pub fn new(token: impl Into<String>) -> BearerToken {
        BearerToken(token.into())
    }

    /// The token.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

/// The Kairship API. One implementation ([`KairshipService`](super::KairshipService)); REST
/// and gRPC are thin adapters that authenticate the caller, build the request message and
/// call one method each, so the two transports never disagree.
///
/// Every method checks that `caller` may apply the method's verb to the instance before it
/// touches anything; writes a caller may not make are never forwarded.
#[async_trait]
pub trait KairshipApi: Send + Sync {
    /// Instances the caller may `get`, filtered, sorted and paged.
    async fn list_instances(
        &self,
        caller: &Caller,
        req: ListInstancesRequest,
    ) -> Result<ObjectList, ApiError>;

    /// One Instance.
    async fn get_instance(
        &self,
        caller: &Caller,
        req: GetInstanceRequest,
    ) -> Result<Object, ApiError>;

    /// Creates an Instance.
    async fn create_instance(
        &self,
        caller: &Caller,
        req: CreateInstanceRequest,
    ) -> Result<Object, ApiError>;

    /// Replaces an Instance.
    async fn update_instance(
        &self,
        caller: &Caller,
        req: UpdateInstanceRequest,
    ) -> Result<Object, ApiError>;

    /// Deletes an Instance; `FailedPrecondition` while member clusters are joined (unless the
    /// Instance carries the force-delete annotation).
    async fn delete_instance(
        &self,
        caller: &Caller,
        req: DeleteInstanceRequest,
    ) -> Result<Object, ApiError>;

    /// A kubeconfig reaching the instance through the native proxy as the caller (`token` is
    /// the caller's own bearer token).
    async fn create_kubeconfig(
        &self,
        caller: &Caller,
        token: &BearerToken,
        req: CreateKubeconfigRequest,
    ) -> Result<KubeconfigResponse, ApiError>;

    /// Member clusters of an instance.
    async fn list_clusters(
        &self,
        caller: &Caller,
        req: ListClustersRequest,
    ) -> Result<ObjectList, ApiError>;

    /// One member cluster.
    async fn get_cluster(
        &self,
        caller: &Caller,
        req: GetClusterRequest,
    ) -> Result<Object, ApiError>;

    /// Joins a member cluster (creates its Cluster object).
    async fn join_cluster(
        &self,
        caller: &Caller,
        req: JoinClusterRequest,
    ) -> Result<Object, ApiError>;

    /// Replaces a member Cluster object.
    async fn update_cluster(
        &self,
        caller: &Caller,
        req: UpdateClusterRequest,
    ) -> Result<Object, ApiError>;

    /// Unjoins a member cluster: `FailedPrecondition` while ResourceBindings or
    /// ClusterResourceBindings still schedule to it (unless `force`); then deletes the
    /// `Cluster`, the credential Secrets in the instance and, for a Push join, with the stored
    /// credentials, the objects the join created in the member.
    async fn remove_cluster(
        &self,
        caller: &Caller,
        req: RemoveClusterRequest,
    ) -> Result<Object, ApiError>;

    /// Objects of one kind.
    async fn list_resources(
        &self,
        caller: &Caller,
        req: ListResourcesRequest,
    ) -> Result<ObjectList, ApiError>;

    /// One object.
    async fn get_resource(
        &self,
        caller: &Caller,
        req: GetResourceRequest,
    ) -> Result<Object, ApiError>;

    /// Creates an object.
    async fn create_resource(
        &self,
        caller: &Caller,
        req: CreateResourceRequest,
    ) -> Result<Object, ApiError>;

    /// Replaces an object.
    async fn update_resource(
        &self,
        caller: &Caller,
        req: UpdateResourceRequest,
    ) -> Result<Object, ApiError>;

    /// Deletes an object; `FailedPrecondition` for a (Cluster)PropagationPolicy that a
    /// ResourceBinding still uses.
    async fn delete_resource(
        &self,
        caller: &Caller,
        req: DeleteResourceRequest,
    ) -> Result<Object, ApiError>;

    /// Objects of any resource the instance serves (found by the instance's discovery; an
    /// unknown group, version or resource is `NotFound`).
    async fn list_objects(
        &self,
        caller: &Caller,
        req: ListObjectsRequest,
    ) -> Result<ObjectList, ApiError>;

    /// One object of any resource.
    async fn get_object(&self, caller: &Caller, req: GetObjectRequest) -> Result<Object, ApiError>;

    /// Creates an object of any resource.
    async fn create_object(
        &self,
        caller: &Caller,
        req: CreateObjectRequest,
    ) -> Result<Object, ApiError>;

    /// Replaces an object of any resource.
    async fn update_object(
        &self,
        caller: &Caller,
        req: UpdateObjectRequest,
    ) -> Result<Object, ApiError>;

    /// Patches an object of any resource (merge, JSON, strategic merge or apply).
    async fn patch_object(
        &self,
        caller: &Caller,
        req: PatchObjectRequest,
    ) -> Result<Object, ApiError>;

    /// Deletes an object of any resource; a (Cluster)PropagationPolicy still in use is kept,
    /// as with [`KairshipApi::delete_resource`].
    async fn delete_object(
        &self,
        caller: &Caller,
        req: DeleteObjectRequest,
    ) -> Result<Object, ApiError>;

    /// Events of an instance, a namespace or one object, filtered by type, reason and kind.
    async fn list_events(
        &self,
        caller: &Caller,
        req: ListEventsRequest,
    ) -> Result<ObjectList, ApiError>;

    /// Pauses, resumes or restarts a Deployment; returns the patched Deployment.
    async fn deployment_action(
        &self,
        caller: &Caller,
        req: DeploymentActionRequest,
    ) -> Result<Object, ApiError>;

    /// Deployments of a namespace with their per-cluster status.
    async fn list_workloads(
        &self,
        caller: &Caller,
        req: ListWorkloadsRequest,
    ) -> Result<WorkloadList, ApiError>;

    /// One Deployment with its per-cluster status.
    async fn get_workload(
        &self,
        caller: &Caller,
        req: GetWorkloadRequest,
    ) -> Result<Workload, ApiError>;

    /// Creates a multicloud application in one call: its workload, Service,
    /// PropagationPolicy and per-cluster OverridePolicies, in that order, or none of them (a
    /// failure removes what the call created); a dry run creates nothing and returns the
    /// objects as the instance would store them.
    async fn create_application(
        &self,
        caller: &Caller,
        req: CreateApplicationRequest,
    ) -> Result<ApplicationResult, ApiError>;

    /// Re-runs a Job: deletes it and creates it from its spec (`Aborted` while it runs).
    async fn restart_job(
        &self,
        caller: &Caller,
        req: RestartJobRequest,
    ) -> Result<Object, ApiError>;

    /// Suspends or resumes a CronJob (`Aborted` when it already is in that state).
    async fn cronjob_action(
        &self,
        caller: &Caller,
        req: CronJobActionRequest,
    ) -> Result<Object, ApiError>;

    /// Joins a member cluster in Push mode from its kubeconfig: least-privilege RBAC and a
    /// token in the member, credential Secrets and the `Cluster` in the instance. Idempotent;
    /// a failure removes what the call created and names the failed step.
    async fn join_member(
        &self,
        caller: &Caller,
        req: JoinMemberRequest,
    ) -> Result<Object, ApiError>;

    /// Prepares a Pull-mode join: a bootstrap token, the agent's RBAC and the `Cluster` in the
    /// instance; returns the manifests to apply in the member.
    async fn register_member(
        &self,
        caller: &Caller,
        req: RegisterMemberRequest,
    ) -> Result<RegisterMemberResponse, ApiError>;

    /// Changes labels, taints, provider, region or zone of a member cluster.
    async fn update_member(
        &self,
        caller: &Caller,
        req: UpdateMemberRequest,
    ) -> Result<Object, ApiError>;

    /// Pods of a workload in every member cluster its ResourceBinding places it on, read
    /// through Karmada's cluster proxy, each marked with its cluster.
    async fn list_workload_pods(
        &self,
        caller: &Caller,
        req: super::member_types::ListWorkloadPodsRequest,
    ) -> Result<ObjectList, ApiError> {
        let _ = (caller, req);
        Err(ApiError::new(
            super::error::Code::Unimplemented,
            "member-cluster views are not served by this implementation",
        ))
    }

    /// Nodes of one member cluster, through Karmada's cluster proxy.
    async fn list_member_nodes(
        &self,
        caller: &Caller,
        req: super::member_types::ListMemberNodesRequest,
    ) -> Result<ObjectList, ApiError> {
        let _ = (caller, req);
        Err(ApiError::new(
            super::error::Code::Unimplemented,
            "member-cluster views are not served by this implementation",
        ))
    }

    /// Objects of any resource of one member cluster, through Karmada's cluster proxy.
    async fn list_member_objects(
        &self,
        caller: &Caller,
        req: super::member_types::ListMemberObjectsRequest,
    ) -> Result<ObjectList, ApiError> {
        let _ = (caller, req);
        Err(ApiError::new(
            super::error::Code::Unimplemented,
            "member-cluster views are not served by this implementation",
        ))
    }

    /// One object of a member cluster, through Karmada's cluster proxy.
    async fn get_member_object(
        &self,
        caller: &Caller,
        req: super::member_types::GetMemberObjectRequest,
    ) -> Result<Object, ApiError> {
        let _ = (caller, req);
        Err(ApiError::new(
            super::error::Code::Unimplemented,
            "member-cluster views are not served by this implementation",
        ))
    }

    /// Takes a workload of a member cluster into the instance with the ConfigMaps and Secrets
    /// it refers to and a PropagationPolicy keeping it there; all or nothing, or a dry run.
    async fn promote_workload(
        &self,
        caller: &Caller,
        req: super::member_types::PromoteWorkloadRequest,
    ) -> Result<super::member_types::PromoteWorkloadResponse, ApiError> {
        let _ = (caller, req);
        Err(ApiError::new(
            super::error::Code::Unimplemented,
            "member-cluster views are not served by this implementation",
        ))
    }

    /// Adopts a Karmada from a kubeconfig given inline: stores it in a Secret on the host
    /// (labelled with the instance, owned by the Instance) and creates the Adopt-mode
    /// Instance pointing at it, both or neither. The kubeconfig is never returned.
    async fn adopt_instance(
        &self,
        caller: &Caller,
        req: AdoptInstanceRequest,
    ) -> Result<Object, ApiError>;
}
