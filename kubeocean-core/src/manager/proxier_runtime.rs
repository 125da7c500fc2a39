//! The embedded runtime with the proxier: for each binding, the proxier is bound first on
//! its own port, then the syncer runs with that address and port written into the virtual
//! nodes; if either stops, the group stops (and is restarted by the runner).
//!
//! **Ports.** A binding's proxier keeps its port across group and manager restarts, so the
//! virtual nodes keep their kubelet endpoint: it takes the port its virtual nodes already
//! advertise (read from the computing cluster), else the port of [`EmbeddedProxierConfig::ports`]
//! that the binding's name hashes to ([`port_candidates`]), trying the next ones of the range
//! when that one is taken, and a port the system picks only when the range is full.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;
use std::sync::Mutex;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use tokio_util::sync::CancellationToken;

use super::embedded::{BindingRuntime, ComponentState, RuntimeReporter};
use super::serving_cert::{
    SELF_SIGNED_RETRY, ServingCert, ServingCertConfig, ServingCertSource, obtain,
    request_from_cluster, serving_names,
};
use crate::crd::ClusterBinding;
use crate::proxier::{Proxier, ProxierConfig, ProxierMetrics};
use crate::syncer::kubelet_port::{fnv1a, stored_port};
use crate::syncer::{ProxierEndpoint, Syncer, SyncerConfig};

/// Settings of the proxier in [`SyncerProxierRuntime`].
#[derive(Clone, Debug)]
pub struct EmbeddedProxierConfig {
    /// IP the proxiers listen on; each binding gets its own port.
    pub listen_ip: IpAddr,
    /// Address written into the virtual nodes (defaults to `listen_ip`); it must be reachable
    /// from the computing cluster's API server.
    pub advertise_address: Option<String>,
    /// CA (PEM) that signs the API server's kubelet-client certificate; when none, the CA
    /// kube-apiserver publishes ([`published_client_ca`]) if `client_ca_from_cluster`, else
    /// only bearer tokens are accepted.
    pub client_ca_pem: Option<String>,
    /// Without `client_ca_pem`, read the client CA from the computing cluster when each
    /// binding's proxier starts.
    pub client_ca_from_cluster: bool,
    /// Check bearer tokens with TokenReview on the computing cluster.
    pub token_review: bool,
    /// Where the proxiers count requests (none by default).
    pub metrics: Option<ProxierMetrics>,
    /// The ports the proxiers take (see the module docs); `None` lets the system pick.
    pub ports: Option<RangeInclusive<u16>>,
    /// Ports of the virtual nodes' own endpoints, for every binding of this process: each
    /// binding takes a block of `node_ports_per_binding` of them ([`node_port_blocks`]) and
    /// gives each of its virtual nodes one; `None`: a binding's virtual nodes share its port.
    pub node_ports: Option<RangeInclusive<u16>>,
    /// Size of a binding's block of `node_ports`.
    pub node_ports_per_binding: u16,
    /// How the proxiers get their serving certificates.
    pub serving_cert: ServingCertConfig,
}

/// The blocks of `size` ports of `range` to try for `binding`'s virtual nodes, in order: the
/// block holding the lowest port its virtual nodes advertise (so a restart keeps them), then
/// every block from the one the name hashes to, wrapping around. A range smaller than `size`
/// is one block.
pub fn node_port_blocks(
    binding: &str,
    advertised: &[u16],
    range: &RangeInclusive<u16>,
    size: u16,
) -> Vec<RangeInclusive<u16>> {
    if range.is_empty() {
        return Vec::new();
    }
    let start = u32::from(*range.start());
    let len = u32::from(*range.end()) - start + 1;
    let size = u32::from(size.max(1)).min(len);
    let count = len / size;
    let block = |i: u32| {
        let first = start + i * size;
        let first = u16::try_from(first).unwrap_or(u16::MAX);
        let last = u16::try_from(u32::from(first) + size - 1).unwrap_or(u16::MAX);
        first..=last
    };
    let mut blocks = Vec::new();
    if let Some(lowest) = advertised
        .iter()
        .copied()
        .filter(|p| range.contains(p))
        .min()
    {
        let i = (u32::from(lowest) - start) / size;
        if i < count {
            blocks.push(block(i));
        }
    }
    let first = u32::try_from(fnv1a(binding) % u64::from(count)).unwrap_or(0);
    for i in 0..count {
        let candidate = block((first + i) % count);
        if !blocks.contains(&candidate) {
            blocks.push(candidate);
        }
    }
    blocks
}

