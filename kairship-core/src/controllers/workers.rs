//! One task set per Instance: status-sync probes and publishes the instance's connection, the
//! connection task hands it to the controllers' instance clients ([`PublishedConnections`]),
//! resource-statistics follows the instance's caches while it is connected. Each instance has
//! its own tasks and timeouts, so a slow or dead instance never delays the others.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use async_trait::async_trait;
use futures::StreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::connection::Connection;
use super::{Context, resource_statistics, status_sync};
use crate::instance::Instance;
use crate::router::{InstanceClients, InstanceConnection, InstanceIdentity, RouterError};

/// What the tasks of one instance publish.
struct Worker {
    cancel: CancellationToken,
}

/// The connections status-sync holds, one per connected instance: the instance clients of
/// the controllers' own instance cache, so a cache lives as long as the connection it was
/// built on. Each published connection is a new identity (a restarted worker too), so whatever
/// was built on the previous one is dropped.
pub struct PublishedConnections {
    connections: RwLock<HashMap<String, InstanceConnection>>,
    changes: watch::Sender<u64>,
    published: AtomicU64,
}

impl Default for PublishedConnections {
    fn default() -> Self {
        PublishedConnections {
            connections: RwLock::new(HashMap::new()),
            changes: watch::Sender::new(0),
            published: AtomicU64::new(0),
        }
    }
}

impl std::fmt::Debug for PublishedConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self
            .connections
            .read()
            .map(|c| c.keys().cloned().collect())
            .unwrap_or_default();
        f.debug_struct("PublishedConnections")
            .field("instances", &names)
            .finish()
    }
}

impl PublishedConnections {
    /// Makes `connection` the one of `instance` (`None`: not connected).
    pub fn publish(&self, instance: &str, connection: Option<&Connection>) {
        {
            let mut connections = self
                .connections
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            match connection {
                Some(connection) => {
                    let n = self.published.fetch_add(1, Ordering::Relaxed);
                    let published = InstanceConnection {
                        client: connection.client.clone(),
                        identity: InstanceIdentity {
                            uid: format!("connection-{n}"),
                            credentials: connection.key.clone(),
                        },
                    };
                    connections.insert(instance.to_owned(), published);
                }
                None => {
                    if connections.remove(instance).is_none() {
                        return;
                    }
                }
            }
        }
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }
}

#[async_trait]
impl InstanceClients for PublishedConnections {
    async fn connect(&self, instance: &str) -> Result<InstanceConnection, RouterError> {
        self.connections
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(instance)
            .cloned()
            .ok_or_else(|| RouterError::UnknownInstance {
                instance: instance.to_owned(),
            })
    }

    fn current(&self, instance: &str) -> Option<InstanceIdentity> {
        self.connections
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(instance)
            .map(|c| c.identity.clone())
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
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
        let (connected_tx, connected_rx) = watch::channel::<Option<String>>(None);
        tokio::spawn(status_sync::run_instance(
            ctx.clone(),
            store.clone(),
            name.clone(),
            connection_tx,
            cancel.clone(),
        ));
        tokio::spawn(follow_connection(
            ctx.clone(),
            name.clone(),
            connection_rx,
            connected_tx,
            cancel.clone(),
        ));
        tokio::spawn(resource_statistics::run_instance(
            ctx.clone(),
            name.clone(),
            connected_rx,
            cancel.clone(),
        ));
        ctx.workers.lock().insert(name.clone(), Worker { cancel });
    }
}

/// Publishes the instance's connection to the controllers' instance clients whenever it
/// changes (the caches built on the former one are dropped), and tells resource-statistics
/// which connection is current; withdraws it when the worker stops.
async fn follow_connection(
    ctx: Arc<Context>,
    name: String,
    mut connection: watch::Receiver<Option<Connection>>,
    connected: watch::Sender<Option<String>>,
    cancel: CancellationToken,
) {
    let mut current: Option<String> = None;
    loop {
        let next = connection.borrow_and_update().clone();
        let key = next.as_ref().map(|c| c.key.clone());
        if key != current {
            ctx.connections.publish(&name, next.as_ref());
            connected.send_replace(key.clone());
            current = key;
        }
        tokio::select! {
            () = cancel.cancelled() => break,
            changed = connection.changed() => if changed.is_err() { break },
        }
    }
    ctx.connections.publish(&name, None);
}
