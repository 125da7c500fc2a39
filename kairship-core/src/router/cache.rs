//! The embedded cache: one kube-runtime watcher per instance and resource, started on first
//! use and shared by every reader, answering gets, lists and watches from memory. Each object
//! is kept once, as the JSON it arrived as (`apiVersion` and `kind` added where list items lack
//! them), next to a compact index of what lists are selected, ordered and paged by
//! ([`CachedObject`]: a few hundred bytes). The watcher decodes pages and events into
//! [`RawObject`]s, which read those few fields from the JSON and build nothing else of it. List
//! answers are assembled from the stored bytes, and a get or a watch decodes the objects it
//! returns. A decoded `serde_json::Value` tree takes many times the size of its JSON, so never
//! building one, neither to keep nor while syncing, is what lets one process cache many
//! instances (see docs/benchmarks.md, "embedded cache at scale").
//!
//! The same caches serve readers in the process other than the router: the controllers'
//! statistics read counts and the Deployment summary from them ([`CachedResource`]), so a
//! process running the API server and the controllers keeps one copy. A reader that only counts
//! asks for [`CacheContent::Metadata`]: a cache fed by a metadata-only watch that keeps each
//! object's index and nothing of its body, never served to the router.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use kube::Api;
use kube::core::{ApiResource, DynamicObject, PartialObjectMeta, Status, WatchEvent};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use super::backend::{EventStream, ReadBackend, WatchQuery};
use super::cached::{CachedObject, ObjectKey};
use super::clients::{
    InstanceClients, InstanceIdentity, identity_lost, instance_changed_event, still_current,
};
use super::direct::typed;
use super::error::RouterError;
use super::query::{CompiledQuery, ListQuery, ObjectPage};
use super::raw::{ItemForm, RawObject};
use super::target::{ResourceKey, ResourceTarget};

/// Objects per page of a cache's (re)list. A page is read whole as its JSON text (copied once
/// more by the client) and then as one `RawObject` per object (that object's JSON again and
/// the few fields the cache indexes) before its objects are kept, so a sync needs a few times
/// a page's JSON on top of what it keeps, and the allocator holds on to that memory afterwards.
/// With 100 objects per page that stays within about 3 MiB per process for 5 KB Deployments;
/// kube-runtime's default of 500 saves round trips but kept about 9 MiB more
/// (docs/benchmarks.md, "embedded cache at scale").
pub const CACHE_LIST_PAGE_SIZE: u32 = 100;

/// How many changes a slow cache watcher may fall behind before its stream ends with
/// `410 Expired` (and the client lists again, as with kube-apiserver).
const WATCH_BUFFER: usize = 4096;

/// A change applied to a cache, fanned out to its watchers.
#[derive(Clone)]
enum CacheEvent {
    Added(Arc<CachedObject>),
    Modified(Arc<CachedObject>),
    Deleted(Arc<CachedObject>),
    /// The watcher listed again: watchers may have missed changes and must start over.
    Relisted,
    /// The cache was dropped (its instance was deleted or changed): watchers end.
    Gone,
}

/// Objects keyed by (namespace, name), as kube-apiserver stores them: the objects of one
/// namespace are one range, so listing a namespace costs what it holds, not what the whole
/// resource holds.
type ObjectMap = BTreeMap<ObjectKey, Arc<CachedObject>>;

/// The key of the object `name` in `namespace`.
fn key_of(namespace: Option<&str>, name: &str) -> ObjectKey {
    (namespace.map(Arc::from), Arc::from(name))
}

/// The objects of `namespace` (`None`: every object).
fn objects_in<'a>(
    objects: &'a ObjectMap,
    namespace: Option<&'a str>,
) -> impl Iterator<Item = &'a Arc<CachedObject>> + 'a {
    let range = match namespace {
        Some(ns) => objects.range(key_of(Some(ns), "")..),
        None => objects.range(..),
    };
    range
        .take_while(move |((ns, _), _)| namespace.is_none_or(|want| ns.as_deref() == Some(want)))
        .map(|(_, cached)| cached)
}

