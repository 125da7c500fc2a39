//! What the scale benches share: the Deployments a Helm chart installs (with status) spread
//! over namespaces, filling a sandbox with them, a client from a served sandbox's URL and
//! token, the child process's wait for its parent, and the figures (resident memory,
//! percentiles in milliseconds). Each bench includes it with `mod support;`.
#![allow(dead_code)]

use std::io::BufRead as _;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;

/// The namespaces the Deployments are spread over.
pub const NAMESPACES: usize = 50;

/// `apps/v1` Deployments.
pub fn deployments() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps", "v1", "Deployment"),
        "deployments",
    )
}

/// The namespace of the `i`th Deployment.
pub fn namespace_of(i: usize) -> String {
    format!("team-{:02}", i % NAMESPACES)
}

/// The name of the `i`th Deployment.
pub fn deployment_name(i: usize) -> String {
    format!("svc-{i:05}")
}

/// The `i`th Deployment, as a Helm chart installs it (about 5 KB with its status).
pub fn deployment(i: usize) -> serde_json::Value {
    let name = deployment_name(i);
    let ns = namespace_of(i);
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": name, "namespace": ns,
            "labels": {
                "app.kubernetes.io/name": name, "app.kubernetes.io/instance": "shop",
                "app.kubernetes.io/part-of": "shop", "app.kubernetes.io/managed-by": "Helm",
                "team": ns, "tier": "backend"
            },
            "annotations": {
                "deployment.kubernetes.io/revision": "3",
                "meta.helm.sh/release-name": "shop", "meta.helm.sh/release-namespace": ns,
                "example.com/owner": "platform@example.com"
            }
        },
        "spec": {
            "replicas": 3, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": "shop"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {
                    "labels": {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": "shop", "team": ns},
                    "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"}
                },
                "spec": {
                    "containers": [{
                        "name": "app",
                        "image": format!("registry.example.com/shop/{name}:v1.4.2"),
                        "imagePullPolicy": "IfNotPresent",
                        "args": ["--listen=:8080", "--metrics=:9090"],
                        "ports": [
                            {"name": "http", "containerPort": 8080, "protocol": "TCP"},
                            {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}
                        ],
                        "env": [
                            {"name": "LOG_LEVEL", "value": "info"},
                            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
                        ],
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "128Mi"},
                            "limits": {"cpu": "500m", "memory": "256Mi"}
                        },
                        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 10},
                        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 10}
                    }],
                    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst", "serviceAccountName": "shop"
                }
            }
        }
    })
}

/// The status of a rolled-out Deployment of [`deployment`].
pub fn deployment_status() -> serde_json::Value {
    json!({"status": {
        "observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
        "availableReplicas": 3,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability.",
             "lastUpdateTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
             "message": "ReplicaSet has successfully progressed.",
             "lastUpdateTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ]
    }})
}

/// Creates the namespaces and `count` Deployments (each with its status) through `client`,
/// eight at a time.
pub async fn fill_deployments(client: &kube::Client, count: usize) {
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
                api.patch_status(
                    &deployment_name(i),
                    &PatchParams::default(),
                    &Patch::Merge(deployment_status()),
                )
                .await
                .unwrap();
            }
        })
        .buffer_unordered(8)
        .collect::<Vec<()>>()
        .await;
}

/// A client of the served sandbox `name` at `url`, through the kubeconfig the sandbox writes.
pub async fn client_of(name: &str, url: &str, token: &str) -> kube::Client {
    let yaml = kube_sandbox::serve::kubeconfig_yaml(name, url, None, token);
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// Whether an instance client asks the instance for gzip (`Accept-Encoding: gzip`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceGzip {
    /// As the API server's instance clients ask: `kairship-bin` builds kube-rs without its
    /// `gzip` feature, so they send no `Accept-Encoding` and instances answer uncompressed.
    AsTheApiServer,
    /// As client-go asks by default: answers over 128 KiB come gzipped.
    Asked,
}

/// A client of the served sandbox `name` at `url` as the API server builds its instance
/// clients (kube-kit's options for clients relaying users' requests), asking for gzip as `gzip`
/// says. The benches' kube-rs has the `gzip` feature (a dev-dependency of the tests), which
/// would otherwise make every client ask for it.
pub async fn instance_client_of(
    name: &str,
    url: &str,
    token: &str,
    gzip: InstanceGzip,
) -> kube::Client {
    let yaml = kube_sandbox::serve::kubeconfig_yaml(name, url, None, token);
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    config.disable_compression = gzip == InstanceGzip::AsTheApiServer;
    let options = kube_kit::client::ClientOptions::new("kairship-bench").relaying_users();
    kube_kit::client::client_from_config(config, &options, name).unwrap()
}

/// Waits until `stdin` closes: a child process's parent is done with it.
pub async fn until_stdin_closes() {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        while std::io::stdin().lock().read_line(&mut line).unwrap_or(0) > 0 {
            line.clear();
        }
    })
    .await
    .unwrap();
}

/// Resident memory of this process (`VmRSS`), in bytes.
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Bytes in MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1048576.0
}

/// The `p`th percentile (nearest rank) of `sorted`; zero when there are no samples.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A duration in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Serves `app` on `listener` as the API server accepts connections (`server.rs`): with
/// `TCP_NODELAY`, so the chunks of a streamed list are not held back by Nagle's algorithm
/// waiting for the client's delayed ACK.
pub async fn serve_without_delay(listener: tokio::net::TcpListener, app: axum::Router) {
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let _ = axum::serve(listener, app).await;
}
