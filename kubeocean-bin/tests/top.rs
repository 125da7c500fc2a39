//! `kubectl top` on virtual nodes and pods: a computing sandbox cluster running the
//! metrics-server model (`ClusterOptions::metrics_server`), a worker with two nodes of
//! different usage and `kubeocean manager --embedded` with a port per virtual node (the flags
//! of docs/kubeocean/install.md). metrics-server reaches each virtual node's `/metrics/resource`
//! through the API server's node proxy, that is the binding's proxier, which asks the worker's
//! node proxy for the physical node's. So each virtual node shows its own worker node's usage,
//! and a mapped pod its physical pod's, under the virtual names: the metrics API's figures
//! are compared with what the worker's kubelet reports in `/stats/summary`, and `kubectl top
//! node` / `kubectl top pod` (the real kubectl, skipped with a notice when missing) print
//! them.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kube_kit::quantity::Quantity;
use kube_sandbox::testing::kubectl::{Kubectl, kubectl_or_skip, table_rows};
use kube_sandbox::testing::process::Background;
use kube_sandbox::{Cluster, ClusterOptions, MetricsServerOptions, ServeOptions, Served, SimNode};
use kubeocean_core::crd::{
    DEFAULT_POD_PREEMPTION_POLICY, DEFAULT_POD_PRIORITY_CLASS_NAME, DEFAULT_POD_PRIORITY_VALUE,
    ResourceLeasingPolicy,
};
use kubeocean_core::labels;
use kubeocean_core::setup::{WorkerRegistration, install_crds, register_worker};
use serde_json::{Value, json};

const SYSTEM_NAMESPACE: &str = "kubeocean-system";
const MOUNT_NAMESPACE: &str = "kubeocean-workloads";
const BINDING: &str = "worker-1";
/// Nanocores two readings of one steady usage may differ by: the kubelet writes cumulative
/// CPU as decimal seconds, which metrics-server reads back into nanoseconds through a float.
const CPU_ROUNDING_NANOCORES: i128 = 1_000;

