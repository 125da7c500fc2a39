//! The ClusterBinding reconciler.
//!
//! A live binding: add the finalizer; validate the spec (`ValidationFailed`); reach the worker
//! through the kubeconfig Secret (`ConnectivityFailed`, with the cause); check with
//! SelfSubjectAccessReviews that the worker grants what the syncer needs
//! (`PermissionDenied`, listing what is missing) and that the binding's PriorityClass exists
//! there (`PriorityClassMissing`); then create or update the workloads — or,
//! in embedded mode, make sure the binding's task group runs — and report phase, conditions
//! and Events. A binding being deleted is drained first (see [`super::drain`]).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::{Api, Client, Resource, ResourceExt};
use kube_kit::client::describe_kube_error;
use kube_kit::client::is_not_found;
use kube_kit::controller::truncate_utf8;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::drain::{self, DeletionStep, WorkerDrain};
use super::permissions::{describe_missing, missing_permissions, required_permissions};
use super::serving_cert::{ServingCertSource, obtain, serving_names};
use super::status::{
    DeletionBlocker, DesiredStatus, Outcome, WorkloadState, deleting_status, deployment_state,
    desired_status, is_failure_reason, merge_conditions, reason,
};
use super::templates::{self, WorkloadNames, recorded_hash, workload_names};
use super::validate::validate_binding;
use super::{Context, Error, FINALIZER, MANAGER_NAME};
use crate::crd::{ClusterBinding, ClusterBindingPhase, cluster_binding_condition as ctype};
use crate::syncer::binding::connect_worker;
use crate::syncer::upstream::set_finalizers;
use crate::upgrade;

/// Reconciles one ClusterBinding.
pub async fn reconcile(binding: Arc<ClusterBinding>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = std::time::Instant::now();
    let name = binding.name_any();
    let result = reconcile_binding(binding, &ctx).await;
    if let Some(metrics) = &ctx.config.metrics {
        metrics.synced(&name, started.elapsed(), result.is_err());
    }
    result
}

async fn reconcile_binding(
    binding: Arc<ClusterBinding>,
    ctx: &Arc<Context>,
) -> Result<Action, Error> {
    let ctx = ctx.clone();
    let name = binding.name_any();
    // Upstream Kubeocean's finalizers count as ours: we drain, then release them all.
    if binding.metadata.deletion_timestamp.is_some() {
        if !upgrade::binding_held(binding.finalizers(), FINALIZER) {
            return Ok(Action::await_change());
        }
        return delete(&binding, &ctx).await;
    }
    hold_finalizer(&ctx, &binding, true).await?;
    // Decided from the stored bindings (oldest first, then name), never from memory, so
    // every manager replica and restart agrees on which binding owns a clusterID.
    let all = Api::<ClusterBinding>::all(ctx.computing.clone())
        .list(&Default::default())
        .await
        .map_err(Error::ListBindings)?;
    if let Some(metrics) = &ctx.config.metrics {
        metrics.set_bindings(&all.items);
    }
    let outcome = match upgrade::cluster_id_owner(&binding, &all.items) {
        Some(owner) => {
            if let Some(embedded) = &ctx.embedded {
                embedded.stop(&name).await;
            }
            Outcome::DuplicateClusterId {
                cluster_id: binding.spec.cluster_id.clone(),
                owner: owner.name_any(),
            }
        }
        None => evaluate(&binding, &ctx).await,
    };
    let desired = desired_status(&outcome, binding.metadata.generation, Timestamp::now());
    let changed = write_status(&ctx, &name, &desired).await?;
    publish_changes(&ctx, &binding, &changed).await;
    Ok(match &outcome {
        Outcome::Invalid(_) => Action::await_change(),
        Outcome::Workloads {
            syncer: WorkloadState::Ready { .. },
            proxier: WorkloadState::Ready { .. },
        } => Action::requeue(ctx.config.resync_interval),
        _ => Action::requeue(ctx.config.retry_interval),
    })
}

