//! Wiring of the top-down half into a sync session: the watches that feed its state
//! ([`super::state`]), and the workers that run the reconcilers on its queues.
//!
//! The worker-side pod watch is the bottom-up one (see [`TopDown::on_physical_pods`]); every
//! other watch is started here. Reconcilers start once every store is complete.

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    ConfigMap, Event, Namespace, ObjectReference, PersistentVolume, PersistentVolumeClaim, Pod,
    Secret, Service,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ObjectMeta, PostParams};
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::error::{Side, TopDownError, request};
use super::state::{CLEANUP_KEY, copied_from, owner_pod_key};
use super::store::{CopyKey, CopyKind};
use super::{
    cleanup, event_reflection, physical_pod, service_reflection, token_refresh, virtual_copy,
    virtual_pod, virtual_volume,
};
use crate::labels;
use crate::syncer::context::Context;
use crate::syncer::queue::FailureCounts;
use crate::syncer::queue::WorkQueue;
use crate::syncer::reflector::spawn_reflector;
use crate::syncer::worker;

pub use super::state::{Stores, TopDown};
pub use crate::syncer::context::EVENT_REPORTER;

/// The reconcilers of the top-down half.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reconciler {
    /// Virtual pod -> physical pod (create, follow, delete).
    VirtualPod,
    /// Physical pod -> virtual pod status; orphan collection.
    PhysicalPod,
    /// ConfigMap, Secret and claim copies: keep in step, collect when unused.
    Copy,
    /// Service-account token Secrets.
    Token,
    /// Removal of everything in the worker once the binding is deleted.
    Cleanup,
    /// Services of `serviceNamespaces` and their EndpointSlices; the in-cluster network.
    ServiceReflection,
    /// Worker Events about physical pods and claims -> Events about the virtual objects.
    EventReflection,
}

impl Reconciler {
    /// Name used in metrics and logs.
    pub fn name(self) -> &'static str {
        match self {
            Reconciler::VirtualPod => virtual_pod::NAME,
            Reconciler::PhysicalPod => physical_pod::NAME,
            Reconciler::Copy => virtual_copy::NAME,
            Reconciler::Token => token_refresh::NAME,
            Reconciler::Cleanup => cleanup::NAME,
            Reconciler::ServiceReflection => service_reflection::NAME,
            Reconciler::EventReflection => event_reflection::NAME,
        }
    }
}

