//! The state of the top-down half in one sync session: the in-memory stores of both
//! clusters, the work queues of the reconcilers, and how a watch event turns into queued
//! keys. Reconcilers read it; [`super::session`] feeds it and runs them.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    ConfigMap, Event, ObjectReference, PersistentVolume, PersistentVolumeClaim, Pod, Secret,
    Service,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::ObjectMeta;
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};
use tokio::time::Instant;

use super::error::Side;
use super::mapping::{
    BindingSettings, VIRTUAL_NAME, VIRTUAL_NAMESPACE, back_reference, is_managed,
    physical_pod_name, pv_secret_refs, same_copied_annotations,
};
use super::store::{CopyKey, CopyKind, ObjectStore, PodStore, object_key, pod_finished};
use crate::crd::ClusterBinding;
use crate::labels;
use crate::naming::{physical_name, virtual_node_name};
use crate::syncer::context::Context;
use crate::syncer::queue::FailureCounts;
use crate::syncer::queue::WorkQueue;
use crate::syncer::reflector::Change;

/// Key of the single item of the cleanup queue.
pub(crate) const CLEANUP_KEY: &str = "binding";

/// Objects of both clusters, as the watches last saw them. Physical objects are keyed by
/// `<mountNamespace>/<name>` (PersistentVolumes by name).
#[derive(Default)]
pub struct Stores {
    /// Virtual pods bound to (what may be) this binding's virtual nodes.
    pub virtual_pods: PodStore,
    /// Virtual ConfigMaps.
    pub config_maps: ObjectStore<ConfigMap>,
    /// Virtual Secrets.
    pub secrets: ObjectStore<Secret>,
    /// Virtual claims.
    pub pvcs: ObjectStore<PersistentVolumeClaim>,
    /// Virtual volumes.
    pub pvs: ObjectStore<PersistentVolume>,
    /// Our physical pods in the mount namespace.
    pub physical_pods: PodStore,
    /// Our physical ConfigMaps.
    pub physical_config_maps: ObjectStore<ConfigMap>,
    /// Our physical Secrets (copies and token Secrets).
    pub physical_secrets: ObjectStore<Secret>,
    /// Our physical claims.
    pub physical_pvcs: ObjectStore<PersistentVolumeClaim>,
    /// Our physical volumes.
    pub physical_pvs: ObjectStore<PersistentVolume>,
    /// Services of the computing cluster (see [`super::service_events`]).
    pub services: ObjectStore<Service>,
    /// EndpointSlices of the computing cluster's `serviceNamespaces`.
    pub endpoint_slices: ObjectStore<EndpointSlice>,
    /// Our reflected Services in the mount namespace.
    pub physical_services: ObjectStore<Service>,
    /// Our reflected EndpointSlices in the mount namespace.
    pub physical_endpoint_slices: ObjectStore<EndpointSlice>,
    /// The worker's Events about pods and claims of the mount namespace.
    pub physical_events: ObjectStore<Event>,
}

