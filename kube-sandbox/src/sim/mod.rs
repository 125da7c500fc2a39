//! The simulated node side of a sandbox cluster: a scheduler that binds pending pods to nodes
//! that fit them, a kubelet that "runs" pods on simulated nodes (status, IPs, logs, graceful
//! termination, node Leases), the node lifecycle rule that turns a node Ready=Unknown when
//! its Lease stops being renewed, the taint-eviction controller (pods on nodes with `NoExecute`
//! taints they do not tolerate are deleted), the kubelet API those nodes serve and the API
//! server's proxy to it.
//!
//! With `ClusterOptions::metrics_server`, a model of metrics-server scrapes every node's
//! resource metrics and serves `metrics.k8s.io` (`metrics_server.rs`, `metrics_scraper.rs`,
//! `metrics_api.rs`).
//!
//! The loop follows the store's change history like a watch, so each change is looked at once.
//! The workload controllers (`controllers/`) run in a loop of their own, when enabled.

pub mod command_streams;
pub mod commands;
pub mod container_script;
pub mod controllers;
pub mod kubelet;
pub mod kubelet_api;
pub mod kubelet_stats;
pub mod metrics_api;
pub mod metrics_scraper;
pub mod metrics_server;
pub mod node_lifecycle;
pub mod node_proxy;
pub mod pod_ports;
pub mod port_forward;
pub mod remote_command;
pub mod scheduler;
pub mod shell;
pub mod spdy;
pub mod taint_eviction;

use crate::apiserver::api::DeleteOptions;
use crate::apiserver::resources::GroupResource;
use crate::apiserver::state::ClusterState;
use crate::apiserver::store::EventType;
use controllers::objects::at;
use node_lifecycle::node_lifecycle_pass;
use scheduler::{NodeUsage, NodeView, is_pending, schedule};
use serde_json::Value;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

pub use kubelet::{KubeletState, SimNode};

/// The simulated nodes of one cluster: what their kubelet keeps and the clients the API server
/// reaches kubelet endpoints with. It refers to the cluster state; the cluster state knows
/// nothing of it.
pub struct Simulator {
    /// The cluster the simulated nodes belong to.
    pub state: Arc<ClusterState>,
    /// Simulated kubelet state (container logs, nodes it runs).
    pub kubelet: KubeletState,
    /// Clients the API server uses to reach kubelet endpoints, by URL.
    pub(crate) kubelet_clients: node_proxy::KubeletClients,
    /// How far the controllers' clock runs ahead of the wall clock, in milliseconds.
    clock_offset_ms: std::sync::atomic::AtomicI64,
    /// The taint-eviction controller's pods waiting out their `tolerationSeconds`.
    taint_evictions: taint_eviction::Scheduled,
    /// What the metrics-server model keeps of its last two scrapes.
    metrics: std::sync::Mutex<metrics_server::Storage>,
}

impl Simulator {
    /// A simulator for the cluster, with no nodes yet.
    pub fn new(state: Arc<ClusterState>) -> Simulator {
        let resolution = state
            .options
            .metrics_server
            .as_ref()
            .map(|m| m.metric_resolution)
            .unwrap_or_default();
        Simulator {
            metrics: std::sync::Mutex::new(metrics_server::Storage::new(resolution)),
            state,
            kubelet: KubeletState::default(),
            kubelet_clients: Default::default(),
            clock_offset_ms: Default::default(),
            taint_evictions: Default::default(),
        }
    }

    /// Moves the workload controllers' clock forward (CronJob schedules, `minReadySeconds`,
    /// Job durations), so that tests need not wait for a schedule to come.
    pub fn advance_clock(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.clock_offset_ms
            .fetch_add(ms, std::sync::atomic::Ordering::SeqCst);
    }

    /// The metrics-server model's stored scrapes.
    pub fn metrics_storage(&self) -> std::sync::MutexGuard<'_, metrics_server::Storage> {
        self.metrics.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The workload controllers' "now": the wall clock plus what [`Simulator::advance_clock`]
    /// added.
    pub fn controller_now(&self) -> jiff::Timestamp {
        let offset = self
            .clock_offset_ms
            .load(std::sync::atomic::Ordering::SeqCst);
        jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::from_millis(offset))
            .unwrap_or_else(|_| jiff::Timestamp::now())
    }
}

