//! Resource discovery of instances: which kind a plural names and whether it is namespaced,
//! learnt from the instance's `/api/{v}` and `/apis/{g}/{v}` and kept for a while.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::core::{ApiResource, GroupVersionKind};
use kube_kit::client::is_not_found;

use super::clients::{InstanceClients, InstanceConnection, InstanceIdentity};
use super::error::RouterError;

/// A resource as discovery describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscoveredResource {
    /// Group, version, kind and plural.
    pub resource: ApiResource,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

/// The resources (not subresources) of one group version, by plural.
pub fn resources_of(
    group: &str,
    version: &str,
    list: &APIResourceList,
) -> HashMap<String, DiscoveredResource> {
    list.resources
        .iter()
        .filter(|r| !r.name.contains('/'))
        .map(|r| {
            let gvk = GroupVersionKind::gvk(
                r.group.as_deref().unwrap_or(group),
                r.version.as_deref().unwrap_or(version),
                &r.kind,
            );
            let found = DiscoveredResource {
                resource: ApiResource::from_gvk_with_plural(&gvk, &r.name),
                namespaced: r.namespaced,
            };
            (r.name.clone(), found)
        })
        .collect()
}

type GroupVersionKey = (String, String, String);

struct Entry {
    /// The instance (and credentials) that gave the answer.
    identity: InstanceIdentity,
    fetched: Instant,
    resources: HashMap<String, DiscoveredResource>,
}

/// Discovery answers per instance and group version, refreshed after `ttl`, or sooner (at most
/// every `retry`) when asked for a plural it does not know, e.g. a CRD created meanwhile.
/// Answers belong to one identity of the instance: once the instance is re-created or its
/// credentials change, everything learnt before is forgotten instead of used.
pub struct DiscoveryCache {
    ttl: Duration,
    retry: Duration,
    entries: Mutex<HashMap<GroupVersionKey, Entry>>,
    /// The instance-change counter (see [`DiscoveryCache::forget_changed`]) last acted on.
    pruned_at: AtomicU64,
}

impl std::fmt::Debug for DiscoveryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscoveryCache")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl Default for DiscoveryCache {
    fn default() -> Self {
        Self::new(Duration::from_secs(300), Duration::from_secs(2))
    }
}

impl DiscoveryCache {
    /// Keeps answers for `ttl`; refetches for an unknown plural at most every `retry`.
    pub fn new(ttl: Duration, retry: Duration) -> Self {
        DiscoveryCache {
            ttl,
            retry,
            entries: Mutex::new(HashMap::new()),
            pruned_at: AtomicU64::new(0),
        }
    }

