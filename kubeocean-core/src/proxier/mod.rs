//! The kubelet API of virtual nodes, served for one ClusterBinding.
//!
//! The syncer writes the proxier's address and a port into every virtual node of the binding,
//! so kube-apiserver (and metrics-server) reach the proxier when they call "the kubelet" of a
//! virtual node. With [`ProxierConfig::node_ports`] every virtual node has a port of its own
//! and the proxier listens on each ([`node_ports`]), answering there for that node alone;
//! otherwise all share [`ProxierConfig::listen`]. The proxier serves over HTTPS:
//!
//! - `/containerLogs/{ns}/{pod}/{container}` -> the worker API server's `pods/log` of the
//!   physical pod, every option passed on, streamed with `follow`;
//! - `/exec/...`, `/attach/...`, `/portForward/...` -> `pods/exec|attach|portforward` of the
//!   physical pod, as a transparent protocol upgrade (SPDY or WebSocket);
//! - `/stats/summary`, `/metrics/resource`, `/metrics/cadvisor` -> the worker's node proxy for
//!   the physical node(s), keeping only mapped pods under their virtual names (see [`stats`]);
//! - `/healthz` (unauthenticated, like the kubelet's health port);
//! - with [`ProxierConfig::vnode_metrics_port`], upstream's single-port cAdvisor endpoint
//!   `http://{ip}:{port}/{vnode}/metrics` (plain HTTP, see [`vnode_metrics`]).
//!
//! `{ns}/{pod}` name the virtual pod; it must run on a virtual node of this binding (on a
//! per-node port: on that node) and carry the physical-pod annotations, otherwise the answer
//! is 404. Clients authenticate with a
//! client certificate signed by the configured CA or a bearer token (TokenReview), and are
//! authorized by SubjectAccessReview (see [`auth`]). The worker is reached through the
//! binding's kubeconfig Secret, as the syncer does.
//!
//! ```no_run
//! # async fn demo(computing: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use kubeocean_core::proxier::{Proxier, ProxierConfig, self_signed_serving_cert};
//! let (cert, key) = self_signed_serving_cert(&["127.0.0.1".to_owned()])?;
//! let config = ProxierConfig::new("worker-1", "127.0.0.1:10250".parse()?, cert, key);
//! let bound = Proxier::new(computing, config).bind().await?;
//! println!("serving on {}", bound.local_addr());
//! bound.run(tokio_util::sync::CancellationToken::new()).await?;
//! # Ok(()) }
//! ```

pub mod auth;
pub mod forward;
pub mod mapping;
pub mod metrics;
pub mod node_ports;
pub mod node_stats;
pub mod query;
pub mod request;
pub mod response;
pub(crate) mod server;
pub mod stats;
pub mod tls;
pub mod vnode_metrics;
pub mod worker;
pub mod x509;

use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube_kit::client::{ClientOptions, user_agent};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use metrics::ProxierMetrics;
pub use tls::self_signed_serving_cert;
pub use x509::certificate_validity;

/// How the proxier of one binding is set up.
#[derive(Clone)]
pub struct ProxierConfig {
    /// The ClusterBinding whose virtual nodes are served.
    pub binding_name: String,
    /// Address to listen on (port 0 picks a free port).
    pub listen: SocketAddr,
    /// Serving certificate chain, PEM (leaf first).
    pub serving_cert_pem: String,
    /// Serving private key, PEM.
    pub serving_key_pem: String,
    /// CA whose client certificates are accepted (the computing cluster's CA, which signs
    /// kube-apiserver's kubelet-client certificate); `None` accepts no certificates.
    pub client_ca_pem: Option<String>,
    /// Namespace of the binding's Secret when its `secretRef` names none.
    pub secret_namespace: String,
    /// Accept bearer tokens, checked by TokenReview on the computing cluster.
    pub token_review: bool,
    /// Audiences tokens must carry (any when empty).
    pub token_audiences: Vec<String>,
    /// How long TokenReview and SubjectAccessReview results are reused.
    pub auth_cache_ttl: Duration,
    /// Options of the worker client (user agent, QPS limit, timeouts).
    pub client_options: ClientOptions,
    /// How long the worker may take to answer the connectivity probe.
    pub probe_timeout: Duration,
    /// How long a worker client is reused before the binding's Secret is read again.
    pub worker_client_ttl: Duration,
    /// How long a client may take to complete the TLS handshake.
    pub handshake_timeout: Duration,
    /// How long the worker may take to start answering a forwarded log, exec, attach or
    /// port-forward request (answered 504 after that).
    pub upstream_timeout: Duration,
    /// How long the worker may take to answer one physical node's stats (left out after that).
    pub stats_timeout: Duration,
    /// Where to count requests (none by default).
    pub metrics: Option<ProxierMetrics>,
    /// Ports of the virtual nodes' own endpoints: the proxier listens on `listen`'s IP on
    /// the port each virtual node advertises within this range (see [`node_ports`]); `None`
    /// serves `listen` only, shared by every virtual node.
    pub node_ports: Option<RangeInclusive<u16>>,
    /// How often the virtual nodes are listed to open and close their ports.
    pub node_resync_interval: Duration,
    /// Port (on `listen`'s IP) of upstream's single-port cAdvisor endpoint
    /// `/{vnode}/metrics` ([`vnode_metrics`], upstream's default
    /// [`vnode_metrics::DEFAULT_PORT`]); `None` serves none.
    pub vnode_metrics_port: Option<u16>,
}

