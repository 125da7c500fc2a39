//! Passing pod requests on to the worker's API server: logs as a (possibly endless) response
//! stream, exec/attach/port-forward as a transparent protocol upgrade whose two upgraded
//! connections are spliced together. The streaming protocol (SPDY or WebSocket, any
//! subprotocol version) is negotiated end to end between the client and the worker; the
//! proxier copies bytes.

use http::header::{self, HeaderName};
use std::time::Duration;

use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use kube::Client;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::response::{BoxError, Failure, ResponseBody, empty};
use super::worker::{WorkerClient, is_transport_error};

/// Request headers that carry an upgrade handshake to the worker.
const UPGRADE_REQUEST_HEADERS: [&str; 7] = [
    "connection",
    "upgrade",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-protocol",
    "sec-websocket-extensions",
    "x-stream-protocol-version",
];

/// Response headers that complete the handshake back to the client.
const UPGRADE_RESPONSE_HEADERS: [&str; 6] = [
    "connection",
    "upgrade",
    "sec-websocket-accept",
    "sec-websocket-protocol",
    "sec-websocket-extensions",
    "x-stream-protocol-version",
];

/// Response headers of non-upgraded answers that the client should see.
const PASSED_RESPONSE_HEADERS: [HeaderName; 3] = [
    header::CONTENT_TYPE,
    header::CONTENT_ENCODING,
    header::CACHE_CONTROL,
];

fn copy_headers<'a>(from: &HeaderMap, names: impl IntoIterator<Item = &'a str>) -> HeaderMap {
    let mut out = HeaderMap::new();
    for name in names {
        for value in from.get_all(name) {
            if let Ok(name) = HeaderName::from_bytes(name.as_bytes()) {
                out.append(name, value.clone());
            }
        }
    }
    out
}

/// The handshake headers to send to the worker, or `None` when the request does not ask
/// for an upgrade (`Connection: upgrade` plus an `Upgrade` header).
pub fn upgrade_request_headers(headers: &HeaderMap) -> Option<HeaderMap> {
    let wants_upgrade = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"));
    if !wants_upgrade || !headers.contains_key(header::UPGRADE) {
        return None;
    }
    Some(copy_headers(headers, UPGRADE_REQUEST_HEADERS))
}

/// The handshake headers of the worker's `101 Switching Protocols` to hand to the client.
pub fn upgrade_response_headers(headers: &HeaderMap) -> HeaderMap {
    copy_headers(headers, UPGRADE_RESPONSE_HEADERS)
}

async fn worker_client(worker: &WorkerClient) -> Result<Client, Failure> {
    worker.get().await.map_err(|err| {
        Failure::upstream(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("worker cluster unavailable: {err}"),
        )
    })
}

/// The worker's answer as the client's: status, content headers and the body stream.
fn pass_through(response: Response<kube::client::Body>) -> Response<ResponseBody> {
    let (parts, body) = response.into_parts();
    let mut out = Response::new(body.map_err(BoxError::from).boxed_unsync());
    *out.status_mut() = parts.status;
    *out.headers_mut() = copy_headers(
        &parts.headers,
        PASSED_RESPONSE_HEADERS.iter().map(HeaderName::as_str),
    );
    out
}

/// Forwards a log request to the worker's `path` (`pods/log` of the physical pod) and
/// streams its answer back, for as long as both sides keep the stream open; `timeout` bounds
/// the wait for the answer to start.
pub async fn forward_logs(
    worker: &WorkerClient,
    path: &str,
    timeout: Duration,
) -> Result<Response<ResponseBody>, Failure> {
    let client = worker_client(worker).await?;
    let request = Request::get(path)
        .body(kube::client::Body::empty())
        .map_err(|e| {
            Failure::client(StatusCode::BAD_REQUEST, format!("invalid worker path: {e}"))
        })?;
    let response = send_or_forget(worker, &client, request, timeout).await?;
    if !response.status().is_success() {
        return Err(worker_refusal(response).await);
    }
    Ok(pass_through(response))
}

/// Largest worker error body read into a message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// The message of a worker's error answer: a Status's `message`, else its text. kube-apiserver
/// puts the body of a kubelet's error answer into its own Status message as it is, so a
/// passed-through Status would reach users as JSON inside JSON.
pub fn worker_error_message(status: StatusCode, body: &[u8]) -> String {
    let message = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("message")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_owned());
    if message.is_empty() {
        format!("the worker API server answered {status}")
    } else {
        message
    }
}

/// A worker's error answer as a failure with a readable message and the worker's status.
async fn worker_refusal(response: Response<kube::client::Body>) -> Failure {
    let status = response.status();
    let limited = http_body_util::Limited::new(response.into_body(), ERROR_BODY_LIMIT);
    let body = limited
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let message = worker_error_message(status, &body);
    if status.is_server_error() {
        Failure::upstream(status, message)
    } else {
        Failure::client(status, message)
    }
}

/// Sends `request` to the worker and waits up to `timeout` for its answer (the kube client
/// retries some statuses with a long backoff); forgets the client after a transport failure.
async fn send_or_forget(
    worker: &WorkerClient,
    client: &Client,
    request: Request<kube::client::Body>,
    timeout: Duration,
) -> Result<Response<kube::client::Body>, Failure> {
    let Ok(sent) = tokio::time::timeout(timeout, client.send(request)).await else {
        return Err(Failure::upstream(
            StatusCode::GATEWAY_TIMEOUT,
            format!("worker API server did not answer within {timeout:?}"),
        ));
    };
    match sent {
        Ok(response) => Ok(response),
        Err(err) => {
            if is_transport_error(&err) {
                // Reconnect on the next request: the worker may have moved or rotated its CA.
                worker.forget().await;
            }
            Err(Failure::upstream(
                StatusCode::BAD_GATEWAY,
                format!(
                    "worker API server: {}",
                    kube_kit::client::describe_kube_error(&err)
                ),
            ))
        }
    }
}

