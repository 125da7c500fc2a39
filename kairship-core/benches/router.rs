//! The read-write split router against one sandbox instance served over loopback HTTP holding
//! 5,000 Deployments: a full LIST answered as JSON through the router (cache, items written
//! out from their stored JSON, as the native proxy answers) vs directly from the instance
//! (target: `cached_list_speedup` >= 5, router p99 <= 50 ms), the same LIST over HTTP through
//! the native proxy, the p50 latency a write gains by
//! going through the router (target <= 1 ms), and cached GETs per second (target >= 5,000).
//!
//! `cargo bench -p kairship-core --bench router`; prints `BENCH name=value` lines.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kairship_core::access::AllowAll;
use kairship_core::auth::StaticTokenAuthenticator;
use kairship_core::proxy::{ProxyState, proxy_routes};
use kairship_core::router::{
    DirectBackend, EmbeddedCacheBackend, InstanceWriter, ListQuery, ReadBackend, ReadWriteRouter,
    ResourceTarget, SplitRouter, StaticInstanceClients, WriteBackend, render_list,
};
use kube::Api;
use kube::api::PostParams;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;
use support::{ms, percentile};

const INSTANCE: &str = "bench-instance";
const NAMESPACE: &str = "bench";
const DEPLOYMENTS: usize = 5_000;
const LIST_ROUNDS: usize = 30;
const WRITE_ROUNDS: usize = 200;
const GET_SECONDS: u64 = 3;
const GET_WORKERS: usize = 4;

fn deployments() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps", "v1", "Deployment"),
        "deployments",
    )
}

fn deployment(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name, "team": "bench"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                    "ports": [{"containerPort": 80}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
            }
        }
    })
}

async fn timed<F, Fut>(rounds: usize, mut f: F) -> Vec<Duration>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut samples = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let start = Instant::now();
        f(i).await;
        samples.push(start.elapsed());
    }
    samples.sort();
    samples
}

