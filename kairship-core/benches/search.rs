//! The fleet search at scale: 20 sandbox instances of 5,000 Deployments each (the objects a
//! Helm chart installs, spread over 50 namespaces), cached by one `EmbeddedCacheBackend`, and
//! `KairshipService::search` asked for a fuzzy name across all of them, as an admin (every
//! instance listed from the host, as each search does).
//!
//! Goal: p99 at most 50 ms. The first search starts the caches; the measured searches run
//! once every cache has synced, each with another name (`svc-0NNN`: ten Deployments of each
//! instance match).
//!
//! `cargo bench -p kairship-core --bench search`; `KAIRSHIP_BENCH_SEARCH_INSTANCES` and
//! `KAIRSHIP_BENCH_SEARCH_DEPLOYMENTS` change the sizes (default 20 and 5,000). Prints
//! `BENCH name=value` lines.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kairship_core::access::{AllowAll, Caller};
use kairship_core::api::{KairshipService, SearchApi, SearchRequest, ServiceConfig};
use kairship_core::router::{
    DirectBackend, EmbeddedCacheBackend, InstanceWriter, SplitRouter, StaticInstanceClients,
};
use kube::Api;
use kube::api::PostParams;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;
use support::{NAMESPACES, deployment, deployments, ms, namespace_of, percentile};

const INSTANCES_ENV: &str = "KAIRSHIP_BENCH_SEARCH_INSTANCES";
const DEPLOYMENTS_ENV: &str = "KAIRSHIP_BENCH_SEARCH_DEPLOYMENTS";
const ROUNDS: usize = 200;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Creates the namespaces and `count` Deployments through `client` (without status: the
/// search reads names, namespaces and labels), sixteen at a time.
async fn fill(client: &kube::Client, count: usize) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for n in 0..NAMESPACES.min(count) {
        let ns = serde_json::from_value(json!({"metadata": {"name": namespace_of(n)}})).unwrap();
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }
    futures::stream::iter(0..count)
        .map(|i| {
            let client = client.clone();
            async move {
                let api: Api<DynamicObject> =
                    Api::namespaced_with(client, &namespace_of(i), &deployments());
                let obj: DynamicObject = serde_json::from_value(deployment(i)).unwrap();
                api.create(&PostParams::default(), &obj).await.unwrap();
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
}

#[tokio::main]
async fn main() {
    kube_kit::client::install_crypto_provider();
    let instances = env_or(INSTANCES_ENV, 20);
    let per_instance = env_or(DEPLOYMENTS_ENV, 5_000);

    // The host: the Instance CRD and one Instance per sandbox (what the admin's search lists).
    let host = kube_sandbox::Cluster::new("host");
    kube_sandbox::testing::install_crds(&host.client(), kairship_core::crds()).await;
    kube_sandbox::testing::ensure_namespace(&host.client(), "kairship-system").await;
    let instance_api: Api<DynamicObject> = Api::all_with(
        host.client(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("kairship.io", "v1alpha1", "Instance"),
            "instances",
        ),
    );
    let setup = Instant::now();
    let mut clusters = Vec::new();
    let mut clients = StaticInstanceClients::new();
    for i in 0..instances {
        let name = format!("karmada-{i:02}");
        let cluster = kube_sandbox::Cluster::new(&name);
        clients = clients.with(name.clone(), cluster.client());
        let object = serde_json::from_value(json!({
            "apiVersion": "kairship.io/v1alpha1", "kind": "Instance",
            "metadata": {"name": name},
            "spec": {"mode": "Adopt", "kubeconfigSecretRef": {"namespace": "kairship-system", "name": name}},
        }))
        .unwrap();
        instance_api
            .create(&PostParams::default(), &object)
            .await
            .unwrap();
        clusters.push(cluster);
    }
    futures::future::join_all(clusters.iter().map(|c| {
        let client = c.client();
        async move { fill(&client, per_instance).await }
    }))
    .await;
    eprintln!(
        "filled {instances} instances x {per_instance} Deployments in {:.1}s",
        setup.elapsed().as_secs_f64()
    );

    let clients = Arc::new(clients);
    let cache = Arc::new(EmbeddedCacheBackend::new(clients.clone()));
    let router = Arc::new(SplitRouter::new(
        cache.clone(),
        Arc::new(DirectBackend::new(clients.clone())),
        Arc::new(InstanceWriter::new(clients.clone())),
    ));
    let service = KairshipService::new(
        host.client(),
        router,
        Arc::new(AllowAll),
        ServiceConfig::default(),
    )
    .with_search_cache(cache);
    let caller = Caller::new("admin", vec![]);
    let request = |round: usize| SearchRequest {
        kind: Some("Deployment".into()),
        name: Some(format!("svc-0{:03}", round % (per_instance / 10).max(1))),
        page_size: Some(100),
        ..SearchRequest::default()
    };

    // The first searches start the caches; wait (bounded) until none is unavailable.
    let sync = Instant::now();
    let mut synced = false;
    for _ in 0..6000 {
        let answer = service.search(&caller, request(0)).await.unwrap();
        if answer.unavailable.is_empty() && answer.totals.len() == instances {
            synced = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(synced, "the caches did not sync");
    eprintln!("caches synced in {:.1}s", sync.elapsed().as_secs_f64());

    let mut times = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        let start = Instant::now();
        let answer = service.search(&caller, request(round)).await.unwrap();
        times.push(start.elapsed());
        // Each instance holds the same names: `svc-0NNN` matches svc-0NNN0 to svc-0NNN9.
        if (10..=10_000).contains(&per_instance) {
            assert_eq!(
                answer.pagination.total,
                10 * instances as u64,
                "round {round}"
            );
        }
    }
    times.sort();
    let p50 = ms(percentile(&times, 50.0));
    let p99 = ms(percentile(&times, 99.0));
    println!("BENCH fleet_search_instances={instances}");
    println!("BENCH fleet_search_deployments_per_instance={per_instance}");
    println!("BENCH fleet_search_p50_ms={p50:.2}");
    println!("BENCH fleet_search_p99_ms={p99:.2}");
    if p99 > 50.0 {
        eprintln!("fleet search p99 {p99:.2} ms is over the 50 ms goal");
    }
}