/// Everything the top-down reconcilers of one session share.
pub struct TopDown {
    /// The binding's mapping settings.
    pub settings: BindingSettings,
    /// Every virtual node name of this binding starts with this.
    vnode_prefix: String,
    stores: RwLock<Stores>,
    /// Virtual pod keys (`namespace/name`).
    pub pods: WorkQueue,
    /// Physical pod names.
    pub physical_pods: WorkQueue,
    /// Copy keys ([`CopyKey`]).
    pub copies: WorkQueue,
    /// Virtual pod keys whose token Secret to check.
    pub tokens: WorkQueue,
    /// The binding, when it is being deleted.
    pub cleanup: WorkQueue,
    /// Virtual Service keys (`namespace/name`) to reflect, and
    /// [`super::service_reflection::NETWORK_KEY`].
    pub services: WorkQueue,
    /// Physical objects (`<kind>/<name>`) whose worker Events to reflect.
    pub events: WorkQueue,
    /// When each object's reflected Events were last written (the rate limit).
    event_writes: Mutex<HashMap<String, Instant>>,
    /// Consecutive failures per key, one table per [`Reconciler`].
    pub(super) failures: Failures,
    first_seen: Mutex<HashMap<String, Instant>>,
    /// UIDs of virtual pods whose physical pod was deleted from elsewhere before the
    /// mapping was recorded on them ([`lost_before_record`]).
    lost_unrecorded: Mutex<HashSet<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The virtual object a physical ConfigMap, Secret or claim copy says it copies.
pub(super) fn copied_from(meta: &ObjectMeta) -> Option<(String, String)> {
    let annotations = meta.annotations.as_ref()?;
    Some((
        annotations.get(VIRTUAL_NAMESPACE)?.clone(),
        annotations.get(VIRTUAL_NAME)?.clone(),
    ))
}

/// The virtual pod a physical pod or token Secret belongs to, as a key.
pub(super) fn owner_pod_key(meta: &ObjectMeta) -> Option<String> {
    let annotations = meta.annotations.as_ref()?;
    Some(object_key(
        annotations.get(labels::VIRTUAL_POD_NAMESPACE)?,
        annotations.get(labels::VIRTUAL_POD_NAME)?,
    ))
}

impl TopDown {
    /// The top-down state for `binding`; `None` (logged) when the binding cannot be mapped
    /// to (no mountNamespace).
    pub fn new(ctx: &Context, binding: &ClusterBinding) -> Option<Arc<TopDown>> {
        let settings = match BindingSettings::from_binding(binding) {
            Ok(settings) => settings,
            Err(err) => {
                tracing::warn!(binding = %ctx.config.binding_name, error = %err, "pods are not mapped");
                return None;
            }
        };
        // Hashed virtual node names keep their first 30 characters, which always include
        // `vnode-<clusterID>` and then a `-` (the id has at most 24 characters).
        let vnode_prefix = {
            let full = virtual_node_name(&settings.cluster_id, "");
            full.chars().take(30).collect::<String>()
        };
        Some(Arc::new(TopDown {
            settings,
            vnode_prefix,
            stores: RwLock::new(Stores::default()),
            pods: WorkQueue::new(),
            physical_pods: WorkQueue::new(),
            copies: WorkQueue::new(),
            tokens: WorkQueue::new(),
            cleanup: WorkQueue::new(),
            services: WorkQueue::new(),
            events: WorkQueue::new(),
            event_writes: Mutex::new(HashMap::new()),
            failures: Default::default(),
            first_seen: Mutex::new(HashMap::new()),
            lost_unrecorded: Mutex::new(HashSet::new()),
        }))
    }

    /// Reads the stores.
    pub fn stores(&self) -> RwLockReadGuard<'_, Stores> {
        self.stores.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes the stores.
    pub fn stores_mut(&self) -> RwLockWriteGuard<'_, Stores> {
        self.stores.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Store key of the physical object `name` in the mount namespace.
    pub fn physical_key(&self, name: &str) -> String {
        object_key(&self.settings.mount_namespace, name)
    }

    /// A virtual pod.
    pub fn virtual_pod(&self, key: &str) -> Option<Arc<Pod>> {
        self.stores().virtual_pods.get(key)
    }

    /// A physical pod of the mount namespace.
    pub fn physical_pod(&self, name: &str) -> Option<Arc<Pod>> {
        self.stores().physical_pods.get(&self.physical_key(name))
    }

    /// Records a virtual pod the syncer just wrote.
    pub fn remember_virtual_pod(&self, pod: Pod) {
        self.stores_mut().virtual_pods.remember(pod);
    }

    /// Records a physical pod the syncer just wrote.
    pub fn remember_physical_pod(&self, pod: Pod) {
        self.stores_mut().physical_pods.remember(pod);
    }

    /// Whether a copy of `key` is still needed by a pod that has not finished (directly, or
    /// for a Secret, through the volume of a needed claim).
    pub fn copy_needed(&self, key: &CopyKey) -> bool {
        let stores = self.stores();
        if stores.virtual_pods.needed(key) {
            return true;
        }
        if key.kind != CopyKind::Secret {
            return false;
        }
        stores.pvs.values().any(|pv| {
            let refs = pv_secret_refs(pv);
            let claim = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
            refs.iter()
                .any(|(ns, name)| *ns == key.namespace && *name == key.name)
                && claim.is_some_and(|c| {
                    let (Some(ns), Some(name)) = (&c.namespace, &c.name) else {
                        return false;
                    };
                    stores.virtual_pods.needed(&CopyKey::new(
                        CopyKind::PersistentVolumeClaim,
                        ns,
                        name,
                    ))
                })
        })
    }

