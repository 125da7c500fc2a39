//! The Lease controller: every `lease_renew_interval`, probe the worker; while it answers,
//! renew `kube-node-lease/<vnode>` (duration `lease_duration`) of every virtual node whose
//! physical node is Ready. When the worker goes away or the physical node is not Ready,
//! renewals stop and the computing cluster's node lifecycle marks the virtual node NotReady.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference};
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use kube_kit::client::is_not_found;
use kube_kit::slim::Slim;
use tokio_util::sync::CancellationToken;

use super::physical_node::NODE_LEASE_NAMESPACE;
use super::vnode::is_ready;
use crate::syncer::binding::{
    ConnectError, connection_conditions, probe, update_binding_conditions,
};
use crate::syncer::context::Context;
use crate::syncer::error::{SyncError, api_code};
use crate::syncer::index;

/// Leases renewed at once.
const CONCURRENT_RENEWALS: usize = 32;

/// The Lease of a virtual node as of `now`, owned by the Node.
pub fn node_lease(vnode: &Node, duration_seconds: i32, now: Timestamp) -> Lease {
    let name = vnode.name_any();
    Lease {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(NODE_LEASE_NAMESPACE.to_owned()),
            owner_references: vnode.uid().map(|uid| {
                vec![OwnerReference {
                    api_version: "v1".to_owned(),
                    kind: "Node".to_owned(),
                    name: name.clone(),
                    uid,
                    ..OwnerReference::default()
                }]
            }),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(name),
            lease_duration_seconds: Some(duration_seconds),
            renew_time: Some(MicroTime(now)),
            ..LeaseSpec::default()
        }),
    }
}

/// Which virtual nodes get their Lease renewed: ours, not being deleted, whose physical node
/// is known and Ready.
pub fn renewable(ctx: &Context) -> Vec<Arc<Node>> {
    let worker = ctx.worker_index();
    ctx.computing_index()
        .vnodes()
        .into_iter()
        .filter(|vnode| vnode.metadata.deletion_timestamp.is_none())
        .filter(|vnode| {
            index::physical_node_of(vnode)
                .and_then(|physical| worker.node(&physical))
                .is_some_and(|physical| is_ready(&physical))
        })
        .collect()
}

/// Runs the renew loop until `token` is cancelled.
pub async fn run(ctx: Arc<Context>, token: CancellationToken) {
    let mut ticker = tokio::time::interval(ctx.config.lease_renew_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let reachable = probe(&ctx.worker, ctx.config.probe_timeout).await;
        let was = ctx
            .worker_reachable
            .swap(reachable.is_ok(), Ordering::SeqCst);
        if let Some(metrics) = &ctx.config.metrics {
            metrics.set_worker_reachable(&ctx.config.binding_name, reachable.is_ok());
        }
        if was != reachable.is_ok() {
            report_reachability(&ctx, reachable.as_ref().err()).await;
            if reachable.is_ok() {
                ctx.enqueue_all_nodes();
            }
        }
        if reachable.is_err() {
            continue;
        }
        let duration = i32::try_from(ctx.config.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let vnodes = renewable(&ctx);
        let ctx_ref = &ctx;
        futures::stream::iter(vnodes)
            .for_each_concurrent(CONCURRENT_RENEWALS, |vnode| async move {
                if let Err(err) = renew(ctx_ref, &vnode, duration).await {
                    tracing::warn!(vnode = %vnode.name_any(), error = %err, "lease renewal failed");
                }
            })
            .await;
    }
}

async fn report_reachability(ctx: &Context, problem: Option<&String>) {
    let err = problem.map(|reason| ConnectError::Unreachable {
        binding: ctx.config.binding_name.clone(),
        reason: reason.clone(),
    });
    match &err {
        Some(err) => {
            tracing::warn!(binding = %ctx.config.binding_name, error = %err, "worker unreachable; lease renewal paused")
        }
        None => tracing::info!(binding = %ctx.config.binding_name, "worker reachable again"),
    }
    let generation = ctx
        .computing_index()
        .binding()
        .and_then(|b| b.metadata.generation);
    let conditions = connection_conditions(
        err.as_ref().map_or(Ok(()), Err),
        generation,
        &ctx.config.clock,
    );
    if let Err(err) =
        update_binding_conditions(&ctx.computing, &ctx.config.binding_name, conditions).await
    {
        tracing::warn!(error = %err, "cannot report worker reachability");
    }
}

/// Renews one Lease (created when missing).
async fn renew(ctx: &Context, vnode: &Node, duration_seconds: i32) -> Result<(), SyncError> {
    let name = vnode.name_any();
    // Answers are read without managedFields: nothing here reads them.
    let api: Api<Slim<Lease>> = Api::namespaced(ctx.computing.clone(), NODE_LEASE_NAMESPACE);
    let lease = node_lease(vnode, duration_seconds, ctx.config.clock.now());
    let fail = |action, source| SyncError::Lease {
        action,
        name: name.clone(),
        source,
    };
    let patch = serde_json::json!({ "spec": lease.spec });
    match api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(err) if is_not_found(&err) => {
            match api.create(&PostParams::default(), &Slim(lease)).await {
                Ok(_) => Ok(()),
                Err(err) if api_code(&err) == Some(409) => Ok(()),
                Err(err) => Err(fail("create", err)),
            }
        }
        Err(err) => Err(fail("renew", err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lease_is_held_by_and_owned_by_the_virtual_node() {
        let vnode: Node =
            serde_json::from_value(json!({ "metadata": { "name": "vnode-c-n1", "uid": "u1" } }))
                .unwrap();
        let now: Timestamp = "2025-01-06T12:00:00Z".parse().unwrap();
        let lease = node_lease(&vnode, 40, now);
        assert_eq!(lease.metadata.namespace.as_deref(), Some("kube-node-lease"));
        let spec = lease.spec.unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some("vnode-c-n1"));
        assert_eq!(spec.lease_duration_seconds, Some(40));
        assert_eq!(spec.renew_time, Some(MicroTime(now)));
        assert_eq!(lease.metadata.owner_references.unwrap()[0].uid, "u1");
    }
}