async fn run() {
    let cluster = kube_sandbox::Cluster::new(INSTANCE);
    let local = cluster.client();
    let namespaces: Api<Namespace> = Api::all(local.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let seed: Api<DynamicObject> = Api::namespaced_with(local, NAMESPACE, &deployments());
    for i in 0..DEPLOYMENTS {
        let obj = serde_json::from_value(deployment(&format!("app-{i:05}"))).unwrap();
        seed.create(&PostParams::default(), &obj).await.unwrap();
    }

    let served = cluster
        .serve(kube_sandbox::ServeOptions::default())
        .await
        .unwrap();
    let http = served.client().await.unwrap();
    let clients = Arc::new(StaticInstanceClients::new().with(INSTANCE, http.clone()));
    let cache = Arc::new(EmbeddedCacheBackend::new(clients.clone()));
    let direct = Arc::new(DirectBackend::new(clients.clone()));
    let router = Arc::new(SplitRouter::new(
        cache.clone(),
        direct.clone(),
        Arc::new(InstanceWriter::new(clients.clone())),
    ));
    let target = ResourceTarget::namespaced(INSTANCE, deployments(), NAMESPACE);

    let sync_start = Instant::now();
    while !cache.synced(INSTANCE, &deployments()).await {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!("BENCH cache_sync_5000_ms={:.1}", ms(sync_start.elapsed()));

    // Full LIST answered as a Kubernetes `DeploymentList` in JSON, as the native proxy answers
    // it: through the router (cache, items written out from their stored JSON) and directly
    // from the instance (decoded, then rendered again).
    let query = ListQuery::default();
    let routed = timed(LIST_ROUNDS, |_| {
        let (router, target, query) = (router.clone(), target.clone(), query.clone());
        async move {
            let page = router.list_rendered(&target, &query).await.unwrap();
            assert_eq!(page.items.len(), DEPLOYMENTS);
            let body = render_list(&page, "apps/v1", "DeploymentList").unwrap();
            assert!(body.len() > DEPLOYMENTS * 100);
        }
    })
    .await;
    let direct_samples = timed(LIST_ROUNDS, |_| {
        let (direct, target, query) = (direct.clone(), target.clone(), query.clone());
        async move {
            let page = direct.list(&target, &query).await.unwrap();
            assert_eq!(page.items.len(), DEPLOYMENTS);
            let body = render_list(&page, "apps/v1", "DeploymentList").unwrap();
            assert!(body.len() > DEPLOYMENTS * 100);
        }
    })
    .await;
    // The objects themselves, decoded from the cache's JSON (what the REST API and the console
    // read), without rendering an answer.
    let routed_objects = timed(LIST_ROUNDS, |_| {
        let (router, target, query) = (router.clone(), target.clone(), query.clone());
        async move {
            let page = router.list(&target, &query).await.unwrap();
            assert_eq!(page.items.len(), DEPLOYMENTS);
        }
    })
    .await;
    let (r50, r99) = (percentile(&routed, 50.0), percentile(&routed, 99.0));
    let (d50, d99) = (
        percentile(&direct_samples, 50.0),
        percentile(&direct_samples, 99.0),
    );
    println!("BENCH router_list_5000_p50_ms={:.2}", ms(r50));
    println!("BENCH router_list_5000_p99_ms={:.2}", ms(r99));
    println!("BENCH direct_list_5000_p50_ms={:.2}", ms(d50));
    println!("BENCH direct_list_5000_p99_ms={:.2}", ms(d99));
    println!(
        "BENCH cached_list_speedup={:.1}",
        d50.as_secs_f64() / r50.as_secs_f64()
    );
    println!(
        "BENCH router_list_5000_objects_only_p50_ms={:.2}",
        ms(percentile(&routed_objects, 50.0))
    );

    // The same LIST over HTTP as a client sees it: through the native proxy (cache) and
    // straight from the instance apiserver.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let state = ProxyState::new(
        router.clone(),
        clients.clone(),
        Arc::new(StaticTokenAuthenticator::parse("bench-token,bench,1").unwrap()),
        Arc::new(AllowAll),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_addr = listener.local_addr().unwrap();
    tokio::spawn(support::serve_without_delay(listener, proxy_routes(state)));
    let http_client = reqwest::Client::new();
    let proxied_url = format!(
        "http://{proxy_addr}/apis/kairship.io/v1alpha1/instances/{INSTANCE}/proxy/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
    );
    let direct_url = format!(
        "{}/apis/apps/v1/namespaces/{NAMESPACE}/deployments",
        served.url
    );
    let fetch = |url: String, token: String| {
        let http_client = http_client.clone();
        async move {
            let body = http_client
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            assert!(body.len() > DEPLOYMENTS * 100);
        }
    };
    let admin = cluster.admin_token().to_owned();
    let proxied = timed(LIST_ROUNDS, |_| {
        fetch(proxied_url.clone(), "bench-token".into())
    })
    .await;
    let straight = timed(LIST_ROUNDS, |_| fetch(direct_url.clone(), admin.clone())).await;
    println!(
        "BENCH proxy_list_5000_http_p50_ms={:.2}",
        ms(percentile(&proxied, 50.0))
    );
    println!(
        "BENCH proxy_list_5000_http_p99_ms={:.2}",
        ms(percentile(&proxied, 99.0))
    );
    println!(
        "BENCH instance_list_5000_http_p50_ms={:.2}",
        ms(percentile(&straight, 50.0))
    );

    // Writes: creates through the router vs the same create sent directly, interleaved so
    // that both see the same instance load.
    let direct_api: Api<DynamicObject> = Api::namespaced_with(http, NAMESPACE, &deployments());
    let mut via_router = Vec::with_capacity(WRITE_ROUNDS);
    let mut via_direct = Vec::with_capacity(WRITE_ROUNDS);
    for i in 0..WRITE_ROUNDS {
        let body = deployment(&format!("routed-{i:04}"));
        let start = Instant::now();
        router
            .create(&target, &body, &PostParams::default())
            .await
            .unwrap();
        via_router.push(start.elapsed());
        let obj: DynamicObject =
            serde_json::from_value(deployment(&format!("direct-{i:04}"))).unwrap();
        let start = Instant::now();
        direct_api
            .create(&PostParams::default(), &obj)
            .await
            .unwrap();
        via_direct.push(start.elapsed());
    }
    via_router.sort();
    via_direct.sort();
    let (w_router, w_direct) = (percentile(&via_router, 50.0), percentile(&via_direct, 50.0));
    println!("BENCH write_router_p50_ms={:.3}", ms(w_router));
    println!("BENCH write_direct_p50_ms={:.3}", ms(w_direct));
    println!(
        "BENCH write_added_p50_ms={:.3}",
        ms(w_router) - ms(w_direct)
    );

    // Cached GETs per second: several workers reading random Deployments through the router.
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(GET_SECONDS);
    let mut workers = Vec::new();
    for w in 0..GET_WORKERS {
        let (router, target, done) = (router.clone(), target.clone(), done.clone());
        workers.push(tokio::spawn(async move {
            let mut i = w * 7919;
            while Instant::now() < deadline {
                i = (i * 31 + 17) % DEPLOYMENTS;
                let obj = router.get(&target, &format!("app-{i:05}")).await.unwrap();
                assert!(obj.metadata.name.is_some());
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let start = Instant::now();
    for worker in workers {
        worker.await.unwrap();
    }
    let gets = done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64();
    println!("BENCH cached_gets_per_second={gets:.0}");
    let m = router.metrics().snapshot();
    println!("BENCH router_cache_hits={}", m.cache_hits);
    println!("BENCH router_fallbacks={}", m.fallbacks_total());
    println!("BENCH router_ryw_waits={}", m.ryw_waits);
    cluster.shutdown();
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}
