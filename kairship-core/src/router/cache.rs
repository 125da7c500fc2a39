//! The embedded cache: one kube-runtime watcher per instance and resource, started on first
//! use and shared by every reader, answering gets, lists and watches from memory. Each object
//! is kept once, as its JSON rendered when its watch event arrives, next to the little
//! metadata lists are selected, ordered and paged by; list answers are assembled from those
//! bytes, and a get or a watch decodes the objects it returns. A decoded `serde_json::Value`
//! tree takes several times the size of its JSON, so keeping only bytes is what lets one
//! process cache many instances (see docs/benchmarks.md, "embedded cache at scale").

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::core::{ApiResource, DynamicObject, Status, TypeMeta, WatchEvent};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use super::backend::{EventStream, ReadBackend, WatchQuery};
use super::clients::{
    InstanceClients, InstanceIdentity, identity_lost, instance_changed_event, still_current,
};
use super::decision::version_of;
use super::direct::dynamic_api;
use super::error::RouterError;
use super::query::{CompiledQuery, ListQuery, ObjectPage};
use super::target::{ResourceKey, ResourceTarget};

/// Objects per page of a cache's (re)list. A page is decoded whole (a `serde_json::Value` tree
/// per object, many times its JSON) before its objects are rendered and dropped, so the page
/// size, not the number of objects, sets the memory a sync needs on top of what it keeps;
/// that memory stays with the process's allocator afterwards (docs/benchmarks.md).
pub const CACHE_LIST_PAGE_SIZE: u32 = 100;

/// How many changes a slow cache watcher may fall behind before its stream ends with
/// `410 Expired` (and the client lists again, as with kube-apiserver).
const WATCH_BUFFER: usize = 4096;

/// A change applied to a cache, fanned out to its watchers.
#[derive(Clone)]
enum CacheEvent {
    Added(Arc<DynamicObject>),
    Modified(Arc<DynamicObject>),
    Deleted(Arc<DynamicObject>),
    /// The watcher listed again: watchers may have missed changes and must start over.
    Relisted,
    /// The cache was dropped (its instance was deleted or changed): watchers end.
    Gone,
}

/// A cached object: its JSON, the only full copy kept, and the metadata lists read.
#[derive(Clone)]
struct CachedObject {
    /// [`list_metadata`] of the object.
    meta: Arc<DynamicObject>,
    /// The whole object (with `apiVersion` and `kind`) as JSON.
    json: Bytes,
}

/// Objects keyed by (namespace, name), as kube-apiserver stores them: the objects of one
/// namespace are one range, so listing a namespace costs what it holds, not what the whole
/// resource holds.
type ObjectMap = BTreeMap<(Option<String>, String), CachedObject>;

fn object_key(object: &DynamicObject) -> (Option<String>, String) {
    (
        object.metadata.namespace.clone(),
        object.metadata.name.clone().unwrap_or_default(),
    )
}

/// The objects of `namespace` (`None`: every object).
fn objects_in<'a>(
    objects: &'a ObjectMap,
    namespace: Option<&'a str>,
) -> impl Iterator<Item = &'a CachedObject> + 'a {
    let range = match namespace {
        Some(ns) => objects.range((Some(ns.to_owned()), String::new())..),
        None => objects.range(..),
    };
    range
        .take_while(move |((ns, _), _)| namespace.is_none_or(|want| ns.as_deref() == Some(want)))
        .map(|(_, cached)| cached)
}

/// What the cache keeps of an object besides its JSON: the fields a list is selected,
/// ordered and paged by without decoding anything (name, namespace, resourceVersion,
/// creationTimestamp, labels; see [`CompiledQuery::reads_beyond_metadata`]).
fn list_metadata(object: &DynamicObject) -> DynamicObject {
    let meta = &object.metadata;
    DynamicObject {
        types: None,
        metadata: ObjectMeta {
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            resource_version: meta.resource_version.clone(),
            creation_timestamp: meta.creation_timestamp.clone(),
            labels: meta.labels.clone(),
            ..ObjectMeta::default()
        },
        data: serde_json::Value::Null,
    }
}

