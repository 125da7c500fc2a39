//! The read-write split router: reads to the read backend (the cache), writes to the
//! instance, direct reads while the cache cannot answer (and single objects when the backend
//! does not keep them as the instance stores them), and read-your-writes.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use tokio::time::Instant;

use super::backend::{EventStream, ReadBackend, WatchQuery, WriteBackend, WriteOutcome};
use super::clients::{InstanceClients, InstanceIdentity, end_when_lost};
use super::decision::{CacheState, Freshness, Operation, Route, decide, freshness, parse_version};
use super::error::RouterError;
use super::metrics::RouterMetrics;
use super::query::{ListQuery, ObjectPage};
use super::target::{ResourceKey, ResourceTarget};

/// Routes every request on a resource of an instance to the right backend: the reads are
/// declared here, the writes (create, replace, patch, delete) are those of [`WriteBackend`].
#[async_trait]
pub trait ReadWriteRouter: WriteBackend {
    /// Reads one object.
    async fn get(
        &self,
        target: &ResourceTarget,
        name: &str,
    ) -> Result<Arc<DynamicObject>, RouterError>;

    /// Lists objects.
    async fn list(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError>;

    /// Lists objects for an answer written out as JSON (see [`ReadBackend::list_rendered`]:
    /// `items` may hold only metadata when the page has `rendered`). The default is
    /// [`ReadWriteRouter::list`].
    async fn list_rendered(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError> {
        self.list(target, query).await
    }

    /// Watches objects.
    async fn watch(
        &self,
        target: &ResourceTarget,
        query: &WatchQuery,
    ) -> Result<EventStream, RouterError>;

    /// Records a write made to the instance outside the router's write methods (a raw request
    /// the native proxy forwarded) that returned `resource_version`, so that reads of the
    /// resource wait for it like for the router's own writes. The default does nothing.
    fn observe_write(&self, target: &ResourceTarget, resource_version: &str) {
        let _ = (target, resource_version);
    }

    /// Makes the next reads of the resource wait (bounded) until the read backend has seen
    /// `resource_version`, written through another replica (see `router::written`). The
    /// default does nothing.
    fn await_version(&self, target: &ResourceTarget, resource_version: &str) {
        let _ = (target, resource_version);
    }
}

/// Tuning of [`SplitRouter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouterConfig {
    /// How long a read waits for the cache to see a write made through the router before it
    /// reads directly instead.
    pub read_your_writes_timeout: Duration,
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            read_your_writes_timeout: Duration::from_secs(1),
        }
    }
}

/// The default [`ReadWriteRouter`]: `read` answers reads (usually an
/// [`EmbeddedCacheBackend`](super::EmbeddedCacheBackend)), `direct` answers them when `read`
/// cannot (usually a [`DirectBackend`](super::DirectBackend)), `write` carries writes.
pub struct SplitRouter {
    read: Arc<dyn ReadBackend>,
    direct: Arc<dyn ReadBackend>,
    write: Arc<dyn WriteBackend>,
    config: RouterConfig,
    metrics: Arc<RouterMetrics>,
    /// When set, every read and write first checks that its instance exists, and watches end
    /// when it changes (see [`SplitRouter::with_instance_check`]).
    instances: Option<Arc<dyn InstanceClients>>,
    /// Newest resourceVersion written through the router per resource, until the read
    /// backend has seen it.
    pending: Mutex<HashMap<ResourceKey, PendingWrite>>,
}

/// A write the read backend has not been seen to apply yet.
#[derive(Clone, Debug, Default)]
struct PendingWrite {
    version: String,
    /// The instance identity the write went to (when known): a write to a former instance of
    /// the name is not waited for.
    identity: Option<InstanceIdentity>,
    /// A read already waited the full bound for it: later reads go direct at once until the
    /// backend catches up, instead of each waiting again.
    gave_up: bool,
}

impl std::fmt::Debug for SplitRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SplitRouter")
            .field("config", &self.config)
            .field("metrics", &self.metrics.snapshot())
            .finish_non_exhaustive()
    }
}

