//! In-memory copies of the objects the top-down reconcilers read, fed by the watches of both
//! clusters. Reconcilers look dependencies up here instead of listing per pod.
//!
//! What the syncer itself just wrote is recorded at once ([`ObjectStore::remember`]) so the
//! next reconcile sees it before its watch event arrives; a newer watched version always
//! wins, and an object already seen deleted is never brought back.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::Resource;
use kube_kit::controller::object_key as key_of;

use super::mapping::pod::dependencies;

/// How many deleted UIDs are remembered to refuse stale [`ObjectStore::remember`] calls.
const TOMBSTONES: usize = 16_384;

/// `namespace/name`, or `name` for cluster-scoped objects.
pub fn object_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}/{name}")
    }
}

/// Splits a key made by [`object_key`] into namespace (empty when cluster-scoped) and name.
pub fn split_key(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("", key))
}

/// Whether `candidate` (its `resourceVersion`) is older than `stored`. Versions are compared
/// as integers when both are (etcd revisions, the sandbox's counter); otherwise the candidate
/// is taken as newer.
fn older(candidate: Option<&str>, stored: Option<&str>) -> bool {
    match (
        candidate.and_then(|v| v.parse::<u64>().ok()),
        stored.and_then(|v| v.parse::<u64>().ok()),
    ) {
        (Some(c), Some(s)) => c < s,
        _ => false,
    }
}

/// Objects of one kind by key.
#[derive(Debug)]
pub struct ObjectStore<K> {
    items: HashMap<String, Arc<K>>,
    deleted: HashSet<String>,
    deleted_order: VecDeque<String>,
}

impl<K> Default for ObjectStore<K> {
    fn default() -> Self {
        ObjectStore {
            items: HashMap::new(),
            deleted: HashSet::new(),
            deleted_order: VecDeque::new(),
        }
    }
}

impl<K: Resource> ObjectStore<K> {
    /// The object with this key.
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        self.items.get(key).cloned()
    }

    /// Every object.
    pub fn values(&self) -> impl Iterator<Item = &Arc<K>> {
        self.items.values()
    }

    /// Every key.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.items.keys()
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Records a watched object; returns the one it replaces.
    pub fn apply(&mut self, obj: K) -> Option<Arc<K>> {
        self.items.insert(key_of(&obj), Arc::new(obj))
    }

    /// Forgets a watched object; returns what was stored under its key.
    pub fn delete(&mut self, obj: &K) -> Option<Arc<K>> {
        if let Some(uid) = obj.meta().uid.as_ref() {
            self.tombstone(uid.clone());
        }
        let key = key_of(obj);
        // A newer object of the same name (another UID) stays.
        match (self.items.get(&key), obj.meta().uid.as_ref()) {
            (Some(stored), Some(uid)) if stored.meta().uid.as_ref() != Some(uid) => None,
            _ => self.items.remove(&key),
        }
    }

    /// Replaces everything after a re-list; returns the objects that disappeared.
    pub fn replace(&mut self, all: Vec<K>) -> Vec<Arc<K>> {
        let mut old = std::mem::take(&mut self.items);
        for obj in all {
            let key = key_of(&obj);
            old.remove(&key);
            self.items.insert(key, Arc::new(obj));
        }
        let gone: Vec<Arc<K>> = old.into_values().collect();
        for obj in &gone {
            if let Some(uid) = obj.meta().uid.clone() {
                self.tombstone(uid);
            }
        }
        gone
    }

    /// Records an object the syncer just wrote (the server's answer), unless the store
    /// already holds a newer version of it or saw it deleted.
    pub fn remember(&mut self, obj: K) {
        if obj
            .meta()
            .uid
            .as_ref()
            .is_some_and(|uid| self.deleted.contains(uid))
        {
            return;
        }
        let key = key_of(&obj);
        if let Some(stored) = self.items.get(&key)
            && stored.meta().uid == obj.meta().uid
            && older(
                obj.meta().resource_version.as_deref(),
                stored.meta().resource_version.as_deref(),
            )
        {
            return;
        }
        self.items.insert(key, Arc::new(obj));
    }

    fn tombstone(&mut self, uid: String) {
        if self.deleted.insert(uid.clone()) {
            self.deleted_order.push_back(uid);
            if self.deleted_order.len() > TOMBSTONES
                && let Some(oldest) = self.deleted_order.pop_front()
            {
                self.deleted.remove(&oldest);
            }
        }
    }
}

