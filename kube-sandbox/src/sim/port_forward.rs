//! Port forwarding over SPDY/3.1, both where kubelet serves it and where kube-apiserver
//! tunnels it:
//!
//! - the simulated kubelet answers `Upgrade: SPDY/3.1` with `X-Stream-Protocol-Version:
//!   portforward.k8s.io` on `/portForward/{ns}/{pod}` ([`spdy_handshake`], then
//!   [`serve_spdy`]): the client opens, per forwarded connection, an `error` and a `data`
//!   stream naming the `port` and a `requestID`; once both are there, the data stream is
//!   spliced to the pod's port ([`super::pod_ports`]) until either side ends it, then the
//!   kubelet closes both streams (cri-streaming `portforward/httpstream.go`,
//!   `httpStreamReceived`, `httpStreamHandler.run` and `portForward`);
//! - the API server accepts kubectl's WebSocket whose subprotocol is
//!   `SPDY/3.1+portforward.k8s.io` and calls the kubelet with a plain SPDY upgrade instead
//!   ([`tunnelled_protocols`], [`kubelet_upgrade_headers`]); the SPDY bytes then travel inside
//!   WebSocket binary messages ([`relay_tunnel`]), as kube-apiserver's `TunnelingHandler`
//!   (apiserver `pkg/util/proxy/streamtunnel.go`) and client-go's `TunnelingConnection`
//!   (`tools/portforward/tunneling_connection.go`) do.

use super::pod_ports::{self, PortTarget};
use super::spdy::{Frame, FrameReader, FrameWriter, Headers, header, rst};
use axum::body::Body;
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_util::sync::CancellationToken;

/// The port-forward protocol (`portforward.ProtocolV1Name`).
pub const PROTOCOL: &str = "portforward.k8s.io";

/// The `Upgrade` token of SPDY (`spdy.HeaderSpdy31`).
pub const SPDY_UPGRADE: &str = "SPDY/3.1";

/// The prefix of WebSocket subprotocols that tunnel SPDY
/// (`portforward.WebsocketsSPDYTunnelingPrefix`).
pub const TUNNEL_PREFIX: &str = "SPDY/3.1+";

/// The tunnelled port-forward subprotocol kubectl offers.
pub const TUNNEL_PROTOCOL: &str = "SPDY/3.1+portforward.k8s.io";

/// `X-Stream-Protocol-Version` (`httpstream.HeaderProtocolVersion`).
pub const PROTOCOL_HEADER: &str = "x-stream-protocol-version";

// Stream headers of a port-forward stream (cri-streaming `portforward/constants.go`).
const PORT_HEADER: &str = "port";
const REQUEST_ID_HEADER: &str = "requestid";
const STREAM_TYPE_HEADER: &str = "streamtype";
const STREAM_TYPE_DATA: &str = "data";
const STREAM_TYPE_ERROR: &str = "error";

/// Largest data frame sent.
const DATA_CHUNK: usize = 32 * 1024;

/// Frames waiting for the connection's writer.
const WRITE_QUEUE: usize = 64;

fn header_values<'a>(headers: &'a HeaderMap, name: &str) -> impl Iterator<Item = &'a str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// Whether a request asks for a SPDY upgrade (anything but WebSocket goes the SPDY way at
/// kubelet, as cri-streaming `ServePortForward` decides).
pub fn is_spdy_request(headers: &HeaderMap) -> bool {
    !header_values(headers, "upgrade").any(|u| u.eq_ignore_ascii_case("websocket"))
}

/// A refused SPDY upgrade: the status, the message and, for an unsupported protocol, the
/// protocols that are (`X-Accepted-Stream-Protocol-Versions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The HTTP status.
    pub code: StatusCode,
    /// The plain-text message kubelet writes.
    pub message: String,
    /// Whether the answer lists the accepted protocols.
    pub list_accepted: bool,
}

/// Checks a SPDY port-forward upgrade as kubelet does (see [`spdy_upgrade`]). The answer is
/// the 101 to send.
pub fn spdy_handshake(headers: &HeaderMap) -> Result<Response, Refusal> {
    spdy_upgrade(headers, &[PROTOCOL]).map(|(response, _)| response)
}

