//! The proxier's serving certificate in embedded mode (`kubeocean manager --embedded`, the
//! flags of docs/kubeocean/install.md) against a computing sandbox cluster that signs
//! `kubernetes.io/kubelet-serving` requests as kube-controller-manager does: the manager asks
//! for and approves a certificate of the cluster's CA, so a client verifying the virtual
//! node's kubelet endpoint against that CA reads `/stats/summary`; a denied request leaves a
//! self-signed certificate and the binding's ProxierReady reason `SelfSignedCertificate`.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{Namespace, Node};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use kube_sandbox::testing::process::Background;
use kube_sandbox::{Cluster, ServeOptions, Served, SimNode};
use kubeocean_core::crd::{
    ClusterBinding, DEFAULT_POD_PREEMPTION_POLICY, DEFAULT_POD_PRIORITY_CLASS_NAME,
    DEFAULT_POD_PRIORITY_VALUE, ResourceLeasingPolicy,
};
use kubeocean_core::setup::{WorkerRegistration, install_crds, register_worker};
use serde_json::{Value, json};

const SYSTEM_NAMESPACE: &str = "kubeocean-system";
const MOUNT_NAMESPACE: &str = "kubeocean-workloads";
const BINDING: &str = "worker-1";

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
/// manager running in embedded mode with `flags` added.
struct Env {
    computing: Cluster,
    worker: Cluster,
    served: Vec<Served>,
    c: Client,
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

async fn create_namespace(client: &Client, name: &str) {
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
        )
        .await
        .unwrap();
}

async fn start(test: &str, flags: &[&str]) -> Env {
    kube_kit::client::install_crypto_provider();
    let dir = std::env::temp_dir().join(format!("kubeocean-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let computing = Cluster::new("computing");
    let c = computing.client();
    install_crds(&c).await.unwrap();
    create_namespace(&c, SYSTEM_NAMESPACE).await;
    let computing_served = computing
        .serve(ServeOptions {
            tls: true,
            kubeconfig_path: Some(dir.join("computing.kubeconfig")),
            ..ServeOptions::default()
        })
        .await
        .unwrap();

    let worker = Cluster::new("worker");
    let w = worker.client();
    install_crds(&w).await.unwrap();
    create_namespace(&w, MOUNT_NAMESPACE).await;
    Api::<PriorityClass>::all(w.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": DEFAULT_POD_PRIORITY_CLASS_NAME},
                "value": DEFAULT_POD_PRIORITY_VALUE,
                "preemptionPolicy": DEFAULT_POD_PREEMPTION_POLICY}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    worker.add_node(&SimNode::new("n1", "8", "32Gi")).unwrap();
    Api::<ResourceLeasingPolicy>::all(w.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
                "metadata": {"name": "all"}, "spec": {"cluster": "worker-1"}}))
            .unwrap(),
        )
        .await
        .unwrap();
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

    let ports = kube_sandbox::ports::free_port_run(
        10,
        std::process::id().wrapping_add(test.len() as u32 * 7919),
    )
    .unwrap();
    let kubeconfig = dir.join("computing.kubeconfig");
    let ports_flag = format!("--embedded-proxier-ports={}-{}", ports.start(), ports.end());
    let mut command = Command::new(env!("CARGO_BIN_EXE_kubeocean"));
    command.args([
        "manager",
        "--embedded",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--namespace",
        SYSTEM_NAMESPACE,
        "--leader-elect=false",
        "--embedded-proxier-listen-ip=0.0.0.0",
        "--embedded-proxier-address=127.0.0.1",
        &ports_flag,
        "--metrics-addr=127.0.0.1:0",
        "--probe-addr=127.0.0.1:0",
    ]);
    command.args(flags);
    let manager = Background::spawn(command);
    Env {
        computing,
        worker,
        served: vec![computing_served, worker_served],
        c,
        dir,
        manager: Some(manager),
    }
}

