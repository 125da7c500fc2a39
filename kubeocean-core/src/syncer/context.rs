//! What the reconcilers of one sync session share.

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, ObjectReference};
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube_kit::controller::{MAX_EVENT_NOTE_BYTES, truncate_utf8};
use tokio::time::Instant;

use super::config::SyncerConfig;
use super::index::{self, ComputingIndex, WorkerIndex};
use super::kubelet_port::KubeletPorts;
use super::queue::{FailureCounts, WorkQueue};
use crate::leasing::LeasingPolicyEngine;

/// How long pod usage changes of a node are gathered before its virtual node is re-evaluated.
const POD_USAGE_SETTLE: Duration = Duration::from_millis(100);

/// `reportingController` of the Events the syncer records.
pub const EVENT_REPORTER: &str = "kubeocean.io/syncer";

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
    /// Consecutive failures per physical node.
    pub node_failures: FailureCounts,
    /// Consecutive failures per policy.
    pub policy_failures: FailureCounts,
    /// Whether the worker answered the last probe.
    pub worker_reachable: AtomicBool,
    /// The proxier ports handed out to virtual nodes in this session.
    pub kubelet_ports: KubeletPorts,
    recorder: Recorder,
}

impl Context {
    pub(crate) fn new(
        computing: Client,
        worker: Client,
        config: SyncerConfig,
        engine: Arc<dyn LeasingPolicyEngine>,
    ) -> Context {
        let recorder = Recorder::new(
            computing.clone(),
            Reporter {
                controller: EVENT_REPORTER.to_owned(),
                instance: Some(config.binding_name.clone()),
            },
        );
        Context {
            computing,
            worker,
            config,
            engine,
            worker_index: RwLock::new(WorkerIndex::new()),
            computing_index: RwLock::new(ComputingIndex::new()),
            nodes: WorkQueue::new(),
            policies: WorkQueue::new(),
            node_failures: FailureCounts::default(),
            policy_failures: FailureCounts::default(),
            worker_reachable: AtomicBool::new(true),
            kubelet_ports: KubeletPorts::default(),
            recorder,
        }
    }

    /// Publishes an Event about `object` (in the computing cluster); failures are logged,
    /// never returned, and a hung API server is given up on after the request timeout.
    pub async fn publish(
        &self,
        object: &ObjectReference,
        type_: EventType,
        reason: &str,
        note: &str,
    ) {
        let event = Event {
            type_,
            reason: reason.to_owned(),
            note: Some(truncate_utf8(note, MAX_EVENT_NOTE_BYTES).to_owned()),
            action: "Sync".to_owned(),
            secondary: None,
        };
        let published = tokio::time::timeout(
            self.config.request_timeout,
            self.recorder.publish(&event, object),
        )
        .await;
        match published {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::warn!(error = %err, reason, "cannot publish an Event"),
            Err(_) => tracing::warn!(reason, "publishing an Event timed out"),
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
    /// its watch event arrives (and that event, of the same resourceVersion, changes
    /// nothing); returns it as recorded.
    pub fn remember_vnode(&self, mut node: Node) -> Arc<Node> {
        node.metadata.managed_fields = None;
        let node = Arc::new(node);
        self.computing_index_mut().apply_vnode_arc(node.clone());
        node
    }

    /// Records a physical node the syncer just wrote (see [`Context::remember_vnode`]).
    pub fn remember_physical_node(&self, mut node: Node) {
        node.metadata.managed_fields = None;
        self.worker_index_mut().apply_node(node);
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
