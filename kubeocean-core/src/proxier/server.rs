//! The HTTPS server: accepts TLS connections, then for each request parses the kubelet path,
//! authenticates, resolves the virtual pod, authorizes and hands over to the forwarders.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
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
use super::node_stats;
use super::request::{Endpoint, KubeletRequest, parse_request};
use super::response::{Failure, ResponseBody, text};
use super::tls::peer_subject;
use super::worker::WorkerClient;
use super::x509::CertificateSubject;
use kube_kit::client::describe_kube_error;

/// Which virtual node each listening port serves.
#[derive(Clone, Default)]
pub struct NodePorts(Arc<RwLock<HashMap<u16, String>>>);

impl NodePorts {
    /// The virtual node served on `port`, if any.
    pub fn node(&self, port: u16) -> Option<String> {
        self.0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&port)
            .cloned()
    }

    pub(super) fn set(&self, ports: HashMap<u16, String>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = ports;
    }
}

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
    /// Whether client certificates are accepted (a client CA is configured).
    pub client_ca: bool,
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
    let presented = presented(peer.subject.is_some(), request.headers());
    let user = context
        .auth
        .authenticate(credentials)
        .await
        .map_err(|err| match err {
            AuthError::Unauthenticated => Failure::client(
                StatusCode::UNAUTHORIZED,
                unauthenticated_message(
                    &context.binding,
                    presented,
                    context.client_ca,
                    context.token_review,
                ),
            ),
            other => auth_failure(other),
        })?;
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
    let explain =
        |failure: Failure| explain_worker_failure(&context.binding, pod, &target, failure);
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
        .map_err(explain)
    } else {
        forward_logs(&context.worker, &path, context.upstream_timeout)
            .await
            .map_err(explain)
    }
}

/// What a client presented, for the message of a 401.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presented {
    /// Neither a client certificate nor a bearer token.
    Nothing,
    /// A client certificate.
    Certificate,
    /// A bearer token.
    Token,
}

fn presented(certificate: bool, headers: &http::HeaderMap) -> Presented {
    if certificate {
        Presented::Certificate
    } else if super::auth::bearer_token(headers).is_some() {
        Presented::Token
    } else {
        Presented::Nothing
    }
}

/// The message of a 401. kube-apiserver relays it to `kubectl logs/exec/port-forward` users,
/// who would otherwise take a bare "Unauthorized" for their own credentials: it says that the
/// kubelet endpoint of a virtual node refused the API server, and why.
pub fn unauthenticated_message(
    binding: &str,
    presented: Presented,
    client_ca: bool,
    token_review: bool,
) -> String {
    let who = format!(
        "Unauthorized: the kubelet endpoint of the virtual nodes of ClusterBinding {binding} (the Kubeocean proxier)"
    );
    match presented {
        Presented::Token if token_review => {
            format!("{who} did not accept the bearer token: TokenReview did not authenticate it")
        }
        Presented::Token => format!("{who} does not accept bearer tokens (token review is off)"),
        Presented::Certificate => {
            format!("{who} could not read a user from the client certificate's subject")
        }
        Presented::Nothing if !client_ca => format!(
            "{who} has no client CA, so it cannot accept the API server's kubelet-client certificate; \
             give the proxier the CA that signs it (see docs/kubeocean/troubleshooting.md)"
        ),
        Presented::Nothing => format!(
            "{who} got neither a client certificate signed by its client CA nor a bearer token"
        ),
    }
}

/// A worker's refusal of a pod request, said of the virtual pod: a physical pod the worker
/// does not have (404) is explained by the virtual pod's failure when it failed (e.g. it never
/// found a node in the worker), others name the physical pod and pass the worker's message.
pub fn explain_worker_failure(
    binding: &str,
    pod: &super::request::PodPath,
    target: &super::mapping::PodTarget,
    failure: Failure,
) -> Failure {
    let physical = format!("{}/{}", target.physical_namespace, target.physical_name);
    let message = match (failure.status, &target.failed) {
        (StatusCode::NOT_FOUND, Some(failed)) => format!(
            "pod {}/{} failed before it could run in the worker cluster of ClusterBinding {binding}, \
             so it has no containers to serve: {failed}",
            pod.namespace, pod.name
        ),
        (StatusCode::NOT_FOUND, None) => format!(
            "pod {}/{}: its physical pod {physical} is not in the worker cluster of ClusterBinding {binding} (it may have been removed there): {}",
            pod.namespace, pod.name, failure.message
        ),
        _ => format!(
            "pod {}/{} (physical pod {physical} in the worker cluster of ClusterBinding {binding}): {}",
            pod.namespace, pod.name, failure.message
        ),
    };
    Failure { message, ..failure }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxier::mapping::PodTarget;
    use crate::proxier::request::PodPath;

    #[test]
    fn unauthenticated_messages_point_at_the_proxier() {
        // (presented, client CA, token review, what the message says)
        for (presented, client_ca, review, says) in [
            (Presented::Nothing, false, true, "has no client CA"),
            (
                Presented::Nothing,
                true,
                true,
                "neither a client certificate signed by its client CA nor a bearer token",
            ),
            (
                Presented::Token,
                true,
                true,
                "TokenReview did not authenticate it",
            ),
            (
                Presented::Token,
                true,
                false,
                "does not accept bearer tokens",
            ),
            (Presented::Certificate, true, false, "subject"),
        ] {
            let message = unauthenticated_message("b1", presented, client_ca, review);
            assert!(
                message.starts_with(
                    "Unauthorized: the kubelet endpoint of the virtual nodes of ClusterBinding b1"
                ),
                "{message}"
            );
            assert!(message.contains(says), "{presented:?}: {message}");
        }
    }

    #[test]
    fn worker_refusals_are_said_of_the_virtual_pod() {
        let pod = PodPath {
            namespace: "team".into(),
            name: "web".into(),
            uid: None,
        };
        let target = |failed: Option<&str>| PodTarget {
            virtual_node: "vnode-a".into(),
            physical_namespace: "mount".into(),
            physical_name: "web-123".into(),
            failed: failed.map(str::to_owned),
        };
        let not_found = || Failure::client(StatusCode::NOT_FOUND, "pods \"web-123\" not found");
        let failed = explain_worker_failure(
            "b1",
            &pod,
            &target(Some("Unschedulable: no node fits")),
            not_found(),
        );
        assert_eq!(failed.status, StatusCode::NOT_FOUND);
        assert!(
            failed
                .message
                .contains("team/web failed before it could run")
                && failed.message.ends_with("Unschedulable: no node fits"),
            "{}",
            failed.message
        );
        let gone = explain_worker_failure("b1", &pod, &target(None), not_found());
        assert!(
            gone.message
                .contains("physical pod mount/web-123 is not in the worker cluster"),
            "{}",
            gone.message
        );
        let dial = explain_worker_failure(
            "b1",
            &pod,
            &target(None),
            Failure::upstream(StatusCode::INTERNAL_SERVER_ERROR, "error dialing backend"),
        );
        assert!(dial.upstream);
        assert_eq!(
            dial.message,
            "pod team/web (physical pod mount/web-123 in the worker cluster of ClusterBinding b1): error dialing backend"
        );
    }
}
