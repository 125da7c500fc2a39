//! The kubelet API of the simulated nodes, served over HTTPS while the cluster is served (one
//! listener for every simulated node, which they advertise as InternalIP and kubelet port):
//!
//! - `GET /healthz`
//! - `GET /containerLogs/{ns}/{pod}/{container}` with `follow`, `tailLines`, `sinceSeconds`,
//!   `sinceTime`, `timestamps`, `limitBytes`, `previous` (the simulated container log)
//! - `/exec/{ns}/{pod}[/{uid}]/{container}?command=..` and `/attach/{ns}/{pod}[/{uid}]/{container}`
//!   over WebSocket (`v5.channel.k8s.io`, `v4.channel.k8s.io`, `v3`/`v2`/`channel.k8s.io`):
//!   stdout on channel 1, stderr on 2, the exit `Status` on 3 (v4 and v5; older protocols get
//!   the error text on failure only). Streams are chosen with `input`/`output`/`error`/`tty`
//!   (`=1`, what kube-apiserver sends) or `stdin`/`stdout`/`stderr` (`=true`).
//!   Exec runs a fixed command set: `echo ARGS...`, `hostname`, `env`; any other command exits
//!   127 with a message on stderr; `sh -c 'a; b'` runs its statements in turn, and `sh` (or
//!   `bash`) with stdin is an interactive shell over these commands ([`super::shell`]).
//!   Attach prints what the container printed so far, then ends.
//! - `/portForward/{ns}/{pod}[/{uid}]?port=P` (or `ports=P,Q`) over WebSocket
//!   (`v4.channel.k8s.io`, `channel.k8s.io`, `portforward.k8s.io`): per port a data channel
//!   `2i` and an error channel `2i+1`, each opened with the little-endian port; and over
//!   SPDY/3.1 (`X-Stream-Protocol-Version: portforward.k8s.io`, what kube-apiserver sends for
//!   kubectl), a pair of `error`/`data` streams per forwarded connection
//!   ([`super::port_forward`]). What a port answers is [`super::pod_ports`]'s: an HTTP echo
//!   server for ports named `http`, a byte echo otherwise.
//!
//! - `GET /stats/summary`, `/metrics/resource`, `/metrics/cadvisor`: the node's usage, made
//!   from its running pods (see [`super::kubelet_stats`]); every simulated node shares this
//!   listener, so these answer for the node the `Host` header names (the API server's
//!   `nodes/{name}/proxy` answers them in process for its own simulated nodes).
//!
//! Exec and attach also answer SPDY/3.1 (`v4.channel.k8s.io` … `channel.k8s.io`,
//! [`super::remote_command`]), reading a shell's stdin to its end before it answers.
//! Callers authenticate as kubelet does with `--client-ca-file` and webhook token auth (a client
//! certificate signed by the cluster CA, or a bearer token) and need `nodes/proxy` access
//! (`nodes/stats` for the summary, `nodes/metrics` for the metrics, as kubelet authorizes).

use super::Simulator;
use super::command_streams::{STATUS_CHANNEL, STDERR_CHANNEL, STDOUT_CHANNEL};
pub use super::command_streams::{StreamOptions, exit_status, output_frames};
pub use super::commands::{CommandOutput, run_command};
use crate::apiserver::auth::{self, Attributes, UserInfo};
use crate::apiserver::pki::PeerCertificate;
use crate::apiserver::resources::GroupResource;
use crate::apiserver::state::ClusterState;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};

/// Subprotocols of exec and attach, in the order kubelet prefers them.
pub const EXEC_PROTOCOLS: &[&str] = &[
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
];

/// Subprotocols of port forwarding.
pub const PORT_FORWARD_PROTOCOLS: &[&str] =
    &["v4.channel.k8s.io", "channel.k8s.io", "portforward.k8s.io"];

/// The router of the simulated kubelet API.
pub fn router(sim: Arc<Simulator>) -> Router {
    Router::new().fallback(handle).with_state(sim)
}

