//! One task set per Instance: status-sync probes and publishes the instance's connection, the
//! cache task keeps the instance's reflectors on the current connection, resource-statistics
//! follows the caches. Each instance has its own tasks and timeouts, so a slow or dead
//! instance never delays the others.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::connection::Connection;
use super::resource_statistics::cache::InstanceCache;
use super::{Context, resource_statistics, status_sync};
use crate::instance::Instance;

/// What the tasks of one instance publish.
struct Worker {
    cancel: CancellationToken,
    cache: watch::Receiver<Option<Arc<InstanceCache>>>,
}

/// The running per-instance task sets.
#[derive(Default)]
pub struct Workers {
    running: Mutex<HashMap<String, Worker>>,
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workers")
            .field("instances", &self.names())
            .finish()
    }
}

impl Workers {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Worker>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Names of the instances with running tasks.
    pub fn names(&self) -> BTreeSet<String> {
        self.lock().keys().cloned().collect()
    }

    /// The watch caches of `instance`, if connected.
    pub fn cache(&self, instance: &str) -> Option<Arc<InstanceCache>> {
        self.lock()
            .get(instance)
            .and_then(|w| w.cache.borrow().clone())
    }

    /// Stops the tasks of `instance`.
    pub fn stop(&self, instance: &str) {
        if let Some(worker) = self.lock().remove(instance) {
            worker.cancel.cancel();
        }
    }

    /// Stops every task set.
    pub fn stop_all(&self) {
        for (_, worker) in self.lock().drain() {
            worker.cancel.cancel();
        }
    }
}

/// Keeps one task set per Instance in the host cluster until `shutdown`.
pub async fn supervise(ctx: Arc<Context>, shutdown: CancellationToken) {
    // Workers hang off this token, so they stop even if this future is dropped mid-way.
    let shutdown = shutdown.child_token();
    let _stop_workers = shutdown.clone().drop_guard();
    let (store, writer) = reflector::store::<Instance>();
    let stream = watcher(ctx.instances(), watcher::Config::default())
        .default_backoff()
        .reflect(writer);
    futures::pin_mut!(stream);
    loop {
        let event = tokio::select! {
            () = shutdown.cancelled() => break,
            event = stream.next() => event,
        };
        // The store swaps in a relist only at InitDone, so sync on that, not on InitApply.
        match event {
            Some(Ok(watcher::Event::Init | watcher::Event::InitApply(_))) => continue,
            Some(Ok(_)) => {}
            Some(Err(err)) => {
                tracing::warn!(error = %err, "watching Instances failed; retrying");
                continue;
            }
            None => break,
        }
        sync_workers(&ctx, &store, &shutdown);
    }
    ctx.workers.stop_all();
}

/// Starts tasks for new Instances and stops those of Instances that are gone.
fn sync_workers(ctx: &Arc<Context>, store: &Store<Instance>, shutdown: &CancellationToken) {
    let wanted: BTreeSet<String> = store
        .state()
        .iter()
        .filter_map(|i| i.metadata.name.clone())
        .collect();
    let running = ctx.workers.names();
    for gone in running.difference(&wanted) {
        ctx.workers.stop(gone);
    }
    for name in wanted.difference(&running) {
        let cancel = shutdown.child_token();
        let (connection_tx, connection_rx) = watch::channel::<Option<Connection>>(None);
        let (cache_tx, cache_rx) = watch::channel::<Option<Arc<InstanceCache>>>(None);
        tokio::spawn(status_sync::run_instance(
            ctx.clone(),
            store.clone(),
            name.clone(),
            connection_tx,
            cancel.clone(),
        ));
        tokio::spawn(follow_connection(connection_rx, cache_tx, cancel.clone()));
        tokio::spawn(resource_statistics::run_instance(
            ctx.clone(),
            name.clone(),
            cache_rx.clone(),
            cancel.clone(),
        ));
        ctx.workers.lock().insert(
            name.clone(),
            Worker {
                cancel,
                cache: cache_rx,
            },
        );
    }
}

/// Restarts the instance's reflectors whenever its connection changes.
async fn follow_connection(
    mut connection: watch::Receiver<Option<Connection>>,
    cache: watch::Sender<Option<Arc<InstanceCache>>>,
    cancel: CancellationToken,
) {
    let mut current: Option<(String, CancellationToken)> = None;
    loop {
        let next = connection.borrow_and_update().clone();
        let changed =
            current.as_ref().map(|(k, _)| k.as_str()) != next.as_ref().map(|c| c.key.as_str());
        if changed {
            if let Some((_, old)) = current.take() {
                old.cancel();
            }
            match next {
                Some(conn) => {
                    let token = cancel.child_token();
                    cache.send_replace(Some(InstanceCache::start(&conn.client, &token)));
                    current = Some((conn.key, token));
                }
                None => {
                    cache.send_replace(None);
                }
            }
        }
        tokio::select! {
            () = cancel.cancelled() => break,
            changed = connection.changed() => if changed.is_err() { break },
        }
    }
    if let Some((_, old)) = current {
        old.cancel();
    }
}
