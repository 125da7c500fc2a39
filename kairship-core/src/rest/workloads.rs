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

/// Runs `action` on the Deployment the path `(instance, namespace, name)` names.
async fn deployment_action(
    s: &RestState,
    auth: &Authenticated,
    (instance, namespace, name): (String, String, String),
    action: DeploymentAction,
) -> Answer<Object> {
    let req = DeploymentActionRequest {
        instance,
        namespace,
        name,
        action,
    };
    s.api.deployment_action(&auth.caller, req).await.map(Json)
}

/// Pause a Deployment (`spec.paused = true`).
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/deployments/{name}:pause",
    tag = "resources", operation_id = "PauseDeployment",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("name" = String, Path, description = "Deployment name")),
    responses((status = 200, body = Object, description = "The patched Deployment"), ErrorResponses))]
pub async fn pause_deployment(
    s: &RestState,
    auth: &Authenticated,
    path: (String, String, String),
) -> Answer<Object> {
    deployment_action(s, auth, path, DeploymentAction::Pause).await
}

/// Resume a paused Deployment (`spec.paused = false`).
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/deployments/{name}:resume",
    tag = "resources", operation_id = "ResumeDeployment",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("name" = String, Path, description = "Deployment name")),
    responses((status = 200, body = Object, description = "The patched Deployment"), ErrorResponses))]
pub async fn resume_deployment(
    s: &RestState,
    auth: &Authenticated,
    path: (String, String, String),
) -> Answer<Object> {
    deployment_action(s, auth, path, DeploymentAction::Resume).await
}

/// Restart a Deployment's pods (the `kubectl.kubernetes.io/restartedAt` template annotation,
/// as `kubectl rollout restart`).
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/deployments/{name}:restart",
    tag = "resources", operation_id = "RestartDeployment",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("name" = String, Path, description = "Deployment name")),
    responses((status = 200, body = Object, description = "The patched Deployment"), ErrorResponses))]
pub async fn restart_deployment(
    s: &RestState,
    auth: &Authenticated,
    path: (String, String, String),
) -> Answer<Object> {
    deployment_action(s, auth, path, DeploymentAction::Restart).await
}

/// `POST …/namespaces/{namespace}/{kind}/{name}:verb`: the router cannot match a parameter
/// followed by a suffix, so the verb arrives inside the last segment and is dispatched here to
/// the documented operations above.
pub async fn object_verb(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, namespace, kind, segment)): ApiPath<(String, String, String, String)>,
) -> Answer<Object> {
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

/// Re-run a Job: delete it and create it again from its spec (without the selector and
/// `controller-uid` labels the server generated). 409 while the Job still runs pods.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/jobs/{name}:restart",
    tag = "resources", operation_id = "RestartJob",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("name" = String, Path, description = "Job name")),
    responses((status = 200, body = Object, description = "The new Job"), ErrorResponses))]
pub async fn restart_job(
    s: &RestState,
    auth: &Authenticated,
    (instance, namespace, name): (String, String, String),
) -> Answer<Object> {
    let req = RestartJobRequest {
        instance,
        namespace,
        name,
    };
    s.api.restart_job(&auth.caller, req).await.map(Json)
}

async fn cronjob_action(
    s: &RestState,
    auth: &Authenticated,
    (instance, namespace, name): (String, String, String),
    action: CronJobAction,
) -> Answer<Object> {
    let req = CronJobActionRequest {
        instance,
        namespace,
        name,
        action,
    };
    s.api.cronjob_action(&auth.caller, req).await.map(Json)
}

/// Pause a CronJob (`spec.suspend = true`): no new Jobs are scheduled. 409 when already paused.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/cronjobs/{name}:pause",
    tag = "resources", operation_id = "PauseCronJob",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("name" = String, Path, description = "CronJob name")),
    responses((status = 200, body = Object, description = "The patched CronJob"), ErrorResponses))]
pub async fn pause_cronjob(
    s: &RestState,
    auth: &Authenticated,
    path: (String, String, String),
) -> Answer<Object> {
    cronjob_action(s, auth, path, CronJobAction::Pause).await
}

/// Resume a paused CronJob (`spec.suspend = false`). 409 when not paused.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/cronjobs/{name}:resume",
    tag = "resources", operation_id = "ResumeCronJob",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace"),
        ("name" = String, Path, description = "CronJob name")),
    responses((status = 200, body = Object, description = "The patched CronJob"), ErrorResponses))]
pub async fn resume_cronjob(
    s: &RestState,
    auth: &Authenticated,
    path: (String, String, String),
) -> Answer<Object> {
    cronjob_action(s, auth, path, CronJobAction::Resume).await
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