/// What a kubelet API path addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KubeletPath {
    /// `/healthz`
    Healthz,
    /// `/containerLogs/{ns}/{pod}/{container}`
    ContainerLogs {
        /// Namespace.
        namespace: String,
        /// Pod.
        pod: String,
        /// Container.
        container: String,
    },
    /// `/exec/{ns}/{pod}[/{uid}]/{container}`
    Exec {
        /// Namespace.
        namespace: String,
        /// Pod.
        pod: String,
        /// Container.
        container: String,
    },
    /// `/attach/{ns}/{pod}[/{uid}]/{container}`
    Attach {
        /// Namespace.
        namespace: String,
        /// Pod.
        pod: String,
        /// Container.
        container: String,
    },
    /// `/portForward/{ns}/{pod}[/{uid}]`
    PortForward {
        /// Namespace.
        namespace: String,
        /// Pod.
        pod: String,
    },
    /// `/stats/summary`
    StatsSummary,
    /// `/metrics/resource`
    MetricsResource,
    /// `/metrics/cadvisor`
    MetricsCadvisor,
}

impl KubeletPath {
    fn pod(&self) -> Option<(&str, &str)> {
        match self {
            KubeletPath::Healthz
            | KubeletPath::StatsSummary
            | KubeletPath::MetricsResource
            | KubeletPath::MetricsCadvisor => None,
            KubeletPath::ContainerLogs { namespace, pod, .. }
            | KubeletPath::Exec { namespace, pod, .. }
            | KubeletPath::Attach { namespace, pod, .. }
            | KubeletPath::PortForward { namespace, pod } => Some((namespace, pod)),
        }
    }
}

/// Parses a kubelet API path.
pub fn parse_kubelet_path(path: &str) -> Option<KubeletPath> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return None;
    }
    let s = |v: &str| v.to_string();
    Some(match segs.as_slice() {
        ["healthz"] => KubeletPath::Healthz,
        ["stats", "summary"] => KubeletPath::StatsSummary,
        ["metrics", "resource"] => KubeletPath::MetricsResource,
        ["metrics", "cadvisor"] => KubeletPath::MetricsCadvisor,
        ["containerLogs", ns, pod, c] => KubeletPath::ContainerLogs {
            namespace: s(ns),
            pod: s(pod),
            container: s(c),
        },
        ["exec", ns, pod, c] | ["exec", ns, pod, _, c] => KubeletPath::Exec {
            namespace: s(ns),
            pod: s(pod),
            container: s(c),
        },
        ["attach", ns, pod, c] | ["attach", ns, pod, _, c] => KubeletPath::Attach {
            namespace: s(ns),
            pod: s(pod),
            container: s(c),
        },
        ["portForward", ns, pod] | ["portForward", ns, pod, _] => KubeletPath::PortForward {
            namespace: s(ns),
            pod: s(pod),
        },
        _ => return None,
    })
}

/// The ports of a port-forward request (`port=P` as kube-apiserver sends it, or `ports=P,Q`).
pub fn parse_ports(params: &[(String, String)]) -> Result<Vec<u16>, String> {
    let mut ports = Vec::new();
    for (_, value) in params.iter().filter(|(k, _)| k == "port" || k == "ports") {
        for part in value.split(',') {
            let port: u16 = part
                .trim()
                .parse()
                .map_err(|_| format!("unable to parse {part:?} as a port: not a number"))?;
            if port == 0 {
                return Err(format!("port {part:?} must be > 0"));
            }
            ports.push(port);
        }
    }
    if ports.is_empty() {
        return Err("query parameter \"port\" is required".into());
    }
    // Two channels per port, numbered by one byte.
    if ports.len() > 127 {
        return Err("at most 127 ports can be forwarded at once".into());
    }
    Ok(ports)
}

/// The subprotocol to answer: the first one the client offers that is supported; `None` when
/// the client offers none (plain binary channels, as kubelet treats it).
pub fn select_protocol(
    offered: &[&str],
    supported: &[&'static str],
) -> Result<Option<&'static str>, String> {
    if offered.is_empty() {
        return Ok(None);
    }
    offered
        .iter()
        .find_map(|o| supported.iter().find(|s| *s == o).copied())
        .map(Some)
        .ok_or_else(|| {
            format!(
                "requested protocol(s) are not supported: [{}]; supports [{}]",
                offered.join(" "),
                supported.join(" ")
            )
        })
}

/// Checks a WebSocket upgrade request and builds the 101 answer with the chosen subprotocol.
pub fn websocket_handshake(
    headers: &HeaderMap,
    supported: &[&'static str],
) -> Result<(Response, Option<&'static str>), String> {
    let upgrade = headers
        .get(header::UPGRADE)
        .and_then(|u| u.to_str().ok())
        .unwrap_or("");
    if upgrade.to_ascii_lowercase().contains("spdy") {
        return Err(
            "expected a WebSocket upgrade, got SPDY (served apart, see sim::remote_command and sim::port_forward)"
                .into(),
        );
    }
    if !upgrade.eq_ignore_ascii_case("websocket") {
        return Err("Upgrade request required".into());
    }
    let key = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .ok_or("missing Sec-WebSocket-Key header")?;
    let offered: Vec<&str> = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let protocol = select_protocol(&offered, supported)?;
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = response.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(accept) = HeaderValue::from_str(&accept) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    if let Some(p) = protocol {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(p));
    }
    Ok((response, protocol))
}

