//! The storage engine: objects per resource, one increasing resourceVersion per cluster, and a
//! bounded history of change events that watches read from.
//!
//! Every object is kept both as a JSON value (for selectors and mutations) and as its serialized
//! bytes, so LIST and WATCH answer by concatenating bytes instead of serializing again.

use crate::apiserver::error::ApiError;
use crate::apiserver::resources::GroupResource;
use bytes::Bytes;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::watch;

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub type ObjectKey = (String, String);

/// One stored object.
#[derive(Debug)]
pub struct Stored {
    /// The object.
    pub value: Value,
    /// The object serialized as JSON.
    pub json: Bytes,
    /// Its resourceVersion.
    pub rv: u64,
}

impl Stored {
    fn new(mut value: Value, rv: u64) -> Arc<Stored> {
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let json = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        Arc::new(Stored { value, json, rv })
    }

    /// `metadata.labels`, if any.
    pub fn labels(&self) -> Option<&serde_json::Map<String, Value>> {
        self.value
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        self.value
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// What a watch event says happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object was changed.
    Modified,
    /// The object was removed.
    Deleted,
}

impl EventType {
    /// The wire name (`ADDED`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as recorded in the history.
#[derive(Debug)]
pub struct Event {
    /// The resourceVersion of this change.
    pub rv: u64,
    /// Which resource changed.
    pub resource: GroupResource,
    /// Namespace of the object (empty for cluster-scoped).
    pub namespace: String,
    /// What happened.
    pub kind: EventType,
    /// The object after the change (for deletes: the last state, with the delete's version).
    pub object: Arc<Stored>,
    /// The object before the change, for selector transitions.
    pub previous: Option<Arc<Stored>>,
}

/// What a write decides to do with the current object.
pub enum WriteOp {
    /// Store this value (create or replace).
    Put(Value),
    /// Remove the object.
    Remove,
    /// Change nothing; answer with the current object.
    Noop,
}

/// What a write did.
#[derive(Clone, Debug)]
pub struct WriteOutcome {
    /// The object after the write (for removals: the removed object).
    pub object: Arc<Stored>,
    /// The event recorded, if anything changed.
    pub event: Option<EventType>,
}

/// The store of one cluster.
pub struct Store {
    inner: Mutex<Inner>,
    notify: watch::Sender<u64>,
    /// One channel per resource, so that a watch wakes for changes of its own resource only
    /// instead of for every write to the cluster.
    resource_notify: Mutex<HashMap<GroupResource, watch::Sender<u64>>>,
}

struct Inner {
    rv: u64,
    tables: HashMap<GroupResource, BTreeMap<ObjectKey, Arc<Stored>>>,
    history: VecDeque<Arc<Event>>,
    history_limit: usize,
    /// owner uid -> dependents, for garbage collection.
    dependents: HashMap<String, BTreeSet<(GroupResource, ObjectKey)>>,
    /// uid -> where the object lives.
    uids: HashMap<String, (GroupResource, ObjectKey)>,
}

/// A page of a LIST.
pub struct Page {
    /// The objects, in key order.
    pub items: Vec<Arc<Stored>>,
    /// The cluster's resourceVersion when the page was read.
    pub rv: u64,
    /// The key after which the next page starts, if there is more.
    pub next: Option<ObjectKey>,
    /// How many objects follow this page, when the list was not filtered (kube-apiserver
    /// sets `remainingItemCount` only then); `None` for a filtered list.
    pub remaining: Option<usize>,
}

impl Store {
    /// An empty store keeping at most `history_limit` change events.
    pub fn new(history_limit: usize) -> Store {
        let (notify, _) = watch::channel(0);
        Store {
            inner: Mutex::new(Inner {
                rv: 0,
                tables: HashMap::new(),
                history: VecDeque::new(),
                history_limit: history_limit.max(1),
                dependents: HashMap::new(),
                uids: HashMap::new(),
            }),
            notify,
            resource_notify: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock must not take the whole cluster down with it.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The newest resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    /// A receiver woken on every change with the newest resourceVersion.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.notify.subscribe()
    }

    /// A receiver woken on every change of `resource`, with that change's resourceVersion.
    pub fn subscribe_resource(&self, resource: &GroupResource) -> watch::Receiver<u64> {
        let rv = self.current_rv();
        self.resource_notify
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(resource.clone())
            .or_insert_with(|| watch::channel(rv).0)
            .subscribe()
    }

    /// Reads one object.
    pub fn get(
        &self,
        resource: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<Stored>> {
        let inner = self.lock();
        inner
            .tables
            .get(resource)
            .and_then(|t| t.get(&(namespace.to_string(), name.to_string())))
            .cloned()
    }

    /// Lists objects in key order, optionally within a namespace, starting after `after`,
    /// keeping those `keep` accepts, at most `limit` of them (0 = no limit), counting the
    /// matching objects after a full page. The API's LIST uses [`Store::list_page`].
    pub fn list(
        &self,
        resource: &GroupResource,
        namespace: Option<&str>,
        after: Option<&ObjectKey>,
        limit: usize,
        keep: &dyn Fn(&Stored) -> bool,
    ) -> Page {
        let inner = self.lock();
        let rv = inner.rv;
        let Some(table) = inner.tables.get(resource) else {
            return Page {
                items: Vec::new(),
                rv,
                next: None,
                remaining: Some(0),
            };
        };
        let lower = match (after, namespace) {
            (Some(key), _) => Bound::Excluded(key.clone()),
            (None, Some(ns)) => Bound::Included((ns.to_string(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let mut items = Vec::new();
        let mut remaining = 0;
        for (key, stored) in table.range((lower, Bound::Unbounded)) {
            if let Some(ns) = namespace
                && key.0 != ns
            {
                break;
            }
            if !keep(stored) {
                continue;
            }
            if limit > 0 && items.len() >= limit {
                remaining += 1;
                continue;
            }
            items.push(stored.clone());
        }
        let next = match items.last() {
            Some(last) if remaining > 0 => {
                let meta = &last.value["metadata"];
                Some((
                    meta["namespace"].as_str().unwrap_or("").to_string(),
                    meta["name"].as_str().unwrap_or("").to_string(),
                ))
            }
            _ => None,
        };
        Page {
            items,
            rv,
            next,
            remaining: Some(remaining),
        }
    }

    /// A page of a LIST: objects in key order, optionally within a namespace, starting after
    /// `after`, at most `limit` of them (0 = no limit), all of them or those `keep` accepts.
    /// As kube-apiserver does, the objects after a full page are counted (`remaining`) only
    /// when nothing is filtered out; a filtered page reads on only until it finds one more
    /// match (so a client paging through N objects costs O(N), not O(N^2) filter calls).
    pub fn list_page(
        &self,
        resource: &GroupResource,
        namespace: Option<&str>,
        after: Option<&ObjectKey>,
        limit: usize,
        keep: Option<&dyn Fn(&Stored) -> bool>,
    ) -> Page {
        self.list_page_after(
            resource,
            namespace,
            after.map(|key| (key, None)),
            limit,
            keep,
        )
    }

    /// [`Store::list_page`], continuing after `after` with how many objects the pages before
    /// held, when known. The count of what follows an unfiltered page of every namespace is
    /// then the table's size minus what was served (an estimate if objects were added or
    /// removed meanwhile, as `remainingItemCount` may be) instead of a walk over every
    /// following object: a large list read page by page would otherwise cost its size squared.
    pub fn list_page_after(
        &self,
        resource: &GroupResource,
        namespace: Option<&str>,
        after: Option<(&ObjectKey, Option<usize>)>,
        limit: usize,
        keep: Option<&dyn Fn(&Stored) -> bool>,
    ) -> Page {
        let served_before = after.and_then(|(_, n)| n);
        let after = after.map(|(key, _)| key);
        let inner = self.lock();
        let rv = inner.rv;
        let Some(table) = inner.tables.get(resource) else {
            return Page {
                items: Vec::new(),
                rv,
                next: None,
                remaining: keep.is_none().then_some(0),
            };
        };
        let lower = match (after, namespace) {
            (Some(key), _) => Bound::Excluded(key.clone()),
            (None, Some(ns)) => Bound::Included((ns.to_string(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let mut in_scope = table
            .range((lower, Bound::Unbounded))
            .take_while(|(key, _)| namespace.is_none_or(|ns| key.0 == ns))
            .filter(|(_, stored)| keep.is_none_or(|keep| keep(stored)));
        let mut items = Vec::new();
        let mut last_key = None;
        let mut has_more = false;
        for (key, stored) in in_scope.by_ref() {
            if limit > 0 && items.len() >= limit {
                has_more = true;
                break;
            }
            items.push(stored.clone());
            last_key = Some(key);
        }
        let remaining = match (has_more, keep) {
            (false, None) => Some(0),
            // The one object found past the page, and the rest (nothing to filter).
            (true, None) => match (namespace, served_before) {
                (None, Some(before)) => {
                    Some(table.len().saturating_sub(before + items.len()).max(1))
                }
                _ => Some(1 + in_scope.count()),
            },
            (_, Some(_)) => None,
        };
        let next = last_key.filter(|_| has_more).cloned();
        Page {
            items,
            rv,
            next,
            remaining,
        }
    }

    /// Counts the objects of a resource (in a namespace).
    pub fn count(&self, resource: &GroupResource, namespace: Option<&str>) -> usize {
        let inner = self.lock();
        match (inner.tables.get(resource), namespace) {
            (None, _) => 0,
            (Some(t), None) => t.len(),
            (Some(t), Some(ns)) => t.keys().filter(|k| k.0 == ns).count(),
        }
    }

    /// Atomically reads the current object and applies what `decide` returns.
    pub fn write(
        &self,
        resource: &GroupResource,
        namespace: &str,
        name: &str,
        decide: impl FnOnce(Option<&Arc<Stored>>) -> Result<WriteOp, ApiError>,
    ) -> Result<WriteOutcome, ApiError> {
        let key = (namespace.to_string(), name.to_string());
        let mut inner = self.lock();
        let current = inner
            .tables
            .get(resource)
            .and_then(|t| t.get(&key))
            .cloned();
        let outcome = match decide(current.as_ref())? {
            WriteOp::Noop => match current {
                Some(object) => WriteOutcome {
                    object,
                    event: None,
                },
                None => {
                    return Err(ApiError::not_found(
                        &resource.group,
                        &resource.resource,
                        name,
                    ));
                }
            },
            WriteOp::Put(value) => {
                inner.rv += 1;
                let rv = inner.rv;
                let stored = Stored::new(value, rv);
                let kind = if current.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                };
                if let Some(old) = &current {
                    inner.unindex_owners(resource, &key, &old.value);
                }
                inner.index_owners(resource, &key, &stored.value);
                inner
                    .uids
                    .insert(stored.uid().to_string(), (resource.clone(), key.clone()));
                inner
                    .tables
                    .entry(resource.clone())
                    .or_default()
                    .insert(key, stored.clone());
                inner.record(resource, namespace, kind, stored.clone(), current);
                WriteOutcome {
                    object: stored,
                    event: Some(kind),
                }
            }
            WriteOp::Remove => {
                let Some(old) = current else {
                    return Err(ApiError::not_found(
                        &resource.group,
                        &resource.resource,
                        name,
                    ));
                };
                inner.rv += 1;
                let rv = inner.rv;
                if let Some(table) = inner.tables.get_mut(resource) {
                    table.remove(&key);
                }
                inner.unindex_owners(resource, &key, &old.value);
                inner.uids.remove(old.uid());
                let gone = Stored::new(old.value.clone(), rv);
                inner.record(
                    resource,
                    namespace,
                    EventType::Deleted,
                    gone.clone(),
                    Some(old),
                );
                WriteOutcome {
                    object: gone,
                    event: Some(EventType::Deleted),
                }
            }
        };
        let rv = inner.rv;
        drop(inner);
        if outcome.event.is_some() {
            self.notify.send_replace(rv);
            if let Some(tx) = self
                .resource_notify
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .get(resource)
            {
                tx.send_replace(rv);
            }
        }
        Ok(outcome)
    }

    /// Events after `rv`, or `Err(oldest)` when `rv` is older than the history holds.
    pub fn events_after(
        &self,
        rv: u64,
        resource: &GroupResource,
        max: usize,
    ) -> Result<(Vec<Arc<Event>>, u64), u64> {
        let inner = self.lock();
        let oldest = inner.history.front().map(|e| e.rv).unwrap_or(inner.rv + 1);
        // Events are contiguous: every write adds exactly one, so `rv + 1` must still be held.
        if rv + 1 < oldest {
            return Err(oldest.saturating_sub(1));
        }
        let start = (rv + 1 - oldest) as usize;
        let mut out = Vec::new();
        let mut last = rv;
        for event in inner.history.iter().skip(start) {
            last = event.rv;
            if &event.resource == resource {
                out.push(event.clone());
                if out.len() >= max {
                    break;
                }
            }
        }
        Ok((out, last.max(rv)))
    }

    /// The oldest resourceVersion a watch may still start from.
    pub fn oldest_watchable(&self) -> u64 {
        let inner = self.lock();
        inner
            .history
            .front()
            .map(|e| e.rv.saturating_sub(1))
            .unwrap_or(inner.rv)
    }

    /// Objects whose ownerReferences name `owner_uid`.
    pub fn dependents(&self, owner_uid: &str) -> Vec<(GroupResource, ObjectKey)> {
        let inner = self.lock();
        inner
            .dependents
            .get(owner_uid)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Where the object with this uid lives, if it exists.
    pub fn locate(&self, uid: &str) -> Option<(GroupResource, ObjectKey)> {
        self.lock().uids.get(uid).cloned()
    }

    /// Every resource that holds objects, with the keys in a namespace.
    pub fn keys_in_namespace(&self, namespace: &str) -> Vec<(GroupResource, ObjectKey)> {
        let inner = self.lock();
        let mut out = Vec::new();
        for (resource, table) in &inner.tables {
            for key in table.keys() {
                if key.0 == namespace {
                    out.push((resource.clone(), key.clone()));
                }
            }
        }
        out
    }

    /// All keys of a resource.
    pub fn keys(&self, resource: &GroupResource) -> Vec<ObjectKey> {
        let inner = self.lock();
        inner
            .tables
            .get(resource)
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default()
    }
}

impl Inner {
    fn record(
        &mut self,
        resource: &GroupResource,
        namespace: &str,
        kind: EventType,
        object: Arc<Stored>,
        previous: Option<Arc<Stored>>,
    ) {
        if self.history.len() >= self.history_limit {
            self.history.pop_front();
        }
        self.history.push_back(Arc::new(Event {
            rv: object.rv,
            resource: resource.clone(),
            namespace: namespace.to_string(),
            kind,
            object,
            previous,
        }));
    }

    fn index_owners(&mut self, resource: &GroupResource, key: &ObjectKey, value: &Value) {
        for uid in owner_uids(value) {
            self.dependents
                .entry(uid.to_string())
                .or_default()
                .insert((resource.clone(), key.clone()));
        }
    }

    fn unindex_owners(&mut self, resource: &GroupResource, key: &ObjectKey, value: &Value) {
        for uid in owner_uids(value) {
            if let Some(set) = self.dependents.get_mut(uid) {
                set.remove(&(resource.clone(), key.clone()));
                if set.is_empty() {
                    self.dependents.remove(uid);
                }
            }
        }
    }
}

fn owner_uids(value: &Value) -> impl Iterator<Item = &str> {
    value
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("uid").and_then(Value::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(ns: &str, name: &str) -> Value {
        json!({"metadata": {"namespace": ns, "name": name}})
    }

    fn put(store: &Store, ns: &str, name: &str) -> WriteOutcome {
        let gr = GroupResource::new("", "pods");
        store
            .write(&gr, ns, name, |_| Ok(WriteOp::Put(pod(ns, name))))
            .unwrap()
    }

    #[test]
    fn versions_increase_and_events_are_contiguous() {
        let store = Store::new(100);
        let gr = GroupResource::new("", "pods");
        let a = put(&store, "ns", "a");
        let b = put(&store, "ns", "b");
        assert_eq!((a.object.rv, b.object.rv), (1, 2));
        assert_eq!(a.object.value["metadata"]["resourceVersion"], "1");
        let (events, last) = store.events_after(0, &gr, 100).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(last, 2);
        let (events, _) = store.events_after(1, &gr, 100).unwrap();
        assert_eq!(events[0].object.rv, 2);
    }

    #[test]
    fn old_versions_are_gone() {
        let store = Store::new(2);
        let gr = GroupResource::new("", "pods");
        for i in 0..5 {
            put(&store, "ns", &format!("p{i}"));
        }
        assert!(store.events_after(1, &gr, 10).is_err());
        assert_eq!(store.events_after(3, &gr, 10).unwrap().0.len(), 2);
    }

    #[test]
    fn list_pages_within_a_namespace() {
        let store = Store::new(100);
        let gr = GroupResource::new("", "pods");
        for ns in ["a", "b", "c"] {
            for i in 0..3 {
                put(&store, ns, &format!("p{i}"));
            }
        }
        let page = store.list_page(&gr, Some("b"), None, 2, None);
        assert_eq!(page.items.len(), 2);
        assert_eq!(page.remaining, Some(1));
        let next = page.next.unwrap();
        assert_eq!(next, ("b".to_string(), "p1".to_string()));
        let page = store.list(&gr, Some("b"), Some(&next), 2, &|_| true);
        assert_eq!(page.items.len(), 1);
        assert!(page.next.is_none());
        assert_eq!(store.list(&gr, None, None, 0, &|_| true).items.len(), 9);
    }

    #[test]
    fn paging_with_the_served_count_gives_the_walked_count() {
        let store = Store::new(100);
        let gr = GroupResource::new("", "pods");
        for ns in ["a", "b", "c"] {
            for i in 0..4 {
                put(&store, ns, &format!("p{i}"));
            }
        }
        // Every page of every namespace, walked and from the served count, agree.
        let mut after: Option<ObjectKey> = None;
        let mut served = 0;
        let mut remaining = Vec::new();
        loop {
            let walked = store.list_page(&gr, None, after.as_ref(), 5, None);
            let counted = store.list_page_after(
                &gr,
                None,
                after.as_ref().map(|k| (k, Some(served))),
                5,
                None,
            );
            assert_eq!(counted.remaining, walked.remaining);
            assert_eq!(counted.next, walked.next);
            served += counted.items.len();
            remaining.push(counted.remaining);
            match counted.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        assert_eq!(remaining, vec![Some(7), Some(2), Some(0)]);
        // An object removed meanwhile makes it an estimate, never below one while more follow.
        let first = store.list_page(&gr, None, None, 5, None);
        let key = first.next.clone().unwrap();
        for i in 0..4 {
            store
                .write(&gr, "c", &format!("p{i}"), |_| Ok(WriteOp::Remove))
                .unwrap();
        }
        let page = store.list_page_after(&gr, None, Some((&key, Some(11))), 1, None);
        assert_eq!(page.remaining, Some(1));
    }

    #[test]
    fn pages_count_what_follows_only_when_unfiltered() {
        let store = Store::new(100);
        let gr = GroupResource::new("", "pods");
        for ns in ["a", "b"] {
            for i in 0..5 {
                put(&store, ns, &format!("p{i}"));
            }
        }
        let even = |s: &Stored| {
            s.value["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.ends_with(['0', '2', '4']))
        };
        let key = |ns: &str, name: &str| (ns.to_string(), name.to_string());
        // (namespace, after, limit, filtered, names, next, remaining)
        type Case<'a> = (
            Option<&'a str>,
            Option<ObjectKey>,
            usize,
            bool,
            Vec<&'a str>,
            Option<ObjectKey>,
            Option<usize>,
        );
        let cases: Vec<Case> = vec![
            (
                None,
                None,
                3,
                false,
                vec!["p0", "p1", "p2"],
                Some(key("a", "p2")),
                Some(7),
            ),
            (
                Some("a"),
                None,
                3,
                false,
                vec!["p0", "p1", "p2"],
                Some(key("a", "p2")),
                Some(2),
            ),
            (
                Some("a"),
                Some(key("a", "p2")),
                3,
                false,
                vec!["p3", "p4"],
                None,
                Some(0),
            ),
            (
                Some("b"),
                None,
                0,
                false,
                vec!["p0", "p1", "p2", "p3", "p4"],
                None,
                Some(0),
            ),
            // Filtered: no count, and no next page when nothing else matches.
            (
                None,
                None,
                2,
                true,
                vec!["p0", "p2"],
                Some(key("a", "p2")),
                None,
            ),
            (Some("a"), None, 3, true, vec!["p0", "p2", "p4"], None, None),
            (
                Some("a"),
                Some(key("a", "p2")),
                1,
                true,
                vec!["p4"],
                None,
                None,
            ),
            (Some("c"), None, 2, false, vec![], None, Some(0)),
        ];
        for (i, (ns, after, limit, filtered, names, next, remaining)) in
            cases.into_iter().enumerate()
        {
            let keep: Option<&dyn Fn(&Stored) -> bool> = filtered.then_some(&even as _);
            let page = store.list_page(&gr, ns, after.as_ref(), limit, keep);
            let got: Vec<&str> = page
                .items
                .iter()
                .map(|s| s.value["metadata"]["name"].as_str().unwrap_or(""))
                .collect();
            assert_eq!(got, names, "case {i}");
            assert_eq!(page.next, next, "case {i}");
            assert_eq!(page.remaining, remaining, "case {i}");
        }
    }

    #[test]
    fn resource_subscribers_wake_for_their_resource_only() {
        let store = Store::new(100);
        let pods = store.subscribe_resource(&GroupResource::new("", "pods"));
        let nodes = store.subscribe_resource(&GroupResource::new("", "nodes"));
        put(&store, "ns", "a");
        assert_eq!(pods.has_changed().ok(), Some(true));
        assert_eq!(nodes.has_changed().ok(), Some(false));
        assert_eq!(*pods.borrow(), 1);
    }

    #[test]
    fn owners_are_indexed() {
        let store = Store::new(100);
        let gr = GroupResource::new("", "pods");
        let child = json!({"metadata": {"namespace": "ns", "name": "c",
            "ownerReferences": [{"uid": "owner-1", "name": "o", "kind": "X", "apiVersion": "v1"}]}});
        store
            .write(&gr, "ns", "c", |_| Ok(WriteOp::Put(child)))
            .unwrap();
        assert_eq!(store.dependents("owner-1").len(), 1);
        store
            .write(&gr, "ns", "c", |_| Ok(WriteOp::Remove))
            .unwrap();
        assert!(store.dependents("owner-1").is_empty());
    }
}
