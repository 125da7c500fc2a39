//! The syncer: one per ClusterBinding, it pools the worker cluster's nodes into the
//! computing cluster as virtual nodes (bottom-up) and maps the virtual pods bound to them,
//! with what they need, into the worker (top-down).
//!
//! Layers, each depending only on the ones below it:
//! - [`Syncer`] and [`session`]: reach the worker through the binding's Secret
//!   ([`binding`]), start one session per connection: the watches of both clusters, then the
//!   reconcilers of both halves.
//! - [`bottomup`] and [`topdown`]: the reconcilers (and, in `topdown`, the mappers they
//!   apply). Neither imports the other, nor this module's session wiring.
//! - The shared core: [`context`] (clients, settings, indexes and queues of one session),
//!   [`config`], [`clock`], [`queue`], [`reflector`], [`index`], [`metrics`], [`error`],
//!   and the helpers both halves and the manager use: [`binding`], [`metadata`] (status
//!   conditions come from `kube_kit::conditions`).

pub mod binding;
pub mod bottomup;
pub mod clock;
pub mod config;
pub mod context;
pub mod error;
pub mod index;
pub mod kubelet_endpoint;
pub mod kubelet_port;
pub mod metadata;
pub mod metrics;
pub mod pod_table;
pub mod queue;
pub mod reflector;
pub mod session;
pub mod topdown;
pub mod upstream;
pub mod worker;
pub mod worker_pod;

use std::sync::Arc;

use kube::{Api, Client};
use tokio_util::sync::CancellationToken;

use crate::crd::ClusterBinding;
use crate::leasing::{DefaultLeasingEngine, LeasingPolicyEngine};

pub use binding::{ConnectError, connect_worker};
pub use clock::Clock;
pub use config::{ProxierEndpoint, SYNCER_RUNTIME_THREADS, ServiceRef, SyncerConfig};
pub use context::Context;
pub use error::{Side, SyncError};
pub use index::{ComputingIndex, WorkerIndex};
pub use metrics::{SyncerMetrics, TopDownMetrics};
pub use queue::WorkQueue;
pub use reflector::Change;

/// The syncer of one ClusterBinding.
pub struct Syncer {
    computing: Client,
    config: SyncerConfig,
    engine: Arc<dyn LeasingPolicyEngine>,
}

impl Syncer {
    /// A syncer with Kubeocean's leasing rules.
    pub fn new(computing: Client, config: SyncerConfig) -> Syncer {
        Syncer {
            computing,
            config,
            engine: Arc::new(DefaultLeasingEngine),
        }
    }

    /// Replaces the leasing engine.
    #[must_use]
    pub fn with_engine(mut self, engine: Arc<dyn LeasingPolicyEngine>) -> Syncer {
        self.engine = engine;
        self
    }

    /// Runs until `token` is cancelled: reaches the worker through the binding's Secret
    /// (reporting problems on the binding's status and retrying), then syncs; reconnects
    /// when the binding's `secretRef` changes.
    pub async fn run(self, token: CancellationToken) {
        let name = self.config.binding_name.clone();
        let bindings: Api<ClusterBinding> = Api::all(self.computing.clone());
        let mut last_problem: Option<String> = None;
        while !token.is_cancelled() {
            let binding = match bindings.get_opt(&name).await {
                Ok(Some(binding)) => binding,
                Ok(None) => {
                    self.log_once(
                        &mut last_problem,
                        format!("ClusterBinding {name} not found"),
                    );
                    self.pause(&token).await;
                    continue;
                }
                Err(err) => {
                    self.log_once(
                        &mut last_problem,
                        format!("cannot read ClusterBinding {name}: {err}"),
                    );
                    self.pause(&token).await;
                    continue;
                }
            };
            let connected = connect_worker(
                &self.computing,
                &binding,
                &self.config.secret_namespace,
                &self.config.client_options,
                self.config.probe_timeout,
            )
            .await;
            let outcome = connected.as_ref().map(|_| ());
            let conditions = binding::connection_conditions(
                outcome,
                binding.metadata.generation,
                &self.config.clock,
            );
            if let Err(err) =
                binding::update_binding_conditions(&self.computing, &name, conditions).await
            {
                tracing::warn!(binding = %name, error = %err, "cannot report the connection");
            }
            match connected {
                Err(err) => {
                    self.log_once(&mut last_problem, err.to_string());
                    self.pause(&token).await;
                }
                Ok(worker) => {
                    last_problem = None;
                    tracing::info!(binding = %name, "connected to the worker cluster");
                    let ctx = Arc::new(Context::new(
                        self.computing.clone(),
                        worker,
                        self.config.clone(),
                        self.engine.clone(),
                    ));
                    session::run_session(ctx, &binding, &token).await;
                }
            }
        }
    }

    fn log_once(&self, last: &mut Option<String>, problem: String) {
        if last.as_deref() != Some(problem.as_str()) {
            tracing::warn!(binding = %self.config.binding_name, "{problem}");
            *last = Some(problem);
        }
    }

    async fn pause(&self, token: &CancellationToken) {
        tokio::select! {
            _ = token.cancelled() => {}
            _ = tokio::time::sleep(self.config.connect_retry_interval) => {}
        }
    }
}