    /// Whether the physical pod of virtual pod `uid` was deleted from elsewhere before the
    /// mapping was recorded on it.
    pub fn lost_before_record(&self, uid: &str) -> bool {
        lock(&self.lost_unrecorded).contains(uid)
    }

    /// Forgets what [`Self::lost_before_record`] knew of a virtual pod that is gone.
    fn forget_lost(&self, pod: &Pod) {
        if let Some(uid) = &pod.metadata.uid {
            lock(&self.lost_unrecorded).remove(uid);
        }
    }

    /// When the syncer first saw a virtual pod that is not mapped yet (for the mapping
    /// latency metric); forgotten once read.
    pub fn take_first_seen(&self, key: &str) -> Option<Instant> {
        lock(&self.first_seen).remove(key)
    }

    /// Whether a virtual pod may be one of this binding's: bound to a node named like our
    /// virtual nodes, or recorded as mapped into our mount namespace.
    fn candidate(&self, pod: &Pod) -> bool {
        // Host-port placeholders hold ports on a virtual node; they never run.
        if pod
            .labels()
            .get(labels::HOSTPORT_PLACEHOLDER)
            .is_some_and(|v| v == "true")
        {
            return false;
        }
        let on_vnode = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| n.starts_with(&self.vnode_prefix));
        on_vnode
            || pod
                .annotations()
                .get(labels::PHYSICAL_POD_NAMESPACE)
                .is_some_and(|ns| *ns == self.settings.mount_namespace)
    }

    fn physical_name_of(pod: &Pod) -> Option<String> {
        physical_pod_name(pod).ok()
    }

    fn set_pod_metrics(&self, ctx: &Context, side: Side) {
        let Some(metrics) = &ctx.config.metrics else {
            return;
        };
        let stores = self.stores();
        let phases = match side {
            Side::Computing => stores.virtual_pods.phases(),
            Side::Worker => stores.physical_pods.phases(),
        };
        metrics
            .topdown()
            .set_pods(&self.settings.name, side, phases);
    }

