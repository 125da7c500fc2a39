//! The PhysicalNode reconciler: for one physical node, ask the leasing engine what it lends,
//! then create or update its virtual node (three-way metadata merge, status copied), label
//! the physical node with the applied policy, mirror its CSINode, or, when it is not lent,
//! drain and remove the virtual node (cordon + `kubeocean.io/vnode-deleting` taint, delete
//! the virtual pods, wait until they are gone, then release the `kubeocean.io/vnode`
//! finalizer). A physical node replaced under the same name (new UID) has its old virtual
//! node removed that way, then a fresh one created.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, ObjectReference};
use k8s_openapi::api::storage::v1::CSINode;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use kube_kit::client::is_not_found;
use kube_kit::finalizer;
use kube_kit::slim::Slim;
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::virtual_pods::delete_virtual_pods;
use super::vnode::{
    cordoned_for_removal, desired_virtual_node, made_for_replaced_node, new_virtual_node,
    updated_status, updated_virtual_node,
};
use super::{csinode, reclaim};
use crate::labels;
use crate::leasing::{LeasingDecision, LeasingInput, NotLentReason, node_base};
use crate::naming::virtual_node_name;
use crate::syncer::context::Context;
use crate::syncer::error::SyncError;
use crate::syncer::kubelet_endpoint;
use crate::syncer::metrics::node_resources;
use crate::syncer::queue::FailureCounts;
use crate::syncer::queue::WorkQueue;
use crate::syncer::worker;

/// Namespace of node Leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// Name of this reconciler in metrics and logs.
pub const NAME: &str = "physical-node";

/// Takes physical node names off the queue and reconciles them until `token` is cancelled.
pub async fn run_worker(ctx: Arc<Context>, token: CancellationToken) {
    worker::run(ctx, PhysicalNodes, token).await;
}

/// The PhysicalNode reconciler, for the worker loop.
struct PhysicalNodes;

impl worker::Reconciler for PhysicalNodes {
    type Error = SyncError;

    fn name(&self) -> &'static str {
        NAME
    }

    fn queue<'a>(&'a self, ctx: &'a Context) -> &'a WorkQueue {
        &ctx.nodes
    }

    fn failures<'a>(&'a self, ctx: &'a Context) -> &'a FailureCounts {
        &ctx.node_failures
    }

    async fn reconcile(&self, ctx: &Context, key: &str) -> Result<Option<Instant>, SyncError> {
        reconcile(ctx, key).await
    }

    /// The virtual node of the physical node, when there is one.
    fn failure_target(&self, ctx: &Context, key: &str) -> Option<ObjectReference> {
        let index = ctx.computing_index();
        let vnode = match index.binding() {
            Some(b) => index.vnode(&virtual_node_name(&b.spec.cluster_id, key)),
            None => None,
        };
        vnode.map(|n| n.object_ref(&()))
    }
}

