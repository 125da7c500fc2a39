//! Shared informers, as Karmada's controllers share controller-runtime's: one watch per
//! resource type feeding a local store, and every controller interested in it woken on each
//! change, with the keys the change affects put into its deduplicating [`Queue`] (wakes
//! coalesce: a controller runs one pass over the keys of any number of changes that came while
//! it was busy).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::api::ListParams;
use kube::core::{ApiResource, DynamicObject};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A watched resource type: its store and who to wake.
#[derive(Clone)]
pub struct Informer {
    resource: ApiResource,
    store: Store<DynamicObject>,
    wakes: Arc<Mutex<Vec<Arc<Notify>>>>,
    queues: Routes,
}

impl Informer {
    /// Starts watching `resource` (all namespaces) on `client`, objects restricted by
    /// `labels` when given, until `shutdown`.
    pub fn start(
        client: &Client,
        resource: ApiResource,
        labels: Option<&str>,
        shutdown: &CancellationToken,
    ) -> Informer {
        Self::start_waking(
            client,
            resource,
            labels,
            shutdown,
            Arc::default(),
            Arc::default(),
        )
    }

    fn start_waking(
        client: &Client,
        resource: ApiResource,
        labels: Option<&str>,
        shutdown: &CancellationToken,
        wakes: Arc<Mutex<Vec<Arc<Notify>>>>,
        queues: Routes,
    ) -> Informer {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let writer = reflector::store::Writer::new(resource.clone());
        let store = writer.as_reader();
        let mut config = watcher::Config::default();
        if let Some(labels) = labels {
            config = config.labels(labels);
        }
        let stream = reflector::reflector(writer, watcher(api, config).default_backoff());
        let notify = wakes.clone();
        let queued = queues.clone();
        let stop = shutdown.clone();
        let what = resource.plural.clone();
        tokio::spawn(async move {
            let mut stream = stream.boxed();
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    event = stream.next() => match event {
                        None => return,
                        Some(Ok(event)) => {
                            enqueue_all(&queued, &event);
                            wake_all(&notify);
                        }
                        Some(Err(e)) => tracing::trace!(resource = %what, error = %e, "watch"),
                    },
                }
            }
        });
        Informer {
            resource,
            store,
            wakes,
            queues,
        }
    }

    /// Puts the `namespace/name` of every changed object into `queue` (and asks it to look
    /// at everything when the watch relists).
    pub fn enqueue(&self, queue: &Arc<Queue>) {
        self.route(queue, Route::Own);
    }

    /// Asks `queue` to look at everything on any change here (a change of a Cluster may
    /// affect any object of the controller).
    pub fn enqueue_everything(&self, queue: &Arc<Queue>) {
        self.route(queue, Route::Everything);
    }

    /// Puts into `queue` the keys `affected` finds for every changed object (a Work's
    /// change enqueues its binding, say).
    pub fn enqueue_mapped(&self, queue: &Arc<Queue>, affected: Affected) {
        self.route(queue, Route::Mapped(affected));
    }

    fn route(&self, queue: &Arc<Queue>, route: Route) {
        if let Ok(mut queues) = self.queues.lock() {
            queues.push((queue.clone(), route));
        }
    }

    /// The objects `pending` names (every object when it asks for everything; keys of
    /// objects gone are left out).
    pub fn pending(&self, pending: &Pending) -> Vec<Arc<DynamicObject>> {
        match pending {
            Pending::All => self.all(),
            Pending::Keys(keys) => keys
                .iter()
                .filter_map(|key| {
                    let (ns, name) = key.split_once('/')?;
                    self.get(ns, name)
                })
                .collect(),
        }
    }

    /// Wakes `who` on every change.
    pub fn wake(&self, who: &Arc<Notify>) {
        if let Ok(mut wakes) = self.wakes.lock() {
            wakes.push(who.clone());
        }
    }

    /// Every object held.
    pub fn all(&self) -> Vec<Arc<DynamicObject>> {
        self.store.state()
    }

    /// Every object held, as JSON with its `apiVersion` and `kind` (list items come without).
    pub fn values(&self) -> Vec<serde_json::Value> {
        self.all().iter().map(|o| self.value(o)).collect()
    }

    /// `object` as JSON with its `apiVersion` and `kind`.
    pub fn value(&self, object: &DynamicObject) -> serde_json::Value {
        let mut v = serde_json::to_value(object).unwrap_or(serde_json::Value::Null);
        v["apiVersion"] = serde_json::json!(self.resource.api_version);
        v["kind"] = serde_json::json!(self.resource.kind);
        v
    }

    /// The object `namespace/name` as JSON with its type.
    pub fn get_value(&self, namespace: &str, name: &str) -> Option<serde_json::Value> {
        self.get(namespace, name).map(|o| self.value(&o))
    }

    /// The object `namespace/name` (namespace "" for cluster-scoped ones).
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<DynamicObject>> {
        let mut key = ObjectRef::new_with(name, self.resource.clone());
        if !namespace.is_empty() {
            key = key.within(namespace);
        }
        self.store.get(&key)
    }

    /// Whether the first list arrived, waiting at most `limit`.
    pub async fn ready(&self, limit: Duration) -> bool {
        tokio::time::timeout(limit, self.store.wait_until_ready())
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// The resource watched.
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }
}

