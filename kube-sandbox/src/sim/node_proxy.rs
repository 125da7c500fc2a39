//! How the API server answers `pods/log`, `pods/exec`, `pods/attach` and `pods/portforward`:
//! as kube-apiserver does, it finds the pod's node, the node's InternalIP and
//! `daemonEndpoints.kubeletEndpoint.Port`, and calls that kubelet over HTTPS with its
//! kubelet-client certificate (CN `kube-apiserver-kubelet-client`, O `system:masters`, signed
//! by the cluster CA) without verifying the kubelet's serving certificate (kube-apiserver's
//! default). Logs stream back as the body; upgrade requests are forwarded with their
//! Connection/Upgrade/Sec-WebSocket-*/X-Stream-Protocol-Version headers, the kubelet's 101 is
//! returned, and both upgraded connections are spliced byte for byte (WebSocket and SPDY
//! alike). A port-forward WebSocket that tunnels SPDY (`SPDY/3.1+portforward.k8s.io`, kubectl's
//! default) reaches the kubelet as a plain SPDY upgrade, as kube-apiserver's tunnel does
//! ([`super::port_forward`]).
//!
//! While the cluster is not served the simulated kubelet has no address; logs of pods on the
//! cluster's own simulated nodes are then answered in-process.

use super::Simulator;
use crate::apiserver::error::ApiError;
use crate::apiserver::resources::GroupResource;
use crate::apiserver::state::ClusterState;
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, Method, StatusCode, header};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;

/// The subresources served by the node's kubelet.
pub const KUBELET_SUBRESOURCES: &[&str] = &["log", "exec", "attach", "portforward"];

/// Log options kube-apiserver passes on to the kubelet.
const LOG_PARAMS: &[&str] = &[
    "follow",
    "previous",
    "sinceSeconds",
    "sinceTime",
    "timestamps",
    "tailLines",
    "limitBytes",
];

/// Request headers an upgrade needs on the way to the kubelet.
const UPGRADE_HEADERS: &[&str] = &[
    "connection",
    "upgrade",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-protocol",
    "sec-websocket-extensions",
    "x-stream-protocol-version",
];

/// Largest kubelet error body read into a Status message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Clients for kubelet endpoints, one per URL, presenting the kubelet-client certificate.
#[derive(Default)]
pub struct KubeletClients {
    clients: Mutex<HashMap<String, kube::Client>>,
}

impl KubeletClients {
    fn get(&self, state: &ClusterState, url: &str) -> Result<kube::Client, ApiError> {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(client) = clients.get(url) {
            return Ok(client.clone());
        }
        let pki = state
            .pki()
            .map_err(|e| ApiError::internal(format!("kubelet client certificate: {e}")))?;
        let cert = pki.kubelet_client_certificate();
        let uri: http::Uri = url
            .parse()
            .map_err(|e| ApiError::internal(format!("kubelet URL {url:?}: {e}")))?;
        let mut config = kube::Config::new(uri);
        // kube-apiserver does not verify kubelet serving certificates by default.
        config.accept_invalid_certs = true;
        config.root_cert = Some(vec![pki.ca_der().to_vec()]);
        config.default_retry = false;
        config.auth_info = serde_json::from_value(json!({
            "client-certificate-data": STANDARD.encode(&cert.cert_pem),
            "client-key-data": STANDARD.encode(&cert.key_pem),
        }))
        .map_err(|e| ApiError::internal(format!("kubelet client credentials: {e}")))?;
        let client = kube::Client::try_from(config)
            .map_err(|e| ApiError::internal(format!("kubelet client for {url}: {e}")))?;
        clients.insert(url.to_string(), client.clone());
        Ok(client)
    }
}

