//! One connection's worth of syncing: the watches of both clusters feeding the indexes
//! and stores, then the bottom-up and top-down reconcilers.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, SecretReference};
use k8s_openapi::api::storage::v1::CSINode;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use kube_kit::slim::Slim;
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::bottomup::hostport::{HostPortWorker, HostPorts};
use super::bottomup::{lease, physical_node, policy};
use super::context::Context;
use super::index::{self, split_pod_change};
use super::reflector::{self, Change, Streamed, spawn_reflector, spawn_streamed_reflector};
use super::topdown::session as topdown_session;
use super::topdown::{BindingSettings, TopDown};
use super::upstream;
use super::worker_pod::{WirePod, WorkerPod};
use crate::crd::{ClusterBinding, ResourceLeasingPolicy};
use crate::labels;

/// One connection's worth of syncing: watches, reconcilers (bottom-up and top-down) and the
/// Lease loop, until the outer token is cancelled or the binding's Secret reference or
/// mount namespace changes.
pub(super) async fn run_session(
    ctx: Arc<Context>,
    binding: &ClusterBinding,
    outer: &CancellationToken,
) {
    let token = outer.child_token();
    let mut tasks = JoinSet::new();
    let mut synced = Vec::new();
    let binding_name = ctx.config.binding_name.clone();
    let ours = format!("{}={}", labels::CLUSTER_BINDING, binding_name);
    let secret_ref = binding.spec.secret_ref.clone();
    let topdown = TopDown::new(&ctx, binding);
    let hostports = Arc::new(HostPorts::new());
    let mount_namespace = topdown.as_ref().map(|t| t.settings.mount_namespace.clone());

    // Computing cluster: the binding, our virtual nodes, our mirrored CSINodes.
    {
        let (tx, rx) = oneshot::channel();
        synced.push(rx);
        let c = ctx.clone();
        let session = token.clone();
        let td = topdown.clone();
        let api: Api<Slim<ClusterBinding>> = Api::all(ctx.computing.clone());
        let config = watcher::Config::default().fields(&format!("metadata.name={binding_name}"));
        let connected_with = SessionIdentity {
            secret_ref,
            mount_namespace,
        };
        tasks.spawn(reflector::reflect(
            api,
            config,
            "clusterbinding",
            tx,
            token.clone(),
            move |change| {
                on_binding(&c, &connected_with, &session, change);
                if let Some(td) = &td {
                    td.on_binding();
                }
            },
        ));
    }
    spawn_reflector::<Node, _>(
        &mut tasks,
        &mut synced,
        Api::all(ctx.computing.clone()),
        watcher::Config::default().labels(&ours),
        "virtual nodes",
        &token,
        {
            let c = ctx.clone();
            let td = topdown.clone();
            let hp = hostports.clone();
            move |change| {
                // Pods are re-evaluated when a virtual node appears or goes, not on each of
                // its status updates.
                let changed_vnodes = match &change {
                    Change::Applied(n) => {
                        let name = n.name_any();
                        let new = c.computing_index().vnode(&name).is_none();
                        Some(if new { vec![name] } else { Vec::new() })
                    }
                    Change::Deleted(n) => Some(vec![n.name_any()]),
                    Change::Relisted(_) => None,
                };
                let hostport_news = match &change {
                    Change::Applied(n) => {
                        !hp.knows(&n.name_any()) || n.metadata.deletion_timestamp.is_some()
                    }
                    Change::Deleted(_) | Change::Relisted(_) => true,
                };
                // The node's own physical node: `affected` leaves it out when the event is
                // the syncer's own write, already recorded.
                let physical = match &change {
                    Change::Applied(n) | Change::Deleted(n) => index::physical_node_of(n),
                    Change::Relisted(_) => None,
                };
                let (affected, count) = {
                    let mut index = c.computing_index_mut();
                    let affected = match change {
                        Change::Applied(n) => index.apply_vnode(n),
                        Change::Deleted(n) => index.delete_vnode(&n),
                        Change::Relisted(all) => index.replace_vnodes(all),
                    };
                    (affected, index.vnode_count())
                };
                if let Some(metrics) = &c.config.metrics {
                    metrics.set_virtual_nodes(&c.config.binding_name, count);
                }
                // Placeholders follow virtual nodes that appear or go, not their updates.
                if hostport_news {
                    hp.queue
                        .add_all(affected.iter().chain(&physical).map(String::as_str));
                }
                c.enqueue_nodes(affected);
                if let Some(td) = &td {
                    td.on_vnodes(changed_vnodes);
                }
            }
        },
    );
    spawn_reflector::<CSINode, _>(
        &mut tasks,
        &mut synced,
        Api::all(ctx.computing.clone()),
        watcher::Config::default().labels(&ours),
        "virtual CSINodes",
        &token,
        {
            let c = ctx.clone();
            move |change| {
                let affected = {
                    let mut index = c.computing_index_mut();
                    match change {
                        Change::Applied(n) => index.apply_csinode(n),
                        Change::Deleted(n) => index.delete_csinode(&n),
                        Change::Relisted(all) => index.replace_csinodes(all),
                    }
                };
                c.enqueue_nodes(affected);
            }
        },
    );

    // Worker cluster: nodes, pods, policies, CSINodes.
    spawn_reflector::<Node, _>(
        &mut tasks,
        &mut synced,
        Api::all(ctx.worker.clone()),
        watcher::Config::default(),
        "physical nodes",
        &token,
        {
            let c = ctx.clone();
            move |change| {
                let affected = {
                    let mut index = c.worker_index_mut();
                    match change {
                        Change::Applied(n) => index.apply_node(n),
                        Change::Deleted(n) => index.delete_node(&n),
                        Change::Relisted(all) => index.replace_nodes(all),
                    }
                };
                c.enqueue_nodes(affected);
            }
        },
    );
    // Each pod is decoded into what the index keeps (the whole object only for the top-down
    // half's own pods), so a re-list never decodes nor holds every Pod of the worker.
    spawn_streamed_reflector::<WirePod, WorkerPod, _, _>(
        &mut tasks,
        &mut synced,
        Api::all(ctx.worker.clone()),
        watcher::Config::default(),
        "physical pods",
        &token,
        {
            let td = topdown.clone();
            move |pod: WirePod| {
                pod.into_worker_pod(|p| td.as_ref().is_some_and(|td| td.keeps_physical_pod(p)))
            }
        },
        {
            let c = ctx.clone();
            let td = topdown.clone();
            let hp = hostports.clone();
            // The top-down half's pods of a re-list in progress.
            let mut listed_objects: Vec<Pod> = Vec::new();
            move |change| {
                let (objects, affected) = match change {
                    // A re-list goes into the index pod by pod, never held whole.
                    Streamed::ListStarted => {
                        listed_objects.clear();
                        c.worker_index_mut().begin_pod_relist();
                        return;
                    }
                    Streamed::Listed(pod) => {
                        listed_objects.extend(pod.object.map(|p| *p));
                        if let Some((uid, cached)) = pod.indexed {
                            c.worker_index_mut().list_pod(&uid, cached);
                        }
                        return;
                    }
                    Streamed::ListDone => (
                        Some(Change::Relisted(std::mem::take(&mut listed_objects))),
                        c.worker_index_mut().finish_pod_relist(),
                    ),
                    Streamed::Applied(pod) => {
                        let (objects, indexed) = split_pod_change(Change::Applied(pod));
                        (objects, apply_indexed(&c, indexed))
                    }
                    Streamed::Deleted(pod) => {
                        let (objects, indexed) = split_pod_change(Change::Deleted(pod));
                        (objects, apply_indexed(&c, indexed))
                    }
                };
                // One watch feeds both halves: the top-down store keeps our pods.
                if let (Some(td), Some(objects)) = (&td, &objects) {
                    td.on_physical_pods(&c, objects);
                }
                hp.queue.add_all(affected.iter().map(String::as_str));
                c.enqueue_nodes_after_pod_changes(affected);
            }
        },
    );
    spawn_reflector::<ResourceLeasingPolicy, _>(
        &mut tasks,
        &mut synced,
        Api::all(ctx.worker.clone()),
        watcher::Config::default(),
        "leasing policies",
        &token,
        {
            let c = ctx.clone();
            move |change| {
                let (affected, policies) = {
                    let mut index = c.worker_index_mut();
                    match change {
                        Change::Applied(p) => {
                            let name = kube::ResourceExt::name_any(&p);
                            let (affected, changed) = index.apply_policy(p);
                            (affected, if changed { vec![name] } else { vec![] })
                        }
                        Change::Deleted(p) => (index.delete_policy(&p), Vec::new()),
                        Change::Relisted(all) => index.replace_policies(all),
                    }
                };
                c.enqueue_nodes(affected);
                c.policies.add_all(policies.iter().map(String::as_str));
            }
        },
    );
    spawn_reflector::<CSINode, _>(
        &mut tasks,
        &mut synced,
        Api::all(ctx.worker.clone()),
        watcher::Config::default(),
        "physical CSINodes",
        &token,
        {
            let c = ctx.clone();
            move |change| {
                let affected = {
                    let mut index = c.worker_index_mut();
                    match change {
                        Change::Applied(n) => index.apply_csinode(n),
                        Change::Deleted(n) => index.delete_csinode(&n),
                        Change::Relisted(all) => index.replace_csinodes(all),
                    }
                };
                c.enqueue_nodes(affected);
            }
        },
    );

    if let Some(td) = &topdown {
        topdown_session::spawn_reflectors(&ctx, td, &mut tasks, &mut synced, &token);
    }

    tasks.spawn(lease::run(ctx.clone(), token.clone()));

    // Reconcile only once every index is complete: a missing policy must not look like
    // "no policy" and drain nodes.
    let all_synced = futures::future::join_all(synced);
    tokio::select! {
        _ = token.cancelled() => {}
        _ = all_synced => {
            tracing::info!(binding = %binding_name, "caches synced");
            super::kubelet_endpoint::refresh_proxier_address(&ctx).await;
            tasks.spawn(super::kubelet_endpoint::follow_proxier_pods(ctx.clone(), token.clone()));
            ctx.enqueue_all_nodes();
            let policies: Vec<String> = ctx
                .worker_index()
                .policies()
                .iter()
                .map(|p| kube::ResourceExt::name_any(p.as_ref()))
                .collect();
            ctx.policies.add_all(policies.iter().map(String::as_str));
            for _ in 0..ctx.config.workers.max(1) {
                tasks.spawn(physical_node::run_worker(ctx.clone(), token.clone()));
            }
            tasks.spawn(policy::run_worker(ctx.clone(), token.clone()));
            tasks.spawn(upstream::run_release(
                ctx.clone(),
                binding.spec.cluster_id.clone(),
                token.clone(),
            ));
            let nodes = ctx.worker_index().node_names();
            hostports.queue.add_all(nodes.iter().map(String::as_str));
            tasks.spawn(super::worker::run(
                ctx.clone(),
                HostPortWorker(hostports.clone()),
                token.clone(),
            ));
            if let Some(td) = &topdown {
                topdown_session::start(&ctx, td, &mut tasks, &token);
            }
        }
    }
    token.cancelled().await;
    while tasks.join_next().await.is_some() {}
}