fn text(code: StatusCode, message: impl Into<String>) -> Response {
    let mut response = (code, message.into()).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    query
        .and_then(|q| serde_urlencoded::from_str::<Vec<(String, String)>>(q).ok())
        .unwrap_or_default()
}

fn authenticate(state: &ClusterState, req: &Request) -> Option<UserInfo> {
    if let Some(PeerCertificate::Verified(user)) = req.extensions().get::<PeerCertificate>() {
        return Some(user.clone());
    }
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))?;
    state.auth.authenticate(token.trim())
}

async fn handle(State(sim): State<Arc<Simulator>>, req: Request) -> Response {
    let state = sim.state.clone();
    let Some(path) = parse_kubelet_path(req.uri().path()) else {
        return text(StatusCode::NOT_FOUND, "404 page not found");
    };
    let Some(user) = authenticate(&state, &req) else {
        return text(StatusCode::UNAUTHORIZED, "Unauthorized");
    };
    let pod = match path.pod() {
        None => None,
        Some((ns, name)) => {
            let found = state
                .store
                .get(&GroupResource::new("", "pods"), ns, name)
                .map(|p| p.value.clone())
                .filter(|p| {
                    p.pointer("/spec/nodeName")
                        .and_then(Value::as_str)
                        .is_some_and(|n| sim.kubelet.runs(n))
                });
            match found {
                Some(pod) => Some(pod),
                None => {
                    return text(
                        StatusCode::NOT_FOUND,
                        format!("pod \"{ns}/{name}\" is not running on this node"),
                    );
                }
            }
        }
    };
    let stats_node = if path.is_node_stats() {
        // Every simulated node shares this listener: the node is the one the Host names.
        match host_node(&sim, &req) {
            Some(node) => Some(node),
            None => {
                return text(
                    StatusCode::NOT_FOUND,
                    "no simulated node named by the Host header: the simulated nodes share one kubelet address",
                );
            }
        }
    } else {
        None
    };
    let node = pod
        .as_ref()
        .and_then(|p| p.pointer("/spec/nodeName"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| stats_node.clone())
        .unwrap_or_default();
    let verb = if req.method() == Method::GET || req.method() == Method::HEAD {
        "get"
    } else {
        "create"
    };
    let subresource = path.subresource();
    let attrs = Attributes {
        verb: verb.into(),
        resource: "nodes".into(),
        subresource: subresource.into(),
        name: node,
        ..Default::default()
    };
    if !auth::authorize(&state.store, &user, &attrs).0 {
        return text(
            StatusCode::FORBIDDEN,
            format!(
                "Forbidden (user={}, verb={verb}, resource=nodes, subresource(s)=[{subresource}])",
                user.username
            ),
        );
    }
    if let Some(node) = stats_node {
        return node_stats(&sim, &node, &path);
    }
    let pod = pod.unwrap_or_default();
    match path {
        KubeletPath::Healthz => text(StatusCode::OK, "ok"),
        KubeletPath::ContainerLogs {
            namespace,
            pod: name,
            container,
        } => {
            let mut query: HashMap<String, String> =
                query_pairs(req.uri().query()).into_iter().collect();
            query.insert("container".into(), container);
            match super::kubelet::serve_log(sim, &namespace, &name, &query).await {
                Ok(response) => response,
                Err(e) => text(
                    StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                    e.message,
                ),
            }
        }
        KubeletPath::Exec {
            namespace,
            pod: name,
            container,
        } => serve_command(sim, req, &pod, &namespace, &name, &container, true),
        KubeletPath::Attach {
            namespace,
            pod: name,
            container,
        } => serve_command(sim, req, &pod, &namespace, &name, &container, false),
        KubeletPath::PortForward {
            namespace,
            pod: name,
        } => serve_port_forward(sim.state.clone(), req, pod, namespace, name),
        KubeletPath::StatsSummary | KubeletPath::MetricsResource | KubeletPath::MetricsCadvisor => {
            text(StatusCode::NOT_FOUND, "404 page not found")
        }
    }
}

impl KubeletPath {
    /// Whether the path is one of the node's usage reports.
    pub fn is_node_stats(&self) -> bool {
        matches!(
            self,
            KubeletPath::StatsSummary | KubeletPath::MetricsResource | KubeletPath::MetricsCadvisor
        )
    }

    /// The `nodes` subresource the kubelet authorizes the path as.
    pub fn subresource(&self) -> &'static str {
        match self {
            KubeletPath::StatsSummary => "stats",
            KubeletPath::MetricsResource | KubeletPath::MetricsCadvisor => "metrics",
            _ => "proxy",
        }
    }
}