/// Where a node's kubelet listens: its InternalIP (else ExternalIP, else a DNS name or the
/// hostname) and `daemonEndpoints.kubeletEndpoint.Port` (10250 when unset).
pub fn node_kubelet_url(node: &Value) -> Option<String> {
    let addresses = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)?;
    let address = [
        "InternalIP",
        "ExternalIP",
        "InternalDNS",
        "ExternalDNS",
        "Hostname",
    ]
    .iter()
    .find_map(|kind| {
        addresses
            .iter()
            .find(|a| a["type"] == *kind)
            .and_then(|a| a["address"].as_str())
            .filter(|a| !a.is_empty())
    })?;
    let port = node
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_u64)
        .filter(|p| *p > 0 && *p <= u64::from(u16::MAX))
        .unwrap_or(u64::from(crate::sim::kubelet::DEFAULT_KUBELET_PORT));
    let host = match address.parse::<IpAddr>() {
        Ok(IpAddr::V6(ip)) => format!("[{ip}]"),
        _ => address.to_string(),
    };
    Some(format!("https://{host}:{port}"))
}

fn truthy(params: &[(String, String)], name: &str) -> bool {
    params
        .iter()
        .any(|(k, v)| k == name && (v == "true" || v == "1"))
}

/// The kubelet path and query for a pod subresource request, as kube-apiserver builds them:
/// `/containerLogs/{ns}/{pod}/{container}`, `/exec|attach/{ns}/{pod}/{container}` with
/// `input`/`output`/`error`/`tty=1` and `command`, `/portForward/{ns}/{pod}` with one `port`
/// per forwarded port.
pub fn kubelet_location(
    pod: &Value,
    namespace: &str,
    name: &str,
    subresource: &str,
    params: &[(String, String)],
) -> Result<(String, Vec<(String, String)>), ApiError> {
    let container = || {
        crate::sim::kubelet::resolve_container(
            pod,
            name,
            params
                .iter()
                .find(|(k, _)| k == "container")
                .map(|(_, v)| v.as_str()),
        )
    };
    let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
    match subresource {
        "log" => {
            let query = params
                .iter()
                .filter(|(k, _)| LOG_PARAMS.contains(&k.as_str()))
                .cloned()
                .collect();
            Ok((
                format!("/containerLogs/{namespace}/{name}/{}", container()?),
                query,
            ))
        }
        "exec" | "attach" => {
            let mut query = Vec::new();
            for (api, kubelet) in [
                ("stdin", "input"),
                ("stdout", "output"),
                ("stderr", "error"),
                ("tty", "tty"),
            ] {
                if truthy(params, api) {
                    query.push(pair(kubelet, "1"));
                }
            }
            if subresource == "exec" {
                query.extend(
                    params
                        .iter()
                        .filter(|(k, _)| k == "command")
                        .map(|(_, v)| pair("command", v)),
                );
            }
            Ok((
                format!("/{subresource}/{namespace}/{name}/{}", container()?),
                query,
            ))
        }
        "portforward" => {
            let query = params
                .iter()
                .filter(|(k, _)| k == "ports")
                .flat_map(|(_, v)| v.split(','))
                .map(|p| pair("port", p.trim()))
                .collect();
            Ok((format!("/portForward/{namespace}/{name}"), query))
        }
        other => Err(ApiError::method_not_supported(other, "", "pods")),
    }
}

fn is_upgrade(headers: &HeaderMap) -> bool {
    let connection_upgrade = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case("upgrade"));
    connection_upgrade && headers.contains_key(header::UPGRADE)
}

/// A cause chain as one line, for "error dialing backend: ..." messages.
fn causes(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    message
}

fn dial_error(url: &str, err: &kube::Error) -> ApiError {
    ApiError::with_code(500, format!("error dialing backend {url}: {}", causes(err)))
}

/// The Status for a kubelet's error answer: its code, and its message (a Status's `message`
/// or the plain text kubelet writes).
pub fn kubelet_error(code: u16, body: &[u8]) -> ApiError {
    let message = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
    let message = if message.is_empty() {
        format!("the kubelet answered {code}")
    } else {
        message
    };
    ApiError::with_code(code, message)
}

