//! A custom `ReadBackend` embedded in Kairship's read-write split router: cache only the
//! kinds you read a lot, and count reads per resource.
//!
//! The embedded cache keeps one watch, and a copy of every object, per instance and resource
//! type in use. A platform team whose dashboards read mostly Deployments and ConfigMaps may
//! not want a Secret cache in every API server replica. `HotKindsBackend` wraps the embedded
//! cache: it serves the kinds it is told to keep from the cache, and reports the others as
//! "not synced", so the router reads them directly from the instance and never starts a
//! watch for them. It also counts the reads it answers per instance and resource, the figures
//! that tell which kinds are worth caching. Writes still go to the instance through the
//! router's `InstanceWriter`, and read-your-writes keeps working for cached kinds.
//!
//! `cargo run -p examples --bin custom_read_backend` starts two sandbox instances, writes a
//! few objects through the router, reads them back, prints which reads the backend served,
//! which went directly to the instance, and exits.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context as _, ensure};
use async_trait::async_trait;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kairship_core::router::{
    DirectBackend, EmbeddedCacheBackend, EventStream, FallbackReason, InstanceClients,
    InstanceWriter, ListQuery, ObjectPage, ReadBackend, ReadWriteRouter, ResourceTarget,
    RouterError, SplitRouter, StaticInstanceClients, WatchQuery, WriteBackend,
};
use kube::Api;
use kube::api::PostParams;
use kube::core::{ApiResource, DynamicObject};
use kube_sandbox::{Cluster, ServeOptions};
use serde_json::json;

const NAMESPACE: &str = "default";
const INSTANCES: [&str; 2] = ["prod", "staging"];

/// Serves the kinds it keeps (by plural) from `cache`; every other kind reads directly.
struct HotKindsBackend {
    kept: BTreeSet<String>,
    cache: EmbeddedCacheBackend,
    /// Reads answered, per `(instance, plural)`.
    reads: Mutex<BTreeMap<(String, String), u64>>,
}

impl HotKindsBackend {
    fn new(clients: Arc<dyn InstanceClients>, kept: &[&str]) -> Self {
        HotKindsBackend {
            kept: kept.iter().map(|k| (*k).to_owned()).collect(),
            cache: EmbeddedCacheBackend::new(clients),
            reads: Mutex::new(BTreeMap::new()),
        }
    }

    fn keeps(&self, resource: &ApiResource) -> bool {
        self.kept.contains(&resource.plural)
    }

    fn count(&self, target: &ResourceTarget) {
        let key = (target.instance.clone(), target.resource.plural.clone());
        *self
            .reads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default() += 1;
    }