    /// Virtual pod changes (computing cluster watch).
    pub fn on_virtual_pods(&self, ctx: &Context, change: Change<Pod>) {
        let mut pods: Vec<String> = Vec::new();
        let mut physical: Vec<String> = Vec::new();
        let mut copies: Vec<CopyKey> = Vec::new();
        let mut tokens: Vec<String> = Vec::new();
        {
            let mut stores = self.stores_mut();
            match change {
                Change::Applied(pod) => {
                    let key = object_key(
                        pod.metadata.namespace.as_deref().unwrap_or_default(),
                        pod.metadata.name.as_deref().unwrap_or_default(),
                    );
                    if !self.candidate(&pod) && stores.virtual_pods.get(&key).is_none() {
                        return;
                    }
                    let mapped = pod.annotations().contains_key(labels::PHYSICAL_POD_UID);
                    if !mapped {
                        lock(&self.first_seen)
                            .entry(key.clone())
                            .or_insert_with(Instant::now);
                    }
                    let finished = pod_finished(&pod);
                    let status = pod.status.clone();
                    let deleting = pod.metadata.deletion_timestamp.is_some();
                    let name = Self::physical_name_of(&pod);
                    let old = stores.virtual_pods.apply(pod);
                    let new = stores.virtual_pods.get(&key);
                    // A change of status alone (most often written by this syncer, with
                    // the mapping record) changes nothing in the physical pod.
                    let status_only = match (&old, &new) {
                        (Some(old), Some(new)) => {
                            old.metadata.labels == new.metadata.labels
                                && same_copied_annotations(&old.metadata, &new.metadata)
                                && old.metadata.deletion_timestamp
                                    == new.metadata.deletion_timestamp
                                && old.spec == new.spec
                        }
                        _ => false,
                    };
                    if !status_only || finished {
                        pods.push(key.clone());
                    }
                    let status_changed = old.as_ref().is_none_or(|o| o.status != status);
                    if let Some(name) = name
                        && status_changed
                    {
                        physical.push(name);
                    }
                    let was_finished = old.as_ref().is_some_and(|o| pod_finished(o));
                    if finished && !was_finished {
                        copies.extend(stores.virtual_pods.dependencies_of(&key));
                        tokens.push(key.clone());
                    }
                    if deleting {
                        tokens.push(key);
                    }
                }
                Change::Deleted(pod) => {
                    let key = object_key(
                        pod.metadata.namespace.as_deref().unwrap_or_default(),
                        pod.metadata.name.as_deref().unwrap_or_default(),
                    );
                    let dependencies = stores.virtual_pods.dependencies_of(&key);
                    let Some(old) = stores.virtual_pods.delete(&pod) else {
                        return;
                    };
                    lock(&self.first_seen).remove(&key);
                    self.forget_lost(&old);
                    physical.extend(Self::physical_name_of(&old));
                    copies.extend(dependencies);
                    tokens.push(key);
                }
                Change::Relisted(all) => {
                    let ours: Vec<Pod> = all.into_iter().filter(|p| self.candidate(p)).collect();
                    let gone = stores.virtual_pods.replace(ours);
                    pods.extend(stores.virtual_pods.keys());
                    for old in gone {
                        self.forget_lost(&old);
                        physical.extend(Self::physical_name_of(&old));
                        copies.extend(super::store::copy_keys_of(&old));
                        tokens.push(object_key(
                            old.metadata.namespace.as_deref().unwrap_or_default(),
                            old.metadata.name.as_deref().unwrap_or_default(),
                        ));
                    }
                }
            }
        }
        self.pods.add_all(pods.iter().map(String::as_str));
        self.physical_pods
            .add_all(physical.iter().map(String::as_str));
        let copies: Vec<String> = copies.iter().map(ToString::to_string).collect();
        self.copies.add_all(copies.iter().map(String::as_str));
        self.tokens.add_all(tokens.iter().map(String::as_str));
        self.set_pod_metrics(ctx, Side::Computing);
    }

    /// Worker Event changes (mount namespace): the objects they are about are queued for
    /// [`super::event_reflection`].
    pub fn on_physical_events(&self, change: Change<Event>) {
        let mount = self.settings.mount_namespace.as_str();
        let mut keys: Vec<String> = Vec::new();
        {
            let mut stores = self.stores_mut();
            let store = &mut stores.physical_events;
            match change {
                Change::Applied(event) => {
                    keys.extend(super::mapping::event::event_key(&event, mount));
                    store.apply(event);
                }
                // Reflected Events stay until they expire, as the worker's do.
                Change::Deleted(event) => {
                    store.delete(&event);
                }
                Change::Relisted(all) => {
                    keys.extend(
                        all.iter()
                            .filter_map(|e| super::mapping::event::event_key(e, mount)),
                    );
                    store.replace(all);
                }
            }
        }
        keys.sort();
        keys.dedup();
        self.events.add_all(keys.iter().map(String::as_str));
    }

    /// When the Events of `key` may be written again: `interval` after the last write.
    pub fn event_write_allowed_at(&self, key: &str, interval: Duration) -> Option<Instant> {
        lock(&self.event_writes).get(key).map(|at| *at + interval)
    }

    /// Records a write of `key`'s reflected Events (forgetting writes long past).
    pub fn record_event_write(&self, key: &str) {
        let now = Instant::now();
        let mut writes = lock(&self.event_writes);
        writes.retain(|_, at| now.duration_since(*at) < Duration::from_secs(60));
        writes.insert(key.to_owned(), now);
    }

    /// Whether the top-down half keeps this worker pod: one of ours, in the mount namespace.
    pub fn keeps_physical_pod(&self, pod: &Pod) -> bool {
        pod.metadata.namespace.as_deref() == Some(self.settings.mount_namespace.as_str())
            && is_managed(&pod.metadata)
    }

