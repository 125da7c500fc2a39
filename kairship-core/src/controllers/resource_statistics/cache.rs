//! The per-instance watch caches: one reflector per resource per instance, shared by every
//! controller that reads the instance (statistics, the deletion check). Consumers are told of
//! changes through a counter on a `watch` channel, so bursts coalesce.
//!
//! The summary only counts most kinds and reads a few fields of Deployments, so each object is
//! cut down to what is read before it is kept ([`slim_deployment`], `identity_only`): a
//! Deployment's pod template, conditions and managed fields are most of its size, and keeping
//! 5,000 whole Deployments took the controller-manager to 235 MiB.

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
    // Pages of the router cache's size: a page is decoded whole before it is cut down.
    let config = watcher::Config::default().page_size(crate::router::CACHE_LIST_PAGE_SIZE);
    let stream = watcher(api, config)
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

/// Only what a count needs: the object's name, namespace and resourceVersion (the
/// reflector's key and its watch position).
fn identity_only<K: Resource>(object: &mut K) {
    let meta = object.meta_mut();
    *meta = kube::api::ObjectMeta {
        name: meta.name.take(),
        namespace: meta.namespace.take(),
        resource_version: meta.resource_version.take(),
        uid: meta.uid.take(),
        ..kube::api::ObjectMeta::default()
    };
}

/// What [`deployment_is_ready`](super::summary::deployment_is_ready) reads of a Deployment:
/// its identity and generation, `spec.replicas`, `status.observedGeneration` and
/// `status.readyReplicas`.
pub fn slim_deployment(deployment: &mut Deployment) {
    let generation = deployment.metadata.generation;
    identity_only(deployment);
    deployment.metadata.generation = generation;
    deployment.spec =
        deployment
            .spec
            .take()
            .map(|spec| k8s_openapi::api::apps::v1::DeploymentSpec {
                replicas: spec.replicas,
                ..Default::default()
            });
    deployment.status =
        deployment
            .status
            .take()
            .map(|status| k8s_openapi::api::apps::v1::DeploymentStatus {
                observed_generation: status.observed_generation,
                ready_replicas: status.ready_replicas,
                ..Default::default()
            });
}

fn strip_secret(secret: &mut Secret) {
    secret.data = None;
    secret.string_data = None;
    secret.type_ = None;
    identity_only(secret);
}

fn strip_configmap(cm: &mut ConfigMap) {
    cm.data = None;
    cm.binary_data = None;
    identity_only(cm);
}

fn strip_service(service: &mut Service) {
    service.spec = None;
    service.status = None;
    identity_only(service);
}

fn strip_pvc(pvc: &mut PersistentVolumeClaim) {
    pvc.spec = None;
    pvc.status = None;
    identity_only(pvc);
}

impl InstanceCache {
    /// Starts the reflectors of one instance; they stop when `cancel` is cancelled.
    pub fn start(client: &Client, cancel: &CancellationToken) -> Arc<Self> {
        let (changes, _) = watch::channel(0u64);
        let c = client.clone();
        Arc::new(Self {
            clusters: spawn(Api::all(c.clone()), keep_all, changes.clone(), cancel),
            deployments: spawn(
                Api::all(c.clone()),
                slim_deployment,
                changes.clone(),
                cancel,
            ),
            services: spawn(Api::all(c.clone()), strip_service, changes.clone(), cancel),
            secrets: spawn(Api::all(c.clone()), strip_secret, changes.clone(), cancel),
            configmaps: spawn(
                Api::all(c.clone()),
                strip_configmap,
                changes.clone(),
                cancel,
            ),
            pvcs: spawn(Api::all(c.clone()), strip_pvc, changes.clone(), cancel),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::resource_statistics::summary::deployment_is_ready;
    use serde_json::json;

    #[test]
    fn a_slim_deployment_is_ready_exactly_when_the_whole_one_is() {
        let template = json!({"metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        // (generation, spec.replicas, observedGeneration, readyReplicas, status present)
        let cases = [
            (Some(2), Some(3), Some(2), Some(3), true),
            (Some(2), Some(3), Some(1), Some(3), true),
            (Some(2), Some(3), Some(2), Some(2), true),
            (Some(1), None, Some(1), Some(1), true),
            (Some(1), Some(0), None, None, false),
            (Some(1), Some(1), None, None, false),
            (None, Some(1), None, Some(1), true),
        ];
        for (generation, replicas, observed, ready, has_status) in cases {
            let mut whole = json!({
                "metadata": {"name": "d", "namespace": "n", "resourceVersion": "7",
                    "generation": generation, "annotations": {"a": "b"},
                    "managedFields": [{"manager": "m"}]},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "a"}},
                    "template": template},
            });
            if has_status {
                whole["status"] = json!({"observedGeneration": observed, "readyReplicas": ready,
                    "conditions": [{"type": "Available", "status": "True"}]});
            }
            let whole: Deployment = serde_json::from_value(whole).unwrap();
            let mut slim = whole.clone();
            slim_deployment(&mut slim);
            assert_eq!(
                deployment_is_ready(&slim),
                deployment_is_ready(&whole),
                "{generation:?} {replicas:?} {observed:?} {ready:?} {has_status}"
            );
            assert!(slim.metadata.managed_fields.is_none());
            assert!(slim.metadata.annotations.is_none());
            assert_eq!(slim.metadata.name.as_deref(), Some("d"));
            assert_eq!(slim.metadata.resource_version.as_deref(), Some("7"));
            let spec = slim.spec.unwrap_or_default();
            assert!(spec.template.spec.is_none());
            assert!(slim.status.is_none_or(|s| s.conditions.is_none()));
        }
    }

    #[test]
    fn counted_kinds_keep_only_their_identity() {
        let mut secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "n", "resourceVersion": "3",
                "labels": {"a": "b"}, "managedFields": [{"manager": "m"}]},
            "data": {"k": "dg=="}, "type": "Opaque"}))
        .unwrap();
        strip_secret(&mut secret);
        assert_eq!(
            serde_json::to_value(&secret).unwrap(),
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "s", "namespace": "n", "resourceVersion": "3"}})
        );
    }
}
