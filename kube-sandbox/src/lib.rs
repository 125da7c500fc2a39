//! kube-sandbox: an in-memory Kubernetes API server for tests, demos and benchmarks.
//!
//! A [`Cluster`] is one API server with its own store. Use it in-process through
//! [`Cluster::client`] (a `kube::Client` whose requests go straight into the router), or serve it
//! over loopback HTTP(S) with [`Cluster::serve`] and reach it through the kubeconfig it writes.
//! It answers as kube-apiserver does: discovery, CRUD, list+watch with resourceVersions,
//! `kind: Status` errors, CRDs with schema validation, status subresources, patches (merge,
//! JSON, strategic, server-side apply), finalizers, garbage collection, namespaces, RBAC, tokens.
//! A simulated scheduler and kubelet run pods on [`SimNode`]s; with
//! [`ClusterOptions::workload_controllers`] the workload controllers of kube-controller-manager
//! run too (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs, EndpointSlices).
//! See `docs/sandbox.md`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! let cluster = kube_sandbox::Cluster::new("demo");
//! let client = cluster.client();
//! let cms: kube::Api<ConfigMap> = kube::Api::namespaced(client, "default");
//! let cm: ConfigMap = serde_json::from_value(serde_json::json!({"metadata": {"name": "x"}}))?;
//! cms.create(&Default::default(), &cm).await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod apiserver;
pub mod http;
pub mod patch;
pub mod ports;
pub mod protobuf;
pub mod sim;
#[cfg(feature = "testing")]
pub mod testing;
pub mod validation;

pub use self::http::serve::{ServeError, ServeOptions, Served};
pub use apiserver::auth::UserInfo;
pub use apiserver::error::ApiError;
pub use apiserver::faults::{FaultAction, FaultRule, Faults};
pub use apiserver::pki::{CertificateError, ClusterPki, IssuedCertificate};
pub use apiserver::proxy_hooks::{ProxyFuture, ProxyHandler};
/// A `proxy` subresource request handed to an embedder's handler.
pub type ProxyRequest = apiserver::proxy_hooks::ProxyRequest<ClusterState>;
/// The embedder's `proxy` subresource handlers of a cluster.
pub type ProxyHandlers = apiserver::proxy_hooks::ProxyHandlers<ClusterState>;
pub use apiserver::requests::{RequestCounts, RequestKind};
pub use apiserver::state::{ClusterOptions, ClusterState, MetricsServerOptions};
pub use apiserver::strategy_hooks::{StrategyHook, StrategyHooks};
pub use sim::{KubeletState, SimNode, Simulator};

// The modules' paths from before the layer folders, so that imports such as
// `kube_sandbox::api::WriteContext` or `kube_sandbox::serve::kubeconfig_yaml` keep working.
pub use self::http::{serve, server};
pub use apiserver::{
    admission, api, auth, discovery, error, faults, meta, pki, requests, resources, state, store,
    subresources, table, watch,
};
pub use sim::{kubelet, kubelet_api, kubelet_stats, node_proxy};
pub use validation::{cel, schema, selectors};

use ::http::{HeaderValue, header};
use axum::Router;
use std::sync::Arc;

/// One in-memory Kubernetes API server. Cheap to clone; clones share the cluster.
#[derive(Clone)]
pub struct Cluster {
    state: Arc<ClusterState>,
    sim: Arc<Simulator>,
}

impl Cluster {
    /// A cluster with default options. Inside a tokio runtime the simulated scheduler, kubelet
    /// and node lifecycle start at once.
    pub fn new(name: &str) -> Cluster {
        Self::with_options(name, ClusterOptions::default())
    }

    /// A cluster with the given options.
    pub fn with_options(name: &str, options: ClusterOptions) -> Cluster {
        let state = ClusterState::new(name, options);
        let sim = Arc::new(Simulator::new(state.clone()));
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(sim::run(sim.clone()));
            handle.spawn(sim::controllers::csr_signing::run(sim.clone()));
            if state.options.workload_controllers {
                handle.spawn(sim::controllers::run(sim.clone()));
            }
            if state.options.metrics_server.is_some() {
                handle.spawn(sim::metrics_scraper::run(sim.clone()));
            }
        }
        Cluster { state, sim }
    }

    /// The cluster's name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// The shared state, for code that drives the cluster directly.
    pub fn state(&self) -> &Arc<ClusterState> {
        &self.state
    }

    /// The cluster's simulated nodes: their kubelet state and the clients that reach them.
    pub fn simulator(&self) -> &Arc<Simulator> {
        &self.sim
    }

    /// What the simulated kubelet keeps (container logs, nodes it runs).
    pub fn kubelet(&self) -> &KubeletState {
        &self.sim.kubelet
    }

    /// The router serving the API; requests need a bearer token (see [`Cluster::admin_token`]).
    pub fn router(&self) -> Router {
        server::router(self.sim.clone())
    }

    /// The admin user's bearer token (group `system:masters`).
    pub fn admin_token(&self) -> &str {
        self.state.auth.admin_token()
    }

    /// An in-process client acting as the admin user.
    pub fn client(&self) -> kube::Client {
        self.client_with_token(self.admin_token())
    }

    /// An in-process client presenting the given bearer token.
    pub fn client_with_token(&self, token: &str) -> kube::Client {
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .unwrap_or_else(|_| HeaderValue::from_static("Bearer invalid"));
        let service = tower::ServiceBuilder::new()
            .map_request(move |mut req: ::http::Request<kube::client::Body>| {
                req.headers_mut()
                    .insert(header::AUTHORIZATION, value.clone());
                req
            })
            .service(self.router());
        kube::Client::new(service, "default")
    }

    /// Serves the cluster over loopback HTTP(S).
    pub async fn serve(&self, options: ServeOptions) -> Result<Served, ServeError> {
        serve::serve(&self.sim, self.router(), &options).await
    }

    /// The cluster's certificate authority (created on first use): its CA certificate, the
    /// kubelet-client certificate the API server presents to kubelet endpoints, and client
    /// certificates the served API accepts (user = CN, group = O).
    pub fn pki(&self) -> Result<Arc<ClusterPki>, CertificateError> {
        self.state.pki()
    }

    /// Injected failures.
    pub fn faults(&self) -> &Faults {
        &self.state.faults
    }

    /// Resource requests served so far, by verb, resource and subresource.
    pub fn requests(&self) -> &RequestCounts {
        &self.state.requests
    }

    /// The writes served so far, with the user each acted as (and who impersonated it).
    pub fn audit_events(&self) -> Vec<apiserver::audit::AuditEvent> {
        self.state.audit.events()
    }

    /// Tokens and users.
    pub fn auth(&self) -> &auth::Auth {
        &self.state.auth
    }

    /// Adds a simulated node that this cluster's kubelet runs.
    pub fn add_node(&self, node: &SimNode) -> Result<(), ApiError> {
        self.sim.add_node(node)
    }

    /// Stops a simulated node's kubelet (no more Lease renewals), as when a machine dies.
    pub fn stop_node(&self, name: &str) {
        self.sim.stop_node(name);
    }

    /// Moves the workload controllers' clock forward: CronJobs see their next schedules come,
    /// as if that much time had passed.
    pub fn advance_clock(&self, by: std::time::Duration) {
        self.sim.advance_clock(by);
    }

    /// Restarts a stopped simulated node's kubelet.
    pub fn start_node(&self, name: &str) {
        self.sim.start_node(name);
    }

    /// Ends watches, log streams, served connections and the simulation loops.
    pub fn shutdown(&self) {
        self.state.shutdown.cancel();
    }
}