/// Applies an added, modified or deleted pod's index entry; returns the affected nodes.
fn apply_indexed(ctx: &Context, indexed: Change<index::IndexEntry>) -> Vec<String> {
    let mut index = ctx.worker_index_mut();
    match indexed {
        Change::Applied(Some((uid, pod))) => index.apply_cached(uid, pod),
        Change::Deleted(Some((uid, _))) => index.delete_uid(&uid),
        Change::Applied(None) | Change::Deleted(None) => Vec::new(),
        Change::Relisted(all) => index.replace_cached(all.into_iter().flatten().collect()),
    }
}

/// What a session was started with; a change of either restarts it.
struct SessionIdentity {
    secret_ref: SecretReference,
    /// `None` when the binding had no usable mountNamespace.
    mount_namespace: Option<String>,
}

/// Binding changes: a new Secret reference or mount namespace ends the session (to
/// reconnect); any other spec change, or deletion, re-evaluates every node.
fn on_binding(
    ctx: &Context,
    connected_with: &SessionIdentity,
    session: &CancellationToken,
    change: Change<ClusterBinding>,
) {
    let binding = match change {
        Change::Applied(b) => Some(b),
        Change::Deleted(_) => None,
        Change::Relisted(mut all) => all.pop(),
    };
    if let Some(b) = &binding {
        let mount_namespace = BindingSettings::from_binding(b)
            .ok()
            .map(|s| s.mount_namespace);
        if b.spec.secret_ref != connected_with.secret_ref
            || mount_namespace != connected_with.mount_namespace
        {
            tracing::info!(binding = %ctx.config.binding_name, "secretRef or mountNamespace changed; reconnecting");
            session.cancel();
            return;
        }
    }
    let changed = {
        let mut index = ctx.computing_index_mut();
        let old = index.binding();
        let same = match (&old, &binding) {
            (Some(old), Some(new)) => {
                old.spec == new.spec
                    && old.metadata.deletion_timestamp == new.metadata.deletion_timestamp
            }
            (None, None) => true,
            _ => false,
        };
        index.set_binding(binding);
        !same
    };
    if changed {
        ctx.enqueue_all_nodes();
        // A binding being deleted turns its policies Inactive (bottomup/policy.rs).
        let policies: Vec<String> = ctx
            .worker_index()
            .policies()
            .iter()
            .map(|p| kube::ResourceExt::name_any(p.as_ref()))
            .collect();
        ctx.policies.add_all(policies.iter().map(String::as_str));
    }
}
