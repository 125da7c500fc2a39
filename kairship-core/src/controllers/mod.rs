//! The controller-manager: five controllers and a webhook, one folder each, the runner in its
//! `mod.rs` and its pure logic (no I/O, unit-tested) beside it, sharing a [`Context`].
//!
//! - [`lifecycle`]: finalizer, Provision (the operator's `Karmada` object), safe delete;
//!   decisions in [`lifecycle::decision`].
//! - [`virtual_cluster_sync`]: registration with the read backend (Clusterpedia or embedded);
//!   the desired `PediaCluster` in [`virtual_cluster_sync::pedia_cluster`].
//! - [`resource_statistics`]: `status.summary` from the instances' resources as the shared
//!   instance cache keeps them ([`resource_statistics::cache`], over the router's
//!   [`EmbeddedCacheBackend`]); the arithmetic in [`resource_statistics::summary`].
//! - [`status_sync`]: probes, the operator's Ready condition, the state machine
//!   ([`status_sync::state`]).
//! - [`instance_registry`]: per-instance ClusterRoles ([`instance_registry::rbac`]) and the
//!   [`GlobalRegistry`].
//! - [`role_binding_webhook`]: the signed endpoint an external IAM calls; signature, replay
//!   and body checks in [`role_binding_webhook::request`].
//!
//! Shared by the runners: [`connection`] (reaching an instance; which Secret key holds its
//! kubeconfig in [`connection::kubeconfig`]), [`status`] (status and condition writes) and
//! [`workers`]. Per-instance work (probes, caches, statistics) runs in one task set per
//! instance ([`workers`]) with timeouts on every call to the instance, so a slow or dead
//! instance never delays the others.

pub mod connection;
pub mod instance_registry;
pub mod lifecycle;
pub mod resource_statistics;
pub mod role_binding_webhook;
pub mod status;
pub mod status_sync;
pub mod virtual_cluster_sync;
pub mod workers;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::runtime::{Controller, watcher};
use kube::{Api, runtime::events::Recorder, runtime::events::Reporter};
use kube_kit::admin::Metrics;
use kube_kit::controller::{ControllerMetrics, ControllerRunner, ReconcileError};
use prometheus_client::metrics::counter::Counter;
use tokio_util::sync::CancellationToken;

pub use resource_statistics::cache;

pub use instance_registry::{GlobalRegistry, HttpRegistry, NoopRegistry, RegistryEntry};

use crate::instance::Instance;
use crate::router::EmbeddedCacheBackend;

/// Name under which the controller-manager reports (field manager, event reporter, lease).
pub const MANAGER_NAME: &str = "kairship-controller-manager";

/// Where the instances' resources are read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadBackend {
    /// The apiserver's embedded reflector cache: nothing to register.
    Embedded,
    /// Clusterpedia: a `PediaCluster` per instance, its kubeconfig Secret in `namespace`.
    Clusterpedia {
        /// Clusterpedia's namespace on the host cluster.
        namespace: String,
    },
}

/// Tunables of the controllers.
#[derive(Clone, Debug)]
pub struct ControllerConfig {
    /// Read backend to register instances with.
    pub read_backend: ReadBackend,
    /// Interval between control-plane probes of one instance.
    pub probe_interval: Duration,
    /// Time one probe (or any other single call to an instance) may take.
    pub request_timeout: Duration,
    /// Failed probes in a row that make an instance UNAVAILABLE.
    pub failure_threshold: u32,
    /// How long the statistics wait for every watch cache to sync before summing what is there.
    pub cache_sync_timeout: Duration,
    /// How often a blocked deletion is checked again.
    pub deletion_recheck: Duration,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        Self {
            read_backend: ReadBackend::Embedded,
            probe_interval: Duration::from_secs(10),
            request_timeout: Duration::from_secs(5),
            failure_threshold: 3,
            cache_sync_timeout: Duration::from_secs(30),
            deletion_recheck: Duration::from_secs(10),
        }
    }
}