    /// Reads answered so far, per `(instance, plural)`.
    fn reads(&self) -> BTreeMap<(String, String), u64> {
        self.reads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl ReadBackend for HotKindsBackend {
    async fn get(
        &self,
        target: &ResourceTarget,
        name: &str,
    ) -> Result<Arc<DynamicObject>, RouterError> {
        self.count(target);
        self.cache.get(target, name).await
    }

    async fn list(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError> {
        self.count(target);
        self.cache.list(target, query).await
    }

    // The native proxy's LISTs: the cache writes them from its stored JSON, decoding nothing.
    async fn list_rendered(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError> {
        self.count(target);
        self.cache.list_rendered(target, query).await
    }

    async fn watch(
        &self,
        target: &ResourceTarget,
        query: &WatchQuery,
    ) -> Result<EventStream, RouterError> {
        self.count(target);
        self.cache.watch(target, query).await
    }

    async fn synced(&self, instance: &str, resource: &ApiResource) -> bool {
        // Never asking the cache about other kinds is what keeps it from watching them; the
        // router reads them directly instead (fallback reason `unsynced`).
        self.keeps(resource) && self.cache.synced(instance, resource).await
    }

    fn seen_version(&self, instance: &str, resource: &ApiResource) -> Option<u64> {
        if self.keeps(resource) {
            self.cache.seen_version(instance, resource)
        } else {
            None
        }
    }

    async fn wait_for_version(
        &self,
        instance: &str,
        resource: &ApiResource,
        version: u64,
        timeout: Duration,
    ) -> bool {
        self.keeps(resource)
            && self
                .cache
                .wait_for_version(instance, resource, version, timeout)
                .await
    }
}

fn configmap(name: &str, owner: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": NAMESPACE}, "data": {"owner": owner}})
}

fn deployment(name: &str) -> serde_json::Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": name, "namespace": NAMESPACE},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}})
}

fn secret(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": name, "namespace": NAMESPACE}, "stringData": {"k": "v"}})
}

/// Waits (bounded) until the cache of a kept kind has finished its initial list, so that the
/// reads below show the cache answering rather than the start-up fallback.
async fn wait_synced(backend: &HotKindsBackend, target: &ResourceTarget) -> anyhow::Result<()> {
    for _ in 0..500 {
        if backend.synced(&target.instance, &target.resource).await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    anyhow::bail!("the cache of {} did not sync", target.describe())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    kube_kit::client::install_crypto_provider();

    // Two Karmada-like instances: sandbox API servers on loopback.
    let clients = Arc::new(StaticInstanceClients::new());
    let mut served = Vec::new();
    let mut clusters = BTreeMap::new();
    for name in INSTANCES {
        let cluster = Cluster::new(name);
        let server = cluster.serve(ServeOptions::default()).await?;
        clients.insert(name, server.client().await?);
        served.push(server);
        clusters.insert(name, cluster);
    }
    let clients_dyn: Arc<dyn InstanceClients> = clients;

    let backend = Arc::new(HotKindsBackend::new(
        clients_dyn.clone(),
        &["configmaps", "deployments"],
    ));
    let router = SplitRouter::new(
        backend.clone(),
        Arc::new(DirectBackend::new(clients_dyn.clone())),
        Arc::new(InstanceWriter::new(clients_dyn)),
    );

    let configmaps = ApiResource::erase::<ConfigMap>(&());
    let deployments = ApiResource::erase::<Deployment>(&());
    let secrets = ApiResource::erase::<Secret>(&());
    let post = PostParams::default();

    for instance in INSTANCES {
        let cm = ResourceTarget::namespaced(instance, configmaps.clone(), NAMESPACE);
        let deploy = ResourceTarget::namespaced(instance, deployments.clone(), NAMESPACE);
        let sec = ResourceTarget::namespaced(instance, secrets.clone(), NAMESPACE);

        // Writes go to the instance's API server.
        for name in ["settings", "features"] {
            router
                .create(&cm, &configmap(name, instance), &post)
                .await?;
        }
        router.create(&deploy, &deployment("web"), &post).await?;
        router.create(&sec, &secret("db-password"), &post).await?;

        // Read-your-writes: the list right after the writes shows them, from the cache once
        // it has caught up (or directly while it starts).
        let listed = router.list(&cm, &ListQuery::default()).await?;
        ensure!(
            listed.items.len() == 2,
            "{instance}: both ConfigMaps listed"
        );

        wait_synced(&backend, &cm).await?;
        wait_synced(&backend, &deploy).await?;
        for _ in 0..3 {
            let page = router.list(&cm, &ListQuery::default()).await?;
            ensure!(page.items.len() == 2, "{instance}: both ConfigMaps listed");
        }
        let web = router.get(&deploy, "web").await?;
        ensure!(
            web.data["spec"]["replicas"] == 1,
            "{instance}: web read back"
        );
        // Secrets are not kept: these reads go directly to the instance.
        let secret = router.get(&sec, "db-password").await?;
        ensure!(
            secret.metadata.name.as_deref() == Some("db-password"),
            "{instance}: secret read back"
        );
    }

    // The writes really are on the instances, as their own API servers say.
    for (name, cluster) in &clusters {
        let on_instance: Api<ConfigMap> = Api::namespaced(cluster.client(), NAMESPACE);
        let settings = on_instance
            .get("settings")
            .await
            .with_context(|| format!("ConfigMap settings on instance {name}"))?;
        let owner = settings.data.unwrap_or_default().remove("owner");
        ensure!(
            owner.as_deref() == Some(*name),
            "{name}: written by the router"
        );
    }

    println!("reads answered by HotKindsBackend (instance, resource: reads):");
    let reads = backend.reads();
    for ((instance, plural), count) in &reads {
        println!("  {instance:<8} {plural:<12} {count}");
    }
    let metrics = router.metrics().snapshot();
    let unsynced = metrics.fallbacks_for(FallbackReason::Unsynced);
    println!(
        "router: {} reads from the backend, {} read directly (unsynced: {unsynced}), {} writes to the instances",
        metrics.cache_hits,
        metrics.fallbacks_total(),
        metrics.writes
    );
    ensure!(
        !reads.keys().any(|(_, plural)| plural == "secrets"),
        "secrets are never read from the backend"
    );
    ensure!(
        INSTANCES
            .iter()
            .all(|i| reads.get(&(i.to_string(), "configmaps".into())) >= Some(&3)),
        "configmaps are read from the backend"
    );
    ensure!(metrics.writes == 8, "every write went to an instance");
    ensure!(
        unsynced >= 2,
        "the secret reads went directly to the instances"
    );

    for server in served {
        server.stop();
    }
    Ok(())
}
