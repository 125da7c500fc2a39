//! Running a kube-runtime [`Controller`] with the conventions every controller shares:
//! per-controller metrics, a span per reconcile naming the object, exponential requeue
//! backoff per object on errors, a Warning Event on the object for each failure, readiness
//! once the cache has synced, and graceful shutdown on a token (in-flight reconciles finish).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use kube::Resource;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use serde::de::DeserializeOwned;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::admin::{Metrics, ReadyFlag};

/// The longest Event note the API accepts.
pub const MAX_EVENT_NOTE_BYTES: usize = 1024;

/// An error a reconciler returns; its reason labels metrics and Events.
pub trait ReconcileError: std::error::Error + Send + Sync + 'static {
    /// A short, low-cardinality `PascalCase` reason, e.g. `WorkerUnreachable`.
    fn reason(&self) -> Cow<'static, str>;
}

/// Exponential requeue delay after consecutive failures of one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Delay after the first failure.
    pub base: Duration,
    /// Upper bound on the delay.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            base: Duration::from_secs(1),
            max: Duration::from_secs(300),
        }
    }
}

impl Backoff {
    /// The delay after `failures` consecutive failures (1 for the first): base · 2^(n-1),
    /// capped at `max`.
    pub fn delay(&self, failures: u32) -> Duration {
        let exponent = failures.saturating_sub(1).min(31);
        self.base.saturating_mul(1u32 << exponent).min(self.max)
    }
}

/// Labels of the per-controller metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// Controller name.
    pub controller: String,
}

/// Labels of the error counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// Controller name.
    pub controller: String,
    /// [`ReconcileError::reason`].
    pub reason: String,
}

type DurationFamily = Family<ControllerLabels, Histogram, fn() -> Histogram>;

/// `controller_reconciles_total`, `controller_reconcile_errors_total{reason}` and
/// `controller_reconcile_duration_seconds`, labelled by controller; register once and share.
#[derive(Clone, Debug)]
pub struct ControllerMetrics {
    reconciles: Family<ControllerLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    duration: DurationFamily,
}

