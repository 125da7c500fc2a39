//! Embedded mode (`--embedded`): instead of Deployments, the manager runs one task group per
//! ClusterBinding in its own process — the syncer and, when the runtime has one, the proxier.
//!
//! What a group runs is a [`BindingRuntime`]; [`SyncerRuntime`] runs the syncer alone, and
//! [`super::proxier_runtime::SyncerProxierRuntime`] the proxier and the syncer. The [`EmbeddedRunner`] keeps one supervised group per binding: a group that
//! fails (or panics) is restarted with exponential backoff without touching the others; a
//! group is restarted when its binding's spec changes and stopped when the binding is gone;
//! a group stopped for good has the runtime forget the binding ([`BindingRuntime::forget`]:
//! its metric series go with it).
//! Groups report the state of their components; the reconciler turns that into the
//! `SyncerReady` and `ProxierReady` conditions.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use kube::{Client, ResourceExt};
use kube_kit::controller::Backoff;
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinHandle};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::status::{WorkloadState, reason};
use crate::crd::ClusterBinding;
use crate::syncer::{Syncer, SyncerConfig};

/// How one component of a group is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ComponentState {
    /// Being started.
    Starting,
    /// Running; what it serves.
    Running(String),
    /// Running with a self-signed serving certificate; what it serves and why.
    RunningSelfSigned(String),
    /// Stopped with an error (the group restarts after a backoff).
    Failed(String),
    /// Not part of this runtime; why.
    Disabled(String),
}

impl ComponentState {
    /// The workload state this component state reports.
    pub fn workload_state(&self) -> WorkloadState {
        match self {
            ComponentState::Starting => WorkloadState::Progressing("starting".to_owned()),
            ComponentState::Running(what) => WorkloadState::Ready {
                reason: reason::TASK_RUNNING,
                message: what.clone(),
            },
            ComponentState::RunningSelfSigned(what) => WorkloadState::Ready {
                reason: reason::SELF_SIGNED_CERTIFICATE,
                message: what.clone(),
            },
            ComponentState::Failed(error) => WorkloadState::Failed(error.clone()),
            ComponentState::Disabled(why) => WorkloadState::Ready {
                reason: reason::DISABLED,
                message: why.clone(),
            },
        }
    }
}

/// What a group reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeStatus {
    /// The syncer.
    pub syncer: ComponentState,
    /// The proxier.
    pub proxier: ComponentState,
    /// Restarts after failures so far.
    pub restarts: u32,
}

impl Default for RuntimeStatus {
    fn default() -> Self {
        RuntimeStatus {
            syncer: ComponentState::Starting,
            proxier: ComponentState::Starting,
            restarts: 0,
        }
    }
}

/// Lets a running [`BindingRuntime`] report its components' state.
#[derive(Clone, Debug)]
pub struct RuntimeReporter {
    status: watch::Sender<RuntimeStatus>,
    changes: watch::Sender<u64>,
}