/// The default of [`EmbeddedProxierConfig::ports`] (`--embedded-proxier-ports`).
pub const DEFAULT_EMBEDDED_PROXIER_PORTS: RangeInclusive<u16> = 10400..=10499;

/// The default of [`EmbeddedProxierConfig::node_ports_per_binding`].
pub const DEFAULT_NODE_PORTS_PER_BINDING: u16 = 1000;

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

/// The kubelet ports the virtual nodes of `binding` advertise (none when unreadable).
async fn advertised_ports(computing: &Client, binding: &str) -> Vec<u16> {
    let nodes: Api<Node> = Api::all(computing.clone());
    let selector = format!("{}={binding}", crate::labels::CLUSTER_BINDING);
    let Ok(list) = nodes.list(&ListParams::default().labels(&selector)).await else {
        return Vec::new();
    };
    list.items.iter().filter_map(stored_port).collect()
}

/// Where kube-apiserver publishes the CA of the client certificates it accepts (its
/// `--client-ca-file`), readable by every authenticated client that may read ConfigMaps there.
pub const CLIENT_CA_CONFIG_MAP: (&str, &str) =
    ("kube-system", "extension-apiserver-authentication");

/// The key of [`CLIENT_CA_CONFIG_MAP`] holding the CA bundle.
pub const CLIENT_CA_KEY: &str = "client-ca-file";

/// The client CA kube-apiserver publishes in [`CLIENT_CA_CONFIG_MAP`]: the CA that signs the
/// client certificates it accepts, and (as kubeadm and most distributions set it up) its own
/// kubelet-client certificate, which is what it presents to the kubelet endpoint of a virtual
/// node. An error says what is missing.
pub async fn published_client_ca(computing: &Client) -> Result<String, String> {
    let (namespace, name) = CLIENT_CA_CONFIG_MAP;
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(computing.clone(), namespace);
    let config_map = api
        .get_opt(name)
        .await
        .map_err(|e| {
            format!(
                "cannot read ConfigMap {namespace}/{name}: {}",
                kube_kit::client::describe_kube_error(&e)
            )
        })?
        .ok_or_else(|| format!("ConfigMap {namespace}/{name} does not exist"))?;
    config_map
        .data
        .and_then(|mut d| d.remove(CLIENT_CA_KEY))
        .filter(|pem| pem.contains("BEGIN CERTIFICATE"))
        .ok_or_else(|| format!("ConfigMap {namespace}/{name} has no {CLIENT_CA_KEY}"))
}

/// The blocks of per-node ports held by the bindings of this process.
#[derive(Default)]
struct HeldBlocks(Mutex<HashMap<String, RangeInclusive<u16>>>);

impl HeldBlocks {
    /// Takes the first of `candidates` no other binding holds.
    fn take(
        &self,
        binding: &str,
        candidates: Vec<RangeInclusive<u16>>,
    ) -> Option<RangeInclusive<u16>> {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let free = candidates
            .into_iter()
            .find(|c| !held.iter().any(|(b, r)| b != binding && r == c))?;
        held.insert(binding.to_owned(), free.clone());
        Some(free)
    }

    fn release(&self, binding: &str) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(binding);
    }
}

