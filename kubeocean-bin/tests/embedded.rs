//! `kubeocean manager --embedded` run with the flags docs/kubeocean/install.md gives for a
//! manager outside a cluster, against a computing sandbox cluster and a worker sandbox
//! cluster served over HTTPS: `kubectl logs` of a mapped pod goes computing API server ->
//! the virtual node's kubelet endpoint (the embedded proxier, which must accept the API
//! server's kubelet-client certificate) -> the worker. No client CA flag is given: the
//! proxier takes the CA kube-apiserver publishes in kube-system/extension-apiserver-authentication.

#![allow(clippy::unwrap_used)]

mod support;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{LogParams, PostParams};
use kubeocean_core::crd::ClusterBinding;
use serde_json::json;
use support::{BINDING, eventually, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_through_the_api_server_in_embedded_mode_with_the_documented_flags() {
    let env = start("embedded", &[]).await;
    let c = &env.c;
    eventually(60, "the binding Ready", || async {
        let phase = Api::<ClusterBinding>::all(c.clone())
            .get(BINDING)
            .await
            .ok()?
            .status?
            .phase?;
        (format!("{phase:?}") == "Ready").then_some(())
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
    eventually(60, "the pod Running", || async {
        let phase = pods.get("demo").await.ok()?.status?.phase?;
        (phase == "Running").then_some(())
    })
    .await;
    // The API server presents its kubelet-client certificate to the virtual node's endpoint.
    let logs = pods.logs("demo", &LogParams::default()).await;
    assert!(
        logs.as_ref().is_ok_and(|text| !text.trim().is_empty()),
        "{logs:?}"
    );
}