async fn error_from_response(response: http::Response<kube::client::Body>) -> ApiError {
    let code = response.status().as_u16();
    let limited = http_body_util::Limited::new(response.into_body(), ERROR_BODY_LIMIT);
    let body = match limited.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => bytes::Bytes::new(),
    };
    kubelet_error(code, &body)
}

/// Serves a `pods/{log,exec,attach,portforward}` request through the pod's node's kubelet.
pub(crate) async fn serve(
    sim: Arc<Simulator>,
    mut req: Request,
    namespace: &str,
    name: &str,
    subresource: &str,
) -> Result<Response, ApiError> {
    let state = &sim.state;
    let pod = state
        .store
        .get(&GroupResource::new("", "pods"), namespace, name)
        .ok_or_else(|| ApiError::not_found("", "pods", name))?
        .value
        .clone();
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ApiError::bad_request(format!("pod {name} does not have a host assigned")))?
        .to_string();
    let params: Vec<(String, String)> = req
        .uri()
        .query()
        .and_then(|q| serde_urlencoded::from_str(q).ok())
        .unwrap_or_default();
    let (path, query) = kubelet_location(&pod, namespace, name, subresource, &params)?;
    let upgrade = subresource != "log";
    if upgrade && !is_upgrade(req.headers()) {
        return Err(ApiError::bad_request("Upgrade request required"));
    }
    if sim.kubelet.is_sim_node(&node) {
        if sim.kubelet.is_stopped(&node) {
            return Err(ApiError::with_code(
                500,
                format!("error dialing backend: the kubelet of node {node} is stopped"),
            ));
        }
        if sim.kubelet.endpoint().is_none() {
            if upgrade {
                return Err(ApiError::bad_request(format!(
                    "pods/{subresource} needs the simulated kubelet, which listens only while the cluster is served (Cluster::serve)"
                )));
            }
            let mut options: HashMap<String, String> = query.into_iter().collect();
            let container = path.rsplit('/').next().unwrap_or_default().to_string();
            options.insert("container".into(), container);
            return super::kubelet::serve_log(sim.clone(), namespace, name, &options).await;
        }
    }
    let node_object = state
        .store
        .get(&GroupResource::new("", "nodes"), "", &node)
        .ok_or_else(|| ApiError::not_found("", "nodes", &node))?;
    let url = node_kubelet_url(&node_object.value).ok_or_else(|| {
        ApiError::with_code(
            500,
            format!("no preferred addresses found for node {node}; known addresses: none"),
        )
    })?;
    let client = sim.kubelet_clients.get(state, &url)?;
    let query = serde_urlencoded::to_string(&query)
        .map_err(|e| ApiError::internal(format!("kubelet query: {e}")))?;
    let target = if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    };
    if !upgrade {
        let request = http::Request::get(target)
            .body(kube::client::Body::empty())
            .map_err(|e| ApiError::internal(format!("kubelet request: {e}")))?;
        let response = client
            .send(request)
            .await
            .map_err(|e| dial_error(&url, &e))?;
        if !response.status().is_success() {
            return Err(error_from_response(response).await);
        }
        let (parts, body) = response.into_parts();
        let mut out = Response::new(Body::new(body));
        *out.status_mut() = parts.status;
        if let Some(ct) = parts.headers.get(header::CONTENT_TYPE) {
            out.headers_mut().insert(header::CONTENT_TYPE, ct.clone());
        }
        return Ok(out);
    }
    if subresource == "portforward"
        && let Some(protocols) = super::port_forward::tunnelled_protocols(req.headers())
    {
        return tunnel_port_forward(&sim, req, &client, &url, target, &protocols).await;
    }
    let client_upgrade = hyper::upgrade::on(&mut req);
    let method = if req.method() == Method::POST {
        Method::POST
    } else {
        Method::GET
    };
    let mut builder = http::Request::builder().method(method).uri(target);
    for name in UPGRADE_HEADERS {
        for value in req.headers().get_all(*name) {
            builder = builder.header(*name, value);
        }
    }
    let request = builder
        .body(kube::client::Body::empty())
        .map_err(|e| ApiError::internal(format!("kubelet request: {e}")))?;
    let mut response = client
        .send(request)
        .await
        .map_err(|e| dial_error(&url, &e))?;
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        return Err(error_from_response(response).await);
    }
    let kubelet_upgrade = hyper::upgrade::on(&mut response);
    let mut out = Response::new(Body::empty());
    *out.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    for (name, value) in response.headers() {
        out.headers_mut().append(name, value.clone());
    }
    let shutdown = state.shutdown.clone();
    tokio::spawn(async move {
        let (Ok(client_io), Ok(kubelet_io)) = tokio::join!(client_upgrade, kubelet_upgrade) else {
            return;
        };
        let mut client_io = TokioIo::new(client_io);
        let mut kubelet_io = TokioIo::new(kubelet_io);
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut client_io, &mut kubelet_io) => {}
            _ = shutdown.cancelled() => {}
        }
        // A kubelet that hangs up without a TLS close_notify ends the copy with an error;
        // the client still gets an orderly end.
        let _ = client_io.shutdown().await;
    });
    Ok(out)
}

