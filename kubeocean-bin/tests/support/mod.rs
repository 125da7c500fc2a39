//! Shared by the tests of `kubeocean manager --embedded`: a computing and a worker sandbox
//! cluster served over HTTPS, the worker registered as a `ClusterBinding`, and the manager
//! running as a child process ([`start`]), all stopped however the test ends.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::PostParams;
use kube::{Api, Client};
use kube_sandbox::testing::process::Background;
use kube_sandbox::{Cluster, ServeOptions, Served, SimNode};
use kubeocean_core::crd::{
    DEFAULT_POD_PREEMPTION_POLICY, DEFAULT_POD_PRIORITY_CLASS_NAME, DEFAULT_POD_PRIORITY_VALUE,
    ResourceLeasingPolicy,
};
use kubeocean_core::setup::{WorkerRegistration, install_crds, register_worker};
use serde_json::json;

/// Where the manager runs and keeps the workers' kubeconfigs.
pub const SYSTEM_NAMESPACE: &str = "kubeocean-system";
/// The worker's namespace for the computing cluster's pods.
pub const MOUNT_NAMESPACE: &str = "kubeocean-workloads";
/// The worker's `ClusterBinding`.
pub const BINDING: &str = "worker-1";

/// Polls `check` every 200 ms for up to `seconds`; panics naming `what` if it never holds.
pub async fn eventually<T, F, Fut>(seconds: u64, what: &str, mut check: F) -> T
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
pub struct Env {
    pub computing: Cluster,
    pub worker: Cluster,
    served: Vec<Served>,
    /// A client of the computing cluster.
    pub c: Client,
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

pub async fn create_namespace(client: &Client, name: &str) {
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
        )
        .await
        .unwrap();
}

/// Starts the clusters and `kubeocean manager --embedded` with the flags
/// docs/kubeocean/install.md gives for a manager outside a cluster ("Outside a cluster"), a
/// free range of proxier ports and free admin ports (so tests run side by side), and `flags`
/// added; `test` names the temporary directory.
pub async fn start(test: &str, flags: &[&str]) -> Env {
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
