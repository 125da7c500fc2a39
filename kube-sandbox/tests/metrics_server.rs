//! The metrics-server model (`ClusterOptions::metrics_server`): `metrics.k8s.io/v1beta1` is
//! discovered and served only when it runs, and its NodeMetrics and PodMetrics are the rates
//! of what each node's kubelet reports, read through the node proxy.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use kube_kit::quantity::Quantity;
use kube_sandbox::{Cluster, ClusterOptions, MetricsServerOptions, SimNode};
use serde_json::{Value, json};

const AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
/// Nanocores two readings of one steady rate may differ by (cumulative CPU goes through
/// decimal seconds and a float on its way).
const CPU_ROUNDING_NANOCORES: i128 = 1_000;

fn with_metrics_server() -> Cluster {
    Cluster::with_options(
        "metrics",
        ClusterOptions {
            pod_start_delay: Duration::from_millis(20),
            metrics_server: Some(MetricsServerOptions {
                metric_resolution: Duration::from_millis(300),
                kubelet_request_timeout: Duration::from_secs(5),
            }),
            ..ClusterOptions::default()
        },
    )
}

/// `GET path` with `accept`: status and body (JSON, or the text when it is not).
async fn get(client: &kube::Client, path: &str, accept: &str) -> (u16, Value) {
    let request = http::Request::get(path)
        .header("accept", accept)
        .body(kube::client::Body::empty())
        .unwrap();
    let response = client.send(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, body)
}

async fn get_json(client: &kube::Client, path: &str) -> (u16, Value) {
    get(client, path, "application/json").await
}

