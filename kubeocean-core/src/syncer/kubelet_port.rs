//! One proxier port per virtual node: which port a virtual node's kubelet API is served on.
//!
//! Each virtual node of a binding gets its own port of a configured range on the proxier, so
//! `/stats/summary` and `/metrics/resource` of a node answer for that node alone (with one
//! shared port the proxier cannot tell the nodes apart). The port is stored on the virtual
//! node itself (label [`labels::PROXIER_PORT`] and `daemonEndpoints.kubeletEndpoint.Port`),
//! and a syncer that restarts takes every port back from there ([`stored_port`]); a new node
//! gets the first free port from the one its name hashes to ([`choose_port`]), so the same
//! node name tends to get the same port again after a removal. [`KubeletPorts`] only keeps
//! concurrent reconciles of one session from handing out the same port twice.
//!
//! A node's own port is published (`daemonEndpoints.kubeletEndpoint.Port`, where
//! kube-apiserver dials for logs and exec) only once it answers: the proxier opens it after
//! reading the label from the node, so until then the node advertises the binding's shared
//! endpoint, which serves every virtual node's pods
//! ([`endpoint_of`](super::kubelet_endpoint::endpoint_of), [`NodeEndpoint`]).
//! Otherwise `kubectl logs` of a pod that has just started could meet a closed port.

use std::collections::{HashMap, HashSet};
use std::ops::RangeInclusive;
use std::sync::{Mutex, RwLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};

use super::config::ProxierEndpoint;
use crate::labels;

/// FNV-1a of `text`: stable across builds and platforms (unlike `std`'s hasher).
pub fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The port a virtual node advertises: its [`labels::PROXIER_PORT`] label, else its
/// `daemonEndpoints.kubeletEndpoint.Port`; `None` when neither holds a port.
pub fn stored_port(node: &Node) -> Option<u16> {
    let label = node
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(labels::PROXIER_PORT))
        .and_then(|v| v.parse::<u16>().ok());
    let endpoint = || {
        let port = node
            .status
            .as_ref()?
            .daemon_endpoints
            .as_ref()?
            .kubelet_endpoint
            .as_ref()?
            .port;
        u16::try_from(port).ok()
    };
    label.or_else(endpoint).filter(|p| *p != 0)
}

/// The port of virtual node `name`: `stored` when it lies in `range` and no other node holds
/// it (`taken`), else the first free port of `range` from the one `name` hashes to, wrapping
/// around; `None` when every port of the range is taken.
pub fn choose_port(
    name: &str,
    stored: Option<u16>,
    range: &RangeInclusive<u16>,
    taken: impl Fn(u16) -> bool,
) -> Option<u16> {
    if let Some(port) = stored.filter(|p| range.contains(p) && !taken(*p)) {
        return Some(port);
    }
    if range.is_empty() {
        return None;
    }
    let start = u64::from(*range.start());
    let len = u64::from(*range.end()) - start + 1;
    let first = fnv1a(name) % len;
    (0..len)
        .filter_map(|i| u16::try_from(start + (first + i) % len).ok())
        .find(|port| !taken(*port))
}

/// Which virtual node each port of `range` serves, from the stored virtual nodes
/// `(name, stored port)`: a port claimed twice goes to the first name in sorted order (the
/// other node is given a new port when it is next reconciled).
pub fn ports_of(
    nodes: impl IntoIterator<Item = (String, Option<u16>)>,
    range: &RangeInclusive<u16>,
) -> HashMap<u16, String> {
    let mut nodes: Vec<(String, u16)> = nodes
        .into_iter()
        .filter_map(|(name, port)| Some((name, port.filter(|p| range.contains(p))?)))
        .collect();
    nodes.sort();
    let mut by_port = HashMap::new();
    for (name, port) in nodes {
        by_port.entry(port).or_insert(name);
    }
    by_port
}

#[derive(Default)]
struct PortTable {
    /// Filled from the stored virtual nodes on first use.
    seeded: bool,
    by_node: HashMap<String, u16>,
    by_port: HashMap<u16, String>,
}

/// The ports handed out in one syncer session (seeded from the stored virtual nodes), and
/// the proxier pod IP found last (when the proxier's pods are followed).
#[derive(Default)]
pub struct KubeletPorts {
    table: Mutex<PortTable>,
    proxier_address: RwLock<Option<String>>,
    /// `address:port` endpoints seen answering.
    answering: Mutex<HashSet<(String, u16)>>,
    /// Failed tries of `address:port` endpoints not answering yet.
    tries: Mutex<HashMap<(String, u16), u32>>,
}