/// Validation, connectivity, permissions, then the workloads.
async fn evaluate(binding: &ClusterBinding, ctx: &Context) -> Outcome {
    let name = binding.name_any();
    if let Err(problems) = validate_binding(binding) {
        if let Some(embedded) = &ctx.embedded {
            embedded.stop(&name).await;
        }
        return Outcome::Invalid(problems);
    }
    let config = &ctx.config;
    let worker = match connect_worker(
        &ctx.computing,
        binding,
        &config.templates.namespace,
        &config.client_options,
        config.probe_timeout,
    )
    .await
    {
        Ok(worker) => worker,
        Err(err) => return Outcome::Unreachable(err.to_string()),
    };
    ctx.remember_worker(&name, &worker);
    let mount_namespace = binding.spec.mount_namespace.clone().unwrap_or_default();
    let required = required_permissions(&mount_namespace);
    let review = tokio::time::timeout(
        config.worker_timeout,
        missing_permissions(&worker, &required),
    );
    let Ok(review) = review.await else {
        return Outcome::Unreachable(format!(
            "the worker did not answer the permission review within {:?}",
            config.worker_timeout
        ));
    };
    match review {
        // Every authenticated user may ask this in a default cluster (system:basic-user).
        Err(kube::Error::Api(s)) if s.code == 403 => {
            return Outcome::PermissionDenied(
                "selfsubjectaccessreviews.authorization.k8s.io: create (needed to check the others)"
                    .to_owned(),
            );
        }
        Err(err) => {
            return Outcome::Unreachable(format!(
                "cannot review the worker kubeconfig's permissions: {}",
                describe_kube_error(&err)
            ));
        }
        Ok(missing) if !missing.is_empty() => {
            return Outcome::PermissionDenied(describe_missing(&missing));
        }
        Ok(_) => {}
    }
    // Physical pods are refused without their PriorityClass; a class that cannot be read
    // (no answer) is left to the syncer's own errors.
    let class = binding.spec.pod_priority_class_name();
    let classes: Api<PriorityClass> = Api::all(worker.clone());
    let read = tokio::time::timeout(config.worker_timeout, classes.get_opt(class));
    if let Ok(Ok(None)) = read.await {
        return Outcome::PriorityClassMissing(class.to_owned());
    }
    match &ctx.embedded {
        Some(embedded) => {
            embedded.ensure(binding);
            let status = embedded.status(&name).unwrap_or_default();
            Outcome::Workloads {
                syncer: status.syncer.workload_state(),
                proxier: status.proxier.workload_state(),
            }
        }
        None => {
            let (syncer, proxier) = apply_workloads(binding, ctx).await;
            Outcome::Workloads { syncer, proxier }
        }
    }
}

/// Creates or updates every workload object; returns the states of the syncer and proxier.
async fn apply_workloads(
    binding: &ClusterBinding,
    ctx: &Context,
) -> (WorkloadState, WorkloadState) {
    let t = &ctx.config.templates;
    let c = &ctx.computing;
    let ns = t.namespace.as_str();
    let names = workload_names(&binding.name_any(), ns);

    let proxier = async {
        let service = apply(
            ctx,
            binding,
            &Api::<Service>::namespaced(c.clone(), ns),
            templates::proxier_service(binding, t),
        )
        .await?;
        let address = service.spec.and_then(|s| s.cluster_ip);
        let source = ensure_proxier_tls(binding, ctx, &names, address.as_deref()).await?;
        let desired = templates::proxier_deployment(binding, t);
        let hash = recorded_hash(&desired.metadata)
            .unwrap_or_default()
            .to_owned();
        let deployment = apply(
            ctx,
            binding,
            &Api::<Deployment>::namespaced(c.clone(), ns),
            desired,
        )
        .await?;
        let state = match (deployment_state(&deployment, &hash), source) {
            (WorkloadState::Ready { message, .. }, ServingCertSource::SelfSigned(why)) => {
                WorkloadState::Ready {
                    reason: super::status::reason::SELF_SIGNED_CERTIFICATE,
                    message: format!(
                        "{message}; the proxier serves a self-signed certificate, which clients \
                         verifying kubelets against the cluster's CA refuse: {why}"
                    ),
                }
            }
            (state, _) => state,
        };
        Ok::<_, Error>((state, address))
    };
    let (proxier_state, address) = match proxier.await {
        Ok(done) => done,
        Err(err) => (WorkloadState::Failed(err.to_string()), None),
    };

    let syncer = async {
        apply(
            ctx,
            binding,
            &Api::<ServiceAccount>::namespaced(c.clone(), ns),
            templates::service_account(binding, t),
        )
        .await?;
        apply(
            ctx,
            binding,
            &Api::<ClusterRole>::all(c.clone()),
            templates::cluster_role(binding, t),
        )
        .await?;
        apply(
            ctx,
            binding,
            &Api::<ClusterRoleBinding>::all(c.clone()),
            templates::cluster_role_binding(binding, t),
        )
        .await?;
        let desired = templates::syncer_deployment(binding, t, address.as_deref());
        let hash = recorded_hash(&desired.metadata)
            .unwrap_or_default()
            .to_owned();
        let deployment = apply(
            ctx,
            binding,
            &Api::<Deployment>::namespaced(c.clone(), ns),
            desired,
        )
        .await?;
        Ok::<_, Error>(deployment_state(&deployment, &hash))
    };
    let syncer_state = syncer
        .await
        .unwrap_or_else(|err| WorkloadState::Failed(err.to_string()));
    (syncer_state, proxier_state)
}

