//! The members feature: a Karmada instance's member clusters. The `Cluster` objects
//! themselves (list, read, create, replace, unjoin), joining for real (Push joins from the
//! member's kubeconfig, Pull registrations for the agent, typed updates; [`join`]) and the
//! views of what the members hold through Karmada's cluster proxy ([`views`]).

pub mod agent;
pub mod join;
pub mod objects;
mod service;
pub mod streams;
pub mod types;
pub mod view_types;
pub mod views;

use async_trait::async_trait;

use crate::access::Caller;
use crate::api::{ApiError, Code, Object, ObjectList};

pub use types::{
    GetClusterRequest, JoinClusterRequest, JoinMemberRequest, ListClustersRequest, MemberTaint,
    RegisterMemberRequest, RegisterMemberResponse, RemoveClusterRequest, UpdateClusterRequest,
    UpdateMemberRequest,
};
pub use view_types::{
    CLUSTER_ANNOTATION, GetMemberObjectRequest, ListMemberNodesRequest, ListMemberObjectsRequest,
    WorkloadKind,
};

/// The members part of [`KairshipApi`](crate::api::KairshipApi), which [`KairshipService`](crate::api::KairshipService)
/// implements.
#[async_trait]
pub trait MembersApi: Send + Sync {
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

    /// Creates a member's `Cluster` object as sent; joins nothing (see [`MembersApi::join_member`]
    /// and [`MembersApi::register_member`]). gRPC calls it `JoinCluster`.
    async fn create_cluster(
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

    /// Nodes of one member cluster, through Karmada's cluster proxy.
    async fn list_member_nodes(
        &self,
        caller: &Caller,
        req: ListMemberNodesRequest,
    ) -> Result<ObjectList, ApiError> {
        let _ = (caller, req);
        Err(ApiError::new(
            Code::Unimplemented,
            "member-cluster views are not served by this implementation",
        ))
    }

    /// Objects of any resource of one member cluster, through Karmada's cluster proxy.
    async fn list_member_objects(
        &self,
        caller: &Caller,
        req: ListMemberObjectsRequest,
    ) -> Result<ObjectList, ApiError> {
        let _ = (caller, req);
        Err(ApiError::new(
            Code::Unimplemented,
            "member-cluster views are not served by this implementation",
        ))
    }

    /// One object of a member cluster, through Karmada's cluster proxy.
    async fn get_member_object(
        &self,
        caller: &Caller,
        req: GetMemberObjectRequest,
    ) -> Result<Object, ApiError> {
        let _ = (caller, req);
        Err(ApiError::new(
            Code::Unimplemented,
            "member-cluster views are not served by this implementation",
        ))
    }
}
