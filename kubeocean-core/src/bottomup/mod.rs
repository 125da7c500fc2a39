//! The syncer's bottom-up half: the worker cluster's nodes become virtual nodes of the
//! computing cluster, sized and tainted by the leasing engine.
//!
//! One [`Syncer`] serves one ClusterBinding. It reaches the worker through the binding's
//! Secret ([`binding`]), keeps one watch per resource per cluster feeding in-memory indexes
//! ([`index`], [`reflector`]) and runs small reconcilers on a shared work queue:
//! - [`physical_node`]: create, update and gracefully remove virtual nodes;
//! - [`policy`]: validate ResourceLeasingPolicies and write their status, re-evaluating at
//!   the next window edge;
//! - [`lease`]: renew the virtual nodes' `kube-node-lease` Leases while the worker answers
//!   and the physical node is Ready;
//! - [`csinode`]: mirror physical CSINodes for their virtual nodes;
//! - [`reclaim`]: with `forceReclaim`, delete the virtual pods that do not tolerate the
//!   out-of-time-windows taint once the grace period has passed.
//!
//! The decisions themselves are pure functions ([`vnode`], [`metadata`], the
//! [`crate::leasing`] engine); reconcilers read the indexes, call them and write the
//! difference.
//!
//! The same session also runs the top-down half (virtual pods and what they need ->
//! physical objects in the binding's mount namespace): [`crate::topdown::session`]. It
//! shares this session's clients, settings and worker pod watch.

pub mod binding;
pub mod conditions;
pub mod csinode;
pub mod index;
pub mod lease;
pub mod metadata;
pub mod metrics;
pub mod physical_node;
pub mod policy;
pub mod queue;
pub mod reclaim;
pub mod reflector;
pub mod vnode;

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod, SecretReference};
use k8s_openapi::api::storage::v1::CSINode;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use kube_kit::client::ClientOptions;
use kube_kit::slim::Slim;
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::crd::{ClusterBinding, ResourceLeasingPolicy};
use crate::labels;
use crate::leasing::{DefaultLeasingEngine, LeasingPolicyEngine};
use crate::topdown::session as topdown_session;
use crate::topdown::{BindingSettings, TopDown};

pub use binding::{ConnectError, connect_worker};
pub use index::{ComputingIndex, WorkerIndex};
pub use metrics::SyncerMetrics;
pub use queue::WorkQueue;
pub use reflector::Change;
pub use vnode::ProxierEndpoint;

/// How long pod usage changes of a node are gathered before its virtual node is re-evaluated.
const POD_USAGE_SETTLE: Duration = Duration::from_millis(100);

/// The syncer's notion of "now": the system clock, optionally shifted (tests use a shift
/// to bring a time-window edge a few seconds ahead).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    offset: SignedDuration,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// The system clock shifted by `offset`.
    pub fn with_offset(offset: SignedDuration) -> Clock {
        Clock { offset }
    }

    /// The current time.
    pub fn now(&self) -> Timestamp {
        Timestamp::now()
            .checked_add(self.offset)
            .unwrap_or_else(|_| Timestamp::now())
    }

    /// The monotonic instant at which this clock shows `at` (now if it has passed), rounded
    /// up to the millisecond so that a timer never fires before the edge.
    pub fn instant_at(&self, at: Timestamp) -> Instant {
        let wait = at.duration_since(self.now());
        let wait = Duration::try_from(wait).unwrap_or_default();
        let millis = wait.as_nanos().div_ceil(1_000_000);
        Instant::now() + Duration::from_millis(u64::try_from(millis).unwrap_or(u64::MAX / 2))
    }
}

/// Threads of the async runtime a syncer process runs on by default
/// ([`kube_kit::runtime::build`]). One thread spends 0.24-0.31 ms of CPU per mapped pod in
/// the mapping benchmark, where two threads spend 0.36-0.43 ms handing tasks between them;
/// more threads pay off only when a binding's bursts need more than one core.
pub const SYNCER_RUNTIME_THREADS: usize = 1;

/// Settings of a [`Syncer`].
#[derive(Clone, Debug)]
pub struct SyncerConfig {
    /// Name of the ClusterBinding served.
    pub binding_name: String,
    /// Namespace of the binding's Secret when `secretRef.namespace` is empty.
    pub secret_namespace: String,
    /// Options of the worker client (user agent, QPS limit, timeouts).
    pub client_options: ClientOptions,
    /// How often virtual node Leases are renewed (Kubernetes: 10 s).
    pub lease_renew_interval: Duration,
    /// `leaseDurationSeconds` of virtual node Leases (Kubernetes: 40 s).
    pub lease_duration: Duration,
    /// Wait between attempts to reach the worker.
    pub connect_retry_interval: Duration,
    /// Wait before retrying a failed reconcile, or re-checking a virtual node being drained.
    pub retry_interval: Duration,
    /// Longest wait between retries of a failing top-down reconcile (the wait doubles from
    /// `retry_interval` on each failure).
    pub max_retry_interval: Duration,
    /// How long a top-down request may take before it counts as failed (a hung API server
    /// must not hold a reconcile forever).
    pub request_timeout: Duration,
    /// How long the worker may take to answer a connectivity probe.
    pub probe_timeout: Duration,
    /// Virtual nodes reconciled at once; also the number of workers of each top-down pod
    /// queue (a quarter of it for copies and tokens).
    pub workers: usize,
    /// Where the virtual nodes' kubelet API is served.
    pub proxier: ProxierEndpoint,
    /// The clock time windows are evaluated with.
    pub clock: Clock,
    /// Where to record metrics (none by default).
    pub metrics: Option<SyncerMetrics>,
}

