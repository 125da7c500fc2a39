//! The manager: reconciles ClusterBindings of the computing cluster into a syncer and a
//! proxier per binding.
//!
//! - [`cluster_binding`]: the reconciler — validate, reach the worker, check permissions,
//!   keep the workloads, report phase, conditions and Events; drain before deletion;
//! - [`templates`]: the Deployments, Service, ServiceAccount and RBAC as pure functions;
//!   [`pod_settings`]: the operator's pod settings of those Deployments (`--workload-template`);
//! - [`validate`], [`permissions`], [`status`], [`drain`]: the decisions, as pure functions
//!   where they can be;
//! - [`embedded`]: `--embedded`, one supervised task group per binding instead of
//!   Deployments; [`proxier_runtime`]: the group that runs the proxier and the syncer.
//!
//! **Readiness.** With Deployments, `SyncerReady` and `ProxierReady` are `True` when the
//! Deployment carries the current template, its controller has observed that generation and
//! it has at least one available replica ([`status::deployment_state`]); until then they are
//! `False` with reason `Progressing`. In embedded mode they follow what the task group
//! reports ([`embedded::ComponentState`]).

pub mod cluster_binding;
pub mod drain;
pub mod embedded;
pub mod metrics;
pub mod permissions;
pub mod pod_settings;
pub mod proxier_runtime;
pub mod serving_cert;
pub mod status;
pub mod templates;
pub mod validate;

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::runtime::controller::Controller;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client};
use kube_kit::admin::ReadyFlag;
use kube_kit::client::ClientOptions;
use kube_kit::controller::{ControllerMetrics, ControllerRunner, ReconcileError};
use tokio_util::sync::CancellationToken;

use crate::crd::ClusterBinding;
use crate::labels;

pub use drain::FORCE_DELETE_ANNOTATION;
pub use embedded::{
    BindingRuntime, ComponentState, EmbeddedRunner, RuntimeReporter, RuntimeStatus, SyncerRuntime,
};
pub use metrics::ManagerMetrics;
pub use pod_settings::{PodSettings, WorkloadTemplateError, parse_workload_template};
pub use proxier_runtime::{
    DEFAULT_EMBEDDED_PROXIER_PORTS, EmbeddedProxierConfig, SyncerProxierRuntime, port_candidates,
};
pub use templates::{Templates, WorkloadNames, WorkloadTemplate, workload_names};

/// Finalizer the manager holds on every ClusterBinding until it is drained.
pub const FINALIZER: &str = "kubeocean.io/manager";
/// Field manager, Event reporter and controller name.
pub const MANAGER_NAME: &str = "kubeocean-manager";
/// Name of the ClusterBinding controller (metrics, logs).
pub const CONTROLLER_NAME: &str = "clusterbinding";

/// Settings of the manager.
#[derive(Clone, Debug)]
pub struct ManagerConfig {
    /// The workloads' namespace and shape; the namespace is also where a binding's Secret is
    /// looked up when its `secretRef` has none.
    pub templates: Templates,
    /// Options of the clients built for workers (user agent, rate limit).
    pub client_options: ClientOptions,
    /// How long a worker may take to answer the connectivity probe.
    pub probe_timeout: Duration,
    /// How long the permission review and the drain count may take on a worker (a worker
    /// that stops answering must not hold its binding's reconcile).
    pub worker_timeout: Duration,
    /// Wait before looking again at a binding that failed or is progressing.
    pub retry_interval: Duration,
    /// Wait before looking again at a Ready binding (connectivity and permissions).
    pub resync_interval: Duration,
    /// Wait between checks while a deleted binding drains.
    pub drain_interval: Duration,
    /// Upstream-named metrics (bindings by status, reconciles per binding); `None`: not
    /// exported.
    pub metrics: Option<metrics::ManagerMetrics>,
    /// How the proxiers' serving certificates are obtained (workload mode).
    pub serving_cert: serving_cert::ServingCertConfig,
}

impl ManagerConfig {
    /// Defaults for workloads described by `templates`.
    pub fn new(templates: Templates) -> ManagerConfig {
        ManagerConfig {
            templates,
            client_options: ClientOptions::new(kube_kit::client::user_agent(
                MANAGER_NAME,
                env!("CARGO_PKG_VERSION"),
            )),
            probe_timeout: Duration::from_secs(5),
            worker_timeout: Duration::from_secs(15),
            retry_interval: Duration::from_secs(10),
            resync_interval: Duration::from_secs(300),
            drain_interval: Duration::from_secs(5),
            metrics: None,
            serving_cert: serving_cert::ServingCertConfig::default(),
        }
    }
}

