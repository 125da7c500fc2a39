//! The one worker loop of every queue-driven reconciler of a session: take a key off the
//! reconciler's queue, reconcile it, record the outcome (duration and failure reason in
//! metrics, a Warning Event on the object concerned) and requeue it — at the instant the
//! reconciler asked for, or, after a failure, with the one retry policy ([`backoff`]).

use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::EventType;
use kube_kit::controller::Backoff;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::SyncerConfig;
use super::context::Context;
pub use super::error::Failure;
use super::queue::{FailureCounts, WorkQueue};

/// One queue-driven reconciler, as the worker loop sees it.
pub trait Reconciler: Send + Sync {
    /// What a reconcile fails with.
    type Error: Failure + std::error::Error + Send + 'static;

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
                let message = readable(&err.to_string());
                reconciler.on_failure(&ctx, err.reason());
                queue.add_at(&key, Instant::now() + backoff.delay(failures));
                if is_conflict(&err) && failures <= QUIET_CONFLICTS {
                    // Another writer got there first: the retry reads the new version.
                    tracing::debug!(
                        binding = %ctx.config.binding_name,
                        reconciler = name,
                        key = %key,
                        failures,
                        error = %message,
                        "write conflict; retrying"
                    );
                    queue.done(&key);
                    continue;
                }
                tracing::warn!(
                    binding = %ctx.config.binding_name,
                    reconciler = name,
                    key = %key,
                    failures,
                    error = %message,
                    "reconcile failed; retrying"
                );
                if let Some(target) = reconciler.failure_target(&ctx, &key) {
                    ctx.publish(&target, EventType::Warning, err.reason(), &message)
                        .await;
                }
            }
        }
        queue.done(&key);
    }
}

/// How many conflicts in a row on one key are retried without a Warning: a write conflict
/// (409) means another writer changed the object meanwhile, which the next read sees.
const QUIET_CONFLICTS: u32 = 3;

/// Whether `err` comes from a 409 Conflict of the API server (anywhere in its causes).
pub fn is_conflict(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = cause {
        if let Some(kube::Error::Api(status)) = current.downcast_ref::<kube::Error>() {
            return status.code == 409;
        }
        cause = current.source();
    }
    false
}

/// `message` without the Rust debug dumps kube's API errors carry (`ApiError: m: Reason
/// (Status { .. })` reads `m: Reason`), for Events and logs that people read.
pub fn readable(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(" (Status {") {
        out.push_str(&rest[..at]);
        // Skip to the parenthesis that closes the dump (quoted text may hold parentheses).
        let mut depth = 0usize;
        let mut quoted = false;
        let mut escaped = false;
        let mut end = rest.len();
        for (i, c) in rest[at + 1..].char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if quoted => escaped = true,
                '"' => quoted = !quoted,
                '(' if !quoted => depth += 1,
                ')' if !quoted => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = at + 1 + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.replace("ApiError: ", "")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn api_error(code: u16, message: &str, reason: &str) -> kube::Error {
        kube::Error::Api(Box::new(
            serde_json::from_value(serde_json::json!({
                "status": "Failure", "message": message, "reason": reason, "code": code,
            }))
            .unwrap(),
        ))
    }

    #[test]
    fn api_errors_read_without_debug_dumps() {
        let conflict = api_error(
            409,
            "Operation cannot be fulfilled on nodes \"vnode-a\": the object has been modified (please retry)",
            "Conflict",
        );
        let err = super::super::error::SyncError::VirtualNode {
            action: "update",
            name: "vnode-a".into(),
            source: conflict,
        };
        let text = err.to_string();
        assert!(text.contains("Status {"), "{text}");
        assert_eq!(
            readable(&text),
            "cannot update virtual node vnode-a: Operation cannot be fulfilled on nodes \"vnode-a\": the object has been modified (please retry): Conflict"
        );
        assert!(is_conflict(&err));
        let forbidden = super::super::error::SyncError::PhysicalNode {
            name: "n1".into(),
            source: api_error(403, "nodes \"n1\" is forbidden", "Forbidden"),
        };
        assert!(!is_conflict(&forbidden));
        assert_eq!(
            readable(&forbidden.to_string()),
            "cannot label physical node n1: nodes \"n1\" is forbidden: Forbidden"
        );
        for plain in ["no free proxier port", "a (b) c", ""] {
            assert_eq!(readable(plain), plain);
        }
    }

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