impl RuntimeReporter {
    fn update(&self, change: impl FnOnce(&mut RuntimeStatus)) {
        let modified = self.status.send_if_modified(|s| {
            let before = s.clone();
            change(s);
            *s != before
        });
        if modified {
            self.changes.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Reports the syncer's state.
    pub fn syncer(&self, state: ComponentState) {
        self.update(|s| s.syncer = state);
    }

    /// Reports the proxier's state.
    pub fn proxier(&self, state: ComponentState) {
        self.update(|s| s.proxier = state);
    }
}

/// What runs for one binding in embedded mode.
#[async_trait]
pub trait BindingRuntime: Send + Sync {
    /// Runs the binding's components until `token` is cancelled (then returns `Ok`), or until
    /// one fails (then returns the error; the group is restarted after a backoff). Reports
    /// each component's state through `reporter`.
    async fn run(
        &self,
        binding: ClusterBinding,
        reporter: RuntimeReporter,
        token: CancellationToken,
    ) -> Result<(), String>;

    /// Called once the group of `binding` has stopped (its binding is gone or invalid): drops
    /// what the runtime keeps for it, such as its metric series. Nothing by default.
    fn forget(&self, binding: &str) {
        let _ = binding;
    }
}

/// Removes the per-binding series of `binding` from `config`'s metrics (what
/// [`BindingRuntime::forget`] does for the runtimes of this crate).
pub(crate) fn forget_metrics(config: &SyncerConfig, binding: &str) {
    if let Some(metrics) = &config.metrics {
        metrics.forget_binding(binding);
    }
}

/// Runs the syncer only; the virtual nodes' kubelet API is not served.
pub struct SyncerRuntime {
    computing: Client,
    base: SyncerConfig,
}

impl SyncerRuntime {
    /// Syncers against `computing`, configured as `base` (its binding name is replaced).
    pub fn new(computing: Client, base: SyncerConfig) -> SyncerRuntime {
        SyncerRuntime { computing, base }
    }
}

#[async_trait]
impl BindingRuntime for SyncerRuntime {
    async fn run(
        &self,
        binding: ClusterBinding,
        reporter: RuntimeReporter,
        token: CancellationToken,
    ) -> Result<(), String> {
        let mut config = self.base.clone();
        config.binding_name = binding.name_any();
        reporter.proxier(ComponentState::Disabled(
            "this manager runs no proxier: logs and exec of virtual pods are not served".to_owned(),
        ));
        reporter.syncer(ComponentState::Running(
            "the syncer runs inside the manager".to_owned(),
        ));
        Syncer::new(self.computing.clone(), config).run(token).await;
        Ok(())
    }

    fn forget(&self, binding: &str) {
        forget_metrics(&self.base, binding);
    }
}

/// The task of the current run of a group, so a group that ignores cancellation can be
/// aborted.
type RunSlot = Arc<Mutex<Option<AbortHandle>>>;

struct Group {
    spec_key: String,
    token: CancellationToken,
    status: watch::Receiver<RuntimeStatus>,
    handle: JoinHandle<()>,
    run: RunSlot,
}

impl Group {
    /// Cancels the group and waits up to `grace` for it to stop; then aborts it (a runtime
    /// blocked on a worker that does not answer must not hold up its binding).
    async fn shut_down(self, grace: Duration) {
        self.token.cancel();
        let mut handle = self.handle;
        if tokio::time::timeout(grace, &mut handle).await.is_err() {
            tracing::warn!(
                ?grace,
                "embedded syncer group did not stop in time; aborting it"
            );
            if let Some(run) = self
                .run
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
            {
                run.abort();
            }
            handle.abort();
            let _ = handle.await;
        }
    }
}

/// The groups of embedded mode; see the module docs.
pub struct EmbeddedRunner {
    runtime: Arc<dyn BindingRuntime>,
    backoff: Backoff,
    /// How long a run must last for its failure count to start again from zero.
    healthy_after: Duration,
    /// How long a stopped group may take before it is aborted.
    stop_grace: Duration,
    groups: Mutex<HashMap<String, Group>>,
    changes: watch::Sender<u64>,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for EmbeddedRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedRunner")
            .field("bindings", &self.names())
            .finish()
    }
}

/// The key that decides whether a group must be restarted: the binding's spec.
fn spec_key(binding: &ClusterBinding) -> String {
    serde_json::to_string(&binding.spec).unwrap_or_default()
}

impl EmbeddedRunner {
    /// A runner of `runtime`; every group stops when `shutdown` is cancelled.
    pub fn new(runtime: Arc<dyn BindingRuntime>, shutdown: CancellationToken) -> EmbeddedRunner {
        EmbeddedRunner {
            runtime,
            backoff: Backoff {
                base: Duration::from_secs(1),
                max: Duration::from_secs(60),
            },
            healthy_after: Duration::from_secs(60),
            stop_grace: Duration::from_secs(10),
            groups: Mutex::new(HashMap::new()),
            changes: watch::Sender::new(0),
            shutdown,
        }
    }

