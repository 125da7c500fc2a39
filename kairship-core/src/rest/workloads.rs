//! REST handlers of the workloads feature: `…/workloads[/{name}]`, the Deployment, Job and
//! CronJob verbs (`{name}:pause`, `:resume`, `:restart`) and a workload's pods per member.

use axum::Json;
use axum::extract::State;

use super::extract::{ApiPath, ApiQuery, Authenticated};
use super::handler::{Answer, ErrorResponses, ReadErrorResponses, RestState, workload_kind};
use super::resources::parse_kind;
use crate::api::workloads::jobs::{CronJobAction, CronJobActionRequest, RestartJobRequest};
use crate::api::{
    ApiError, DeploymentAction, DeploymentActionRequest, GetWorkloadRequest, ListOptions,
    ListWorkloadsRequest, Object, ObjectList, ResourceKind, Workload, WorkloadList,
};
use crate::api::{ListWorkloadPodsRequest, WorkloadKind};

/// `name` of `name:verb` and the deployment verb.
fn parse_action(segment: &str) -> Result<(String, DeploymentAction), ApiError> {
    let Some((name, verb)) = segment.rsplit_once(':') else {
        return Err(ApiError::not_found(format!(
            "POST on an object needs a verb: {segment}:pause, :resume or :restart"
        )));
    };
    let action = DeploymentAction::parse(verb).ok_or_else(|| {
        ApiError::not_found(format!(
            "unknown deployment verb {verb:?}; use pause, resume or restart"
        ))
    })?;
    Ok((name.to_owned(), action))
}

/// Declares the handler of one verb on a named object of a namespace
/// (`…/namespaces/{namespace}/{kind}/{name}:{verb}`), answering the changed object: its doc
/// comment, path, operation id, what the name names, what the answer is, and the service
/// method with the request it sends (the request's `instance`, `namespace` and `name` come
/// from the path). The path parameters are documented here once.
macro_rules! verb_operation {
    (
        $(#[doc = $doc:tt])* $fn:ident $id:tt $path:tt name $name:tt answer $answer:tt,
        $method:ident($req:ident { $($field:ident: $value:expr),* })
    ) => {
        $(#[doc = $doc])*
        #[utoipa::path(post, path = $path, tag = "resources", operation_id = $id,
            params(("instance" = String, Path, description = "Instance name"),
                ("namespace" = String, Path, description = "Namespace"),
                ("name" = String, Path, description = $name)),
            responses((status = 200, body = Object, description = $answer), ErrorResponses))]
        pub async fn $fn(
            s: &RestState,
            auth: &Authenticated,
            (instance, namespace, name): (String, String, String),
        ) -> Answer<Object> {
            let req = $req {
                instance,
                namespace,
                name,
                $($field: $value,)*
            };
            s.api.$method(&auth.caller, req).await.map(Json)
        }
    };
}

verb_operation! {
    /// Pause a Deployment (`spec.paused = true`).
    pause_deployment "PauseDeployment" "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/deployments/{name}:pause"
    name "Deployment name" answer "The patched Deployment",
    deployment_action(DeploymentActionRequest { action: DeploymentAction::Pause, kind: None })
}

verb_operation! {
    /// Resume a paused Deployment (`spec.paused = false`).
    resume_deployment "ResumeDeployment" "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/deployments/{name}:resume"
    name "Deployment name" answer "The patched Deployment",
    deployment_action(DeploymentActionRequest { action: DeploymentAction::Resume, kind: None })
}

verb_operation! {
    /// Restart a Deployment's pods (the `kubectl.kubernetes.io/restartedAt` template annotation,
    /// as `kubectl rollout restart`).
    restart_deployment "RestartDeployment" "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/deployments/{name}:restart"
    name "Deployment name" answer "The patched Deployment",
    deployment_action(DeploymentActionRequest { action: DeploymentAction::Restart, kind: None })
}

verb_operation! {
    /// Restart a StatefulSet's pods (the `kubectl.kubernetes.io/restartedAt` template
    /// annotation, as `kubectl rollout restart`).
    restart_statefulset "RestartStatefulSet" "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/statefulsets/{name}:restart"
    name "StatefulSet name" answer "The patched StatefulSet",
    deployment_action(DeploymentActionRequest { action: DeploymentAction::Restart, kind: Some(WorkloadKind::Statefulsets) })
}

verb_operation! {
    /// Restart a DaemonSet's pods (the `kubectl.kubernetes.io/restartedAt` template
    /// annotation, as `kubectl rollout restart`).
    restart_daemonset "RestartDaemonSet" "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/daemonsets/{name}:restart"
    name "DaemonSet name" answer "The patched DaemonSet",
    deployment_action(DeploymentActionRequest { action: DeploymentAction::Restart, kind: Some(WorkloadKind::Daemonsets) })
}