/// Checks a SPDY upgrade as kubelet does: the protocol negotiation first (streaming
/// `httpstream.Handshake`: the first protocol the client offers that the server supports),
/// then the upgrade headers (streaming `spdy.responseUpgrader.UpgradeResponse`). The answer
/// is the 101 to send and the protocol chosen.
pub fn spdy_upgrade(
    headers: &HeaderMap,
    supported: &[&'static str],
) -> Result<(Response, &'static str), Refusal> {
    let refuse = |code: StatusCode, message: String| Refusal {
        code,
        message,
        list_accepted: false,
    };
    if !headers.contains_key(PROTOCOL_HEADER) {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            format!(
                "unable to upgrade: header X-Stream-Protocol-Version does not exist in request with {} headers",
                headers.keys_len()
            ),
        ));
    }
    let offered: Vec<&str> = header_values(headers, PROTOCOL_HEADER).collect();
    if offered.is_empty() {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "unable to upgrade: header X-Stream-Protocol-Version contains no valid protocols"
                .into(),
        ));
    }
    let Some(chosen) = offered
        .iter()
        .find_map(|o| supported.iter().find(|s| *s == o).copied())
    else {
        return Err(Refusal {
            code: StatusCode::FORBIDDEN,
            message: format!(
                "unable to upgrade: unable to negotiate protocol: client supports [{}], server accepts [{}]",
                offered.join(" "),
                supported.join(" ")
            ),
            list_accepted: true,
        });
    };
    let connection_upgrade =
        header_values(headers, "connection").any(|c| c.to_ascii_lowercase().contains("upgrade"));
    let spdy =
        header_values(headers, "upgrade").any(|u| u.to_ascii_lowercase().contains("spdy/3.1"));
    if !connection_upgrade || !spdy {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "unable to upgrade: missing upgrade headers in request".into(),
        ));
    }
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = response.headers_mut();
    h.insert(PROTOCOL_HEADER, HeaderValue::from_static(chosen));
    h.insert(
        http::header::CONNECTION,
        HeaderValue::from_static("Upgrade"),
    );
    h.insert(
        http::header::UPGRADE,
        HeaderValue::from_static(SPDY_UPGRADE),
    );
    Ok((response, chosen))
}

/// The SPDY protocols a WebSocket request tunnels: its `SPDY/3.1+…k8s.io` subprotocols
/// without the prefix (streamtunnel.go `spdyProtocolsFromWebsocketProtocols`). kube-apiserver
/// tunnels a port-forward WebSocket when it offers any `SPDY/3.1+` subprotocol
/// (wsstream `IsWebSocketRequestWithTunnelingProtocol`), so `Some(empty)` is a tunnel request
/// without a usable protocol; `None` is not a tunnel request.
pub fn tunnelled_protocols(headers: &HeaderMap) -> Option<Vec<String>> {
    let websocket = header_values(headers, "upgrade").any(|u| u.eq_ignore_ascii_case("websocket"));
    let offered: Vec<&str> = header_values(headers, "sec-websocket-protocol").collect();
    if !websocket || !offered.iter().any(|p| p.starts_with(TUNNEL_PREFIX)) {
        return None;
    }
    Some(
        offered
            .iter()
            .filter_map(|p| p.strip_prefix(TUNNEL_PREFIX))
            .filter(|p| p.ends_with(".k8s.io"))
            .map(str::to_string)
            .collect(),
    )
}

/// The upgrade headers of the SPDY request kube-apiserver sends the kubelet for a tunnel
/// (streamtunnel.go `createSPDYRequest`): WebSocket headers dropped, `Upgrade: SPDY/3.1` and
/// one `X-Stream-Protocol-Version` per tunnelled protocol; the method becomes POST.
pub fn kubelet_upgrade_headers(protocols: &[String]) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("connection", "Upgrade".to_string()),
        ("upgrade", SPDY_UPGRADE.to_string()),
    ];
    headers.extend(protocols.iter().map(|p| (PROTOCOL_HEADER, p.clone())));
    headers
}