    /// Physical pod changes, from the bottom-up worker pod watch (all namespaces): only our
    /// pods of the mount namespace are kept ([`TopDown::keeps_physical_pod`]).
    pub fn on_physical_pods(&self, ctx: &Context, change: &Change<Pod>) {
        let ours = |p: &Pod| self.keeps_physical_pod(p);
        let mut physical: Vec<String> = Vec::new();
        let mut virtual_keys: Vec<String> = Vec::new();
        {
            let mut stores = self.stores_mut();
            match change {
                Change::Applied(p) => {
                    if !ours(p) {
                        return;
                    }
                    let old = stores.physical_pods.apply(p.clone());
                    let name = p.name_any();
                    if old.is_none() {
                        // Its Events may have come first.
                        self.events.add(&format!("Pod/{name}"));
                    }
                    let status_changed = old.as_ref().is_none_or(|o| o.status != p.status);
                    if status_changed {
                        physical.push(name);
                    }
                    let deletion_changed = old.as_ref().is_none_or(|o| {
                        o.metadata.deletion_timestamp != p.metadata.deletion_timestamp
                    });
                    if deletion_changed {
                        virtual_keys.extend(owner_pod_key(&p.metadata));
                    }
                }
                Change::Deleted(p) => {
                    if !ours(p) {
                        return;
                    }
                    let owner =
                        owner_pod_key(&p.metadata).and_then(|k| stores.virtual_pods.get(&k));
                    if let Some(uid) =
                        lost_before_record(p, owner.as_deref(), &self.settings.mount_namespace)
                    {
                        lock(&self.lost_unrecorded).insert(uid);
                    }
                    stores.physical_pods.delete(p);
                    virtual_keys.extend(owner_pod_key(&p.metadata));
                }
                Change::Relisted(all) => {
                    let mine: Vec<Pod> = all.iter().filter(|p| ours(p)).cloned().collect();
                    let gone = stores.physical_pods.replace(mine);
                    for p in stores.physical_pods.values() {
                        physical.push(p.name_any());
                        virtual_keys.extend(owner_pod_key(&p.metadata));
                    }
                    for p in gone {
                        virtual_keys.extend(owner_pod_key(&p.metadata));
                    }
                }
            }
        }
        self.physical_pods
            .add_all(physical.iter().map(String::as_str));
        self.pods.add_all(virtual_keys.iter().map(String::as_str));
        self.set_pod_metrics(ctx, Side::Worker);
    }

    /// Queues the copy of `key` when it matters (a pod depends on it or a copy exists), and
    /// the pods that waited for it when it just appeared.
    fn copy_changed(&self, key: CopyKey, appeared: bool) -> (Option<String>, Vec<String>) {
        let stores = self.stores();
        let dependents = stores.virtual_pods.dependents(&key);
        let physical = self.physical_key(&physical_name(&key.namespace, &key.name));
        let copied = match key.kind {
            CopyKind::ConfigMap => stores.physical_config_maps.get(&physical).is_some(),
            CopyKind::Secret => stores.physical_secrets.get(&physical).is_some(),
            CopyKind::PersistentVolumeClaim => stores.physical_pvcs.get(&physical).is_some(),
        };
        let queue_copy = (copied || !dependents.is_empty()).then(|| key.to_string());
        (queue_copy, if appeared { dependents } else { Vec::new() })
    }

    fn enqueue_changes(&self, changes: Vec<(Option<String>, Vec<String>)>) {
        let mut copies = Vec::new();
        let mut pods = Vec::new();
        for (copy, dependents) in changes {
            copies.extend(copy);
            pods.extend(dependents);
        }
        self.copies.add_all(copies.iter().map(String::as_str));
        self.pods.add_all(pods.iter().map(String::as_str));
    }