    /// Restarts failed groups after this backoff.
    #[must_use]
    pub fn with_backoff(mut self, backoff: Backoff) -> EmbeddedRunner {
        self.backoff = backoff;
        self
    }

    /// Aborts a stopped group that has not finished within `grace`.
    #[must_use]
    pub fn with_stop_grace(mut self, grace: Duration) -> EmbeddedRunner {
        self.stop_grace = grace;
        self
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Group>> {
        self.groups.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the group of `binding`, or restarts it when the spec changed; returns whether
    /// a group was (re)started.
    pub fn ensure(&self, binding: &ClusterBinding) -> bool {
        let name = binding.name_any();
        let key = spec_key(binding);
        let mut groups = self.lock();
        let previous = match groups.remove(&name) {
            Some(group) if group.spec_key == key && !group.handle.is_finished() => {
                groups.insert(name, group);
                return false;
            }
            Some(group) => {
                tracing::info!(binding = %name, "binding changed: restarting its embedded syncer");
                group.token.cancel();
                Some(group)
            }
            None => None,
        };
        let token = self.shutdown.child_token();
        let (status_tx, status_rx) = watch::channel(RuntimeStatus::default());
        let reporter = RuntimeReporter {
            status: status_tx,
            changes: self.changes.clone(),
        };
        let run: RunSlot = Arc::new(Mutex::new(None));
        let grace = self.stop_grace;
        let handle = tokio::spawn(supervise(
            Supervision {
                runtime: self.runtime.clone(),
                binding: binding.clone(),
                reporter,
                token: token.clone(),
                backoff: self.backoff,
                healthy_after: self.healthy_after,
                run: run.clone(),
            },
            previous.map(|p| p.shut_down(grace)),
        ));
        groups.insert(
            name,
            Group {
                spec_key: key,
                token,
                status: status_rx,
                handle,
                run,
            },
        );
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
        true
    }

    /// Stops the group of `binding`, waits until it has stopped, and has the runtime forget
    /// the binding.
    pub async fn stop(&self, binding: &str) {
        let group = self.lock().remove(binding);
        if let Some(group) = group {
            group.shut_down(self.stop_grace).await;
            self.runtime.forget(binding);
            self.changes.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Stops the groups of bindings not in `keep` (in the background).
    pub fn retain(&self, keep: &BTreeSet<String>) {
        let gone: Vec<String> = self
            .lock()
            .keys()
            .filter(|name| !keep.contains(*name))
            .cloned()
            .collect();
        for name in gone {
            tracing::info!(binding = %name, "binding gone: stopping its embedded syncer");
            let Some(group) = self.lock().remove(&name) else {
                continue;
            };
            group.token.cancel();
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                let runtime = self.runtime.clone();
                let grace = self.stop_grace;
                handle.spawn(async move {
                    group.shut_down(grace).await;
                    runtime.forget(&name);
                });
            }
        }
    }

    fn shut_down_in_background(&self, group: Group) {
        group.token.cancel();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(group.shut_down(self.stop_grace));
        }
    }

    /// What the group of `binding` reports, if it runs.
    pub fn status(&self, binding: &str) -> Option<RuntimeStatus> {
        self.lock().get(binding).map(|g| g.status.borrow().clone())
    }

    /// Bindings with a group.
    pub fn names(&self) -> BTreeSet<String> {
        self.lock().keys().cloned().collect()
    }

    /// A receiver that changes whenever a group starts, stops or reports.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Stops every group (without waiting).
    pub fn stop_all(&self) {
        let groups: Vec<Group> = self.lock().drain().map(|(_, g)| g).collect();
        for group in groups {
            self.shut_down_in_background(group);
        }
    }
}

/// What one group's supervisor needs.
struct Supervision {
    runtime: Arc<dyn BindingRuntime>,
    binding: ClusterBinding,
    reporter: RuntimeReporter,
    token: CancellationToken,
    backoff: Backoff,
    healthy_after: Duration,
    run: RunSlot,
}

/// Runs one group: the runtime in its own task (so a panic is contained), restarted with
/// backoff until `token` is cancelled. A replaced group is shut down first so two syncers of
/// one binding never run at once.
async fn supervise(s: Supervision, previous: Option<impl Future<Output = ()>>) {
    let name = s.binding.name_any();
    if let Some(previous) = previous {
        previous.await;
    }
    let mut failures: u32 = 0;
    while !s.token.is_cancelled() {
        s.reporter.update(|st| {
            st.syncer = ComponentState::Starting;
            st.proxier = ComponentState::Starting;
        });
        let started = Instant::now();
        let run = tokio::spawn({
            let runtime = s.runtime.clone();
            let binding = s.binding.clone();
            let reporter = s.reporter.clone();
            let token = s.token.child_token();
            async move { runtime.run(binding, reporter, token).await }
        });
        *s.run.lock().unwrap_or_else(PoisonError::into_inner) = Some(run.abort_handle());
        let outcome = run.await;
        if s.token.is_cancelled() {
            break;
        }
        let error = match outcome {
            Ok(Ok(())) => "stopped unexpectedly".to_owned(),
            Ok(Err(error)) => error,
            Err(join) if join.is_panic() => "panicked".to_owned(),
            Err(_) => "was cancelled".to_owned(),
        };
        if started.elapsed() >= s.healthy_after {
            failures = 0;
        }
        failures = failures.saturating_add(1);
        let delay = s.backoff.delay(failures);
        tracing::warn!(binding = %name, %error, ?delay, "embedded syncer group failed; restarting");
        let message = format!("{error} (restart {failures} in {delay:?})");
        s.reporter.update(|st| {
            st.restarts = failures;
            for component in [&mut st.syncer, &mut st.proxier] {
                if !matches!(component, ComponentState::Disabled(_)) {
                    *component = ComponentState::Failed(message.clone());
                }
            }
        });
        tokio::select! {
            () = s.token.cancelled() => break,
            () = tokio::time::sleep(delay) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn binding(name: &str, cluster_id: &str) -> ClusterBinding {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ClusterBinding",
            "metadata": {"name": name},
            "spec": {"clusterID": cluster_id, "secretRef": {"name": "kc"}},
        }))
        .unwrap()
    }

    /// Fails its first `failures` runs of binding "bad" (one of them by panicking), runs
    /// "good" until cancelled; counts starts per binding.
    struct Scripted {
        starts: Mutex<HashMap<String, u32>>,
        failures: u32,
        stopped: AtomicU32,
    }

    #[async_trait]
    impl BindingRuntime for Scripted {
        async fn run(
            &self,
            binding: ClusterBinding,
            reporter: RuntimeReporter,
            token: CancellationToken,
        ) -> Result<(), String> {
            let name = binding.name_any();
            let n = {
                let mut starts = self.starts.lock().unwrap();
                let n = starts.entry(name.clone()).or_insert(0);
                *n += 1;
                *n
            };
            if name == "bad" && n <= self.failures {
                if n == 2 {
                    panic!("scripted panic");
                }
                return Err(format!("cannot reach worker (attempt {n})"));
            }
            reporter.syncer(ComponentState::Running(binding.spec.cluster_id.clone()));
            reporter.proxier(ComponentState::Disabled("none".into()));
            token.cancelled().await;
            self.stopped.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    fn runner(failures: u32) -> (Arc<Scripted>, EmbeddedRunner, CancellationToken) {
        let runtime = Arc::new(Scripted {
            starts: Mutex::new(HashMap::new()),
            failures,
            stopped: AtomicU32::new(0),
        });
        let shutdown = CancellationToken::new();
        let runner = EmbeddedRunner::new(runtime.clone(), shutdown.clone()).with_backoff(Backoff {
            base: Duration::from_millis(10),
            max: Duration::from_millis(40),
        });
        (runtime, runner, shutdown)
    }

    async fn until(what: &str, mut check: impl FnMut() -> bool) {
        for _ in 0..400 {
            if check() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("timed out waiting for {what}");
    }

    #[tokio::test]
    async fn failing_group_restarts_without_stalling_the_others() {
        let (runtime, runner, shutdown) = runner(3);
        let mut changes = runner.subscribe();
        assert!(runner.ensure(&binding("bad", "b")));
        assert!(runner.ensure(&binding("good", "g")));
        until("good running", || {
            runner.status("good").map(|s| s.syncer) == Some(ComponentState::Running("g".into()))
        })
        .await;
        // "bad" fails three times (once by panicking), then runs.
        until("bad running after restarts", || {
            runner
                .status("bad")
                .is_some_and(|s| s.restarts == 3 && s.syncer == ComponentState::Running("b".into()))
        })
        .await;
        assert_eq!(runtime.starts.lock().unwrap()["bad"], 4);
        assert_eq!(
            runtime.starts.lock().unwrap()["good"],
            1,
            "good never restarted"
        );
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        shutdown.cancel();
        until("both stopped", || {
            runtime.stopped.load(Ordering::SeqCst) == 2
        })
        .await;
    }

    #[tokio::test]
    async fn spec_change_restarts_and_stop_ends_the_group() {
        let (runtime, runner, _shutdown) = runner(0);
        assert!(runner.ensure(&binding("good", "g1")));
        assert!(!runner.ensure(&binding("good", "g1")), "same spec: kept");
        until("running g1", || {
            runner.status("good").map(|s| s.syncer) == Some(ComponentState::Running("g1".into()))
        })
        .await;
        assert!(runner.ensure(&binding("good", "g2")), "new spec: restarted");
        until("running g2", || {
            runner.status("good").map(|s| s.syncer) == Some(ComponentState::Running("g2".into()))
        })
        .await;
        assert_eq!(
            runtime.stopped.load(Ordering::SeqCst),
            1,
            "old group stopped"
        );
        runner.stop("good").await;
        assert_eq!(runtime.stopped.load(Ordering::SeqCst), 2);
        assert!(runner.status("good").is_none());
        assert!(runner.names().is_empty());
    }

    #[tokio::test]
    async fn retain_stops_groups_of_vanished_bindings() {
        let (runtime, runner, _shutdown) = runner(0);
        runner.ensure(&binding("a", "a"));
        runner.ensure(&binding("b", "b"));
        until("both running", || {
            ["a", "b"].iter().all(|n| {
                runner
                    .status(n)
                    .is_some_and(|s| matches!(s.syncer, ComponentState::Running(_)))
            })
        })
        .await;
        runner.retain(&BTreeSet::from(["b".to_owned()]));
        assert_eq!(runner.names(), BTreeSet::from(["b".to_owned()]));
        until("a stopped", || runtime.stopped.load(Ordering::SeqCst) == 1).await;
    }

    #[test]
    fn component_states_map_to_workload_states() {
        for (state, want_ready, want_reason) in [
            (ComponentState::Starting, false, None),
            (
                ComponentState::Running("x".into()),
                true,
                Some(reason::TASK_RUNNING),
            ),
            (
                ComponentState::Disabled("x".into()),
                true,
                Some(reason::DISABLED),
            ),
            (ComponentState::Failed("x".into()), false, None),
        ] {
            let got = state.workload_state();
            match got {
                WorkloadState::Ready { reason, .. } => {
                    assert!(want_ready);
                    assert_eq!(Some(reason), want_reason);
                }
                _ => assert!(!want_ready, "{state:?}"),
            }
        }
    }
}