/// Serves kubectl's port-forward WebSocket that tunnels SPDY (`SPDY/3.1+portforward.k8s.io`)
/// as kube-apiserver's `TunnelingHandler` does (apiserver `pkg/util/proxy/streamtunnel.go`):
/// the kubelet gets a plain SPDY upgrade (POST, `Upgrade: SPDY/3.1`, the tunnelled protocols
/// as `X-Stream-Protocol-Version`); when it switches, the client's WebSocket is accepted with
/// `SPDY/3.1+` and the kubelet's protocol, and the SPDY bytes travel in binary messages.
async fn tunnel_port_forward(
    sim: &Arc<Simulator>,
    mut req: Request,
    client: &kube::Client,
    url: &str,
    target: String,
    protocols: &[String],
) -> Result<Response, ApiError> {
    use super::port_forward::{TUNNEL_PROTOCOL, kubelet_upgrade_headers, tunnel_protocol_of};
    if protocols.is_empty() {
        return Err(ApiError::bad_request(
            "unable to upgrade: no tunneling spdy protocols provided",
        ));
    }
    let mut builder = http::Request::builder().method(Method::POST).uri(target);
    for (name, value) in kubelet_upgrade_headers(protocols) {
        builder = builder.header(name, value);
    }
    let request = builder
        .body(kube::client::Body::empty())
        .map_err(|e| ApiError::internal(format!("kubelet request: {e}")))?;
    let mut response = client
        .send(request)
        .await
        .map_err(|e| dial_error(url, &e))?;
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        return Err(error_from_response(response).await);
    }
    let protocol =
        tunnel_protocol_of(response.headers()).map_err(|e| ApiError::with_code(500, e))?;
    if protocol.as_deref() != Some(TUNNEL_PROTOCOL) {
        return Err(ApiError::with_code(
            500,
            format!("unable to upgrade: the kubelet chose protocol {protocol:?}"),
        ));
    }
    let (answer, _) = super::kubelet_api::websocket_handshake(req.headers(), &[TUNNEL_PROTOCOL])
        .map_err(ApiError::bad_request)?;
    let kubelet_upgrade = hyper::upgrade::on(&mut response);
    let client_upgrade = hyper::upgrade::on(&mut req);
    let shutdown = sim.state.shutdown.clone();
    tokio::spawn(async move {
        let (Ok(client_io), Ok(kubelet_io)) = tokio::join!(client_upgrade, kubelet_upgrade) else {
            return;
        };
        let ws = tokio_tungstenite::WebSocketStream::from_raw_socket(
            TokioIo::new(client_io),
            tokio_tungstenite::tungstenite::protocol::Role::Server,
            None,
        )
        .await;
        super::port_forward::relay_tunnel(ws, TokioIo::new(kubelet_io), shutdown).await;
    });
    Ok(answer)
}

