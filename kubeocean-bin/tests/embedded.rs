//! `kubeocean manager --embedded` run with the flags docs/kubeocean/install.md gives for a
//! manager outside a cluster, against a computing sandbox cluster and a worker sandbox
//! cluster served over HTTPS: `kubectl logs` of a mapped pod goes computing API server ->
//! the virtual node's kubelet endpoint (the embedded proxier, which must accept the API
//! server's kubelet-client certificate) -> the worker. No client CA flag is given: the
//! proxier takes the CA kube-apiserver publishes in kube-system/extension-apiserver-authentication.

#![allow(clippy::unwrap_used)]

use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Api;
use kube::api::{LogParams, PostParams};
use kube_sandbox::testing::process::Background;
use kube_sandbox::{Cluster, ServeOptions, SimNode};
use kubeocean_core::crd::{
    ClusterBinding, DEFAULT_POD_PREEMPTION_POLICY, DEFAULT_POD_PRIORITY_CLASS_NAME,
    DEFAULT_POD_PRIORITY_VALUE, ResourceLeasingPolicy,
};
use kubeocean_core::setup::{WorkerRegistration, install_crds, register_worker};
use serde_json::json;

const SYSTEM_NAMESPACE: &str = "kubeocean-system";
const MOUNT_NAMESPACE: &str = "kubeocean-workloads";

/// Polls `check` every 200 ms for up to `seconds`; panics naming `what` if it never holds.
async fn within<F, Fut>(seconds: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..seconds * 5 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("timed out after {seconds} s waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_through_the_api_server_in_embedded_mode_with_the_documented_flags() {
    kube_kit::client::install_crypto_provider();
    let dir = std::env::temp_dir().join(format!("kubeocean-embedded-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let computing = Cluster::new("computing");
    let c = computing.client();
    install_crds(&c).await.unwrap();
    Api::<Namespace>::all(c.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": SYSTEM_NAMESPACE}})).unwrap(),
        )
        .await
        .unwrap();
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
    Api::<Namespace>::all(w.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": MOUNT_NAMESPACE}})).unwrap(),
        )
        .await
        .unwrap();
    // As the kubeocean-worker chart creates it.
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
            binding: "worker-1",
            cluster_id: "w1",
            secret_namespace: SYSTEM_NAMESPACE,
            mount_namespace: MOUNT_NAMESPACE,
            kubeconfig: &worker_served.kubeconfig_yaml,
        },
    )
    .await
    .unwrap();

    // install.md, "Outside a cluster": the same flags, a free range of ports and free admin
    // ports so that tests can run side by side.
    let ports = kube_sandbox::ports::free_port_run(10, std::process::id()).unwrap();
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
        &format!("--embedded-proxier-ports={}-{}", ports.start(), ports.end()),
        "--metrics-addr=127.0.0.1:0",
        "--probe-addr=127.0.0.1:0",
    ]);
    let manager = Background::spawn(command);

    let binding_state = || async {
        let binding = Api::<ClusterBinding>::all(c.clone()).get("worker-1").await;
        format!("{:?}", binding.map(|b| b.status))
    };
    let ready = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let phase = Api::<ClusterBinding>::all(c.clone())
                .get("worker-1")
                .await
                .ok()
                .and_then(|b| b.status)
                .and_then(|s| s.phase);
            if phase.is_some_and(|p| format!("{p:?}") == "Ready") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(
        ready.is_ok(),
        "the binding Ready: {}",
        binding_state().await
    );
    within(1, "the binding Ready", || async {
        Api::<ClusterBinding>::all(c.clone())
            .get("worker-1")
            .await
            .ok()
            .and_then(|b| b.status)
            .and_then(|s| s.phase)
            .is_some_and(|p| format!("{p:?}") == "Ready")
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(c.clone(), "default");
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "demo"},
            "spec": {"tolerations": [{"key": "kubeocean.io/vnode", "operator": "Exists"}],
                     "containers": [{"name": "app", "image": "nginx"}]}}))
        .unwrap(),
    )
    .await
    .unwrap();
    within(60, "the pod Running", || async {
        pods.get("demo")
            .await
            .ok()
            .and_then(|p| p.status)
            .and_then(|s| s.phase)
            .as_deref()
            == Some("Running")
    })
    .await;
    // The API server presents its kubelet-client certificate to the virtual node's endpoint.
    let logs = pods.logs("demo", &LogParams::default()).await;
    assert!(
        logs.as_ref().is_ok_and(|text| !text.trim().is_empty()),
        "{logs:?}"
    );
    drop(manager);
    computing_served.stop();
    worker_served.stop();
    computing.shutdown();
    worker.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}