/// The simulated node the request's `Host` names.
fn host_node(sim: &Simulator, req: &Request) -> Option<String> {
    let host = req.headers().get(header::HOST)?.to_str().ok()?;
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    };
    sim.kubelet.runs(name).then(|| name.to_string())
}

/// Content type of the Prometheus text format the kubelet serves.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The usage report `path` of simulated node `node`, made from its running pods.
pub(crate) fn node_stats(sim: &Simulator, node: &str, path: &KubeletPath) -> Response {
    let Some(node_object) = sim
        .state
        .store
        .get(&GroupResource::new("", "nodes"), "", node)
    else {
        return text(StatusCode::NOT_FOUND, format!("node {node:?} not found"));
    };
    let info = super::kubelet_stats::NodeInfo::of(&node_object.value);
    let pods: Vec<_> = sim
        .state
        .store
        .list(&GroupResource::new("", "pods"), None, None, 0, &|p| {
            p.value.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node)
        })
        .items
        .iter()
        .filter_map(|p| super::kubelet_stats::pod_usage(&p.value))
        .collect();
    let now = jiff::Timestamp::now();
    let (content_type, body) = match path {
        KubeletPath::StatsSummary => (
            "application/json",
            super::kubelet_stats::summary(&info, &pods, now).to_string(),
        ),
        KubeletPath::MetricsCadvisor => (
            PROMETHEUS_TEXT,
            super::kubelet_stats::cadvisor_metrics(&info, &pods, now),
        ),
        _ => (
            PROMETHEUS_TEXT,
            super::kubelet_stats::resource_metrics(&info, &pods, now),
        ),
    };
    let mut response = (StatusCode::OK, body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn serve_command(
    sim: Arc<Simulator>,
    mut req: Request,
    pod: &Value,
    namespace: &str,
    name: &str,
    container: &str,
    exec: bool,
) -> Response {
    if !super::kubelet::container_names(pod)
        .iter()
        .any(|c| c == container)
    {
        return text(
            StatusCode::NOT_FOUND,
            format!("container not found (\"{container}\")"),
        );
    }
    let Some(printed) = sim.kubelet.printed(namespace, name, container) else {
        return text(
            StatusCode::BAD_REQUEST,
            format!(
                "container \"{container}\" in pod \"{name}\" is waiting to start: ContainerCreating"
            ),
        );
    };
    let options = match StreamOptions::parse(&query_pairs(req.uri().query()), exec) {
        Ok(o) => o,
        Err(e) => return text(StatusCode::BAD_REQUEST, e),
    };
    if super::port_forward::is_spdy_request(req.headers()) {
        let printed = printed.to_vec();
        return serve_spdy_command(sim, req, pod, name, container, exec, printed, options);
    }
    let (response, protocol) = match websocket_handshake(req.headers(), EXEC_PROTOCOLS) {
        Ok(r) => r,
        Err(e) => return text(StatusCode::BAD_REQUEST, e),
    };
    if exec && options.stdin && super::shell::is_interactive(&options.command) {
        let shell = super::shell::Shell::new(pod.clone(), name, container, options.tty);
        let on_upgrade = hyper::upgrade::on(&mut req);
        tokio::spawn(serve_shell(sim, on_upgrade, shell, options, protocol));
        return response;
    }
    let output = if exec {
        super::shell::run(pod, name, container, &options.command)
    } else {
        // Attach shows what the container printed so far, then detaches.
        CommandOutput {
            stdout: printed.iter().map(|l| format!("{l}\n")).collect(),
            ..Default::default()
        }
    };
    let frames = output_frames(&options, &output, protocol);
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let mut ws =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        for frame in frames {
            if ws.send(Message::binary(frame)).await.is_err() {
                return;
            }
        }
        let _ = ws.close(Some(normal_close())).await;
        // Read until the client answers the close frame, so nothing sent is lost.
        let drain = async { while let Some(Ok(_)) = ws.next().await {} };
        tokio::select! {
            _ = tokio::time::timeout(Duration::from_secs(5), drain) => {}
            _ = sim.state.shutdown.cancelled() => {}
        }
        finish(ws).await;
    });
    response
}