fn object_name<K: Resource>(object: &K) -> String {
    kube_kit::controller::object_key(object)
}

/// Creates `desired`, or updates the existing object when its template hash differs
/// (server-side apply, forced: the manager owns these objects). Returns the object as stored.
async fn apply<K>(
    ctx: &Context,
    binding: &ClusterBinding,
    api: &Api<K>,
    desired: K,
) -> Result<K, Error>
where
    K: Resource<DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned,
{
    let name = desired.meta().name.clone().unwrap_or_default();
    let kind = K::kind(&()).into_owned();
    let fail = |action: &'static str| {
        let name = object_name(&desired);
        let kind = static_kind(&kind);
        move |source| Error::Workload {
            action,
            kind,
            name,
            source,
        }
    };
    let existing = api.get_opt(&name).await.map_err(fail("read"))?;
    let up_to_date = existing.as_ref().is_some_and(|e| {
        recorded_hash(e.meta()) == recorded_hash(desired.meta())
            && e.meta().owner_references == desired.meta().owner_references
    });
    if let (true, Some(existing)) = (up_to_date, existing.as_ref()) {
        return Ok(existing.clone());
    }
    let applied = api
        .patch(
            &name,
            &PatchParams::apply(MANAGER_NAME).force(),
            &Patch::Apply(&desired),
        )
        .await
        .map_err(fail("apply"))?;
    let verb = if existing.is_some() {
        "Updated"
    } else {
        "Created"
    };
    publish(
        ctx,
        binding,
        EventType::Normal,
        verb,
        &format!("{verb} {kind} {}", object_name(&applied)),
    )
    .await;
    Ok(applied)
}

/// The kinds the manager writes, as `'static` names for errors.
fn static_kind(kind: &str) -> &'static str {
    match kind {
        "Deployment" => "Deployment",
        "Service" => "Service",
        "ServiceAccount" => "ServiceAccount",
        "ClusterRole" => "ClusterRole",
        "ClusterRoleBinding" => "ClusterRoleBinding",
        "Secret" => "Secret",
        _ => "object",
    }
}

/// Annotation of the proxier's TLS Secret: `cluster` or `self-signed`.
pub const CERT_SOURCE_ANNOTATION: &str = "kubeocean.io/serving-certificate";
/// Annotation of the proxier's TLS Secret: when to replace its certificate (RFC 3339).
pub const CERT_RENEW_ANNOTATION: &str = "kubeocean.io/serving-certificate-renew-at";
/// Annotation of a self-signed proxier TLS Secret: why the cluster issued none.
pub const CERT_REASON_ANNOTATION: &str = "kubeocean.io/serving-certificate-reason";

