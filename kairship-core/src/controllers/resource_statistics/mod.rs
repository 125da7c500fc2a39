//! resource-statistics: `status.summary` of each instance, computed from the instance's watch
//! caches (never a list per pass) on every cached change, and written only when the value
//! changed.

pub mod cache;
pub mod summary;

use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::Context;
use super::status::update_status;
use crate::instance::InstanceSummary;
use cache::InstanceCache;
use summary::{aggregate, instance_summary, needs_update};

/// The summary the caches currently give.
pub fn compute(cache: &InstanceCache) -> InstanceSummary {
    let members = aggregate(&cache.members());
    for skipped in &members.skipped {
        tracing::debug!(
            cluster = %skipped.cluster,
            resource = %skipped.resource,
            error = %skipped.error,
            "member quantity left out of the summary"
        );
    }
    instance_summary(&members, &cache.object_counts())
}

/// Follows the caches of instance `name` until `cancel`, writing its summary on real changes.
pub async fn run_instance(
    ctx: Arc<Context>,
    name: String,
    mut caches: watch::Receiver<Option<Arc<InstanceCache>>>,
    cancel: CancellationToken,
) {
    loop {
        let cache = caches.borrow_and_update().clone();
        let follow = async {
            match cache {
                Some(cache) => follow_cache(&ctx, &name, &cache).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = cancel.cancelled() => return,
            changed = caches.changed() => if changed.is_err() { return },
            () = follow => return,
        }
    }
}

/// Writes the summary after every change of one cache generation.
async fn follow_cache(ctx: &Context, name: &str, cache: &InstanceCache) {
    let mut changes = cache.subscribe();
    if !cache.wait_synced(ctx.config.cache_sync_timeout).await {
        tracing::warn!(instance = %name, "not every watch cache synced; summing what is cached");
    }
    let api = ctx.instances();
    // The summary known to be stored (None: not known), so an unchanged pass costs no call.
    let mut known: Option<InstanceSummary> = None;
    loop {
        changes.borrow_and_update();
        let desired = compute(cache);
        if needs_update(known.as_ref(), &desired) {
            let result = update_status(&api, name, |_, status| {
                if needs_update(status.summary.as_ref(), &desired) {
                    status.summary = Some(desired.clone());
                }
            })
            .await;
            match result {
                Ok(wrote) => {
                    if wrote {
                        ctx.writes.statistics.inc();
                    }
                    known = Some(desired);
                }
                Err(err) => {
                    tracing::warn!(instance = %name, error = %err, "cannot write the summary");
                    known = None;
                    tokio::time::sleep(
                        ctx.config
                            .request_timeout
                            .min(std::time::Duration::from_secs(1)),
                    )
                    .await;
                    continue;
                }
            }
        }
        // Counted once the pass is complete, written or not.
        ctx.writes.statistics_passes.inc();
        if changes.changed().await.is_err() {
            return;
        }
    }
}