    /// Virtual ConfigMap, Secret or claim changes.
    pub(super) fn on_virtual_objects<K: Resource>(
        &self,
        kind: CopyKind,
        change: Change<K>,
        store: impl Fn(&mut Stores) -> &mut ObjectStore<K>,
        appeared: impl Fn(Option<&K>, &K) -> bool,
    ) {
        let key_of = |obj: &K| {
            CopyKey::new(
                kind,
                obj.meta().namespace.as_deref().unwrap_or_default(),
                obj.meta().name.as_deref().unwrap_or_default(),
            )
        };
        let mut keys: Vec<(CopyKey, bool)> = Vec::new();
        {
            let mut stores = self.stores_mut();
            match change {
                Change::Applied(obj) => {
                    let key = key_of(&obj);
                    let old = store(&mut stores).apply(obj);
                    let now = store(&mut stores).get(&key.object_key());
                    let new_arrival = now.as_deref().is_some_and(|n| appeared(old.as_deref(), n));
                    keys.push((key, new_arrival));
                }
                Change::Deleted(obj) => {
                    store(&mut stores).delete(&obj);
                    keys.push((key_of(&obj), false));
                }
                Change::Relisted(all) => {
                    let gone = store(&mut stores).replace(all);
                    keys.extend(gone.iter().map(|o| (key_of(o), false)));
                    keys.extend(store(&mut stores).values().map(|o| (key_of(o), true)));
                }
            }
        }
        let changes = keys
            .into_iter()
            .map(|(key, appeared)| self.copy_changed(key, appeared))
            .collect();
        self.enqueue_changes(changes);
    }

    /// Virtual volume changes: their claim is re-evaluated.
    pub(super) fn on_virtual_volumes(&self, change: Change<PersistentVolume>) {
        let claim_of = |pv: &PersistentVolume| {
            let claim = pv.spec.as_ref()?.claim_ref.as_ref()?;
            Some(CopyKey::new(
                CopyKind::PersistentVolumeClaim,
                claim.namespace.as_deref()?,
                claim.name.as_deref()?,
            ))
        };
        let mut keys = Vec::new();
        {
            let mut stores = self.stores_mut();
            match change {
                Change::Applied(pv) => {
                    keys.extend(claim_of(&pv));
                    stores.pvs.apply(pv);
                }
                Change::Deleted(pv) => {
                    keys.extend(claim_of(&pv));
                    stores.pvs.delete(&pv);
                }
                Change::Relisted(all) => {
                    keys.extend(all.iter().filter_map(claim_of));
                    for gone in stores.pvs.replace(all) {
                        keys.extend(claim_of(&gone));
                    }
                }
            }
        }
        let changes = keys
            .into_iter()
            .map(|key| self.copy_changed(key, true))
            .collect();
        self.enqueue_changes(changes);
    }

    /// Physical ConfigMap, Secret or claim changes: the copy (or the token Secret's pod)
    /// is re-evaluated.
    pub(super) fn on_physical_objects<K: Resource>(
        &self,
        kind: CopyKind,
        change: Change<K>,
        store: impl Fn(&mut Stores) -> &mut ObjectStore<K>,
    ) {
        let mut touched: Vec<ObjectMeta> = Vec::new();
        {
            let mut stores = self.stores_mut();
            match change {
                Change::Applied(obj) => {
                    touched.push(obj.meta().clone());
                    store(&mut stores).apply(obj);
                }
                Change::Deleted(obj) => {
                    touched.push(obj.meta().clone());
                    store(&mut stores).delete(&obj);
                }
                Change::Relisted(all) => {
                    touched.extend(all.iter().map(|o| o.meta().clone()));
                    let gone = store(&mut stores).replace(all);
                    touched.extend(gone.iter().map(|o| o.meta().clone()));
                }
            }
        }
        let mut copies = Vec::new();
        let mut tokens = Vec::new();
        for meta in touched {
            if let Some(pod) = owner_pod_key(&meta) {
                tokens.push(pod);
            } else if let Some((ns, name)) = copied_from(&meta) {
                copies.push(CopyKey::new(kind, &ns, &name).to_string());
            }
        }
        self.copies.add_all(copies.iter().map(String::as_str));
        self.tokens.add_all(tokens.iter().map(String::as_str));
    }