/// What the stored Secret says of its certificate: `None` when it must be (re)issued at
/// `now` (missing annotations, a renewal time passed, or a fallback due for another try).
fn stored_certificate(secret: &Secret, now: Timestamp) -> Option<ServingCertSource> {
    let annotations = secret.metadata.annotations.as_ref()?;
    let renew_at: Timestamp = annotations.get(CERT_RENEW_ANNOTATION)?.parse().ok()?;
    if now >= renew_at {
        return None;
    }
    match annotations.get(CERT_SOURCE_ANNOTATION)?.as_str() {
        "cluster" => Some(ServingCertSource::Cluster(String::new())),
        "self-signed" => Some(ServingCertSource::SelfSigned(
            annotations
                .get(CERT_REASON_ANNOTATION)
                .cloned()
                .unwrap_or_default(),
        )),
        _ => None,
    }
}

/// Keeps the proxier's serving certificate Secret: a certificate of the cluster's CA for the
/// proxier's Service names and `cluster_ip` ([`super::serving_cert`]), self-signed when the
/// cluster issues none; replaced when its renewal time (stored on the Secret) has passed.
/// Returns where the served certificate came from.
async fn ensure_proxier_tls(
    binding: &ClusterBinding,
    ctx: &Context,
    names: &WorkloadNames,
    cluster_ip: Option<&str>,
) -> Result<ServingCertSource, Error> {
    let ns = &ctx.config.templates.namespace;
    let api: Api<Secret> = Api::namespaced(ctx.computing.clone(), ns);
    let secret_key = format!("{ns}/{}", names.proxier_tls);
    let fail = |action: &'static str| {
        let name = secret_key.clone();
        move |source| Error::Workload {
            action,
            kind: "Secret",
            name,
            source,
        }
    };
    let existing = api
        .get_opt(&names.proxier_tls)
        .await
        .map_err(fail("read"))?;
    if let Some(source) = existing
        .as_ref()
        .and_then(|s| stored_certificate(s, Timestamp::now()))
    {
        return Ok(source);
    }
    let binding_name = binding.name_any();
    let mut hosts = vec![
        names.proxier.clone(),
        format!("{}.{ns}", names.proxier),
        format!("{}.{ns}.svc", names.proxier),
        format!("{}.{ns}.svc.cluster.local", names.proxier),
    ];
    hosts.extend(cluster_ip.filter(|ip| *ip != "None").map(str::to_owned));
    let serving_names = serving_names(&binding_name, &[], &hosts);
    let cert = obtain(
        &ctx.computing,
        &binding_name,
        &serving_names,
        &ctx.config.serving_cert,
    )
    .await
    .map_err(|reason| Error::Certificate {
        name: secret_key.clone(),
        reason,
    })?;
    let mut annotations =
        BTreeMap::from([(CERT_RENEW_ANNOTATION.to_owned(), cert.renew_at.to_string())]);
    match &cert.source {
        ServingCertSource::Cluster(_) => {
            annotations.insert(CERT_SOURCE_ANNOTATION.to_owned(), "cluster".to_owned());
        }
        ServingCertSource::SelfSigned(why) => {
            annotations.insert(CERT_SOURCE_ANNOTATION.to_owned(), "self-signed".to_owned());
            annotations.insert(CERT_REASON_ANNOTATION.to_owned(), why.clone());
        }
    }
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(names.proxier_tls.clone()),
            namespace: Some(ns.clone()),
            labels: Some(templates::object_labels(&binding_name, "proxier")),
            annotations: Some(annotations),
            owner_references: templates::owner_reference(binding).map(|o| vec![o]),
            resource_version: existing.and_then(|s| s.metadata.resource_version),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".to_owned()),
        data: Some(BTreeMap::from([
            ("tls.crt".to_owned(), ByteString(cert.cert_pem.into_bytes())),
            ("tls.key".to_owned(), ByteString(cert.key_pem.into_bytes())),
        ])),
        ..Secret::default()
    };
    let (verb, written) = if secret.metadata.resource_version.is_some() {
        (
            "Updated",
            api.replace(&names.proxier_tls, &PostParams::default(), &secret)
                .await
                .map_err(fail("replace")),
        )
    } else {
        (
            "Created",
            api.create(&PostParams::default(), &secret)
                .await
                .map_err(fail("create")),
        )
    };
    match written {
        Ok(_) => {
            publish(
                ctx,
                binding,
                EventType::Normal,
                verb,
                &format!("{verb} Secret {secret_key}"),
            )
            .await;
            Ok(cert.source)
        }
        // Another reconcile wrote it first: the next one reads what it wrote.
        Err(Error::Workload {
            source: kube::Error::Api(s),
            ..
        }) if s.code == 409 => Ok(cert.source),
        Err(e) => Err(e),
    }
}