/// Reconciles the virtual node of physical node `name`; returns when to look again.
pub async fn reconcile(ctx: &Context, name: &str) -> Result<Option<Instant>, SyncError> {
    if !ctx.worker_reachable.load(Ordering::SeqCst) {
        // The cached worker state is stale: writing it would undo the computing cluster
        // marking the virtual node NotReady. Every node is queued again on reconnection.
        return Ok(None);
    }
    let (physical, usage, policies) = {
        let index = ctx.worker_index();
        (index.node(name), index.node_usage(name), index.policies())
    };
    let binding = ctx.computing_index().binding();
    let vnode_name = match &binding {
        Some(b) => virtual_node_name(&b.spec.cluster_id, name),
        None => match find_vnode_of(ctx, name) {
            Some(n) => n,
            None => {
                // Binding gone and nothing to drain: only the policy label is left to undo.
                if let Some(physical) = &physical {
                    label_policy_applied(ctx, physical, None).await?;
                }
                return Ok(None);
            }
        },
    };
    let mut decision = match (&binding, &physical) {
        (Some(binding), Some(physical)) if binding.metadata.deletion_timestamp.is_none() => {
            ctx.engine.evaluate(&LeasingInput {
                node: physical,
                pods: Vec::new(),
                policies: policies.iter().map(Arc::as_ref).collect(),
                binding,
                usage: Some(&usage),
                now: ctx.config.clock.now(),
            })
        }
        (_, None) => LeasingDecision::not_lent(vnode_name.clone(), NotLentReason::NodeGone),
        _ => LeasingDecision::not_lent(vnode_name.clone(), NotLentReason::BindingGone),
    };
    let current = ctx.computing_index().vnode(&vnode_name);

    if let Some(physical) = &physical {
        label_policy_applied(ctx, physical, decision.policy.as_deref()).await?;
    }
    let (Some(binding), Some(physical), true) = (&binding, &physical, decision.lent) else {
        if let Some(metrics) = &ctx.config.metrics {
            metrics
                .upstream()
                .forget_node(&ctx.config.binding_name, &vnode_name);
        }
        return match current {
            Some(vnode) => remove_virtual_node(ctx, &vnode).await,
            None => {
                ctx.kubelet_ports.release(&vnode_name);
                Ok(None)
            }
        };
    };
    if let Some(vnode) = &current
        && vnode.metadata.deletion_timestamp.is_some()
    {
        // Someone deleted it: finish the removal; it is recreated afterwards.
        return remove_virtual_node(ctx, vnode).await;
    }
    if let Some(vnode) = &current
        && made_for_replaced_node(vnode, physical)
    {
        // Another machine under the same name: the old virtual node and its pods go as for
        // a removed node; its deletion event brings this node back here to be recreated.
        tracing::info!(node = %name, vnode = %vnode_name, "physical node replaced (new UID); removing its old virtual node");
        return remove_virtual_node(ctx, vnode).await;
    }

    let applied = decision
        .policy
        .as_deref()
        .and_then(|p| policies.iter().find(|policy| policy.name_any() == p));
    let force_reclaim = applied.filter(|p| p.spec.force_reclaim && !decision.in_window);
    // NoSchedule during the grace period, NoExecute after it (see reclaim.rs).
    let reclaim_step = force_reclaim.map(|policy| {
        reclaim::reclaim_step(
            current.as_deref(),
            policy.spec.graceful_reclaim_period_seconds.unwrap_or(0),
            ctx.config.clock.now(),
        )
    });
    if let Some(step) = &reclaim_step {
        reclaim::with_reclaim_taint(&mut decision.taints, step);
    }
    let endpoint = kubelet_endpoint::endpoint_of(ctx, &vnode_name, current.as_deref()).await?;
    let mut desired = desired_virtual_node(physical, &decision, binding, &endpoint.proxier);
    // The node's own kubelet port only once it answers (see kubelet_port.rs).
    endpoint.publish(&mut desired.status);
    // Answers are read without managedFields: only the object itself is kept.
    let api: Api<Slim<Node>> = Api::all(ctx.computing.clone());
    let fail = |action, source| SyncError::VirtualNode {
        action,
        name: vnode_name.clone(),
        source,
    };
    let vnode: Arc<Node> = match current {
        None => {
            let created = api
                .create(&PostParams::default(), &Slim(new_virtual_node(&desired)))
                .await
                .map_err(|e| fail("create", e))?;
            tracing::info!(node = %name, vnode = %vnode_name, "virtual node created");
            ctx.remember_vnode(created.into_inner())
        }
        Some(current) => {
            let mut vnode = current;
            if let Some(update) = updated_virtual_node(&vnode, &desired) {
                let written = api
                    .replace(&vnode_name, &PostParams::default(), &Slim(update))
                    .await
                    .map_err(|e| fail("update", e))?;
                vnode = ctx.remember_vnode(written.into_inner());
            }
            if let Some(update) = updated_status(&vnode, &desired) {
                let written = api
                    .replace_status(&vnode_name, &PostParams::default(), &Slim(update))
                    .await
                    .map_err(|e| fail("update the status of", e))?;
                vnode = ctx.remember_vnode(written.into_inner());
            }
            vnode
        }
    };
    if let Some(metrics) = &ctx.config.metrics {
        let mapped = ctx.worker_index().mapped_usage(name);
        let resources = node_resources(
            &node_base(physical),
            &decision.allocatable,
            usage.amounts().iter(),
            mapped.amounts().iter(),
        );
        metrics
            .upstream()
            .set_node(&ctx.config.binding_name, &vnode_name, resources);
    }
    let physical_csinode = ctx.worker_index().csinode(name);
    csinode::sync(ctx, &vnode, physical_csinode.as_deref()).await?;
    let mut next = decision.next_change;
    if endpoint.pending() {
        let now = ctx.config.clock.now();
        let soon = now.checked_add(endpoint.retry).unwrap_or(now);
        next = Some(next.map_or(soon, |n| n.min(soon)));
    }
    if let Some(step) = &reclaim_step {
        if let Some(taint) = reclaim::reclaim_taint(&vnode) {
            let reclaimed = reclaim::reclaim(ctx, &vnode_name, taint).await?;
            if reclaimed > 0 {
                tracing::info!(vnode = %vnode_name, pods = reclaimed, "virtual pods reclaimed");
            }
        } else {
            next = Some(next.map_or(step.due, |n| n.min(step.due)));
        }
    }
    Ok(next.map(|at| ctx.config.clock.instant_at(at)))
}

