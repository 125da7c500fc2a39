//! The embedded runtime with the proxier: for each binding, the proxier is bound first on
//! its own port, then the syncer runs with that address and port written into the virtual
//! nodes; if either stops, the group stops (and is restarted by the runner).
//!
//! **Ports.** A binding's proxier keeps its port across group and manager restarts, so the
//! virtual nodes keep their kubelet endpoint: it takes the port its virtual nodes already
//! advertise (read from the computing cluster), else the port of [`EmbeddedProxierConfig::ports`]
//! that the binding's name hashes to ([`port_candidates`]), trying the next ones of the range
//! when that one is taken, and a port the system picks only when the range is full.

use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use tokio_util::sync::CancellationToken;

use super::embedded::{BindingRuntime, ComponentState, RuntimeReporter};
use crate::crd::ClusterBinding;
use crate::proxier::{Proxier, ProxierConfig, ProxierMetrics, self_signed_serving_cert};
use crate::syncer::kubelet_port::fnv1a;
use crate::syncer::{ProxierEndpoint, Syncer, SyncerConfig};

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
    /// The ports the proxiers take (see the module docs); `None` lets the system pick.
    pub ports: Option<RangeInclusive<u16>>,
}

/// The default of [`EmbeddedProxierConfig::ports`] (`--embedded-proxier-ports`).
pub const DEFAULT_EMBEDDED_PROXIER_PORTS: RangeInclusive<u16> = 10400..=10499;

/// How many ports of the range are tried after the one a binding hashes to.
const PORT_PROBES: usize = 16;

/// The ports to try for `binding`'s proxier, in order: the one its virtual nodes advertise
/// (`advertised`), then up to 16 of `range` starting at the one the name hashes to, then 0
/// (any free port).
pub fn port_candidates(
    binding: &str,
    advertised: Option<u16>,
    range: Option<&RangeInclusive<u16>>,
) -> Vec<u16> {
    let mut ports: Vec<u16> = advertised.filter(|p| *p != 0).into_iter().collect();
    if let Some(range) = range.filter(|r| !r.is_empty()) {
        let start = u64::from(*range.start());
        let len = u64::from(*range.end()) - start + 1;
        let first = fnv1a(binding) % len;
        for i in 0..len.min(PORT_PROBES as u64) {
            let port = u16::try_from(start + (first + i) % len).unwrap_or(0);
            if !ports.contains(&port) {
                ports.push(port);
            }
        }
    }
    ports.push(0);
    ports
}

/// The kubelet port the virtual nodes of `binding` advertise, if any (and readable).
async fn advertised_port(computing: &Client, binding: &str) -> Option<u16> {
    let nodes: Api<Node> = Api::all(computing.clone());
    let selector = format!("{}={binding}", crate::labels::CLUSTER_BINDING);
    let list = nodes
        .list(&ListParams::default().labels(&selector))
        .await
        .ok()?;
    list.items.iter().find_map(|node| {
        let port = node
            .status
            .as_ref()?
            .daemon_endpoints
            .as_ref()?
            .kubelet_endpoint
            .as_ref()?
            .port;
        u16::try_from(port).ok().filter(|p| *p != 0)
    })
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
            ports: Some(DEFAULT_EMBEDDED_PROXIER_PORTS),
        }
    }
}

/// Runs the proxier and the syncer of a binding: the proxier is bound first so the syncer
/// writes its address and port into the virtual nodes; if either stops, both stop. The port
/// stays the same across restarts (see the module docs).
pub struct SyncerProxierRuntime {
    computing: Client,
    base: SyncerConfig,
    proxier: EmbeddedProxierConfig,
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
        let advertised = advertised_port(&self.computing, &name).await;
        let candidates = port_candidates(&name, advertised, self.proxier.ports.as_ref());
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
        let mut bound = None;
        let mut last_error = None;
        for port in candidates {
            match proxier(port).bind().await {
                Ok(b) => {
                    bound = Some(b);
                    break;
                }
                Err(e) => last_error = Some(e.to_string()),
            }
        }
        let Some(bound) = bound else {
            return Err(fail(format!(
                "cannot start the proxier: {}",
                last_error.unwrap_or_default()
            )));
        };
        let addr = bound.local_addr();
        reporter.proxier(ComponentState::Running(format!(
            "the proxier serves the kubelet API on {advertise}:{}",
            addr.port()
        )));

        let mut syncer_config = self.base.clone();
        syncer_config.binding_name = name;
        syncer_config.proxier = ProxierEndpoint {
            address: Some(advertise),
            port: i32::from(addr.port()),
            node_ports: None,
            pods: None,
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

    fn forget(&self, binding: &str) {
        super::embedded::forget_metrics(&self.base, binding);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_candidates_table() {
        let range = 10400..=10499;
        let hashed = port_candidates("worker-1", None, Some(&range));
        assert_eq!(hashed.len(), 17, "16 of the range, then any port");
        assert!(range.contains(&hashed[0]));
        assert_eq!(hashed.last(), Some(&0));
        // The same name always gets the same port; another name (most likely) another.
        assert_eq!(port_candidates("worker-1", None, Some(&range)), hashed);
        assert_ne!(
            port_candidates("worker-2", None, Some(&range))[0],
            hashed[0]
        );
        for (binding, advertised, range, want_first, want_len) in [
            // What the virtual nodes advertise comes first, and is not tried twice.
            (
                "worker-1",
                Some(hashed[3]),
                Some(10400..=10499),
                hashed[3],
                17,
            ),
            ("worker-1", Some(31000), Some(10400..=10499), 31000, 18),
            ("worker-1", Some(0), None, 0, 1),
            ("worker-1", Some(31000), None, 31000, 2),
            ("worker-1", None, None, 0, 1),
            // A range smaller than the probes is tried whole, wrapping around.
            ("b", None, Some(20000..=20002), 0, 4),
            // The top of the port space.
            ("b", None, Some(65535..=65535), 65535, 2),
        ] {
            let got = port_candidates(binding, advertised, range.as_ref());
            assert_eq!(
                got.len(),
                want_len,
                "{binding} {advertised:?} {range:?}: {got:?}"
            );
            if want_first != 0 {
                assert_eq!(got[0], want_first, "{got:?}");
            }
            if let Some(range) = &range {
                let from_range: Vec<u16> =
                    got.iter().copied().filter(|p| range.contains(p)).collect();
                let mut unique = from_range.clone();
                unique.sort_unstable();
                unique.dedup();
                assert_eq!(unique.len(), from_range.len(), "no port twice: {got:?}");
            }
        }
    }
}
