//! How soon a followed log line reaches a client through Kairship: a member cluster's
//! simulated container writes a line every 20 ms while a client follows the pod's log
//! (`pods/log?follow=true`) through Kairship's native proxy and Karmada's cluster proxy of the
//! instance (`…/instances/i1/proxy/apis/cluster.karmada.io/v1alpha1/clusters/east/proxy/…`),
//! over real HTTP between three servers (the member, the instance, Kairship). The delay of a
//! line is its arrival at the client minus the moment the member wrote it (same process, same
//! clock).
//!
//! Prints `BENCH console_log_delay_p50_ms=…`, `BENCH console_log_delay_p99_ms=…` and
//! `BENCH console_log_delay_max_ms=…`. `cargo bench -p kairship-core --bench log_stream`;
//! `KAIRSHIP_BENCH_LOG_LINES` (default 500) changes the number of lines.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use base64::Engine as _;
use kairship_core::access::{AccessError, AllowAll, Authenticator, Caller};
use kairship_core::karmada_sim::cluster_proxy::with_cluster_proxy;
use kairship_core::proxy::{ProxyState, proxy_routes};
use kairship_core::router::{
    DirectBackend, EmbeddedCacheBackend, InstanceWriter, ReadWriteRouter, SplitRouter,
    StaticInstanceClients,
};
use kube_sandbox::{ClusterOptions, ServeOptions, SimNode, UserInfo};
use serde_json::{Value, json};

struct Admin;

#[async_trait]
impl Authenticator for Admin {
    async fn authenticate(&self, token: &str) -> Result<Caller, AccessError> {
        match token {
            "admin" => Ok(Caller::new("admin", vec![])),
            _ => Err(AccessError::Unauthenticated("unknown token".into())),
        }
    }
}

