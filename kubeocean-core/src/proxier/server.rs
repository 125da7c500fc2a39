//! The HTTPS server: accepts TLS connections, then for each request parses the kubelet path,
//! authenticates, resolves the virtual pod, authorizes and hands over to the forwarders.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use kube::Client;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::ProxierMetrics;
use super::auth::{AuthError, Authenticator, UserInfo, authorization_attributes, credentials};
use super::forward::{StreamSupervisor, forward_logs, forward_upgrade};
use super::mapping::{list_binding_nodes, list_virtual_pods, resolve_pod, select_nodes};
use super::node_ports::NodePorts;
use super::node_stats;
use super::request::{Endpoint, KubeletRequest, parse_request};
use super::response::{Failure, ResponseBody, text};
use super::tls::peer_subject;
use super::worker::WorkerClient;
use super::x509::CertificateSubject;
use kube_kit::client::describe_kube_error;

/// Everything requests share.
pub struct Context {
    /// Binding name.
    pub binding: String,
    /// The computing cluster.
    pub computing: Client,
    /// The worker cluster.
    pub worker: WorkerClient,
    /// Authentication and authorization.
    pub auth: Authenticator,
    /// Whether bearer tokens are reviewed.
    pub token_review: bool,
    /// Where to count requests.
    pub metrics: Option<ProxierMetrics>,
    /// Upgraded streams.
    pub streams: StreamSupervisor,
    /// How long a TLS handshake may take.
    pub handshake_timeout: Duration,
    /// How long the worker may take to start answering a forwarded request.
    pub upstream_timeout: Duration,
    /// How long the worker may take to answer one node's stats.
    pub stats_timeout: Duration,
    /// Which virtual node each per-node port serves.
    pub node_ports: NodePorts,
}

/// What the TLS handshake told about the client.
struct Peer {
    addr: SocketAddr,
    /// The per-node port the connection came in on (`None`: the shared port).
    node_port: Option<u16>,
    /// `None`: no client certificate; `Some(None)`: one whose subject is unreadable.
    subject: Option<Option<CertificateSubject>>,
}