/// What the kubelet does to a pod when a timer fires.
enum Timer {
    Start(String, String),
    Finish(String, String),
    Remove(String, String),
}

/// Runs the scheduler, kubelet and node lifecycle of a cluster until it shuts down.
pub async fn run(sim: Arc<Simulator>) {
    let state = &sim.state;
    let pods_gr = GroupResource::new("", "pods");
    let nodes_gr = GroupResource::new("", "nodes");
    // Only pod and node changes concern this loop; the rest of the cluster's writes (leases,
    // events, ...) need not wake it.
    let mut pod_changes = state.store.subscribe_resource(&pods_gr);
    let mut node_changes = state.store.subscribe_resource(&nodes_gr);
    let mut cursor = 0u64;
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut waiting: Vec<(String, String)> = Vec::new();
    let mut retry_all = false;
    let mut timers: BinaryHeap<Reverse<(Instant, u64)>> = BinaryHeap::new();
    let mut timer_actions: HashMap<u64, Timer> = HashMap::new();
    let mut seq = 0u64;
    let mut scheduled_removal: HashSet<(String, String)> = HashSet::new();
    let mut starting: HashSet<(String, String)> = HashSet::new();
    let mut last_lease = Instant::now();
    let mut last_lifecycle = Instant::now();
    let mut last_eviction = Instant::now();
    let mut last_retry = Instant::now();
    let mut usage = NodeUsage::default();
    let mut nodes: Option<Vec<NodeView>> = None;
    loop {
        // Follow pod and node changes since the cursor.
        let oldest = state.store.oldest_watchable();
        if cursor < oldest {
            // Fell behind the history: start over from the current state.
            cursor = state.store.current_rv();
            let pods = state.store.list(&pods_gr, None, None, 0, &|_| true).items;
            usage = NodeUsage::default();
            for pod in &pods {
                usage.observe(&key_of(&pod.value), Some(&pod.value));
            }
            pending = pods
                .iter()
                .filter(|p| is_pending(&p.value))
                .map(|p| key_of(&p.value))
                .collect();
            nodes = None;
            retry_all = true;
        }
        let mut nodes_changed = false;
        // Read up to a version taken first, so that changes written while this pass reads
        // are picked up by the next pass instead of being skipped.
        let upto = state.store.current_rv();
        for gr in [&pods_gr, &nodes_gr] {
            if let Ok((events, _)) = state.store.events_after(cursor, gr, usize::MAX) {
                for event in events.into_iter().filter(|e| e.rv <= upto) {
                    if *gr == nodes_gr {
                        nodes_changed = true;
                        continue;
                    }
                    let pod = &event.object.value;
                    let key = key_of(pod);
                    match event.kind {
                        EventType::Deleted => {
                            usage.observe(&key, None);
                            sim.kubelet.forget_pod(&key.0, &key.1);
                            scheduled_removal.remove(&key);
                            starting.remove(&key);
                        }
                        _ => {
                            usage.observe(&key, Some(pod));
                            if is_pending(pod) && state.options.scheduler {
                                pending.push(key.clone());
                            }
                            let node = at(pod, &["spec", "nodeName"])
                                .and_then(Value::as_str)
                                .unwrap_or("");
                            if !node.is_empty() && state.options.kubelet && sim.kubelet.runs(node) {
                                let phase = at(pod, &["status", "phase"])
                                    .and_then(Value::as_str)
                                    .unwrap_or("");
                                let deleting =
                                    at(pod, &["metadata", "deletionTimestamp"]).is_some();
                                let started = at(pod, &["status", "startTime"]).is_some();
                                if deleting {
                                    if scheduled_removal.insert(key.clone()) {
                                        let grace =
                                            at(pod, &["metadata", "deletionGracePeriodSeconds"])
                                                .and_then(Value::as_u64)
                                                .unwrap_or(0);
                                        let delay = Duration::from_secs(grace)
                                            .min(state.options.max_termination_delay);
                                        seq += 1;
                                        timers.push(Reverse((Instant::now() + delay, seq)));
                                        timer_actions.insert(
                                            seq,
                                            Timer::Remove(key.0.clone(), key.1.clone()),
                                        );
                                    }
                                } else if phase == "Running" {
                                    // `kubectl debug`: ephemeral containers start at once.
                                    kubelet::start_ephemeral_containers(&sim, pod);
                                } else if phase == "Pending"
                                    && !started
                                    && starting.insert(key.clone())
                                {
                                    seq += 1;
                                    timers.push(Reverse((
                                        Instant::now() + state.options.pod_start_delay,
                                        seq,
                                    )));
                                    timer_actions
                                        .insert(seq, Timer::Start(key.0.clone(), key.1.clone()));
                                }
                            }
                        }
                    }
                }
            }
        }
        cursor = upto.max(cursor);
        if nodes_changed {
            nodes = None;
        }
        if nodes_changed || last_retry.elapsed() >= Duration::from_secs(1) {
            retry_all = true;
        }

        if state.options.scheduler {
            // New pods get one try at once; those that found no node are retried when nodes
            // change, or every second.
            let mut batch = std::mem::take(&mut pending);
            if retry_all {
                batch.append(&mut waiting);
                batch.sort();
                batch.dedup();
                last_retry = Instant::now();
                retry_all = false;
            }
            if !batch.is_empty() {
                let nodes = nodes.get_or_insert_with(|| {
                    let nodes_gr = GroupResource::new("", "nodes");
                    let listed = state.store.list(&nodes_gr, None, None, 0, &|_| true);
                    listed.items.into_iter().map(NodeView::new).collect()
                });
                waiting.extend(schedule(state, batch, nodes, &mut usage));
            }
        }

        // Due timers.
        let now = Instant::now();
        while let Some(Reverse((at, id))) = timers.peek().copied() {
            if at > now {
                break;
            }
            timers.pop();
            match timer_actions.remove(&id) {
                Some(Timer::Start(ns, name)) => {
                    if let Some(run_time) = kubelet::start_pod(&sim, &ns, &name) {
                        seq += 1;
                        timers.push(Reverse((Instant::now() + run_time, seq)));
                        timer_actions.insert(seq, Timer::Finish(ns.clone(), name.clone()));
                    }
                    starting.remove(&(ns, name));
                }
                Some(Timer::Finish(ns, name)) => {
                    kubelet::finish_pod(&sim, &ns, &name);
                }
                Some(Timer::Remove(ns, name)) => {
                    if let Some(rt) = state.resource_type("", "pods") {
                        let opts = DeleteOptions {
                            grace_period_seconds: Some(0),
                            ..Default::default()
                        };
                        let _ = state.delete(&rt, &ns, &name, &opts);
                    }
                }
                None => {}
            }
        }

        if last_lease.elapsed() >= state.options.node_lease_renew {
            last_lease = Instant::now();
            for node in sim.kubelet.node_names() {
                if sim.kubelet.runs(&node) {
                    sim.renew_node_lease(&node);
                }
            }
        }
        if last_lifecycle.elapsed() >= Duration::from_secs(1) {
            last_lifecycle = Instant::now();
            node_lifecycle_pass(state);
        }
        if state.options.taint_eviction
            && (nodes_changed || last_eviction.elapsed() >= Duration::from_secs(1))
            && last_eviction.elapsed() >= Duration::from_millis(200)
        {
            last_eviction = Instant::now();
            taint_eviction::taint_eviction_pass(&sim);
        }

        let next_timer = timers.peek().map(|Reverse((at, _))| *at);
        let tick = Instant::now() + Duration::from_millis(500);
        let wake = next_timer.map(|t| t.min(tick)).unwrap_or(tick);
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = pod_changes.changed() => {}
            _ = node_changes.changed() => {}
            _ = tokio::time::sleep_until(wake) => {}
        }
    }
}

fn key_of(obj: &Value) -> (String, String) {
    (
        at(obj, &["metadata", "namespace"])
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        at(obj, &["metadata", "name"])
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    )
}