impl EmbeddedProxierConfig {
    /// Proxiers on `listen_ip`, advertised there, checking bearer tokens by TokenReview.
    pub fn new(listen_ip: IpAddr) -> EmbeddedProxierConfig {
        EmbeddedProxierConfig {
            listen_ip,
            advertise_address: None,
            client_ca_pem: None,
            client_ca_from_cluster: true,
            token_review: true,
            metrics: None,
            ports: Some(DEFAULT_EMBEDDED_PROXIER_PORTS),
            node_ports: None,
            node_ports_per_binding: DEFAULT_NODE_PORTS_PER_BINDING,
            serving_cert: ServingCertConfig::default(),
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
    blocks: HeldBlocks,
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
            blocks: HeldBlocks::default(),
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
        let advertised = advertised_ports(&self.computing, &name).await;
        let node_ports = match &self.proxier.node_ports {
            Some(range) => {
                let blocks = node_port_blocks(
                    &name,
                    &advertised,
                    range,
                    self.proxier.node_ports_per_binding,
                );
                let block = self.blocks.take(&name, blocks).ok_or_else(|| {
                    fail(format!(
                        "no free block of {} ports left in {}-{} for this binding's virtual nodes",
                        self.proxier.node_ports_per_binding,
                        range.start(),
                        range.end()
                    ))
                })?;
                Some(block)
            }
            None => None,
        };
        let hosts = [advertise.clone(), "localhost".to_owned()];
        let mut renewed = None;
        // Each round serves one certificate; a renewal ends the round once its successor is
        // in hand, so the kubelet endpoint is never without a usable certificate.
        let result = loop {
            let cert = match renewed.take() {
                Some(cert) => cert,
                None => {
                    let nodes = virtual_node_names(&self.computing, &name).await;
                    let names = serving_names(&name, &nodes, &hosts);
                    match obtain(&self.computing, &name, &names, &self.proxier.serving_cert).await {
                        Ok(cert) => cert,
                        Err(e) => break Err(fail(e)),
                    }
                }
            };
            let round = token.child_token();
            let (next_tx, mut next_rx) = tokio::sync::oneshot::channel();
            let renewer = tokio::spawn(renew(
                self.computing.clone(),
                name.clone(),
                hosts.to_vec(),
                self.proxier.serving_cert.clone(),
                cert.renew_at,
                next_tx,
                round.clone(),
            ));
            let advertised = advertised_ports(&self.computing, &name).await;
            let served = self
                .serve(
                    &name,
                    &advertise,
                    &cert,
                    &advertised,
                    node_ports.clone(),
                    &reporter,
                    &round,
                )
                .await;
            renewer.abort();
            if token.is_cancelled() || !round.is_cancelled() {
                break served;
            }
            renewed = next_rx.try_recv().ok();
            tracing::info!(binding = %name, "the proxier's serving certificate was renewed");
        };
        self.blocks.release(&name);
        result
    }

    fn forget(&self, binding: &str) {
        super::embedded::forget_metrics(&self.base, binding);
    }
}

impl SyncerProxierRuntime {
    /// Binds the proxier of `name` and runs it with the syncer until either stops.
    #[allow(clippy::too_many_arguments)]
    async fn serve(
        &self,
        name: &str,
        advertise: &str,
        cert: &ServingCert,
        advertised: &[u16],
        node_ports: Option<RangeInclusive<u16>>,
        reporter: &RuntimeReporter,
        token: &CancellationToken,
    ) -> Result<(), String> {
        let name = name.to_owned();
        let advertise = advertise.to_owned();
        let fail = |what: String| {
            reporter.proxier(ComponentState::Failed(what.clone()));
            what
        };
        // With per-node ports, what the nodes advertise is theirs, not the shared port.
        let shared = advertised
            .first()
            .copied()
            .filter(|p| !node_ports.as_ref().is_some_and(|r| r.contains(p)));
        let client_ca_pem = match &self.proxier.client_ca_pem {
            Some(pem) => Some(pem.clone()),
            None if self.proxier.client_ca_from_cluster => {
                match published_client_ca(&self.computing).await {
                    Ok(pem) => Some(pem),
                    Err(message) => {
                        tracing::warn!(
                            binding = %name,
                            "{message}: the proxier accepts bearer tokens only, so the API server's logs, exec and port-forward to virtual nodes are refused; give --embedded-proxier-client-ca-file"
                        );
                        None
                    }
                }
            }
            None => None,
        };
        let mut candidates = port_candidates(&name, shared, self.proxier.ports.as_ref());
        if let Some(range) = &node_ports {
            candidates.retain(|p| !range.contains(p));
        }
        let proxier = |port: u16| {
            let mut config = ProxierConfig::new(
                name.clone(),
                SocketAddr::new(self.proxier.listen_ip, port),
                cert.cert_pem.clone(),
                cert.key_pem.clone(),
            );
            config.node_ports = node_ports.clone();
            config.client_ca_pem = client_ca_pem.clone();
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
        let serving = format!(
            "the proxier serves the kubelet API on {advertise}:{}",
            addr.port()
        );
        reporter.proxier(match &cert.source {
            ServingCertSource::Cluster(_) => ComponentState::Running(format!(
                "{serving} with a certificate signed by the cluster's CA"
            )),
            ServingCertSource::SelfSigned(why) => ComponentState::RunningSelfSigned(format!(
                "{serving} with a self-signed certificate, which clients verifying kubelets \
                 against the cluster's CA refuse: {why}"
            )),
        });

        let mut syncer_config = self.base.clone();
        syncer_config.binding_name = name;
        syncer_config.proxier = ProxierEndpoint {
            address: Some(advertise),
            port: i32::from(addr.port()),
            node_ports: node_ports.clone(),
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
}

/// The names of `binding`'s virtual nodes (none when they cannot be listed yet).
async fn virtual_node_names(computing: &Client, binding: &str) -> Vec<String> {
    let nodes: Api<Node> = Api::all(computing.clone());
    let selector = format!("{}={binding}", crate::labels::CLUSTER_BINDING);
    match nodes
        .list_metadata(&ListParams::default().labels(&selector))
        .await
    {
        Ok(list) => list.items.iter().map(ResourceExt::name_any).collect(),
        Err(_) => Vec::new(),
    }
}

/// From `at` on, asks the cluster for the next certificate (for the virtual nodes there are
/// then) until it gets one, hands it over and ends the `round`. A cluster that refuses keeps
/// the current certificate in use; it is asked again after [`SELF_SIGNED_RETRY`].
async fn renew(
    computing: Client,
    binding: String,
    hosts: Vec<String>,
    config: ServingCertConfig,
    at: jiff::Timestamp,
    next: tokio::sync::oneshot::Sender<ServingCert>,
    round: CancellationToken,
) {
    if !config.from_cluster {
        return;
    }
    let wait = jiff::Timestamp::now()
        .duration_until(at)
        .try_into()
        .unwrap_or(std::time::Duration::ZERO);
    tokio::time::sleep(wait).await;
    loop {
        let nodes = virtual_node_names(&computing, &binding).await;
        let names = serving_names(&binding, &nodes, &hosts);
        match request_from_cluster(&computing, &binding, &names, &config).await {
            Ok(cert) => {
                if next.send(cert).is_ok() {
                    round.cancel();
                }
                return;
            }
            Err(why) => {
                tracing::warn!(binding = %binding, "cannot renew the proxier's certificate: {why}");
                tokio::time::sleep(SELF_SIGNED_RETRY).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (advertised, range, size, first block, blocks)
    type BlockCase = (
        Vec<u16>,
        RangeInclusive<u16>,
        u16,
        Option<RangeInclusive<u16>>,
        usize,
    );

    #[test]
    fn node_port_blocks_table() {
        let range = 20000..=20999;
        let hashed = node_port_blocks("b1", &[], &range, 100);
        assert_eq!(hashed.len(), 10);
        assert!(hashed.iter().all(|b| b.end() - b.start() == 99));
        let mut starts: Vec<u16> = hashed.iter().map(|b| *b.start()).collect();
        starts.sort_unstable();
        starts.dedup();
        assert_eq!(starts.len(), 10, "every block once");
        assert_eq!(node_port_blocks("b1", &[], &range, 100), hashed, "stable");
        let cases: Vec<BlockCase> = vec![
            (
                vec![20350, 20420],
                range.clone(),
                100,
                Some(20300..=20399),
                10,
            ),
            (vec![10250], range.clone(), 100, Some(hashed[0].clone()), 10),
            (vec![], 30000..=30049, 100, Some(30000..=30049), 1),
            (vec![], 30000..=30249, 100, None, 2),
            #[allow(clippy::reversed_empty_ranges)]
            (vec![], 2..=1, 100, None, 0),
        ];
        for (advertised, range, size, first, count) in cases {
            let got = node_port_blocks("b1", &advertised, &range, size);
            assert_eq!(got.len(), count, "{advertised:?} {range:?}: {got:?}");
            if let Some(first) = first {
                assert_eq!(got[0], first, "{advertised:?} {range:?}");
            }
        }
        let held = HeldBlocks::default();
        let a = held.take("a", vec![20000..=20099, 20100..=20199]);
        assert_eq!(a, Some(20000..=20099));
        assert_eq!(
            held.take("b", vec![20000..=20099, 20100..=20199]),
            Some(20100..=20199)
        );
        assert_eq!(held.take("c", vec![20000..=20099]), None);
        assert_eq!(
            held.take("a", vec![20000..=20099]),
            a,
            "a binding retakes its own"
        );
        held.release("a");
        assert_eq!(held.take("c", vec![20000..=20099]), Some(20000..=20099));
    }

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