/// A binding being deleted: wait for the drain, then remove the workloads and the finalizer.
async fn delete(binding: &ClusterBinding, ctx: &Context) -> Result<Action, Error> {
    let name = binding.name_any();
    let valid = validate_binding(binding).is_ok();
    let vnode_error = |action| {
        let binding = name.clone();
        move |source| Error::VirtualNodes {
            action,
            binding,
            source,
        }
    };
    let vnodes = drain::virtual_nodes_left(&ctx.computing, &name)
        .await
        .map_err(vnode_error("count"))?;
    let (worker, reached) = worker_drain(binding, ctx, valid).await;
    let step = drain::deletion_step(vnodes, &worker, drain::force_delete(binding));
    match step {
        DeletionStep::Wait(message) => {
            // The syncer drains; in embedded mode it must run (again, after a manager
            // restart). Only while there is something to drain: a binding that is done
            // (or a stale copy of one whose finalizer just went) never restarts it.
            if let (Some(embedded), true) = (&ctx.embedded, valid) {
                embedded.ensure(binding);
            }
            let blocker = match (&worker, reached) {
                (WorkerDrain::Remaining(n), Some((client, mount_namespace))) if *n > 0 => {
                    drain_blocker(ctx, &client, &mount_namespace).await
                }
                _ => DeletionBlocker::None,
            };
            let desired = deleting_status(
                message,
                &blocker,
                binding.metadata.generation,
                Timestamp::now(),
            );
            let changed = write_status(ctx, &name, &desired).await?;
            publish_changes(ctx, binding, &changed).await;
            return Ok(Action::requeue(ctx.config.drain_interval));
        }
        DeletionStep::Force => {
            let removed = drain::force_remove_virtual_nodes(&ctx.computing, &name)
                .await
                .map_err(vnode_error("remove"))?;
            let note = match &worker {
                WorkerDrain::Unreachable(cause) => format!(
                    "deleted without draining the unreachable worker ({cause}); removed {removed} virtual node(s)"
                ),
                _ => format!("removed {removed} virtual node(s)"),
            };
            publish(ctx, binding, EventType::Warning, "ForceDeleted", &note).await;
        }
        DeletionStep::Finish => {}
    }
    match &ctx.embedded {
        Some(embedded) => embedded.stop(&name).await,
        None => remove_workloads(ctx, &name).await?,
    }
    hold_finalizer(ctx, binding, false).await?;
    ctx.forget_worker(&name);
    tracing::info!(binding = %name, "drained; finalizer removed");
    Ok(Action::await_change())
}

/// Whether the syncer can remove what is left in the worker: the same review as for a live
/// binding, so a kubeconfig without (say) `deletecollection` is reported instead of the
/// deletion waiting for ever. A review that cannot be made blocks nothing.
async fn drain_blocker(ctx: &Context, worker: &Client, mount_namespace: &str) -> DeletionBlocker {
    let required = required_permissions(mount_namespace);
    let review = tokio::time::timeout(
        ctx.config.worker_timeout,
        missing_permissions(worker, &required),
    );
    match review.await {
        Ok(Ok(missing)) if !missing.is_empty() => {
            DeletionBlocker::PermissionDenied(describe_missing(&missing))
        }
        _ => DeletionBlocker::None,
    }
}