/// Status writes issued, per controller (a write is a PUT of the status subresource), also
/// exported as Prometheus counters.
#[derive(Debug, Default)]
pub struct WriteCounters {
    /// Writes by resource-statistics.
    pub statistics: Counter,
    /// Writes by status-sync.
    pub status_sync: Counter,
    /// Writes by the lifecycle controller.
    pub lifecycle: Counter,
    /// Summaries computed by resource-statistics (written or not).
    pub statistics_passes: Counter,
}

impl WriteCounters {
    /// Current count of statistics writes.
    pub fn statistics(&self) -> u64 {
        self.statistics.get()
    }

    /// Current count of summaries computed.
    pub fn statistics_passes(&self) -> u64 {
        self.statistics_passes.get()
    }

    /// Current count of status-sync writes.
    pub fn status_sync(&self) -> u64 {
        self.status_sync.get()
    }

    fn register(&self, metrics: &Metrics) {
        metrics.with_registry(|registry| {
            registry.register(
                "kairship_summary_writes",
                "Instance status writes by resource-statistics",
                self.statistics.clone(),
            );
            registry.register(
                "kairship_summary_passes",
                "Instance summaries computed by resource-statistics, written or not",
                self.statistics_passes.clone(),
            );
            registry.register(
                "kairship_status_sync_writes",
                "Instance status writes by status-sync",
                self.status_sync.clone(),
            );
            registry.register(
                "kairship_lifecycle_status_writes",
                "Instance status writes by the lifecycle controller",
                self.lifecycle.clone(),
            );
        });
    }
}

/// What every controller shares.
pub struct Context {
    /// Client of the host cluster (where Instances live).
    pub host: Client,
    /// Tunables.
    pub config: ControllerConfig,
    /// The global registry instances are announced to.
    pub registry: Arc<dyn GlobalRegistry>,
    /// Per-instance task sets.
    pub workers: workers::Workers,
    /// The connections status-sync holds, as instance clients.
    pub connections: Arc<workers::PublishedConnections>,
    /// The instances' resources as the statistics read them: the controllers' own cache over
    /// [`Context::connections`], or the API server's when one process runs both
    /// ([`Context::sharing_instance_cache`]).
    pub instance_cache: Arc<EmbeddedCacheBackend>,
    /// Status writes issued.
    pub writes: WriteCounters,
    /// Reconcile metrics.
    pub metrics: ControllerMetrics,
}

impl Context {
    /// A context for `host`, registering the controller metrics into `metrics`.
    pub fn new(
        host: Client,
        config: ControllerConfig,
        registry: Arc<dyn GlobalRegistry>,
        metrics: &Metrics,
    ) -> Arc<Self> {
        let connections = Arc::new(workers::PublishedConnections::default());
        let instance_cache = Arc::new(EmbeddedCacheBackend::new(connections.clone()));
        Self::build(host, config, registry, metrics, connections, instance_cache)
    }

    /// A context whose statistics read the instances through `instance_cache`, the cache of
    /// the API server running in the same process, so that the process keeps each object once.
    pub fn sharing_instance_cache(
        host: Client,
        config: ControllerConfig,
        registry: Arc<dyn GlobalRegistry>,
        metrics: &Metrics,
        instance_cache: Arc<EmbeddedCacheBackend>,
    ) -> Arc<Self> {
        let connections = Arc::new(workers::PublishedConnections::default());
        Self::build(host, config, registry, metrics, connections, instance_cache)
    }

    fn build(
        host: Client,
        config: ControllerConfig,
        registry: Arc<dyn GlobalRegistry>,
        metrics: &Metrics,
        connections: Arc<workers::PublishedConnections>,
        instance_cache: Arc<EmbeddedCacheBackend>,
    ) -> Arc<Self> {
        let writes = WriteCounters::default();
        writes.register(metrics);
        Arc::new(Self {
            host,
            config,
            registry,
            workers: workers::Workers::default(),
            connections,
            instance_cache,
            writes,
            metrics: ControllerMetrics::register(metrics),
        })
    }

