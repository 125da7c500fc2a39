//! The per-instance watch caches: one reflector per resource per instance, shared by every
//! controller that reads the instance (statistics, the deletion check). Consumers are told of
//! changes through a counter on a `watch` channel, so bursts coalesce.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Secret, Service};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::summary::{ObjectCounts, deployment_counts};
use crate::models::cluster::Cluster;
use crate::models::policy::{
    ClusterOverridePolicy, ClusterPropagationPolicy, OverridePolicy, PropagationPolicy,
};

/// A reflector's store and whether its initial list completed.
pub struct Cached<K: Resource<DynamicType = ()> + 'static> {
    store: Store<K>,
    synced: Arc<AtomicBool>,
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> Cached<K> {
    /// Whether the initial list completed.
    pub fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// The cached objects.
    pub fn objects(&self) -> Vec<Arc<K>> {
        self.store.state()
    }

    /// Number of cached objects.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }
}

/// The watch caches of one instance.
pub struct InstanceCache {
    /// Member clusters.
    pub clusters: Cached<Cluster>,
    /// Deployments.
    pub deployments: Cached<Deployment>,
    /// Services.
    pub services: Cached<Service>,
    /// Secrets (metadata only: data is dropped before caching).
    pub secrets: Cached<Secret>,
    /// ConfigMaps (metadata only).
    pub configmaps: Cached<ConfigMap>,
    /// PersistentVolumeClaims.
    pub pvcs: Cached<PersistentVolumeClaim>,
    /// PropagationPolicies.
    pub propagation_policies: Cached<PropagationPolicy>,
    /// ClusterPropagationPolicies.
    pub cluster_propagation_policies: Cached<ClusterPropagationPolicy>,
    /// OverridePolicies.
    pub override_policies: Cached<OverridePolicy>,
    /// ClusterOverridePolicies.
    pub cluster_override_policies: Cached<ClusterOverridePolicy>,
    changes: watch::Sender<u64>,
}

impl std::fmt::Debug for InstanceCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstanceCache")
            .field("synced", &self.is_synced())
            .finish()
    }
}

fn spawn<K>(
    api: Api<K>,
    strip: fn(&mut K),
    changes: watch::Sender<u64>,
    cancel: &CancellationToken,
) -> Cached<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store();
    let synced = Arc::new(AtomicBool::new(false));
    let flag = synced.clone();
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(strip)
        .reflect(writer);
    let cancel = cancel.clone();
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        loop {
            let event = tokio::select! {
                () = cancel.cancelled() => return,
                event = stream.next() => event,
            };
            match event {
                Some(Ok(watcher::Event::InitDone)) => {
                    flag.store(true, Ordering::Release);
                    changes.send_modify(|n| *n = n.wrapping_add(1));
                }
                Some(Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_))) => {
                    changes.send_modify(|n| *n = n.wrapping_add(1));
                }
                Some(Ok(_)) => {}
                Some(Err(err)) => tracing::debug!(
                    kind = %K::kind(&()),
                    error = %err,
                    "instance watch failed; retrying"
                ),
                None => return,
            }
        }
    });
    Cached { store, synced }
}

fn keep_all<K>(_: &mut K) {}

fn strip_secret(secret: &mut Secret) {
    secret.data = None;
    secret.string_data = None;
    strip_managed_fields(&mut secret.metadata);
}

fn strip_configmap(cm: &mut ConfigMap) {
    cm.data = None;
    cm.binary_data = None;
    strip_managed_fields(&mut cm.metadata);
}

fn strip_managed_fields(meta: &mut kube::api::ObjectMeta) {
    meta.managed_fields = None;
    meta.annotations = None;
}

impl InstanceCache {
    /// Starts the reflectors of one instance; they stop when `cancel` is cancelled.
    pub fn start(client: &Client, cancel: &CancellationToken) -> Arc<Self> {
        let (changes, _) = watch::channel(0u64);
        let c = client.clone();
        Arc::new(Self {
            clusters: spawn(Api::all(c.clone()), keep_all, changes.clone(), cancel),
            deployments: spawn(Api::all(c.clone()), keep_all, changes.clone(), cancel),
            services: spawn(Api::all(c.clone()), keep_all, changes.clone(), cancel),
            secrets: spawn(Api::all(c.clone()), strip_secret, changes.clone(), cancel),
            configmaps: spawn(
                Api::all(c.clone()),
                strip_configmap,
                changes.clone(),
                cancel,
            ),
            pvcs: spawn(Api::all(c.clone()), keep_all, changes.clone(), cancel),
            propagation_policies: spawn(Api::all(c.clone()), keep_all, changes.clone(), cancel),
            cluster_propagation_policies: spawn(
                Api::all(c.clone()),
                keep_all,
                changes.clone(),
                cancel,
            ),
            override_policies: spawn(Api::all(c.clone()), keep_all, changes.clone(), cancel),
            cluster_override_policies: spawn(Api::all(c), keep_all, changes.clone(), cancel),
            changes,
        })
    }

    /// A receiver that sees a new value after every cached change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Whether every reflector completed its initial list.
    pub fn is_synced(&self) -> bool {
        self.clusters.is_synced()
            && self.deployments.is_synced()
            && self.services.is_synced()
            && self.secrets.is_synced()
            && self.configmaps.is_synced()
            && self.pvcs.is_synced()
            && self.propagation_policies.is_synced()
            && self.cluster_propagation_policies.is_synced()
            && self.override_policies.is_synced()
            && self.cluster_override_policies.is_synced()
    }

    /// Waits until every reflector synced, at most `limit`; returns whether they did.
    pub async fn wait_synced(&self, limit: Duration) -> bool {
        let mut changes = self.subscribe();
        let deadline = tokio::time::Instant::now() + limit;
        while !self.is_synced() {
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return self.is_synced(),
            }
        }
        true
    }

    /// The number of member clusters, once the Cluster cache has synced.
    pub fn member_count(&self) -> Option<usize> {
        self.clusters.is_synced().then(|| self.clusters.len())
    }

    /// The member clusters.
    pub fn members(&self) -> Vec<Cluster> {
        self.clusters
            .objects()
            .iter()
            .map(|c| c.as_ref().clone())
            .collect()
    }

    /// Object counts for the summary.
    pub fn object_counts(&self) -> ObjectCounts {
        let deployments = self.deployments.objects();
        ObjectCounts {
            services: self.services.len(),
            secrets: self.secrets.len(),
            configmaps: self.configmaps.len(),
            persistentvolumeclaims: self.pvcs.len(),
            propagation_policies: self.propagation_policies.len(),
            cluster_propagation_policies: self.cluster_propagation_policies.len(),
            override_policies: self.override_policies.len(),
            cluster_override_policies: self.cluster_override_policies.len(),
            deployments: deployment_counts(deployments.iter().map(|d| d.as_ref())),
        }
    }
}
