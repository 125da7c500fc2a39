//! Giving up on a physical pod the worker does not schedule
//! ([`super::mapping::scheduling`]): part of the PhysicalPod reconciler, which calls
//! `check` before anything else.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, Preconditions};
use kube::runtime::events::EventType;
use kube::{Api, Resource, ResourceExt};
use tokio::time::Instant;

use super::error::{Side, TopDownError, request};
use super::mapping::scheduling::{
    FAILED_SCHEDULING_POD, SchedulingWait, scheduling_wait, unschedulable_note,
    unschedulable_pod_status,
};
use super::state::TopDown;
use super::store::pod_finished;
use crate::syncer::context::Context;

/// What the check found.
pub(crate) enum Check {
    /// Scheduled, or no live owner: the reconcile goes on as usual.
    Continue,
    /// Unscheduled: the reconcile goes on, and looks again at this time at the latest.
    Until(Instant),
    /// Given up: the virtual pod failed and the physical pod was deleted.
    Done,
}

/// Fails `owner` and deletes `physical` once it has been unscheduled for longer than the
/// syncer's `physical_pod_scheduling_timeout`.
pub(crate) async fn check(
    ctx: &Context,
    td: &TopDown,
    physical: &Pod,
    owner: Option<&Pod>,
) -> Result<Check, TopDownError> {
    let Some(owner) = owner.filter(|o| !pod_finished(o) && o.metadata.deletion_timestamp.is_none())
    else {
        return Ok(Check::Continue);
    };
    let timeout = ctx.config.physical_pod_scheduling_timeout;
    let now = ctx.config.clock.now();
    match scheduling_wait(physical, now, timeout) {
        SchedulingWait::NotWaiting => return Ok(Check::Continue),
        SchedulingWait::Waiting(left) => return Ok(Check::Until(Instant::now() + left)),
        SchedulingWait::Expired => {}
    }
    let name = physical.name_any();
    let physical_key = td.physical_key(&name);
    let note = unschedulable_note(&physical_key, timeout, physical);
    // The virtual pod fails first: once it is Failed, nothing maps it again, and the
    // physical pod's deletion is not taken for a lost pod.
    let status = unschedulable_pod_status(&owner.status.clone().unwrap_or_default(), &note, now);
    super::pod_status::write_status(ctx, td, owner, &status, None).await?;
    let api: Api<Pod> = Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: physical.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match request(
        ctx.config.request_timeout,
        Side::Worker,
        "delete",
        "Pod",
        &physical_key,
        api.delete(&name, &params),
    )
    .await
    {
        Ok(_) => {}
        Err(err) if matches!(err.code(), Some(404 | 409)) => {}
        Err(err) => return Err(err),
    }
    tracing::warn!(physical = %physical_key, "{note}");
    td.publish(
        ctx,
        &owner.object_ref(&()),
        EventType::Warning,
        FAILED_SCHEDULING_POD,
        &note,
    )
    .await;
    Ok(Check::Done)
}
