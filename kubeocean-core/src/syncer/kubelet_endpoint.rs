//! Where a virtual node's kubelet endpoint is: the proxier's pod address (followed through
//! its pods) and the port answering there, from the syncer's [`Context`] and the port table of
//! [`super::kubelet_port`].

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use tokio_util::sync::CancellationToken;

use super::config::ProxierEndpoint;
use super::context::Context;
use super::error::SyncError;
use super::kubelet_port::{NodeEndpoint, choose_proxier_address, published_port, stored_port};

/// Where virtual node `name` (stored as `current`, if it exists) is served: with per-node
/// ports, the proxier's address and the node's own port, published once it answers;
/// otherwise the shared endpoint.
pub async fn endpoint_of(
    ctx: &Context,
    name: &str,
    current: Option<&Node>,
) -> Result<NodeEndpoint, SyncError> {
    let mut proxier = ctx.config.proxier.clone();
    if proxier.pods.is_some()
        && let Some(address) = ctx.kubelet_ports.proxier_address()
    {
        proxier.address = Some(address);
    }
    let Some(range) = proxier.node_ports.clone() else {
        return Ok(NodeEndpoint {
            published: proxier.port,
            proxier,
            retry: Duration::ZERO,
        });
    };
    let stored = current.and_then(stored_port);
    let port = ctx
        .kubelet_ports
        .assign(name, stored, &range, || {
            ctx.computing_index()
                .vnodes()
                .iter()
                .map(|node| (node.name_any(), stored_port(node)))
                .collect()
        })
        .ok_or_else(|| SyncError::NoKubeletPort {
            name: name.to_owned(),
            first: *range.start(),
            last: *range.end(),
        })?;
    let answers = match &proxier.address {
        Some(address) => Some(ctx.kubelet_ports.answers(address, port).await),
        None => None,
    };
    let published = published_port(i32::from(port), proxier.port, answers);
    let retry = match (&proxier.address, answers) {
        (Some(address), Some(false)) => ctx.kubelet_ports.retry_delay(address, port),
        _ => Duration::ZERO,
    };
    Ok(NodeEndpoint {
        proxier: ProxierEndpoint {
            port: i32::from(port),
            ..proxier
        },
        published,
        retry,
    })
}

/// Looks the proxier's pods up once; when the address to advertise changed, every
/// physical node is reconciled again to write it.
pub async fn refresh_proxier_address(ctx: &Context) {
    let Some(pods) = &ctx.config.proxier.pods else {
        return;
    };
    let api: Api<Pod> = Api::namespaced(ctx.computing.clone(), &pods.namespace);
    let listed = tokio::time::timeout(
        ctx.config.request_timeout,
        api.list(&ListParams::default().labels(&pods.selector)),
    )
    .await;
    let list = match listed {
        Ok(Ok(list)) => list,
        Ok(Err(err)) => {
            tracing::warn!(
                namespace = %pods.namespace,
                selector = %pods.selector,
                error = %kube_kit::client::describe_kube_error(&err),
                "cannot list the proxier's pods"
            );
            return;
        }
        Err(_) => {
            tracing::warn!(namespace = %pods.namespace, "listing the proxier's pods timed out");
            return;
        }
    };
    let current = ctx.kubelet_ports.proxier_address();
    let chosen = choose_proxier_address(&list.items, current.as_deref());
    if ctx.kubelet_ports.set_proxier_address(chosen.clone()) {
        tracing::info!(
            binding = %ctx.config.binding_name,
            address = chosen.as_deref().unwrap_or(""),
            "virtual nodes now point at this proxier pod"
        );
        ctx.enqueue_all_nodes();
    }
}

/// Follows the proxier's pods until `token` is cancelled (see [`refresh_proxier_address`]).
pub async fn follow_proxier_pods(ctx: Arc<Context>, token: CancellationToken) {
    let Some(pods) = &ctx.config.proxier.pods else {
        return;
    };
    loop {
        tokio::select! {
            () = token.cancelled() => return,
            () = tokio::time::sleep(pods.interval) => {}
        }
        refresh_proxier_address(&ctx).await;
    }
}