/// Starts the watches the top-down half needs besides the worker pod watch.
pub(crate) fn spawn_reflectors(
    ctx: &Arc<Context>,
    td: &Arc<TopDown>,
    tasks: &mut JoinSet<()>,
    synced: &mut Vec<oneshot::Receiver<()>>,
    token: &CancellationToken,
) {
    let all = watcher::Config::default;
    let managed = format!("{}={}", labels::MANAGED_BY, labels::MANAGED_BY_VALUE);
    let mount = td.settings.mount_namespace.clone();

    {
        let (c, t) = (ctx.clone(), td.clone());
        spawn_reflector::<Pod, _>(
            tasks,
            synced,
            Api::all(ctx.computing.clone()),
            all(),
            "virtual pods",
            token,
            move |change| t.on_virtual_pods(&c, change),
        );
    }
    {
        let t = td.clone();
        spawn_reflector::<ConfigMap, _>(
            tasks,
            synced,
            Api::all(ctx.computing.clone()),
            all(),
            "virtual ConfigMaps",
            token,
            move |change| {
                t.on_virtual_objects(
                    CopyKind::ConfigMap,
                    change,
                    |s| &mut s.config_maps,
                    |old, _| old.is_none(),
                )
            },
        );
    }
    {
        let t = td.clone();
        spawn_reflector::<Secret, _>(
            tasks,
            synced,
            Api::all(ctx.computing.clone()),
            all(),
            "virtual Secrets",
            token,
            move |change| {
                t.on_virtual_objects(
                    CopyKind::Secret,
                    change,
                    |s| &mut s.secrets,
                    |old, _| old.is_none(),
                )
            },
        );
    }
    {
        let t = td.clone();
        spawn_reflector::<PersistentVolumeClaim, _>(
            tasks,
            synced,
            Api::all(ctx.computing.clone()),
            all(),
            "virtual PersistentVolumeClaims",
            token,
            move |change| {
                // A claim that turns Bound is news for the pods waiting for it.
                t.on_virtual_objects(
                    CopyKind::PersistentVolumeClaim,
                    change,
                    |s| &mut s.pvcs,
                    |old, new| {
                        let phase = |c: &PersistentVolumeClaim| {
                            c.status.as_ref().and_then(|s| s.phase.clone())
                        };
                        old.is_none_or(|o| phase(o) != phase(new))
                    },
                )
            },
        );
    }
    {
        let t = td.clone();
        spawn_reflector::<PersistentVolume, _>(
            tasks,
            synced,
            Api::all(ctx.computing.clone()),
            all(),
            "virtual PersistentVolumes",
            token,
            move |change| t.on_virtual_volumes(change),
        );
    }
    {
        let t = td.clone();
        spawn_reflector::<ConfigMap, _>(
            tasks,
            synced,
            Api::namespaced(ctx.worker.clone(), &mount),
            all().labels(&managed),
            "physical ConfigMaps",
            token,
            move |change| {
                t.on_physical_objects(CopyKind::ConfigMap, change, |s| &mut s.physical_config_maps)
            },
        );
    }
    {
        let t = td.clone();
        spawn_reflector::<Secret, _>(
            tasks,
            synced,
            Api::namespaced(ctx.worker.clone(), &mount),
            all().labels(&managed),
            "physical Secrets",
            token,
            move |change| {
                t.on_physical_objects(CopyKind::Secret, change, |s| &mut s.physical_secrets)
            },
        );
    }
    {
        let t = td.clone();
        spawn_reflector::<PersistentVolumeClaim, _>(
            tasks,
            synced,
            Api::namespaced(ctx.worker.clone(), &mount),
            all().labels(&managed),
            "physical PersistentVolumeClaims",
            token,
            move |change| {
                t.on_physical_objects(CopyKind::PersistentVolumeClaim, change, |s| {
                    &mut s.physical_pvcs
                })
            },
        );
    }
    {
        let t = td.clone();
        let selector = format!("{managed},{}={}", labels::CLUSTER_BINDING, td.settings.name);
        spawn_reflector::<PersistentVolume, _>(
            tasks,
            synced,
            Api::all(ctx.worker.clone()),
            all().labels(&selector),
            "physical PersistentVolumes",
            token,
            move |change| t.on_physical_volumes(change),
        );
    }
    spawn_service_reflectors(ctx, td, tasks, synced, token);
}

/// The watches of Services and EndpointSlices: all of the computing cluster's, ours in the
/// mount namespace. The worker-side ones do not hold the start of the reconcilers: a worker
/// chart older than Service reflection cannot watch them, and pods must still be mapped.
fn spawn_service_reflectors(
    ctx: &Arc<Context>,
    td: &Arc<TopDown>,
    tasks: &mut JoinSet<()>,
    synced: &mut Vec<oneshot::Receiver<()>>,
    token: &CancellationToken,
) {
    let managed = format!("{}={}", labels::MANAGED_BY, labels::MANAGED_BY_VALUE);
    let mount = td.settings.mount_namespace.clone();
    let mut not_awaited = Vec::new();
    {
        let (c, t) = (ctx.clone(), td.clone());
        spawn_reflector::<Service, _>(
            tasks,
            synced,
            Api::all(ctx.computing.clone()),
            watcher::Config::default(),
            "virtual Services",
            token,
            move |change| t.on_virtual_services(&c.config, change),
        );
    }
    {
        let t = td.clone();
        spawn_reflector::<EndpointSlice, _>(
            tasks,
            synced,
            Api::all(ctx.computing.clone()),
            watcher::Config::default(),
            "virtual EndpointSlices",
            token,
            move |change| t.on_virtual_slices(change),
        );
    }
    {
        let t = td.clone();
        spawn_reflector::<Service, _>(
            tasks,
            &mut not_awaited,
            Api::namespaced(ctx.worker.clone(), &mount),
            watcher::Config::default().labels(&managed),
            "physical Services",
            token,
            move |change| t.on_physical_reflections(change, |s| &mut s.physical_services),
        );
    }
    {
        let t = td.clone();
        spawn_reflector::<EndpointSlice, _>(
            tasks,
            &mut not_awaited,
            Api::namespaced(ctx.worker.clone(), &mount),
            watcher::Config::default().labels(&managed),
            "physical EndpointSlices",
            token,
            move |change| t.on_physical_reflections(change, |s| &mut s.physical_endpoint_slices),
        );
    }
    // Events are news, not state: a worker chart that grants no Event watch leaves them out
    // and pods are mapped all the same.
    {
        let t = td.clone();
        spawn_reflector::<Event, _>(
            tasks,
            &mut not_awaited,
            Api::namespaced(ctx.worker.clone(), &mount),
            watcher::Config::default(),
            "worker Events",
            token,
            move |change| t.on_physical_events(change),
        );
    }
}

