//! [`WorkloadsApi`](super::WorkloadsApi) as [`KairshipService`] implements it.

use std::collections::HashSet;

use async_trait::async_trait;
use kube::api::{Patch, PatchParams};
use serde_json::Value;

use super::WorkloadsApi;
use crate::access::{Caller, Verb};
use crate::api::inside::Inside;
use crate::api::kairship::KairshipService;
use crate::api::kairship::gvr;
use crate::api::kinds::{ResourceKind, resource_bindings_resource};
use crate::api::list::pagination;
use crate::api::members::streams::{ExecOptions, LogOptions, LogStream, MemberPod};
use crate::api::workloads::actions::{check_action, deployment_patch};
use crate::api::workloads::view::{deployment_binding_name, parse_binding, workload};
use crate::api::{
    ApiError, CronJobActionRequest, DeploymentAction, DeploymentActionRequest, GetWorkloadRequest,
    ListWorkloadPodsRequest, ListWorkloadsRequest, Object, ObjectList, RestartJobRequest, Workload,
    WorkloadKind, WorkloadList,
};
use crate::router::ResourceTarget;

#[async_trait]
impl WorkloadsApi for KairshipService {
    async fn deployment_action(
        &self,
        caller: &Caller,
        req: DeploymentActionRequest,
    ) -> Result<Object, ApiError> {
        let (namespace, name, action) = (req.namespace.as_str(), req.name.as_str(), req.action);
        let kind = req.kind.unwrap_or(WorkloadKind::Deployments);
        check_action(kind, action)?;
        let call = match kind {
            WorkloadKind::Deployments => Inside::kind(
                &req.instance,
                ResourceKind::Deployments,
                Some(namespace),
                Verb::Patch,
                format!("{} deployments", action.as_str()),
            ),
            // StatefulSets and DaemonSets are found by the instance's discovery.
            _ => Inside::generic(
                &req.instance,
                gvr(kind.group(), "v1", kind.plural()),
                Some(namespace),
                Verb::Patch,
                action.as_str(),
            ),
        }
        .named("name", name);
        self.inside(caller, call, |c| async move {
            if kind == WorkloadKind::Deployments && action == DeploymentAction::Restart {
                // As kubectl: a paused Deployment would not roll out the restart.
                let current = self.router.get(&c.target, name).await?;
                if current.data.pointer("/spec/paused") == Some(&Value::Bool(true)) {
                    return Err(ApiError::failed_precondition(format!(
                        "deployment {namespace}/{name} is paused: resume it before restarting"
                    )));
                }
            }
            let patch = deployment_patch(action, jiff::Timestamp::now());
            let outcome = self
                .router
                .patch(
                    &c.target,
                    name,
                    &Patch::Merge(patch),
                    &PatchParams::default(),
                )
                .await?;
            Ok(outcome.object)
        })
        .await
    }

    async fn list_workloads(
        &self,
        caller: &Caller,
        req: ListWorkloadsRequest,
    ) -> Result<WorkloadList, ApiError> {
        let (instance, namespace) = (req.instance.as_str(), req.namespace.as_str());
        let call = Inside::kind(
            instance,
            ResourceKind::Deployments,
            Some(namespace),
            Verb::Get,
            "list workloads",
        )
        .listing(&req.options);
        self.inside(caller, call, |c| async move {
            let page = self.router.list(&c.target, &c.query).await?;
            let wanted: HashSet<String> = page
                .items
                .iter()
                .filter_map(|d| d.metadata.name.as_deref().map(deployment_binding_name))
                .collect();
            let bindings = self.bindings_named(instance, namespace, &wanted).await?;
            let items = page
                .items
                .iter()
                .map(|deployment| {
                    let name = deployment.metadata.name.as_deref().unwrap_or_default();
                    let binding = bindings
                        .get(&deployment_binding_name(name))
                        .and_then(|b| parse_binding(b));
                    workload(deployment, binding.as_ref())
                })
                .collect();
            Ok(WorkloadList {
                items,
                pagination: pagination(page.pagination),
            })
        })
        .await
    }

    async fn get_workload(
        &self,
        caller: &Caller,
        req: GetWorkloadRequest,
    ) -> Result<Workload, ApiError> {
        let (instance, namespace, name) = (
            req.instance.as_str(),
            req.namespace.as_str(),
            req.name.as_str(),
        );
        let call = Inside::kind(
            instance,
            ResourceKind::Deployments,
            Some(namespace),
            Verb::Get,
            "read workloads",
        )
        .named("name", name);
        self.inside(caller, call, |c| async move {
            let deployment = self.router.get(&c.target, name).await?;
            let bindings =
                ResourceTarget::namespaced(instance, resource_bindings_resource(), namespace);
            let binding = match self
                .router
                .get(&bindings, &deployment_binding_name(name))
                .await
            {
                Ok(b) => parse_binding(&b),
                Err(err) if err.is_not_found() => None,
                Err(err) => return Err(err.into()),
            };
            Ok(workload(&deployment, binding.as_ref()))
        })
        .await
    }

    async fn restart_job(
        &self,
        caller: &Caller,
        req: RestartJobRequest,
    ) -> Result<Object, ApiError> {
        self.run_restart_job(caller, req).await
    }

    async fn cronjob_action(
        &self,
        caller: &Caller,
        req: CronJobActionRequest,
    ) -> Result<Object, ApiError> {
        self.run_cronjob_action(caller, req).await
    }

    async fn list_workload_pods(
        &self,
        caller: &Caller,
        req: ListWorkloadPodsRequest,
    ) -> Result<ObjectList, ApiError> {
        self.workload_pods(caller, req).await
    }

    async fn member_pod_log(
        &self,
        caller: &Caller,
        pod: MemberPod,
        options: LogOptions,
    ) -> Result<LogStream, ApiError> {
        self.pod_log(caller, pod, options).await
    }

    async fn member_pod_exec(
        &self,
        caller: &Caller,
        pod: MemberPod,
        options: ExecOptions,
    ) -> Result<kube::client::Connection, ApiError> {
        self.pod_exec(caller, pod, options).await
    }
}