impl SyncerConfig {
    /// Defaults for the binding `binding_name`.
    pub fn new(binding_name: impl Into<String>) -> SyncerConfig {
        SyncerConfig {
            binding_name: binding_name.into(),
            secret_namespace: "kubeocean-system".to_owned(),
            client_options: ClientOptions::new(kube_kit::client::user_agent(
                "kubeocean-syncer",
                env!("CARGO_PKG_VERSION"),
            )),
            lease_renew_interval: Duration::from_secs(10),
            lease_duration: Duration::from_secs(40),
            connect_retry_interval: Duration::from_secs(5),
            retry_interval: Duration::from_secs(1),
            max_retry_interval: Duration::from_secs(60),
            request_timeout: Duration::from_secs(30),
            probe_timeout: Duration::from_secs(5),
            workers: 16,
            proxier: ProxierEndpoint::default(),
            clock: Clock::system(),
            metrics: None,
        }
    }
}

/// What failed while syncing, on which object.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// Writing or deleting a virtual node failed.
    #[error("cannot {action} virtual node {name}: {source}")]
    VirtualNode {
        /// What was attempted.
        action: &'static str,
        /// Virtual node name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Labelling a physical node failed.
    #[error("cannot label physical node {name}: {source}")]
    PhysicalNode {
        /// Physical node name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Listing or deleting the virtual pods of a node being drained failed.
    #[error("cannot {action} the pods of virtual node {node}: {source}")]
    VirtualPods {
        /// What was attempted.
        action: &'static str,
        /// Virtual node name.
        node: String,
        /// The API error.
        source: kube::Error,
    },
    /// Renewing or deleting a virtual node's Lease failed.
    #[error("cannot {action} Lease kube-node-lease/{name}: {source}")]
    Lease {
        /// What was attempted.
        action: &'static str,
        /// Lease name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Mirroring a CSINode failed.
    #[error("cannot {action} CSINode {name}: {source}")]
    CsiNode {
        /// What was attempted.
        action: &'static str,
        /// CSINode name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Writing a policy's status failed.
    #[error("cannot write the status of ResourceLeasingPolicy {name}: {source}")]
    PolicyStatus {
        /// Policy name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Writing the binding's status failed.
    #[error("cannot write the status of ClusterBinding {name}: {source}")]
    BindingStatus {
        /// Binding name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
}

impl SyncError {
    /// A short reason for metrics and logs.
    pub fn reason(&self) -> &'static str {
        match self {
            SyncError::VirtualNode { .. } => "VirtualNodeWrite",
            SyncError::PhysicalNode { .. } => "PhysicalNodeLabel",
            SyncError::VirtualPods { .. } => "VirtualPodDelete",
            SyncError::Lease { .. } => "LeaseWrite",
            SyncError::CsiNode { .. } => "CSINodeWrite",
            SyncError::PolicyStatus { .. } => "PolicyStatusWrite",
            SyncError::BindingStatus { .. } => "BindingStatusWrite",
        }
    }
}

/// The HTTP status of an API error, if it is one.
pub(crate) fn api_code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

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
    fn new(
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

    fn worker_index_mut(&self) -> RwLockWriteGuard<'_, WorkerIndex> {
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

    fn computing_index_mut(&self) -> RwLockWriteGuard<'_, ComputingIndex> {
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

    fn enqueue_nodes(&self, names: Vec<String>) {
        self.nodes.add_all(names.iter().map(String::as_str));
    }

    /// Queues nodes whose pod usage changed, a moment later: pods arrive in bursts (a
    /// Deployment scaling, a batch mapped down), and one re-evaluation then covers the burst
    /// instead of one virtual node update per pod.
    fn enqueue_nodes_after_pod_changes(&self, names: Vec<String>) {
        let at = Instant::now() + POD_USAGE_SETTLE;
        for name in &names {
            self.nodes.add_at(name, at);
        }
    }

    /// Queues every physical node and every virtual node's physical node.
    fn enqueue_all_nodes(&self) {
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

/// The bottom-up syncer of one ClusterBinding.
pub struct Syncer {
    computing: Client,
    config: SyncerConfig,
    engine: Arc<dyn LeasingPolicyEngine>,
}

impl Syncer {
    /// A syncer with Kubeocean's leasing rules.
    pub fn new(computing: Client, config: SyncerConfig) -> Syncer {
        Syncer {
            computing,
            config,
            engine: Arc::new(DefaultLeasingEngine),
        }
    }

    /// Replaces the leasing engine.
    #[must_use]
    pub fn with_engine(mut self, engine: Arc<dyn LeasingPolicyEngine>) -> Syncer {
        self.engine = engine;
        self
    }

    /// Runs until `token` is cancelled: reaches the worker through the binding's Secret
    /// (reporting problems on the binding's status and retrying), then syncs; reconnects
    /// when the binding's `secretRef` changes.
    pub async fn run(self, token: CancellationToken) {
        let name = self.config.binding_name.clone();
        let bindings: Api<ClusterBinding> = Api::all(self.computing.clone());
        let mut last_problem: Option<String> = None;
        while !token.is_cancelled() {
            let binding = match bindings.get_opt(&name).await {
                Ok(Some(binding)) => binding,
                Ok(None) => {
                    self.log_once(
                        &mut last_problem,
                        format!("ClusterBinding {name} not found"),
                    );
                    self.pause(&token).await;
                    continue;
                }
                Err(err) => {
                    self.log_once(
                        &mut last_problem,
                        format!("cannot read ClusterBinding {name}: {err}"),
                    );
                    self.pause(&token).await;
                    continue;
                }
            };
            let connected = connect_worker(
                &self.computing,
                &binding,
                &self.config.secret_namespace,
                &self.config.client_options,
                self.config.probe_timeout,
            )
            .await;
            let outcome = connected.as_ref().map(|_| ());
            let conditions = binding::connection_conditions(
                outcome,
                binding.metadata.generation,
                &self.config.clock,
            );
            if let Err(err) =
                binding::update_binding_conditions(&self.computing, &name, conditions).await
            {
                tracing::warn!(binding = %name, error = %err, "cannot report the connection");
            }
            match connected {
                Err(err) => {
                    self.log_once(&mut last_problem, err.to_string());
                    self.pause(&token).await;
                }
                Ok(worker) => {
                    last_problem = None;
                    tracing::info!(binding = %name, "connected to the worker cluster");
                    let ctx = Arc::new(Context::new(
                        self.computing.clone(),
                        worker,
                        self.config.clone(),
                        self.engine.clone(),
                    ));
                    run_session(ctx, &binding, &token).await;
                }
            }
        }
    }

    fn log_once(&self, last: &mut Option<String>, problem: String) {
        if last.as_deref() != Some(problem.as_str()) {
            tracing::warn!(binding = %self.config.binding_name, "{problem}");
            *last = Some(problem);
        }
    }

    async fn pause(&self, token: &CancellationToken) {
        tokio::select! {
            _ = token.cancelled() => {}
            _ = tokio::time::sleep(self.config.connect_retry_interval) => {}
        }
    }
}

/// One connection's worth of syncing: watches, reconcilers (bottom-up and top-down) and the
/// Lease loop, until the outer token is cancelled or the binding's Secret reference or
/// mount namespace changes.
async fn run_session(ctx: Arc<Context>, binding: &ClusterBinding, outer: &CancellationToken) {
    let token = outer.child_token();
    let mut tasks = JoinSet::new();
    let mut synced = Vec::new();
    let binding_name = ctx.config.binding_name.clone();
    let ours = format!("{}={}", labels::CLUSTER_BINDING, binding_name);
    let secret_ref = binding.spec.secret_ref.clone();
    let topdown = TopDown::new(&ctx, binding);
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
    spawn_reflector::<Pod, _>(
        &mut tasks,
        &mut synced,
        Api::all(ctx.worker.clone()),
        watcher::Config::default(),
        "physical pods",
        &token,
        {
            let c = ctx.clone();
            let td = topdown.clone();
            move |change| {
                // One watch feeds both halves: the top-down store keeps our pods.
                if let Some(td) = &td {
                    td.on_physical_pods(&c, &change);
                }
                let affected = {
                    let mut index = c.worker_index_mut();
                    match change {
                        Change::Applied(p) => index.apply_pod(&p),
                        Change::Deleted(p) => index.delete_pod(&p),
                        Change::Relisted(all) => index.replace_pods(all),
                    }
                };
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
            if let Some(td) = &topdown {
                topdown_session::start(&ctx, td, &mut tasks, &token);
            }
        }
    }
    token.cancelled().await;
    while tasks.join_next().await.is_some() {}
}

/// Starts one watch feeding `handle`; its first complete list is reported on a channel
/// pushed to `synced`.
pub(crate) fn spawn_reflector<K, F>(
    tasks: &mut JoinSet<()>,
    synced: &mut Vec<oneshot::Receiver<()>>,
    api: Api<Slim<K>>,
    config: watcher::Config,
    what: &'static str,
    token: &CancellationToken,
    handle: F,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    K::DynamicType: Clone + Default + Eq + std::hash::Hash,
    F: FnMut(Change<K>) + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    synced.push(rx);
    tasks.spawn(reflector::reflect(
        api,
        config,
        what,
        tx,
        token.clone(),
        handle,
    ));
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
    }
}