/// The kubelet path of a `nodes/{name}/proxy/...` request: what follows `/proxy` (at least
/// `/`).
pub fn node_proxy_path(path: &str, name: &str) -> Option<String> {
    let prefix = format!("/api/v1/nodes/{name}/proxy");
    let rest = path.strip_prefix(&prefix)?;
    if rest.is_empty() {
        return Some("/".to_string());
    }
    rest.starts_with('/').then(|| rest.to_string())
}

/// Serves `GET nodes/{name}/proxy/{path}` as kube-apiserver does: the request goes to the
/// node's kubelet (InternalIP and kubelet port, with the kubelet-client certificate) and its
/// answer comes back as it is. The simulated nodes share one kubelet listener, so their
/// usage reports are answered in process, for the node named.
pub(crate) async fn serve_node(
    sim: Arc<Simulator>,
    req: Request,
    name: &str,
) -> Result<Response, ApiError> {
    let state = &sim.state;
    let node_object = state
        .store
        .get(&GroupResource::new("", "nodes"), "", name)
        .ok_or_else(|| ApiError::not_found("", "nodes", name))?;
    let path = node_proxy_path(req.uri().path(), name)
        .ok_or_else(|| ApiError::not_found("", "nodes", name))?;
    if sim.kubelet.is_sim_node(name) {
        if sim.kubelet.is_stopped(name) {
            return Err(ApiError::with_code(
                503,
                format!("error trying to reach service: the kubelet of node {name} is stopped"),
            ));
        }
        if let Some(kubelet_path) = super::kubelet_api::parse_kubelet_path(&path)
            && kubelet_path.is_node_stats()
        {
            return Ok(super::kubelet_api::node_stats(&sim, name, &kubelet_path));
        }
    }
    let url = node_kubelet_url(&node_object.value).ok_or_else(|| {
        ApiError::with_code(
            500,
            format!("no preferred addresses found for node {name}; known addresses: none"),
        )
    })?;
    let client = sim.kubelet_clients.get(state, &url)?;
    let target = match req.uri().query() {
        Some(query) => format!("{path}?{query}"),
        None => path,
    };
    let request = http::Request::get(target)
        .body(kube::client::Body::empty())
        .map_err(|e| ApiError::internal(format!("kubelet request: {e}")))?;
    let response = client.send(request).await.map_err(|e| {
        ApiError::with_code(
            503,
            format!("error trying to reach service: {}", causes(&e)),
        )
    })?;
    let (parts, body) = response.into_parts();
    let mut out = Response::new(Body::new(body));
    *out.status_mut() = parts.status;
    if let Some(ct) = parts.headers.get(header::CONTENT_TYPE) {
        out.headers_mut().insert(header::CONTENT_TYPE, ct.clone());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderName;
    /// Pod, subresource, API query, and the kubelet path and query (or the error code).
    type LocationCase<'a> = (&'a Value, &'a str, &'a str, Result<(&'a str, &'a str), u16>);

    fn pairs(q: &str) -> Vec<(String, String)> {
        serde_urlencoded::from_str(q).unwrap()
    }

    #[test]
    fn node_proxy_paths() {
        for (path, want) in [
            (
                "/api/v1/nodes/n1/proxy/stats/summary",
                Some("/stats/summary"),
            ),
            ("/api/v1/nodes/n1/proxy", Some("/")),
            ("/api/v1/nodes/n1/proxy/", Some("/")),
            ("/api/v1/nodes/n1/proxyx", None),
            ("/api/v1/nodes/n2/proxy/metrics", None),
        ] {
            assert_eq!(node_proxy_path(path, "n1").as_deref(), want, "{path}");
        }
    }

    #[test]
    fn kubelet_urls_come_from_node_status() {
        let node = |addresses: Value, port: Value| json!({"status": {"addresses": addresses, "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}});
        let cases = [
            (
                node(
                    json!([{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "10.0.0.5"}]),
                    json!(12345),
                ),
                Some("https://10.0.0.5:12345"),
            ),
            (
                node(
                    json!([{"type": "ExternalIP", "address": "1.2.3.4"}]),
                    json!(0),
                ),
                Some("https://1.2.3.4:10250"),
            ),
            (
                node(
                    json!([{"type": "InternalIP", "address": "fd00::1"}]),
                    json!(10250),
                ),
                Some("https://[fd00::1]:10250"),
            ),
            (
                node(json!([{"type": "Hostname", "address": "n1"}]), json!(null)),
                Some("https://n1:10250"),
            ),
            (node(json!([]), json!(10250)), None),
            (json!({}), None),
        ];
        for (node, want) in cases {
            assert_eq!(node_kubelet_url(&node).as_deref(), want, "{node}");
        }
    }

    #[test]
    fn kubelet_locations_are_built_like_kube_apiserver() {
        let one = json!({"spec": {"containers": [{"name": "app"}]}});
        let two = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let cases: [LocationCase; 8] = [
            (
                &one,
                "log",
                "follow=true&tailLines=2&pretty=true",
                Ok(("/containerLogs/ns/p/app", "follow=true&tailLines=2")),
            ),
            (
                &two,
                "log",
                "container=b&sinceTime=2024-01-01T00%3A00%3A00Z",
                Ok((
                    "/containerLogs/ns/p/b",
                    "sinceTime=2024-01-01T00%3A00%3A00Z",
                )),
            ),
            (&two, "log", "", Err(400)),
            (&one, "log", "container=zzz", Err(400)),
            (
                &one,
                "exec",
                "command=echo&command=hello+world&stdout=true&stderr=true&stdin=false",
                Ok((
                    "/exec/ns/p/app",
                    "output=1&error=1&command=echo&command=hello+world",
                )),
            ),
            (
                &two,
                "attach",
                "container=a&stdin=true&stdout=true&tty=true&command=ignored",
                Ok(("/attach/ns/p/a", "input=1&output=1&tty=1")),
            ),
            (
                &one,
                "portforward",
                "ports=80,8080&ports=9090",
                Ok(("/portForward/ns/p", "port=80&port=8080&port=9090")),
            ),
            (&one, "proxy", "", Err(405)),
        ];
        for (pod, sub, query, want) in cases {
            let got = kubelet_location(pod, "ns", "p", sub, &pairs(query))
                .map(|(path, q)| (path, serde_urlencoded::to_string(&q).unwrap()))
                .map_err(|e| e.code);
            let want = want.map(|(p, q)| (p.to_string(), q.to_string()));
            assert_eq!(got, want, "{sub} {query}");
        }
    }

    #[test]
    fn kubelet_errors_become_statuses() {
        let cases: [(u16, &[u8], u16, &str); 4] = [
            (
                400,
                b"container not found (\"x\")\n",
                400,
                "container not found (\"x\")",
            ),
            (
                404,
                br#"{"kind":"Status","message":"pods \"p\" not found","code":404}"#,
                404,
                "pods \"p\" not found",
            ),
            (403, b"Forbidden (user=x)", 403, "Forbidden (user=x)"),
            (502, b"", 502, "the kubelet answered 502"),
        ];
        for (code, body, want_code, want_message) in cases {
            let err = kubelet_error(code, body);
            assert_eq!((err.code, err.message.as_str()), (want_code, want_message));
        }
        assert_eq!(kubelet_error(400, b"x").reason, "BadRequest");
        assert_eq!(kubelet_error(403, b"x").reason, "Forbidden");
    }

    #[test]
    fn upgrades_are_recognised() {
        let headers = |pairs: &[(&str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.append(
                    HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    v.parse().unwrap(),
                );
            }
            h
        };
        let cases = [
            (
                headers(&[("connection", "Upgrade"), ("upgrade", "websocket")]),
                true,
            ),
            (
                headers(&[
                    ("connection", "keep-alive, upgrade"),
                    ("upgrade", "SPDY/3.1"),
                ]),
                true,
            ),
            (headers(&[("upgrade", "websocket")]), false),
            (headers(&[("connection", "Upgrade")]), false),
        ];
        for (h, want) in cases {
            assert_eq!(is_upgrade(&h), want, "{h:?}");
        }
    }
}