/// The WebSocket subprotocol to answer a tunnel with, from the kubelet's 101: `SPDY/3.1+`
/// and the protocol it chose; an answer that is not a SPDY upgrade is refused
/// (streamtunnel.go `tunnelingWebsocketUpgraderConn.InitializeWrite`).
pub fn tunnel_protocol_of(kubelet_answer: &HeaderMap) -> Result<Option<String>, String> {
    let connection_upgrade = header_values(kubelet_answer, "connection")
        .any(|c| c.to_ascii_lowercase().contains("upgrade"));
    let spdy = header_values(kubelet_answer, "upgrade")
        .any(|u| u.to_ascii_lowercase().contains("spdy/3.1"));
    if !connection_upgrade || !spdy {
        return Err("unable to upgrade: missing upgrade headers in response".into());
    }
    Ok(kubelet_answer
        .get(PROTOCOL_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| format!("{TUNNEL_PREFIX}{p}")))
}

/// Carries a tunnel: each WebSocket binary message's bytes go to the kubelet's SPDY
/// connection, and what the kubelet writes goes back as binary messages (one per read, as
/// client-go's `TunnelingConnection.Write` sends one per write). A normal close on either
/// side ends both.
pub async fn relay_tunnel<W, K>(ws: WebSocketStream<W>, kubelet: K, shutdown: CancellationToken)
where
    W: AsyncRead + AsyncWrite + Unpin,
    K: AsyncRead + AsyncWrite + Unpin,
{
    let (mut sink, mut stream) = ws.split();
    let (mut kubelet_rd, mut kubelet_wr) = tokio::io::split(kubelet);
    let mut chunk = vec![0u8; DATA_CHUNK];
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            message = stream.next() => match message {
                Some(Ok(Message::Binary(bytes))) => {
                    if kubelet_wr.write_all(&bytes).await.is_err() || kubelet_wr.flush().await.is_err() {
                        break;
                    }
                }
                // A text message is not SPDY (`invalid message type received`).
                Some(Ok(Message::Text(_))) | Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                Some(Ok(_)) => {}
            },
            read = kubelet_rd.read(&mut chunk) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if sink.send(Message::binary(chunk[..n].to_vec())).await.is_err() {
                        break;
                    }
                }
            },
        }
    }
    let _ = sink
        .send(Message::Close(Some(CloseFrame {
            code: CloseCode::Normal,
            reason: "".into(),
        })))
        .await;
    let _ = sink.close().await;
    let _ = kubelet_wr.shutdown().await;
}

/// What a port-forward SPDY stream says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRequest {
    /// The pod's port.
    pub port: u16,
    /// `data` (true) or `error` (false).
    pub data: bool,
    /// The forwarded connection both streams belong to.
    pub request_id: String,
}

/// Checks a new stream's headers as kubelet does (httpstream.go `httpStreamReceived` and
/// `httpStreamHandler.requestID`): a port of 1-65535 and a stream type of `error` or `data`;
/// a client that sends no `requestID` pairs streams by id (error `n`, data `n + 2`).
pub fn stream_request(stream_id: u32, headers: &Headers) -> Result<StreamRequest, String> {
    let port = header(headers, PORT_HEADER)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| format!("{PORT_HEADER:?} header is required"))?;
    let port = match port.parse::<u16>() {
        Ok(0) => return Err(format!("port {port:?} must be > 0")),
        Ok(p) => p,
        Err(e) => return Err(format!("unable to parse {port:?} as a port: {e}")),
    };
    let data = match header(headers, STREAM_TYPE_HEADER) {
        None | Some("") => return Err("\"streamType\" header is required".into()),
        Some(STREAM_TYPE_DATA) => true,
        Some(STREAM_TYPE_ERROR) => false,
        Some(other) => return Err(format!("invalid stream type {other:?}")),
    };
    let request_id = match header(headers, REQUEST_ID_HEADER).filter(|r| !r.is_empty()) {
        Some(id) => id.to_string(),
        None if data => stream_id.saturating_sub(2).to_string(),
        None => stream_id.to_string(),
    };
    Ok(StreamRequest {
        port,
        data,
        request_id,
    })
}

