//! Handlers of a resource's `proxy` subresource, registered by the embedder through
//! [`ClusterOptions::proxy_handlers`](crate::ClusterOptions::proxy_handlers). kube-apiserver
//! serves `{resource}/{name}/proxy/{path}` for built-in kinds (nodes, services, pods) and
//! aggregated API servers serve it for their own (Karmada's `clusters/proxy`); the sandbox
//! leaves what a proxy does to the embedder and keeps the API server's part: authentication,
//! impersonation and the authorization of the `proxy` subresource with the verb of the HTTP
//! method, as for any other request.
//!
//! The types are generic over the cluster state `S` they hand to the handler, so that this
//! file does not depend on the state that holds the handlers (the crate root names them with
//! `S = ClusterState`).

use crate::apiserver::auth::UserInfo;
use crate::apiserver::error::ApiError;
use crate::apiserver::resources::GroupResource;
use axum::extract::Request;
use axum::response::Response;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// One request for `{resource}/{name}/proxy/{path}`, authorized.
pub struct ProxyRequest<S> {
    /// The cluster serving the request (its store holds what the handler reads).
    pub state: Arc<S>,
    /// Who the request acts as (after impersonation).
    pub user: UserInfo,
    /// The object named in the URL.
    pub name: String,
    /// The path after `proxy`, with its leading `/` (`/` when there is none).
    pub path: String,
    /// The request itself (method, query, headers, body).
    pub request: Request,
}

/// What a handler returns.
pub type ProxyFuture = Pin<Box<dyn Future<Output = Result<Response, ApiError>> + Send>>;

/// A handler of a `proxy` subresource.
pub trait ProxyHandler<S>: Send + Sync {
    /// Answers one request.
    fn serve(&self, request: ProxyRequest<S>) -> ProxyFuture;
}

impl<S, F> ProxyHandler<S> for F
where
    F: Fn(ProxyRequest<S>) -> ProxyFuture + Send + Sync,
{
    fn serve(&self, request: ProxyRequest<S>) -> ProxyFuture {
        self(request)
    }
}

/// The proxy handlers of a cluster, by group and resource.
pub struct ProxyHandlers<S>(Vec<(GroupResource, Arc<dyn ProxyHandler<S>>)>);

impl<S> Default for ProxyHandlers<S> {
    fn default() -> Self {
        ProxyHandlers(Vec::new())
    }
}

impl<S> Clone for ProxyHandlers<S> {
    fn clone(&self) -> Self {
        ProxyHandlers(self.0.clone())
    }
}

impl<S> std::fmt::Debug for ProxyHandlers<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(gr, _)| gr))
            .finish()
    }
}

impl<S> ProxyHandlers<S> {
    /// Adds (or replaces) the handler of `{plural}/proxy` in `group` (empty for core).
    #[must_use]
    pub fn with(mut self, group: &str, plural: &str, handler: Arc<dyn ProxyHandler<S>>) -> Self {
        let key = GroupResource::new(group, plural);
        self.0.retain(|(gr, _)| *gr != key);
        self.0.push((key, handler));
        self
    }

    /// The handler of `{plural}/proxy` in `group`, if one is registered.
    pub fn find(&self, group: &str, plural: &str) -> Option<Arc<dyn ProxyHandler<S>>> {
        let key = GroupResource::new(group, plural);
        self.0
            .iter()
            .find(|(gr, _)| *gr == key)
            .map(|(_, h)| h.clone())
    }
}

/// The verb a proxy request is authorized for, as kube-apiserver maps connect requests.
pub fn verb(method: &http::Method) -> &'static str {
    match method.as_str() {
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        _ => "get",
    }
}

/// The path after `/{name}/proxy` in a request path (`/` when nothing follows).
pub fn proxied_path(path: &str, name: &str) -> String {
    let marker = format!("/{name}/proxy");
    match path.find(&marker) {
        Some(at) => {
            let rest = &path[at + marker.len()..];
            if rest.is_empty() {
                "/".to_owned()
            } else {
                rest.to_owned()
            }
        }
        None => "/".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxied_path_follows_the_name() {
        let cases = [
            (
                "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/pods",
                "m1",
                "/api/v1/pods",
            ),
            ("/apis/g/v1/clusters/m1/proxy", "m1", "/"),
            ("/apis/g/v1/clusters/m1/proxy/", "m1", "/"),
        ];
        for (path, name, want) in cases {
            assert_eq!(proxied_path(path, name), want, "{path}");
        }
    }

    #[test]
    fn methods_map_to_connect_verbs() {
        assert_eq!(verb(&http::Method::GET), "get");
        assert_eq!(verb(&http::Method::POST), "create");
        assert_eq!(verb(&http::Method::PUT), "update");
        assert_eq!(verb(&http::Method::PATCH), "patch");
        assert_eq!(verb(&http::Method::DELETE), "delete");
    }
}
