//! Shared informers, as Karmada's controllers share controller-runtime's: one watch per
//! resource type feeding a local store, and every controller interested in it woken on each
//! change (wakes coalesce: a controller runs one level-triggered pass for any number of
//! changes that came while it was busy).

use std::collections::HashMap;
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
        Self::start_waking(client, resource, labels, shutdown, Arc::default())
    }

    fn start_waking(
        client: &Client,
        resource: ApiResource,
        labels: Option<&str>,
        shutdown: &CancellationToken,
        wakes: Arc<Mutex<Vec<Arc<Notify>>>>,
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
        let stop = shutdown.clone();
        let what = resource.plural.clone();
        tokio::spawn(async move {
            let mut stream = stream.boxed();
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    event = stream.next() => match event {
                        None => return,
                        Some(Ok(_)) => wake_all(&notify),
                        Some(Err(e)) => tracing::trace!(resource = %what, error = %e, "watch"),
                    },
                }
            }
        });
        Informer {
            resource,
            store,
            wakes,
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

fn wake_all(wakes: &Arc<Mutex<Vec<Arc<Notify>>>>) {
    if let Ok(wakes) = wakes.lock() {
        for w in wakes.iter() {
            w.notify_one();
        }
    }
}

/// Runs `pass` until `shutdown`: at once, then on every wake, and every `resync`. A pass that
/// reports work left (`Ok(true)`) or fails runs again after `retry`.
pub async fn run_passes<F, Fut>(
    name: &'static str,
    wake: Arc<Notify>,
    resync: Duration,
    shutdown: CancellationToken,
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
        let wait = if again { RETRY } else { resync };
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = wake.notified() => {
                // Changes come in bursts: a short wait lets one pass take them all, so a
                // large burst does not cost a scan of every object per change.
                tokio::time::sleep(COALESCE).await;
            }
            _ = tokio::time::sleep(wait) => {}
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
