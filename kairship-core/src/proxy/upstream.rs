//! What a forwarded request carries and where it goes: the headers passed on, whose
//! identity it acts as, and the instance connection; shared by plain requests
//! (the handler) and connection upgrades.

use http::{HeaderName, Method};

use super::ProxyState;
use super::path::ResourcePath;
use crate::access::{WriteIdentity, is_impersonation_header};
use crate::router::{InstanceConnection, RouterError};

/// Headers that describe one connection, not the message: never forwarded either way.
pub(super) const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

/// Whether a request header is forwarded to the instance: everything but hop-by-hop headers,
/// the caller's credentials (the instance client presents its own), `Host`, and impersonation
/// headers (a caller must never choose who the instance's credentials act as).
pub(super) fn forwarded_request_header(name: &HeaderName) -> bool {
    let name = name.as_str();
    name != "authorization"
        && name != "host"
        && !HOP_BY_HOP.contains(&name)
        && !is_impersonation_header(name)
}

/// Whether a forwarded request goes out impersonating the caller: writes when the instance is
/// asked to impersonate, and every request through Karmada's cluster proxy
/// (`cluster.karmada.io` `clusters/{name}/proxy`), which impersonates whoever calls it in the
/// member: made as the instance's identity, it would reach the member as that identity.
pub fn acts_as_caller(
    method: &Method,
    resource: Option<&ResourcePath>,
    identity: WriteIdentity,
) -> bool {
    let writes = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    resource.is_some_and(is_member_proxy) || (writes && identity == WriteIdentity::Impersonate)
}

/// Whether `resource` is Karmada's cluster proxy of a member (`clusters/{name}/proxy/...` of
/// `cluster.karmada.io`).
pub(super) fn is_member_proxy(resource: &ResourcePath) -> bool {
    resource.group == "cluster.karmada.io"
        && resource.resource == "clusters"
        && resource.subresource.as_deref() == Some("proxy")
}

/// The client of `instance`, checked now; discovery answers of instances that changed since the
/// last request are dropped.
pub(super) async fn connect(
    state: &ProxyState,
    instance: &str,
) -> Result<InstanceConnection, RouterError> {
    let connected = state.clients.connect(instance).await;
    let generation = *state.clients.changes().borrow();
    state
        .discovery
        .forget_changed(generation, |i| state.clients.current(i));
    if let Err(RouterError::UnknownInstance { .. }) = &connected {
        state.discovery.forget_instance(instance);
    }
    connected
}