    fn cached(
        &self,
        key: &GroupVersionKey,
        identity: &InstanceIdentity,
        plural: &str,
    ) -> Option<Option<DiscoveredResource>> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.get(key).is_some_and(|e| &e.identity != identity) {
            // Learnt from a former instance of that name, or with other credentials.
            entries.retain(|(i, _, _), e| i != &key.0 || &e.identity == identity);
        }
        let entry = entries.get(key)?;
        let age = entry.fetched.elapsed();
        match entry.resources.get(plural) {
            Some(found) if age < self.ttl => Some(Some(found.clone())),
            None if age < self.retry => Some(None),
            _ => None,
        }
    }

    /// The resource `plural` of `group`/`version` in `instance`, asking the instance through
    /// `connection` when not known for its identity; `None` when the instance does not serve
    /// it.
    pub async fn resolve(
        &self,
        connection: &InstanceConnection,
        instance: &str,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Result<Option<DiscoveredResource>, RouterError> {
        let key = (instance.to_owned(), group.to_owned(), version.to_owned());
        if let Some(answer) = self.cached(&key, &connection.identity, plural) {
            return Ok(answer);
        }
        let client = &connection.client;
        let what = format!("{instance}: discovery of {group}/{version}");
        let list = if group.is_empty() {
            client.list_core_api_resources(version).await
        } else {
            client
                .list_api_group_resources(&format!("{group}/{version}"))
                .await
        };
        let list = match list {
            Ok(list) => list,
            // The group version does not exist on the instance.
            Err(err) if is_not_found(&err) => APIResourceList::default(),
            Err(e) => return Err(RouterError::from_kube(what, e)),
        };
        let resources = resources_of(group, version, &list);
        let found = resources.get(plural).cloned();
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                key,
                Entry {
                    identity: connection.identity.clone(),
                    fetched: Instant::now(),
                    resources,
                },
            );
        Ok(found)
    }

    /// The resource `plural` of `group`/`version` in `instance`, connecting through `clients`
    /// now (an instance that is gone answers [`RouterError::UnknownInstance`]); answers of
    /// instances that changed since the last call are forgotten first.
    pub async fn resolve_with(
        &self,
        clients: &dyn InstanceClients,
        instance: &str,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Result<Option<DiscoveredResource>, RouterError> {
        let connected = clients.connect(instance).await;
        let generation = *clients.changes().borrow();
        self.forget_changed(generation, |i| clients.current(i));
        let connection = match connected {
            Ok(connection) => connection,
            Err(err) => {
                if let RouterError::UnknownInstance { .. } = &err {
                    self.forget_instance(instance);
                }
                return Err(err);
            }
        };
        self.resolve(&connection, instance, group, version, plural)
            .await
    }

    /// When the instance-change counter `generation` moved since the last call, forgets the
    /// answers of every instance whose identity is no longer `current` (deleted, re-created, or
    /// other credentials), so that nothing of a gone instance is kept.
    pub fn forget_changed(
        &self,
        generation: u64,
        current: impl Fn(&str) -> Option<InstanceIdentity>,
    ) {
        if self.pruned_at.swap(generation, Ordering::AcqRel) == generation {
            return;
        }
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(instance, _, _), e| current(instance).as_ref() == Some(&e.identity));
    }

    /// Forgets everything known about `instance` (deleted, or its apiserver changed).
    pub fn forget_instance(&self, instance: &str) {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(i, _, _), _| i != instance);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id(uid: &str) -> InstanceIdentity {
        InstanceIdentity {
            uid: uid.into(),
            credentials: "ns/s@1".into(),
        }
    }

    fn instances_known(cache: &DiscoveryCache) -> Vec<String> {
        let mut names: Vec<String> = cache
            .entries
            .lock()
            .unwrap()
            .keys()
            .map(|(i, _, _)| i.clone())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn answers_of_changed_instances_are_forgotten_once_per_change() {
        let cache = DiscoveryCache::default();
        for (instance, uid) in [("a", "a1"), ("b", "b1")] {
            cache.entries.lock().unwrap().insert(
                (instance.into(), "apps".into(), "v1".into()),
                Entry {
                    identity: id(uid),
                    fetched: Instant::now(),
                    resources: HashMap::new(),
                },
            );
        }
        let current = |i: &str| (i == "a").then(|| id("a1"));
        cache.forget_changed(1, current);
        assert_eq!(instances_known(&cache), ["a"], "b is gone");
        // The same change again: nothing to do, even with another answer.
        cache.forget_changed(1, |_| None);
        assert_eq!(instances_known(&cache), ["a"]);
        // a re-created.
        cache.forget_changed(2, |_| Some(id("a2")));
        assert!(instances_known(&cache).is_empty());
    }

    #[test]
    fn reads_resources_and_skips_subresources() {
        let list: APIResourceList = serde_json::from_value(json!({
            "groupVersion": "apps/v1",
            "resources": [
                {"name": "deployments", "singularName": "deployment", "namespaced": true,
                 "kind": "Deployment", "verbs": ["get", "list"]},
                {"name": "deployments/scale", "singularName": "", "namespaced": true,
                 "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get"]},
                {"name": "controllerrevisions", "singularName": "", "namespaced": true,
                 "kind": "ControllerRevision", "verbs": []},
            ]
        }))
        .unwrap();
        let found = resources_of("apps", "v1", &list);
        assert_eq!(found.len(), 2);
        let d = &found["deployments"];
        assert!(d.namespaced);
        assert_eq!(d.resource.kind, "Deployment");
        assert_eq!(d.resource.api_version, "apps/v1");
        assert_eq!(d.resource.plural, "deployments");
        let core: APIResourceList = serde_json::from_value(json!({
            "groupVersion": "v1",
            "resources": [{"name": "nodes", "singularName": "node", "namespaced": false,
                           "kind": "Node", "verbs": []}]
        }))
        .unwrap();
        let nodes = &resources_of("", "v1", &core)["nodes"];
        assert!(!nodes.namespaced);
        assert_eq!(nodes.resource.api_version, "v1");
        assert_eq!(nodes.resource.group, "");
    }
}