fn enqueue_all(queues: &Routes, event: &watcher::Event<DynamicObject>) {
    let Ok(queues) = queues.lock() else {
        return;
    };
    let changed = match event {
        watcher::Event::Apply(o) | watcher::Event::Delete(o) | watcher::Event::InitApply(o) => {
            Some(o)
        }
        watcher::Event::Init | watcher::Event::InitDone => None,
    };
    for (q, route) in queues.iter() {
        match (changed, route) {
            (Some(o), Route::Own) => q.add(key(o)),
            (Some(o), Route::Mapped(affected)) => match affected(o) {
                Some(keys) => keys.into_iter().for_each(|k| q.add(k)),
                None => q.add_all(),
            },
            _ => q.add_all(),
        }
    }
}

/// Who is told of an informer's changes, and how.
type Routes = Arc<Mutex<Vec<(Arc<Queue>, Route)>>>;

/// The keys of a controller's objects a changed object affects (`None` when it cannot tell:
/// then everything).
pub type Affected = Arc<dyn Fn(&DynamicObject) -> Option<Vec<String>> + Send + Sync>;

/// How a change reaches a queue.
enum Route {
    /// The changed object's own `namespace/name`.
    Own,
    /// Everything.
    Everything,
    /// The keys found from the changed object.
    Mapped(Affected),
}

/// The keys a queue-driven controller has yet to work on, deduplicated, as Karmada's
/// controllers keep a rate-limited work queue: a change enqueues the keys it affects and a
/// pass takes only those. Starts (and falls back, on a resync or a change that may affect
/// any key) at everything.
pub struct Queue {
    pending: Mutex<Pending>,
}

/// What a pass works on.
#[derive(Debug, PartialEq)]
pub enum Pending {
    /// Every object.
    All,
    /// Only these `namespace/name` keys.
    Keys(HashSet<String>),
}

impl Default for Queue {
    fn default() -> Self {
        Queue {
            pending: Mutex::new(Pending::All),
        }
    }
}

impl Queue {
    /// Enqueues `key` (once, however often it changes before the next pass).
    pub fn add(&self, key: String) {
        if let Ok(mut p) = self.pending.lock()
            && let Pending::Keys(keys) = &mut *p
        {
            keys.insert(key);
        }
    }

    /// Asks the next pass to look at every object.
    pub fn add_all(&self) {
        if let Ok(mut p) = self.pending.lock() {
            *p = Pending::All;
        }
    }

    /// Takes what is pending, leaving the queue empty.
    pub fn take(&self) -> Pending {
        match self.pending.lock() {
            Ok(mut p) => std::mem::replace(&mut *p, Pending::Keys(HashSet::new())),
            Err(_) => Pending::All,
        }
    }
}

impl Pending {
    /// Whether the object `key` is to be worked on.
    pub fn wants(&self, key: &str) -> bool {
        match self {
            Pending::All => true,
            Pending::Keys(keys) => keys.contains(key),
        }
    }
}

fn wake_all(wakes: &Arc<Mutex<Vec<Arc<Notify>>>>) {
    if let Ok(wakes) = wakes.lock() {
        for w in wakes.iter() {
            w.notify_one();
        }
    }
}

/// Runs `pass` until `shutdown`: at once, then on every wake, and every `resync`. A pass that
/// reports work left (`Ok(true)`) or fails runs again after `retry`. `queue` is what the
/// changes enqueued: a resync or a retry asks it for everything (the memo still spares what
/// did not change).
pub async fn run_passes<F, Fut>(
    name: &'static str,
    wake: Arc<Notify>,
    resync: Duration,
    shutdown: CancellationToken,
    queue: Arc<Queue>,
    mut pass: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool, String>>,
{
    const RETRY: Duration = Duration::from_millis(200);
    loop {
        let again = match pass().await {
            Ok(again) => again,
            Err(why) => {
                tracing::debug!(controller = name, reason = %why, "pass failed");
                true
            }
        };
        let wait = if again {
            queue.add_all();
            RETRY
        } else {
            resync
        };
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = wake.notified() => {
                // Changes come in bursts: a short wait lets one pass take them all.
                tokio::time::sleep(COALESCE).await;
            }
            _ = tokio::time::sleep(wait) => queue.add_all(),
        }
    }
}

