//! Settings of a syncer.

use std::ops::RangeInclusive;
use std::time::Duration;

use kube_kit::client::ClientOptions;

use super::clock::Clock;
use super::metrics::SyncerMetrics;

/// Threads of the async runtime a syncer process runs on by default
/// ([`kube_kit::runtime::build`]). One thread spends 0.24-0.31 ms of CPU per mapped pod in
/// the mapping benchmark, where two threads spend 0.36-0.43 ms handing tasks between them;
/// more threads pay off only when a binding's bursts need more than one core.
pub const SYNCER_RUNTIME_THREADS: usize = 1;

/// Settings of a [`Syncer`](super::Syncer).
#[derive(Clone, Debug)]
pub struct SyncerConfig {
    /// Name of the ClusterBinding served.
    pub binding_name: String,
    /// Namespace of the binding's Secret when `secretRef.namespace` is empty.
    pub secret_namespace: String,
    /// Options of the worker client (user agent, QPS limit, timeouts).
    pub client_options: ClientOptions,
    /// How often virtual node Leases are renewed (Kubernetes: 10 s).
    pub lease_renew_interval: Duration,
    /// `leaseDurationSeconds` of virtual node Leases (Kubernetes: 40 s).
    pub lease_duration: Duration,
    /// Wait between attempts to reach the worker.
    pub connect_retry_interval: Duration,
    /// Wait before retrying a failed reconcile, or re-checking a virtual node being drained.
    pub retry_interval: Duration,
    /// Longest wait between retries of a failing reconcile, bottom-up or top-down (the wait
    /// doubles from `retry_interval` on each failure in a row; see [`super::worker`]).
    pub max_retry_interval: Duration,
    /// How long a top-down request may take before it counts as failed (a hung API server
    /// must not hold a reconcile forever).
    pub request_timeout: Duration,
    /// How long the worker may take to answer a connectivity probe.
    pub probe_timeout: Duration,
    /// Virtual nodes reconciled at once; also the number of workers of each top-down pod
    /// queue (a quarter of it for copies and tokens).
    pub workers: usize,
    /// Where the virtual nodes' kubelet API is served.
    pub proxier: ProxierEndpoint,
    /// The clock time windows are evaluated with.
    pub clock: Clock,
    /// Where to record metrics (none by default).
    pub metrics: Option<SyncerMetrics>,
    /// Service of the computing cluster whose address mapped pods use as nameserver
    /// (upstream: `kube-system/kube-dns-intranet`).
    pub dns_service: ServiceRef,
    /// Service of the computing cluster whose address and first port mapped pods reach the
    /// API server at (upstream: `default/kubernetes-intranet`).
    pub api_server_service: ServiceRef,
    /// How long a physical pod may stay unscheduled in the worker before it is deleted and
    /// its virtual pod fails (upstream: 5 minutes).
    pub physical_pod_scheduling_timeout: Duration,
}

impl SyncerConfig {
    /// Defaults for the binding `binding_name`.
    pub fn new(binding_name: impl Into<String>) -> SyncerConfig {
        SyncerConfig {
            binding_name: binding_name.into(),
            secret_namespace: "kubeocean-system".to_owned(),
            client_options: ClientOptions::new(kube_kit::client::user_agent(
                "kubeocean-syncer",
                env!("CARGO_PKG_VERSION"),
            )),
            lease_renew_interval: Duration::from_secs(10),
            lease_duration: Duration::from_secs(40),
            connect_retry_interval: Duration::from_secs(5),
            retry_interval: Duration::from_secs(1),
            max_retry_interval: Duration::from_secs(60),
            request_timeout: Duration::from_secs(30),
            probe_timeout: Duration::from_secs(5),
            workers: 16,
            proxier: ProxierEndpoint::default(),
            clock: Clock::system(),
            metrics: None,
            dns_service: ServiceRef::new("kube-system", "kube-dns-intranet"),
            api_server_service: ServiceRef::new("default", "kubernetes-intranet"),
            physical_pod_scheduling_timeout: Duration::from_secs(5 * 60),
        }
    }
}

/// A Service of the computing cluster, written `namespace/name`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServiceRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ServiceRef {
    /// The Service `namespace/name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> ServiceRef {
        ServiceRef {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// Its store key, `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

impl std::fmt::Display for ServiceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl std::str::FromStr for ServiceRef {
    type Err = String;

    /// Parses `namespace/name` (both DNS labels).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (namespace, name) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not namespace/name"))?;
        for part in [namespace, name] {
            if !crate::naming::is_dns1123_label(part) {
                return Err(format!(
                    "{part:?} in {text:?} is not a valid namespace or Service name"
                ));
            }
        }
        Ok(ServiceRef::new(namespace, name))
    }
}

#[cfg(test)]
mod tests {
    use super::ServiceRef;

    #[test]
    fn service_refs_parse() {
        let cases = [
            (
                "kube-system/kube-dns-intranet",
                Ok(ServiceRef::new("kube-system", "kube-dns-intranet")),
            ),
            ("default", Err(())),
            ("a/B", Err(())),
            ("/x", Err(())),
            ("a/b/c", Err(())),
        ];
        for (text, want) in cases {
            assert_eq!(text.parse::<ServiceRef>().map_err(|_| ()), want, "{text}");
        }
    }
}

/// Where the kubelet API of virtual nodes is served (the proxier).
///
/// With `node_ports` set, every virtual node gets its own port of that range (see
/// [`super::kubelet_port`]) at `address` (the proxier pod's IP), and the proxier answers on
/// each port for that node alone. Without it, every virtual node advertises `address:port`,
/// one endpoint shared by all nodes of the binding (summed stats): the mode of earlier
/// releases, kept for setups where only one port can be opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxierEndpoint {
    /// Address of the proxier written as the virtual nodes' `InternalIP`; `None` keeps the
    /// physical node's addresses.
    pub address: Option<String>,
    /// Port written to `daemonEndpoints.kubeletEndpoint.Port` when ports are shared.
    pub port: i32,
    /// The ports handed out one per virtual node; `None`: all share `port`.
    pub node_ports: Option<RangeInclusive<u16>>,
    /// The proxier's pods: when set, the virtual nodes advertise the IP of one of them (ready)
    /// instead of `address`, and follow it when that pod goes away.
    pub pods: Option<ProxierPods>,
}

/// Where the proxier's pods are, in the computing cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxierPods {
    /// Their namespace.
    pub namespace: String,
    /// Label selector (`key=value,...`) matching them.
    pub selector: String,
    /// How often they are listed.
    pub interval: Duration,
}

impl Default for ProxierEndpoint {
    fn default() -> Self {
        ProxierEndpoint {
            address: None,
            port: 10250,
            node_ports: None,
            pods: None,
        }
    }
}