/// Kind of an object a pod needs copied to the worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CopyKind {
    /// A ConfigMap.
    ConfigMap,
    /// A Secret.
    Secret,
    /// A PersistentVolumeClaim (with its PersistentVolume).
    PersistentVolumeClaim,
}

impl CopyKind {
    /// The Kubernetes kind.
    pub fn as_str(self) -> &'static str {
        match self {
            CopyKind::ConfigMap => "ConfigMap",
            CopyKind::Secret => "Secret",
            CopyKind::PersistentVolumeClaim => "PersistentVolumeClaim",
        }
    }
}

/// A virtual object that pods depend on: its kind, namespace and name. Its text form
/// (`Kind/namespace/name`) is the key of the copy work queue.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CopyKey {
    /// Kind.
    pub kind: CopyKind,
    /// Virtual namespace.
    pub namespace: String,
    /// Virtual name.
    pub name: String,
}

impl CopyKey {
    /// A key.
    pub fn new(kind: CopyKind, namespace: &str, name: &str) -> CopyKey {
        CopyKey {
            kind,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    /// `namespace/name` of the virtual object.
    pub fn object_key(&self) -> String {
        object_key(&self.namespace, &self.name)
    }
}

impl fmt::Display for CopyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.kind.as_str(), self.namespace, self.name)
    }
}

/// A copy queue key that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed copy key {0:?}")]
pub struct BadCopyKey(pub String);

impl FromStr for CopyKey {
    type Err = BadCopyKey;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadCopyKey(s.to_owned());
        let mut parts = s.splitn(3, '/');
        let kind = match parts.next() {
            Some("ConfigMap") => CopyKind::ConfigMap,
            Some("Secret") => CopyKind::Secret,
            Some("PersistentVolumeClaim") => CopyKind::PersistentVolumeClaim,
            _ => return Err(bad()),
        };
        match (parts.next(), parts.next()) {
            (Some(namespace), Some(name)) if !namespace.is_empty() && !name.is_empty() => {
                Ok(CopyKey::new(kind, namespace, name))
            }
            _ => Err(bad()),
        }
    }
}

/// Every object a pod depends on, as copy keys (optional ones included).
pub fn copy_keys_of(pod: &Pod) -> Vec<CopyKey> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let deps = dependencies(pod);
    let config_maps = deps
        .config_maps
        .keys()
        .map(|n| CopyKey::new(CopyKind::ConfigMap, namespace, n));
    let secrets = deps
        .secrets
        .keys()
        .map(|n| CopyKey::new(CopyKind::Secret, namespace, n));
    let claims = deps
        .pvcs
        .iter()
        .map(|n| CopyKey::new(CopyKind::PersistentVolumeClaim, namespace, n));
    config_maps.chain(secrets).chain(claims).collect()
}

/// The phase of a pod (`Pending` when it has none yet).
pub fn pod_phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

/// Whether a pod has finished for good.
pub fn pod_finished(pod: &Pod) -> bool {
    matches!(pod_phase(pod), "Succeeded" | "Failed")
}

/// Pods with what the reconcilers look them up by: their node, the objects they depend on,
/// and counts by phase (for metrics).
#[derive(Debug, Default)]
pub struct PodStore {
    pods: ObjectStore<Pod>,
    by_node: HashMap<String, HashSet<String>>,
    by_dependency: HashMap<CopyKey, HashSet<String>>,
    /// The dependencies of each pod as last linked (computing them walks the whole spec).
    dependencies_of: HashMap<String, Vec<CopyKey>>,
    phases: BTreeMap<String, i64>,
}

impl PodStore {
    /// The pod with this key.
    pub fn get(&self, key: &str) -> Option<Arc<Pod>> {
        self.pods.get(key)
    }