/// Exec or attach over SPDY ([`super::remote_command`]).
#[allow(clippy::too_many_arguments)]
fn serve_spdy_command(
    sim: Arc<Simulator>,
    mut req: Request,
    pod: &Value,
    name: &str,
    container: &str,
    exec: bool,
    printed: Vec<String>,
    options: StreamOptions,
) -> Response {
    use super::remote_command::{Command, PROTOCOLS, serve_spdy};
    let (response, protocol) = match super::port_forward::spdy_upgrade(req.headers(), PROTOCOLS) {
        Ok(r) => r,
        Err(refusal) => return text(refusal.code, refusal.message),
    };
    let command = if exec && options.stdin && super::shell::is_interactive(&options.command) {
        Command::Shell(Box::new(super::shell::Shell::new(
            pod.clone(),
            name,
            container,
            options.tty,
        )))
    } else if exec {
        Command::Fixed(super::shell::run(pod, name, container, &options.command))
    } else {
        Command::Fixed(CommandOutput {
            stdout: printed.iter().map(|l| format!("{l}\n")).collect(),
            ..Default::default()
        })
    };
    let on_upgrade = hyper::upgrade::on(&mut req);
    let shutdown = sim.state.shutdown.clone();
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        serve_spdy(TokioIo::new(upgraded), protocol, options, command, shutdown).await;
    });
    response
}

/// An interactive shell over an upgraded connection: stdin (channel 0) is fed to `shell`,
/// what it writes goes out on stdout (1) and stderr (2); it ends when the shell exits, the
/// client closes stdin (v5's close signal, channel 255) or the connection, with the exit
/// `Status` on channel 3.
async fn serve_shell(
    sim: Arc<Simulator>,
    on_upgrade: hyper::upgrade::OnUpgrade,
    mut shell: super::shell::Shell,
    options: StreamOptions,
    protocol: Option<&'static str>,
) {
    const STDIN_CHANNEL: u8 = 0;
    const CLOSE_CHANNEL: u8 = 255;
    let Ok(upgraded) = on_upgrade.await else {
        return;
    };
    let mut ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
    let frames = |written: super::shell::Written| {
        let mut out = Vec::new();
        for (channel, data) in [
            (STDOUT_CHANNEL, written.stdout),
            (STDERR_CHANNEL, written.stderr),
        ] {
            let wanted = if channel == STDOUT_CHANNEL {
                options.stdout
            } else {
                options.stderr
            };
            if wanted && !data.is_empty() {
                let mut frame = vec![channel];
                frame.extend_from_slice(&data);
                out.push(Message::binary(frame));
            }
        }
        out
    };
    for frame in frames(shell.start()) {
        if ws.send(frame).await.is_err() {
            return;
        }
    }
    while shell.exited().is_none() {
        let message = tokio::select! {
            _ = sim.state.shutdown.cancelled() => return,
            m = ws.next() => m,
        };
        let written = match message {
            Some(Ok(Message::Binary(bytes))) => match bytes.split_first() {
                Some((&STDIN_CHANNEL, data)) => shell.feed(data),
                Some((&CLOSE_CHANNEL, [STDIN_CHANNEL, ..])) => {
                    shell.close_input();
                    super::shell::Written::default()
                }
                // Terminal resizes (channel 4) change nothing here.
                _ => continue,
            },
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
            Some(Ok(_)) => continue,
        };
        for frame in frames(written) {
            if ws.send(frame).await.is_err() {
                return;
            }
        }
    }
    let code = shell.exited().unwrap_or(0);
    let status = exit_status(&options.command, code);
    let last = match protocol {
        Some("v4.channel.k8s.io" | "v5.channel.k8s.io") => Some(status.to_string()),
        _ if code != 0 => status["message"].as_str().map(str::to_string),
        _ => None,
    };
    if let Some(text) = last {
        let mut frame = vec![STATUS_CHANNEL];
        frame.extend_from_slice(text.as_bytes());
        let _ = ws.send(Message::binary(frame)).await;
    }
    let _ = ws.close(Some(normal_close())).await;
    let drain = async { while let Some(Ok(_)) = ws.next().await {} };
    tokio::select! {
        _ = tokio::time::timeout(Duration::from_secs(5), drain) => {}
        _ = sim.state.shutdown.cancelled() => {}
    }
    finish(ws).await;
}

