//! Serving a cluster over loopback HTTP or HTTPS, and the kubeconfig that reaches it.

use crate::state::ClusterState;
use axum::Router;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::TcpListener;
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

struct Certificates {
    ca_pem: String,
    server: tokio_rustls::TlsAcceptor,
}

fn certificates() -> Result<Certificates, ServeError> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
    let err = |e: rcgen::Error| ServeError::Certificates(e.to_string());
    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "kube-sandbox-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(err)?;
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate().map_err(err)?;
    let mut params = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .map_err(err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    let server_cert = params.signed_by(&server_key, &issuer).map_err(err)?;
    let chain = vec![server_cert.der().clone(), ca_cert.der().clone()];
    let key = rustls::pki_types::PrivateKeyDer::try_from(server_key.serialize_der())
        .map_err(|e| ServeError::Certificates(e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServeError::Certificates(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| ServeError::Certificates(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Certificates {
        ca_pem: ca_cert.pem(),
        server: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
    })
}

/// Serves `router` on `options.listen` until `shutdown` or [`Served::stop`].
pub async fn serve(
    state: &Arc<ClusterState>,
    router: Router,
    options: &ServeOptions,
) -> Result<Served, ServeError> {
    let listener = TcpListener::bind(options.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: options.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: options.listen,
        source,
    })?;
    let certs = if options.tls {
        Some(certificates()?)
    } else {
        None
    };
    let scheme = if options.tls { "https" } else { "http" };
    let url = format!("{scheme}://{addr}");
    let ca_pem = certs.as_ref().map(|c| c.ca_pem.clone());
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
    let acceptor = certs.map(|c| c.server);
    let loop_stop = stop.clone();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = loop_stop.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, _)) = accepted else { continue };
            let _ = stream.set_nodelay(true);
            let service = TowerToHyperService::new(router.clone());
            let acceptor = acceptor.clone();
            let conn_stop = loop_stop.clone();
            tokio::spawn(async move {
                let builder = auto::Builder::new(TokioExecutor::new());
                match acceptor {
                    Some(acceptor) => {
                        let Ok(tls) = acceptor.accept(stream).await else {
                            return;
                        };
                        let conn =
                            builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
                        tokio::select! {
                            _ = conn => {}
                            _ = conn_stop.cancelled() => {}
                        }
                    }
                    None => {
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
    Ok(Served {
        addr,
        url,
        ca_pem,
        kubeconfig_yaml,
        kubeconfig_path: options.kubeconfig_path.clone(),
        stop,
    })
}