/// What is left in the worker, and the client and mount namespace it was counted with. A
/// binding that never had a syncer (no `SyncerReady` condition was ever written) cannot
/// have mapped anything, so its worker is not asked.
async fn worker_drain(
    binding: &ClusterBinding,
    ctx: &Context,
    valid: bool,
) -> (WorkerDrain, Option<(Client, String)>) {
    let ever_synced = binding
        .status
        .as_ref()
        .is_some_and(|s| s.conditions.iter().any(|c| c.type_ == ctype::SYNCER_READY));
    let mount_namespace = binding
        .spec
        .mount_namespace
        .clone()
        .filter(|ns| !ns.is_empty());
    let Some(mount_namespace) = mount_namespace.filter(|_| ever_synced && valid) else {
        return (WorkerDrain::NothingMapped, None);
    };
    let config = &ctx.config;
    let worker = match connect_worker(
        &ctx.computing,
        binding,
        &config.templates.namespace,
        &config.client_options,
        config.probe_timeout,
    )
    .await
    {
        Ok(worker) => worker,
        // The Secret may be gone before the binding: the last client that worked still
        // tells whether the drain is done.
        Err(err) => match ctx.remembered_worker(&binding.name_any()) {
            Some(worker) => worker,
            None => return (WorkerDrain::Unreachable(err.to_string()), None),
        },
    };
    let count = tokio::time::timeout(
        config.worker_timeout,
        crate::syncer::topdown::remaining_physical_objects(&worker, &mount_namespace),
    );
    let drain = match count.await {
        Ok(Ok(n)) => WorkerDrain::Remaining(n),
        Ok(Err(err)) => WorkerDrain::Unreachable(describe_kube_error(&err)),
        Err(_) => WorkerDrain::Unreachable(format!("no answer within {:?}", config.worker_timeout)),
    };
    (drain, Some((worker, mount_namespace)))
}

/// Deletes the workload objects of `binding` (those already gone are fine).
async fn remove_workloads(ctx: &Context, binding: &str) -> Result<(), Error> {
    let t = &ctx.config.templates;
    let ns = t.namespace.as_str();
    let c = &ctx.computing;
    let names = workload_names(binding, ns);
    delete_object(
        &Api::<Deployment>::namespaced(c.clone(), ns),
        "Deployment",
        &names.syncer,
    )
    .await?;
    delete_object(
        &Api::<Deployment>::namespaced(c.clone(), ns),
        "Deployment",
        &names.proxier,
    )
    .await?;
    delete_object(
        &Api::<Service>::namespaced(c.clone(), ns),
        "Service",
        &names.proxier,
    )
    .await?;
    delete_object(
        &Api::<Secret>::namespaced(c.clone(), ns),
        "Secret",
        &names.proxier_tls,
    )
    .await?;
    delete_object(
        &Api::<ClusterRoleBinding>::all(c.clone()),
        "ClusterRoleBinding",
        &names.cluster_role,
    )
    .await?;
    delete_object(
        &Api::<ClusterRole>::all(c.clone()),
        "ClusterRole",
        &names.cluster_role,
    )
    .await?;
    delete_object(
        &Api::<ServiceAccount>::namespaced(c.clone(), ns),
        "ServiceAccount",
        &names.service_account,
    )
    .await
}

async fn delete_object<K>(api: &Api<K>, kind: &'static str, name: &str) -> Result<(), Error>
where
    K: Resource + Clone + Debug + DeserializeOwned,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(err) if is_not_found(&err) => Ok(()),
        Err(source) => Err(Error::Workload {
            action: "delete",
            kind,
            name: name.to_owned(),
            source,
        }),
    }
}

/// Adds (`hold`) or removes the manager's finalizer on `binding` (as read); a guarded JSON
/// patch that fails if the finalizers changed meanwhile (the next reconcile sees the fresh
/// object).
/// Upstream Kubeocean's two finalizers are removed either way (taken over by ours).
async fn hold_finalizer(ctx: &Context, binding: &ClusterBinding, hold: bool) -> Result<(), Error> {
    let Some(wanted) = upgrade::binding_finalizers(binding.finalizers(), FINALIZER, hold) else {
        return Ok(());
    };
    let api: Api<ClusterBinding> = Api::all(ctx.computing.clone());
    set_finalizers(&api, &binding.metadata, &wanted)
        .await
        .map_err(|source| Error::Finalizer {
            binding: binding.name_any(),
            source,
        })
}