/// Accepts connections until `stop`, then waits for open connections to end. `node_port`:
/// the listener is the per-node port of one virtual node.
pub async fn serve(
    context: Arc<Context>,
    listener: TcpListener,
    acceptor: TlsAcceptor,
    stop: CancellationToken,
    node_port: Option<u16>,
) {
    let connections = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, addr)) => {
                connections.spawn(connection(
                    context.clone(),
                    acceptor.clone(),
                    stream,
                    Peer {
                        addr,
                        node_port,
                        subject: None,
                    },
                    stop.clone(),
                ));
            }
            Err(err) => {
                // Usually out of file descriptors: back off instead of spinning.
                tracing::warn!(error = %err, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    connections.close();
    connections.wait().await;
}

async fn connection(
    context: Arc<Context>,
    acceptor: TlsAcceptor,
    stream: TcpStream,
    mut peer: Peer,
    stop: CancellationToken,
) {
    let addr = peer.addr;
    let _ = stream.set_nodelay(true);
    let tls = match tokio::time::timeout(context.handshake_timeout, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(err)) => {
            tracing::debug!(peer = %addr, error = %err, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(peer = %addr, "TLS handshake timed out");
            return;
        }
    };
    peer.subject = peer_subject(tls.get_ref().1.peer_certificates());
    let peer = Arc::new(peer);
    let service = service_fn(move |request| {
        let context = context.clone();
        let peer = peer.clone();
        async move { Ok::<_, Infallible>(handle(&context, &peer, request).await) }
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
    tokio::pin!(conn);
    tokio::select! {
        served = conn.as_mut() => {
            if let Err(err) = served {
                tracing::debug!(peer = %addr, error = %err, "connection ended with an error");
            }
        }
        () = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
        }
    }
}

async fn handle(
    context: &Context,
    peer: &Peer,
    request: Request<Incoming>,
) -> Response<ResponseBody> {
    let endpoint = Endpoint::of_path(request.uri().path());
    let span = tracing::debug_span!(
        "request",
        binding = %context.binding,
        endpoint = endpoint.as_str(),
        method = %request.method(),
        peer = %peer.addr,
    );
    let response = match dispatch(context, peer, request)
        .instrument(span.clone())
        .await
    {
        Ok(response) => response,
        Err(failure) => {
            span.in_scope(|| {
                if failure.upstream {
                    tracing::warn!(status = failure.status.as_u16(), message = %failure.message, "request failed upstream");
                } else {
                    tracing::debug!(status = failure.status.as_u16(), message = %failure.message, "request refused");
                }
            });
            if failure.upstream
                && let Some(metrics) = &context.metrics
            {
                metrics.upstream_error(&context.binding, endpoint.as_str());
            }
            failure.response()
        }
    };
    if let Some(metrics) = &context.metrics {
        metrics.request(
            &context.binding,
            endpoint.as_str(),
            response.status().as_u16(),
        );
    }
    response
}

fn auth_failure(err: AuthError) -> Failure {
    match err {
        AuthError::Unauthenticated => Failure::client(StatusCode::UNAUTHORIZED, err.to_string()),
        AuthError::Forbidden { .. } => Failure::client(StatusCode::FORBIDDEN, err.to_string()),
        AuthError::Review { .. } => {
            Failure::upstream(StatusCode::INTERNAL_SERVER_ERROR, err.to_string())
        }
    }
}

async fn dispatch(
    context: &Context,
    peer: &Peer,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, Failure> {
    let parsed = parse_request(
        request.method(),
        request.uri().path(),
        request.uri().query(),
    )
    .map_err(|e| Failure::client(e.status(), e.to_string()))?;
    if parsed == KubeletRequest::Healthz {
        return Ok(text(StatusCode::OK, "ok"));
    }
    let credentials = credentials(
        peer.subject.as_ref().map(Option::as_ref),
        request.headers(),
        context.token_review,
    );
    let user = context
        .auth
        .authenticate(credentials)
        .await
        .map_err(auth_failure)?;
    let (verb, subresource) = authorization_attributes(parsed.endpoint(), request.method());
    let port_node = match peer.node_port {
        Some(port) => Some(context.node_ports.node(port).ok_or_else(|| {
            Failure::client(
                StatusCode::NOT_FOUND,
                format!("no virtual node is served on port {port}"),
            )
        })?),
        None => None,
    };
    let Some(pod) = parsed.pod() else {
        return node_level(
            context,
            &parsed,
            &request,
            &user,
            verb,
            subresource,
            port_node.as_deref(),
        )
        .await;
    };
    let target = resolve_pod(
        &context.computing,
        &context.binding,
        &pod.namespace,
        &pod.name,
        pod.uid.as_deref(),
    )
    .await
    .map_err(|e| {
        Failure::upstream(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "cannot look up pod {}/{} in the computing cluster: {}",
                pod.namespace,
                pod.name,
                describe_kube_error(&e)
            ),
        )
    })?;
    // Authorize before saying whether the pod exists.
    let node = target
        .as_ref()
        .map(|t| t.virtual_node.as_str())
        .unwrap_or("");
    context
        .auth
        .authorize(&user, verb, subresource, node)
        .await
        .map_err(auth_failure)?;
    let target = target.map_err(|e| Failure::client(StatusCode::NOT_FOUND, e.to_string()))?;
    if let Some(port_node) = &port_node
        && *port_node != target.virtual_node
    {
        // A kubelet serves only the pods of its own node.
        return Err(Failure::client(
            StatusCode::NOT_FOUND,
            format!(
                "pod {}/{} is not on virtual node {port_node}",
                pod.namespace, pod.name
            ),
        ));
    }
    let Some(path) = parsed.worker_pod_path(&target.physical_namespace, &target.physical_name)
    else {
        return Err(Failure::client(StatusCode::NOT_FOUND, "not a pod request"));
    };
    if parsed.is_upgrade() {
        let description = format!(
            "{} {}/{} -> {}/{} by {}",
            parsed.endpoint().as_str(),
            pod.namespace,
            pod.name,
            target.physical_namespace,
            target.physical_name,
            user.username
        );
        tracing::info!(stream = %description, "forwarding stream");
        forward_upgrade(
            &context.worker,
            request,
            &path,
            &context.streams,
            description,
            context.upstream_timeout,
        )
        .await
    } else {
        forward_logs(&context.worker, &path, context.upstream_timeout).await
    }
}

async fn node_level(
    context: &Context,
    parsed: &KubeletRequest,
    request: &Request<Incoming>,
    user: &UserInfo,
    verb: &'static str,
    subresource: &'static str,
    port_node: Option<&str>,
) -> Result<Response<ResponseBody>, Failure> {
    let computing_failure = |what: &str, e: kube::Error| {
        Failure::upstream(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "cannot list {what} in the computing cluster: {}",
                describe_kube_error(&e)
            ),
        )
    };
    let nodes = list_binding_nodes(&context.computing, &context.binding)
        .await
        .map_err(|e| computing_failure("virtual nodes", e))?;
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()));
    let selected = match port_node {
        Some(node) => nodes
            .get_key_value(node)
            .map(|(v, p)| BTreeMap::from([(v.clone(), p.clone())]))
            .ok_or_else(|| {
                Failure::client(
                    StatusCode::NOT_FOUND,
                    format!("virtual node {node} has no physical node"),
                )
            })?,
        None => select_nodes(host, &nodes),
    };
    if selected.is_empty() {
        context
            .auth
            .authorize(user, verb, subresource, "")
            .await
            .map_err(auth_failure)?;
    }
    for node in selected.keys() {
        context
            .auth
            .authorize(user, verb, subresource, node)
            .await
            .map_err(auth_failure)?;
    }
    let pods = list_virtual_pods(&context.computing, selected.keys())
        .await
        .map_err(|e| computing_failure("virtual pods", e))?;
    let worker = match context.worker.get().await {
        Ok(worker) => Some(worker),
        Err(err) => {
            tracing::warn!(error = %err, "worker cluster unavailable; answering without its stats");
            count_upstream_error(context, parsed.endpoint());
            None
        }
    };
    let fetched = node_stats::fetch(
        worker.as_ref(),
        parsed,
        &selected,
        context.stats_timeout,
        |virtual_node, physical, error| {
            tracing::warn!(
                virtual_node,
                physical_node = physical,
                error,
                "worker did not answer for a node; its stats are left out"
            );
            count_upstream_error(context, parsed.endpoint());
        },
    )
    .await;
    Ok(node_stats::answer(&context.binding, parsed, fetched, &pods))
}

fn count_upstream_error(context: &Context, endpoint: Endpoint) {
    if let Some(metrics) = &context.metrics {
        metrics.upstream_error(&context.binding, endpoint.as_str());
    }
}