impl ProxierConfig {
    /// Defaults for `binding_name` on `listen` with the given serving certificate and key:
    /// no client CA, no token review (so every request but `/healthz` is refused until one
    /// is configured), Secrets in `kubeocean-system`, 10 s review cache.
    pub fn new(
        binding_name: impl Into<String>,
        listen: SocketAddr,
        serving_cert_pem: impl Into<String>,
        serving_key_pem: impl Into<String>,
    ) -> ProxierConfig {
        ProxierConfig {
            binding_name: binding_name.into(),
            listen,
            serving_cert_pem: serving_cert_pem.into(),
            serving_key_pem: serving_key_pem.into(),
            client_ca_pem: None,
            secret_namespace: "kubeocean-system".to_owned(),
            token_review: false,
            token_audiences: Vec::new(),
            auth_cache_ttl: Duration::from_secs(10),
            client_options: ClientOptions::new(user_agent(
                "kubeocean-proxier",
                env!("CARGO_PKG_VERSION"),
            )),
            probe_timeout: Duration::from_secs(5),
            worker_client_ttl: Duration::from_secs(300),
            handshake_timeout: Duration::from_secs(10),
            upstream_timeout: Duration::from_secs(30),
            stats_timeout: Duration::from_secs(10),
            metrics: None,
            node_ports: None,
            node_resync_interval: Duration::from_secs(5),
            vnode_metrics_port: None,
        }
    }
}

impl std::fmt::Debug for ProxierConfig {
    // The serving key stays out of logs and panic messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxierConfig")
            .field("binding_name", &self.binding_name)
            .field("listen", &self.listen)
            .field(
                "serving_cert_pem",
                &format_args!("<{} bytes>", self.serving_cert_pem.len()),
            )
            .field("serving_key_pem", &format_args!("<redacted>"))
            .field(
                "client_ca_pem",
                &self.client_ca_pem.as_ref().map(|_| "<set>"),
            )
            .field("secret_namespace", &self.secret_namespace)
            .field("token_review", &self.token_review)
            .field("token_audiences", &self.token_audiences)
            .field("auth_cache_ttl", &self.auth_cache_ttl)
            .field("client_options", &self.client_options)
            .field("probe_timeout", &self.probe_timeout)
            .field("worker_client_ttl", &self.worker_client_ttl)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("upstream_timeout", &self.upstream_timeout)
            .field("stats_timeout", &self.stats_timeout)
            .field("node_ports", &self.node_ports)
            .field("node_resync_interval", &self.node_resync_interval)
            .field("vnode_metrics_port", &self.vnode_metrics_port)
            .finish_non_exhaustive()
    }
}

/// Why the proxier could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxierError {
    /// The serving certificate or key is unusable.
    #[error("serving certificate: {0}")]
    ServingCertificate(String),
    /// The client CA bundle is unusable.
    #[error("client CA: {0}")]
    ClientCa(String),
    /// A certificate could not be generated.
    #[error("cannot generate a certificate: {0}")]
    Certificate(String),
    /// The shared listen port lies in the range of per-node ports.
    #[error("the listen port {port} lies in the per-node port range {first}-{last}")]
    ListenPortInNodeRange {
        /// The listen port.
        port: u16,
        /// First port of the range.
        first: u16,
        /// Last port of the range.
        last: u16,
    },
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {cause}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause; in the message only (not a `source`), so printed chains do not repeat it.
        cause: std::io::Error,
    },
}

/// The proxier of one binding, not yet listening.
pub struct Proxier {
    computing: Client,
    config: ProxierConfig,
}

impl Proxier {
    /// A proxier that reads virtual pods, nodes, the binding and its Secret, and reviews
    /// credentials, through `computing`.
    pub fn new(computing: Client, config: ProxierConfig) -> Proxier {
        Proxier { computing, config }
    }