/// Polls `check` every 200 ms for up to `seconds`; panics naming `what` if it never holds.
async fn eventually<T, F, Fut>(seconds: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..seconds * 5 {
        if let Some(found) = check().await {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("timed out after {seconds} s waiting for {what}");
}

/// A computing and a worker cluster served over HTTPS, the worker registered, and the
/// manager running in embedded mode with a port per virtual node.
struct Env {
    computing: Cluster,
    worker: Cluster,
    served: Vec<Served>,
    c: Client,
    w: Client,
    dir: PathBuf,
    manager: Option<Background>,
}

impl Drop for Env {
    fn drop(&mut self) {
        drop(self.manager.take());
        for served in &self.served {
            served.stop();
        }
        self.computing.shutdown();
        self.worker.shutdown();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn create<K>(api: &Api<K>, object: Value)
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.create(
        &PostParams::default(),
        &serde_json::from_value(object).unwrap(),
    )
    .await
    .unwrap();
}

async fn start(test: &str) -> Env {
    kube_kit::client::install_crypto_provider();
    let dir = std::env::temp_dir().join(format!("kubeocean-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // metrics-server scrapes every second here (15 s in its manifests).
    let computing = Cluster::with_options(
        "computing",
        ClusterOptions {
            metrics_server: Some(MetricsServerOptions {
                metric_resolution: Duration::from_secs(1),
                kubelet_request_timeout: Duration::from_secs(5),
            }),
            ..ClusterOptions::default()
        },
    );
    let c = computing.client();
    install_crds(&c).await.unwrap();
    create(
        &Api::<Namespace>::all(c.clone()),
        json!({"metadata": {"name": SYSTEM_NAMESPACE}}),
    )
    .await;
    let computing_served = computing
        .serve(ServeOptions {
            tls: true,
            kubeconfig_path: Some(dir.join("computing.kubeconfig")),
            ..ServeOptions::default()
        })
        .await
        .unwrap();

    // Two worker nodes of different usage: n1 runs an online pod of the worker's own.
    let worker = Cluster::new("worker");
    let w = worker.client();
    install_crds(&w).await.unwrap();
    create(
        &Api::<Namespace>::all(w.clone()),
        json!({"metadata": {"name": MOUNT_NAMESPACE}}),
    )
    .await;
    create(
        &Api::<PriorityClass>::all(w.clone()),
        json!({"metadata": {"name": DEFAULT_POD_PRIORITY_CLASS_NAME},
               "value": DEFAULT_POD_PRIORITY_VALUE,
               "preemptionPolicy": DEFAULT_POD_PREEMPTION_POLICY}),
    )
    .await;
    for node in ["n1", "n2"] {
        worker.add_node(&SimNode::new(node, "8", "32Gi")).unwrap();
    }
    create(
        &Api::<Pod>::namespaced(w.clone(), "default"),
        json!({"metadata": {"name": "online", "namespace": "default"},
               "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "online:1",
                   "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}}),
    )
    .await;
    create(
        &Api::<ResourceLeasingPolicy>::all(w.clone()),
        json!({"apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
               "metadata": {"name": "all"}, "spec": {"cluster": BINDING}}),
    )
    .await;
    let worker_served = worker
        .serve(ServeOptions {
            tls: true,
            ..ServeOptions::default()
        })
        .await
        .unwrap();
    register_worker(
        &c,
        &WorkerRegistration {
            binding: BINDING,
            cluster_id: "w1",
            secret_namespace: SYSTEM_NAMESPACE,
            mount_namespace: MOUNT_NAMESPACE,
            kubeconfig: &worker_served.kubeconfig_yaml,
        },
    )
    .await
    .unwrap();

    // install.md, "Embedded mode": a port per virtual node (without it the virtual nodes of
    // a binding share one endpoint and its summed figures).
    let ports = kube_sandbox::ports::free_port_run(
        20,
        std::process::id().wrapping_add(test.len() as u32 * 7919),
    )
    .unwrap();
    let (first, last) = (*ports.start(), *ports.end());
    let mut command = Command::new(env!("CARGO_BIN_EXE_kubeocean"));
    command.args([
        "manager",
        "--embedded",
        "--kubeconfig",
        dir.join("computing.kubeconfig").to_str().unwrap(),
        "--namespace",
        SYSTEM_NAMESPACE,
        "--leader-elect=false",
        "--embedded-proxier-listen-ip=0.0.0.0",
        "--embedded-proxier-address=127.0.0.1",
        &format!("--embedded-proxier-ports={first}-{}", first + 9),
        &format!("--embedded-proxier-node-ports={}-{last}", first + 10),
        "--embedded-proxier-node-ports-per-binding=10",
        "--metrics-addr=127.0.0.1:0",
        "--probe-addr=127.0.0.1:0",
    ]);
    let manager = Background::spawn(command);
    Env {
        computing,
        worker,
        served: vec![computing_served, worker_served],
        c,
        w,
        dir,
        manager: Some(manager),
    }
}

/// The binding's virtual nodes by the worker node they stand for, once each is Ready and
/// advertises a kubelet port of its own.
async fn virtual_nodes(c: &Client) -> BTreeMap<String, String> {
    eventually(
        90,
        "two Ready virtual nodes with ports of their own",
        || async {
            let selector = format!("{}={BINDING}", labels::CLUSTER_BINDING);
            let nodes = Api::<Node>::all(c.clone())
                .list(&ListParams::default().labels(&selector))
                .await
                .ok()?
                .items;
            let mut by_physical = BTreeMap::new();
            let mut ports = Vec::new();
            for node in &nodes {
                let status = node.status.as_ref()?;
                let ready = status
                    .conditions
                    .iter()
                    .flatten()
                    .any(|c| c.type_ == "Ready" && c.status == "True");
                let port = status
                    .daemon_endpoints
                    .as_ref()?
                    .kubelet_endpoint
                    .as_ref()?
                    .port;
                let own = node.labels().get(labels::PROXIER_PORT) == Some(&port.to_string());
                if !ready || !own {
                    return None;
                }
                ports.push(port);
                let physical = node.labels().get(labels::PHYSICAL_NODE_NAME)?.clone();
                by_physical.insert(physical, node.name_any());
            }
            ports.sort_unstable();
            ports.dedup();
            (by_physical.len() == 2 && ports.len() == 2).then_some(by_physical)
        },
    )
    .await
}

/// `GET path` as JSON.
async fn get_json(client: &Client, path: &str) -> Option<Value> {
    let request = http::Request::get(path).body(Vec::new()).ok()?;
    client.request::<Value>(request).await.ok()
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

/// What the worker's kubelet reports for its node `node` (`/stats/summary`): the node's CPU
/// (nanocores) and working set, and each pod's containers' by `namespace/name`.
type Reported = (
    (i128, i128),
    BTreeMap<String, BTreeMap<String, (i128, i128)>>,
);

async fn kubelet_reports(w: &Client, node: &str) -> Reported {
    let summary = get_json(w, &format!("/api/v1/nodes/{node}/proxy/stats/summary"))
        .await
        .unwrap();
    let figures = |stats: &Value| {
        (
            i128::from(stats["cpu"]["usageNanoCores"].as_u64().unwrap()),
            i128::from(stats["memory"]["workingSetBytes"].as_u64().unwrap()),
        )
    };
    let pods = summary["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pod| {
            let key = format!(
                "{}/{}",
                pod["podRef"]["namespace"].as_str().unwrap(),
                pod["podRef"]["name"].as_str().unwrap()
            );
            let containers = pod["containers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| (c["name"].as_str().unwrap().to_owned(), figures(c)))
                .collect();
            (key, containers)
        })
        .collect();
    (figures(&summary["node"]), pods)
}

fn cpu_close(served: i128, reported: i128) -> bool {
    (served - reported).abs() <= CPU_ROUNDING_NANOCORES
}

/// Millicores as kubectl prints them (`520m`).
fn millicores(cell: &str) -> i128 {
    cell.strip_suffix('m').unwrap().parse().unwrap()
}

/// Served figures of each virtual node (by name) and of the mapped pod (its PodMetrics and
/// its container's reported figures), when they are what the worker's kubelet reports; else
/// what was seen.
type Compared = (BTreeMap<String, (i128, i128)>, Value, (i128, i128));

async fn compare(
    env: &Env,
    vnodes: &BTreeMap<String, String>,
    physical_pod: &str,
) -> Result<Compared, String> {
    let list = get_json(&env.c, "/apis/metrics.k8s.io/v1beta1/nodes")
        .await
        .ok_or("no NodeMetrics list")?;
    let mut served = BTreeMap::new();
    for (physical_node, vnode) in vnodes {
        let item = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["metadata"]["name"] == vnode.as_str())
            .ok_or(format!("no NodeMetrics of {vnode} in {list}"))?;
        assert_eq!(item["kind"], "NodeMetrics");
        let ((cpu, memory), _) = kubelet_reports(&env.w, physical_node).await;
        let usage = &item["usage"];
        if !cpu_close(nanocores(usage), cpu) || bytes(usage) != memory {
            return Err(format!(
                "{vnode}: {usage} served, {cpu}n and {memory} bytes reported"
            ));
        }
        served.insert(vnode.clone(), (cpu, memory));
    }
    let pod_metrics = get_json(
        &env.c,
        "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web",
    )
    .await
    .ok_or("no PodMetrics of default/web")?;
    let (_, reported_pods) = kubelet_reports(&env.w, "n2").await;
    let reported = *reported_pods
        .get(physical_pod)
        .and_then(|containers| containers.get("app"))
        .ok_or(format!("the kubelet of n2 reports no {physical_pod}"))?;
    let container = &pod_metrics["containers"][0];
    assert_eq!(container["name"], "app", "{pod_metrics}");
    if !cpu_close(nanocores(&container["usage"]), reported.0)
        || bytes(&container["usage"]) != reported.1
    {
        return Err(format!("web: {pod_metrics} served, {reported:?} reported"));
    }
    Ok((served, pod_metrics, reported))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_top_shows_each_virtual_node_and_mapped_pod_its_own_usage() {
    let env = start("top").await;
    let vnodes = virtual_nodes(&env.c).await;
    let (vnode1, vnode2) = (vnodes["n1"].clone(), vnodes["n2"].clone());

    // A virtual pod on n2's virtual node, mapped to a physical pod on n2.
    let pods: Api<Pod> = Api::namespaced(env.c.clone(), "default");
    create(
        &pods,
        json!({"metadata": {"name": "web", "labels": {"app": "web"}},
               "spec": {"nodeName": vnode2,
                        "tolerations": [{"key": labels::TAINT_VNODE, "operator": "Exists"}],
                        "containers": [{"name": "app", "image": "nginx",
                            "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}}}]}}),
    )
    .await;
    let physical = eventually(60, "the virtual pod Running and mapped", || async {
        let pod = pods.get("web").await.ok()?;
        let running = pod.status.as_ref()?.phase.as_deref() == Some("Running");
        let annotations = pod.annotations();
        let physical = format!(
            "{}/{}",
            annotations.get(labels::PHYSICAL_POD_NAMESPACE)?,
            annotations.get(labels::PHYSICAL_POD_NAME)?
        );
        running.then_some(physical)
    })
    .await;

    // metrics.k8s.io, as kubectl reads it: each virtual node serves its own worker node's
    // figures, the mapped pod its physical pod's, as the worker's kubelet reports them (once
    // two scrapes since the pod started are stored: a window spanning the start shows the
    // usage in between).
    let mut last_seen = String::new();
    let mut served = None;
    for _ in 0..300 {
        match compare(&env, &vnodes, &physical).await {
            Ok(figures) => {
                served = Some(figures);
                break;
            }
            Err(seen) => last_seen = seen,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let Some((served, pod_metrics, reported)) = served else {
        panic!("the metrics API never served the worker kubelet's figures: {last_seen}");
    };
    assert_ne!(
        served[&vnode1], served[&vnode2],
        "the two virtual nodes' usage"
    );
    assert_eq!(pod_metrics["kind"], "PodMetrics");
    assert_eq!(pod_metrics["metadata"]["labels"]["app"], "web");
    // The worker's own pods are not the computing cluster's.
    let all_pods = get_json(&env.c, "/apis/metrics.k8s.io/v1beta1/pods")
        .await
        .unwrap();
    let names: Vec<&str> = all_pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["web"], "{all_pods}");

    let Some(binary) =
        kubectl_or_skip("kubectl_top_shows_each_virtual_node_and_mapped_pod_its_own_usage")
    else {
        return;
    };
    let kubectl = Kubectl::new(binary, env.dir.join("computing.kubeconfig"));
    let selector = format!("{}={BINDING}", labels::CLUSTER_BINDING);
    let top_nodes = {
        let kubectl = kubectl.clone();
        tokio::task::spawn_blocking(move || kubectl.ok(&["top", "node", "-l", &selector]))
            .await
            .unwrap()
    };
    let (header, rows) = table_rows(&top_nodes);
    assert_eq!(
        header,
        ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"],
        "{top_nodes}"
    );
    assert_eq!(rows.len(), 2, "{top_nodes}");
    let printed: BTreeMap<String, Vec<String>> =
        rows.into_iter().map(|r| (r[0].clone(), r)).collect();
    for vnode in [&vnode1, &vnode2] {
        let row = &printed[vnode];
        let (cpu, memory) = served[vnode];
        // kubectl rounds CPU up to millicores and prints memory in whole MiB.
        let want_milli = (cpu + 999_999) / 1_000_000;
        assert!(
            (millicores(&row[1]) - want_milli).abs() <= 1,
            "{vnode}: {top_nodes}"
        );
        assert_eq!(
            row[3],
            format!("{}Mi", memory / (1024 * 1024)),
            "{top_nodes}"
        );
    }
    assert_ne!(printed[&vnode1][1], printed[&vnode2][1], "{top_nodes}");
    // install.md's check of one virtual node.
    let raw = {
        let kubectl = kubectl.clone();
        let path = format!("/apis/metrics.k8s.io/v1beta1/nodes/{vnode1}");
        tokio::task::spawn_blocking(move || kubectl.ok(&["get", "--raw", &path]))
            .await
            .unwrap()
    };
    let raw: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(raw["metadata"]["name"], vnode1.as_str(), "{raw}");
    assert_eq!(bytes(&raw["usage"]), served[&vnode1].1, "{raw}");

    let top_pod = tokio::task::spawn_blocking(move || {
        kubectl.ok(&["top", "pod", "web", "--namespace", "default"])
    })
    .await
    .unwrap();
    let (header, rows) = table_rows(&top_pod);
    assert_eq!(header, ["NAME", "CPU(cores)", "MEMORY(bytes)"], "{top_pod}");
    assert_eq!(rows.len(), 1, "{top_pod}");
    assert_eq!(rows[0][0], "web");
    let want_milli = (reported.0 + 999_999) / 1_000_000;
    assert!(
        (millicores(&rows[0][1]) - want_milli).abs() <= 1,
        "{top_pod}"
    );
    assert_eq!(
        rows[0][2],
        format!("{}Mi", reported.1 / (1024 * 1024)),
        "{top_pod}"
    );
}
