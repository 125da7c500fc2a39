//! What the reconcilers of one sync session share.

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use tokio::time::Instant;

use super::config::SyncerConfig;
use super::index::{self, ComputingIndex, WorkerIndex};
use super::queue::WorkQueue;
use crate::leasing::LeasingPolicyEngine;

/// How long pod usage changes of a node are gathered before its virtual node is re-evaluated.
const POD_USAGE_SETTLE: Duration = Duration::from_millis(100);

/// Everything the reconcilers of one sync session share.
pub struct Context {
    /// Client of the computing cluster.
    pub computing: Client,
    /// Client of the worker cluster.
    pub worker: Client,
    /// Settings.
    pub config: SyncerConfig,
    /// The leasing engine.
    pub engine: Arc<dyn LeasingPolicyEngine>,
    worker_index: RwLock<WorkerIndex>,
    computing_index: RwLock<ComputingIndex>,
    /// Physical node names to reconcile.
    pub nodes: WorkQueue,
    /// Policy names whose status to reconcile.
    pub policies: WorkQueue,
    /// Whether the worker answered the last probe.
    pub worker_reachable: AtomicBool,
}

impl Context {
    pub(crate) fn new(
        computing: Client,
        worker: Client,
        config: SyncerConfig,
        engine: Arc<dyn LeasingPolicyEngine>,
    ) -> Context {
        Context {
            computing,
            worker,
            config,
            engine,
            worker_index: RwLock::new(WorkerIndex::new()),
            computing_index: RwLock::new(ComputingIndex::new()),
            nodes: WorkQueue::new(),
            policies: WorkQueue::new(),
            worker_reachable: AtomicBool::new(true),
        }
    }

    /// Reads the worker index.
    pub fn worker_index(&self) -> RwLockReadGuard<'_, WorkerIndex> {
        self.worker_index
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn worker_index_mut(&self) -> RwLockWriteGuard<'_, WorkerIndex> {
        self.worker_index
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reads the computing index.
    pub fn computing_index(&self) -> RwLockReadGuard<'_, ComputingIndex> {
        self.computing_index
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn computing_index_mut(&self) -> RwLockWriteGuard<'_, ComputingIndex> {
        self.computing_index
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a virtual node the syncer just wrote, so the next reconcile sees it before
    /// its watch event arrives.
    pub fn remember_vnode(&self, mut node: Node) {
        node.metadata.managed_fields = None;
        self.computing_index_mut().apply_vnode(node);
    }

    pub(crate) fn enqueue_nodes(&self, names: Vec<String>) {
        self.nodes.add_all(names.iter().map(String::as_str));
    }

    /// Queues nodes whose pod usage changed, a moment later: pods arrive in bursts (a
    /// Deployment scaling, a batch mapped down), and one re-evaluation then covers the burst
    /// instead of one virtual node update per pod.
    pub(crate) fn enqueue_nodes_after_pod_changes(&self, names: Vec<String>) {
        let at = Instant::now() + POD_USAGE_SETTLE;
        for name in &names {
            self.nodes.add_at(name, at);
        }
    }

    /// Queues every physical node and every virtual node's physical node.
    pub(crate) fn enqueue_all_nodes(&self) {
        let mut names: HashSet<String> = self.worker_index().node_names().into_iter().collect();
        names.extend(
            self.computing_index()
                .vnodes()
                .iter()
                .filter_map(|n| index::physical_node_of(n)),
        );
        self.enqueue_nodes(names.into_iter().collect());
    }
}