    /// Every pod.
    pub fn values(&self) -> impl Iterator<Item = &Arc<Pod>> {
        self.pods.values()
    }

    /// Every key.
    pub fn keys(&self) -> Vec<String> {
        self.pods.keys().cloned().collect()
    }

    /// Number of pods.
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    /// Whether there is no pod.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// Pods counted by phase.
    pub fn phases(&self) -> &BTreeMap<String, i64> {
        &self.phases
    }

    /// Keys of the pods bound to `node`.
    pub fn on_node(&self, node: &str) -> Vec<String> {
        self.by_node
            .get(node)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The objects the pod with this key depends on.
    pub fn dependencies_of(&self, key: &str) -> Vec<CopyKey> {
        self.dependencies_of.get(key).cloned().unwrap_or_default()
    }

    /// Keys of the pods that depend on `dependency`.
    pub fn dependents(&self, dependency: &CopyKey) -> Vec<String> {
        self.by_dependency
            .get(dependency)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether a pod that has not finished depends on `dependency`.
    pub fn needed(&self, dependency: &CopyKey) -> bool {
        self.by_dependency
            .get(dependency)
            .into_iter()
            .flatten()
            .filter_map(|key| self.pods.get(key))
            .any(|pod| !pod_finished(&pod))
    }

    /// Records a watched pod; returns the one it replaces.
    pub fn apply(&mut self, pod: Pod) -> Option<Arc<Pod>> {
        let key = key_of(&pod);
        if let Some(old) = self.pods.get(&key)
            && same_links(&old, &pod)
        {
            self.move_phase(&old, &pod);
            return self.pods.apply(pod);
        }
        let old_dependencies = self.dependencies_of.get(&key).cloned().unwrap_or_default();
        self.link(&key, &pod);
        let old = self.pods.apply(pod);
        if let Some(old) = &old {
            self.unlink(&key, old, old_dependencies);
        }
        old
    }

    /// Records a pod the syncer just wrote (see [`ObjectStore::remember`]).
    pub fn remember(&mut self, pod: Pod) {
        let key = key_of(&pod);
        let old = self.pods.get(&key);
        let old_dependencies = self.dependencies_of.get(&key).cloned().unwrap_or_default();
        self.pods.remember(pod);
        let Some(new) = self.pods.get(&key) else {
            return;
        };
        if old.as_ref().is_some_and(|o| Arc::ptr_eq(o, &new)) {
            return;
        }
        if let Some(old) = &old
            && same_links(old, &new)
        {
            self.move_phase(old, &new);
            return;
        }
        self.link(&key, &new);
        if let Some(old) = old {
            self.unlink(&key, &old, old_dependencies);
        }
    }

    /// Forgets a watched pod; returns what was stored.
    pub fn delete(&mut self, pod: &Pod) -> Option<Arc<Pod>> {
        let key = key_of(pod);
        let old = self.pods.delete(pod);
        if let Some(old) = &old {
            let old_dependencies = self.dependencies_of.remove(&key).unwrap_or_default();
            self.unlink(&key, old, old_dependencies);
        }
        old
    }

    /// Replaces every pod after a re-list; returns the pods that disappeared.
    pub fn replace(&mut self, all: Vec<Pod>) -> Vec<Arc<Pod>> {
        let gone = self.pods.replace(all);
        self.by_node.clear();
        self.by_dependency.clear();
        self.dependencies_of.clear();
        self.phases.clear();
        let pods: Vec<(String, Arc<Pod>)> = self
            .pods
            .items
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (key, pod) in pods {
            self.link(&key, &pod);
        }
        gone
    }

    /// Adds the index entries of `pod`, stored (or about to be) under `key`.
    fn link(&mut self, key: &str, pod: &Pod) {
        if let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
            self.by_node
                .entry(node.to_owned())
                .or_default()
                .insert(key.to_owned());
        }
        let dependencies = copy_keys_of(pod);
        for dependency in &dependencies {
            self.by_dependency
                .entry(dependency.clone())
                .or_default()
                .insert(key.to_owned());
        }
        self.dependencies_of.insert(key.to_owned(), dependencies);
        *self.phases.entry(pod_phase(pod).to_owned()).or_default() += 1;
    }

    /// Removes the index entries of `old` (which depended on `old_dependencies`) that the
    /// pod now stored under `key`, if any, does not have.
    fn unlink(&mut self, key: &str, old: &Pod, old_dependencies: Vec<CopyKey>) {
        let current = self.pods.get(key);
        let node_of = |p: &Pod| p.spec.as_ref().and_then(|s| s.node_name.clone());
        if let Some(node) = node_of(old)
            && current.as_deref().and_then(node_of).as_ref() != Some(&node)
            && let Some(set) = self.by_node.get_mut(&node)
        {
            set.remove(key);
            if set.is_empty() {
                self.by_node.remove(&node);
            }
        }
        let kept: HashSet<&CopyKey> = match current {
            Some(_) => self
                .dependencies_of
                .get(key)
                .into_iter()
                .flatten()
                .collect(),
            None => HashSet::new(),
        };
        let dropped: Vec<CopyKey> = old_dependencies
            .into_iter()
            .filter(|d| !kept.contains(d))
            .collect();
        for dependency in dropped {
            if let Some(set) = self.by_dependency.get_mut(&dependency) {
                set.remove(key);
                if set.is_empty() {
                    self.by_dependency.remove(&dependency);
                }
            }
        }
        self.uncount_phase(pod_phase(old));
    }

    fn uncount_phase(&mut self, phase: &str) {
        if let Some(count) = self.phases.get_mut(phase) {
            *count -= 1;
            if *count <= 0 {
                self.phases.remove(phase);
            }
        }
    }

    /// Counts `new` under its phase instead of `old` under its own.
    fn move_phase(&mut self, old: &Pod, new: &Pod) {
        let (before, after) = (pod_phase(old), pod_phase(new));
        if before != after {
            self.uncount_phase(before);
            *self.phases.entry(after.to_owned()).or_default() += 1;
        }
    }
}

/// Whether `new` has the index entries of `old` (node and dependencies come from the spec
/// and namespace alone), so that a status or metadata change is indexed without walking
/// the spec again.
fn same_links(old: &Pod, new: &Pod) -> bool {
    old.metadata.namespace == new.metadata.namespace && old.spec == new.spec
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    fn cm(name: &str, uid: &str, rv: &str) -> ConfigMap {
        serde_json::from_value(json!({ "metadata": {
            "name": name, "namespace": "ns", "uid": uid, "resourceVersion": rv } }))
        .unwrap()
    }

    fn pod(name: &str, node: &str, phase: &str, config_maps: &[&str]) -> Pod {
        let volumes: Vec<_> = config_maps
            .iter()
            .map(|c| json!({ "name": c, "configMap": { "name": c } }))
            .collect();
        serde_json::from_value(json!({
            "metadata": { "name": name, "namespace": "ns", "uid": format!("uid-{name}"), "resourceVersion": "1" },
            "spec": { "nodeName": node, "containers": [{ "name": "c" }], "volumes": volumes },
            "status": { "phase": phase },
        }))
        .unwrap()
    }

    #[test]
    fn remember_never_goes_back_in_time_nor_revives_the_deleted() {
        let mut store = ObjectStore::<ConfigMap>::default();
        store.apply(cm("a", "u1", "10"));
        // An older answer arriving late does not replace the watched version.
        store.remember(cm("a", "u1", "9"));
        assert_eq!(
            store
                .get("ns/a")
                .unwrap()
                .metadata
                .resource_version
                .as_deref(),
            Some("10")
        );
        store.remember(cm("a", "u1", "11"));
        assert_eq!(
            store
                .get("ns/a")
                .unwrap()
                .metadata
                .resource_version
                .as_deref(),
            Some("11")
        );
        // Deleted, then our create answer for the same UID arrives: not brought back.
        store.delete(&cm("a", "u1", "12"));
        store.remember(cm("a", "u1", "11"));
        assert!(store.get("ns/a").is_none());
        // A new object of the same name is another UID.
        store.remember(cm("a", "u2", "13"));
        assert!(store.get("ns/a").is_some());
        // Deleting the old UID late does not remove the new one.
        store.delete(&cm("a", "u1", "12"));
        assert!(store.get("ns/a").is_some());
    }

    #[test]
    fn relist_reports_what_disappeared() {
        let mut store = ObjectStore::<ConfigMap>::default();
        store.apply(cm("a", "u1", "1"));
        store.apply(cm("b", "u2", "1"));
        let gone = store.replace(vec![cm("b", "u2", "2"), cm("c", "u3", "2")]);
        let gone: Vec<_> = gone.iter().map(|c| c.metadata.name.clone()).collect();
        assert_eq!(gone, [Some("a".to_owned())]);
        assert_eq!(store.len(), 2);
        store.remember(cm("a", "u1", "3"));
        assert!(store.get("ns/a").is_none(), "a was deleted");
    }

    #[test]
    fn pod_indexes_follow_changes() {
        let mut store = PodStore::default();
        let shared = CopyKey::new(CopyKind::ConfigMap, "ns", "shared");
        let only_b = CopyKey::new(CopyKind::ConfigMap, "ns", "only-b");
        store.apply(pod("a", "vn-1", "Running", &["shared"]));
        store.apply(pod("b", "vn-1", "Pending", &["shared", "only-b"]));
        let mut on_node = store.on_node("vn-1");
        on_node.sort();
        assert_eq!(on_node, ["ns/a", "ns/b"]);
        assert!(store.needed(&shared));
        assert!(store.needed(&only_b));
        assert_eq!(store.phases().get("Running"), Some(&1));
        assert_eq!(store.phases().get("Pending"), Some(&1));

        // b finishes: its dependencies are no longer needed by it.
        store.apply(pod("b", "vn-1", "Succeeded", &["shared", "only-b"]));
        assert!(!store.needed(&only_b));
        assert!(store.needed(&shared));
        assert_eq!(store.phases().get("Pending"), None);

        // b drops a dependency; a is deleted.
        store.apply(pod("b", "vn-1", "Running", &[]));
        assert!(store.dependents(&only_b).is_empty());
        store.delete(&pod("a", "vn-1", "Running", &["shared"]));
        assert!(!store.needed(&shared));
        assert_eq!(store.on_node("vn-1"), ["ns/b"]);
        assert_eq!(store.phases().get("Running"), Some(&1));

        // A status the syncer wrote moves the phase count and keeps the indexes.
        store.remember(pod("b", "vn-1", "Failed", &[]));
        assert_eq!(store.phases().get("Running"), None);
        assert_eq!(store.phases().get("Failed"), Some(&1));
        assert_eq!(store.on_node("vn-1"), ["ns/b"]);

        // A relist rebuilds every index.
        let gone = store.replace(vec![pod("c", "vn-2", "Running", &["shared"])]);
        assert_eq!(gone.len(), 1);
        assert!(store.on_node("vn-1").is_empty());
        assert_eq!(store.dependents(&shared), ["ns/c"]);
        assert_eq!(store.phases().values().sum::<i64>(), 1);
    }

    #[test]
    fn copy_keys_round_trip() {
        let table = [
            (
                "ConfigMap/ns/app",
                Some(CopyKey::new(CopyKind::ConfigMap, "ns", "app")),
            ),
            (
                "Secret/ns/tls.key",
                Some(CopyKey::new(CopyKind::Secret, "ns", "tls.key")),
            ),
            (
                "PersistentVolumeClaim/ns/data",
                Some(CopyKey::new(CopyKind::PersistentVolumeClaim, "ns", "data")),
            ),
            ("Pod/ns/app", None),
            ("ConfigMap/ns", None),
            ("ConfigMap//x", None),
        ];
        for (text, want) in table {
            let got = text.parse::<CopyKey>().ok();
            assert_eq!(got, want, "{text}");
            if let Some(key) = got {
                assert_eq!(key.to_string(), text);
            }
        }
        assert_eq!(split_key("ns/a"), ("ns", "a"));
        assert_eq!(split_key("pv-1"), ("", "pv-1"));
        assert_eq!(object_key("", "pv-1"), "pv-1");
    }
}
