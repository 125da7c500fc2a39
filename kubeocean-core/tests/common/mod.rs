//! Helpers shared by the sandbox end-to-end tests of this crate.
#![allow(dead_code, clippy::unwrap_used)]

use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::PostParams;
use kube::{Api, Client};
use kube_sandbox::testing::Sandboxes;
use kube_sandbox::{Cluster, ServeOptions, Served};
use kubeocean_core::crd::ResourceLeasingPolicy;
use kubeocean_core::setup::{WorkerRegistration, install_crds, register_worker};
use serde_json::{Value, json};

/// Bounded waits: every 25 ms for up to 30 s, or with a suite's own limit and interval.
#[allow(unused_imports)]
pub use kube_sandbox::testing::{eventually, eventually_every};

/// Deserializes a JSON literal into a typed object.
pub fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

/// A client of a served sandbox through its kubeconfig, without client-side rate limiting.
pub async fn http_client(served: &Served, user_agent: &str, name: &str) -> Client {
    let options = kube_kit::client::ClientOptions::new(user_agent).with_rate_limit(0.0, 0);
    kube_kit::client::client_from_kubeconfig_yaml(&served.kubeconfig_yaml, None, &options, name)
        .await
        .unwrap()
}

/// A computing and a worker cluster, both served over loopback and reached through it, with
/// kubeocean's CRDs in both; shut down on drop (`sandboxes` first).
pub struct ServedPair {
    pub sandboxes: Sandboxes,
    pub computing: Cluster,
    pub worker: Cluster,
    pub served_computing: Served,
    pub served_worker: Served,
    /// Computing cluster client (over HTTP).
    pub c: Client,
    /// Worker cluster client (over HTTP).
    pub w: Client,
}

/// Two fresh clusters whose clients send `user_agent`.
pub async fn served_pair(user_agent: &str) -> ServedPair {
    let mut sandboxes = Sandboxes::new();
    let computing = sandboxes.cluster("computing");
    let worker = sandboxes.cluster("worker");
    let served_computing = computing.serve(ServeOptions::default()).await.unwrap();
    let served_worker = worker.serve(ServeOptions::default()).await.unwrap();
    let c = http_client(&served_computing, user_agent, "computing").await;
    let w = http_client(&served_worker, user_agent, "worker").await;
    install_crds(&c).await.unwrap();
    install_crds(&w).await.unwrap();
    ServedPair {
        sandboxes,
        computing,
        worker,
        served_computing,
        served_worker,
        c,
        w,
    }
}

impl ServedPair {
    /// The worker lends everything to `binding` (policy `all`), physical pods get the priority
    /// class `kubeocean-default`, and the computing cluster has the binding and its Secret.
    pub async fn bind_worker(&self, binding: &str, cluster_id: &str, mount_namespace: &str) {
        Api::<PriorityClass>::all(self.w.clone())
            .create(
                &PostParams::default(),
                &from_json(json!({ "metadata": { "name": "kubeocean-default" }, "value": 100 })),
            )
            .await
            .unwrap();
        let policy: ResourceLeasingPolicy = from_json(json!({
            "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
            "metadata": { "name": "all" }, "spec": { "cluster": binding },
        }));
        Api::<ResourceLeasingPolicy>::all(self.w.clone())
            .create(&PostParams::default(), &policy)
            .await
            .unwrap();
        register_worker(
            &self.c,
            &WorkerRegistration {
                binding,
                cluster_id,
                secret_namespace: "kubeocean-system",
                mount_namespace,
                kubeconfig: &self.served_worker.kubeconfig_yaml,
            },
        )
        .await
        .unwrap();
    }
}