/// Writes `desired` into the binding's status (read-modify-write, retried on conflict).
/// Returns the conditions that changed.
async fn write_status(
    ctx: &Context,
    name: &str,
    desired: &DesiredStatus,
) -> Result<Vec<Condition>, Error> {
    let api: Api<ClusterBinding> = Api::all(ctx.computing.clone());
    let fail = |source| Error::Status {
        binding: name.to_owned(),
        source,
    };
    for _ in 0..3 {
        let Some(mut binding) = api.get_opt(name).await.map_err(fail)? else {
            return Ok(Vec::new());
        };
        let mut status = binding.status.clone().unwrap_or_default();
        let changed = merge_conditions(&mut status.conditions, desired.conditions.clone());
        let phase_changed = desired.phase.is_some() && status.phase != desired.phase;
        if changed.is_empty() && !phase_changed {
            return Ok(Vec::new());
        }
        if let Some(phase) = desired.phase {
            status.phase = Some(phase);
        }
        if status.phase == Some(ClusterBindingPhase::Ready) {
            status.last_sync_time = Some(Time(Timestamp::now()));
        }
        binding.status = Some(status);
        match api
            .replace_status(name, &PostParams::default(), &binding)
            .await
        {
            Ok(_) => return Ok(changed),
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(err) => return Err(fail(err)),
        }
    }
    // Lost three races in a row: the next reconcile (triggered by those writes) retries.
    Ok(Vec::new())
}

/// One Event per change of the `Ready` condition: Warning for failures, Normal otherwise.
async fn publish_changes(ctx: &Context, binding: &ClusterBinding, changed: &[Condition]) {
    for c in changed.iter().filter(|c| c.type_ == ctype::READY) {
        let type_ = if is_failure_reason(&c.reason) {
            EventType::Warning
        } else {
            EventType::Normal
        };
        publish(ctx, binding, type_, &c.reason, &c.message).await;
    }
}

async fn publish(
    ctx: &Context,
    binding: &ClusterBinding,
    type_: EventType,
    reason_text: &str,
    note: &str,
) {
    let event = Event {
        type_,
        reason: reason_text.to_owned(),
        note: Some(truncate_utf8(note, kube_kit::controller::MAX_EVENT_NOTE_BYTES).to_owned()),
        action: if reason_text == reason::DELETING {
            "Delete".to_owned()
        } else {
            "Reconcile".to_owned()
        },
        secondary: None,
    };
    if let Err(err) = ctx.recorder.publish(&event, &binding.object_ref(&())).await {
        tracing::warn!(binding = %binding.name_any(), error = %err, "cannot publish an event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_certificate_is_kept_until_its_renewal_time() {
        let secret = |annotations: &[(&str, &str)]| Secret {
            metadata: kube::api::ObjectMeta {
                annotations: Some(
                    annotations
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..Default::default()
            },
            ..Secret::default()
        };
        let now: Timestamp = "2030-01-01T00:00:00Z".parse().unwrap();
        let later = "2030-06-01T00:00:00Z";
        let earlier = "2029-06-01T00:00:00Z";
        let cases = [
            (
                secret(&[
                    (CERT_SOURCE_ANNOTATION, "cluster"),
                    (CERT_RENEW_ANNOTATION, later),
                ]),
                Some(ServingCertSource::Cluster(String::new())),
            ),
            (
                secret(&[
                    (CERT_SOURCE_ANNOTATION, "cluster"),
                    (CERT_RENEW_ANNOTATION, earlier),
                ]),
                None,
            ),
            (
                secret(&[
                    (CERT_SOURCE_ANNOTATION, "self-signed"),
                    (CERT_RENEW_ANNOTATION, later),
                    (CERT_REASON_ANNOTATION, "denied"),
                ]),
                Some(ServingCertSource::SelfSigned("denied".into())),
            ),
            // Written by an older manager (self-signed, never renewed): replaced.
            (secret(&[]), None),
            (
                secret(&[
                    (CERT_SOURCE_ANNOTATION, "cluster"),
                    (CERT_RENEW_ANNOTATION, "soon"),
                ]),
                None,
            ),
            (
                secret(&[
                    (CERT_SOURCE_ANNOTATION, "other"),
                    (CERT_RENEW_ANNOTATION, later),
                ]),
                None,
            ),
        ];
        for (i, (secret, want)) in cases.into_iter().enumerate() {
            assert_eq!(stored_certificate(&secret, now), want, "case {i}");
        }
    }
}