/// The string of `namespace` the objects of `objects` already share, or a new one.
fn shared_namespace(objects: &ObjectMap, namespace: &str) -> Arc<str> {
    objects_in(objects, Some(namespace))
        .next()
        .and_then(|cached| cached.namespace.clone())
        .unwrap_or_else(|| Arc::from(namespace))
}

/// A cached object decoded from its JSON, with `apiVersion` and `kind` (kept out of the JSON
/// of resources whose list items go without).
fn decode(target: &ResourceTarget, json: &[u8]) -> Result<DynamicObject, RouterError> {
    serde_json::from_slice(json)
        .map(|object| typed(object, &target.resource))
        .map_err(|source| RouterError::Decode {
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
    /// Newest resourceVersion applied by any cache of the instance (the same identity of it):
    /// the resourceVersion of list answers, so that it never goes back from one list to the
    /// next, whatever kinds were read or written in between.
    instance_seen: Arc<AtomicU64>,
    /// Whether the instance's list items of the resource carry `apiVersion` and `kind`
    /// ([`ItemForm`]), learned from each (re)list.
    items_typed: AtomicBool,
    /// Cancelled when the cache is dropped: nothing it holds may be served any more.
    gone: CancellationToken,
    events: broadcast::Sender<CacheEvent>,
    /// Moves on every change of what the cache holds (a completed list, an applied event) and
    /// when the cache is dropped: what in-process readers wait on.
    changes: watch::Sender<u64>,
    last_error: Mutex<Option<String>>,
}

impl ResourceCache {
    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

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

    fn item_form(&self) -> ItemForm {
        if self.items_typed.load(Ordering::Acquire) {
            ItemForm::Typed
        } else {
            ItemForm::Untyped
        }
    }

    /// The resourceVersion of a list answered now: the newest the instance's caches applied.
    fn list_version(&self) -> u64 {
        let seen = *self.seen.borrow();
        self.instance_seen
            .fetch_max(seen, Ordering::AcqRel)
            .max(seen)
    }

    fn note_seen(&self, version: u64) {
        self.instance_seen.fetch_max(version, Ordering::AcqRel);
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

/// What a cache keeps of each object of its resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheContent {
    /// The whole object as the instance sent it: what the router serves.
    Objects,
    /// The object's name, namespace, resourceVersion, creationTimestamp and labels, from a
    /// metadata-only watch (`PartialObjectMetadata`): enough to count objects at a few hundred
    /// bytes each, whatever the objects hold (Secrets' data, ConfigMaps of megabytes). Never
    /// served to the router.
    Metadata,
}

/// One resource of one instance as the embedded cache keeps it, for readers in the process
/// other than the router (the controllers' statistics). The handle stays valid until the cache
/// is dropped (its instance deleted or given other credentials, see [`CachedResource::gone`]);
/// a reader then asks [`EmbeddedCacheBackend::resource`] again.
#[derive(Clone)]
pub struct CachedResource {
    cache: Arc<ResourceCache>,
}

impl std::fmt::Debug for CachedResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedResource")
            .field("resource", &self.cache.resource.plural)
            .field("listed", &self.has_listed())
            .field("gone", &self.is_gone())
            .finish()
    }
}

impl CachedResource {
    /// Whether the initial list completed (it stays so while a later watch fails: the cache
    /// keeps what it last knew).
    pub fn has_listed(&self) -> bool {
        self.cache.ready.load(Ordering::Acquire)
    }

    /// Whether the cache was dropped.
    pub fn is_gone(&self) -> bool {
        self.cache.gone.is_cancelled()
    }

    /// Resolves when the cache is dropped.
    pub fn gone(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.cache.gone.clone().cancelled_owned()
    }

    /// A receiver that sees a new value after every change of what the cache holds.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.cache.changes.subscribe()
    }

    /// Number of cached objects.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The cached objects `query` selects (its selectors, name and namespaces; not its order
    /// or page), in (namespace, name) order. Each object is read through its index under the
    /// lock, and only those selected are shared out; one namespace is one range.
    pub fn matching(&self, query: &CompiledQuery) -> Vec<CachedItem> {
        let objects = self.cache.read();
        let namespace = match query.namespaces.as_slice() {
            [one] => Some(one.as_str()),
            _ => None,
        };
        objects_in(&objects, namespace)
            .filter(|cached| query.matches(None, cached.as_ref()))
            .map(|cached| CachedItem(cached.clone()))
            .collect()
    }

    /// The cached objects, in (namespace, name) order.
    pub fn items(&self) -> Vec<CachedItem> {
        self.cache
            .read()
            .values()
            .map(|cached| CachedItem(cached.clone()))
            .collect()
    }
}