/// The virtual node of physical node `name`, found by label (when the binding is gone).
fn find_vnode_of(ctx: &Context, name: &str) -> Option<String> {
    ctx.computing_index()
        .vnodes()
        .iter()
        .find(|n| {
            n.labels()
                .get(labels::PHYSICAL_NODE_NAME)
                .is_some_and(|v| v == name)
        })
        .map(|n| n.name_any())
}

/// Sets (or removes) `kubeocean.io/policy-applied` on the physical node.
async fn label_policy_applied(
    ctx: &Context,
    physical: &Node,
    policy: Option<&str>,
) -> Result<(), SyncError> {
    let have = physical
        .labels()
        .get(labels::POLICY_APPLIED)
        .map(String::as_str);
    if have == policy {
        return Ok(());
    }
    let name = physical.name_any();
    let patch = json!({ "metadata": { "labels": { labels::POLICY_APPLIED: policy } } });
    let api: Api<Slim<Node>> = Api::all(ctx.worker.clone());
    match api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(patched) => {
            ctx.remember_physical_node(patched.into_inner());
            Ok(())
        }
        // The node went away; its deletion event re-evaluates it.
        Err(err) if is_not_found(&err) => Ok(()),
        Err(source) => Err(SyncError::PhysicalNode { name, source }),
    }
}

/// One step of a graceful removal; returns when to look again (`None` when gone).
async fn remove_virtual_node(ctx: &Context, vnode: &Node) -> Result<Option<Instant>, SyncError> {
    let name = vnode.name_any();
    let api: Api<Node> = Api::all(ctx.computing.clone());
    let fail = |action, source| SyncError::VirtualNode {
        action,
        name: name.clone(),
        source,
    };
    if vnode.metadata.deletion_timestamp.is_none()
        && let Some(cordoned) = cordoned_for_removal(vnode)
    {
        let written = api
            .replace(&name, &PostParams::default(), &cordoned)
            .await
            .map_err(|e| fail("cordon", e))?;
        tracing::info!(vnode = %name, "virtual node cordoned for removal");
        ctx.remember_vnode(written);
    }

    if !delete_virtual_pods(ctx, &name).await? {
        return Ok(Some(Instant::now() + ctx.config.retry_interval));
    }

    let leases: Api<Lease> = Api::namespaced(ctx.computing.clone(), NODE_LEASE_NAMESPACE);
    match leases.delete(&name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(err) if is_not_found(&err) => {}
        Err(source) => {
            return Err(SyncError::Lease {
                action: "delete",
                name,
                source,
            });
        }
    }
    let csinodes: Api<CSINode> = Api::all(ctx.computing.clone());
    match csinodes.delete(&name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(err) if is_not_found(&err) => {}
        Err(source) => {
            return Err(SyncError::CsiNode {
                action: "delete",
                name,
                source,
            });
        }
    }

    if vnode.metadata.deletion_timestamp.is_none() {
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(err) if is_not_found(&err) => return Ok(None),
            Err(err) => return Err(fail("delete", err)),
        }
    }
    // Guarded: a finalizer another writer added meanwhile fails the patch (retried) instead
    // of being dropped.
    match finalizer::remove(&api, vnode, labels::FINALIZER_VNODE).await {
        Ok(_) => {}
        Err(err) if is_not_found(&err) => {}
        Err(err) => return Err(fail("release the finalizer of", err)),
    }
    tracing::info!(vnode = %name, "virtual node removed");
    Ok(None)
}
