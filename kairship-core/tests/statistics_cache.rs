//! The statistics read the instance cache the router serves from: one copy of each object in a
//! process running both, counted kinds kept as metadata only. Against a kube-sandbox instance
//! over loopback HTTP with real watches.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, Service};
use kairship_core::controllers::resource_statistics::cache::InstanceCache;
use kairship_core::controllers::resource_statistics::compute;
use kairship_core::router::{
    EmbeddedCacheBackend, ListQuery, ReadBackend, ResourceKey, ResourceTarget,
    StaticInstanceClients,
};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use kube::{Api, Client};
use kube_kit::client::{ClientOptions, client_from_kubeconfig_yaml};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);
const INSTANCE: &str = "prod";
/// A Secret value that must never be kept by a cache that only counts Secrets.
const SECRET_VALUE: &str = "c2VjcmV0LXRoYXQtc3RheXMtb3V0";

async fn http_client(instance: &KarmadaInstance) -> Client {
    client_from_kubeconfig_yaml(
        &instance.served.kubeconfig_yaml,
        None,
        &ClientOptions::new("statistics-cache-test"),
        "test",
    )
    .await
    .unwrap()
}

async fn populate(client: &Client) {
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    for (name, replicas, ready) in [("web", 2, 2), ("api", 3, 1)] {
        let body = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
        }))
        .unwrap();
        let created = deployments
            .create(&PostParams::default(), &body)
            .await
            .unwrap();
        let status = json!({"status": {"replicas": replicas, "readyReplicas": ready,
            "observedGeneration": created.metadata.generation}});
        deployments
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .unwrap();
    }
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let secret = serde_json::from_value(json!({
        "metadata": {"name": "token", "annotations": {"note": SECRET_VALUE}},
        "data": {"value": SECRET_VALUE}
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let services: Api<Service> = Api::default_namespaced(client.clone());
    let service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}]}
    }))
    .unwrap();
    services
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
}

fn deployments() -> ApiResource {
    ApiResource::erase::<Deployment>(&())
}

async fn count<K>(client: &Client) -> i64
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    i64::try_from(api.list(&ListParams::default()).await.unwrap().items.len()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_read_the_caches_the_router_serves() {
    let karmada = KarmadaInstance::start(INSTANCE).await;
    karmada
        .add_member(&Member::new("m1", true, (3, 2), "4", "8Gi", "110"))
        .await;
    let client = http_client(&karmada).await;
    populate(&client).await;
    let backend = EmbeddedCacheBackend::new(Arc::new(
        StaticInstanceClients::new().with(INSTANCE, client.clone()),
    ));

    // The router reads Deployments first: their cache starts.
    let target = ResourceTarget::all(INSTANCE, deployments());
    eventually("the router's Deployment cache", LIMIT, || async {
        backend.synced(INSTANCE, &deployments()).await.then_some(())
    })
    .await;
    let listed = backend.list(&target, &ListQuery::default()).await.unwrap();
    assert_eq!(listed.items.len(), 2);

    let cache = InstanceCache::open(&backend, INSTANCE).await.unwrap();
    assert!(cache.wait_synced(LIMIT).await, "every cache synced");
    // The statistics' whole-object caches are the router's: Clusters were added to the one
    // Deployment cache, nothing else (the counted kinds are kept apart, as metadata).
    let mut cached: Vec<String> = backend
        .cached_resources()
        .iter()
        .map(|key: &ResourceKey| key.plural.clone())
        .collect();
    cached.sort();
    assert_eq!(cached, ["clusters", "deployments"]);

    let summary = compute(&cache);
    assert_eq!(
        (
            summary.workload_summary.deployments.total_num,
            summary.workload_summary.deployments.ready_num
        ),
        (2, 1)
    );
    assert_eq!(
        (
            summary.cluster_summary.total_num,
            summary.node_summary.total_num,
            summary.node_summary.ready_num
        ),
        (1, 3, 2)
    );
    assert_eq!(
        summary.resource_total_num.secrets,
        count::<Secret>(&client).await
    );
    assert_eq!(
        summary.resource_total_num.services,
        count::<Service>(&client).await
    );

    // Counted kinds keep their identity, nothing of the object: no data, no annotations.
    let secrets = cache.secrets.items();
    let token = secrets.iter().find(|s| s.name() == "token").unwrap();
    assert_eq!(token.namespace(), Some("default"));
    let kept = std::str::from_utf8(token.json()).unwrap();
    assert!(!kept.contains(SECRET_VALUE), "{kept}");
    assert!(kept.contains("\"resourceVersion\""), "{kept}");

    // A change seen by the shared cache reaches the summary: `api` becomes ready.
    let api: Api<Deployment> = Api::default_namespaced(client.clone());
    api.patch_status(
        "api",
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": {"readyReplicas": 3}})),
    )
    .await
    .unwrap();
    let ready = eventually("the summary to follow the Deployment", LIMIT, || {
        let ready = compute(&cache).workload_summary.deployments.ready_num;
        async move { (ready == 2).then_some(ready) }
    })
    .await;
    assert_eq!(ready, 2);
    // The router sees the same object the statistics read.
    let in_default = ResourceTarget::namespaced(INSTANCE, deployments(), "default");
    let object = backend.get(&in_default, "api").await.unwrap();
    assert_eq!(object.data["status"]["readyReplicas"], 3);

    // A deletion is a change of the cache, and counts go down.
    let mut changes = cache.subscribe();
    let deletion = tokio::time::timeout(LIMIT, changes.changed());
    Api::<Service>::default_namespaced(client.clone())
        .delete("web", &Default::default())
        .await
        .unwrap();
    deletion.await.unwrap();
    eventually("the Service count to go down", LIMIT, || {
        let services = compute(&cache).resource_total_num.services;
        async move { (services == 0).then_some(()) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_open_again_once_the_instance_changes() {
    let karmada = KarmadaInstance::start(INSTANCE).await;
    let client = http_client(&karmada).await;
    populate(&client).await;
    let clients = Arc::new(StaticInstanceClients::new().with(INSTANCE, client.clone()));
    let backend = EmbeddedCacheBackend::new(clients.clone());
    let cache = InstanceCache::open(&backend, INSTANCE).await.unwrap();
    assert!(cache.wait_synced(LIMIT).await);
    assert!(!cache.is_gone());
    // The instance is given other credentials: caches built on the former ones are dropped.
    clients.insert(INSTANCE, client.clone());
    tokio::time::timeout(LIMIT, cache.gone()).await.unwrap();
    assert!(cache.is_gone());
    let reopened = InstanceCache::open(&backend, INSTANCE).await.unwrap();
    assert!(reopened.wait_synced(LIMIT).await);
    assert_eq!(compute(&reopened).workload_summary.deployments.total_num, 2);
    // A deleted instance has no caches to open.
    clients.remove(INSTANCE);
    assert!(InstanceCache::open(&backend, INSTANCE).await.is_err());
}
