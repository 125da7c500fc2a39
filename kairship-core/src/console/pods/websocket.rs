//! The console's WebSocket endpoints: the handshake (RFC 6455) and its guard. An upgrade is
//! accepted only from a page of this origin (an `Origin` naming this host, and no
//! cross-site `Sec-Fetch-Site`), in a valid session, carrying the session's CSRF token in the
//! `csrf` query parameter (a browser cannot set headers on a WebSocket). Anything else is
//! answered 401/403 before the connection is upgraded.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::Role;

use crate::console::request::{Console, SignedIn, signed_in};
use crate::console::session::secrets_equal;

/// A browser's WebSocket, once upgraded.
pub(super) type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// An accepted upgrade: who asked, the 101 answer to return, and the connection it becomes.
pub(super) struct Accepted {
    pub(super) signed: SignedIn,
    pub(super) response: Response,
    pub(super) on_upgrade: OnUpgrade,
}

/// The WebSocket, once the 101 has been sent (`None` when the client went away).
async fn socket(on_upgrade: OnUpgrade) -> Option<Socket> {
    let upgraded = on_upgrade.await.ok()?;
    Some(WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await)
}

/// Closes `socket` with `reason` (1000 when `normal`, else 1011), after an optional last
/// text message.
pub(super) async fn close(socket: &mut Socket, last: Option<String>, normal: bool) {
    use futures::SinkExt as _;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::protocol::CloseFrame;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    if let Some(text) = last {
        let _ = socket.send(Message::text(text)).await;
    }
    let code = if normal {
        CloseCode::Normal
    } else {
        CloseCode::Error
    };
    let _ = socket
        .close(Some(CloseFrame {
            code,
            reason: "".into(),
        }))
        .await;
}

/// Answers the upgrade `accepted` with its 101 and, once the connection is a WebSocket, runs
/// `serve` on it as the signed-in caller (nothing runs when the client went away first).
pub(super) fn upgrade<F, Fut>(accepted: Accepted, serve: F) -> Response
where
    F: FnOnce(SignedIn, Socket) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let Accepted {
        signed,
        response,
        on_upgrade,
    } = accepted;
    tokio::spawn(async move {
        if let Some(socket) = socket(on_upgrade).await {
            serve(signed, socket).await;
        }
    });
    response
}

/// Closes `socket` after telling the page why the API refused the stream (its code and
/// message).
pub(super) async fn close_refused(socket: &mut Socket, err: &crate::api::ApiError) {
    close(
        socket,
        Some(format!("{:?}: {}", err.code, err.message)),
        false,
    )
    .await;
}

/// Whether the upgrade comes from a page of this origin: an `Origin` header is required (every
/// browser sends one on a WebSocket) and must name the `Host`; a `Sec-Fetch-Site` other than
/// `same-origin` is refused too.
pub fn origin_allowed(headers: &HeaderMap) -> bool {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && site != "same-origin"
    {
        return false;
    }
    match (text(header::ORIGIN), text(header::HOST)) {
        (Some(origin), Some(host)) => {
            origin.split_once("://").is_some_and(|(scheme, authority)| {
                matches!(scheme, "http" | "https") && authority.eq_ignore_ascii_case(host)
            })
        }
        _ => false,
    }
}

/// The `Sec-WebSocket-Accept` of a valid WebSocket handshake request; the refusal otherwise.
pub fn handshake_accept(headers: &HeaderMap) -> Result<String, &'static str> {
    let has_token = |name: header::HeaderName, token: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    if !has_token(header::UPGRADE, "websocket") || !has_token(header::CONNECTION, "upgrade") {
        return Err("a WebSocket upgrade is required");
    }
    if headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .and_then(|v| v.to_str().ok())
        != Some("13")
    {
        return Err("WebSocket version 13 is required");
    }
    let key = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .ok_or("Sec-WebSocket-Key is missing")?;
    Ok(tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes()))
}

fn refuse(code: StatusCode, message: &'static str) -> Response {
    let mut response = (code, message).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Checks the upgrade request (origin first, then the handshake, the session and its CSRF
/// token in `query`) and prepares the 101 answer.
pub(super) async fn accept(
    console: &Console,
    query: &HashMap<String, String>,
    request: &mut Request,
) -> Result<Accepted, Response> {
    let headers = request.headers();
    if !origin_allowed(headers) {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "cross-origin WebSocket refused",
        ));
    }
    let accept_key = handshake_accept(headers).map_err(|m| refuse(StatusCode::BAD_REQUEST, m))?;
    let signed = match signed_in(console, headers).await {
        Ok(signed) => signed,
        Err(answer) if answer.status() == StatusCode::SERVICE_UNAVAILABLE => return Err(answer),
        Err(_) => return Err(refuse(StatusCode::UNAUTHORIZED, "sign in first")),
    };
    match query.get("csrf") {
        Some(token) if secrets_equal(token, &signed.session.csrf) => {}
        Some(_) => return Err(refuse(StatusCode::FORBIDDEN, "wrong CSRF token")),
        None => return Err(refuse(StatusCode::FORBIDDEN, "missing CSRF token")),
    }
    let on_upgrade = hyper::upgrade::on(&mut *request);
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = response.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(value) = HeaderValue::from_str(&accept_key) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, value);
    }
    Ok(Accepted {
        signed,
        response,
        on_upgrade,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn only_this_origin_may_open_a_socket() {
        let host = ("host", "127.0.0.1:8443");
        for (h, want) in [
            (headers(&[host, ("origin", "http://127.0.0.1:8443")]), true),
            (headers(&[host, ("origin", "https://127.0.0.1:8443")]), true),
            (headers(&[host, ("origin", "http://evil.example")]), false),
            (headers(&[host, ("origin", "null")]), false),
            (headers(&[host]), false),
            (
                headers(&[
                    host,
                    ("origin", "http://127.0.0.1:8443"),
                    ("sec-fetch-site", "cross-site"),
                ]),
                false,
            ),
            (
                headers(&[
                    host,
                    ("origin", "http://evil.example"),
                    ("sec-fetch-site", "same-origin"),
                ]),
                false,
            ),
            (
                headers(&[
                    host,
                    ("origin", "http://127.0.0.1:8443"),
                    ("sec-fetch-site", "same-origin"),
                ]),
                true,
            ),
        ] {
            assert_eq!(origin_allowed(&h), want, "{h:?}");
        }
    }

    #[test]
    fn handshakes_need_the_upgrade_the_version_and_a_key() {
        let ok = headers(&[
            ("upgrade", "websocket"),
            ("connection", "keep-alive, Upgrade"),
            ("sec-websocket-version", "13"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ]);
        // RFC 6455's example.
        assert_eq!(
            handshake_accept(&ok).as_deref(),
            Ok("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        );
        for (h, want) in [
            (headers(&[]), "a WebSocket upgrade is required"),
            (
                headers(&[("upgrade", "websocket"), ("connection", "upgrade")]),
                "WebSocket version 13 is required",
            ),
            (
                headers(&[
                    ("upgrade", "websocket"),
                    ("connection", "upgrade"),
                    ("sec-websocket-version", "13"),
                ]),
                "Sec-WebSocket-Key is missing",
            ),
        ] {
            assert_eq!(handshake_accept(&h), Err(want), "{h:?}");
        }
    }
}
