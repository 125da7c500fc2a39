//! One listener per virtual node: the proxier listens on the port each virtual node of the
//! binding advertises (within the configured range) and, on that port, answers for that node
//! alone. The ports are read from the virtual nodes themselves (the syncer hands them out,
//! see [`crate::syncer::kubelet_port`]), so a restarted proxier listens on the same ports.
//! The nodes are listed every `interval`; listeners of nodes that are gone are closed.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::mapping::is_binding_node;
pub use super::server::NodePorts;
use super::server::{self, Context};
use crate::labels;
use crate::syncer::kubelet_port::{ports_of, stored_port};

/// The port each virtual node of `binding` among `nodes` is served on, within `range`.
pub fn desired_ports(
    nodes: &[Node],
    binding: &str,
    range: &RangeInclusive<u16>,
) -> HashMap<u16, String> {
    ports_of(
        nodes
            .iter()
            .filter(|node| is_binding_node(node, binding))
            .map(|node| (node.name_any(), stored_port(node))),
        range,
    )
}

/// What to change: ports to open and ports to close, given the open ones and the desired.
pub fn port_changes(
    open: impl IntoIterator<Item = u16>,
    desired: &HashMap<u16, String>,
) -> (Vec<u16>, Vec<u16>) {
    let open: Vec<u16> = open.into_iter().collect();
    let mut to_open: Vec<u16> = desired
        .keys()
        .copied()
        .filter(|p| !open.contains(p))
        .collect();
    let mut to_close: Vec<u16> = open
        .into_iter()
        .filter(|p| !desired.contains_key(p))
        .collect();
    to_open.sort_unstable();
    to_close.sort_unstable();
    (to_open, to_close)
}

/// Keeps one listener per virtual node on `ip` until `stop`, then waits for their
/// connections to end.
pub(crate) async fn run(
    context: Arc<Context>,
    acceptor: TlsAcceptor,
    ip: IpAddr,
    range: RangeInclusive<u16>,
    interval: Duration,
    stop: CancellationToken,
) {
    let tasks = TaskTracker::new();
    let mut open: HashMap<u16, CancellationToken> = HashMap::new();
    let selector = format!("{}={}", labels::CLUSTER_BINDING, context.binding);
    let api: Api<Node> = Api::all(context.computing.clone());
    loop {
        match api.list(&ListParams::default().labels(&selector)).await {
            Ok(list) => {
                let desired = desired_ports(&list.items, &context.binding, &range);
                let (to_open, to_close) = port_changes(open.keys().copied(), &desired);
                // Known before its listener opens, so a first request is not refused.
                context.node_ports.set(desired.clone());
                for port in to_close {
                    if let Some(token) = open.remove(&port) {
                        token.cancel();
                        tracing::info!(binding = %context.binding, port, "virtual node gone; its port is closed");
                    }
                }
                for port in to_open {
                    let addr = SocketAddr::new(ip, port);
                    match TcpListener::bind(addr).await {
                        Ok(listener) => {
                            let token = stop.child_token();
                            tracing::info!(binding = %context.binding, %addr, node = desired.get(&port).map(String::as_str).unwrap_or(""), "serving a virtual node");
                            tasks.spawn(server::serve(
                                context.clone(),
                                listener,
                                acceptor.clone(),
                                token.clone(),
                                Some(port),
                            ));
                            open.insert(port, token);
                        }
                        // Tried again on the next round.
                        Err(err) => {
                            tracing::warn!(binding = %context.binding, %addr, error = %err, "cannot listen for a virtual node")
                        }
                    }
                }
            }
            Err(err) => tracing::warn!(
                binding = %context.binding,
                error = %kube_kit::client::describe_kube_error(&err),
                "cannot list the virtual nodes; their ports stay as they are"
            ),
        }
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(interval) => {}
        }
    }
    tasks.close();
    tasks.wait().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, binding: &str, port: Option<u16>) -> Node {
        let mut labels = json!({ labels::CLUSTER_BINDING: binding });
        if let Some(port) = port {
            labels[labels::PROXIER_PORT] = json!(port.to_string());
        }
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
    }

    #[test]
    fn ports_follow_the_nodes() {
        let nodes = [
            node("vnode-a", "b1", Some(20001)),
            node("vnode-b", "b1", Some(20002)),
            node("vnode-c", "b2", Some(20003)),
            node("vnode-d", "b1", Some(10250)),
            node("vnode-e", "b1", None),
        ];
        let desired = desired_ports(&nodes, "b1", &(20000..=20009));
        assert_eq!(
            desired,
            HashMap::from([(20001, "vnode-a".into()), (20002, "vnode-b".into())])
        );
        for (open, want_open, want_close) in [
            (vec![], vec![20001, 20002], vec![]),
            (vec![20001, 20002], vec![], vec![]),
            (vec![20001, 20005], vec![20002], vec![20005]),
        ] {
            assert_eq!(
                port_changes(open.clone(), &desired),
                (want_open, want_close),
                "{open:?}"
            );
        }
    }
}