/// Completes the object's `apiVersion`/`kind` (list items come without them) and renders its
/// JSON once; returns what the cache keeps and the completed object.
fn render(
    resource: &ApiResource,
    mut object: DynamicObject,
) -> Result<(CachedObject, DynamicObject), serde_json::Error> {
    if object.types.is_none() {
        object.types = Some(TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
    }
    let mut json = serde_json::to_vec(&object)?;
    // The buffer grew by doubling while it was written: keep only the bytes.
    json.shrink_to_fit();
    let cached = CachedObject {
        meta: Arc::new(list_metadata(&object)),
        json: Bytes::from(json),
    };
    Ok((cached, object))
}

/// A cached object decoded from its JSON.
fn decode(target: &ResourceTarget, json: &[u8]) -> Result<DynamicObject, RouterError> {
    serde_json::from_slice(json).map_err(|source| RouterError::Decode {
        target: target.describe(),
        source,
    })
}

/// One resource of one instance, kept in memory.
struct ResourceCache {
    resource: ApiResource,
    objects: RwLock<ObjectMap>,
    /// The initial list completed.
    ready: AtomicBool,
    /// The watch is not failing.
    healthy: AtomicBool,
    /// Newest resourceVersion applied to the store (0: none).
    seen: watch::Sender<u64>,
    /// Cancelled when the cache is dropped: nothing it holds may be served any more.
    gone: CancellationToken,
    events: broadcast::Sender<CacheEvent>,
    last_error: Mutex<Option<String>>,
}

impl ResourceCache {
    fn synced(&self) -> bool {
        !self.gone.is_cancelled()
            && self.ready.load(Ordering::Acquire)
            && self.healthy.load(Ordering::Acquire)
    }

    fn unavailable(&self, target: &ResourceTarget) -> RouterError {
        let reason = if self.gone.is_cancelled() {
            "the instance was deleted or changed".to_owned()
        } else if !self.ready.load(Ordering::Acquire) {
            "initial list not complete".to_owned()
        } else {
            let last = self
                .last_error
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            format!("watch failing: {}", last.unwrap_or_default())
        };
        RouterError::CacheUnavailable {
            target: target.describe(),
            reason,
        }
    }

    fn note_seen(&self, version: u64) {
        self.seen.send_if_modified(|seen| {
            let newer = version > *seen;
            if newer {
                *seen = version;
            }
            newer
        });
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, ObjectMap> {
        self.objects.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, ObjectMap> {
        self.objects.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn len(&self) -> usize {
        self.read().len()
    }
}

struct Entry {
    cache: Arc<ResourceCache>,
    /// The instance (and credentials) the cache was filled from.
    identity: InstanceIdentity,
    /// Stops the cache's watch.
    stop: CancellationToken,
}

type CacheMap = HashMap<ResourceKey, Entry>;

/// Removes (and stops) the entries of `instance` that were not built for `keep`.
fn retire_instance(caches: &mut CacheMap, instance: &str, keep: Option<&InstanceIdentity>) {
    caches.retain(|key, entry| {
        let retire = key.instance == instance && keep != Some(&entry.identity);
        if retire {
            entry.stop.cancel();
        }
        !retire
    });
}

/// A [`ReadBackend`] answering from watch caches kept per instance and resource.
///
/// A cache starts the first time its resource is read (or [`ReadBackend::synced`] is asked)
/// and is shared from then on. Until its initial list completes, and while its watch fails,
/// it reports itself unsynced and refuses reads with [`RouterError::CacheUnavailable`], so the
/// router reads directly. Watches from the cache start with the current objects as `ADDED`
/// events and follow live changes; resuming from a resourceVersion is not supported (no event
/// history is kept).
///
/// Every cache belongs to one identity of its instance ([`InstanceIdentity`]: the Instance's
/// UID and its credentials). Each read asks the [`InstanceClients`] for the current identity
/// first, and a cache built for another one is dropped instead of answering; a deleted instance
/// answers [`RouterError::UnknownInstance`]. Caches also stop on their own, with no read
/// needed, as soon as the clients announce that their instance changed; their open watches end
/// with `410 Expired`.
pub struct EmbeddedCacheBackend {
    clients: Arc<dyn InstanceClients>,
    config: watcher::Config,
    caches: Arc<Mutex<CacheMap>>,
}

impl std::fmt::Debug for EmbeddedCacheBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<String> = self
            .caches
            .lock()
            .map(|c| c.keys().map(ToString::to_string).collect())
            .unwrap_or_default();
        f.debug_struct("EmbeddedCacheBackend")
            .field("caches", &keys)
            .finish_non_exhaustive()
    }
}

impl EmbeddedCacheBackend {
    /// A cache reaching instances through `clients`, with kube-runtime's default watcher
    /// configuration but for lists of [`CACHE_LIST_PAGE_SIZE`] objects per page.
    pub fn new(clients: Arc<dyn InstanceClients>) -> Self {
        Self::with_watcher_config(
            clients,
            watcher::Config::default().page_size(CACHE_LIST_PAGE_SIZE),
        )
    }

    /// A cache whose watchers use `config` (page size, timeouts, ...).
    pub fn with_watcher_config(clients: Arc<dyn InstanceClients>, config: watcher::Config) -> Self {
        EmbeddedCacheBackend {
            clients,
            config,
            caches: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The resources currently cached.
    pub fn cached_resources(&self) -> Vec<ResourceKey> {
        let mut keys: Vec<ResourceKey> = self
            .caches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    }

    /// Stops and drops every cache of `instance` (when it is deleted or its endpoint changes);
    /// their open watches end with `410 Expired`.
    pub fn forget_instance(&self, instance: &str) {
        retire_instance(
            &mut self.caches.lock().unwrap_or_else(PoisonError::into_inner),
            instance,
            None,
        );
    }

    /// The cache of `key` and its stop token, if it exists and still belongs to the
    /// instance's current identity (checked without I/O).
    fn existing(&self, key: &ResourceKey) -> Option<(Arc<ResourceCache>, CancellationToken)> {
        let current = self.clients.current(&key.instance);
        self.caches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .filter(|e| still_current(&e.identity, current.as_ref()))
            .map(|e| (e.cache.clone(), e.stop.clone()))
    }

    /// The cache of the resource for the instance's current identity, started if needed;
    /// caches of a former identity are dropped, and a deleted instance drops them all.
    async fn ensure(
        &self,
        instance: &str,
        resource: &ApiResource,
    ) -> Result<Arc<ResourceCache>, RouterError> {
        let connection = match self.clients.connect(instance).await {
            Ok(connection) => connection,
            Err(err) => {
                if matches!(err, RouterError::UnknownInstance { .. }) {
                    self.forget_instance(instance);
                }
                return Err(err);
            }
        };
        let key = ResourceKey::new(instance, resource);
        let mut caches = self.caches.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = caches.get(&key)
            && entry.identity == connection.identity
        {
            return Ok(entry.cache.clone());
        }
        retire_instance(&mut caches, instance, Some(&connection.identity));
        let entry = self.start(
            key.clone(),
            connection.client,
            connection.identity,
            resource,
        );
        let cache = entry.cache.clone();
        caches.insert(key, entry);
        Ok(cache)
    }

    fn start(
        &self,
        key: ResourceKey,
        client: kube::Client,
        identity: InstanceIdentity,
        resource: &ApiResource,
    ) -> Entry {
        let (events, _) = broadcast::channel(WATCH_BUFFER);
        let cache = Arc::new(ResourceCache {
            objects: RwLock::new(BTreeMap::new()),
            resource: resource.clone(),
            ready: AtomicBool::new(false),
            healthy: AtomicBool::new(true),
            seen: watch::Sender::new(0),
            gone: CancellationToken::new(),
            events,
            last_error: Mutex::new(None),
        });
        let api = dynamic_api(
            client,
            &ResourceTarget::all(key.instance.clone(), resource.clone()),
        );
        tracing::debug!(cache = %key, "starting cache watch");
        let stop = CancellationToken::new();
        let lost = identity_lost(&self.clients, &key.instance, &identity);
        let watched = run_watch(key.clone(), cache.clone(), api, self.config.clone());
        let (caches, task_cache, task_stop) = (self.caches.clone(), cache.clone(), stop.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = watched => {}
                () = task_stop.cancelled() => {}
                () = lost => {
                    tracing::debug!(cache = %key, "instance deleted or changed; dropping its cache");
                    let mut caches = caches.lock().unwrap_or_else(PoisonError::into_inner);
                    if caches.get(&key).is_some_and(|e| Arc::ptr_eq(&e.cache, &task_cache)) {
                        caches.remove(&key);
                    }
                }
            }
            // Dropping the watcher above closed its connection to the instance.
            task_cache.healthy.store(false, Ordering::Release);
            task_cache.gone.cancel();
            let _ = task_cache.events.send(CacheEvent::Gone);
        });
        Entry {
            cache,
            identity,
            stop,
        }
    }

    /// A page of the cache's objects and their JSON, and whether its `items` are the whole
    /// objects (a query reading beyond the indexed metadata decodes them) rather than their
    /// [`list_metadata`].
    async fn select(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<(ObjectPage, bool), RouterError> {
        let compiled = query.compile()?;
        let cache = self.ready_cache(target).await?;
        let seen = *cache.seen.borrow();
        let namespace = target.namespace.as_deref();
        let decoded = compiled.reads_beyond_metadata();
        let mut page = if decoded {
            let candidates: Vec<Bytes> = objects_in(&cache.read(), namespace)
                .map(|c| c.json.clone())
                .collect();
            let objects = candidates
                .into_iter()
                .map(|json| Ok((Arc::new(decode(target, &json)?), json)))
                .collect::<Result<Vec<_>, RouterError>>()?;
            compiled.select_rendered(namespace, objects)
        } else {
            // Filter under the lock, sort and page outside it.
            let matched: Vec<(Arc<DynamicObject>, Bytes)> = objects_in(&cache.read(), namespace)
                .filter(|c| compiled.matches(namespace, &c.meta))
                .map(|c| (c.meta.clone(), c.json.clone()))
                .collect();
            compiled.select_rendered(namespace, matched)
        };
        page.resource_version = Some(seen.to_string());
        Ok((page, decoded))
    }

    async fn ready_cache(
        &self,
        target: &ResourceTarget,
    ) -> Result<Arc<ResourceCache>, RouterError> {
        let cache = self.ensure(&target.instance, &target.resource).await?;
        if cache.synced() {
            Ok(cache)
        } else {
            Err(cache.unavailable(target))
        }
    }
}

impl Drop for EmbeddedCacheBackend {
    fn drop(&mut self) {
        // The watch tasks hold the map too; stopping them lets it go.
        for entry in self
            .caches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
        {
            entry.stop.cancel();
        }
    }
}

/// Feeds the cache from a watcher: renders each object once, classifies changes for cache
/// watchers and tracks the newest applied resourceVersion.
async fn run_watch(
    key: ResourceKey,
    cache: Arc<ResourceCache>,
    api: Api<DynamicObject>,
    config: watcher::Config,
) {
    let mut stream = watcher::watcher(api, config).default_backoff().boxed();
    let mut listed_max = 0u64;
    let mut relist = false;
    // A relist builds its objects aside and swaps them in when complete, so readers never see
    // a half-listed cache.
    let mut listing: ObjectMap = BTreeMap::new();
    while let Some(item) = stream.next().await {
        let event = match item {
            Ok(event) => event,
            Err(err) => {
                if cache.healthy.swap(false, Ordering::AcqRel) {
                    tracing::warn!(cache = %key, error = %err, "cache watch failing; reads go direct");
                }
                *cache
                    .last_error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(err.to_string());
                continue;
            }
        };
        let rendered = |obj: DynamicObject| match render(&cache.resource, obj) {
            Ok(cached) => Some(cached),
            Err(err) => {
                tracing::warn!(cache = %key, error = %err, "cannot render an object; left out of the cache");
                None
            }
        };
        match event {
            Event::Init => {
                listed_max = 0;
                listing.clear();
            }
            Event::InitApply(obj) => {
                listed_max = listed_max.max(version_of(&obj));
                if let Some((cached, _)) = rendered(obj) {
                    listing.insert(object_key(&cached.meta), cached);
                }
            }
            Event::InitDone => {
                *cache.write() = std::mem::take(&mut listing);
                cache.note_seen(listed_max);
                if relist {
                    let _ = cache.events.send(CacheEvent::Relisted);
                }
                relist = true;
                cache.ready.store(true, Ordering::Release);
                cache.healthy.store(true, Ordering::Release);
                tracing::debug!(cache = %key, objects = cache.len(), "cache synced");
            }
            Event::Apply(obj) => {
                let version = version_of(&obj);
                if let Some((cached, object)) = rendered(obj) {
                    let key = object_key(&cached.meta);
                    // Whether the object was already known decides ADDED vs MODIFIED.
                    let known = cache.write().insert(key, cached).is_some();
                    let object = Arc::new(object);
                    cache.note_seen(version);
                    let change = if known {
                        CacheEvent::Modified(object)
                    } else {
                        CacheEvent::Added(object)
                    };
                    // No receivers is fine: nobody is watching.
                    let _ = cache.events.send(change);
                }
                cache.healthy.store(true, Ordering::Release);
            }
            Event::Delete(obj) => {
                cache.write().remove(&object_key(&obj));
                cache.note_seen(version_of(&obj));
                let _ = cache.events.send(CacheEvent::Deleted(Arc::new(obj)));
                cache.healthy.store(true, Ordering::Release);
            }
        }
    }
    cache.healthy.store(false, Ordering::Release);
}

pub(crate) fn expired(message: &str) -> WatchEvent<DynamicObject> {
    WatchEvent::Error(Box::new(Status::failure(message, "Expired").with_code(410)))
}

#[async_trait]
impl ReadBackend for EmbeddedCacheBackend {
    async fn get(
        &self,
        target: &ResourceTarget,
        name: &str,
    ) -> Result<Arc<DynamicObject>, RouterError> {
        let cache = self.ready_cache(target).await?;
        let key = (target.namespace.clone(), name.to_owned());
        let json = cache.read().get(&key).map(|cached| cached.json.clone());
        match json {
            Some(json) => decode(target, &json).map(Arc::new),
            None => Err(RouterError::not_found(target, name)),
        }
    }

    async fn list(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError> {
        let (mut page, decoded) = self.select(target, query).await?;
        if !decoded && let Some(rendered) = &page.rendered {
            page.items = rendered
                .iter()
                .map(|json| decode(target, json).map(Arc::new))
                .collect::<Result<_, _>>()?;
        }
        Ok(page)
    }

    async fn list_rendered(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError> {
        Ok(self.select(target, query).await?.0)
    }

    async fn watch(
        &self,
        target: &ResourceTarget,
        query: &WatchQuery,
    ) -> Result<EventStream, RouterError> {
        if query.resumes() {
            return Err(RouterError::CacheUnavailable {
                target: target.describe(),
                reason: "the cache keeps no event history to resume a watch from".into(),
            });
        }
        let filter: CompiledQuery = ListQuery {
            label_selector: query.label_selector.clone(),
            field_selector: query.field_selector.clone(),
            ..ListQuery::default()
        }
        .compile()?;
        let cache = self.ready_cache(target).await?;
        // Subscribe before taking the snapshot so that no change falls in between; changes
        // newer than the snapshot's version are left to the live stream.
        let receiver = cache.events.subscribe();
        let snapshot_version = *cache.seen.borrow();
        let namespace = target.namespace.clone();
        let ns = namespace.as_deref();
        let needs_body = filter.reads_beyond_metadata();
        // Only the objects the metadata lets through are decoded.
        let snapshot: Vec<Bytes> = objects_in(&cache.read(), ns)
            .filter(|c| version_of(&c.meta) <= snapshot_version)
            .filter(|c| needs_body || filter.matches(ns, &c.meta))
            .map(|c| c.json.clone())
            .collect();
        let mut initial: Vec<Result<WatchEvent<DynamicObject>, RouterError>> =
            Vec::with_capacity(snapshot.len());
        for json in snapshot {
            let object = decode(target, &json)?;
            if !needs_body || filter.matches(ns, &object) {
                initial.push(Ok(WatchEvent::Added(object)));
            }
        }
        let instance = target.instance.clone();
        let live = futures::stream::unfold(
            Some((receiver, filter, namespace, instance)),
            move |state| async move {
                let (mut receiver, filter, namespace, instance) = state?;
                loop {
                    let (object, wrap): (Arc<DynamicObject>, fn(DynamicObject) -> _) =
                        match receiver.recv().await {
                            Ok(CacheEvent::Added(o)) => (o, WatchEvent::Added),
                            Ok(CacheEvent::Modified(o)) => (o, WatchEvent::Modified),
                            Ok(CacheEvent::Deleted(o)) => (o, WatchEvent::Deleted),
                            Ok(CacheEvent::Relisted) => {
                                return Some((Ok(expired("the cache listed again")), None));
                            }
                            Ok(CacheEvent::Gone) => {
                                return Some((Ok(instance_changed_event(&instance)), None));
                            }
                            Err(broadcast::error::RecvError::Lagged(_)) => {
                                return Some((Ok(expired("the watcher fell behind")), None));
                            }
                            Err(broadcast::error::RecvError::Closed) => return None,
                        };
                    if version_of(&object) <= snapshot_version
                        || !filter.matches(namespace.as_deref(), &object)
                    {
                        continue;
                    }
                    let event = wrap((*object).clone());
                    return Some((Ok(event), Some((receiver, filter, namespace, instance))));
                }
            },
        );
        Ok(futures::stream::iter(initial).chain(live).boxed())
    }

    async fn synced(&self, instance: &str, resource: &ApiResource) -> bool {
        match self.ensure(instance, resource).await {
            Ok(cache) => cache.synced(),
            Err(_) => false,
        }
    }

    fn seen_version(&self, instance: &str, resource: &ApiResource) -> Option<u64> {
        let (cache, _) = self.existing(&ResourceKey::new(instance, resource))?;
        let seen = *cache.seen.borrow();
        (seen > 0).then_some(seen)
    }

    async fn wait_for_version(
        &self,
        instance: &str,
        resource: &ApiResource,
        version: u64,
        timeout: Duration,
    ) -> bool {
        let Some((cache, stop)) = self.existing(&ResourceKey::new(instance, resource)) else {
            return false;
        };
        let mut receiver = cache.seen.subscribe();
        // A cache dropped meanwhile will never see the version: give up at once.
        tokio::select! {
            seen = tokio::time::timeout(timeout, receiver.wait_for(|seen| *seen >= version)) => {
                matches!(seen, Ok(Ok(_)))
            }
            () = stop.cancelled() => false,
            () = cache.gone.cancelled() => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployments() -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("apps", "v1", "Deployment"),
            "deployments",
        )
    }

    fn listed(metadata: serde_json::Value) -> DynamicObject {
        // As list items arrive: without apiVersion and kind.
        serde_json::from_value(json!({
            "metadata": metadata,
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": {"readyReplicas": 2},
        }))
        .unwrap()
    }

    #[test]
    fn list_metadata_keeps_what_lists_read_and_nothing_else() {
        let full = json!({
            "name": "web", "namespace": "shop", "uid": "u-1", "resourceVersion": "42",
            "generation": 3, "creationTimestamp": "2026-01-02T03:04:05Z",
            "labels": {"app": "web", "tier": "front"},
            "annotations": {"note": "x"}, "finalizers": ["f"],
            "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
            "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "u-0"}],
        });
        // (metadata of the object, metadata kept)
        let cases = [
            (
                full,
                json!({"name": "web", "namespace": "shop", "resourceVersion": "42",
                       "creationTimestamp": "2026-01-02T03:04:05Z",
                       "labels": {"app": "web", "tier": "front"}}),
            ),
            (json!({"name": "node-1"}), json!({"name": "node-1"})),
            (json!({}), json!({})),
        ];
        for (metadata, want) in cases {
            let kept = list_metadata(&listed(metadata.clone()));
            assert!(kept.types.is_none(), "{metadata}");
            assert_eq!(kept.data, serde_json::Value::Null, "{metadata}");
            assert_eq!(
                serde_json::to_value(&kept.metadata).unwrap(),
                want,
                "{metadata}"
            );
        }
    }

    #[test]
    fn rendered_json_is_the_object_and_decodes_back_to_it() {
        let object = listed(
            json!({"name": "web", "namespace": "shop", "resourceVersion": "7",
                                   "annotations": {"a": "b"}}),
        );
        let (cached, completed) = render(&deployments(), object).unwrap();
        assert_eq!(
            completed.types,
            Some(TypeMeta {
                api_version: "apps/v1".into(),
                kind: "Deployment".into()
            })
        );
        assert_eq!(cached.json, serde_json::to_vec(&completed).unwrap());
        let target = ResourceTarget::namespaced("i", deployments(), "shop");
        let decoded = decode(&target, &cached.json).unwrap();
        assert_eq!(decoded, completed);
        assert_eq!(serde_json::to_vec(&decoded).unwrap(), cached.json);
        assert_eq!(
            object_key(&cached.meta),
            (Some("shop".into()), "web".into())
        );
        assert!(cached.meta.metadata.annotations.is_none());
        // An object the cache cannot decode is a decode error, which reads then take directly.
        let err = decode(&target, b"{\"metadata\": 1}").unwrap_err();
        assert!(err.is_cache_failure(), "{err}");
    }

    #[test]
    fn objects_in_table() {
        let mut objects = ObjectMap::new();
        for (ns, name) in [
            (None, "node-1"),
            (Some("a"), "web"),
            (Some("a"), "db"),
            (Some("ab"), "x"),
            (Some("b"), "y"),
            (Some(""), "odd"),
        ] {
            let meta = match ns {
                Some(ns) => json!({"name": name, "namespace": ns}),
                None => json!({"name": name}),
            };
            let (cached, _) = render(&deployments(), listed(meta)).unwrap();
            objects.insert(object_key(&cached.meta), cached);
        }
        let names = |namespace| -> Vec<String> {
            objects_in(&objects, namespace)
                .map(|c| c.meta.metadata.name.clone().unwrap())
                .collect()
        };
        for (namespace, want) in [
            (None, vec!["node-1", "odd", "db", "web", "x", "y"]),
            (Some("a"), vec!["db", "web"]),
            (Some("ab"), vec!["x"]),
            (Some("b"), vec!["y"]),
            (Some(""), vec!["odd"]),
            (Some("c"), vec![]),
            (Some("0"), vec![]),
        ] {
            assert_eq!(names(namespace), want, "{namespace:?}");
        }
    }
}
