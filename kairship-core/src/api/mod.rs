//! The Kairship API: one service, served over REST (and gRPC), on one port with the native
//! proxy.
//!
//! # The service trait
//!
//! [`KairshipApi`] (async-trait, object safe) is the whole API; [`KairshipService`] is its one
//! implementation. Every method takes the authenticated [`Caller`](crate::access::Caller)
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
//! | `join_cluster` | [`JoinClusterRequest`] | [`Object`] | `POST instances/{i}/clusters` |
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
//! | `promote_workload` | [`PromoteWorkloadRequest`] | [`PromoteWorkloadResponse`] | `POST instances/{i}/clusters/{c}/namespaces/{ns}/{kind}/{name}:promote` |
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

mod application_calls;
mod clients;
mod error;
mod inside;
mod kinds;
mod service;
mod types;

pub mod actions;
pub mod applications;
pub mod body;
pub mod fields;
pub mod instance_create;
pub mod job_actions;
pub mod kairship;
pub mod kubeconfig;
pub mod list;
pub mod member_types;
pub mod members;
pub mod openapi;
pub mod references;
pub mod rest;
pub mod server;
pub mod tls;
pub mod workload;

pub use applications::{
    ApplicationPort, ApplicationResult, ApplicationService, ApplicationSpec, ClusterOverride,
    CreateApplicationRequest, EnvVar, Placement, cluster_zones,
};
pub use clients::{ClientFate, HostInstanceClients, client_fate};
pub use error::{ApiError, BAD_REQUEST_TYPE, Code, PRECONDITION_FAILURE_TYPE, code_of_http_status};
pub use instance_create::{AdoptInstanceOptions, AdoptInstanceRequest};
pub use job_actions::{CronJobAction, CronJobActionRequest, RestartJobRequest};
pub use kairship::{KairshipService, ServiceConfig};
pub use kinds::{
    POLICY_GROUP, ResourceKind, cluster_resource_bindings_resource, clusters_resource,
    resource_bindings_resource,
};
pub use members::types::{
    JoinMemberRequest, MemberTaint, RegisterMemberRequest, RegisterMemberResponse,
    UpdateMemberRequest,
};
pub use service::{BearerToken, KairshipApi};
pub use types::{
    CORE_GROUP, ClusterWorkloadStatus, CreateInstanceRequest, CreateKubeconfigRequest,
    CreateObjectRequest, CreateResourceRequest, DeleteInstanceRequest, DeleteObjectRequest,
    DeleteResourceRequest, DeploymentAction, DeploymentActionRequest, GetClusterRequest,
    GetInstanceRequest, GetObjectRequest, GetResourceRequest, GetWorkloadRequest,
    JoinClusterRequest, KubeObject, KubeconfigOptions, KubeconfigResponse, ListClustersRequest,
    ListEventsRequest, ListInstancesRequest, ListObjectsRequest, ListOptions, ListResourcesRequest,
    ListWorkloadsRequest, Object, ObjectList, Pagination, PatchObjectRequest, PatchType,
    RemoveClusterRequest, SortBy, SortDir, UpdateClusterRequest, UpdateInstanceRequest,
    UpdateObjectRequest, UpdateResourceRequest, Workload, WorkloadList,
};

pub use member_types::{
    CLUSTER_ANNOTATION, GetMemberObjectRequest, ListMemberNodesRequest, ListMemberObjectsRequest,
    ListWorkloadPodsRequest, PromoteWorkloadRequest, PromoteWorkloadResponse, WorkloadKind,
};

/// Prefix of every REST path.
pub const API_PREFIX: &str = "/apis/kairship.io/v1alpha1";