/// How long a woken controller waits for more changes before its pass.
const COALESCE: Duration = Duration::from_millis(50);

/// What each controller last did successfully, by object: a fingerprint of the inputs (their
/// resourceVersions or generations) so an unchanged object is not worked on again at every
/// pass. Only a shortcut: entries expire, and a restarted emulation starts from nothing, working
/// from what the API servers hold.
#[derive(Default)]
pub struct Memo {
    done: Mutex<HashMap<MemoKey, (String, std::time::Instant)>>,
}

/// A controller's name and an object's key.
type MemoKey = (&'static str, String);

/// How long a memo entry spares an object (then it is worked on again, as a resync would).
const MEMO_TTL: Duration = Duration::from_secs(120);

impl Memo {
    /// Whether `controller` already handled `key` with inputs `fingerprint`.
    pub fn unchanged(&self, controller: &'static str, key: &str, fingerprint: &str) -> bool {
        let Ok(done) = self.done.lock() else {
            return false;
        };
        done.get(&(controller, key.to_owned()))
            .is_some_and(|(f, at)| f == fingerprint && at.elapsed() < MEMO_TTL)
    }

    /// Records that `controller` handled `key` with inputs `fingerprint`.
    pub fn record(&self, controller: &'static str, key: &str, fingerprint: String) {
        if let Ok(mut done) = self.done.lock() {
            done.insert(
                (controller, key.to_owned()),
                (fingerprint, std::time::Instant::now()),
            );
        }
    }
}

/// `namespace/name@resourceVersion` of an object: its part of a fingerprint.
pub fn version(object: &DynamicObject) -> String {
    format!(
        "{}/{}@{}",
        object.metadata.namespace.as_deref().unwrap_or_default(),
        object.metadata.name.as_deref().unwrap_or_default(),
        object
            .metadata
            .resource_version
            .as_deref()
            .unwrap_or_default()
    )
}

/// `namespace/name` of an object.
pub fn key(object: &DynamicObject) -> String {
    format!(
        "{}/{}",
        object.metadata.namespace.as_deref().unwrap_or_default(),
        object.metadata.name.as_deref().unwrap_or_default()
    )
}

/// `namespace/name@generation` (and whether it is being deleted): what changes when its
/// specification does, not its status.
pub fn generation(object: &DynamicObject) -> String {
    format!(
        "{}@{}{}",
        key(object),
        object.metadata.generation.unwrap_or_default(),
        if object.metadata.deletion_timestamp.is_some() {
            "-deleting"
        } else {
            ""
        }
    )
}

/// The Works of each binding, by the binding's permanent id (namespaced and cluster-scoped).
pub fn works_by_binding(works: &Informer) -> HashMap<String, Vec<Arc<DynamicObject>>> {
    let mut by: HashMap<String, Vec<Arc<DynamicObject>>> = HashMap::new();
    for w in works.all() {
        let labels = w.metadata.labels.as_ref();
        let id = labels.and_then(|l| {
            l.get(super::objects::RB_PERMANENT_ID)
                .or_else(|| l.get(super::objects::CRB_PERMANENT_ID))
        });
        if let Some(id) = id {
            by.entry(id.clone()).or_default().push(w);
        }
    }
    by
}

/// The versions of every object of `informer`, as one fingerprint.
pub fn versions(informer: &Informer) -> String {
    let mut all: Vec<String> = informer.all().iter().map(|o| version(o)).collect();
    all.sort();
    all.join(",")
}

/// Connections to the members and informers over what Karmada applied there (objects
/// labelled `karmada.io/managed=true`), made on first use and kept per cluster.
#[derive(Clone, Default)]
pub struct Members {
    inner: Arc<tokio::sync::Mutex<HashMap<String, Member>>>,
    wakes: Arc<Mutex<Vec<Arc<Notify>>>>,
    queues: Routes,
}

struct Member {
    /// What the connection was made from (endpoint and secret), to notice a change.
    identity: String,
    client: Client,
    informers: HashMap<String, Informer>,
    shutdown: CancellationToken,
}

impl Members {
    /// Wakes `who` on every change of a managed object in any member.
    pub fn wake(&self, who: &Arc<Notify>) {
        if let Ok(mut wakes) = self.wakes.lock() {
            wakes.push(who.clone());
        }
    }

    /// Asks `queue` to look at everything on every change of a managed object in any member.
    pub fn enqueue_everything(&self, queue: &Arc<Queue>) {
        if let Ok(mut queues) = self.queues.lock() {
            queues.push((queue.clone(), Route::Everything));
        }
    }

    /// Puts into `queue` the keys `affected` finds for every changed managed object.
    pub fn enqueue_mapped(&self, queue: &Arc<Queue>, affected: Affected) {
        if let Ok(mut queues) = self.queues.lock() {
            queues.push((queue.clone(), Route::Mapped(affected)));
        }
    }

    /// A client of the member `cluster` names (a Cluster object as JSON).
    pub async fn client(
        &self,
        karmada: &Client,
        cluster: &serde_json::Value,
        parent: &CancellationToken,
    ) -> Result<Client, String> {
        let name = super::objects::text(cluster, "/metadata/name").to_owned();
        let identity = format!(
            "{}|{}/{}",
            super::objects::text(cluster, "/spec/apiEndpoint"),
            super::objects::text(cluster, "/spec/secretRef/namespace"),
            super::objects::text(cluster, "/spec/secretRef/name"),
        );
        let mut all = self.inner.lock().await;
        if let Some(m) = all.get(&name)
            && m.identity == identity
        {
            return Ok(m.client.clone());
        }
        let client = super::cluster_status::member_client(karmada, cluster).await?;
        if let Some(old) = all.remove(&name) {
            old.shutdown.cancel();
        }
        all.insert(
            name,
            Member {
                identity,
                client: client.clone(),
                informers: HashMap::new(),
                shutdown: parent.child_token(),
            },
        );
        Ok(client)
    }

    /// The informer over managed objects of `resource` in member `cluster` (whose client
    /// [`Members::client`] made), started on first use.
    pub async fn informer(&self, cluster: &str, resource: &ApiResource) -> Option<Informer> {
        let mut all = self.inner.lock().await;
        let member = all.get_mut(cluster)?;
        let key = format!(
            "{}/{}/{}",
            resource.group, resource.version, resource.plural
        );
        if let Some(i) = member.informers.get(&key) {
            return Some(i.clone());
        }
        let informer = Informer::start_waking(
            &member.client,
            resource.clone(),
            Some(&format!("{}=true", super::objects::MANAGED)),
            &member.shutdown,
            self.wakes.clone(),
            self.queues.clone(),
        );
        member.informers.insert(key, informer.clone());
        Some(informer)
    }

    /// Forgets member `cluster` (it left).
    pub async fn forget(&self, cluster: &str) {
        if let Some(m) = self.inner.lock().await.remove(cluster) {
            m.shutdown.cancel();
        }
    }
}

/// Lists `resource` directly (for what no informer holds).
pub async fn list(
    client: &Client,
    resource: &ApiResource,
) -> Result<Vec<DynamicObject>, kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    Ok(api.list(&ListParams::default()).await?.items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[&str]) -> Pending {
        Pending::Keys(k.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn queue_dedups_keys_and_falls_back_to_everything() {
        type Step = fn(&Queue);
        let cases: &[(&str, &[Step], Pending)] = &[
            ("a new queue asks for everything", &[], Pending::All),
            (
                "keys once each",
                &[
                    |q| q.add("ns/a".into()),
                    |q| q.add("ns/a".into()),
                    |q| q.add("/b".into()),
                ],
                keys(&["ns/a", "/b"]),
            ),
            (
                "everything wins over keys",
                &[
                    |q| q.add("ns/a".into()),
                    |q| q.add_all(),
                    |q| q.add("ns/c".into()),
                ],
                Pending::All,
            ),
        ];
        for (what, steps, want) in cases {
            let q = Queue::default();
            if !steps.is_empty() {
                // Empty it first: a new queue starts at everything.
                q.take();
            }
            for step in *steps {
                step(&q);
            }
            assert_eq!(&q.take(), want, "{what}");
            assert_eq!(q.take(), keys(&[]), "{what}: taken, the queue is empty");
        }
    }

    #[test]
    fn pending_wants_only_its_keys() {
        let p = keys(&["ns/a"]);
        assert!(p.wants("ns/a"));
        assert!(!p.wants("ns/b"));
        assert!(Pending::All.wants("ns/b"));
    }
}