    /// The Instance API of the host cluster.
    pub fn instances(&self) -> Api<Instance> {
        Api::all(self.host.clone())
    }
}

/// What failed in a reconcile, on which object.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed.
    #[error("{action} {object}: {source}")]
    Kube {
        /// What was attempted (`create PediaCluster`).
        action: &'static str,
        /// The object concerned.
        object: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// A call to an instance's control plane did not answer in time.
    #[error("{action} on instance {instance} timed out after {after:?}")]
    Timeout {
        /// What was attempted.
        action: &'static str,
        /// The instance.
        instance: String,
        /// The limit.
        after: Duration,
    },
    /// The global registry refused or failed.
    #[error("global registry: {0}")]
    Registry(#[from] instance_registry::RegistryError),
    /// The instance's credentials could not be read.
    #[error(transparent)]
    Connection(#[from] connection::ConnectionError),
}

impl Error {
    /// Wraps an API error with what was attempted on which object.
    pub fn kube(
        action: &'static str,
        object: impl Into<String>,
    ) -> impl FnOnce(kube::Error) -> Self {
        let object = object.into();
        move |source| Error::Kube {
            action,
            object,
            source,
        }
    }
}

impl ReconcileError for Error {
    fn reason(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Error::Kube { .. } => "ApiError",
            Error::Timeout { .. } => "InstanceTimeout",
            Error::Registry(_) => "RegistryError",
            Error::Connection(_) => "CredentialsError",
        })
    }
}

/// The event recorder of a controller.
fn recorder(ctx: &Context, controller: &str) -> Recorder {
    Recorder::new(
        ctx.host.clone(),
        Reporter {
            controller: format!("{MANAGER_NAME}/{controller}"),
            instance: None,
        },
    )
}

/// Runs every controller until `shutdown`; the per-instance workers stop with it.
pub async fn run(ctx: Arc<Context>, shutdown: CancellationToken) {
    let instances = ctx.instances();
    let runner = |name: &str| {
        ControllerRunner::new(name, ctx.clone(), ctx.metrics.clone())
            .with_recorder(recorder(&ctx, name))
    };
    let lifecycle = runner(lifecycle::NAME).run(
        Controller::new(instances.clone(), watcher::Config::default()),
        lifecycle::reconcile,
        shutdown.clone(),
    );
    let virtual_clusters = runner(virtual_cluster_sync::NAME).run(
        Controller::new(instances.clone(), watcher::Config::default()),
        virtual_cluster_sync::reconcile,
        shutdown.clone(),
    );
    let registry = runner(instance_registry::NAME).run(
        Controller::new(instances, watcher::Config::default()),
        instance_registry::reconcile,
        shutdown.clone(),
    );
    let supervisor = workers::supervise(ctx.clone(), shutdown.clone());
    futures::join!(lifecycle, virtual_clusters, registry, supervisor);
    ctx.workers.stop_all();
}

/// What a leader runs: every controller, and the role-binding webhook (served by every replica
/// for the whole process, see [`role_binding_webhook::serve`]) carries out calls only while
/// this term lasts.
pub async fn run_leading(
    ctx: Arc<Context>,
    webhook: Option<role_binding_webhook::WebhookState>,
    shutdown: CancellationToken,
) {
    // Dropped when the term ends, however it ends (even if this future is dropped).
    struct Leading(Option<role_binding_webhook::WebhookState>);
    impl Drop for Leading {
        fn drop(&mut self) {
            if let Some(state) = &self.0 {
                state.set_leading(false);
            }
        }
    }
    if let Some(state) = &webhook {
        state.set_leading(true);
    }
    let _leading = Leading(webhook);
    run(ctx, shutdown).await;
}
