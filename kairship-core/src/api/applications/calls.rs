//! The application flow and the Job/CronJob verbs on [`KairshipService`]: every object goes
//! through `KairshipService::inside` (checks, authorization, body preparation, the caller's
//! identity on the write) like any other write.

use std::time::Duration;

use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::Value;

use super::create::{MemberCluster, Part, Planned, check_against_members, ordinal, plan};
use super::types::{ApplicationResult, CreateApplicationRequest};
use crate::access::{Caller, InstanceResource, Verb};
use crate::api::body::check_name;
use crate::api::error::{ApiError, Code};
use crate::api::inside::{Checked, Gvr, Inside};
use crate::api::kairship::KairshipService;
use crate::api::kinds::ResourceKind;
use crate::api::workloads::jobs::{
    CronJobAction, CronJobActionRequest, RestartJobRequest, cronjob_patch, cronjob_suspended,
    job_active, job_rerun,
};
use crate::api::{ListOptions, Object};
use crate::router::ResourceTarget;

/// How long a restarted Job's old object may take to disappear before the new one is created.
const JOB_GONE_ATTEMPTS: u32 = 50;
const JOB_GONE_INTERVAL: Duration = Duration::from_millis(100);

/// The typed kind of a part, when it is one; StatefulSets and DaemonSets are found by the
/// instance's discovery.
fn kind_of(part: Part) -> Option<ResourceKind> {
    use crate::api::applications::create::WorkloadKind as W;
    match part {
        Part::Workload(W::Deployment) => Some(ResourceKind::Deployments),
        Part::Workload(W::Job) => Some(ResourceKind::Jobs),
        Part::Workload(W::CronJob) => Some(ResourceKind::Cronjobs),
        Part::Workload(W::StatefulSet | W::DaemonSet) | Part::Namespace => None,
        Part::Service => Some(ResourceKind::Services),
        Part::PropagationPolicy => Some(ResourceKind::Propagationpolicies),
        Part::OverridePolicy => Some(ResourceKind::Overridepolicies),
    }
}

/// One object created by the call, kept to be removed if a later one fails.
struct Created {
    checked: Checked,
    planned: Planned,
}

impl KairshipService {
    /// Checks, authorizes and prepares the creation of `planned` without writing anything.
    async fn prepare_part(
        &self,
        caller: &Caller,
        instance: &str,
        namespace: &str,
        planned: &Planned,
    ) -> Result<Checked, ApiError> {
        let namespace = (planned.part != Part::Namespace).then_some(namespace);
        let call = match kind_of(planned.part) {
            Some(kind) => Inside::resource(instance, kind, namespace, Verb::Create, "create"),
            None => {
                let (group, version, resource) = planned.part.gvr();
                Inside::generic(
                    instance,
                    Gvr {
                        group,
                        version,
                        resource,
                    },
                    namespace,
                    Verb::Create,
                    "create",
                )
            }
        }
        .with_body(planned.body.clone());
        self.inside(caller, call, |c| async move { Ok(c) }).await
    }

    /// The member clusters of `instance`, as placement sees them.
    async fn member_clusters(
        &self,
        caller: &Caller,
        instance: &str,
    ) -> Result<Vec<MemberCluster>, ApiError> {
        let options = ListOptions::default();
        let call = Inside::clusters(instance, Verb::Get, "list member clusters").listing(&options);
        self.inside(caller, call, |c| async move {
            let page = self.router.list(&c.target, &c.query).await?;
            Ok(page
                .items
                .iter()
                .filter_map(|cluster| serde_json::to_value(cluster.as_ref()).ok())
                .map(|cluster| MemberCluster::of(&cluster))
                .collect())
        })
        .await
    }