    /// Physical volume changes: the claim of their virtual volume is re-evaluated.
    pub(super) fn on_physical_volumes(&self, change: Change<PersistentVolume>) {
        let mut names: Vec<String> = Vec::new();
        {
            let mut stores = self.stores_mut();
            match change {
                Change::Applied(pv) => {
                    names.extend(copied_from(&pv.metadata).map(|(_, n)| n));
                    stores.physical_pvs.apply(pv);
                }
                Change::Deleted(pv) => {
                    names.extend(copied_from(&pv.metadata).map(|(_, n)| n));
                    stores.physical_pvs.delete(&pv);
                }
                Change::Relisted(all) => {
                    names.extend(
                        all.iter()
                            .filter_map(|p| copied_from(&p.metadata).map(|(_, n)| n)),
                    );
                    stores.physical_pvs.replace(all);
                }
            }
        }
        let copies: Vec<String> = {
            let stores = self.stores();
            names
                .iter()
                .filter_map(|name| stores.pvs.get(name))
                .filter_map(|pv| {
                    let claim = pv.spec.as_ref()?.claim_ref.as_ref()?;
                    Some(
                        CopyKey::new(
                            CopyKind::PersistentVolumeClaim,
                            claim.namespace.as_deref()?,
                            claim.name.as_deref()?,
                        )
                        .to_string(),
                    )
                })
                .collect()
        };
        self.copies.add_all(copies.iter().map(String::as_str));
    }

    /// Virtual nodes changed (`None`: all of them): their pods are re-evaluated, and the
    /// cleanup checks whether the last one is gone.
    pub fn on_vnodes(&self, names: Option<Vec<String>>) {
        let keys: Vec<String> = {
            let stores = self.stores();
            match names {
                None => stores.virtual_pods.keys(),
                Some(names) => names
                    .iter()
                    .flat_map(|n| stores.virtual_pods.on_node(n))
                    .collect(),
            }
        };
        self.pods.add_all(keys.iter().map(String::as_str));
        self.cleanup.add(CLEANUP_KEY);
    }

    /// The binding changed.
    pub fn on_binding(&self) {
        self.cleanup.add(CLEANUP_KEY);
        // `serviceNamespaces` may have changed.
        self.enqueue_all_services();
    }

    /// Publishes an Event about `object` in the computing cluster (failures are logged).
    pub async fn publish(
        &self,
        ctx: &Context,
        object: &ObjectReference,
        type_: EventType,
        reason: &str,
        note: &str,
    ) {
        ctx.publish(object, type_, reason, note).await;
    }
}

/// Consecutive failures of each top-down reconciler.
#[derive(Default)]
pub(super) struct Failures {
    pub(super) pods: FailureCounts,
    pub(super) physical_pods: FailureCounts,
    pub(super) copies: FailureCounts,
    pub(super) tokens: FailureCounts,
    pub(super) cleanup: FailureCounts,
    pub(super) services: FailureCounts,
    pub(super) events: FailureCounts,
}

/// Retry delay used by reconcilers that wait for something another watch will report but
/// want to look again in any case.
pub(crate) fn safety_recheck(ctx: &Context) -> Instant {
    Instant::now() + (ctx.config.retry_interval * 10).min(Duration::from_secs(10))
}

/// The physical pod recorded on a virtual pod (name and UID), when it is in `mount_namespace`.
pub fn recorded_physical(pod: &Pod, mount_namespace: &str) -> Option<(String, String)> {
    let annotations = pod.metadata.annotations.as_ref()?;
    if annotations.get(labels::PHYSICAL_POD_NAMESPACE)? != mount_namespace {
        return None;
    }
    Some((
        annotations.get(labels::PHYSICAL_POD_NAME)?.clone(),
        annotations.get(labels::PHYSICAL_POD_UID)?.clone(),
    ))
}

/// The UID of the virtual pod whose physical pod `physical` was, when its deletion means
/// that pod is lost although the mapping was not recorded on it yet: `owner` (the virtual
/// pod under the physical pod's back-reference) is the same pod, is not being deleted, has
/// not finished, and records no physical pod in `mount_namespace`. The syncer deletes a
/// physical pod only for an owner that is gone, replaced or being deleted, so such a
/// deletion came from elsewhere.
pub fn lost_before_record(
    physical: &Pod,
    owner: Option<&Pod>,
    mount_namespace: &str,
) -> Option<String> {
    let owner = owner?;
    let uid = owner.metadata.uid.as_ref()?;
    let back = back_reference(&physical.metadata);
    let same = back.uid.as_ref() == Some(uid)
        && back.namespace == owner.metadata.namespace
        && back.name == owner.metadata.name;
    let unrecorded = recorded_physical(owner, mount_namespace).is_none();
    let live = owner.metadata.deletion_timestamp.is_none() && !super::store::pod_finished(owner);
    (same && unrecorded && live).then(|| uid.clone())
}
