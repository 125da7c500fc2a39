//! The native Kubernetes proxy into instances:
//! `/apis/kairship.io/v1alpha1/instances/{instance}/proxy/{any Kubernetes path}`.
//!
//! The kubeconfig Kairship issues for an instance points at
//! `https://{host}/apis/kairship.io/v1alpha1/instances/{instance}/proxy`, so kubectl and
//! client libraries work through it unchanged. Every request is authenticated (bearer token)
//! and authorized on `kairship.io/instances/proxy` for the instance (the subresource the
//! per-instance roles grant for objects inside it) — reads as `get`/`list`/`watch`, writes as
//! `create`/`update`/`patch`/`delete` — before anything is read or forwarded.
//!
//! Then, by the pure [`plan`]:
//! - GETs of collections and objects in plain JSON are answered by the router's read side
//!   ([`ReadWriteRouter`]): lists honour `labelSelector`, `fieldSelector`, `limit` and
//!   `continue` and answer a real `…List` with `metadata.resourceVersion`; `?watch=true`
//!   streams newline-delimited `{"type","object"}` events as kube-apiserver does;
//! - everything else — writes (any patch content type), subresources, tables, reads pinned to
//!   a resourceVersion, discovery (`/api`, `/apis`, `/version`, `/openapi/*`) and unknown
//!   paths — is forwarded verbatim to the instance apiserver with the instance's client, and
//!   successful writes are reported to the router ([`ReadWriteRouter::observe_write`]) so that
//!   the caller reads its own writes.
//!
//! Connection upgrades (`exec`, `attach`, `portforward` over WebSocket or SPDY, at the instance
//! or at a member pod through Karmada's cluster proxy) are authorized as `create` and spliced
//! through ([`upgrade`]); logs (`?follow=true`) stream through as they are written.

mod compress;
mod handler;
mod path;
mod request;
mod serving;
mod status;
pub mod upgrade;
mod upstream;

use std::sync::Arc;

use axum::Router;
use axum::routing::any;

pub use crate::router::{DiscoveredResource, DiscoveryCache, resources_of};
pub use compress::{
    CompressedLists, GZIP_THRESHOLD_BYTES, ListKey, accepts_gzip, compress_response, gzip,
    gzip_large_answers, gzip_stream,
};
pub use handler::{bearer_token, kube_path_of};
pub use path::{KubePath, ResourcePath, parse_kube_path};
pub use request::{Handling, ReadParams, accepts_plain_json, plan, verb_of};
pub use serving::{
    HTTP2_CONNECTION_WINDOW_BYTES, HTTP2_MAX_FRAME_BYTES, HTTP2_SEND_BUFFER_BYTES,
    HTTP2_STREAM_WINDOW_BYTES, connection_builder,
};
pub use status::{reason_of, status_json};
pub use upstream::acts_as_caller;

use crate::access::{Authenticator, Authorizer, WriteIdentity};
use crate::router::{InstanceClients, ReadWriteRouter};

/// Where the proxy is mounted, before `/{instance}/proxy`.
pub const INSTANCES_PATH: &str = "/apis/kairship.io/v1alpha1/instances";

/// The largest request body forwarded by default (kube-apiserver refuses bigger ones too).
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// What the proxy needs: the router for reads (and to learn about writes), clients of the
/// instance apiservers for forwarding and discovery, and access control.
#[derive(Clone)]
pub struct ProxyState {
    router: Arc<dyn ReadWriteRouter>,
    clients: Arc<dyn InstanceClients>,
    authenticator: Arc<dyn Authenticator>,
    authorizer: Arc<dyn Authorizer>,
    discovery: Arc<DiscoveryCache>,
    max_body_bytes: usize,
    write_identity: WriteIdentity,
    /// Whole lists compressed once per resourceVersion.
    compressed: Arc<CompressedLists>,
    /// Where writes are recorded.
    audit: Arc<dyn crate::audit::AuditSink>,
}

impl std::fmt::Debug for ProxyState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyState")
            .field("max_body_bytes", &self.max_body_bytes)
            .finish_non_exhaustive()
    }
}

impl ProxyState {
    /// A proxy reading through `router`, forwarding with `clients`, checking callers with
    /// `authenticator` and `authorizer`.
    pub fn new(
        router: Arc<dyn ReadWriteRouter>,
        clients: Arc<dyn InstanceClients>,
        authenticator: Arc<dyn Authenticator>,
        authorizer: Arc<dyn Authorizer>,
    ) -> Self {
        ProxyState {
            router,
            clients,
            authenticator,
            authorizer,
            discovery: Arc::new(DiscoveryCache::default()),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            write_identity: WriteIdentity::default(),
            compressed: Arc::new(CompressedLists::default()),
            audit: Arc::new(crate::audit::NoAudit),
        }
    }

    /// Records every write through the proxy in `sink` (reads are never recorded).
    pub fn with_audit(mut self, sink: Arc<dyn crate::audit::AuditSink>) -> Self {
        self.audit = sink;
        self
    }

    /// Uses `discovery` (e.g. shorter lifetimes) instead of the default.
    pub fn with_discovery(mut self, discovery: DiscoveryCache) -> Self {
        self.discovery = Arc::new(discovery);
        self
    }

    /// Forwarded writes carry `identity` (the caller, impersonated, or the instance's own).
    pub fn with_write_identity(mut self, identity: WriteIdentity) -> Self {
        self.write_identity = identity;
        self
    }

    /// Uses `discovery`, shared with others (the API service), instead of the default.
    pub fn with_shared_discovery(mut self, discovery: Arc<DiscoveryCache>) -> Self {
        self.discovery = discovery;
        self
    }

    /// Refuses request bodies larger than `bytes`.
    pub fn with_max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// The discovery cache (to forget an instance whose apiserver changed).
    pub fn discovery(&self) -> &DiscoveryCache {
        &self.discovery
    }
}

/// The proxy's routes: `{INSTANCES_PATH}/{instance}/proxy` and everything below it, any method.
pub fn proxy_routes(state: ProxyState) -> Router {
    Router::new()
        .route(
            &format!("{INSTANCES_PATH}/{{instance}}/proxy"),
            any(handler::handle),
        )
        .route(
            &format!("{INSTANCES_PATH}/{{instance}}/proxy/{{*path}}"),
            any(handler::handle),
        )
        .with_state(state)
}
