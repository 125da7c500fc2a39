//! [`MembersApi`](super::MembersApi) as [`KairshipService`] implements it.

use async_trait::async_trait;

use super::MembersApi;
use crate::access::{Caller, Verb};
use crate::api::inside::Inside;
use crate::api::kairship::KairshipService;
use crate::api::{
    ApiError, GetClusterRequest, GetMemberObjectRequest, JoinClusterRequest, JoinMemberRequest,
    ListClustersRequest, ListMemberNodesRequest, ListMemberObjectsRequest, Object, ObjectList,
    RegisterMemberRequest, RegisterMemberResponse, RemoveClusterRequest, UpdateClusterRequest,
    UpdateMemberRequest,
};

#[async_trait]
impl MembersApi for KairshipService {
    async fn list_clusters(
        &self,
        caller: &Caller,
        req: ListClustersRequest,
    ) -> Result<ObjectList, ApiError> {
        let call = Inside::clusters(&req.instance, Verb::Get, "list member clusters")
            .listing(&req.options);
        self.list_inside(caller, call).await
    }

    async fn get_cluster(
        &self,
        caller: &Caller,
        req: GetClusterRequest,
    ) -> Result<Object, ApiError> {
        let cluster = req.cluster.as_str();
        let call = Inside::clusters(&req.instance, Verb::Get, "read member clusters")
            .named("cluster", cluster);
        self.get_inside(caller, call, cluster, "a cluster").await
    }

    async fn create_cluster(
        &self,
        caller: &Caller,
        req: JoinClusterRequest,
    ) -> Result<Object, ApiError> {
        let call = Inside::clusters(&req.instance, Verb::Create, "join member clusters")
            .with_body(req.body);
        self.create_inside(caller, call).await
    }

    async fn update_cluster(
        &self,
        caller: &Caller,
        req: UpdateClusterRequest,
    ) -> Result<Object, ApiError> {
        let cluster = req.cluster.as_str();
        let call = Inside::clusters(&req.instance, Verb::Update, "update member clusters")
            .named("cluster", cluster)
            .with_body(req.body);
        self.replace_inside(caller, call, cluster).await
    }

    async fn remove_cluster(
        &self,
        caller: &Caller,
        req: RemoveClusterRequest,
    ) -> Result<Object, ApiError> {
        self.unjoin(caller, req).await
    }

    async fn join_member(
        &self,
        caller: &Caller,
        req: JoinMemberRequest,
    ) -> Result<Object, ApiError> {
        self.push_join(caller, req).await
    }

    async fn register_member(
        &self,
        caller: &Caller,
        req: RegisterMemberRequest,
    ) -> Result<RegisterMemberResponse, ApiError> {
        self.pull_register(caller, req).await
    }

    async fn update_member(
        &self,
        caller: &Caller,
        req: UpdateMemberRequest,
    ) -> Result<Object, ApiError> {
        self.member_update(caller, req).await
    }

    async fn list_member_nodes(
        &self,
        caller: &Caller,
        req: ListMemberNodesRequest,
    ) -> Result<ObjectList, ApiError> {
        self.member_nodes(caller, req).await
    }

    async fn list_member_objects(
        &self,
        caller: &Caller,
        req: ListMemberObjectsRequest,
    ) -> Result<ObjectList, ApiError> {
        self.member_objects(caller, req).await
    }

    async fn get_member_object(
        &self,
        caller: &Caller,
        req: GetMemberObjectRequest,
    ) -> Result<Object, ApiError> {
        self.member_object(caller, req).await
    }
}