/// A read, whichever backend answers it.
enum ReadCall<'a> {
    Get(&'a str),
    List(&'a ListQuery),
    ListRendered(&'a ListQuery),
    Watch(&'a WatchQuery),
}

enum ReadAnswer {
    Object(Arc<DynamicObject>),
    Page(ObjectPage),
    Stream(EventStream),
}

impl ReadCall<'_> {
    fn operation(&self) -> Operation {
        match self {
            ReadCall::Get(_) => Operation::Get,
            ReadCall::List(_) | ReadCall::ListRendered(_) => Operation::List,
            ReadCall::Watch(q) => Operation::Watch {
                from_version: q.resumes(),
            },
        }
    }

    async fn run(
        &self,
        backend: &dyn ReadBackend,
        target: &ResourceTarget,
    ) -> Result<ReadAnswer, RouterError> {
        Ok(match self {
            ReadCall::Get(name) => ReadAnswer::Object(backend.get(target, name).await?),
            ReadCall::List(query) => ReadAnswer::Page(backend.list(target, query).await?),
            ReadCall::ListRendered(query) => {
                ReadAnswer::Page(backend.list_rendered(target, query).await?)
            }
            ReadCall::Watch(query) => ReadAnswer::Stream(backend.watch(target, query).await?),
        })
    }
}

fn mismatch(operation: &str) -> RouterError {
    RouterError::WrongOperation {
        operation: operation.to_owned(),
        expected: "read",
    }
}

impl SplitRouter {
    /// A router with the default configuration.
    pub fn new(
        read: Arc<dyn ReadBackend>,
        direct: Arc<dyn ReadBackend>,
        write: Arc<dyn WriteBackend>,
    ) -> Self {
        Self::with_config(read, direct, write, RouterConfig::default())
    }

    /// A router with `config`.
    pub fn with_config(
        read: Arc<dyn ReadBackend>,
        direct: Arc<dyn ReadBackend>,
        write: Arc<dyn WriteBackend>,
        config: RouterConfig,
    ) -> Self {
        SplitRouter {
            read,
            direct,
            write,
            config,
            metrics: Arc::new(RouterMetrics::new()),
            instances: None,
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// Checks with `clients` before every read and write that the instance exists (a deleted
    /// one answers [`RouterError::UnknownInstance`], whatever the backends hold), ends watches
    /// once the instance is deleted or its credentials change, and forgets read-your-writes
    /// marks left by a former instance of the name. Needed with read backends that do not
    /// reach the instance through `clients` themselves, such as Clusterpedia.
    pub fn with_instance_check(mut self, clients: Arc<dyn InstanceClients>) -> Self {
        self.instances = Some(clients);
        self
    }

    /// The instance's identity when checks are on; `UnknownInstance` when it is gone.
    async fn admit(
        &self,
        target: &ResourceTarget,
    ) -> Result<Option<InstanceIdentity>, RouterError> {
        let Some(clients) = &self.instances else {
            return Ok(None);
        };
        let connection = clients.connect(&target.instance).await?;
        let key = target.key();
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if pending.get(&key).is_some_and(|p| {
            p.identity
                .as_ref()
                .is_some_and(|i| i != &connection.identity)
        }) {
            pending.remove(&key);
        }
        Ok(Some(connection.identity))
    }

    /// The router's counters.
    pub fn metrics(&self) -> &Arc<RouterMetrics> {
        &self.metrics
    }

    fn pending_write(&self, key: &ResourceKey) -> Option<PendingWrite> {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    /// Forgets the pending write of `key` once the read backend has seen it, unless a newer
    /// write replaced it meanwhile.
    fn clear_pending(&self, key: &ResourceKey, version: &str) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if pending.get(key).is_some_and(|p| p.version == version) {
            pending.remove(key);
        }
    }

    /// Marks the pending write of `key` as waited for in vain, unless a newer write replaced it.
    fn give_up_pending(&self, key: &ResourceKey, version: &str) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = pending.get_mut(key).filter(|p| p.version == version) {
            p.gave_up = true;
        }
    }

    /// Runs `write` once the instance is admitted and remembers the version it wrote; `write`
    /// does nothing until awaited, so a refused instance is never written to.
    async fn guarded(
        &self,
        target: &ResourceTarget,
        write: impl Future<Output = Result<WriteOutcome, RouterError>>,
    ) -> Result<WriteOutcome, RouterError> {
        let identity = self.admit(target).await?;
        let outcome = write.await?;
        self.note_write(target, &outcome, identity);
        Ok(outcome)
    }

    fn note_write(
        &self,
        target: &ResourceTarget,
        outcome: &WriteOutcome,
        identity: Option<InstanceIdentity>,
    ) {
        self.metrics.write();
        if let Some(written) = outcome.resource_version() {
            self.note_version(target, written, identity);
        }
    }

    fn note_version(
        &self,
        target: &ResourceTarget,
        written: &str,
        identity: Option<InstanceIdentity>,
    ) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = pending.entry(target.key()).or_default();
        let newer = match (parse_version(&entry.version), parse_version(written)) {
            (Some(old), Some(new)) => new > old,
            _ => true,
        };
        if newer || entry.identity != identity {
            *entry = PendingWrite {
                version: written.to_owned(),
                identity,
                gave_up: false,
            };
        }
    }

    /// Decides where a read goes, waiting (bounded) for the read backend to see the newest
    /// write through the router.
    async fn read_route(&self, target: &ResourceTarget, op: Operation, failed: bool) -> Route {
        let (instance, resource) = (&target.instance, &target.resource);
        let key = target.key();
        let bound = self.config.read_your_writes_timeout;
        let start = Instant::now();
        let mut gave_up = false;
        loop {
            let synced = failed || self.read.synced(instance, resource).await;
            let pending = self.pending_write(&key);
            gave_up |= pending.as_ref().is_some_and(|p| p.gave_up);
            let pending = pending.map(|p| p.version);
            let waited = if gave_up { bound } else { start.elapsed() };
            let fresh = freshness(
                pending.as_deref(),
                self.read.seen_version(instance, resource),
                waited,
                bound,
            );
            let route = decide(
                op,
                CacheState {
                    synced,
                    failed,
                    freshness: fresh,
                },
            );
            match (route, pending) {
                (Route::WaitForCache, Some(pending)) => {
                    let Some(version) = parse_version(&pending) else {
                        gave_up = true;
                        continue;
                    };
                    let remaining = bound.saturating_sub(start.elapsed());
                    let seen = self
                        .read
                        .wait_for_version(instance, resource, version, remaining)
                        .await;
                    self.metrics.ryw_wait(!seen);
                    if !seen {
                        self.give_up_pending(&key, &pending);
                    }
                    gave_up = !seen;
                }
                (Route::Cache, Some(pending)) if fresh == Freshness::Seen => {
                    self.clear_pending(&key, &pending);
                    return Route::Cache;
                }
                (route, _) => return route,
            }
        }
    }

    async fn read(
        &self,
        target: &ResourceTarget,
        call: ReadCall<'_>,
    ) -> Result<ReadAnswer, RouterError> {
        let op = call.operation();
        let identity = self.admit(target).await?;
        let answer = self.route_read(target, &call, op).await?;
        Ok(match (answer, identity, &self.instances) {
            (ReadAnswer::Stream(events), Some(identity), Some(clients)) => {
                ReadAnswer::Stream(end_when_lost(events, clients, &target.instance, &identity))
            }
            (answer, _, _) => answer,
        })
    }

    async fn route_read(
        &self,
        target: &ResourceTarget,
        call: &ReadCall<'_>,
        op: Operation,
    ) -> Result<ReadAnswer, RouterError> {
        // An object read back to be edited and written must be the instance's own: a backend
        // that changes objects answers lists only.
        if matches!(call, ReadCall::Get(_)) && !self.read.objects_as_stored() {
            return call.run(self.direct.as_ref(), target).await;
        }
        let mut failed = false;
        loop {
            match self.read_route(target, op, failed).await {
                Route::Cache => match call.run(self.read.as_ref(), target).await {
                    Ok(answer) => {
                        self.metrics.cache_hit();
                        return Ok(answer);
                    }
                    Err(err) if err.is_cache_failure() => {
                        tracing::debug!(target = %target.describe(), error = %err, "cache read failed; reading directly");
                        failed = true;
                    }
                    Err(err) => {
                        // A "not found" from the cache is its answer, like any object.
                        if err.is_not_found() {
                            self.metrics.cache_hit();
                        }
                        return Err(err);
                    }
                },
                Route::Direct(reason) => {
                    self.metrics.fallback(reason);
                    return call.run(self.direct.as_ref(), target).await;
                }
                Route::Write | Route::WaitForCache => return Err(mismatch(&format!("{op:?}"))),
            }
        }
    }
}

#[async_trait]
impl ReadWriteRouter for SplitRouter {
    async fn get(
        &self,
        target: &ResourceTarget,
        name: &str,
    ) -> Result<Arc<DynamicObject>, RouterError> {
        match self.read(target, ReadCall::Get(name)).await? {
            ReadAnswer::Object(object) => Ok(object),
            _ => Err(mismatch("get")),
        }
    }

    async fn list(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError> {
        match self.read(target, ReadCall::List(query)).await? {
            ReadAnswer::Page(page) => Ok(page),
            _ => Err(mismatch("list")),
        }
    }

    async fn list_rendered(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError> {
        match self.read(target, ReadCall::ListRendered(query)).await? {
            ReadAnswer::Page(page) => Ok(page),
            _ => Err(mismatch("list")),
        }
    }

    async fn watch(
        &self,
        target: &ResourceTarget,
        query: &WatchQuery,
    ) -> Result<EventStream, RouterError> {
        match self.read(target, ReadCall::Watch(query)).await? {
            ReadAnswer::Stream(stream) => Ok(stream),
            _ => Err(mismatch("watch")),
        }
    }

    fn observe_write(&self, target: &ResourceTarget, resource_version: &str) {
        self.metrics.write();
        let identity = self
            .instances
            .as_ref()
            .and_then(|clients| clients.current(&target.instance));
        self.note_version(target, resource_version, identity);
    }

    fn await_version(&self, target: &ResourceTarget, resource_version: &str) {
        let identity = self
            .instances
            .as_ref()
            .and_then(|clients| clients.current(&target.instance));
        self.note_version(target, resource_version, identity);
    }
}

/// Writes go to the write backend once the instance is admitted; their resourceVersion is
/// remembered for read-your-writes.
#[async_trait]
impl WriteBackend for SplitRouter {
    async fn create(
        &self,
        target: &ResourceTarget,
        body: &serde_json::Value,
        params: &PostParams,
    ) -> Result<WriteOutcome, RouterError> {
        self.guarded(target, self.write.create(target, body, params))
            .await
    }

    async fn replace(
        &self,
        target: &ResourceTarget,
        name: &str,
        body: &serde_json::Value,
        params: &PostParams,
    ) -> Result<WriteOutcome, RouterError> {
        self.guarded(target, self.write.replace(target, name, body, params))
            .await
    }

    async fn patch(
        &self,
        target: &ResourceTarget,
        name: &str,
        patch: &Patch<serde_json::Value>,
        params: &PatchParams,
    ) -> Result<WriteOutcome, RouterError> {
        self.guarded(target, self.write.patch(target, name, patch, params))
            .await
    }

    async fn delete(
        &self,
        target: &ResourceTarget,
        name: &str,
        params: &DeleteParams,
    ) -> Result<WriteOutcome, RouterError> {
        self.guarded(target, self.write.delete(target, name, params))
            .await
    }
}