/// Where upgraded streams run: they end with the proxier.
pub struct StreamSupervisor {
    /// Cancelled when the proxier stops.
    pub stop: CancellationToken,
    /// Tracks the splicing tasks so that shutdown can wait for them.
    pub tracker: TaskTracker,
}

/// Forwards an upgrade request (exec, attach, port-forward) to the worker's `path` with the
/// client's handshake headers. On `101 Switching Protocols` the client gets the worker's
/// handshake answer and both upgraded connections are spliced until either side closes;
/// any other answer is passed through.
pub async fn forward_upgrade<B>(
    worker: &WorkerClient,
    mut request: Request<B>,
    path: &str,
    supervisor: &StreamSupervisor,
    description: String,
    timeout: Duration,
) -> Result<Response<ResponseBody>, Failure> {
    let Some(headers) = upgrade_request_headers(request.headers()) else {
        return Err(Failure::client(
            StatusCode::BAD_REQUEST,
            "Upgrade request required",
        ));
    };
    let client = worker_client(worker).await?;
    let mut upstream = Request::builder()
        .method(request.method().clone())
        .uri(path)
        .body(kube::client::Body::empty())
        .map_err(|e| {
            Failure::client(StatusCode::BAD_REQUEST, format!("invalid worker path: {e}"))
        })?;
    *upstream.headers_mut() = headers;
    let client_upgrade = hyper::upgrade::on(&mut request);
    let mut response = send_or_forget(worker, &client, upstream, timeout).await?;
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        if !response.status().is_success() {
            return Err(worker_refusal(response).await);
        }
        return Ok(pass_through(response));
    }
    let handshake = upgrade_response_headers(response.headers());
    let worker_upgrade = hyper::upgrade::on(&mut response);
    let stop = supervisor.stop.clone();
    supervisor.tracker.spawn(async move {
        let (client_io, worker_io) = match tokio::try_join!(client_upgrade, worker_upgrade) {
            Ok(pair) => pair,
            Err(err) => {
                tracing::warn!(stream = %description, error = %err, "upgrade did not complete");
                return;
            }
        };
        let (mut client_io, mut worker_io) = (TokioIo::new(client_io), TokioIo::new(worker_io));
        tokio::select! {
            copied = tokio::io::copy_bidirectional(&mut client_io, &mut worker_io) => match copied {
                Ok((up, down)) => tracing::debug!(stream = %description, up, down, "stream closed"),
                Err(err) => tracing::debug!(stream = %description, error = %err, "stream ended with an error"),
            },
            () = stop.cancelled() => tracing::debug!(stream = %description, "stream closed by shutdown"),
        }
    });
    let mut out = Response::new(empty());
    *out.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    *out.headers_mut() = handshake;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn upgrade_requests_keep_only_handshake_headers() {
        let websocket = headers(&[
            ("Connection", "keep-alive, Upgrade"),
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Protocol", "v5.channel.k8s.io"),
            ("Sec-WebSocket-Protocol", "v4.channel.k8s.io"),
            ("Authorization", "Bearer secret"),
            ("Cookie", "c=1"),
        ]);
        let got = upgrade_request_headers(&websocket).unwrap();
        assert_eq!(got.len(), 6);
        assert!(got.get(header::AUTHORIZATION).is_none());
        assert!(got.get(header::COOKIE).is_none());
        let protocols: Vec<_> = got.get_all("sec-websocket-protocol").iter().collect();
        assert_eq!(protocols, ["v5.channel.k8s.io", "v4.channel.k8s.io"]);

        let spdy = headers(&[
            ("Connection", "Upgrade"),
            ("Upgrade", "SPDY/3.1"),
            ("X-Stream-Protocol-Version", "v4.channel.k8s.io"),
            ("X-Stream-Protocol-Version", "channel.k8s.io"),
        ]);
        let got = upgrade_request_headers(&spdy).unwrap();
        assert_eq!(got.get_all("x-stream-protocol-version").iter().count(), 2);

        for not_upgrade in [
            headers(&[("Upgrade", "websocket")]),
            headers(&[("Connection", "upgrade")]),
            headers(&[("Connection", "keep-alive"), ("Upgrade", "websocket")]),
            headers(&[]),
        ] {
            assert!(
                upgrade_request_headers(&not_upgrade).is_none(),
                "{not_upgrade:?}"
            );
        }
    }

    #[test]
    fn worker_errors_read_as_text() {
        let status = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"error dialing backend: dial tcp 10.0.0.5:10250: connect: connection refused","code":500}"#;
        for (code, body, want) in [
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                &status[..],
                "error dialing backend: dial tcp 10.0.0.5:10250: connect: connection refused",
            ),
            (
                StatusCode::NOT_FOUND,
                b"pods \"p\" not found\n",
                "pods \"p\" not found",
            ),
            (
                StatusCode::BAD_GATEWAY,
                b"",
                "the worker API server answered 502 Bad Gateway",
            ),
            (StatusCode::BAD_REQUEST, b"{\"other\": 1}", "{\"other\": 1}"),
        ] {
            assert_eq!(worker_error_message(code, body), want, "{code}");
        }
    }

    #[test]
    fn upgrade_responses_keep_only_handshake_headers() {
        let answer = headers(&[
            ("Connection", "Upgrade"),
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
            ("Sec-WebSocket-Protocol", "v4.channel.k8s.io"),
            ("Audit-Id", "123"),
            ("Content-Length", "0"),
        ]);
        let got = upgrade_response_headers(&answer);
        assert_eq!(got.len(), 4);
        assert!(got.get("audit-id").is_none());
    }
}