/// The streams of one forwarded connection, while the second is awaited.
#[derive(Default)]
struct PendingPair {
    error: Option<u32>,
    data: Option<(u32, u16)>,
}

/// Whether the client reset a forwarded connection's streams.
#[derive(Default)]
struct Resets {
    data: AtomicBool,
    error: AtomicBool,
}

/// The data stream of a forwarded connection in progress.
struct Forwarding {
    /// Where the client's bytes go (the port's input); `None` once the client finished.
    to_port: Option<WriteHalf<tokio::io::DuplexStream>>,
    resets: Arc<Resets>,
    pump: JoinHandle<()>,
}

/// One SPDY port-forward connection at the kubelet.
struct Session {
    pod: Value,
    namespace: String,
    name: String,
    frames: mpsc::Sender<Frame>,
    pending: HashMap<String, PendingPair>,
    forwarding: HashMap<u32, Forwarding>,
    error_streams: HashMap<u32, Arc<Resets>>,
    last_stream: u32,
}

impl Session {
    async fn send(&self, frame: Frame) {
        let _ = self.frames.send(frame).await;
    }

    /// Handles one frame from the client; false ends the connection.
    async fn handle(&mut self, frame: Frame) -> bool {
        match frame {
            Frame::SynStream {
                stream_id, headers, ..
            } => self.new_stream(stream_id, &headers).await,
            Frame::Data {
                stream_id,
                fin,
                data,
            } => {
                let Some(forwarding) = self.forwarding.get_mut(&stream_id) else {
                    // Data on an error stream, or on a stream gone: spdystream drops it.
                    return true;
                };
                if let Some(to_port) = forwarding.to_port.as_mut()
                    && !data.is_empty()
                    && to_port.write_all(&data).await.is_err()
                    && let Some(mut to_port) = forwarding.to_port.take()
                {
                    let _ = to_port.shutdown().await;
                }
                if fin && let Some(mut to_port) = forwarding.to_port.take() {
                    let _ = to_port.shutdown().await;
                }
            }
            Frame::RstStream { stream_id, .. } => {
                if let Some(forwarding) = self.forwarding.get_mut(&stream_id) {
                    forwarding.resets.data.store(true, Ordering::SeqCst);
                    // The port sees the end of its input (a dropped half of a split stream
                    // would not close it), finishes, and the error stream is then closed.
                    if let Some(mut to_port) = forwarding.to_port.take() {
                        let _ = to_port.shutdown().await;
                    }
                }
                if let Some(resets) = self.error_streams.get(&stream_id) {
                    resets.error.store(true, Ordering::SeqCst);
                }
                self.pending.retain(|_, p| {
                    p.error != Some(stream_id) && p.data.map(|d| d.0) != Some(stream_id)
                });
            }
            // The server's pings are even; a client's ping is answered with itself
            // (spdystream `handlePingFrame`).
            Frame::Ping { id } if id % 2 == 1 => self.send(Frame::Ping { id }).await,
            Frame::GoAway { .. } => return false,
            // No flow control in spdystream; no pushed streams from a client.
            Frame::Ping { .. }
            | Frame::Settings { .. }
            | Frame::WindowUpdate { .. }
            | Frame::Headers { .. }
            | Frame::SynReply { .. } => {}
        }
        true
    }

    async fn new_stream(&mut self, stream_id: u32, headers: &Headers) {
        self.last_stream = self.last_stream.max(stream_id);
        let request = match stream_request(stream_id, headers) {
            Ok(r) => r,
            Err(message) => {
                // spdy `connection.newSpdyStream`: a rejected stream is reset.
                tracing::debug!("port-forward stream {stream_id} rejected: {message}");
                self.send(Frame::RstStream {
                    stream_id,
                    status: rst::CANCEL,
                })
                .await;
                return;
            }
        };
        self.send(Frame::SynReply {
            stream_id,
            fin: false,
            headers: Vec::new(),
        })
        .await;
        let pair = self.pending.entry(request.request_id.clone()).or_default();
        let duplicate = if request.data {
            pair.data.replace((stream_id, request.port)).is_some()
        } else {
            pair.error.replace(stream_id).is_some()
        };
        if duplicate {
            // httpstream.go `httpStreamPair.add` and `printError`.
            let kind = if request.data { "data" } else { "error" };
            if let Some(error) = pair.error {
                let message = format!(
                    "error processing stream for request {}: {kind} stream already assigned",
                    request.request_id
                );
                self.send(Frame::Data {
                    stream_id: error,
                    fin: false,
                    data: message.into_bytes(),
                })
                .await;
            }
            return;
        }
        let (Some(error), Some((data, port))) = (pair.error, pair.data) else {
            return;
        };
        self.pending.remove(&request.request_id);
        self.start(error, data, port);
    }

