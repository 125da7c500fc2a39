//! What the statistics read of one instance: its resources as the shared instance cache keeps
//! them ([`EmbeddedCacheBackend`], the cache the API server's router reads), never a copy of
//! their own. Member clusters and Deployments are read from the caches of whole objects (the
//! ones the router serves, so a process running the API server and the controllers holds them
//! once); the kinds that are only counted from metadata-only caches
//! ([`CacheContent::Metadata`]), which keep a few hundred bytes per object whatever the objects
//! hold.
//!
//! A Deployment's readiness is read from its JSON ([`deployment_json_is_ready`]) and
//! remembered by resourceVersion, so a pass decodes only the Deployments that changed since the
//! last one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Secret, Service};
use kube::core::ApiResource;
use tokio::sync::watch;

use super::summary::{ObjectCounts, deployment_json_is_ready, deployment_summary};
use crate::models::cluster::Cluster;
use crate::models::policy::{
    ClusterOverridePolicy, ClusterPropagationPolicy, OverridePolicy, PropagationPolicy,
};
use crate::router::{CacheContent, CachedItem, CachedResource, EmbeddedCacheBackend, RouterError};

/// (namespace, name) of a cached object, sharing the cache's strings.
type ObjectKey = (Option<Arc<str>>, Arc<str>);

/// Whether each Deployment was ready at the resourceVersion it was last read at.
#[derive(Debug, Default)]
struct ReadinessMemo {
    known: HashMap<ObjectKey, (u64, bool)>,
}

impl ReadinessMemo {
    /// The readiness of each Deployment, given as (key, resourceVersion, JSON), decoding
    /// only those not known at their current resourceVersion (a version of 0, none or not
    /// numeric, is never trusted); the memo is left holding exactly these Deployments.
    fn readiness<'a>(
        &mut self,
        deployments: impl ExactSizeIterator<Item = (ObjectKey, u64, &'a [u8])>,
    ) -> Vec<bool> {
        let mut next = HashMap::with_capacity(deployments.len());
        let readiness = deployments
            .map(|(key, version, json)| {
                let known = self
                    .known
                    .get(&key)
                    .filter(|(at, _)| version != 0 && *at == version)
                    .map(|(_, ready)| *ready);
                let ready = known.unwrap_or_else(|| {
                    deployment_json_is_ready(json).unwrap_or_else(|err| {
                        tracing::debug!(
                            namespace = key.0.as_deref().unwrap_or_default(),
                            name = %key.1,
                            error = %err,
                            "cannot read a Deployment's readiness; counted as not ready"
                        );
                        false
                    })
                });
                next.insert(key, (version, ready));
                ready
            })
            .collect();
        self.known = next;
        readiness
    }
}

/// The cached resources of one instance the statistics read.
#[derive(Debug)]
pub struct InstanceCache {
    /// Member clusters (whole objects).
    pub clusters: CachedResource,
    /// Deployments (whole objects).
    pub deployments: CachedResource,
    /// Services (metadata only).
    pub services: CachedResource,
    /// Secrets (metadata only: nothing of their data is kept).
    pub secrets: CachedResource,
    /// ConfigMaps (metadata only).
    pub configmaps: CachedResource,
    /// PersistentVolumeClaims (metadata only).
    pub pvcs: CachedResource,
    /// PropagationPolicies (metadata only).
    pub propagation_policies: CachedResource,
    /// ClusterPropagationPolicies (metadata only).
    pub cluster_propagation_policies: CachedResource,
    /// OverridePolicies (metadata only).
    pub override_policies: CachedResource,
    /// ClusterOverridePolicies (metadata only).
    pub cluster_override_policies: CachedResource,
    readiness: Mutex<ReadinessMemo>,
}

/// Waits for a change of any of an [`InstanceCache`]'s resources.
#[derive(Debug)]
pub struct Changes {
    receivers: Vec<watch::Receiver<u64>>,
}

impl Changes {
    /// Waits until one of the caches changed since the last call (or since
    /// [`InstanceCache::subscribe`]); changes in between coalesce into one.
    pub async fn changed(&mut self) {
        let waits = self
            .receivers
            .iter_mut()
            .map(|receiver| Box::pin(receiver.changed()));
        // A cache's sender lives as long as the cache, which the caller holds.
        let _ = futures::future::select_all(waits).await;
        for receiver in &mut self.receivers {
            receiver.borrow_and_update();
        }
    }
}

impl InstanceCache {
    /// The statistics' caches of `instance` in `cache`, each started if no reader started it
    /// before.
    pub async fn open(cache: &EmbeddedCacheBackend, instance: &str) -> Result<Self, RouterError> {
        use CacheContent::{Metadata, Objects};
        let open = |resource: ApiResource, content| async move {
            cache.resource(instance, &resource, content).await
        };
        Ok(InstanceCache {
            clusters: open(ApiResource::erase::<Cluster>(&()), Objects).await?,
            deployments: open(ApiResource::erase::<Deployment>(&()), Objects).await?,
            services: open(ApiResource::erase::<Service>(&()), Metadata).await?,
            secrets: open(ApiResource::erase::<Secret>(&()), Metadata).await?,
            configmaps: open(ApiResource::erase::<ConfigMap>(&()), Metadata).await?,
            pvcs: open(ApiResource::erase::<PersistentVolumeClaim>(&()), Metadata).await?,
            propagation_policies: open(ApiResource::erase::<PropagationPolicy>(&()), Metadata)
                .await?,
            cluster_propagation_policies: open(
                ApiResource::erase::<ClusterPropagationPolicy>(&()),
                Metadata,
            )
            .await?,
            override_policies: open(ApiResource::erase::<OverridePolicy>(&()), Metadata).await?,
            cluster_override_policies: open(
                ApiResource::erase::<ClusterOverridePolicy>(&()),
                Metadata,
            )
            .await?,
            readiness: Mutex::new(ReadinessMemo::default()),
        })
    }

