//! The Kairship API: one service, served over REST (and gRPC), on one port with the native
//! proxy.
//!
//! # The service trait
//!
//! [`KairshipApi`] (async-trait, object safe) is the whole API: the sum of one trait per
//! feature ([`InstancesApi`], [`MembersApi`], [`ResourcesApi`], [`WorkloadsApi`],
//! [`ApplicationsApi`]), implemented by every type that implements them all.
//! [`KairshipService`] is its one implementation. Every method takes the authenticated [`Caller`](crate::access::Caller)
//! first and one request message, and returns one response message or an [`ApiError`]:
//!
//! | method | request | response | REST |
//! |---|---|---|---|
//! | `list_instances` | [`ListInstancesRequest`] | [`ObjectList`] | `GET instances` |
//! | `get_instance` | [`GetInstanceRequest`] | [`Object`] | `GET instances/{i}` |
//! | `create_instance` | [`CreateInstanceRequest`] | [`Object`] | `POST instances` |
//! | `update_instance` | [`UpdateInstanceRequest`] | [`Object`] | `PUT instances/{i}` |
//! | `delete_instance` | [`DeleteInstanceRequest`] | [`Object`] | `DELETE instances/{i}` |
//! | `create_kubeconfig` (+ [`BearerToken`]) | [`CreateKubeconfigRequest`] | [`KubeconfigResponse`] | `POST instances/{i}/kubeconfig` |
//! | `list_clusters` | [`ListClustersRequest`] | [`ObjectList`] | `GET instances/{i}/clusters` |
//! | `get_cluster` | [`GetClusterRequest`] | [`Object`] | `GET instances/{i}/clusters/{c}` |
//! | `create_cluster` (gRPC `JoinCluster`) | [`JoinClusterRequest`] | [`Object`] | `POST instances/{i}/clusters` |
//! | `update_cluster` | [`UpdateClusterRequest`] | [`Object`] | `PUT instances/{i}/clusters/{c}` |
//! | `remove_cluster` | [`RemoveClusterRequest`] | [`Object`] | `DELETE instances/{i}/clusters/{c}[?force=true]` |
//! | `join_member` | [`JoinMemberRequest`] | [`Object`] | `POST instances/{i}/clusters:join` |
//! | `register_member` | [`RegisterMemberRequest`] | [`RegisterMemberResponse`] | `POST instances/{i}/clusters:register` |
//! | `update_member` | [`UpdateMemberRequest`] | [`Object`] | `PATCH instances/{i}/clusters/{c}` |
//! | `list_resources` | [`ListResourcesRequest`] | [`ObjectList`] | `GET instances/{i}[/namespaces/{ns}]/{kind}` |
//! | `get_resource` | [`GetResourceRequest`] | [`Object`] | `GET …/{kind}/{name}` |
//! | `create_resource` | [`CreateResourceRequest`] | [`Object`] | `POST …/{kind}` |
//! | `update_resource` | [`UpdateResourceRequest`] | [`Object`] | `PUT …/{kind}/{name}` |
//! | `delete_resource` | [`DeleteResourceRequest`] | [`Object`] | `DELETE …/{kind}/{name}` |
//! | `list_objects` | [`ListObjectsRequest`] | [`ObjectList`] | `GET instances/{i}[/namespaces/{ns}]/resources/{group}/{version}/{resource}` |
//! | `get_object` | [`GetObjectRequest`] | [`Object`] | `GET …/resources/{group}/{version}/{resource}/{name}` |
//! | `create_object` | [`CreateObjectRequest`] | [`Object`] | `POST …/resources/{group}/{version}/{resource}` |
//! | `update_object` | [`UpdateObjectRequest`] | [`Object`] | `PUT …/resources/{group}/{version}/{resource}/{name}` |
//! | `patch_object` | [`PatchObjectRequest`] | [`Object`] | `PATCH …/resources/{group}/{version}/{resource}/{name}` |
//! | `delete_object` | [`DeleteObjectRequest`] | [`Object`] | `DELETE …/resources/{group}/{version}/{resource}/{name}` |
//! | `list_events` | [`ListEventsRequest`] | [`ObjectList`] | `GET instances/{i}[/namespaces/{ns}]/events`, `GET …/resources/{group}/{version}/{resource}/{name}/events` |
//! | `list_api_resources` | [`ListApiResourcesRequest`] | [`ApiResourceList`] | `GET instances/{i}/apiresources` |
//! | `deployment_action` | [`DeploymentActionRequest`] | [`Object`] | `POST …/deployments/{name}:pause\|:resume\|:restart` |
//! | `list_workloads` | [`ListWorkloadsRequest`] | [`WorkloadList`] | `GET instances/{i}/namespaces/{ns}/workloads` |
//! | `get_workload` | [`GetWorkloadRequest`] | [`Workload`] | `GET …/workloads/{name}` |
//! | `create_application` | [`CreateApplicationRequest`] | [`ApplicationResult`] | `POST instances/{i}/namespaces/{ns}/applications` |
//! | `restart_job` | [`RestartJobRequest`] | [`Object`] | `POST …/jobs/{name}:restart` |
//! | `cronjob_action` | [`CronJobActionRequest`] | [`Object`] | `POST …/cronjobs/{name}:pause\|:resume` |
//! | `list_workload_pods` | [`ListWorkloadPodsRequest`] | [`ObjectList`] | `GET …/namespaces/{ns}/{kind}/{name}/pods` |
//! | `list_member_nodes` | [`ListMemberNodesRequest`] | [`ObjectList`] | `GET instances/{i}/clusters/{c}/nodes` |
//! | `list_member_objects` | [`ListMemberObjectsRequest`] | [`ObjectList`] | `GET instances/{i}/clusters/{c}[/namespaces/{ns}]/resources/{group}/{version}/{resource}` |
//! | `get_member_object` | [`GetMemberObjectRequest`] | [`Object`] | `GET …/clusters/{c}[/namespaces/{ns}]/resources/{group}/{version}/{resource}/{name}` |
//! | `list_audit` | [`ListAuditRequest`] | [`AuditRecordList`] | `GET audit` |
//! | `search` | [`SearchRequest`] | [`SearchResult`] | `GET search` |
//! | `promote_workload` | [`PromoteWorkloadRequest`] | [`PromoteWorkloadResponse`] | `POST instances/{i}/clusters/{c}/namespaces/{ns}/{kind}/{name}:promote` |
//! | `preview_placement` | [`PreviewPlacementRequest`] | [`PlacementPreview`] | `POST instances/{i}/placements:preview` |
//! | `instance_drift` | [`GetInstanceDriftRequest`] | [`InstanceDrift`] | `GET instances/{i}/drift` |
//! | `object_drift` | [`GetObjectDriftRequest`] | [`ObjectDrift`] | `GET …/namespaces/{ns}/resources/{group}/{version}/{resource}/{name}/drift` |
//!
//! REST paths are under [`API_PREFIX`]. Messages are plain serde structs (camelCase JSON,
//! unknown fields rejected); Kubernetes objects travel as JSON ([`Object`];
//! `google.protobuf.Struct` in proto); [`ResourceKind`], [`SortBy`], [`SortDir`] and
//! [`DeploymentAction`] are enums. Errors are `{code, message, details}` with the gRPC
//! [`Code`] number in `code`; [`ApiError::http_status`] gives grpc-gateway's HTTP status.
//!
//! # Behaviour
//!
//! Reads inside an instance go through the router's read backend (the cache, falling back to
//! the instance), writes through its write backend (the instance apiserver), so a caller
//! always reads its own writes. Instances are read and written on the host cluster. Access:
//! listing shows only instances the caller may `get`; every instance-scoped call is
//! authorized for its verb on that instance before anything is read or forwarded, on
//! `instances` for the Instance object itself and on `instances/proxy` for anything inside it.

