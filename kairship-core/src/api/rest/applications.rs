//! REST handlers of the application flow (`POST …/namespaces/{namespace}/applications`) and of
//! the Job and CronJob verbs (`…/jobs/{name}:restart`, `…/cronjobs/{name}:pause|:resume`).

use axum::Json;
use axum::extract::State;

use super::extract::{ApiJson, ApiPath, Authenticated};
use super::handlers::{Answer, ErrorResponses, RestState};
use crate::api::applications::{ApplicationResult, ApplicationSpec, CreateApplicationRequest};
use crate::api::error::ApiError;
use crate::api::job_actions::{CronJobAction, CronJobActionRequest, RestartJobRequest};
use crate::api::kinds::ResourceKind;
use crate::api::types::Object;

/// Create a multicloud application in one call: the workload, optionally its Service, the
/// PropagationPolicy placing them and one OverridePolicy per cluster override, in that order.
/// All or nothing: when an object fails, the objects created before it are deleted and the
/// error names the object. With `dryRun: true` the instance validates every object
/// (`dryRun=All`) and nothing is created.
#[utoipa::path(post, path = "/apis/kairship.io/v1alpha1/instances/{instance}/namespaces/{namespace}/applications",
    tag = "applications", operation_id = "CreateApplication",
    params(("instance" = String, Path, description = "Instance name"),
        ("namespace" = String, Path, description = "Namespace of every object")),
    request_body(content = ApplicationSpec, description = "The workload, Service, placement and per-cluster overrides"),
    responses((status = 200, body = ApplicationResult, description = "The objects created (or, in a dry run, that would be created), in creation order"), ErrorResponses))]
pub async fn create_application(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiPath((instance, namespace)): ApiPath<(String, String)>,
    ApiJson(application): ApiJson<ApplicationSpec>,
) -> Answer<ApplicationResult> {
    let req = CreateApplicationRequest {
        instance,
        namespace,
        application,
    };
    s.api.create_application(&auth.caller, req).await.map(Json)
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
pub(super) async fn job_verb(
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
