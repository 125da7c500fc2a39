//! The one worker loop of every queue-driven reconciler of a session: take a key off the
//! reconciler's queue, reconcile it, record the outcome (duration and failure reason in
//! metrics, a Warning Event on the object concerned) and requeue it — at the instant the
//! reconciler asked for, or, after a failure, with the one retry policy ([`backoff`]).

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::EventType;
use kube_kit::controller::Backoff;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::SyncerConfig;
use super::context::Context;
use super::queue::{FailureCounts, WorkQueue};

/// An error a reconciler returns: its reason labels metrics and Events.
pub trait Failure: Display {
    /// A short, low-cardinality `PascalCase` reason.
    fn reason(&self) -> &'static str;
}

/// One queue-driven reconciler, as the worker loop sees it.
pub trait Reconciler: Send + Sync {
    /// What a reconcile fails with.
    type Error: Failure + Send;

    /// Name in metrics and logs.
    fn name(&self) -> &'static str;

    /// The queue of keys to reconcile.
    fn queue<'a>(&'a self, ctx: &'a Context) -> &'a WorkQueue;

    /// Consecutive failures per key, shared by every worker of this reconciler.
    fn failures<'a>(&'a self, ctx: &'a Context) -> &'a FailureCounts;

    /// Reconciles `key`; returns when to look at it again.
    fn reconcile(
        &self,
        ctx: &Context,
        key: &str,
    ) -> impl Future<Output = Result<Option<Instant>, Self::Error>> + Send;

    /// The object of the computing cluster a failure of `key` is reported on as a Warning
    /// Event; `None` reports none.
    fn failure_target(&self, ctx: &Context, key: &str) -> Option<ObjectReference>;

    /// Called on each failure, before the Event (e.g. a reconciler's own error counter).
    fn on_failure(&self, _ctx: &Context, _reason: &'static str) {}
}

/// The retry policy of every reconciler: `retry_interval` after the first failure of a key,
/// doubling on each further one up to `max_retry_interval`.
pub fn backoff(config: &SyncerConfig) -> Backoff {
    Backoff {
        base: config.retry_interval,
        max: config.max_retry_interval.max(config.retry_interval),
    }
}

/// Takes keys off `reconciler`'s queue until `token` is cancelled.
pub async fn run<R: Reconciler>(ctx: Arc<Context>, reconciler: R, token: CancellationToken) {
    let backoff = backoff(&ctx.config);
    let queue = reconciler.queue(&ctx);
    let name = reconciler.name();
    while let Some(key) = queue.next(&token).await {
        let started = std::time::Instant::now();
        let result = reconciler.reconcile(&ctx, &key).await;
        if let Some(metrics) = &ctx.config.metrics {
            let failure = result.as_ref().err().map(Failure::reason);
            metrics.reconciled(name, started.elapsed(), failure);
        }
        match result {
            Ok(next) => {
                reconciler.failures(&ctx).succeeded(&key);
                if let Some(at) = next {
                    queue.add_at(&key, at);
                }
            }
            Err(err) => {
                let failures = reconciler.failures(&ctx).failed(&key);
                tracing::warn!(
                    binding = %ctx.config.binding_name,
                    reconciler = name,
                    key = %key,
                    failures,
                    error = %err,
                    "reconcile failed; retrying"
                );
                reconciler.on_failure(&ctx, err.reason());
                queue.add_at(&key, Instant::now() + backoff.delay(failures));
                if let Some(target) = reconciler.failure_target(&ctx, &key) {
                    ctx.publish(&target, EventType::Warning, err.reason(), &err.to_string())
                        .await;
                }
            }
        }
        queue.done(&key);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn retries_back_off_from_the_retry_interval_to_the_maximum() {
        let mut config = SyncerConfig::new("b");
        config.retry_interval = Duration::from_millis(100);
        config.max_retry_interval = Duration::from_millis(350);
        let policy = backoff(&config);
        assert_eq!(policy.delay(1), Duration::from_millis(100));
        assert_eq!(policy.delay(2), Duration::from_millis(200));
        assert_eq!(policy.delay(3), Duration::from_millis(350));
        config.max_retry_interval = Duration::ZERO;
        assert_eq!(backoff(&config).delay(5), Duration::from_millis(100));
    }
}
