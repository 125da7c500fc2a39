//! Serving a cluster over loopback HTTP or HTTPS, and the kubeconfig that reaches it.

use crate::apiserver::pki::{ClusterPki, IssuedCertificate, PeerCertificate};
use crate::sim::Simulator;
use axum::{Extension, Router};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// Certificates could not be generated.
    #[error("cannot generate TLS certificates: {0}")]
    Certificates(String),
    /// The kubeconfig could not be written.
    #[error("cannot write kubeconfig {path}: {source}")]
    Kubeconfig {
        /// Where.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// How to serve a cluster.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Serve HTTPS with a generated CA (written into the kubeconfig).
    pub tls: bool,
    /// Where to write the kubeconfig, if anywhere.
    pub kubeconfig_path: Option<PathBuf>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            tls: false,
            kubeconfig_path: None,
        }
    }
}

/// A cluster being served.
pub struct Served {
    /// The bound address.
    pub addr: SocketAddr,
    /// `http://addr` or `https://addr`.
    pub url: String,
    /// The CA certificate (PEM) clients must trust, for HTTPS.
    pub ca_pem: Option<String>,
    /// The kubeconfig (YAML) that reaches this server as the admin user.
    pub kubeconfig_yaml: String,
    /// Where the kubeconfig was written, if it was.
    pub kubeconfig_path: Option<PathBuf>,
    /// Where the simulated kubelet API of the cluster's simulated nodes listens (HTTPS, serving
    /// certificate signed by the cluster CA); the nodes advertise it as InternalIP and
    /// `daemonEndpoints.kubeletEndpoint.Port`.
    pub kubelet_addr: SocketAddr,
    cluster: String,
    pki: Arc<ClusterPki>,
    stop: CancellationToken,
}

impl Served {
    /// Stops accepting connections (open streams end when the cluster shuts down).
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// A parsed kubeconfig for kube-rs.
    pub fn kubeconfig(&self) -> Result<kube::config::Kubeconfig, kube::config::KubeconfigError> {
        kube::config::Kubeconfig::from_yaml(&self.kubeconfig_yaml)
    }

    /// A kube client that talks to this server over the network.
    pub async fn client(&self) -> Result<kube::Client, kube::Error> {
        let kubeconfig = self.kubeconfig().map_err(kube::Error::InferKubeconfig)?;
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .map_err(kube::Error::InferKubeconfig)?;
        kube::Client::try_from(config)
    }

    /// The cluster's certificate authority: its CA certificate, the API server's
    /// kubelet-client certificate, and client certificates issued on demand.
    pub fn pki(&self) -> &Arc<ClusterPki> {
        &self.pki
    }

    /// The cluster CA certificate (PEM), whether or not the API itself is served over HTTPS.
    pub fn cluster_ca_pem(&self) -> &str {
        self.pki.ca_pem()
    }

    /// A kube client that authenticates with a client certificate instead of the admin token
    /// (the server must be served with `tls: true`).
    pub async fn client_with_certificate(
        &self,
        certificate: &IssuedCertificate,
    ) -> Result<kube::Client, kube::Error> {
        let yaml = certificate_kubeconfig_yaml(
            &self.cluster,
            &self.url,
            self.ca_pem.as_deref(),
            certificate,
        );
        let kubeconfig =
            kube::config::Kubeconfig::from_yaml(&yaml).map_err(kube::Error::InferKubeconfig)?;
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .map_err(kube::Error::InferKubeconfig)?;
        kube::Client::try_from(config)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Builds a kubeconfig for a server.
pub fn kubeconfig_yaml(cluster: &str, url: &str, ca_pem: Option<&str>, token: &str) -> String {
    let ca = ca_pem
        .map(|pem| format!("    certificate-authority-data: {}\n", STANDARD.encode(pem)))
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {cluster}\n  cluster:\n    server: {url}\n{ca}contexts:\n- name: {cluster}\n  context:\n    cluster: {cluster}\n    user: {cluster}-admin\n    namespace: default\ncurrent-context: {cluster}\nusers:\n- name: {cluster}-admin\n  user:\n    token: {token}\n"
    )
}

/// A kubeconfig whose user presents a client certificate.
fn certificate_kubeconfig_yaml(
    cluster: &str,
    url: &str,
    ca_pem: Option<&str>,
    certificate: &IssuedCertificate,
) -> String {
    let ca = ca_pem
        .map(|pem| format!("    certificate-authority-data: {}\n", STANDARD.encode(pem)))
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {cluster}\n  cluster:\n    server: {url}\n{ca}contexts:\n- name: {cluster}\n  context:\n    cluster: {cluster}\n    user: {cluster}-cert\n    namespace: default\ncurrent-context: {cluster}\nusers:\n- name: {cluster}-cert\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
        STANDARD.encode(&certificate.cert_pem),
        STANDARD.encode(&certificate.key_pem)
    )
}