    /// Splices data stream `data` to the pod's port.
    fn start(&mut self, error: u32, data: u32, port: u16) {
        let (ours, theirs) = tokio::io::duplex(pod_ports::CONNECTION_BUFFER);
        let target = PortTarget::new(&self.pod, &self.namespace, &self.name, port);
        tokio::spawn(pod_ports::serve_connection(target, theirs));
        let (from_port, to_port) = tokio::io::split(ours);
        let resets = Arc::new(Resets::default());
        let pump = tokio::spawn(pump(
            from_port,
            data,
            error,
            self.frames.clone(),
            resets.clone(),
        ));
        self.error_streams.insert(error, resets.clone());
        self.forwarding.insert(
            data,
            Forwarding {
                to_port: Some(to_port),
                resets,
                pump,
            },
        );
    }

    /// Ends the connection: GOAWAY naming the last stream accepted (spdystream
    /// `Connection.Close`), every forwarded connection dropped.
    async fn end(self) {
        for forwarding in self.forwarding.values() {
            forwarding.pump.abort();
        }
        self.send(Frame::GoAway {
            last_good_stream_id: self.last_stream,
            status: 0,
        })
        .await;
    }
}

/// Sends what the port writes on the data stream; when the port closes, closes the error
/// stream and then the data stream, as kubelet's `portForward` does with its deferred
/// `Close`s (a reset stream gets nothing more).
async fn pump(
    mut from_port: ReadHalf<tokio::io::DuplexStream>,
    data: u32,
    error: u32,
    frames: mpsc::Sender<Frame>,
    resets: Arc<Resets>,
) {
    let mut chunk = vec![0u8; DATA_CHUNK];
    loop {
        match from_port.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if resets.data.load(Ordering::SeqCst) {
                    break;
                }
                let frame = Frame::Data {
                    stream_id: data,
                    fin: false,
                    data: chunk[..n].to_vec(),
                };
                if frames.send(frame).await.is_err() {
                    return;
                }
            }
        }
    }
    for (stream_id, reset) in [(error, &resets.error), (data, &resets.data)] {
        if !reset.load(Ordering::SeqCst) {
            let fin = Frame::Data {
                stream_id,
                fin: true,
                data: Vec::new(),
            };
            if frames.send(fin).await.is_err() {
                return;
            }
        }
    }
}

/// The writing side of a SPDY connection: frames sent to the channel are encoded (with this
/// direction's header compression) and written in order; it ends, shutting the connection's
/// write side, when every sender is gone or the connection breaks.
pub(crate) fn frame_writer<W>(mut wr: W) -> (mpsc::Sender<Frame>, JoinHandle<()>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (frames, mut queue) = mpsc::channel::<Frame>(WRITE_QUEUE);
    let writer = tokio::spawn(async move {
        let mut encoder = FrameWriter::default();
        while let Some(frame) = queue.recv().await {
            let Ok(bytes) = encoder.encode(&frame) else {
                break;
            };
            if wr.write_all(&bytes).await.is_err() {
                break;
            }
            if queue.is_empty() && wr.flush().await.is_err() {
                break;
            }
        }
        let _ = wr.shutdown().await;
    });
    (frames, writer)
}