//!
//! # Where things live
//!
//! Each feature is one folder holding its messages (`types.rs`), its trait (`mod.rs`), its
//! implementation on [`KairshipService`] (`service.rs`) and its plain logic: [`instances`],
//! [`members`], [`resources`], [`workloads`], [`applications`]. What they share (errors,
//! bodies, field paths, lists, kinds, the calls inside an instance) lives beside them here.
//! The transports are thin layers with the same feature names outside this module:
//! [`crate::rest`], [`crate::grpc`] and [`crate::console`]; nothing here imports them.

mod clients;
mod error;
mod inside;
mod kinds;
mod service;
mod types;

pub mod applications;
pub mod audit;
pub mod body;
pub mod drift;
pub mod fields;
pub mod instances;
pub mod kairship;
pub mod list;
pub mod members;
pub mod placement;
pub mod references;
pub mod resources;
pub mod search;
pub mod tls;
pub mod workloads;

pub use applications::{
    APPLICATION_LABEL, ApplicationPort, ApplicationResult, ApplicationService, ApplicationSpec,
    ApplicationsApi, ClusterOverride, CreateApplicationRequest, EnvVar, Placement,
    PromoteWorkloadRequest, PromoteWorkloadResponse, cluster_zones,
};
pub use audit::{AuditApi, AuditRecordList, ListAuditRequest};
pub use clients::{ClientFate, HostInstanceClients, client_fate};
pub use drift::{
    DriftApi, GetInstanceDriftRequest, GetObjectDriftRequest, InstanceDrift, ObjectDrift,
};
pub use error::{ApiError, BAD_REQUEST_TYPE, Code, PRECONDITION_FAILURE_TYPE, code_of_http_status};
pub use instances::{
    AdoptInstanceOptions, AdoptInstanceRequest, BearerToken, CreateInstanceRequest,
    CreateKubeconfigRequest, DeleteInstanceRequest, GetInstanceRequest, InstancesApi,
    KubeconfigOptions, KubeconfigResponse, ListInstancesRequest, UpdateInstanceRequest,
};
pub use kairship::{KairshipService, ServiceConfig};
pub use kinds::{
    POLICY_GROUP, ResourceKind, cluster_resource_bindings_resource, clusters_resource,
    resource_bindings_resource,
};
pub use members::{
    CLUSTER_ANNOTATION, GetClusterRequest, GetMemberObjectRequest, JoinClusterRequest,
    JoinMemberRequest, ListClustersRequest, ListMemberNodesRequest, ListMemberObjectsRequest,
    MemberTaint, MembersApi, RegisterMemberRequest, RegisterMemberResponse, RemoveClusterRequest,
    UpdateClusterRequest, UpdateMemberRequest, WorkloadKind,
};
pub use placement::{
    PlacementApi, PlacementPreview, PlacementPreviewSpec, PreviewPlacementRequest,
};
pub use resources::{
    ApiResourceInfo, ApiResourceList, CreateObjectRequest, CreateResourceRequest,
    DeleteObjectRequest, DeleteResourceRequest, GetObjectRequest, GetResourceRequest,
    ListApiResourcesRequest, ListEventsRequest, ListObjectsRequest, ListResourcesRequest,
    PatchObjectRequest, PatchType, RenderedItems, RenderedObjectList, ResourcesApi,
    UpdateObjectRequest, UpdateResourceRequest,
};
pub use search::{
    InstanceTotal, SearchApi, SearchHit, SearchRequest, SearchResult, UnavailableInstance,
};
pub use service::KairshipApi;
pub use types::{
    CORE_GROUP, KubeObject, ListOptions, Object, ObjectList, Pagination, SortBy, SortDir,
};
pub use workloads::{
    ClusterWorkloadStatus, CronJobAction, CronJobActionRequest, DeploymentAction,
    DeploymentActionRequest, GetWorkloadRequest, ListWorkloadPodsRequest, ListWorkloadsRequest,
    RestartJobRequest, Workload, WorkloadList, WorkloadsApi,
};

/// The API's traits, to call [`KairshipApi`]'s methods: `use kairship_core::api::prelude::*`.
pub mod prelude {
    pub use super::{
        ApplicationsApi, AuditApi, InstancesApi, KairshipApi, MembersApi, ResourcesApi,
        WorkloadsApi,
    };
    pub use super::{DriftApi, PlacementApi, SearchApi};
}

/// Prefix of every REST path.
pub const API_PREFIX: &str = "/apis/kairship.io/v1alpha1";
