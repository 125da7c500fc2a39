//! Connection upgrades through the proxy: `exec`, `attach` and `portforward` of pods, over
//! WebSocket (`v5.channel.k8s.io`, `v4.channel.k8s.io`, ..., what kubectl 1.30 and later try
//! first) or SPDY (`SPDY/3.1`, their fallback), directly at the instance or at a member pod
//! through Karmada's cluster proxy (`clusters/{name}/proxy/api/v1/.../pods/{pod}/exec`).
//!
//! As kube-apiserver's `UpgradeAwareHandler` (k8s.io/apimachinery `pkg/util/proxy/upgradeaware.go`,
//! `tryUpgrade`) does: the request goes on with its `Connection`/`Upgrade`/`Sec-WebSocket-*`/
//! `X-Stream-Protocol-Version` headers, the backend's answer comes back, and when it is
//! `101 Switching Protocols` both connections are spliced byte for byte, so every protocol
//! version passes unchanged. Any other answer (a refusal, a 400 for an unsupported protocol)
//! is returned as it is, so that kubectl falls back or reports it.
//!
//! An upgrade to `exec`, `attach` or `portforward` is authorized as `create` whatever its
//! method (kubectl's WebSocket exec is a GET), as kube-apiserver does since
//! `AuthorizePodWebsocketUpgradeCreatePermission`; it acts as the caller (impersonated) when
//! writes do, and always through Karmada's cluster proxy.

use std::future::Future;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{HeaderMap, HeaderName, Method, StatusCode, header};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;

use super::ProxyState;
use super::path::ResourcePath;
use super::status::{router_error_response, status_response};
use super::upstream::{
    HOP_BY_HOP, acts_as_caller, connect, forwarded_request_header, is_member_proxy,
};
use crate::access::{Caller, Verb, impersonation_headers};
use crate::router::identity_lost;

/// The request headers an upgrade needs on its way (hop-by-hop ones included).
pub const UPGRADE_HEADERS: [&str; 7] = [
    "connection",
    "upgrade",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-protocol",
    "sec-websocket-extensions",
    "x-stream-protocol-version",
];

/// The pod subresources that stream over an upgraded connection.
pub const STREAMING_SUBRESOURCES: [&str; 3] = ["exec", "attach", "portforward"];

/// Whether a request asks to upgrade its connection: `Connection: Upgrade` (among other
/// tokens) and an `Upgrade` header.
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    let asks = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"));
    asks && headers.contains_key(header::UPGRADE)
}

/// The pod subresource a Kubernetes path addresses (`log`, `exec`, `attach`, `portforward`),
/// at the instance or at a member through Karmada's cluster proxy; `None` for anything else.
pub fn pod_subresource(kube_path: &str) -> Option<&str> {
    let path = kube_path.trim_end_matches('/');
    // Through the cluster proxy, the member's own path follows `clusters/{name}/proxy`.
    let path = match path.strip_prefix("/apis/cluster.karmada.io/") {
        Some(rest) => {
            let (_, member) = rest.split_once("/proxy/")?;
            member
        }
        None => path.trim_start_matches('/'),
    };
    match path.split('/').collect::<Vec<_>>().as_slice() {
        ["api", "v1", "namespaces", ns, "pods", pod, sub] if !ns.is_empty() && !pod.is_empty() => {
            Some(sub)
        }
        _ => None,
    }
}

/// The verb a request is authorized as: an upgrade to `exec`, `attach` or `portforward` is a
/// `create`, whatever its method; everything else keeps `verb`.
pub fn verb_with_upgrade(verb: Verb, kube_path: &str, headers: &HeaderMap) -> Verb {
    let streams = pod_subresource(kube_path).is_some_and(|s| STREAMING_SUBRESOURCES.contains(&s));
    if streams && (is_upgrade(headers) || verb.is_write()) {
        Verb::Create
    } else {
        verb
    }
}

/// Splices two upgraded connections until either side ends or `stop` completes.
pub async fn splice(client: OnUpgrade, backend: OnUpgrade, stop: impl Future<Output = ()>) {
    let (Ok(client), Ok(backend)) = tokio::join!(client, backend) else {
        return;
    };
    let mut client = TokioIo::new(client);
    let mut backend = TokioIo::new(backend);
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut backend) => {}
        () = stop => {}
    }
    // The client gets an orderly end even when the backend just hung up.
    let _ = tokio::io::AsyncWriteExt::shutdown(&mut client).await;
}

/// The request headers of an upgrade forwarded to the instance: what any forwarded request
/// carries, and the upgrade's own.
fn upgrade_request_header(name: &HeaderName) -> bool {
    forwarded_request_header(name) || UPGRADE_HEADERS.contains(&name.as_str())
}

/// The answer headers relayed to the client: all but the hop-by-hop ones, except that a 101
/// keeps `Connection` and `Upgrade` (they are what it switches to).
fn relayed_answer_header(name: &HeaderName, switching: bool) -> bool {
    let name = name.as_str();
    !HOP_BY_HOP.contains(&name) || (switching && (name == "connection" || name == "upgrade"))
}