/// The binding's ProxierReady condition as (status, reason, message), once it is `True`.
async fn proxier_ready(c: &Client) -> (String, String, String) {
    eventually(90, "ProxierReady True", || async {
        let binding = Api::<ClusterBinding>::all(c.clone())
            .get(BINDING)
            .await
            .ok()?;
        let status = serde_json::to_value(binding.status?).ok()?;
        let condition = status["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "ProxierReady" && c["status"] == "True")?
            .clone();
        let text = |k: &str| condition[k].as_str().unwrap_or_default().to_owned();
        Some((text("status"), text("reason"), text("message")))
    })
    .await
}

/// The kubelet endpoint (`https://address:port`) a virtual node of the binding advertises.
async fn kubelet_endpoint(c: &Client) -> String {
    eventually(60, "a virtual node with its kubelet endpoint", || async {
        let nodes: Api<Node> = Api::all(c.clone());
        let selector = format!("kubeocean.io/cluster-binding={BINDING}");
        let list = nodes
            .list(&ListParams::default().labels(&selector))
            .await
            .ok()?;
        let status = list.items.first()?.status.clone()?;
        let port = status.daemon_endpoints?.kubelet_endpoint?.port;
        let address = status
            .addresses?
            .into_iter()
            .find(|a| a.type_ == "InternalIP")?
            .address;
        (port > 0).then(|| format!("https://{address}:{port}"))
    })
    .await
}

/// A client of `server` presenting the API server's kubelet-client certificate (as
/// kube-apiserver calls a kubelet); the server's certificate is verified against `ca_pem`,
/// or not at all.
async fn kubelet_client(computing: &Cluster, server: &str, ca_pem: Option<&str>) -> Client {
    let pki = computing.pki().unwrap();
    let identity = pki.kubelet_client_certificate();
    let mut cluster = json!({"server": server});
    match ca_pem {
        Some(ca) => cluster["certificate-authority-data"] = json!(STANDARD.encode(ca)),
        None => cluster["insecure-skip-tls-verify"] = json!(true),
    }
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "kubelet", "cluster": cluster}],
        "users": [{"name": "apiserver", "user": {
            "client-certificate-data": STANDARD.encode(&identity.cert_pem),
            "client-key-data": STANDARD.encode(&identity.key_pem)}}],
        "contexts": [{"name": "kubelet", "context": {"cluster": "kubelet", "user": "apiserver"}}],
        "current-context": "kubelet",
    });
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&kubeconfig.to_string()).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    config.default_retry = false;
    Client::try_from(config).unwrap()
}

/// `/stats/summary` of the kubelet endpoint through `client`.
async fn stats_summary(client: &Client) -> Result<Value, kube::Error> {
    let request = http::Request::get("/stats/summary")
        .body(Vec::new())
        .unwrap();
    client.request::<Value>(request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_proxier_serves_a_certificate_of_the_cluster_ca() {
    let env = start("serving-cert", &[]).await;
    let (_, reason, message) = proxier_ready(&env.c).await;
    assert_eq!(reason, "TaskRunning", "{message}");
    assert!(message.contains("signed by the cluster's CA"), "{message}");
    let endpoint = kubelet_endpoint(&env.c).await;
    let ca = env.computing.pki().unwrap().ca_pem().to_owned();

    // Verified against the computing cluster's CA for the address the node advertises.
    let verified = kubelet_client(&env.computing, &endpoint, Some(&ca)).await;
    let summary = eventually(30, "/stats/summary over a verified connection", || async {
        stats_summary(&verified).await.ok()
    })
    .await;
    assert!(summary["node"]["nodeName"].is_string(), "{summary}");

    // Another cluster's CA does not vouch for it.
    let stranger = Cluster::new("stranger");
    let other_ca = stranger.pki().unwrap().ca_pem().to_owned();
    let refused = kubelet_client(&env.computing, &endpoint, Some(&other_ca)).await;
    assert!(stats_summary(&refused).await.is_err());
    stranger.shutdown();

    // The request was decided and removed, as upstream does: none is left behind.
    let csrs: Api<CertificateSigningRequest> = Api::all(env.c.clone());
    let left = csrs
        .list(&ListParams::default().labels(&format!("kubeocean.io/cluster-binding={BINDING}")))
        .await
        .unwrap();
    assert!(left.items.is_empty(), "{:?}", left.items);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_request_leaves_a_self_signed_certificate_and_says_so() {
    let env = start(
        "serving-cert-denied",
        &[
            "--proxier-csr-approval=external",
            "--proxier-csr-timeout=90s",
        ],
    )
    .await;
    // As a cluster admin (or a policy controller) denies it.
    let csrs: Api<CertificateSigningRequest> = Api::all(env.c.clone());
    let selector = format!("kubeocean.io/cluster-binding={BINDING}");
    let pending = eventually(60, "the proxier's CertificateSigningRequest", || async {
        csrs.list(&ListParams::default().labels(&selector))
            .await
            .ok()?
            .items
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(
        pending.spec.signer_name, "kubernetes.io/kubelet-serving",
        "{pending:?}"
    );
    let mut denied = serde_json::to_value(&pending).unwrap();
    denied["status"] = json!({"conditions": [{"type": "Denied", "status": "True",
        "reason": "NotAllowed", "message": "proxiers get no kubelet certificates here"}]});
    let name = pending.metadata.name.clone().unwrap();
    csrs.replace_subresource("approval", &name, &PostParams::default(), &denied)
        .await
        .unwrap();

    let (_, reason, message) = proxier_ready(&env.c).await;
    assert_eq!(reason, "SelfSignedCertificate", "{message}");
    assert!(
        message.contains("denied") && message.contains("proxiers get no kubelet certificates here"),
        "{message}"
    );
    let endpoint = kubelet_endpoint(&env.c).await;
    let ca = env.computing.pki().unwrap().ca_pem().to_owned();
    // The fallback serves, but not with a certificate of the cluster's CA.
    let unverified = kubelet_client(&env.computing, &endpoint, None).await;
    let summary = eventually(
        30,
        "/stats/summary over an unverified connection",
        || async { stats_summary(&unverified).await.ok() },
    )
    .await;
    assert!(summary["node"]["nodeName"].is_string(), "{summary}");
    let verified = kubelet_client(&env.computing, &endpoint, Some(&ca)).await;
    assert!(stats_summary(&verified).await.is_err());
}