/// What failed while reconciling, on which object.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Adding or removing the finalizer failed.
    #[error("cannot update the finalizers of ClusterBinding {binding}: {source}")]
    Finalizer {
        /// Binding name.
        binding: String,
        /// The API error.
        source: kube::Error,
    },
    /// Writing the binding's status failed.
    #[error("cannot write the status of ClusterBinding {binding}: {source}")]
    Status {
        /// Binding name.
        binding: String,
        /// The API error.
        source: kube::Error,
    },
    /// Reading, writing or deleting a workload object failed.
    #[error("cannot {action} {kind} {name}: {source}")]
    Workload {
        /// What was attempted.
        action: &'static str,
        /// Object kind.
        kind: &'static str,
        /// `namespace/name` or `name`.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// The proxier's serving certificate could not be generated.
    #[error("cannot generate the serving certificate of proxier {name}: {reason}")]
    Certificate {
        /// Secret name.
        name: String,
        /// What failed.
        reason: String,
    },
    /// Listing the ClusterBindings (to check that a `clusterID` is not taken) failed.
    #[error("cannot list ClusterBindings: {0}")]
    ListBindings(#[source] kube::Error),
    /// Counting or removing what a deleted binding left in the computing cluster failed.
    #[error("cannot {action} the virtual nodes of ClusterBinding {binding}: {source}")]
    VirtualNodes {
        /// What was attempted.
        action: &'static str,
        /// Binding name.
        binding: String,
        /// The API error.
        source: kube::Error,
    },
}

impl ReconcileError for Error {
    fn reason(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Error::Finalizer { .. } => "FinalizerUpdateFailed",
            Error::Status { .. } => "StatusUpdateFailed",
            Error::Workload { .. } => "WorkloadWriteFailed",
            Error::Certificate { .. } => "CertificateFailed",
            Error::VirtualNodes { .. } => "VirtualNodeCleanupFailed",
            Error::ListBindings(_) => "BindingListFailed",
        })
    }
}

/// What every reconcile shares.
pub struct Context {
    /// Client of the computing cluster.
    pub computing: Client,
    /// Settings.
    pub config: ManagerConfig,
    /// Publishes Events on bindings.
    pub recorder: Recorder,
    /// The task groups, in embedded mode; `None` runs Deployments.
    pub embedded: Option<Arc<EmbeddedRunner>>,
    /// The last worker client that answered, per binding: a deleted binding's drain can still
    /// be checked when its Secret went first.
    workers: Mutex<HashMap<String, Client>>,
}

impl Context {
    fn remember_worker(&self, binding: &str, worker: &Client) {
        self.workers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(binding.to_owned(), worker.clone());
    }

    fn remembered_worker(&self, binding: &str) -> Option<Client> {
        self.workers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(binding)
            .cloned()
    }

    fn forget_worker(&self, binding: &str) {
        self.workers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(binding);
    }
}

/// The ClusterBinding controller.
pub struct Manager {
    context: Arc<Context>,
}

impl Manager {
    /// A manager that keeps Deployments for every binding.
    pub fn new(computing: Client, config: ManagerConfig) -> Manager {
        Manager::build(computing, config, None)
    }

    /// A manager that runs each binding's task group on `runner` instead of Deployments.
    pub fn embedded(
        computing: Client,
        config: ManagerConfig,
        runner: Arc<EmbeddedRunner>,
    ) -> Manager {
        Manager::build(computing, config, Some(runner))
    }

    fn build(
        computing: Client,
        config: ManagerConfig,
        embedded: Option<Arc<EmbeddedRunner>>,
    ) -> Manager {
        let recorder = Recorder::new(
            computing.clone(),
            Reporter {
                controller: MANAGER_NAME.to_owned(),
                instance: None,
            },
        );
        Manager {
            context: Arc::new(Context {
                computing,
                config,
                recorder,
                embedded,
                workers: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The shared context (for tests and embedders).
    pub fn context(&self) -> &Arc<Context> {
        &self.context
    }

    /// Reconciles bindings until `token` is cancelled. `ready` (if given) stays false until
    /// the binding cache has synced. In embedded mode every task group stops with `token`.
    pub async fn run(
        self,
        metrics: ControllerMetrics,
        ready: Option<ReadyFlag>,
        token: CancellationToken,
    ) {
        let ctx = self.context;
        let c = &ctx.computing;
        let bindings: Api<ClusterBinding> = Api::all(c.clone());
        let mut controller = Controller::new(bindings, watcher::Config::default());
        let store = controller.store();
        match &ctx.embedded {
            None => {
                // Deployment status changes (availability) update the binding's conditions.
                let deployments: Api<Deployment> =
                    Api::namespaced(c.clone(), &ctx.config.templates.namespace);
                let config = watcher::Config::default().labels(&templates::managed_selector());
                controller = controller.watches(deployments, config, |d: Deployment| {
                    d.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(labels::CLUSTER_BINDING))
                        .map(|name| ObjectRef::<ClusterBinding>::new(name))
                });
            }
            Some(runner) => {
                let changes = futures::stream::unfold(runner.subscribe(), |mut rx| async move {
                    rx.changed().await.ok()?;
                    Some(((), rx))
                });
                controller = controller.reconcile_all_on(changes);
            }
        }
        let mut runner = ControllerRunner::new(CONTROLLER_NAME, ctx.clone(), metrics)
            .with_recorder(ctx.recorder.clone());
        if let Some(flag) = ready {
            runner = runner.with_ready_flag(flag);
        }
        let sweep = {
            let ctx = ctx.clone();
            let token = token.clone();
            async move {
                // Groups whose binding vanished without a reconcile (its finalizer removed by
                // hand, say) are stopped here.
                let Some(embedded) = &ctx.embedded else {
                    return;
                };
                let period = ctx.config.resync_interval.min(Duration::from_secs(30));
                loop {
                    tokio::select! {
                        () = token.cancelled() => break,
                        () = tokio::time::sleep(period) => {}
                    }
                    if store.wait_until_ready().await.is_err() {
                        break;
                    }
                    let names: BTreeSet<String> = store
                        .state()
                        .iter()
                        .filter_map(|b| b.metadata.name.clone())
                        .collect();
                    embedded.retain(&names);
                }
            }
        };
        futures::join!(
            runner.run(controller, cluster_binding::reconcile, token.clone()),
            sweep
        );
        if let Some(embedded) = &ctx.embedded {
            embedded.stop_all();
        }
    }
}