/// Forwards an upgrade request to the instance and, when it switches protocols, splices the
/// two connections for as long as they last (or until the instance's credentials change).
pub(super) async fn forward_upgrade(
    state: &ProxyState,
    instance: &str,
    kube_path: &str,
    resource: Option<&ResourcePath>,
    caller: &Caller,
    mut request: Request,
) -> Response {
    let connection = match connect(state, instance).await {
        Ok(connection) => connection,
        Err(err) => return router_error_response(&err),
    };
    let client_side = hyper::upgrade::on(&mut request);
    let path_and_query = match request.uri().query() {
        Some(q) => format!("{kube_path}?{q}"),
        None => kube_path.to_owned(),
    };
    let mut builder = http::Request::builder()
        .method(request.method().clone())
        .uri(path_and_query);
    for (name, value) in request.headers() {
        if upgrade_request_header(name) {
            builder = builder.header(name, value);
        }
    }
    // An upgrade to a pod stream is a write (`create`).
    if acts_as_caller(&Method::POST, resource, state.write_identity) {
        let caller = if resource.is_some_and(is_member_proxy) {
            Caller {
                uid: None,
                ..caller.clone()
            }
        } else {
            caller.clone()
        };
        for (name, value) in impersonation_headers(&caller) {
            builder = builder.header(name, value);
        }
    }
    let outgoing = match builder.body(kube::client::Body::empty()) {
        Ok(outgoing) => outgoing,
        Err(err) => return status_response(400, &format!("cannot forward the request: {err}")),
    };
    let mut answer = match connection.client.send(outgoing).await {
        Ok(answer) => answer,
        Err(err) => {
            tracing::debug!(instance, error = %err, "upgrading through the instance failed");
            return status_response(
                503,
                &format!("the apiserver of instance {instance} cannot be reached: {err}"),
            );
        }
    };
    let switching = answer.status() == StatusCode::SWITCHING_PROTOCOLS;
    let mut response = Response::new(Body::empty());
    *response.status_mut() = answer.status();
    for (name, value) in answer.headers() {
        if relayed_answer_header(name, switching) {
            response.headers_mut().append(name, value.clone());
        }
    }
    if !switching {
        // A refusal: its body (a Status, or the kubelet's text) as it came.
        *response.body_mut() = Body::new(answer.into_body());
        return response;
    }
    let backend_side = hyper::upgrade::on(&mut answer);
    let lost = identity_lost(&state.clients, instance, &connection.identity);
    tokio::spawn(splice(client_side, backend_side, lost));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn upgrades_are_recognised() {
        for (h, want) in [
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
            (headers(&[]), false),
        ] {
            assert_eq!(is_upgrade(&h), want, "{h:?}");
        }
    }

    #[test]
    fn pod_subresources_directly_and_through_the_cluster_proxy() {
        let member = "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy";
        for (path, want) in [
            ("/api/v1/namespaces/a/pods/p/exec", Some("exec")),
            ("/api/v1/namespaces/a/pods/p/log", Some("log")),
            (
                &format!("{member}/api/v1/namespaces/a/pods/p/exec"),
                Some("exec"),
            ),
            (
                &format!("{member}/api/v1/namespaces/a/pods/p/portforward"),
                Some("portforward"),
            ),
            (&format!("{member}/api/v1/namespaces/a/pods/p"), None),
            (
                &format!("{member}/api/v1/namespaces/a/configmaps/c/exec"),
                None,
            ),
            ("/api/v1/namespaces/a/pods", None),
            ("/apis/apps/v1/namespaces/a/deployments/d/scale", None),
            ("/apis/cluster.karmada.io/v1alpha1/clusters/m1", None),
        ] {
            assert_eq!(pod_subresource(path), want, "{path}");
        }
    }

    #[test]
    fn streams_are_creates_logs_stay_reads() {
        let ws = headers(&[("connection", "Upgrade"), ("upgrade", "websocket")]);
        let plain = HeaderMap::new();
        let member =
            "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/namespaces/a/pods/p";
        for (verb, path, h, want) in [
            (Verb::Get, format!("{member}/exec"), &ws, Verb::Create),
            (Verb::Get, format!("{member}/attach"), &ws, Verb::Create),
            (
                Verb::Get,
                format!("{member}/portforward"),
                &ws,
                Verb::Create,
            ),
            (Verb::Create, format!("{member}/exec"), &plain, Verb::Create),
            (Verb::Get, format!("{member}/log"), &plain, Verb::Get),
            (Verb::Get, format!("{member}/log"), &ws, Verb::Get),
            (
                Verb::Get,
                "/api/v1/namespaces/a/pods/p/exec".to_owned(),
                &ws,
                Verb::Create,
            ),
            (
                Verb::Get,
                "/api/v1/namespaces/a/pods/p".to_owned(),
                &ws,
                Verb::Get,
            ),
            (Verb::Get, format!("{member}/exec"), &plain, Verb::Get),
        ] {
            assert_eq!(verb_with_upgrade(verb, &path, h), want, "{path} {h:?}");
        }
    }

    #[test]
    fn a_switch_keeps_its_upgrade_headers() {
        for (name, switching, want) in [
            ("connection", true, true),
            ("upgrade", true, true),
            ("sec-websocket-accept", true, true),
            ("connection", false, false),
            ("content-type", false, true),
            ("transfer-encoding", true, false),
        ] {
            assert_eq!(
                relayed_answer_header(&HeaderName::from_static(name), switching),
                want,
                "{name} {switching}"
            );
        }
        assert!(upgrade_request_header(&HeaderName::from_static(
            "sec-websocket-key"
        )));
        assert!(upgrade_request_header(&HeaderName::from_static("upgrade")));
        assert!(!upgrade_request_header(&HeaderName::from_static(
            "authorization"
        )));
        assert!(!upgrade_request_header(&HeaderName::from_static(
            "impersonate-user"
        )));
    }
}
