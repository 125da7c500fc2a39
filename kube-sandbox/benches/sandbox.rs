//! Throughput and latency of the sandbox over loopback HTTP.
//!
//! `cargo bench -p kube-sandbox` prints `BENCH <name>=<value>` lines:
//! - pod_creates_per_sec: pods created by 32 concurrent clients over HTTP (target >= 3,000);
//! - configmap_creates_per_sec_json / configmap_creates_per_sec_protobuf: ConfigMaps created
//!   by 32 concurrent clients over HTTP with JSON bodies, then with Kubernetes protobuf bodies
//!   (as kubectl sends them; the answers are JSON in both);
//! - list_10k_pods_p50_ms / list_10k_pods_p99_ms: a full LIST of 10,000 pods, body read
//!   (target p99 <= 100 ms);
//! - watch_100x1000_lost_events: events missed by 100 watchers over 1,000 writes (target 0),
//!   and watch_100x1000_ms: time until every watcher has seen every event.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kube_sandbox::{Cluster, ClusterOptions, ServeOptions};
use serde_json::json;
use std::time::{Duration, Instant};

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "bench", "tier": "web"}},
        "spec": {"containers": [{"name": "app", "image": "registry.example/app:1.0",
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
            "env": [{"name": "MODE", "value": "bench"}]}]}
    }))
    .expect("pod")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

async fn pod_creates(client: &kube::Client) -> f64 {
    const TOTAL: usize = 6_000;
    const WORKERS: usize = 32;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..WORKERS {
        let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
        tasks.push(tokio::spawn(async move {
            for i in (w..TOTAL).step_by(WORKERS) {
                pods.create(&PostParams::default(), &pod(&format!("create-{i}")))
                    .await
                    .expect("create");
            }
        }));
    }
    for t in tasks {
        t.await.expect("worker");
    }
    TOTAL as f64 / start.elapsed().as_secs_f64()
}

fn configmap(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "bench", "tier": "web"}},
        "data": {"mode": "bench", "config.yaml": "replicas: 3\nimage: registry.example/app:1.0\n"}})
}

async fn configmap_creates(client: &kube::Client, protobuf: bool) -> f64 {
    const TOTAL: usize = 6_000;
    const WORKERS: usize = 32;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..WORKERS {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            for i in (w..TOTAL).step_by(WORKERS) {
                let (content_type, body) = if protobuf {
                    let value = configmap(&format!("cm-protobuf-{i}"));
                    let body = kube_sandbox::protobuf::encode_object(&value)
                        .expect("encode")
                        .expect("a built-in kind");
                    (kube_sandbox::protobuf::MEDIA_TYPE, body.to_vec())
                } else {
                    let value = configmap(&format!("cm-json-{i}"));
                    (
                        "application/json",
                        serde_json::to_vec(&value).expect("json"),
                    )
                };
                let req = http::Request::builder()
                    .method("POST")
                    .uri("/api/v1/namespaces/default/configmaps")
                    .header("content-type", content_type)
                    .header(
                        "accept",
                        "application/vnd.kubernetes.protobuf, application/json",
                    )
                    .body(kube::client::Body::from(body))
                    .expect("request");
                let resp = client.send(req).await.expect("create");
                assert_eq!(resp.status(), 201);
                http_body_util::BodyExt::collect(resp.into_body())
                    .await
                    .expect("body");
            }
        }));
    }
    for t in tasks {
        t.await.expect("worker");
    }
    TOTAL as f64 / start.elapsed().as_secs_f64()
}

async fn list_latency(cluster: &Cluster, client: &kube::Client) -> (f64, f64) {
    let state = cluster.state();
    let rt = state.resource_type("", "pods").expect("pods");
    let ns_rt = state.resource_type("", "namespaces").expect("namespaces");
    let ctx = kube_sandbox::api::WriteContext::system("bench");
    state
        .create(
            &ns_rt,
            "v1",
            "",
            json!({"metadata": {"name": "bench"}}),
            &ctx,
        )
        .expect("namespace");
    for i in 0..10_000 {
        let body = serde_json::to_value(pod(&format!("list-{i:05}"))).expect("json");
        state
            .create(&rt, "v1", "bench", body, &ctx)
            .expect("create");
    }
    let mut samples = Vec::new();
    for round in 0..40 {
        let req = http::Request::get("/api/v1/namespaces/bench/pods")
            .body(Vec::new())
            .expect("request");
        let start = Instant::now();
        let text = client.request_text(req).await.expect("list");
        let took = start.elapsed().as_secs_f64() * 1000.0;
        assert!(text.len() > 1_000_000);
        if round >= 5 {
            samples.push(took);
        }
    }
    samples.sort_by(f64::total_cmp);
    (percentile(&samples, 0.5), percentile(&samples, 0.99))
}

async fn watch_fanout(client: &kube::Client) -> (usize, f64) {
    const WATCHERS: usize = 100;
    const WRITES: usize = 1_000;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv = cms
        .list(&Default::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("rv");
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let stream = cms
            .watch(&WatchParams::default().timeout(120), &rv)
            .await
            .expect("watch");
        watchers.push(tokio::spawn(async move {
            let mut seen = 0usize;
            let mut stream = stream.boxed();
            while seen < WRITES {
                match tokio::time::timeout(Duration::from_secs(60), stream.try_next()).await {
                    Ok(Ok(Some(WatchEvent::Added(_)))) => seen += 1,
                    Ok(Ok(Some(_))) => {}
                    _ => break,
                }
            }
            seen
        }));
    }
    let start = Instant::now();
    for i in 0..WRITES {
        let cm: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": format!("w-{i}")}, "data": {"i": i.to_string()}}),
        )
        .expect("cm");
        cms.create(&PostParams::default(), &cm)
            .await
            .expect("create");
    }
    let mut lost = 0;
    for w in watchers {
        lost += WRITES - w.await.expect("watcher");
    }
    (lost, start.elapsed().as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let options = ClusterOptions {
        scheduler: false,
        kubelet: false,
        ..Default::default()
    };
    let cluster = Cluster::with_options("bench", options);
    let served = cluster.serve(ServeOptions::default()).await.expect("serve");
    let client = served.client().await.expect("client");

    let rate = pod_creates(&client).await;
    println!("BENCH pod_creates_per_sec={rate:.0}");
    let json_rate = configmap_creates(&client, false).await;
    println!("BENCH configmap_creates_per_sec_json={json_rate:.0}");
    let protobuf_rate = configmap_creates(&client, true).await;
    println!("BENCH configmap_creates_per_sec_protobuf={protobuf_rate:.0}");
    let (p50, p99) = list_latency(&cluster, &client).await;
    println!("BENCH list_10k_pods_p50_ms={p50:.1}");
    println!("BENCH list_10k_pods_p99_ms={p99:.1}");
    let (lost, took) = watch_fanout(&client).await;
    println!("BENCH watch_100x1000_lost_events={lost}");
    println!("BENCH watch_100x1000_ms={took:.0}");
    cluster.shutdown();
}