/// Serves `router` on `options.listen` until `shutdown` or [`Served::stop`], and the simulated
/// kubelet API of the cluster's simulated nodes on a second (always HTTPS) port of the same
/// address, which those nodes then advertise.
pub async fn serve(
    sim: &Arc<Simulator>,
    router: Router,
    options: &ServeOptions,
) -> Result<Served, ServeError> {
    let state = &sim.state;
    let bind = |addr: SocketAddr| async move {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| ServeError::Bind { addr, source })?;
        Ok::<_, ServeError>((listener, local))
    };
    let (listener, addr) = bind(options.listen).await?;
    let (kubelet_listener, kubelet_bound) = bind(SocketAddr::new(options.listen.ip(), 0)).await?;
    let pki = state
        .pki()
        .map_err(|e| ServeError::Certificates(e.to_string()))?;
    let advertised_ip = if addr.ip().is_unspecified() {
        if addr.is_ipv6() {
            IpAddr::from(Ipv6Addr::LOCALHOST)
        } else {
            IpAddr::from(Ipv4Addr::LOCALHOST)
        }
    } else {
        addr.ip()
    };
    let kubelet_addr = SocketAddr::new(advertised_ip, kubelet_bound.port());
    let hosts = serving_hosts(advertised_ip);
    let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let acceptor = if options.tls {
        let serving = pki
            .issue_serving_certificate("kube-apiserver", &hosts)
            .map_err(|e| ServeError::Certificates(e.to_string()))?;
        Some(
            pki.tls_acceptor(&serving, true)
                .map_err(|e| ServeError::Certificates(e.to_string()))?,
        )
    } else {
        None
    };
    let kubelet_serving = pki
        .issue_serving_certificate("kube-sandbox-kubelet", &hosts)
        .map_err(|e| ServeError::Certificates(e.to_string()))?;
    let kubelet_acceptor = pki
        .tls_acceptor(&kubelet_serving, true)
        .map_err(|e| ServeError::Certificates(e.to_string()))?;
    publish_client_ca(state, pki.ca_pem());
    let scheme = if options.tls { "https" } else { "http" };
    let url = format!("{scheme}://{addr}");
    let ca_pem = options.tls.then(|| pki.ca_pem().to_string());
    let kubeconfig_yaml = kubeconfig_yaml(
        &state.name,
        &url,
        ca_pem.as_deref(),
        state.auth.admin_token(),
    );
    if let Some(path) = &options.kubeconfig_path {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| ServeError::Kubeconfig {
                path: path.clone(),
                source,
            })?;
        }
        std::fs::write(path, &kubeconfig_yaml).map_err(|source| ServeError::Kubeconfig {
            path: path.clone(),
            source,
        })?;
    }
    let stop = state.shutdown.child_token();
    spawn_accept_loop(listener, acceptor, pki.clone(), router, stop.clone());
    spawn_accept_loop(
        kubelet_listener,
        Some(kubelet_acceptor),
        pki.clone(),
        crate::sim::kubelet_api::router(sim.clone()),
        stop.clone(),
    );
    sim.set_kubelet_endpoint(Some(kubelet_addr));
    let weak = Arc::downgrade(sim);
    let cleared = stop.clone();
    tokio::spawn(async move {
        cleared.cancelled().await;
        if let Some(sim) = weak.upgrade()
            && sim.kubelet.endpoint() == Some(kubelet_addr)
        {
            sim.set_kubelet_endpoint(None);
        }
    });
    Ok(Served {
        addr,
        url,
        ca_pem,
        kubeconfig_yaml,
        kubeconfig_path: options.kubeconfig_path.clone(),
        kubelet_addr,
        cluster: state.name.clone(),
        pki,
        stop,
    })
}

/// Namespace and name of the ConfigMap in which kube-apiserver publishes the CA of the client
/// certificates it accepts.
pub const CLIENT_CA_CONFIG_MAP: (&str, &str) =
    ("kube-system", "extension-apiserver-authentication");

/// Publishes `client-ca-file` in `kube-system/extension-apiserver-authentication`, as
/// kube-apiserver's ClusterAuthenticationTrustController keeps it (kubernetes
/// `pkg/controlplane/controller/clusterauthenticationtrust`): the CA of the client
/// certificates the API server accepts, which also signs its kubelet-client certificate.
fn publish_client_ca(state: &crate::apiserver::state::ClusterState, ca_pem: &str) {
    let Some(rt) = state.resource_type("", "configmaps") else {
        return;
    };
    let (namespace, name) = CLIENT_CA_CONFIG_MAP;
    let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"client-ca-file": ca_pem}});
    let ctx = crate::apiserver::api::WriteContext::system("kube-apiserver");
    let _ = state.create(&rt, "v1", namespace, body, &ctx);
}

fn serving_hosts(ip: IpAddr) -> Vec<String> {
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    if !hosts.contains(&ip.to_string()) {
        hosts.push(ip.to_string());
    }
    hosts
}

/// Accepts connections until `stop`, each served by `router` with the peer's client
/// certificate (checked against the cluster CA) as a request extension.
fn spawn_accept_loop(
    listener: TcpListener,
    acceptor: Option<TlsAcceptor>,
    pki: Arc<ClusterPki>,
    router: Router,
    stop: CancellationToken,
) {
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = stop.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, _)) = accepted else { continue };
            let _ = stream.set_nodelay(true);
            let router = router.clone();
            let acceptor = acceptor.clone();
            let pki = pki.clone();
            let conn_stop = stop.clone();
            tokio::spawn(async move {
                let builder = auto::Builder::new(TokioExecutor::new());
                match acceptor {
                    Some(acceptor) => {
                        let Ok(tls) = acceptor.accept(stream).await else {
                            return;
                        };
                        let peer = pki.peer_certificate(tls.get_ref().1.peer_certificates());
                        let service = TowerToHyperService::new(router.layer(Extension(peer)));
                        let conn =
                            builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
                        tokio::select! {
                            _ = conn => {}
                            _ = conn_stop.cancelled() => {}
                        }
                    }
                    None => {
                        let service = TowerToHyperService::new(
                            router.layer(Extension(PeerCertificate::Absent)),
                        );
                        let conn =
                            builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                        tokio::select! {
                            _ = conn => {}
                            _ = conn_stop.cancelled() => {}
                        }
                    }
                }
            });
        }
    });
}
