//! The propagation controllers of the emulated Karmada started together over shared
//! informers: the resource detector, the scheduler, the binding controllers, the namespace sync,
//! the execution, work status and binding status controllers. Each runs a level-triggered pass
//! whenever something it watches changes (and every `resync`), so it recovers from what the
//! API server holds, never from memory.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::cluster_passes::clusters;
use super::informers::{Informer, Members, Memo, run_passes};
use super::objects::*;
use super::{binding, binding_status, detector, execution, namespace_sync, scheduler, work_status};

/// What every propagation controller reads: a client of the Karmada API server and the
/// shared informers.
pub struct Karmada {
    /// Client of the Karmada API server.
    pub client: kube::Client,
    /// Clusters.
    pub clusters: Informer,
    /// PropagationPolicies.
    pub pps: Informer,
    /// ClusterPropagationPolicies.
    pub cpps: Informer,
    /// OverridePolicies.
    pub ops: Informer,
    /// ClusterOverridePolicies.
    pub cops: Informer,
    /// ResourceBindings.
    pub rbs: Informer,
    /// ClusterResourceBindings.
    pub crbs: Informer,
    /// Works.
    pub works: Informer,
    /// Namespaces.
    pub namespaces: Informer,
    /// Resource templates, per kind.
    pub templates: Vec<(&'static TemplateKind, Informer)>,
    /// Member connections and informers.
    pub members: Members,
    /// What each controller already did.
    pub memo: Memo,
    /// Stops everything.
    pub shutdown: CancellationToken,
}

impl Karmada {
    fn start(client: kube::Client, shutdown: CancellationToken) -> Arc<Karmada> {
        let i = |r| Informer::start(&client, r, None, &shutdown);
        Arc::new(Karmada {
            clusters: i(clusters()),
            pps: i(propagation_policies()),
            cpps: i(cluster_propagation_policies()),
            ops: i(override_policies()),
            cops: i(cluster_override_policies()),
            rbs: i(resource_bindings()),
            crbs: i(cluster_resource_bindings()),
            works: i(works()),
            namespaces: i(namespaces()),
            templates: TEMPLATE_KINDS
                .iter()
                .map(|k| (k, i(k.resource())))
                .collect(),
            members: Members::default(),
            memo: Memo::default(),
            client,
            shutdown,
        })
    }

    /// Waits (a bounded time) for the informers every controller needs: a controller must not
    /// act on an empty view of what exists.
    async fn ready(&self) {
        let limit = Duration::from_secs(10);
        for i in [
            &self.clusters,
            &self.pps,
            &self.ops,
            &self.rbs,
            &self.works,
            &self.namespaces,
        ] {
            if !i.ready(limit).await {
                tracing::debug!(resource = %i.resource().plural, "informer not ready");
            }
        }
    }
}

/// How often every controller runs without any change (as controller-runtime resyncs).
pub const RESYNC: Duration = Duration::from_secs(30);

fn controller<F, Fut>(
    k: &Arc<Karmada>,
    name: &'static str,
    watched: &[&Informer],
    members: bool,
    pass: F,
) -> tokio::task::JoinHandle<()>
where
    F: Fn(Arc<Karmada>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<bool, String>> + Send,
{
    let wake = Arc::new(Notify::new());
    for i in watched {
        i.wake(&wake);
    }
    if members {
        k.members.wake(&wake);
    }
    let k = k.clone();
    tokio::spawn(async move {
        let shutdown = k.shutdown.clone();
        run_passes(name, wake, RESYNC, shutdown, || pass(k.clone())).await;
    })
}

/// Starts the propagation controllers on `karmada` until `shutdown`; the handle ends when
/// they all stopped.
pub fn spawn(karmada: kube::Client, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let k = Karmada::start(karmada, shutdown);
        k.ready().await;
        let templates: Vec<&Informer> = k.templates.iter().map(|(_, i)| i).collect();
        let mut detector_watch = vec![&k.pps, &k.cpps, &k.rbs, &k.crbs];
        detector_watch.extend(templates.iter().copied());
        let mut binding_watch = vec![&k.rbs, &k.crbs, &k.works, &k.ops, &k.cops, &k.clusters];
        binding_watch.extend(templates.iter().copied());
        let mut status_watch = vec![&k.rbs, &k.crbs, &k.works];
        status_watch.extend(templates.iter().copied());
        let handles = vec![
            controller(
                &k,
                "resource-detector",
                &detector_watch,
                false,
                |k| async move { detector::pass(&k).await },
            ),
            controller(
                &k,
                "scheduler",
                &[&k.rbs, &k.crbs, &k.clusters],
                false,
                |k| async move { scheduler::pass(&k).await },
            ),
            controller(
                &k,
                "binding-controller",
                &binding_watch,
                false,
                |k| async move { binding::pass(&k).await },
            ),
            controller(
                &k,
                "namespace-sync-controller",
                &[&k.namespaces, &k.clusters, &k.works],
                false,
                |k| async move { namespace_sync::pass(&k).await },
            ),
            controller(
                &k,
                "execution-controller",
                &[&k.works, &k.clusters],
                false,
                |k| async move { execution::pass(&k).await },
            ),
            controller(
                &k,
                "work-status-controller",
                &[&k.works, &k.clusters],
                true,
                |k| async move { work_status::pass(&k).await },
            ),
            controller(
                &k,
                "resource-binding-status-controller",
                &status_watch,
                false,
                |k| async move { binding_status::pass(&k).await },
            ),
        ];
        for h in handles {
            let _ = h.await;
        }
    })
}
