//! `kubeocean sandbox` as a child process: its computing cluster (reached through the
//! kubeconfig it writes) shows the workers' nodes as virtual nodes sized by the policies, a
//! pod tolerating the virtual-node taint runs in a worker, its logs come back through the
//! embedded proxier, and a Deployment's replicas run on the virtual nodes of both workers.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{ListParams, LogParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use kube_kit::quantity::Quantity;
use serde_json::json;

/// The sandbox process; stopped with SIGTERM (then killed) on drop, its directory removed.
struct Sandbox {
    child: Child,
    dir: PathBuf,
    stdout: Arc<Mutex<String>>,
}

impl Sandbox {
    fn start(name: &str) -> Sandbox {
        let dir =
            std::env::temp_dir().join(format!("kubeocean-sandbox-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut child = Command::new(env!("CARGO_BIN_EXE_kubeocean"))
            .args(["sandbox", "--report-interval", "1s", "--dir"])
            .arg(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = Arc::new(Mutex::new(String::new()));
        let pipe = child.stdout.take().unwrap();
        let sink = stdout.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let mut out = sink.lock().unwrap();
                out.push_str(&line);
                out.push('\n');
            }
        });
        Sandbox { child, dir, stdout }
    }

    fn output(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    /// Sends SIGTERM and waits up to 10 s for a clean exit.
    fn stop(&mut self) -> bool {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..100 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn client(path: &Path) -> Client {
    let kubeconfig = Kubeconfig::read_from(path).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

/// Polls `check` every 100 ms for up to `seconds`; panics naming `what` if it never holds.
async fn within<F, Fut>(seconds: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..seconds * 10 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out after {seconds} s waiting for {what}");
}

fn allocatable(node: &Node, resource: &str) -> String {
    node.status.as_ref().unwrap().allocatable.as_ref().unwrap()[resource]
        .0
        .clone()
}

fn canonical(quantity: &str) -> String {
    Quantity::parse(quantity).unwrap().to_canonical_string()
}

/// A started sandbox and a client of its computing cluster.
async fn started(name: &str) -> (Sandbox, Client) {
    kube_kit::client::install_crypto_provider();
    let sandbox = Sandbox::start(name);
    within(30, "the sandbox to be up", || async {
        sandbox.output().contains("Ctrl-C to stop.")
    })
    .await;
    let c = client(&sandbox.dir.join("computing.kubeconfig")).await;
    (sandbox, c)
}

/// Creates pod `demo` tolerating the virtual-node taint and waits until it runs.
async fn run_demo_pod(c: &Client) -> Pod {
    let pods: Api<Pod> = Api::namespaced(c.clone(), "default");
    let pod = serde_json::from_value(json!({
        "metadata": {"name": "demo", "namespace": "default"},
        "spec": {"tolerations": [{"key": "kubeocean.io/vnode", "operator": "Exists"}],
                 "containers": [{"name": "app", "image": "nginx",
                                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    within(30, "the pod Running", || async {
        pods.get("demo")
            .await
            .unwrap()
            .status
            .and_then(|s| s.phase)
            .as_deref()
            == Some("Running")
    })
    .await;
    pods.get("demo").await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn sandbox_lends_worker_nodes_and_runs_a_pod() {
    let (mut sandbox, c) = started("lend").await;
    let w1 = client(&sandbox.dir.join("worker-1.kubeconfig")).await;

    // Six virtual nodes (2 workers x 3 nodes) within 30 s of start.
    let nodes: Api<Node> = Api::all(c.clone());
    let virtual_nodes = ListParams::default().labels("type=virtual-kubelet");
    within(30, "six virtual nodes", || async {
        nodes.list(&virtual_nodes).await.unwrap().items.len() == 6
    })
    .await;
    // worker-1 lends 50% of cpu and memory; its second node runs nothing.
    let physical = Api::<Node>::all(w1.clone()).get("w1-node-2").await.unwrap();
    let vnode = nodes.get("vnode-w1-w1-node-2").await.unwrap();
    for resource in ["cpu", "memory"] {
        let half = Quantity::parse(&allocatable(&physical, resource))
            .unwrap()
            .percent(50)
            .to_canonical_string();
        assert_eq!(
            canonical(&allocatable(&vnode, resource)),
            half,
            "{resource}"
        );
    }
    // As upstream: the proxier's IP and the virtual node's own name as its Hostname.
    let addresses: Vec<(String, String)> = vnode
        .status
        .clone()
        .unwrap()
        .addresses
        .unwrap_or_default()
        .into_iter()
        .map(|a| (a.type_, a.address))
        .collect();
    assert_eq!(
        addresses,
        [
            ("InternalIP".to_owned(), "127.0.0.1".to_owned()),
            ("Hostname".to_owned(), "vnode-w1-w1-node-2".to_owned())
        ]
    );
    let labels = vnode.metadata.labels.unwrap();
    assert_eq!(labels["kubeocean.io/cluster-binding"], "worker-1");

    // A pod that tolerates the virtual-node taint runs in a worker.
    let running = run_demo_pod(&c).await;
    let node = running.spec.unwrap().node_name.unwrap();
    assert!(node.starts_with("vnode-"), "{node}");
    let annotations = running.metadata.annotations.unwrap();
    assert_eq!(
        annotations["kubeocean.io/physical-pod-namespace"],
        "kubeocean-workloads"
    );
    within(10, "the pod in the report", || async {
        let out = sandbox.output();
        out.lines()
            .any(|l| l.contains("default/demo") && l.contains("Running"))
    })
    .await;

    assert!(sandbox.stop(), "the sandbox exits cleanly on SIGTERM");
    assert!(sandbox.output().contains("stopping"));
}

#[tokio::test(flavor = "multi_thread")]
async fn sandbox_serves_pod_logs_through_the_proxier() {
    let (_sandbox, c) = started("logs").await;
    run_demo_pod(&c).await;
    // Computing API server -> the virtual node's kubelet endpoint (the embedded proxier) ->
    // the worker's API server -> the simulated kubelet.
    let pods: Api<Pod> = Api::namespaced(c.clone(), "default");
    within(15, "the pod's logs", || async {
        pods.logs("demo", &LogParams::default())
            .await
            .is_ok_and(|text| !text.trim().is_empty())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sandbox_spreads_a_deployment_over_both_workers() {
    let (_sandbox, c) = started("deploy").await;
    let nodes: Api<Node> = Api::all(c.clone());
    let virtual_nodes = ListParams::default().labels("type=virtual-kubelet");
    within(30, "six virtual nodes", || async {
        nodes.list(&virtual_nodes).await.unwrap().items.len() == 6
    })
    .await;
    // The Deployment the sandbox prints.
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"tolerations": [{"key": "kubeocean.io/vnode", "operator": "Exists"}],
                    "containers": [{"name": "web", "image": "nginx"}]}}}
    }))
    .unwrap();
    let deployments: Api<Deployment> = Api::namespaced(c.clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    // Rolled out as `kubectl rollout status` decides it: every replica updated and available.
    within(60, "the rollout", || async {
        let status = deployments
            .get("web")
            .await
            .unwrap()
            .status
            .unwrap_or_default();
        status.updated_replicas == Some(6) && status.available_replicas == Some(6)
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(c.clone(), "default");
    let running = pods
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap()
        .items;
    assert_eq!(running.len(), 6);
    let mut bindings: Vec<String> = Vec::new();
    for pod in &running {
        let node = pod.spec.as_ref().unwrap().node_name.clone().unwrap();
        let labels = nodes.get(&node).await.unwrap().metadata.labels.unwrap();
        bindings.push(labels["kubeocean.io/cluster-binding"].clone());
    }
    bindings.sort();
    bindings.dedup();
    assert_eq!(bindings, ["worker-1", "worker-2"]);
}

/// `kubectl logs` of a pod as soon as it is Running answers, twenty times in a row: a virtual
/// node publishes a kubelet port only once it answers.
#[tokio::test(flavor = "multi_thread")]
async fn logs_answer_as_soon_as_a_pod_runs() {
    let (_sandbox, c) = started("logs-at-once").await;
    let pods: Api<Pod> = Api::namespaced(c.clone(), "default");
    for i in 0..20 {
        let name = format!("at-once-{i}");
        let pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"tolerations": [{"key": "kubeocean.io/vnode", "operator": "Exists"}],
                     "containers": [{"name": "app", "image": "nginx",
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]},
        }))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
        within(60, &format!("{name} Running"), || async {
            pods.get(&name)
                .await
                .unwrap()
                .status
                .and_then(|s| s.phase)
                .as_deref()
                == Some("Running")
        })
        .await;
        let logs = pods.logs(&name, &LogParams::default()).await;
        assert!(
            logs.as_ref().is_ok_and(|text| !text.trim().is_empty()),
            "logs of {name} right after Running: {logs:?}"
        );
    }
}

/// The demo's computing cluster has the DNS and API server Services the syncer reads, so a
/// mapped pod gets the computing cluster's DNS, hostAliases and `KUBERNETES_SERVICE_HOST`.
#[tokio::test(flavor = "multi_thread")]
async fn mapped_pods_get_the_computing_clusters_dns_and_api_server() {
    use k8s_openapi::api::core::v1::Service;
    let (sandbox, c) = started("dns").await;
    let dns = Api::<Service>::namespaced(c.clone(), "kube-system")
        .get("kube-dns-intranet")
        .await
        .unwrap();
    let api = Api::<Service>::namespaced(c.clone(), "default")
        .get("kubernetes-intranet")
        .await
        .unwrap();
    let dns_ip = dns.spec.unwrap().cluster_ip.unwrap();
    let api_ip = api.spec.unwrap().cluster_ip.unwrap();

    let running = run_demo_pod(&c).await;
    let annotations = running.metadata.annotations.unwrap();
    let node = running.spec.unwrap().node_name.unwrap();
    let worker = if node.starts_with("vnode-w1-") {
        "worker-1"
    } else {
        "worker-2"
    };
    let w = client(&sandbox.dir.join(format!("{worker}.kubeconfig"))).await;
    let physical = Api::<Pod>::namespaced(w, &annotations["kubeocean.io/physical-pod-namespace"])
        .get(&annotations["kubeocean.io/physical-pod-name"])
        .await
        .unwrap();
    let spec = physical.spec.unwrap();
    assert_eq!(spec.dns_policy.as_deref(), Some("None"));
    assert_eq!(
        spec.dns_config.unwrap().nameservers.unwrap_or_default(),
        [dns_ip]
    );
    let aliases = spec.host_aliases.unwrap_or_default();
    assert!(
        aliases.iter().any(|a| a.ip == api_ip
            && a.hostnames
                .iter()
                .flatten()
                .any(|h| h == "kubernetes.default.svc")),
        "{aliases:?}"
    );
    let env = spec.containers[0].env.clone().unwrap_or_default();
    let host = env
        .iter()
        .find(|e| e.name == "KUBERNETES_SERVICE_HOST")
        .and_then(|e| e.value.clone());
    assert_eq!(host.as_deref(), Some(api_ip.as_str()));
}