/// Once every store is complete: makes sure the mount namespace exists, queues everything
/// once (which also collects what a previous run left behind) and starts the workers.
pub(crate) fn start(
    ctx: &Arc<Context>,
    td: &Arc<TopDown>,
    tasks: &mut JoinSet<()>,
    token: &CancellationToken,
) {
    {
        let stores = td.stores();
        let pods = stores.virtual_pods.keys();
        td.pods.add_all(pods.iter().map(String::as_str));
        let physical: Vec<String> = stores
            .physical_pods
            .values()
            .map(|p| p.name_any())
            .collect();
        td.physical_pods
            .add_all(physical.iter().map(String::as_str));
        let mut copies: HashSet<String> = HashSet::new();
        let mut tokens: Vec<String> = Vec::new();
        for (kind, metas) in [
            (
                CopyKind::ConfigMap,
                stores
                    .physical_config_maps
                    .values()
                    .map(|o| o.metadata.clone())
                    .collect::<Vec<_>>(),
            ),
            (
                CopyKind::Secret,
                stores
                    .physical_secrets
                    .values()
                    .map(|o| o.metadata.clone())
                    .collect(),
            ),
            (
                CopyKind::PersistentVolumeClaim,
                stores
                    .physical_pvcs
                    .values()
                    .map(|o| o.metadata.clone())
                    .collect(),
            ),
        ] {
            for meta in metas {
                if let Some(pod) = owner_pod_key(&meta) {
                    tokens.push(pod);
                } else if let Some((ns, name)) = copied_from(&meta) {
                    copies.insert(CopyKey::new(kind, &ns, &name).to_string());
                }
            }
        }
        td.copies.add_all(copies.iter().map(String::as_str));
        td.tokens.add_all(tokens.iter().map(String::as_str));
        td.cleanup.add(CLEANUP_KEY);
    }
    td.enqueue_all_services();
    {
        let (c, t) = (ctx.clone(), td.clone());
        tasks.spawn(async move { ensure_mount_namespace(&c, &t).await });
    }
    let workers = ctx.config.workers.max(1);
    for (which, count) in [
        (Reconciler::VirtualPod, workers),
        (Reconciler::PhysicalPod, workers),
        (Reconciler::Copy, workers.div_ceil(4)),
        (Reconciler::Token, workers.div_ceil(4)),
        (Reconciler::Cleanup, 1),
        (Reconciler::ServiceReflection, workers.div_ceil(4)),
        (Reconciler::EventReflection, workers.div_ceil(4)),
    ] {
        for _ in 0..count {
            let worker = Worker {
                td: td.clone(),
                which,
            };
            tasks.spawn(worker::run(ctx.clone(), worker, token.clone()));
        }
    }
}

/// Creates the mount namespace when it is missing (the worker-side chart normally does).
async fn ensure_mount_namespace(ctx: &Context, td: &TopDown) {
    let name = td.settings.mount_namespace.clone();
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    let api: Api<Namespace> = Api::all(ctx.worker.clone());
    let created = request(
        ctx.config.request_timeout,
        Side::Worker,
        "create",
        "Namespace",
        &name,
        api.create(&PostParams::default(), &namespace),
    )
    .await;
    match created {
        Ok(_) => tracing::info!(namespace = %name, "mount namespace created in the worker"),
        Err(err) if err.code() == Some(409) => {}
        // The worker chart creates the namespace and grants no namespace creation: expected.
        // Were it missing, creating the physical pods would say so.
        Err(err) if err.code() == Some(403) => {
            tracing::debug!(namespace = %name, error = %err, "not allowed to create the mount namespace; it is expected to exist")
        }
        Err(err) => tracing::warn!(error = %err, "cannot make sure the mount namespace exists"),
    }
}

/// Reconciles one copy key ([`CopyKey`]): ConfigMaps and Secrets in [`virtual_copy`],
/// claims in [`virtual_volume`].
async fn reconcile_copy(
    ctx: &Context,
    td: &TopDown,
    key: &str,
) -> Result<Option<Instant>, TopDownError> {
    let Ok(copy) = key.parse::<CopyKey>() else {
        tracing::warn!(key, "malformed copy key dropped");
        return Ok(None);
    };
    match copy.kind {
        CopyKind::ConfigMap | CopyKind::Secret => virtual_copy::reconcile(ctx, td, &copy).await?,
        CopyKind::PersistentVolumeClaim => virtual_volume::reconcile(ctx, td, &copy).await?,
    }
    Ok(None)
}