async fn send(client: &kube::Client, path: &str, body: Value) {
    let request = http::Request::post(path)
        .header("content-type", "application/json")
        .body(body.to_string().into_bytes())
        .unwrap();
    client.request_text(request).await.unwrap();
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

async fn grant(client: &kube::Client, user: &str, rules: Value) {
    send(
        client,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        json!({"metadata": {"name": user}, "rules": rules}),
    )
    .await;
    send(client, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json!({
        "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]
    }))
    .await;
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[at]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    kube_kit::client::install_crypto_provider();
    let lines: usize = std::env::var("KAIRSHIP_BENCH_LOG_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);

    // The member: one node, the pod, Karmada's impersonator, and `admin` allowed everything.
    let member = kube_sandbox::Cluster::with_options("east", ClusterOptions::default());
    member
        .add_node(&SimNode::new("east-n1", "4", "8Gi"))
        .unwrap();
    let impersonator = "system:serviceaccount:karmada-cluster:karmada-impersonator";
    member
        .auth()
        .add_token("impersonator-token", UserInfo::new(impersonator, &[]));
    let mc = member.client();
    send(&mc, "/apis/rbac.authorization.k8s.io/v1/clusterroles", json!({
        "metadata": {"name": "impersonator"},
        "rules": [{"apiGroups": [""], "resources": ["users", "groups"], "verbs": ["impersonate"]}]
    }))
    .await;
    send(&mc, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json!({
        "metadata": {"name": "impersonator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonator"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": impersonator}]
    }))
    .await;
    grant(
        &mc,
        "admin",
        json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
    )
    .await;
    send(
        &mc,
        "/api/v1/namespaces",
        json!({"metadata": {"name": "demo"}}),
    )
    .await;
    send(
        &mc,
        "/api/v1/namespaces/demo/pods",
        json!({
            "metadata": {"name": "writer", "namespace": "demo"},
            "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]}
        }),
    )
    .await;
    let member_served = member.serve(ServeOptions::default()).await.unwrap();

    // The instance: Karmada's cluster proxy, the Cluster and its Secrets.
    let instance =
        kube_sandbox::Cluster::with_options("i1", with_cluster_proxy(ClusterOptions::default()));
    let ic = instance.client();
    kube_sandbox::testing::install_crds(
        &ic,
        vec![serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "clusters.cluster.karmada.io"},
            "spec": {"group": "cluster.karmada.io", "scope": "Cluster",
                "names": {"plural": "clusters", "singular": "cluster", "kind": "Cluster"},
                "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
        }))
        .unwrap()],
    )
    .await;
    send(
        &ic,
        "/api/v1/namespaces",
        json!({"metadata": {"name": "karmada-cluster"}}),
    )
    .await;
    grant(&ic, "admin", json!([{"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/proxy"], "verbs": ["*"]}])).await;
    for (name, data) in [
        (
            "east",
            json!({"caBundle": b64(member_served.cluster_ca_pem())}),
        ),
        (
            "east-impersonator",
            json!({"token": b64("impersonator-token")}),
        ),
    ] {
        send(
            &ic,
            "/api/v1/namespaces/karmada-cluster/secrets",
            json!({"metadata": {"name": name}, "data": data}),
        )
        .await;
    }
    send(&ic, "/apis/cluster.karmada.io/v1alpha1/clusters", json!({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": "east"},
        "spec": {"syncMode": "Push", "apiEndpoint": member_served.url,
            "secretRef": {"namespace": "karmada-cluster", "name": "east"},
            "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": "east-impersonator"}}
    }))
    .await;
    let instance_served = instance.serve(ServeOptions::default()).await.unwrap();
    let instance_client = kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(
            instance_served.kubeconfig().unwrap(),
            &Default::default(),
        )
        .await
        .unwrap(),
    )
    .unwrap();

    // Kairship's native proxy.
    let clients = Arc::new(StaticInstanceClients::new().with("i1", instance_client));
    let router: Arc<dyn ReadWriteRouter> = Arc::new(SplitRouter::new(
        Arc::new(EmbeddedCacheBackend::new(clients.clone())),
        Arc::new(DirectBackend::new(clients.clone())),
        Arc::new(InstanceWriter::new(clients.clone())),
    ));
    let proxy = proxy_routes(ProxyState::new(
        router,
        clients,
        Arc::new(Admin),
        Arc::new(AllowAll),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, proxy).await });

    // Wait for the pod to run, then follow its log through Kairship.
    let deadline = Instant::now() + Duration::from_secs(60);
    while member.kubelet().printed("demo", "writer", "app").is_none() {
        assert!(Instant::now() < deadline, "the pod did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = format!(
        "{base}/apis/kairship.io/v1alpha1/instances/i1/proxy/apis/cluster.karmada.io/v1alpha1/clusters/east/proxy/api/v1/namespaces/demo/pods/writer/log?follow=true&tailLines=0"
    );
    let response = reqwest::Client::new()
        .get(&url)
        .bearer_auth("admin")
        .send()
        .await
        .unwrap();
    assert!(
        response.status().is_success(),
        "{}",
        response.text().await.unwrap()
    );
    let (arrived_tx, mut arrived) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant)>();
    tokio::spawn(async move {
        let mut response = response;
        let mut pending = String::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            let now = Instant::now();
            pending.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = pending.find('\n') {
                let line: String = pending.drain(..=end).collect();
                if let Some(n) = line
                    .trim()
                    .strip_prefix("line-")
                    .and_then(|n| n.parse().ok())
                {
                    let _ = arrived_tx.send((n, now));
                }
            }
        }
    });
    // The stream is open once the first line written arrives.
    let mut written = Vec::with_capacity(lines);
    let warmup = Instant::now();
    loop {
        member
            .kubelet()
            .append_log("demo", "writer", "app", "line-0");
        if tokio::time::timeout(Duration::from_millis(200), arrived.recv())
            .await
            .is_ok()
        {
            break;
        }
        assert!(
            warmup.elapsed() < Duration::from_secs(30),
            "the log stream never opened"
        );
    }
    for n in 1..=lines {
        written.push(Instant::now());
        member
            .kubelet()
            .append_log("demo", "writer", "app", &format!("line-{n}"));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut delays = Vec::with_capacity(lines);
    while delays.len() < lines {
        let (n, at) = tokio::time::timeout(Duration::from_secs(10), arrived.recv())
            .await
            .expect("a line did not arrive")
            .unwrap();
        if n == 0 {
            continue;
        }
        delays.push(at.duration_since(written[n - 1]).as_secs_f64() * 1000.0);
    }
    delays.sort_by(f64::total_cmp);
    println!("BENCH console_log_delay_lines={lines}");
    println!(
        "BENCH console_log_delay_p50_ms={:.2}",
        percentile(&delays, 0.5)
    );
    println!(
        "BENCH console_log_delay_p99_ms={:.2}",
        percentile(&delays, 0.99)
    );
    println!(
        "BENCH console_log_delay_max_ms={:.2}",
        percentile(&delays, 1.0)
    );
}