impl KubeletPorts {
    /// The proxier pod IP found last.
    pub fn proxier_address(&self) -> Option<String> {
        self.proxier_address
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Records the proxier pod IP; whether it changed.
    pub(super) fn set_proxier_address(&self, address: Option<String>) -> bool {
        let mut current = self
            .proxier_address
            .write()
            .unwrap_or_else(|p| p.into_inner());
        let changed = *current != address;
        *current = address;
        changed
    }

    /// The port of virtual node `name` (which advertises `stored`), from `range`. `stored_nodes`
    /// lists every stored virtual node of the binding with its port; it is read once per
    /// session, on the first call. `None`: the range is full.
    pub fn assign(
        &self,
        name: &str,
        stored: Option<u16>,
        range: &RangeInclusive<u16>,
        stored_nodes: impl FnOnce() -> Vec<(String, Option<u16>)>,
    ) -> Option<u16> {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if !table.seeded {
            table.by_port = ports_of(stored_nodes(), range);
            table.by_node = table
                .by_port
                .iter()
                .map(|(port, node)| (node.clone(), *port))
                .collect();
            table.seeded = true;
        }
        if let Some(port) = table.by_node.get(name) {
            return Some(*port);
        }
        let port = choose_port(name, stored, range, |p| table.by_port.contains_key(&p))?;
        table.by_node.insert(name.to_owned(), port);
        table.by_port.insert(port, name.to_owned());
        Some(port)
    }

    /// Frees the port of virtual node `name` (removed).
    pub fn release(&self, name: &str) {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(port) = table.by_node.remove(name) {
            table.by_port.remove(&port);
            self.answering
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|(_, p)| *p != port);
        }
    }

    /// Whether `address:port` answers: remembered once it did, else tried now.
    pub(super) async fn answers(&self, address: &str, port: u16) -> bool {
        let key = (address.to_owned(), port);
        if self
            .answering
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&key)
        {
            return true;
        }
        if !accepts_connections(address, port).await {
            *self
                .tries
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(key)
                .or_insert(0) += 1;
            return false;
        }
        self.tries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        self.answering
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key);
        true
    }

    /// When to try `address:port` again after it did not answer: [`UNPUBLISHED_RETRY`],
    /// doubling with each failed try up to [`UNPUBLISHED_RETRY_MAX`] (a proxier the syncer
    /// cannot reach must not keep every node busy).
    pub fn retry_delay(&self, address: &str, port: u16) -> Duration {
        let tries = self
            .tries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(address.to_owned(), port))
            .copied()
            .unwrap_or(0);
        retry_delay(tries)
    }
}

/// The delay before trying a port again after `tries` failed tries.
pub fn retry_delay(tries: u32) -> Duration {
    let factor = 1u32 << tries.saturating_sub(1).min(10);
    UNPUBLISHED_RETRY
        .saturating_mul(factor)
        .min(UNPUBLISHED_RETRY_MAX)
}

/// How long a kubelet port may take to accept a connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// How soon a node whose port did not answer is looked at again, at first.
pub const UNPUBLISHED_RETRY: Duration = Duration::from_millis(500);

/// The longest wait between tries of a port that does not answer.
pub const UNPUBLISHED_RETRY_MAX: Duration = Duration::from_secs(30);

/// Whether `address:port` accepts a TCP connection within [`PROBE_TIMEOUT`].
async fn accepts_connections(address: &str, port: u16) -> bool {
    let host = address.trim_start_matches('[').trim_end_matches(']');
    let target = match host.parse::<std::net::IpAddr>() {
        Ok(ip) => std::net::SocketAddr::new(ip, port).to_string(),
        Err(_) => format!("{host}:{port}"),
    };
    matches!(
        tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect(target)).await,
        Ok(Ok(_))
    )
}

/// Where a virtual node is served, and which port it publishes now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeEndpoint {
    /// The proxier endpoint of the node: its own port with per-node ports (written in the
    /// [`labels::PROXIER_PORT`] label, from which the proxier opens it).
    pub proxier: ProxierEndpoint,
    /// The port to publish in `daemonEndpoints`: the node's own once it answers, the shared
    /// endpoint's until then.
    pub published: i32,
    /// When the node's own port is not published yet: when to try it again.
    pub retry: Duration,
}

impl NodeEndpoint {
    /// Whether the node's own port is not published yet (look again soon).
    pub fn pending(&self) -> bool {
        self.published != self.proxier.port
    }

    /// Writes the published port into `status`.
    pub fn publish(&self, status: &mut k8s_openapi::api::core::v1::NodeStatus) {
        status.daemon_endpoints = Some(k8s_openapi::api::core::v1::NodeDaemonEndpoints {
            kubelet_endpoint: Some(k8s_openapi::api::core::v1::DaemonEndpoint {
                port: self.published,
            }),
        });
    }
}

