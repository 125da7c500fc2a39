//! resource-statistics: `status.summary` of each instance, computed from the instance's
//! resources as the shared instance cache keeps them (never a list per pass) on every cached
//! change, and written only when the value changed.

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

/// Follows the caches of instance `name` while status-sync has a connection to it (`connected`
/// holds the connection's key), until `cancel`, writing its summary on real changes. A new
/// connection, or caches dropped under it, opens the caches again.
pub async fn run_instance(
    ctx: Arc<Context>,
    name: String,
    mut connected: watch::Receiver<Option<String>>,
    cancel: CancellationToken,
) {
    loop {
        let key = connected.borrow_and_update().clone();
        let follow = async {
            match key {
                Some(_) => follow_instance(&ctx, &name).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = cancel.cancelled() => return,
            changed = connected.changed() => if changed.is_err() { return },
            () = follow => {}
        }
    }
}

/// Opens the instance's caches and follows them, again whenever they are dropped.
async fn follow_instance(ctx: &Context, name: &str) {
    let pause = ctx
        .config
        .request_timeout
        .min(std::time::Duration::from_secs(1));
    loop {
        match InstanceCache::open(&ctx.instance_cache, name).await {
            Ok(cache) => {
                tokio::select! {
                    () = follow_cache(ctx, name, &cache) => {}
                    () = cache.gone() => {
                        tracing::debug!(instance = %name, "instance caches dropped; opening them again");
                    }
                }
            }
            Err(err) => {
                tracing::warn!(instance = %name, error = %err, "cannot open the instance's caches");
            }
        }
        tokio::time::sleep(pause).await;
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
        changes.changed().await;
    }
}