    /// Checks the certificates and binds the listen address.
    pub async fn bind(self) -> Result<BoundProxier, ProxierError> {
        let config = self.config;
        if let Some(range) = &config.node_ports
            && range.contains(&config.listen.port())
        {
            return Err(ProxierError::ListenPortInNodeRange {
                port: config.listen.port(),
                first: *range.start(),
                last: *range.end(),
            });
        }
        kube_kit::client::install_crypto_provider();
        let tls = tls::server_config(
            &config.serving_cert_pem,
            &config.serving_key_pem,
            config.client_ca_pem.as_deref(),
        )?;
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|cause| ProxierError::Bind {
                    addr: config.listen,
                    cause,
                })?;
        let local_addr = listener.local_addr().map_err(|cause| ProxierError::Bind {
            addr: config.listen,
            cause,
        })?;
        let vnode_metrics = match config.vnode_metrics_port {
            Some(port) => {
                let addr = SocketAddr::new(config.listen.ip(), port);
                let listener = TcpListener::bind(addr)
                    .await
                    .map_err(|cause| ProxierError::Bind { addr, cause })?;
                Some(listener)
            }
            None => None,
        };
        if config.client_ca_pem.is_none() && !config.token_review {
            tracing::warn!(
                binding = %config.binding_name,
                "neither a client CA nor token review is configured: every request but /healthz is refused"
            );
        }
        let worker = worker::WorkerClient::new(
            self.computing.clone(),
            worker::WorkerSettings {
                binding: config.binding_name.clone(),
                secret_namespace: config.secret_namespace.clone(),
                options: config.client_options.clone(),
                probe_timeout: config.probe_timeout,
                ttl: config.worker_client_ttl,
            },
        );
        let auth = auth::Authenticator::new(
            self.computing.clone(),
            config.token_audiences.clone(),
            config.auth_cache_ttl,
        );
        let stop = CancellationToken::new();
        let context = server::Context {
            binding: config.binding_name.clone(),
            computing: self.computing,
            worker,
            auth,
            token_review: config.token_review,
            client_ca: config.client_ca_pem.is_some(),
            metrics: config.metrics.clone(),
            streams: forward::StreamSupervisor {
                stop: stop.clone(),
                tracker: TaskTracker::new(),
            },
            handshake_timeout: config.handshake_timeout,
            upstream_timeout: config.upstream_timeout,
            stats_timeout: config.stats_timeout,
            node_ports: node_ports::NodePorts::default(),
        };
        Ok(BoundProxier {
            listener,
            local_addr,
            vnode_metrics,
            node_ports: config.node_ports.clone(),
            node_resync_interval: config.node_resync_interval,
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(tls)),
            context: Arc::new(context),
            stop,
        })
    }
}

/// A proxier bound to its address; [`BoundProxier::run`] serves.
pub struct BoundProxier {
    listener: TcpListener,
    local_addr: SocketAddr,
    vnode_metrics: Option<TcpListener>,
    node_ports: Option<RangeInclusive<u16>>,
    node_resync_interval: Duration,
    acceptor: tokio_rustls::TlsAcceptor,
    context: Arc<server::Context>,
    stop: CancellationToken,
}

impl BoundProxier {
    /// The bound address (with the chosen port when the config asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The bound address of the single-port cAdvisor endpoint, when one is served.
    pub fn vnode_metrics_addr(&self) -> Option<SocketAddr> {
        self.vnode_metrics
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    /// Serves until `token` is cancelled, then closes connections and upgraded streams and
    /// returns once they are gone. Accept failures are logged and retried, so this returns
    /// `Ok` on cancellation.
    pub async fn run(self, token: CancellationToken) -> Result<(), ProxierError> {
        let stop = self.stop.clone();
        let forward_stop = tokio::spawn(async move {
            token.cancelled().await;
            stop.cancel();
        });
        tracing::info!(binding = %self.context.binding, addr = %self.local_addr, "proxier serving");
        let per_node = self.node_ports.clone().map(|range| {
            tokio::spawn(node_ports::run(
                self.context.clone(),
                self.acceptor.clone(),
                self.local_addr.ip(),
                range,
                self.node_resync_interval,
                self.stop.clone(),
            ))
        });
        let vnode_metrics = self.vnode_metrics.map(|listener| {
            tracing::info!(binding = %self.context.binding, addr = ?listener.local_addr().ok(), "serving /{{vnode}}/metrics");
            tokio::spawn(vnode_metrics::serve(
                self.context.clone(),
                listener,
                self.stop.clone(),
            ))
        });
        server::serve(
            self.context.clone(),
            self.listener,
            self.acceptor,
            self.stop.clone(),
            None,
        )
        .await;
        if let Some(per_node) = per_node {
            let _ = per_node.await;
        }
        if let Some(vnode_metrics) = vnode_metrics {
            let _ = vnode_metrics.await;
        }
        self.context.streams.tracker.close();
        self.context.streams.tracker.wait().await;
        forward_stop.abort();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_the_serving_key() {
        let config = ProxierConfig::new(
            "b1",
            SocketAddr::from(([127, 0, 0, 1], 0)),
            "CERT",
            "-----BEGIN PRIVATE KEY-----TOPSECRETKEY",
        );
        let text = format!("{config:?}");
        assert!(text.contains("b1") && text.contains("<redacted>"), "{text}");
        assert!(!text.contains("TOPSECRETKEY"), "{text}");
    }
}