/// `POST …/namespaces/{namespace}/{kind}/{name}:verb`: the router cannot match a parameter
/// followed by a suffix, so the verb arrives inside the last segment and is dispatched here to
/// the documented operations above.
pub async fn object_verb(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, namespace, kind, segment)): ApiPath<(String, String, String, String)>,
) -> Answer<Object> {
    if let Some(workload @ (WorkloadKind::Statefulsets | WorkloadKind::Daemonsets)) =
        WorkloadKind::parse(&kind)
    {
        let (name, action) = parse_action(&segment)?;
        if action != DeploymentAction::Restart {
            return Err(ApiError::not_found(format!(
                "{workload} have no verb {:?}; use :restart",
                action.as_str()
            )));
        }
        let path = (instance, namespace, name);
        return match workload {
            WorkloadKind::Statefulsets => restart_statefulset(&s, &auth, path).await,
            _ => restart_daemonset(&s, &auth, path).await,
        };
    }
    let kind = parse_kind(&kind)?;
    if matches!(kind, ResourceKind::Jobs | ResourceKind::Cronjobs) {
        let path = (instance, namespace);
        return job_verb(&s, &auth, path, kind, &segment).await;
    }
    let (name, action) = parse_action(&segment)?;
    if kind != ResourceKind::Deployments {
        return Err(ApiError::not_found(format!(
            "{kind} have no verbs; :{} is a deployment verb",
            action.as_str()
        )));
    }
    let path = (instance, namespace, name);
    match action {
        DeploymentAction::Pause => pause_deployment(&s, &auth, path).await,
        DeploymentAction::Resume => resume_deployment(&s, &auth, path).await,
        DeploymentAction::Restart => restart_deployment(&s, &auth, path).await,
    }
}

// ---- workloads ----------------------------------------------------------------------------

/// List the Deployments of a namespace with their per-cluster status.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/workloads",
    tag = "workloads", operation_id = "ListWorkloads",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"), ListOptions),
    responses((status = 200, body = WorkloadList, description = "A page of workloads"), ReadErrorResponses))]
pub async fn list_workloads(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, namespace)): ApiPath<(String, String)>,
    ApiQuery(options): ApiQuery<ListOptions>,
) -> Answer<WorkloadList> {
    let req = ListWorkloadsRequest {
        instance,
        namespace,
        options,
    };
    s.api.list_workloads(&auth.caller, req).await.map(Json)
}

/// One Deployment with its per-cluster status.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/workloads/{name}",
    tag = "workloads", operation_id = "GetWorkload",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("name" = String, Path, description = "Deployment name")),
    responses((status = 200, body = Workload, description = "The workload"), ReadErrorResponses))]
pub async fn get_workload(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, namespace, name)): ApiPath<(String, String, String)>,
) -> Answer<Workload> {
    let req = GetWorkloadRequest {
        instance,
        namespace,
        name,
    };
    s.api.get_workload(&auth.caller, req).await.map(Json)
}

/// List the pods of a workload in every member cluster it is placed on (each pod's cluster in its `resource.karmada.io/cached-from-cluster` annotation).
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/{kind}/{name}/pods", tag = "members", operation_id = "ListWorkloadPods",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("kind" = WorkloadKind, Path, description = "Workload kind: deployments, statefulsets, daemonsets or jobs"),
        ("name" = String, Path, description = "Workload name"), ListOptions),
    responses((status = 200, body = ObjectList, description = "A page of v1 Pods of all member clusters"), ReadErrorResponses))]
pub async fn list_workload_pods(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, namespace, kind, name)): ApiPath<(String, String, String, String)>,
    ApiQuery(options): ApiQuery<ListOptions>,
) -> Answer<ObjectList> {
    let req = ListWorkloadPodsRequest {
        instance,
        namespace,
        kind: workload_kind(&kind)?,
        name,
        options,
    };
    s.api.list_workload_pods(&auth.caller, req).await.map(Json)
}

verb_operation! {
    /// Re-run a Job: delete it and create it again from its spec (without the selector and
    /// `controller-uid` labels the server generated). 409 while the Job still runs pods.
    restart_job "RestartJob" "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/jobs/{name}:restart"
    name "Job name" answer "The new Job",
    restart_job(RestartJobRequest {})
}

verb_operation! {
    /// Pause a CronJob (`spec.suspend = true`): no new Jobs are scheduled. 409 when already paused.
    pause_cronjob "PauseCronJob" "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/cronjobs/{name}:pause"
    name "CronJob name" answer "The patched CronJob",
    cronjob_action(CronJobActionRequest { action: CronJobAction::Pause })
}

verb_operation! {
    /// Resume a paused CronJob (`spec.suspend = false`). 409 when not paused.
    resume_cronjob "ResumeCronJob" "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/cronjobs/{name}:resume"
    name "CronJob name" answer "The patched CronJob",
    cronjob_action(CronJobActionRequest { action: CronJobAction::Resume })
}

/// The verbs of Jobs and CronJobs, as `object_verb` hands them over: `segment` is
/// `name:verb`.
async fn job_verb(
    s: &RestState,
    auth: &Authenticated,
    (instance, namespace): (String, String),
    kind: ResourceKind,
    segment: &str,
) -> Answer<Object> {
    let (verbs, usage) = match kind {
        ResourceKind::Jobs => (&["restart"][..], ":restart"),
        _ => (&["pause", "resume"][..], ":pause or :resume"),
    };
    let Some((name, verb)) = segment.rsplit_once(':') else {
        return Err(ApiError::not_found(format!(
            "POST on one of the {kind} needs a verb: {segment}{usage}"
        )));
    };
    if !verbs.contains(&verb) {
        return Err(ApiError::not_found(format!(
            "{kind} have no verb {verb:?}; use {usage}"
        )));
    }
    let path = (instance, namespace, name.to_owned());
    match (kind, verb) {
        (ResourceKind::Jobs, _) => restart_job(s, auth, path).await,
        (_, "pause") => pause_cronjob(s, auth, path).await,
        _ => resume_cronjob(s, auth, path).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Code;

    #[test]
    fn actions_parse() {
        assert_eq!(
            parse_action("web:restart").unwrap(),
            ("web".to_owned(), DeploymentAction::Restart)
        );
        assert_eq!(parse_action("web").unwrap_err().code, Code::NotFound);
        assert_eq!(parse_action("web:scale").unwrap_err().code, Code::NotFound);
    }
}
