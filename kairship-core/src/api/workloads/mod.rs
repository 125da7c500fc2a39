//! The workloads feature: Deployments joined with their per-cluster propagation status
//! ([`view`]), Deployment pause/resume/restart ([`actions`]), Job restarts and CronJob
//! suspension ([`jobs`]), and a workload's pods per member cluster.

pub mod actions;
pub mod jobs;
mod service;
pub mod types;
pub mod view;

use async_trait::async_trait;

use crate::access::Caller;
use crate::api::members::streams::{ExecOptions, LogOptions, LogStream, MemberPod};
use crate::api::{ApiError, Code, Object, ObjectList};

pub use jobs::{CronJobAction, CronJobActionRequest, RestartJobRequest};
pub use types::{
    ClusterWorkloadStatus, DeploymentAction, DeploymentActionRequest, GetWorkloadRequest,
    ListWorkloadPodsRequest, ListWorkloadsRequest, Workload, WorkloadList,
};

/// The workloads part of [`KairshipApi`](crate::api::KairshipApi), which [`KairshipService`](crate::api::KairshipService)
/// implements.
#[async_trait]
pub trait WorkloadsApi: Send + Sync {
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

    /// Pods of a workload in every member cluster its ResourceBinding places it on, read
    /// through Karmada's cluster proxy, each marked with its cluster.
    async fn list_workload_pods(
        &self,
        caller: &Caller,
        req: ListWorkloadPodsRequest,
    ) -> Result<ObjectList, ApiError> {
        let _ = (caller, req);
        Err(ApiError::new(
            Code::Unimplemented,
            "member-cluster views are not served by this implementation",
        ))
    }

    /// A member pod's container log, streamed as the member writes it when `follow`, read
    /// through Karmada's cluster proxy as the caller (`get` on the instance's proxy).
    async fn member_pod_log(
        &self,
        caller: &Caller,
        pod: MemberPod,
        options: LogOptions,
    ) -> Result<LogStream, ApiError> {
        let _ = (caller, pod, options);
        Err(ApiError::new(
            Code::Unimplemented,
            "member pod logs are not served by this implementation",
        ))
    }

    /// A command in a member pod's container over WebSocket (the member's `pods/exec`),
    /// through Karmada's cluster proxy as the caller (`create` on the instance's proxy).
    async fn member_pod_exec(
        &self,
        caller: &Caller,
        pod: MemberPod,
        options: ExecOptions,
    ) -> Result<kube::client::Connection, ApiError> {
        let _ = (caller, pod, options);
        Err(ApiError::new(
            Code::Unimplemented,
            "member pod terminals are not served by this implementation",
        ))
    }
}