fn duration_histogram() -> Histogram {
    // 5 ms to about 41 s.
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

impl ControllerMetrics {
    /// Creates the metrics and registers them into `metrics`.
    pub fn register(metrics: &Metrics) -> Self {
        let this = Self {
            reconciles: Family::default(),
            errors: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
        };
        metrics.with_registry(|registry| {
            registry.register(
                "controller_reconciles",
                "Reconciles run, by controller",
                this.reconciles.clone(),
            );
            registry.register(
                "controller_reconcile_errors",
                "Reconciles that failed, by controller and reason",
                this.errors.clone(),
            );
            registry.register(
                "controller_reconcile_duration_seconds",
                "Time taken by reconciles, by controller",
                this.duration.clone(),
            );
        });
        this
    }

    /// Records one reconcile of `controller` that took `took` and failed with `reason`, if any.
    pub fn record(&self, controller: &str, took: Duration, failure: Option<&str>) {
        let labels = ControllerLabels {
            controller: controller.to_owned(),
        };
        self.reconciles.get_or_create(&labels).inc();
        self.duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        if let Some(reason) = failure {
            self.errors
                .get_or_create(&ErrorLabels {
                    controller: controller.to_owned(),
                    reason: reason.to_owned(),
                })
                .inc();
        }
    }
}

/// The Warning Event published on an object whose reconcile failed.
pub fn failure_event(reason: &str, message: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: reason.to_owned(),
        note: Some(truncate_utf8(message, MAX_EVENT_NOTE_BYTES).to_owned()),
        action: "Reconcile".to_owned(),
        secondary: None,
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `namespace/name` (or `name` for cluster-scoped objects, whose namespace is unset or empty).
pub fn object_key<K: Resource>(obj: &K) -> String {
    let meta = obj.meta();
    let name = meta.name.as_deref().unwrap_or("");
    match meta.namespace.as_deref().filter(|ns| !ns.is_empty()) {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
    }
}

/// Consecutive failures per object, for the backoff.
#[derive(Debug, Default)]
struct FailureCounts(Mutex<HashMap<String, u32>>);

impl FailureCounts {
    fn bump(&self, key: &str) -> u32 {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let n = map.entry(key.to_owned()).or_insert(0);
        *n = n.saturating_add(1);
        *n
    }

    fn reset(&self, key: &str) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

/// What every reconcile of one runner shares.
struct Shared<C> {
    name: String,
    context: Arc<C>,
    metrics: ControllerMetrics,
    recorder: Option<Recorder>,
    backoff: Backoff,
    failures: FailureCounts,
}

/// Runs one controller with the shared conventions; see the module docs.
pub struct ControllerRunner<C> {
    name: String,
    context: Arc<C>,
    metrics: ControllerMetrics,
    recorder: Option<Recorder>,
    backoff: Backoff,
    ready: Option<ReadyFlag>,
}

impl<C: Send + Sync + 'static> ControllerRunner<C> {
    /// A runner for the controller `name` with the user context `context`.
    pub fn new(name: impl Into<String>, context: Arc<C>, metrics: ControllerMetrics) -> Self {
        Self {
            name: name.into(),
            context,
            metrics,
            recorder: None,
            backoff: Backoff::default(),
            ready: None,
        }
    }

    /// Publish a Warning Event on the object for each failed reconcile.
    #[must_use]
    pub fn with_recorder(mut self, recorder: Recorder) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Use this requeue backoff on errors.
    #[must_use]
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Hold `flag` not ready while this controller runs and its cache has not synced yet.
    /// A stopped controller (e.g. on a standby replica) has no cache to wait for, so the flag
    /// is set ready again when it stops.
    #[must_use]
    pub fn with_ready_flag(mut self, flag: ReadyFlag) -> Self {
        self.ready = Some(flag);
        self
    }

    /// Runs `controller` with `reconcile` until `shutdown`, letting in-flight reconciles
    /// finish.
    pub async fn run<K, F, Fut, E>(
        self,
        controller: Controller<K>,
        reconcile: F,
        shutdown: CancellationToken,
    ) where
        K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        K::DynamicType: Debug + Unpin + Eq + Hash + Clone + Default + Send + Sync,
        F: Fn(Arc<K>, Arc<C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: ReconcileError,
    {
        let shared = Arc::new(Shared {
            name: self.name.clone(),
            context: self.context,
            metrics: self.metrics,
            recorder: self.recorder,
            backoff: self.backoff,
            failures: FailureCounts::default(),
        });
        let store = controller.store();
        let name = self.name;
        let reconcile = Arc::new(reconcile);
        let run = controller
            .graceful_shutdown_on(shutdown.clone().cancelled_owned())
            .run(
                move |obj: Arc<K>, shared: Arc<Shared<C>>| {
                    let work = reconcile(obj.clone(), shared.context.clone());
                    observed_reconcile(obj, shared, work)
                },
                |obj: Arc<K>, _err: &E, shared: Arc<Shared<C>>| {
                    let failures = shared.failures.bump(&object_key(obj.as_ref()));
                    Action::requeue(shared.backoff.delay(failures))
                },
                shared,
            )
            .for_each(|result| {
                match result {
                    Ok(_) | Err(controller::Error::ReconcilerFailed(..)) => {}
                    Err(controller::Error::ObjectNotFound(obj)) => {
                        tracing::debug!(controller = %name, object = %obj, "object gone before reconcile");
                    }
                    Err(err) => tracing::warn!(controller = %name, error = %err, "controller error"),
                }
                futures::future::ready(())
            });
        let ready = async {
            if let Some(flag) = &self.ready {
                flag.set(false);
                tokio::select! {
                    _ = store.wait_until_ready() => {}
                    () = shutdown.cancelled() => {}
                }
                flag.set(true);
            }
        };
        futures::join!(run, ready);
        if let Some(flag) = &self.ready {
            flag.set(true);
        }
    }
}

async fn observed_reconcile<K, C, E>(
    obj: Arc<K>,
    shared: Arc<Shared<C>>,
    work: impl Future<Output = Result<Action, E>>,
) -> Result<Action, E>
where
    K: Resource,
    K::DynamicType: Default,
    E: ReconcileError,
{
    let key = object_key(obj.as_ref());
    let span = tracing::info_span!("reconcile", controller = %shared.name, object = %key);
    let start = Instant::now();
    let result = work.instrument(span.clone()).await;
    let reason = result.as_ref().err().map(ReconcileError::reason);
    shared
        .metrics
        .record(&shared.name, start.elapsed(), reason.as_deref());
    match (&result, reason) {
        (Ok(_), _) => shared.failures.reset(&key),
        (Err(err), Some(reason)) => {
            tracing::warn!(parent: &span, error = %err, %reason, "reconcile failed");
            if let Some(recorder) = &shared.recorder {
                let reference = obj.object_ref(&K::DynamicType::default());
                let event = failure_event(&reason, &err.to_string());
                if let Err(publish_err) = recorder.publish(&event, &reference).await {
                    tracing::warn!(parent: &span, error = %publish_err, "could not publish failure event");
                }
            }
        }
        (Err(_), None) => {}
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::api::ObjectMeta;
        for (namespace, name, want) in [
            (Some("ns"), Some("a"), "ns/a"),
            (None, Some("node-1"), "node-1"),
            (Some(""), Some("pv-1"), "pv-1"),
            (Some("ns"), None, "ns/"),
        ] {
            let obj = ConfigMap {
                metadata: ObjectMeta {
                    namespace: namespace.map(str::to_owned),
                    name: name.map(str::to_owned),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            };
            assert_eq!(object_key(&obj), want, "{namespace:?} {name:?}");
        }
    }

    #[test]
    fn backoff_table() {
        let b = Backoff {
            base: Duration::from_millis(500),
            max: Duration::from_secs(10),
        };
        for (failures, want_ms) in [
            (0, 500),
            (1, 500),
            (2, 1_000),
            (3, 2_000),
            (5, 8_000),
            (6, 10_000),
            (u32::MAX, 10_000),
        ] {
            assert_eq!(
                b.delay(failures),
                Duration::from_millis(want_ms),
                "{failures}"
            );
        }
    }

    #[test]
    fn failure_event_is_a_warning_with_bounded_note() {
        let long = "é".repeat(700); // 1400 bytes
        let ev = failure_event("WorkerUnreachable", &long);
        assert_eq!(ev.type_, EventType::Warning);
        assert_eq!(ev.reason, "WorkerUnreachable");
        let note = ev.note.unwrap();
        assert!(note.len() <= MAX_EVENT_NOTE_BYTES && note.len() >= MAX_EVENT_NOTE_BYTES - 1);
        assert!(long.starts_with(&note));
    }

    #[test]
    fn truncate_table() {
        for (s, max, want) in [
            ("abc", 5, "abc"),
            ("abc", 2, "ab"),
            ("aé", 2, "a"),
            ("", 0, ""),
        ] {
            assert_eq!(truncate_utf8(s, max), want);
        }
    }

    #[test]
    fn metrics_count_reconciles_and_errors_by_reason() {
        let metrics = Metrics::new();
        let cm = ControllerMetrics::register(&metrics);
        cm.record("pods", Duration::from_millis(3), None);
        cm.record("pods", Duration::from_millis(30), Some("Conflict"));
        cm.record("pods", Duration::from_millis(30), Some("Conflict"));
        let text = metrics.encode().unwrap();
        assert!(
            text.contains("controller_reconciles_total{controller=\"pods\"} 3"),
            "{text}"
        );
        assert!(
            text.contains(
                "controller_reconcile_errors_total{controller=\"pods\",reason=\"Conflict\"} 2"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "controller_reconcile_duration_seconds_bucket{le=\"0.005\",controller=\"pods\"} 1"
            ),
            "{text}"
        );
    }

    #[test]
    fn failure_counts_bump_and_reset() {
        let counts = FailureCounts::default();
        assert_eq!(counts.bump("a/x"), 1);
        assert_eq!(counts.bump("a/x"), 2);
        assert_eq!(counts.bump("a/y"), 1);
        counts.reset("a/x");
        assert_eq!(counts.bump("a/x"), 1);
    }
}