    fn all(&self) -> [&CachedResource; 10] {
        [
            &self.clusters,
            &self.deployments,
            &self.services,
            &self.secrets,
            &self.configmaps,
            &self.pvcs,
            &self.propagation_policies,
            &self.cluster_propagation_policies,
            &self.override_policies,
            &self.cluster_override_policies,
        ]
    }

    /// Changes of every cache from now on.
    pub fn subscribe(&self) -> Changes {
        Changes {
            receivers: self.all().iter().map(|c| c.changes()).collect(),
        }
    }

    /// Whether every cache completed its initial list.
    pub fn is_synced(&self) -> bool {
        self.all().iter().all(|c| c.has_listed())
    }

    /// Whether a cache was dropped (the instance was deleted or given other credentials): the
    /// statistics open the caches again.
    pub fn is_gone(&self) -> bool {
        self.all().iter().any(|c| c.is_gone())
    }

    /// Resolves when one of the caches is dropped.
    pub async fn gone(&self) {
        let gone = self.all().map(|c| Box::pin(c.gone()));
        futures::future::select_all(gone).await;
    }

    /// Waits until every cache completed its initial list, at most `limit`; returns whether
    /// they did.
    pub async fn wait_synced(&self, limit: Duration) -> bool {
        let mut changes = self.subscribe();
        let deadline = tokio::time::Instant::now() + limit;
        while !self.is_synced() && !self.is_gone() {
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                break;
            }
        }
        self.is_synced()
    }

    /// The member clusters; one whose JSON does not decode is left out, with the reason logged.
    pub fn members(&self) -> Vec<Cluster> {
        self.clusters
            .items()
            .iter()
            .filter_map(|item| match serde_json::from_slice::<Cluster>(item.json()) {
                Ok(cluster) => Some(cluster),
                Err(err) => {
                    tracing::warn!(cluster = item.name(), error = %err, "cannot decode a member cluster; left out of the summary");
                    None
                }
            })
            .collect()
    }

    /// Object counts for the summary.
    pub fn object_counts(&self) -> ObjectCounts {
        let deployments = self.deployments.items();
        let readiness = self
            .readiness
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .readiness(
                deployments
                    .iter()
                    .map(|d: &CachedItem| (d.key(), d.resource_version(), d.json())),
            );
        ObjectCounts {
            services: self.services.len(),
            secrets: self.secrets.len(),
            configmaps: self.configmaps.len(),
            persistentvolumeclaims: self.pvcs.len(),
            propagation_policies: self.propagation_policies.len(),
            cluster_propagation_policies: self.cluster_propagation_policies.len(),
            override_policies: self.override_policies.len(),
            cluster_override_policies: self.cluster_override_policies.len(),
            deployments: deployment_summary(readiness),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(namespace: &str, name: &str) -> ObjectKey {
        (Some(Arc::from(namespace)), Arc::from(name))
    }

    const READY: &[u8] = br#"{"metadata":{"generation":1},"spec":{"replicas":1},
        "status":{"observedGeneration":1,"readyReplicas":1}}"#;
    const NOT_READY: &[u8] = br#"{"metadata":{"generation":2},"spec":{"replicas":1},
        "status":{"observedGeneration":1,"readyReplicas":1}}"#;
    /// Not a Deployment: read only when the memo does not know the version.
    const UNREADABLE: &[u8] = b"[]";

    #[test]
    fn readiness_is_read_again_only_for_changed_versions() {
        let mut memo = ReadinessMemo::default();
        // (passes: each a list of (name, resourceVersion, JSON), readiness wanted)
        type Pass<'a> = (Vec<(&'a str, u64, &'a [u8])>, Vec<bool>);
        let passes: Vec<Pass> = vec![
            (
                vec![("a", 5, READY), ("b", 6, NOT_READY)],
                vec![true, false],
            ),
            // Same versions: the memo answers, whatever the JSON says now.
            (
                vec![("a", 5, UNREADABLE), ("b", 6, READY)],
                vec![true, false],
            ),
            // A new version is read; an unreadable one counts as not ready.
            (
                vec![("a", 7, NOT_READY), ("b", 8, UNREADABLE)],
                vec![false, false],
            ),
            // Version 0 (none, or not numeric) is never trusted.
            (vec![("a", 0, READY), ("b", 8, READY)], vec![true, false]),
            (vec![("a", 0, NOT_READY)], vec![false]),
            // A Deployment gone and back at a version seen before is read again.
            (vec![("b", 8, READY)], vec![true]),
        ];
        for (i, (items, want)) in passes.into_iter().enumerate() {
            let got = memo.readiness(
                items
                    .iter()
                    .map(|(name, version, json)| (key("team", name), *version, *json)),
            );
            assert_eq!(got, want, "pass {i}");
            assert_eq!(memo.known.len(), items.len(), "pass {i}");
        }
    }
}