/// One object of a [`CachedResource`]: shared with the cache, nothing copied.
#[derive(Clone, Debug)]
pub struct CachedItem(Arc<CachedObject>);

impl CachedItem {
    /// `metadata.namespace`.
    pub fn namespace(&self) -> Option<&str> {
        self.0.namespace.as_deref()
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// (namespace, name), sharing the cache's strings.
    pub fn key(&self) -> (Option<Arc<str>>, Arc<str>) {
        self.0.key()
    }

    /// `metadata.resourceVersion` as a number; 0 when there is none or it is not numeric.
    pub fn resource_version(&self) -> u64 {
        self.0.version.number()
    }

    /// The object's JSON as the cache keeps it (for [`CacheContent::Metadata`], only the
    /// indexed metadata).
    pub fn json(&self) -> &[u8] {
        &self.0.json
    }

    /// `metadata.creationTimestamp`.
    pub fn creation_timestamp(&self) -> Option<k8s_openapi::jiff::Timestamp> {
        self.0.created
    }

    /// `metadata.labels` (empty when it has none).
    pub fn labels(&self) -> BTreeMap<String, String> {
        self.0
            .labels
            .as_ref()
            .map(|labels| {
                labels
                    .iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A cached item is selected as the object it indexes (name, namespace, labels,
/// creationTimestamp), so a [`CompiledQuery`] filters cache readers' items as it filters lists.
impl super::query::ListFields for CachedItem {
    fn name(&self) -> Option<&str> {
        super::query::ListFields::name(self.0.as_ref())
    }

    fn namespace(&self) -> Option<&str> {
        super::query::ListFields::namespace(self.0.as_ref())
    }

    fn creation_timestamp(&self) -> Option<k8s_openapi::jiff::Timestamp> {
        self.0.created
    }

    fn label(&self, key: &str) -> Option<&str> {
        self.0.label(key)
    }

    fn field_value(&self, path: &str) -> std::borrow::Cow<'_, str> {
        self.0.field_value(path)
    }

    fn sort_value(&self, path: &[String]) -> Option<std::borrow::Cow<'_, serde_json::Value>> {
        self.0.sort_value(path)
    }
}

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
    /// The [`CacheContent::Metadata`] caches, apart: the router never reads them.
    metadata_caches: Arc<Mutex<CacheMap>>,
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
            metadata_caches: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The cache of `resource` in `instance` for a reader in the process (started if needed,
    /// shared with the router for [`CacheContent::Objects`]); the instance's current identity
    /// is checked as for a read.
    pub async fn resource(
        &self,
        instance: &str,
        resource: &ApiResource,
        content: CacheContent,
    ) -> Result<CachedResource, RouterError> {
        let cache = self.ensure_content(instance, resource, content).await?;
        Ok(CachedResource { cache })
    }

    fn map_of(&self, content: CacheContent) -> &Arc<Mutex<CacheMap>> {
        match content {
            CacheContent::Objects => &self.caches,
            CacheContent::Metadata => &self.metadata_caches,
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
        for map in [&self.caches, &self.metadata_caches] {
            retire_instance(
                &mut map.lock().unwrap_or_else(PoisonError::into_inner),
                instance,
                None,
            );
        }
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
        self.ensure_content(instance, resource, CacheContent::Objects)
            .await
    }

    async fn ensure_content(
        &self,
        instance: &str,
        resource: &ApiResource,
        content: CacheContent,
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
        let map = self.map_of(content);
        let mut caches = map.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = caches.get(&key)
            && entry.identity == connection.identity
        {
            return Ok(entry.cache.clone());
        }
        retire_instance(&mut caches, instance, Some(&connection.identity));
        let instance_seen = caches
            .iter()
            .find(|(k, e)| k.instance == instance && e.identity == connection.identity)
            .map(|(_, e)| e.cache.instance_seen.clone())
            .unwrap_or_default();
        let entry = self.start(
            key.clone(),
            connection.client,
            connection.identity,
            resource,
            instance_seen,
            content,
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
        instance_seen: Arc<AtomicU64>,
        content: CacheContent,
    ) -> Entry {
        let (events, _) = broadcast::channel(WATCH_BUFFER);
        let cache = Arc::new(ResourceCache {
            objects: RwLock::new(BTreeMap::new()),
            resource: resource.clone(),
            ready: AtomicBool::new(false),
            healthy: AtomicBool::new(true),
            seen: watch::Sender::new(0),
            instance_seen,
            items_typed: AtomicBool::new(ItemForm::guess(resource) == ItemForm::Typed),
            gone: CancellationToken::new(),
            events,
            changes: watch::Sender::new(0),
            last_error: Mutex::new(None),
        });
        tracing::debug!(cache = %key, ?content, "starting cache watch");
        let stop = CancellationToken::new();
        let lost = identity_lost(&self.clients, &key.instance, &identity);
        let events = match content {
            CacheContent::Objects => {
                let api: Api<RawObject> = Api::all_with(client, resource);
                watcher::watcher(api, self.config.clone())
                    .default_backoff()
                    .boxed()
            }
            CacheContent::Metadata => metadata_events(client, resource, self.config.clone()),
        };
        let watched = run_watch(key.clone(), cache.clone(), events);
        let caches = self.map_of(content).clone();
        let (task_cache, task_stop) = (cache.clone(), stop.clone());
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
            task_cache.changed();
            let _ = task_cache.events.send(CacheEvent::Gone);
        });
        Entry {
            cache,
            identity,
            stop,
        }
    }

    /// A page of the cache's objects and their JSON, and whether its `items` are the whole
    /// objects (a query reading beyond the indexed metadata decodes them) rather than only
    /// their names and namespaces ([`CachedObject::identity_object`]).
    async fn select(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<(ObjectPage, bool), RouterError> {
        let compiled = query.compile()?;
        let cache = self.ready_cache(target).await?;
        let seen = cache.list_version();
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
            let matched: Vec<Arc<CachedObject>> = objects_in(&cache.read(), namespace)
                .filter(|c| compiled.matches(namespace, c.as_ref()))
                .cloned()
                .collect();
            let (page, pagination) = compiled.select_by(namespace, matched, |c| c.as_ref());
            ObjectPage {
                items: page.iter().map(|c| Arc::new(c.identity_object())).collect(),
                pagination,
                resource_version: None,
                rendered: Some(page.iter().map(|c| c.json.clone()).collect()),
            }
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
        // The watch tasks hold the maps too; stopping them lets them go.
        for map in [&self.caches, &self.metadata_caches] {
            for entry in map.lock().unwrap_or_else(PoisonError::into_inner).values() {
                entry.stop.cancel();
            }
        }
    }
}

/// What a watcher gives the cache: pages and events decoded into [`RawObject`]s.
type RawEvents = BoxStream<'static, Result<Event<RawObject>, watcher::Error>>;

/// The events of a metadata-only watch of `resource` (kube-rs asks for
/// `PartialObjectMetadata`), each object cut down to what the cache indexes
/// ([`RawObject::indexed_metadata`]).
fn metadata_events(
    client: kube::Client,
    resource: &ApiResource,
    config: watcher::Config,
) -> RawEvents {
    let api: Api<PartialObjectMeta<RawObject>> = Api::all_with(client, resource);
    let cut = |meta: PartialObjectMeta<RawObject>| RawObject::indexed_metadata(&meta.metadata);
    watcher::watcher(api, config)
        .default_backoff()
        .map(move |item| {
            item.map(|event| match event {
                Event::Init => Event::Init,
                Event::InitApply(meta) => Event::InitApply(cut(meta)),
                Event::InitDone => Event::InitDone,
                Event::Apply(meta) => Event::Apply(cut(meta)),
                Event::Delete(meta) => Event::Delete(cut(meta)),
            })
        })
        .boxed()
}

/// Feeds the cache from a watcher: keeps each object's JSON and index, classifies changes for
/// cache watchers and tracks the newest applied resourceVersion. An object whose index cannot be
/// read from its JSON is logged and left out (a former version of it too).
async fn run_watch(key: ResourceKey, cache: Arc<ResourceCache>, mut stream: RawEvents) {
    let mut listed_max = 0u64;
    let mut relist = false;
    let mut form_learned = false;
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
        // What the cache keeps of `raw`, sharing the namespace string of `objects`.
        let keep = |raw: RawObject, objects: &mut ObjectMap| {
            let identity = raw.identity().map(|(ns, name)| key_of(ns, name));
            match raw.into_cached(&cache.resource, cache.item_form(), |ns| {
                shared_namespace(objects, ns)
            }) {
                Ok(cached) => Some(Arc::new(cached)),
                Err(reason) => {
                    tracing::warn!(cache = %key, object = ?identity, %reason, "cannot index an object; left out of the cache");
                    if let Some(identity) = identity {
                        objects.remove(&identity);
                    }
                    None
                }
            }
        };
        match event {
            Event::Init => {
                listed_max = 0;
                listing.clear();
                form_learned = false;
            }
            Event::InitApply(raw) => {
                listed_max = listed_max.max(raw.version());
                // The first readable item of a list says how the instance writes them.
                if !form_learned && let Some(form) = ItemForm::of_item(&raw) {
                    cache
                        .items_typed
                        .store(form == ItemForm::Typed, Ordering::Release);
                    form_learned = true;
                }
                if let Some(cached) = keep(raw, &mut listing) {
                    listing.insert(cached.key(), cached);
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
                cache.changed();
                tracing::debug!(cache = %key, objects = cache.len(), "cache synced");
            }
            Event::Apply(raw) => {
                let version = raw.version();
                let change = {
                    let mut objects = cache.write();
                    keep(raw, &mut objects).map(|cached| {
                        // Whether the object was already known decides ADDED vs MODIFIED.
                        let known = objects.insert(cached.key(), cached.clone()).is_some();
                        if known {
                            CacheEvent::Modified(cached)
                        } else {
                            CacheEvent::Added(cached)
                        }
                    })
                };
                if let Some(change) = change {
                    cache.note_seen(version);
                    cache.changed();
                    // No receivers is fine: nobody is watching.
                    let _ = cache.events.send(change);
                }
                cache.healthy.store(true, Ordering::Release);
            }
            Event::Delete(raw) => {
                let version = raw.version();
                let deleted = {
                    let mut objects = cache.write();
                    let identity = raw.identity().map(|(ns, name)| key_of(ns, name));
                    if let Some(identity) = &identity {
                        objects.remove(identity);
                    }
                    keep(raw, &mut objects)
                };
                cache.note_seen(version);
                cache.changed();
                if let Some(deleted) = deleted {
                    let _ = cache.events.send(CacheEvent::Deleted(deleted));
                }
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
        let key = key_of(target.namespace.as_deref(), name);
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
        // Only the objects the index lets through are decoded.
        let snapshot: Vec<Bytes> = objects_in(&cache.read(), ns)
            .filter(|c| c.version.number() <= snapshot_version)
            .filter(|c| needs_body || filter.matches(ns, c.as_ref()))
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
        let described = target.describe();
        let live = futures::stream::unfold(
            Some((receiver, filter, namespace, instance)),
            move |state| {
                let described = described.clone();
                async move {
                    let (mut receiver, filter, namespace, instance) = state?;
                    loop {
                        let (cached, wrap): (Arc<CachedObject>, fn(DynamicObject) -> _) =
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
                        let ns = namespace.as_deref();
                        let needs_body = filter.reads_beyond_metadata();
                        if cached.version.number() <= snapshot_version
                            || (!needs_body && !filter.matches(ns, cached.as_ref()))
                        {
                            continue;
                        }
                        let object = match serde_json::from_slice::<DynamicObject>(&cached.json) {
                            Ok(object) => object,
                            Err(source) => {
                                let err = RouterError::Decode {
                                    target: described,
                                    source,
                                };
                                return Some((Err(err), None));
                            }
                        };
                        if needs_body && !filter.matches(ns, &object) {
                            continue;
                        }
                        return Some((
                            Ok(wrap(object)),
                            Some((receiver, filter, namespace, instance)),
                        ));
                    }
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

    /// Keeps `metadata`'s object in `objects` as the watcher does with a listed object.
    fn keep(objects: &mut ObjectMap, metadata: serde_json::Value) -> Arc<CachedObject> {
        // As list items arrive: without apiVersion and kind.
        let json = json!({"metadata": metadata, "spec": {"replicas": 2}}).to_string();
        let raw: RawObject = serde_json::from_str(&json).unwrap();
        let cached = Arc::new(
            raw.into_cached(&deployments(), ItemForm::Untyped, |ns| {
                shared_namespace(objects, ns)
            })
            .unwrap(),
        );
        objects.insert(cached.key(), cached.clone());
        cached
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
            keep(&mut objects, meta);
        }
        let names = |namespace| -> Vec<String> {
            objects_in(&objects, namespace)
                .map(|c| c.name.to_string())
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

    #[test]
    fn objects_of_a_namespace_share_its_name() {
        let mut objects = ObjectMap::new();
        let a = keep(&mut objects, json!({"name": "a", "namespace": "team"}));
        let b = keep(&mut objects, json!({"name": "b", "namespace": "team"}));
        let c = keep(&mut objects, json!({"name": "c", "namespace": "other"}));
        let (a_ns, b_ns, c_ns) = (
            a.namespace.clone().unwrap(),
            b.namespace.clone().unwrap(),
            c.namespace.clone().unwrap(),
        );
        assert!(Arc::ptr_eq(&a_ns, &b_ns));
        assert!(!Arc::ptr_eq(&a_ns, &c_ns));
        // The key holds the same strings, not copies.
        let (key, _) = objects.first_key_value().unwrap();
        assert_eq!(key.1.as_ref(), "c");
        assert!(Arc::ptr_eq(key.0.as_ref().unwrap(), &c_ns));
    }

    #[test]
    fn cached_json_decodes_to_the_completed_object() {
        let mut objects = ObjectMap::new();
        let cached = keep(
            &mut objects,
            json!({"name": "web", "namespace": "shop", "resourceVersion": "7",
                   "annotations": {"a": "b"}}),
        );
        let target = ResourceTarget::namespaced("i", deployments(), "shop");
        let decoded = decode(&target, &cached.json).unwrap();
        let types = decoded.types.clone().unwrap();
        assert_eq!(
            (types.api_version.as_str(), types.kind.as_str()),
            ("apps/v1", "Deployment")
        );
        assert_eq!(decoded.metadata.name.as_deref(), Some("web"));
        assert_eq!(decoded.data["spec"]["replicas"], 2);
        assert_eq!(cached.version.number(), 7);
        // An object the cache cannot decode is a decode error, which reads then take directly.
        let err = decode(&target, b"{\"metadata\": 1}").unwrap_err();
        assert!(err.is_cache_failure(), "{err}");
    }

    #[test]
    fn the_index_answers_queries_as_the_whole_objects_do() {
        use crate::router::query::{SortBy, SortDir};
        let fixture = [
            json!({"name": "web-1", "namespace": "a", "resourceVersion": "12",
                   "creationTimestamp": "2024-01-03T00:00:00Z",
                   "labels": {"app": "web", "env": "prod"}}),
            json!({"name": "db", "namespace": "a", "resourceVersion": "9",
                   "creationTimestamp": "2024-01-01T00:00:00Z", "labels": {"app": "db"}}),
            json!({"name": "Web-2", "namespace": "b", "resourceVersion": "100",
                   "creationTimestamp": "2024-01-02T00:00:00Z",
                   "labels": {"app": "web", "env": "dev"}}),
            json!({"name": "cache", "namespace": "b", "resourceVersion": "x7",
                   "creationTimestamp": "2024-01-02T00:00:00Z", "labels": {}}),
            json!({"name": "node-1", "resourceVersion": "007"}),
            json!({"name": "web-3", "namespace": "c", "resourceVersion": "5",
                   "labels": {"app": "web", "tier": "front"}}),
        ];
        let mut objects = ObjectMap::new();
        let mut whole: Vec<Arc<DynamicObject>> = Vec::new();
        for metadata in fixture {
            let cached = keep(&mut objects, metadata);
            whole.push(Arc::new(serde_json::from_slice(&cached.json).unwrap()));
        }
        let indexed: Vec<Arc<CachedObject>> = objects.values().cloned().collect();
        let q = |f: &dyn Fn(&mut ListQuery)| {
            let mut q = ListQuery::default();
            f(&mut q);
            q
        };
        let queries = [
            q(&|_| {}),
            q(&|q| q.sort_dir = SortDir::Desc),
            q(&|q| q.sort_by = SortBy::CreationTimestamp),
            q(&|q| {
                q.sort_by = SortBy::CreationTimestamp;
                q.sort_dir = SortDir::Desc;
            }),
            q(&|q| q.sort_by = SortBy::Namespace),
            q(&|q| q.name = Some("WEB".into())),
            q(&|q| q.label_selector = Some("app=web".into())),
            q(&|q| q.label_selector = Some("app in (web,db),env!=prod".into())),
            q(&|q| q.label_selector = Some("!app".into())),
            q(&|q| q.label_selector = Some("tier notin (front),app".into())),
            q(&|q| q.field_selector = Some("metadata.namespace=b".into())),
            q(&|q| q.field_selector = Some("metadata.name!=db".into())),
            q(&|q| q.field_selector = Some("metadata.resourceVersion=007".into())),
            q(&|q| q.field_selector = Some("metadata.resourceVersion=12".into())),
            q(&|q| q.namespaces = vec!["a".into(), "c".into()]),
            q(&|q| q.sort_field = Some(".metadata.labels.env".into())),
            q(&|q| {
                q.sort_field = Some("metadata.labels".into());
                q.sort_dir = SortDir::Desc;
            }),
            q(&|q| q.sort_field = Some("metadata.creationTimestamp".into())),
            q(&|q| q.sort_field = Some(".metadata.resourceVersion".into())),
            q(&|q| q.sort_field = Some(".metadata.namespace".into())),
            q(&|q| q.sort_field = Some(".metadata.name.deeper".into())),
            q(&|q| {
                q.sort_by = SortBy::CreationTimestamp;
                q.page_size = Some(4);
                q.page = Some(2);
            }),
        ];
        let identity = |o: &dyn crate::router::ListFields| {
            (
                o.namespace().map(str::to_owned),
                o.name().map(str::to_owned),
            )
        };
        for query in queries {
            let compiled = query.compile().unwrap();
            assert!(!compiled.reads_beyond_metadata(), "{query:?}");
            for namespace in [None, Some("a"), Some("b"), Some("z")] {
                let want = compiled.select(namespace, whole.clone());
                let (got, pagination) =
                    compiled.select_by(namespace, indexed.clone(), |c| c.as_ref());
                let want_ids: Vec<_> = want.items.iter().map(|o| identity(o.as_ref())).collect();
                let got_ids: Vec<_> = got.iter().map(|c| identity(c.as_ref())).collect();
                assert_eq!(got_ids, want_ids, "{query:?} in {namespace:?}");
                assert_eq!(pagination, want.pagination, "{query:?} in {namespace:?}");
            }
        }
    }
}
