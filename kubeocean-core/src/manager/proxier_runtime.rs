//! The embedded runtime with the proxier: for each binding, the proxier is bound first on
//! its own port, then the syncer runs with that address and port written into the virtual
//! nodes; if either stops, the group stops (and is restarted by the runner).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use kube::{Client, ResourceExt};
use tokio_util::sync::CancellationToken;

use super::embedded::{BindingRuntime, ComponentState, RuntimeReporter};
use crate::bottomup::{ProxierEndpoint, Syncer, SyncerConfig};
use crate::crd::ClusterBinding;
use crate::proxier::{Proxier, ProxierConfig, ProxierMetrics, self_signed_serving_cert};

/// Settings of the proxier in [`SyncerProxierRuntime`].
#[derive(Clone, Debug)]
pub struct EmbeddedProxierConfig {
    /// IP the proxiers listen on; each binding gets its own port.
    pub listen_ip: IpAddr,
    /// Address written into the virtual nodes (defaults to `listen_ip`); it must be reachable
    /// from the computing cluster's API server.
    pub advertise_address: Option<String>,
    /// CA (PEM) that signs the API server's kubelet-client certificate; none accepts only
    /// bearer tokens.
    pub client_ca_pem: Option<String>,
    /// Check bearer tokens with TokenReview on the computing cluster.
    pub token_review: bool,
    /// Where the proxiers count requests (none by default).
    pub metrics: Option<ProxierMetrics>,
}

impl EmbeddedProxierConfig {
    /// Proxiers on `listen_ip`, advertised there, checking bearer tokens by TokenReview.
    pub fn new(listen_ip: IpAddr) -> EmbeddedProxierConfig {
        EmbeddedProxierConfig {
            listen_ip,
            advertise_address: None,
            client_ca_pem: None,
            token_review: true,
            metrics: None,
        }
    }
}

/// Runs the proxier and the syncer of a binding: the proxier is bound first so the syncer
/// writes its address and port into the virtual nodes; if either stops, both stop. A
/// restarted group gets its previous port back when it is still free, so the virtual nodes
/// keep their kubelet endpoint.
pub struct SyncerProxierRuntime {
    computing: Client,
    base: SyncerConfig,
    proxier: EmbeddedProxierConfig,
    ports: Mutex<HashMap<String, u16>>,
}

impl SyncerProxierRuntime {
    /// Syncers configured as `base` and proxiers as `proxier`, against `computing`.
    pub fn new(
        computing: Client,
        base: SyncerConfig,
        proxier: EmbeddedProxierConfig,
    ) -> SyncerProxierRuntime {
        SyncerProxierRuntime {
            computing,
            base,
            proxier,
            ports: Mutex::new(HashMap::new()),
        }
    }
}

#[async_trait]
impl BindingRuntime for SyncerProxierRuntime {
    async fn run(
        &self,
        binding: ClusterBinding,
        reporter: RuntimeReporter,
        token: CancellationToken,
    ) -> Result<(), String> {
        let name = binding.name_any();
        let advertise = self
            .proxier
            .advertise_address
            .clone()
            .unwrap_or_else(|| self.proxier.listen_ip.to_string());
        let fail = |what: String| {
            reporter.proxier(ComponentState::Failed(what.clone()));
            what
        };
        let (cert, key) = self_signed_serving_cert(&[advertise.clone(), "localhost".to_owned()])
            .map_err(|e| fail(format!("cannot make the proxier's certificate: {e}")))?;
        let previous_port = self
            .ports
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&name)
            .copied();
        let proxier = |port: u16| {
            let mut config = ProxierConfig::new(
                name.clone(),
                SocketAddr::new(self.proxier.listen_ip, port),
                cert.clone(),
                key.clone(),
            );
            config.client_ca_pem = self.proxier.client_ca_pem.clone();
            config.token_review = self.proxier.token_review;
            config.secret_namespace = self.base.secret_namespace.clone();
            config.client_options = self.base.client_options.clone();
            config.probe_timeout = self.base.probe_timeout;
            config.metrics = self.proxier.metrics.clone();
            Proxier::new(self.computing.clone(), config)
        };
        let bound = match previous_port {
            Some(port) => match proxier(port).bind().await {
                Ok(bound) => Ok(bound),
                Err(_) => proxier(0).bind().await,
            },
            None => proxier(0).bind().await,
        }
        .map_err(|e| fail(format!("cannot start the proxier: {e}")))?;
        let addr = bound.local_addr();
        self.ports
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.clone(), addr.port());
        reporter.proxier(ComponentState::Running(format!(
            "the proxier serves the kubelet API on {advertise}:{}",
            addr.port()
        )));

        let mut syncer_config = self.base.clone();
        syncer_config.binding_name = name;
        syncer_config.proxier = ProxierEndpoint {
            address: Some(advertise),
            port: i32::from(addr.port()),
        };
        let group = token.child_token();
        let proxier = {
            let group = group.clone();
            async move {
                let result = bound.run(group.clone()).await;
                // Either way the syncer stops with the proxier.
                group.cancel();
                result
            }
        };
        reporter.syncer(ComponentState::Running(
            "the syncer runs inside the manager".to_owned(),
        ));
        let syncer = Syncer::new(self.computing.clone(), syncer_config).run(group.clone());
        let (proxied, ()) = tokio::join!(proxier, syncer);
        match proxied {
            Err(e) => Err(fail(format!("the proxier stopped: {e}"))),
            Ok(()) if !token.is_cancelled() => Err(fail("the proxier stopped".to_owned())),
            Ok(()) => Ok(()),
        }
    }
}