fn serve_port_forward(
    state: Arc<ClusterState>,
    mut req: Request,
    pod: Value,
    namespace: String,
    name: String,
) -> Response {
    // cri-streaming `ServePortForward`: WebSocket requests get channels, every other request
    // is a SPDY upgrade whose streams name their ports.
    if super::port_forward::is_spdy_request(req.headers()) {
        let response = match super::port_forward::spdy_handshake(req.headers()) {
            Ok(r) => r,
            Err(refusal) => {
                let mut response = text(refusal.code, refusal.message);
                if refusal.list_accepted {
                    response.headers_mut().insert(
                        "x-accepted-stream-protocol-versions",
                        HeaderValue::from_static(super::port_forward::PROTOCOL),
                    );
                }
                return response;
            }
        };
        let on_upgrade = hyper::upgrade::on(&mut req);
        tokio::spawn(async move {
            let Ok(upgraded) = on_upgrade.await else {
                return;
            };
            super::port_forward::serve_spdy(
                TokioIo::new(upgraded),
                pod,
                namespace,
                name,
                state.shutdown.clone(),
            )
            .await;
        });
        return response;
    }
    let (response, _) = match websocket_handshake(req.headers(), PORT_FORWARD_PROTOCOLS) {
        Ok(r) => r,
        Err(e) => return text(StatusCode::BAD_REQUEST, e),
    };
    let ports = match parse_ports(&query_pairs(req.uri().query())) {
        Ok(p) => p,
        Err(e) => return text(StatusCode::BAD_REQUEST, e),
    };
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let mut ws =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        for (i, port) in ports.iter().enumerate() {
            let [lo, hi] = port.to_le_bytes();
            // Both channels of a port open with its number; i < 127 by parse_ports.
            let data = (2 * i) as u8;
            for ch in [data, data + 1] {
                if ws.send(Message::binary(vec![ch, lo, hi])).await.is_err() {
                    return;
                }
            }
        }
        // Each port's data channel is one connection to that port of the pod.
        let (from_ports, mut output) = tokio::sync::mpsc::channel::<Vec<u8>>(16);
        let mut to_ports = Vec::new();
        for (i, port) in ports.iter().enumerate() {
            let (ours, theirs) = tokio::io::duplex(super::pod_ports::CONNECTION_BUFFER);
            let target = super::pod_ports::PortTarget::new(&pod, &namespace, &name, *port);
            tokio::spawn(super::pod_ports::serve_connection(target, theirs));
            let (mut from_port, to_port) = tokio::io::split(ours);
            to_ports.push(Some(to_port));
            let from_ports = from_ports.clone();
            let channel = (2 * i) as u8;
            tokio::spawn(async move {
                let mut chunk = vec![0u8; 32 * 1024];
                while let Ok(n) = tokio::io::AsyncReadExt::read(&mut from_port, &mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    let mut frame = Vec::with_capacity(n + 1);
                    frame.push(channel);
                    frame.extend_from_slice(&chunk[..n]);
                    if from_ports.send(frame).await.is_err() {
                        break;
                    }
                }
            });
        }
        drop(from_ports);
        loop {
            let message = tokio::select! {
                _ = state.shutdown.cancelled() => break,
                Some(frame) = output.recv() => {
                    if ws.send(Message::binary(frame)).await.is_err() {
                        break;
                    }
                    continue;
                }
                m = ws.next() => m,
            };
            match message {
                Some(Ok(Message::Binary(bytes))) => {
                    let Some((&ch, data)) = bytes.split_first() else {
                        continue;
                    };
                    // Data channels are even; what arrives on error channels is dropped.
                    let port = to_ports
                        .get_mut(usize::from(ch / 2))
                        .filter(|_| ch % 2 == 0);
                    if let Some(slot) = port
                        && let Some(to_port) = slot.as_mut()
                        && !data.is_empty()
                        && tokio::io::AsyncWriteExt::write_all(to_port, data)
                            .await
                            .is_err()
                        && let Some(mut to_port) = slot.take()
                    {
                        let _ = tokio::io::AsyncWriteExt::shutdown(&mut to_port).await;
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            }
        }
        let _ = ws.close(Some(normal_close())).await;
        finish(ws).await;
    });
    response
}

/// A close frame with status 1000: Go WebSocket clients (kubectl) treat a close without a
/// status as an error.
fn normal_close() -> CloseFrame {
    CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    }
}