/// The port to publish: the node's own (`own`) when it answers, else the shared one; the
/// node's own when there is no address to try (the shared endpoint is then no better known).
pub fn published_port(own: i32, shared: i32, answers: Option<bool>) -> i32 {
    match answers {
        Some(false) => shared,
        Some(true) | None => own,
    }
}

fn is_ready(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    pod.metadata.deletion_timestamp.is_none()
        && status.and_then(|s| s.phase.as_deref()) == Some("Running")
        && status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// The proxier pod IP the virtual nodes should advertise: `current` while a ready pod still
/// has it (no needless rewrite of every node), else the IP of the first ready pod by name;
/// `current` when no pod is ready (a node pointing at a restarting proxier is no worse
/// than one pointing nowhere).
pub fn choose_proxier_address(pods: &[Pod], current: Option<&str>) -> Option<String> {
    let mut ready: Vec<(&str, &str)> = pods
        .iter()
        .filter(|pod| is_ready(pod))
        .filter_map(|pod| {
            let ip = pod.status.as_ref()?.pod_ip.as_deref()?;
            (!ip.is_empty()).then(|| (pod.metadata.name.as_deref().unwrap_or_default(), ip))
        })
        .collect();
    if let Some(current) = current
        && ready.iter().any(|(_, ip)| *ip == current)
    {
        return Some(current.to_owned());
    }
    ready.sort_unstable();
    ready
        .first()
        .map(|(_, ip)| (*ip).to_owned())
        .or_else(|| current.map(str::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(label: Option<&str>, endpoint: Option<i64>) -> Node {
        let mut value = json!({"metadata": {"name": "v", "labels": {}}});
        if let Some(label) = label {
            value["metadata"]["labels"][labels::PROXIER_PORT] = json!(label);
        }
        if let Some(port) = endpoint {
            value["status"] = json!({"daemonEndpoints": {"kubeletEndpoint": {"Port": port}}});
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn stored_ports() {
        for (label, endpoint, want) in [
            (Some("20001"), Some(20002), Some(20001)),
            (None, Some(20002), Some(20002)),
            (Some("x"), Some(20002), Some(20002)),
            (Some("70000"), None, None),
            (None, Some(0), None),
            (None, Some(-1), None),
            (None, None, None),
        ] {
            assert_eq!(
                stored_port(&node(label, endpoint)),
                want,
                "{label:?} {endpoint:?}"
            );
        }
    }

    /// (what, stored, taken ports, range, want)
    type ChooseCase = (
        &'static str,
        Option<u16>,
        Vec<u16>,
        RangeInclusive<u16>,
        Option<u16>,
    );

    #[test]
    fn choose_port_table() {
        let range = 20000..=20009;
        let hashed = choose_port("vnode-a", None, &range, |_| false).unwrap();
        assert!(range.contains(&hashed));
        let next = if hashed == 20009 { 20000 } else { hashed + 1 };
        let cases: Vec<ChooseCase> = vec![
            (
                "stored and free",
                Some(20003),
                vec![],
                range.clone(),
                Some(20003),
            ),
            (
                "no port yet: hashed",
                None,
                vec![],
                range.clone(),
                Some(hashed),
            ),
            (
                "hashed taken: next",
                None,
                vec![hashed],
                range.clone(),
                Some(next),
            ),
            (
                "stored taken",
                Some(20003),
                vec![20003, hashed],
                range.clone(),
                Some(next),
            ),
            (
                "stored outside the range",
                Some(10250),
                vec![],
                range.clone(),
                Some(hashed),
            ),
            (
                "range full",
                Some(20003),
                (20000..=20009).collect(),
                range.clone(),
                None,
            ),
            ("one port", None, vec![], 30000..=30000, Some(30000)),
            (
                "top of the port space",
                None,
                vec![65534],
                65534..=65535,
                Some(65535),
            ),
            #[allow(clippy::reversed_empty_ranges)]
            ("empty range", None, vec![], 2..=1, None),
        ];
        for (what, stored, taken, range, want) in cases {
            let got = choose_port("vnode-a", stored, &range, |p| taken.contains(&p));
            assert_eq!(got, want, "{what}");
        }
        // The same name always hashes to the same port.
        assert_eq!(
            choose_port("vnode-a", None, &range, |_| false),
            Some(hashed)
        );
    }

    fn proxier_pod(name: &str, ip: &str, ready: bool, deleting: bool) -> Pod {
        let mut value = json!({
            "metadata": {"name": name},
            "status": {"phase": "Running", "podIP": ip,
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        });
        if deleting {
            value["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn proxier_addresses() {
        let a = proxier_pod("proxier-a", "10.0.0.1", true, false);
        let b = proxier_pod("proxier-b", "10.0.0.2", true, false);
        let unready = proxier_pod("proxier-0", "10.0.0.3", false, false);
        let leaving = proxier_pod("proxier-1", "10.0.0.4", true, true);
        let no_ip = proxier_pod("proxier-00", "", true, false);
        // (what, pods, current, want)
        let cases = [
            (
                "first ready by name",
                vec![b.clone(), a.clone()],
                None,
                Some("10.0.0.1"),
            ),
            (
                "current kept",
                vec![a.clone(), b.clone()],
                Some("10.0.0.2"),
                Some("10.0.0.2"),
            ),
            (
                "current gone",
                vec![b.clone()],
                Some("10.0.0.1"),
                Some("10.0.0.2"),
            ),
            (
                "unready, leaving and IP-less pods skipped",
                vec![unready.clone(), leaving, no_ip, b.clone()],
                None,
                Some("10.0.0.2"),
            ),
            (
                "current on an unready pod",
                vec![unready.clone(), b.clone()],
                Some("10.0.0.3"),
                Some("10.0.0.2"),
            ),
            (
                "none ready: current stays",
                vec![unready],
                Some("10.0.0.1"),
                Some("10.0.0.1"),
            ),
            ("none at all", vec![], None, None),
        ];
        for (what, pods, current, want) in cases {
            assert_eq!(
                choose_proxier_address(&pods, current).as_deref(),
                want,
                "{what}"
            );
        }
    }

    #[test]
    fn a_port_is_published_once_it_answers() {
        // (own, shared, answers, want)
        for (own, shared, answers, want) in [
            (20001, 10400, Some(true), 20001),
            (20001, 10400, Some(false), 10400),
            (20001, 10400, None, 20001),
        ] {
            assert_eq!(published_port(own, shared, answers), want, "{answers:?}");
        }
        let endpoint = NodeEndpoint {
            proxier: ProxierEndpoint {
                port: 20001,
                ..ProxierEndpoint::default()
            },
            published: 10250,
            retry: UNPUBLISHED_RETRY,
        };
        assert!(endpoint.pending());
        for (tries, want) in [
            (0, 500),
            (1, 500),
            (2, 1000),
            (3, 2000),
            (7, 30_000),
            (40, 30_000),
        ] {
            assert_eq!(retry_delay(tries), Duration::from_millis(want), "{tries}");
        }
        let mut status = k8s_openapi::api::core::v1::NodeStatus::default();
        endpoint.publish(&mut status);
        assert_eq!(
            status
                .daemon_endpoints
                .and_then(|d| d.kubelet_endpoint)
                .map(|e| e.port),
            Some(10250)
        );
    }

    #[tokio::test]
    async fn answering_ports_are_found_and_remembered() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let open = listener.local_addr().unwrap().port();
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let ports = KubeletPorts::default();
        assert!(ports.answers("127.0.0.1", open).await);
        assert!(!ports.answers("127.0.0.1", closed).await);
        drop(listener);
        // Remembered: a proxier restarting does not move the node back and forth.
        assert!(ports.answers("127.0.0.1", open).await);
    }

    #[test]
    fn ports_of_keeps_the_first_claim() {
        let got = ports_of(
            [
                ("vnode-b".to_owned(), Some(20001)),
                ("vnode-a".to_owned(), Some(20001)),
                ("vnode-c".to_owned(), Some(10250)),
                ("vnode-d".to_owned(), None),
                ("vnode-e".to_owned(), Some(20002)),
            ],
            &(20000..=20009),
        );
        assert_eq!(
            got,
            HashMap::from([(20001, "vnode-a".to_owned()), (20002, "vnode-e".to_owned())])
        );
    }

    #[test]
    fn a_session_recovers_stored_ports_and_never_hands_out_one_twice() {
        let range = 20000..=20002;
        let ports = KubeletPorts::default();
        let stored = || {
            vec![
                ("vnode-a".to_owned(), Some(20001)),
                ("vnode-b".to_owned(), Some(20001)),
            ]
        };
        assert_eq!(
            ports.assign("vnode-a", Some(20001), &range, stored),
            Some(20001)
        );
        // vnode-b lost the tie: it moves to a free port.
        let b = ports.assign("vnode-b", Some(20001), &range, || unreachable!());
        assert!(matches!(b, Some(20000 | 20002)), "{b:?}");
        let c = ports.assign("vnode-c", None, &range, || unreachable!());
        assert!(c.is_some() && c != b && c != Some(20001), "{c:?}");
        assert_eq!(
            ports.assign("vnode-d", None, &range, || unreachable!()),
            None
        );
        // The same node asks again: same port.
        assert_eq!(ports.assign("vnode-c", None, &range, || unreachable!()), c);
        ports.release("vnode-c");
        assert_eq!(ports.assign("vnode-d", None, &range, || unreachable!()), c);
    }
}