/// Polls `check` every 100 ms for up to 30 s.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..300 {
        if let Some(found) = check().await {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

fn group_names(list: &Value) -> Vec<String> {
    list["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn metrics_k8s_io_is_discovered_only_while_the_metrics_server_runs() {
    let plain = Cluster::new("plain");
    let client = plain.client();
    let (_, groups) = get_json(&client, "/apis").await;
    assert!(!group_names(&groups).contains(&"metrics.k8s.io".to_owned()));
    let (code, body) = get_json(&client, "/apis/metrics.k8s.io/v1beta1/nodes").await;
    assert_eq!((code, body), (404, json!("404 page not found\n")));

    let cluster = with_metrics_server();
    let client = cluster.client();
    let (_, groups) = get_json(&client, "/apis").await;
    // metrics-server's APIService priority (100) lists it after every other group.
    assert_eq!(
        group_names(&groups).last().map(String::as_str),
        Some("metrics.k8s.io")
    );
    let (code, resources) = get_json(&client, "/apis/metrics.k8s.io/v1beta1").await;
    assert_eq!(code, 200);
    assert_eq!(
        resources["resources"],
        json!([
            {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"]},
            {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]}
        ])
    );
    let (_, aggregated) = get(&client, "/apis", AGGREGATED).await;
    let group = aggregated["items"].as_array().unwrap().last().unwrap();
    assert_eq!(group["metadata"]["name"], "metrics.k8s.io");
    assert_eq!(group["versions"][0]["version"], "v1beta1");
    // Its APIService, as metrics-server's manifests create it.
    let service = eventually("the APIService", || async {
        let (code, service) = get_json(
            &client,
            "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io",
        )
        .await;
        (code == 200).then_some(service)
    })
    .await;
    assert_eq!(service["spec"]["groupPriorityMinimum"], 100);
    assert_eq!(service["status"]["conditions"][0]["type"], "Available");
    // Read-only, no watch: 405 as for any verb a resource does not serve.
    let (code, _) = get_json(&client, "/apis/metrics.k8s.io/v1beta1/nodes?watch=true").await;
    assert_eq!(code, 405);
}

fn nanocores(usage: &Value) -> i128 {
    Quantity::parse(usage["cpu"].as_str().unwrap())
        .unwrap()
        .nano_value()
}

fn bytes(usage: &Value) -> i128 {
    Quantity::parse(usage["memory"].as_str().unwrap())
        .unwrap()
        .value()
}

/// The kubelet's `/stats/summary` of `node` through the node proxy.
async fn summary(client: &kube::Client, node: &str) -> Value {
    let (code, summary) =
        get_json(client, &format!("/api/v1/nodes/{node}/proxy/stats/summary")).await;
    assert_eq!(code, 200, "{summary}");
    summary
}

fn reported(stats: &Value) -> (i128, i128) {
    (
        i128::from(stats["cpu"]["usageNanoCores"].as_u64().unwrap()),
        i128::from(stats["memory"]["workingSetBytes"].as_u64().unwrap()),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_and_pod_metrics_are_the_rates_the_kubelets_report() {
    let cluster = with_metrics_server();
    let client = cluster.client();
    cluster
        .add_node(&SimNode::new("n1", "4", "8Gi").label("pool", "a"))
        .unwrap();
    cluster
        .add_node(&SimNode::new("n2", "4", "8Gi").label("pool", "b"))
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    for (name, node, cpu, memory) in [
        ("big", "n1", "1500m", "1Gi"),
        ("small", "n2", "100m", "100Mi"),
    ] {
        let pod = json!({"metadata": {"name": name, "labels": {"size": name}},
            "spec": {"nodeName": node, "containers": [
                {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": cpu, "memory": memory}}},
                {"name": "side", "image": "side:1"}]}});
        pods.create(
            &PostParams::default(),
            &serde_json::from_value(pod).unwrap(),
        )
        .await
        .unwrap();
    }
    // Once two scrapes since the pods started are stored (a window spanning a start shows
    // the usage in between), each node's figures are what its kubelet reports.
    let nodes = eventually(
        "NodeMetrics of both nodes as their kubelets report",
        || async {
            let (_, list) = get_json(&client, "/apis/metrics.k8s.io/v1beta1/nodes").await;
            if list["items"].as_array()?.len() != 2 {
                return None;
            }
            for (i, node) in ["n1", "n2"].into_iter().enumerate() {
                let usage = &list["items"][i]["usage"];
                let (cpu, memory) = reported(&summary(&client, node).await["node"]);
                if (nanocores(usage) - cpu).abs() > CPU_ROUNDING_NANOCORES || bytes(usage) != memory
                {
                    return None;
                }
            }
            Some(list)
        },
    )
    .await;
    assert_eq!(nodes["kind"], "NodeMetricsList");
    assert_eq!(nodes["metadata"], json!({}));
    for (i, node) in ["n1", "n2"].into_iter().enumerate() {
        let item = &nodes["items"][i];
        assert_eq!(item["metadata"]["name"], node);
        assert_eq!(item["metadata"]["labels"]["pool"], ["a", "b"][i]);
        assert!(item["window"].as_str().unwrap().ends_with('s'), "{item}");
    }
    assert_ne!(nodes["items"][0]["usage"], nodes["items"][1]["usage"]);

    // One node by name, by label, by field; a node that does not exist.
    let (code, n2) = get_json(&client, "/apis/metrics.k8s.io/v1beta1/nodes/n2").await;
    assert_eq!((code, n2["kind"].as_str()), (200, Some("NodeMetrics")));
    let (_, by_label) = get_json(
        &client,
        "/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=pool%3Db",
    )
    .await;
    assert_eq!(by_label["items"].as_array().unwrap().len(), 1);
    assert_eq!(by_label["items"][0]["metadata"]["name"], "n2");
    let (_, by_field) = get_json(
        &client,
        "/apis/metrics.k8s.io/v1beta1/nodes?fieldSelector=metadata.name%3Dn1",
    )
    .await;
    assert_eq!(by_field["items"][0]["metadata"]["name"], "n1");
    let (code, missing) = get_json(&client, "/apis/metrics.k8s.io/v1beta1/nodes/nope").await;
    assert_eq!(code, 404);
    assert_eq!(missing["message"], "node \"nope\" not found");
    let (code, _) = get_json(
        &client,
        "/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=%3D%3D",
    )
    .await;
    assert_eq!(code, 400);

    // Pods: every container's rate, under the pod's name and labels.
    let big = eventually("PodMetrics of big", || async {
        let (code, big) = get_json(
            &client,
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/big",
        )
        .await;
        (code == 200).then_some(big)
    })
    .await;
    assert_eq!(big["metadata"]["labels"]["size"], "big");
    let summary = summary(&client, "n1").await;
    let stats = summary["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["podRef"]["name"] == "big")
        .unwrap();
    for (i, container) in ["app", "side"].into_iter().enumerate() {
        let served = &big["containers"][i];
        assert_eq!(served["name"], container);
        let kubelet = stats["containers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == container)
            .unwrap();
        let (cpu, memory) = reported(kubelet);
        assert!((nanocores(&served["usage"]) - cpu).abs() <= CPU_ROUNDING_NANOCORES);
        assert_eq!(bytes(&served["usage"]), memory);
    }
    let (_, in_default) = eventually("both pods' metrics", || async {
        let (code, list) = get_json(
            &client,
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
        )
        .await;
        (list["items"].as_array()?.len() == 2).then_some((code, list))
    })
    .await;
    assert_eq!(in_default["kind"], "PodMetricsList");
    let (_, everywhere) = get_json(
        &client,
        "/apis/metrics.k8s.io/v1beta1/pods?labelSelector=size%3Dsmall",
    )
    .await;
    assert_eq!(everywhere["items"].as_array().unwrap().len(), 1);
    assert_eq!(everywhere["items"][0]["metadata"]["name"], "small");
    let (_, elsewhere) = get_json(
        &client,
        "/apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods",
    )
    .await;
    assert_eq!(elsewhere["items"], json!([]));
    let (code, missing) = get_json(
        &client,
        "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/nope",
    )
    .await;
    assert_eq!(
        (code, missing["message"].as_str()),
        (404, Some("pods \"nope\" not found"))
    );

    // `kubectl get nodes.metrics.k8s.io`: metrics-server's Table.
    let (_, table) = get(&client, "/apis/metrics.k8s.io/v1beta1/nodes", TABLE).await;
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Name", "cpu", "memory", "Window"]);
    assert_eq!(table["rows"][0]["cells"][0], "n1");

    // A node whose kubelet stops answering drops out, the other stays.
    cluster.stop_node("n2");
    eventually("n2 gone from the metrics", || async {
        let (_, list) = get_json(&client, "/apis/metrics.k8s.io/v1beta1/nodes").await;
        let names: Vec<&str> = list["items"]
            .as_array()?
            .iter()
            .filter_map(|n| n["metadata"]["name"].as_str())
            .collect();
        (names == ["n1"]).then_some(())
    })
    .await;
    let (code, gone) = get_json(&client, "/apis/metrics.k8s.io/v1beta1/nodes/n2").await;
    assert_eq!(code, 404);
    assert_eq!(
        gone["message"],
        "nodemetrics.metrics.k8s.io \"n2\" not found"
    );
}

/// `kube-sandbox serve --metrics-server`, as docs/sandbox.md gives it: the real kubectl's
/// `kubectl top` reads the simulated nodes' usage (skipped with a notice without kubectl).
#[test]
fn kubectl_top_against_kube_sandbox_serve_with_the_metrics_server() {
    use kube_sandbox::testing::kubectl::{Kubectl, kubectl_or_skip, table_rows};
    use kube_sandbox::testing::process::Background;
    use std::time::Instant;

    let Some(binary) =
        kubectl_or_skip("kubectl_top_against_kube_sandbox_serve_with_the_metrics_server")
    else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("metrics-serve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kube-sandbox"));
    command.args([
        "serve",
        "--tls",
        "--nodes",
        "2",
        "--metrics-server",
        // Windows longer than a second: the nanosecond metrics-server's float reading of a
        // counter may lose is then less than a nanocore, and kubectl's millicores are exact.
        "--metric-resolution-seconds",
        "1.5",
        "--kubeconfig",
    ]);
    command.arg(&kubeconfig);
    let mut server = Background::spawn(command);
    server.wait_for_line(Duration::from_secs(60), |line| {
        line.starts_with("kubeconfig written to")
    });
    let kubectl = Kubectl::new(binary, &kubeconfig);
    let resources = kubectl.ok(&["api-resources", "--api-group=metrics.k8s.io", "-o", "name"]);
    assert_eq!(
        resources.lines().collect::<Vec<_>>(),
        ["nodes.metrics.k8s.io", "pods.metrics.k8s.io"]
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let top = loop {
        let out = kubectl.run(&["top", "nodes"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // kubectl lists every Node, `<unknown>` until the first window of its metrics.
        if out.status.success() && text.lines().count() == 3 && !text.contains("<unknown>") {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "kubectl top nodes: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    let (header, rows) = table_rows(&top);
    assert_eq!(header[..2], ["NAME", "CPU(cores)"], "{top}");
    // An idle simulated node: its own 20m and 64 MiB.
    for (row, node) in rows.iter().zip(["node-1", "node-2"]) {
        assert_eq!(row[0], node, "{top}");
        assert_eq!(row[1], "20m", "{top}");
        assert_eq!(row[3], "64Mi", "{top}");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