/// Ends the connection under a closed WebSocket cleanly (TLS close_notify included), as a
/// Go kubelet does, so that peers and proxies see an orderly end rather than a truncation.
async fn finish(mut ws: WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>) {
    let _ = ws.flush().await;
    let _ = tokio::io::AsyncWriteExt::shutdown(ws.get_mut()).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    /// Offered protocols and the choice (`Err` when none is supported).
    type ProtocolCase<'a> = (&'a [&'a str], Result<Option<&'a str>, ()>);

    fn pairs(q: &str) -> Vec<(String, String)> {
        query_pairs(Some(q))
    }

    fn cmd(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn kubelet_paths_parse() {
        let logs = |c: &str| KubeletPath::ContainerLogs {
            namespace: "ns".into(),
            pod: "p".into(),
            container: c.into(),
        };
        let exec = KubeletPath::Exec {
            namespace: "ns".into(),
            pod: "p".into(),
            container: "c".into(),
        };
        let pf = KubeletPath::PortForward {
            namespace: "ns".into(),
            pod: "p".into(),
        };
        let cases = [
            ("/healthz", Some(KubeletPath::Healthz)),
            ("/stats/summary", Some(KubeletPath::StatsSummary)),
            ("/metrics/resource", Some(KubeletPath::MetricsResource)),
            ("/metrics/cadvisor", Some(KubeletPath::MetricsCadvisor)),
            ("/metrics/probes", None),
            ("/containerLogs/ns/p/c", Some(logs("c"))),
            ("/exec/ns/p/c", Some(exec.clone())),
            ("/exec/ns/p/uid-1/c", Some(exec)),
            (
                "/attach/ns/p/c",
                Some(KubeletPath::Attach {
                    namespace: "ns".into(),
                    pod: "p".into(),
                    container: "c".into(),
                }),
            ),
            ("/portForward/ns/p", Some(pf.clone())),
            ("/portForward/ns/p/uid-1", Some(pf)),
            ("/containerLogs/ns/p", None),
            ("/containerLogs/ns//c", None),
            ("/pods", None),
        ];
        for (path, want) in cases {
            assert_eq!(parse_kubelet_path(path), want, "{path}");
        }
    }

    #[test]
    fn stream_options_accept_both_query_forms() {
        let cases = [
            (
                "command=echo&command=hi&output=1&error=1",
                true,
                Ok((false, true, true, false, 2)),
            ),
            (
                "command=ls&stdin=true&stdout=true&tty=true",
                true,
                Ok((true, true, false, true, 1)),
            ),
            ("stdout=true", false, Ok((false, true, false, false, 0))),
            (
                "stdout=true",
                true,
                Err("you must specify at least 1 command"),
            ),
            (
                "command=ls&stdout=false",
                true,
                Err("you must specify at least 1 of stdin, stdout, stderr"),
            ),
        ];
        for (query, exec, want) in cases {
            let got = StreamOptions::parse(&pairs(query), exec)
                .map(|o| (o.stdin, o.stdout, o.stderr, o.tty, o.command.len()));
            assert_eq!(got, want.map_err(str::to_string), "{query}");
        }
    }

    #[test]
    fn ports_parse() {
        let cases: [(&str, Result<Vec<u16>, &str>); 6] = [
            ("port=80", Ok(vec![80])),
            ("port=80&port=443", Ok(vec![80, 443])),
            ("ports=80,8080", Ok(vec![80, 8080])),
            ("", Err("query parameter \"port\" is required")),
            ("port=0", Err("port \"0\" must be > 0")),
            (
                "port=http",
                Err("unable to parse \"http\" as a port: not a number"),
            ),
        ];
        for (query, want) in cases {
            assert_eq!(
                parse_ports(&pairs(query)),
                want.map_err(str::to_string),
                "{query}"
            );
        }
    }

    #[test]
    fn protocols_are_chosen_in_the_clients_order() {
        let cases: [ProtocolCase; 4] = [
            (
                &["v5.channel.k8s.io", "v4.channel.k8s.io"],
                Ok(Some("v5.channel.k8s.io")),
            ),
            (&["v4.channel.k8s.io"], Ok(Some("v4.channel.k8s.io"))),
            (&[], Ok(None)),
            (&["SPDY/3.1+portforward.k8s.io"], Err(())),
        ];
        for (offered, want) in cases {
            assert_eq!(
                select_protocol(offered, EXEC_PROTOCOLS).map_err(|_| ()),
                want,
                "{offered:?}"
            );
        }
        // Port forwarding has no v5: kube-rs offers v5 then v4 and gets v4.
        assert_eq!(
            select_protocol(
                &["v5.channel.k8s.io", "v4.channel.k8s.io"],
                PORT_FORWARD_PROTOCOLS
            ),
            Ok(Some("v4.channel.k8s.io"))
        );
    }

    #[test]
    fn handshakes_answer_websocket_and_refuse_spdy() {
        let mut ws = HeaderMap::new();
        ws.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        ws.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        ws.insert(
            header::SEC_WEBSOCKET_KEY,
            HeaderValue::from_static("dGhlIHNhbXBsZSBub25jZQ=="),
        );
        ws.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("v5.channel.k8s.io, v4.channel.k8s.io"),
        );
        let (response, protocol) = websocket_handshake(&ws, EXEC_PROTOCOLS).unwrap();
        assert_eq!(protocol, Some("v5.channel.k8s.io"));
        assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
        // RFC 6455's example key and answer.
        assert_eq!(
            response.headers()[header::SEC_WEBSOCKET_ACCEPT],
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        let mut spdy = HeaderMap::new();
        spdy.insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
        assert!(
            websocket_handshake(&spdy, EXEC_PROTOCOLS)
                .unwrap_err()
                .contains("SPDY")
        );
        assert_eq!(
            websocket_handshake(&HeaderMap::new(), EXEC_PROTOCOLS).unwrap_err(),
            "Upgrade request required"
        );
    }

    #[test]
    fn simulated_commands() {
        let pod = json!({"spec": {"containers": [{"name": "app", "env": [
            {"name": "MODE", "value": "fast"},
            {"name": "EMPTY"},
            {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
        ]}]}});
        let named = json!({"spec": {"hostname": "web-0", "containers": [{"name": "app"}]}});
        let cases = [
            (&pod, cmd(&["echo", "hello"]), "hello\n", "", 0),
            (&pod, cmd(&["/bin/echo", "a", "b"]), "a b\n", "", 0),
            (&pod, cmd(&["echo", "-n", "x"]), "x", "", 0),
            (&pod, cmd(&["hostname"]), "p1\n", "", 0),
            (&named, cmd(&["hostname"]), "web-0\n", "", 0),
            (
                &pod,
                cmd(&["env"]),
                "HOSTNAME=p1\nMODE=fast\nEMPTY=\n",
                "",
                0,
            ),
            (
                &pod,
                cmd(&["nope", "x"]),
                "",
                "exec: \"nope\": executable file not found in $PATH\n",
                127,
            ),
        ];
        for (spec, command, stdout, stderr, code) in cases {
            let out = run_command(spec, "p1", "app", &command);
            assert_eq!(
                (out.stdout.as_str(), out.stderr.as_str(), out.exit_code),
                (stdout, stderr, code),
                "{command:?}"
            );
        }
    }

    #[test]
    fn frames_carry_channels_and_status() {
        let opts = |tty: bool| StreamOptions {
            stdout: true,
            stderr: true,
            tty,
            command: cmd(&["nope"]),
            ..Default::default()
        };
        let failed = CommandOutput {
            stdout: "o".into(),
            stderr: "e".into(),
            exit_code: 127,
        };
        let v4 = output_frames(&opts(false), &failed, Some("v4.channel.k8s.io"));
        assert_eq!(v4[0], b"\x01o");
        assert_eq!(v4[1], b"\x02e");
        let status: Value = serde_json::from_slice(&v4[2][1..]).unwrap();
        assert_eq!(v4[2][0], STATUS_CHANNEL);
        assert_eq!(status["status"], "Failure");
        assert_eq!(status["details"]["causes"][0]["reason"], "ExitCode");
        assert_eq!(status["details"]["causes"][0]["message"], "127");
        let tty = output_frames(&opts(true), &failed, Some("v5.channel.k8s.io"));
        assert_eq!(tty[1], b"\x01e");
        let v1 = output_frames(&opts(false), &failed, Some("channel.k8s.io"));
        assert!(String::from_utf8_lossy(&v1[2][1..]).contains("exit code 127"));
        let ok = CommandOutput {
            stdout: "hi\n".into(),
            ..Default::default()
        };
        let v1_ok = output_frames(&opts(false), &ok, None);
        assert_eq!(v1_ok, vec![b"\x01hi\n".to_vec()]);
        let v5_ok = output_frames(&opts(false), &ok, Some("v5.channel.k8s.io"));
        assert_eq!(
            serde_json::from_slice::<Value>(&v5_ok[1][1..]).unwrap(),
            json!({"metadata": {}, "status": "Success"})
        );
    }
}