/// Serves a SPDY port-forward connection (after [`spdy_handshake`]'s 101) for `pod` until
/// the client closes it, sends GOAWAY, breaks the protocol, or the sandbox shuts down.
pub async fn serve_spdy<IO>(
    io: IO,
    pod: Value,
    namespace: String,
    name: String,
    shutdown: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut rd, wr) = tokio::io::split(io);
    let (frames, writer) = frame_writer(wr);
    let mut session = Session {
        pod,
        namespace,
        name,
        frames,
        pending: HashMap::new(),
        forwarding: HashMap::new(),
        error_streams: HashMap::new(),
        last_stream: 0,
    };
    let mut decoder = FrameReader::default();
    let mut buf = Vec::with_capacity(DATA_CHUNK);
    let mut chunk = vec![0u8; DATA_CHUNK];
    'connection: loop {
        loop {
            match decoder.next_frame(&mut buf) {
                Ok(Some(frame)) => {
                    if !session.handle(frame).await {
                        break 'connection;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!("port-forward SPDY connection ends: {e}");
                    break 'connection;
                }
            }
        }
        let read = tokio::select! {
            _ = shutdown.cancelled() => break,
            read = rd.read(&mut chunk) => read,
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    session.end().await;
    let _ = writer.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    fn h(pairs: &[(&str, &str)]) -> Headers {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// Request headers, and the status and message of their refusal.
    type RefusalCase<'a> = (&'a [(&'a str, &'a str)], StatusCode, &'a str);

    #[test]
    fn spdy_upgrades_are_negotiated_as_kubelet_does() {
        let upgrade = [("connection", "Upgrade"), ("upgrade", "SPDY/3.1")];
        let ok = spdy_handshake(&headers(&[
            upgrade[0],
            upgrade[1],
            ("x-stream-protocol-version", "portforward.k8s.io"),
        ]))
        .unwrap();
        assert_eq!(ok.status(), StatusCode::SWITCHING_PROTOCOLS);
        assert_eq!(ok.headers()[PROTOCOL_HEADER], PROTOCOL);
        assert_eq!(ok.headers()["upgrade"], "SPDY/3.1");
        let cases: [RefusalCase; 4] = [
            (
                &upgrade,
                StatusCode::BAD_REQUEST,
                "header X-Stream-Protocol-Version does not exist in request with 2 headers",
            ),
            (
                &[
                    upgrade[0],
                    upgrade[1],
                    ("x-stream-protocol-version", "channel.k8s.io"),
                ],
                StatusCode::FORBIDDEN,
                "client supports [channel.k8s.io], server accepts [portforward.k8s.io]",
            ),
            (
                &[("x-stream-protocol-version", " , ")],
                StatusCode::BAD_REQUEST,
                "no valid protocols",
            ),
            (
                &[("x-stream-protocol-version", "portforward.k8s.io")],
                StatusCode::BAD_REQUEST,
                "missing upgrade headers in request",
            ),
        ];
        for (request, code, message) in cases {
            let refusal = spdy_handshake(&headers(request)).unwrap_err();
            assert_eq!(refusal.code, code, "{request:?}");
            assert!(refusal.message.contains(message), "{}", refusal.message);
        }
        assert!(is_spdy_request(&headers(&upgrade)));
        assert!(!is_spdy_request(&headers(&[("upgrade", "websocket")])));
    }

    #[test]
    fn tunnels_are_recognised_and_turned_into_spdy_requests() {
        let ws = |protocols: &str| {
            headers(&[
                ("upgrade", "websocket"),
                ("sec-websocket-protocol", protocols),
            ])
        };
        let cases = [
            (
                ws("SPDY/3.1+portforward.k8s.io"),
                Some(vec!["portforward.k8s.io"]),
            ),
            (
                ws("v4.channel.k8s.io, SPDY/3.1+portforward.k8s.io"),
                Some(vec!["portforward.k8s.io"]),
            ),
            (ws("SPDY/3.1+other.example"), Some(vec![])),
            (ws("v4.channel.k8s.io"), None),
            (
                headers(&[("sec-websocket-protocol", "SPDY/3.1+portforward.k8s.io")]),
                None,
            ),
        ];
        for (request, want) in cases {
            let want = want.map(|w| w.into_iter().map(str::to_string).collect::<Vec<_>>());
            assert_eq!(tunnelled_protocols(&request), want, "{request:?}");
        }
        assert_eq!(
            kubelet_upgrade_headers(&["portforward.k8s.io".into()]),
            vec![
                ("connection", "Upgrade".to_string()),
                ("upgrade", "SPDY/3.1".to_string()),
                (
                    "x-stream-protocol-version",
                    "portforward.k8s.io".to_string()
                ),
            ]
        );
        let answer = |pairs: &[(&str, &str)]| tunnel_protocol_of(&headers(pairs));
        assert_eq!(
            answer(&[
                ("connection", "Upgrade"),
                ("upgrade", "SPDY/3.1"),
                ("x-stream-protocol-version", "portforward.k8s.io"),
            ]),
            Ok(Some(TUNNEL_PROTOCOL.to_string()))
        );
        assert_eq!(
            answer(&[("connection", "Upgrade"), ("upgrade", "SPDY/3.1")]),
            Ok(None)
        );
        assert!(answer(&[("connection", "Upgrade"), ("upgrade", "websocket")]).is_err());
    }

    #[test]
    fn stream_headers_are_checked_and_paired() {
        let ok = |port, data, id: &str| {
            Ok(StreamRequest {
                port,
                data,
                request_id: id.into(),
            })
        };
        let cases = [
            (
                1,
                h(&[("port", "80"), ("streamtype", "error"), ("requestid", "0")]),
                ok(80, false, "0"),
            ),
            (
                3,
                h(&[("port", "80"), ("streamtype", "data"), ("requestid", "0")]),
                ok(80, true, "0"),
            ),
            // Old clients without requestID: error n pairs with data n + 2.
            (
                5,
                h(&[("port", "80"), ("streamtype", "error")]),
                ok(80, false, "5"),
            ),
            (
                7,
                h(&[("port", "80"), ("streamtype", "data")]),
                ok(80, true, "5"),
            ),
            (
                1,
                h(&[("streamtype", "data")]),
                Err("\"port\" header is required".into()),
            ),
            (
                1,
                h(&[("port", "0"), ("streamtype", "data")]),
                Err("port \"0\" must be > 0".into()),
            ),
            (
                1,
                h(&[("port", "http"), ("streamtype", "data")]),
                Err("unable to parse \"http\" as a port: invalid digit found in string".into()),
            ),
            (
                1,
                h(&[("port", "80")]),
                Err("\"streamType\" header is required".into()),
            ),
            (
                1,
                h(&[("port", "80"), ("streamtype", "both")]),
                Err("invalid stream type \"both\"".into()),
            ),
        ];
        for (id, headers, want) in cases {
            assert_eq!(stream_request(id, &headers), want, "{headers:?}");
        }
    }

    /// The client's end of a SPDY connection in memory.
    struct Client {
        io: tokio::io::DuplexStream,
        writer: FrameWriter,
        reader: FrameReader,
        buf: Vec<u8>,
    }

    impl Client {
        async fn send(&mut self, frame: Frame) {
            let bytes = self.writer.encode(&frame).unwrap();
            self.io.write_all(&bytes).await.unwrap();
        }

        /// The next frame from the server; `None` when it closed the connection.
        async fn next(&mut self) -> Option<Frame> {
            loop {
                if let Some(frame) = self.reader.next_frame(&mut self.buf).unwrap() {
                    return Some(frame);
                }
                let mut chunk = [0u8; 4096];
                let n = tokio::time::timeout(
                    std::time::Duration::from_secs(10),
                    self.io.read(&mut chunk),
                )
                .await
                .expect("the server answers within 10 s")
                .unwrap();
                if n == 0 {
                    return None;
                }
                self.buf.extend_from_slice(&chunk[..n]);
            }
        }

        async fn open(&mut self, stream_id: u32, kind: &str, port: &str, request: &str) {
            self.send(Frame::SynStream {
                stream_id,
                associated_to: 0,
                priority: 0,
                fin: false,
                unidirectional: false,
                headers: h(&[("streamtype", kind), ("port", port), ("requestid", request)]),
            })
            .await;
        }

        async fn data(&mut self, stream_id: u32, fin: bool, data: &[u8]) {
            self.send(Frame::Data {
                stream_id,
                fin,
                data: data.to_vec(),
            })
            .await;
        }

        /// What arrives on data stream `data` until its FIN, checking that error stream
        /// `error` is closed empty first.
        async fn until_closed(&mut self, error: u32, data: u32) -> Vec<u8> {
            let (mut received, mut error_closed) = (Vec::new(), false);
            loop {
                match self.next().await {
                    Some(Frame::Data {
                        stream_id,
                        fin,
                        data: bytes,
                    }) if stream_id == data => {
                        received.extend(bytes);
                        if fin {
                            assert!(error_closed, "the error stream closes first");
                            return received;
                        }
                    }
                    Some(Frame::Data {
                        stream_id,
                        fin: true,
                        data: bytes,
                    }) if stream_id == error => {
                        assert!(bytes.is_empty(), "{}", String::from_utf8_lossy(&bytes));
                        error_closed = true;
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
    }

    #[tokio::test]
    async fn a_spdy_session_pairs_streams_and_closes_them_as_kubelet_does() {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let pod = serde_json::json!({"spec": {"containers": [
            {"name": "web", "ports": [{"name": "http", "containerPort": 8080}]}
        ]}});
        tokio::spawn(serve_spdy(
            server,
            pod,
            "ns".into(),
            "p".into(),
            CancellationToken::new(),
        ));
        let mut client = Client {
            io: client,
            writer: FrameWriter::default(),
            reader: FrameReader::default(),
            buf: Vec::new(),
        };
        let reply = |stream_id| {
            Some(Frame::SynReply {
                stream_id,
                fin: false,
                headers: vec![],
            })
        };

        // kubectl's order: the error stream, half-closed at once, then the data stream.
        client.open(1, "error", "9000", "0").await;
        assert_eq!(client.next().await, reply(1));
        client.data(1, true, b"").await;
        client.open(3, "data", "9000", "0").await;
        assert_eq!(client.next().await, reply(3));
        client.data(3, false, b"ping").await;
        client.data(3, true, b"").await;
        assert_eq!(client.until_closed(1, 3).await, b"ping");

        // A client's ping comes back; a stream naming no valid port is reset.
        client.send(Frame::Ping { id: 7 }).await;
        assert_eq!(client.next().await, Some(Frame::Ping { id: 7 }));
        client.open(5, "data", "0", "9").await;
        assert_eq!(
            client.next().await,
            Some(Frame::RstStream {
                stream_id: 5,
                status: rst::CANCEL
            })
        );

        // A second connection, to the HTTP port.
        client.open(7, "error", "8080", "1").await;
        assert_eq!(client.next().await, reply(7));
        client.open(9, "data", "8080", "1").await;
        assert_eq!(client.next().await, reply(9));
        client
            .data(
                9,
                false,
                b"GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
            )
            .await;
        let answer = String::from_utf8(client.until_closed(7, 9).await).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(answer.contains("\"path\":\"/x\""), "{answer}");
        assert!(answer.contains("\"port\":8080"), "{answer}");

        // A connection whose data stream the client resets: the port sees its end, and only
        // the error stream is closed.
        client.open(11, "error", "9000", "2").await;
        assert_eq!(client.next().await, reply(11));
        client.open(13, "data", "9000", "2").await;
        assert_eq!(client.next().await, reply(13));
        client.data(13, false, b"x").await;
        assert_eq!(
            client.next().await,
            Some(Frame::Data {
                stream_id: 13,
                fin: false,
                data: b"x".to_vec()
            })
        );
        client
            .send(Frame::RstStream {
                stream_id: 13,
                status: rst::CANCEL,
            })
            .await;
        assert_eq!(
            client.next().await,
            Some(Frame::Data {
                stream_id: 11,
                fin: true,
                data: vec![]
            })
        );

        // GOAWAY from the client ends the connection with the server's GOAWAY.
        client
            .send(Frame::GoAway {
                last_good_stream_id: 0,
                status: 0,
            })
            .await;
        assert_eq!(
            client.next().await,
            Some(Frame::GoAway {
                last_good_stream_id: 13,
                status: 0
            })
        );
        assert_eq!(client.next().await, None);
    }
}