    /// Whether the instance holds the namespace `namespace`.
    async fn namespace_exists(&self, instance: &str, namespace: &str) -> Result<bool, ApiError> {
        let namespaces = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("", "v1", "Namespace"),
            "namespaces",
        );
        let target = ResourceTarget::all(instance, namespaces);
        match self.router.get(&target, namespace).await {
            Ok(_) => Ok(true),
            Err(err) if err.is_not_found() => Ok(false),
            Err(err) => Err(err.into()),
        }
    }

    /// Creates an application's objects in order, or none of them; a namespace the instance
    /// does not hold is created first.
    pub(in crate::api) async fn run_create_application(
        &self,
        caller: &Caller,
        req: CreateApplicationRequest,
    ) -> Result<ApplicationResult, ApiError> {
        let (instance, namespace) = (req.instance.as_str(), req.namespace.as_str());
        check_name("instance", instance)?;
        check_name("namespace", namespace)?;
        self.authorize(
            caller,
            Verb::Create,
            InstanceResource::Proxy,
            Some(instance),
            "create applications",
        )
        .await?;
        let spec = &req.application;
        let mut planned = plan(namespace, spec)?;
        if spec.placement.needs_members(&spec.overrides) {
            let members = self.member_clusters(caller, instance).await?;
            check_against_members(spec, &members)?;
        }
        let namespace_missing = !self.namespace_exists(instance, namespace).await?;
        if namespace_missing {
            planned.insert(0, Planned::namespace(namespace));
        }
        let mut prepared = Vec::with_capacity(planned.len());
        for p in planned {
            let checked = self.prepare_part(caller, instance, namespace, &p).await?;
            prepared.push((checked, p));
        }
        let params = PostParams {
            dry_run: spec.dry_run,
            ..PostParams::default()
        };
        let total = prepared.len();
        let mut created: Vec<Created> = Vec::with_capacity(total);
        let mut objects = Vec::with_capacity(total);
        for (index, (checked, planned)) in prepared.into_iter().enumerate() {
            if spec.dry_run && namespace_missing && planned.part != Part::Namespace {
                // The instance refuses even a dry run in a namespace it does not hold yet:
                // the object is answered as Kairship checked and prepared it.
                objects.push(checked.body);
                continue;
            }
            match self
                .router
                .create(&checked.target, &checked.body, &params)
                .await
            {
                Ok(outcome) => {
                    objects.push(outcome.object);
                    if !spec.dry_run {
                        created.push(Created { checked, planned });
                    }
                }
                Err(err) => {
                    let err = ApiError::from(err);
                    let undone = self.undo(created).await;
                    return Err(ApiError {
                        message: format!(
                            "{} ({} of {total} objects) was not created: {}; {undone}",
                            planned.describe(),
                            ordinal(index),
                            err.message
                        ),
                        ..err
                    });
                }
            }
        }
        Ok(ApplicationResult {
            dry_run: spec.dry_run,
            objects,
        })
    }

    /// Deletes what the call created, last first; says what was removed (and what could not
    /// be).
    async fn undo(&self, created: Vec<Created>) -> String {
        if created.is_empty() {
            return "nothing had been created".to_owned();
        }
        let mut removed = Vec::new();
        let mut left = Vec::new();
        for c in created.into_iter().rev() {
            let params = DeleteParams {
                propagation_policy: Some(PropagationPolicy::Background),
                ..DeleteParams::default()
            };
            match self
                .router
                .delete(&c.checked.target, &c.planned.name, &params)
                .await
            {
                Ok(_) => removed.push(c.planned.describe()),
                Err(err) if err.is_not_found() => removed.push(c.planned.describe()),
                Err(err) => {
                    tracing::warn!(object = %c.planned.describe(), error = %err, "cannot remove an object of a failed application");
                    left.push(format!("{} ({err})", c.planned.describe()));
                }
            }
        }
        let mut text = format!("removed what this call had created: {}", removed.join(", "));
        if !left.is_empty() {
            text.push_str(&format!("; could not remove: {}", left.join(", ")));
        }
        text
    }

    /// Re-runs a Job: deletes it and creates it again from its spec.
    pub(in crate::api) async fn run_restart_job(
        &self,
        caller: &Caller,
        req: RestartJobRequest,
    ) -> Result<Object, ApiError> {
        let (instance, namespace, name) = (
            req.instance.as_str(),
            req.namespace.as_str(),
            req.name.as_str(),
        );
        let call = Inside::kind(
            instance,
            ResourceKind::Jobs,
            Some(namespace),
            Verb::Delete,
            "restart jobs",
        )
        .named("name", name);
        self.inside(caller, call, |c| async move {
            self.authorize(
                caller,
                Verb::Create,
                InstanceResource::Proxy,
                Some(instance),
                "restart jobs",
            )
            .await?;
            let job = serde_json::to_value(self.router.get(&c.target, name).await?.as_ref())
                .map_err(|e| ApiError::internal(format!("cannot encode a job: {e}")))?;
            let active = job_active(&job);
            if active > 0 {
                return Err(ApiError::new(
                    Code::Aborted,
                    format!(
                        "job {namespace}/{name} is still running ({active} active pods): wait \
                         for it to finish, or delete it, before restarting it"
                    ),
                ));
            }
            let rerun = job_rerun(&job);
            let params = DeleteParams {
                propagation_policy: Some(PropagationPolicy::Background),
                preconditions: job
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .map(|uid| Preconditions {
                        uid: Some(uid.to_owned()),
                        resource_version: None,
                    }),
                ..DeleteParams::default()
            };
            self.router.delete(&c.target, name, &params).await?;
            let mut attempt = 0;
            loop {
                match self
                    .router
                    .create(&c.target, &rerun, &PostParams::default())
                    .await
                {
                    Ok(outcome) => return Ok(outcome.object),
                    Err(err) => {
                        let err = ApiError::from(err);
                        attempt += 1;
                        if err.code == Code::AlreadyExists && attempt < JOB_GONE_ATTEMPTS {
                            // The old Job is still being deleted.
                            tokio::time::sleep(JOB_GONE_INTERVAL).await;
                            continue;
                        }
                        return Err(ApiError {
                            message: format!(
                                "job {namespace}/{name} was deleted but could not be created \
                                 again: {}; create it from the spec in this error's details",
                                err.message
                            ),
                            ..err
                        }
                        .with_detail(serde_json::json!({
                            "@type": "type.kairship.io/Job",
                            "job": rerun,
                        })));
                    }
                }
            }
        })
        .await
    }

    /// Suspends or resumes a CronJob.
    pub(in crate::api) async fn run_cronjob_action(
        &self,
        caller: &Caller,
        req: CronJobActionRequest,
    ) -> Result<Object, ApiError> {
        let (namespace, name, action) = (req.namespace.as_str(), req.name.as_str(), req.action);
        let call = Inside::kind(
            &req.instance,
            ResourceKind::Cronjobs,
            Some(namespace),
            Verb::Patch,
            format!("{} cronjobs", action.as_str()),
        )
        .named("name", name);
        self.inside(caller, call, |c| async move {
            let current = self.router.get(&c.target, name).await?;
            if cronjob_suspended(&current.data) == action.suspend() {
                let state = match action {
                    CronJobAction::Pause => "already paused",
                    CronJobAction::Resume => "not paused",
                };
                return Err(ApiError::new(
                    Code::Aborted,
                    format!("cronjob {namespace}/{name} is {state}"),
                ));
            }
            let outcome = self
                .router
                .patch(
                    &c.target,
                    name,
                    &Patch::Merge(cronjob_patch(action)),
                    &PatchParams::default(),
                )
                .await?;
            Ok(outcome.object)
        })
        .await
    }
}
