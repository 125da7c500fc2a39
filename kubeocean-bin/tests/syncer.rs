//! `kubeocean syncer` as a process against sandbox clusters served over loopback: the
//! binary wires the library (flags, clients, admin server) and syncs a virtual node.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Node, Secret};
use kube::Api;
use kube::api::PostParams;
use kube_sandbox::testing::install_crds;
use kube_sandbox::{Cluster, ServeOptions, SimNode};
use kubeocean_core::crd::{self, ClusterBinding, ResourceLeasingPolicy};
use serde_json::json;

/// Kills the child process on drop (by its own handle).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn syncer_process_creates_virtual_nodes() {
    let computing = Cluster::new("computing");
    let worker = Cluster::new("worker");
    let dir = std::env::temp_dir().join(format!("kubeocean-syncer-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("computing.yaml");
    let served_computing = computing
        .serve(ServeOptions {
            kubeconfig_path: Some(kubeconfig.clone()),
            ..ServeOptions::default()
        })
        .await
        .unwrap();
    let served_worker = worker.serve(ServeOptions::default()).await.unwrap();
    let (c, w) = (computing.client(), worker.client());
    install_crds(&c, crd::crds()).await;
    install_crds(&w, crd::crds()).await;
    worker.add_node(&SimNode::new("n1", "4", "8Gi")).unwrap();
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("kc".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "kubeconfig".to_owned(),
            ByteString(served_worker.kubeconfig_yaml.clone().into_bytes()),
        )])),
        ..Default::default()
    };
    Api::<Secret>::namespaced(c.clone(), "default")
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let binding: ClusterBinding = serde_json::from_value(json!({
        "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ClusterBinding",
        "metadata": { "name": "b1" },
        "spec": { "clusterID": "c1", "secretRef": { "name": "kc", "namespace": "default" } },
    }))
    .unwrap();
    Api::<ClusterBinding>::all(c.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let policy: ResourceLeasingPolicy = serde_json::from_value(json!({
        "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
        "metadata": { "name": "all" },
        "spec": { "cluster": "b1", "resourceLimits": [{ "resource": "cpu", "quantity": "3" }] },
    }))
    .unwrap();
    Api::<ResourceLeasingPolicy>::all(w.clone())
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();

    let child = Command::new(env!("CARGO_BIN_EXE_kubeocean"))
        .args(["syncer", "--cluster-binding", "b1", "--kubeconfig"])
        .arg(&kubeconfig)
        .args([
            "--metrics-addr",
            "127.0.0.1:0",
            "--probe-addr",
            "127.0.0.1:0",
            "--lease-renew-interval",
            "1s",
            "--proxier-address",
            "10.1.2.3",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _running = Running(child);

    let nodes: Api<Node> = Api::all(c.clone());
    let mut found = None;
    for _ in 0..400 {
        if let Some(node) = nodes.get_opt("vnode-c1-n1").await.unwrap() {
            found = Some(node);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let node = found.expect("the syncer process created vnode-c1-n1");
    let status = node.status.unwrap();
    assert_eq!(status.allocatable.unwrap()["cpu"].0, "3");
    assert_eq!(status.addresses.unwrap()[0].address, "10.1.2.3");
    served_computing.stop();
    served_worker.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