/// One top-down reconciler of a session, for the worker loop ([`worker::run`]).
struct Worker {
    td: Arc<TopDown>,
    which: Reconciler,
}

impl Worker {
    /// The object a reconcile failure is reported on.
    fn target(&self, ctx: &Context, key: &str) -> Option<ObjectReference> {
        let td = &self.td;
        let stores = td.stores();
        match self.which {
            Reconciler::VirtualPod | Reconciler::Token => {
                stores.virtual_pods.get(key).map(|p| p.object_ref(&()))
            }
            Reconciler::PhysicalPod => {
                let physical = stores.physical_pods.get(&td.physical_key(key))?;
                let owner = owner_pod_key(&physical.metadata)?;
                stores.virtual_pods.get(&owner).map(|p| p.object_ref(&()))
            }
            Reconciler::Copy => {
                let copy: CopyKey = key.parse().ok()?;
                let key = copy.object_key();
                match copy.kind {
                    CopyKind::ConfigMap => stores.config_maps.get(&key).map(|o| o.object_ref(&())),
                    CopyKind::Secret => stores.secrets.get(&key).map(|o| o.object_ref(&())),
                    CopyKind::PersistentVolumeClaim => {
                        stores.pvcs.get(&key).map(|o| o.object_ref(&()))
                    }
                }
            }
            Reconciler::Cleanup => ctx.computing_index().binding().map(|b| b.object_ref(&())),
            Reconciler::ServiceReflection => match stores.services.get(key) {
                Some(service) => Some(service.object_ref(&())),
                None => ctx.computing_index().binding().map(|b| b.object_ref(&())),
            },
            Reconciler::EventReflection => {
                let (_, name) = key.split_once('/')?;
                let physical = stores.physical_pods.get(&td.physical_key(name))?;
                let owner = owner_pod_key(&physical.metadata)?;
                stores.virtual_pods.get(&owner).map(|p| p.object_ref(&()))
            }
        }
    }

    fn work_queue(&self) -> &WorkQueue {
        let td = &self.td;
        match self.which {
            Reconciler::VirtualPod => &td.pods,
            Reconciler::PhysicalPod => &td.physical_pods,
            Reconciler::Copy => &td.copies,
            Reconciler::Token => &td.tokens,
            Reconciler::Cleanup => &td.cleanup,
            Reconciler::ServiceReflection => &td.services,
            Reconciler::EventReflection => &td.events,
        }
    }

    fn failure_counts(&self) -> &FailureCounts {
        let f = &self.td.failures;
        match self.which {
            Reconciler::VirtualPod => &f.pods,
            Reconciler::PhysicalPod => &f.physical_pods,
            Reconciler::Copy => &f.copies,
            Reconciler::Token => &f.tokens,
            Reconciler::Cleanup => &f.cleanup,
            Reconciler::ServiceReflection => &f.services,
            Reconciler::EventReflection => &f.events,
        }
    }
}

impl worker::Reconciler for Worker {
    type Error = TopDownError;

    fn name(&self) -> &'static str {
        self.which.name()
    }

    fn queue<'a>(&'a self, _ctx: &'a Context) -> &'a WorkQueue {
        self.work_queue()
    }

    fn failures<'a>(&'a self, _ctx: &'a Context) -> &'a FailureCounts {
        self.failure_counts()
    }

    async fn reconcile(&self, ctx: &Context, key: &str) -> Result<Option<Instant>, TopDownError> {
        let td = &self.td;
        match self.which {
            Reconciler::VirtualPod => virtual_pod::reconcile(ctx, td, key).await,
            Reconciler::PhysicalPod => physical_pod::reconcile(ctx, td, key).await,
            Reconciler::Copy => reconcile_copy(ctx, td, key).await,
            Reconciler::Token => token_refresh::reconcile(ctx, td, key).await,
            Reconciler::Cleanup => cleanup::reconcile(ctx, td).await,
            Reconciler::ServiceReflection => service_reflection::reconcile(ctx, td, key).await,
            Reconciler::EventReflection => event_reflection::reconcile(ctx, td, key).await,
        }
    }

    fn failure_target(&self, ctx: &Context, key: &str) -> Option<ObjectReference> {
        self.target(ctx, key)
    }

    fn on_failure(&self, ctx: &Context, reason: &'static str) {
        if let Some(metrics) = &ctx.config.metrics {
            metrics
                .topdown()
                .error(&self.td.settings.name, self.which.name(), reason);
        }
    }
}
