//! The keys upstream Kubeocean writes and others select on, written by our syncer against two
//! sandbox clusters served over loopback HTTP (whose API servers validate labels as
//! kube-apiserver does): physical pods carry `kubeocean.io/virtual-namespace`,
//! `kubeocean.io/workload-type` and `kubeocean.io/workload-name` (worker quotas, monitoring
//! and chargeback select on them); a virtual node carries `kubeocean.io/physical-node-innerip`
//! (upstream's proxier reads it), `kubeocean.io/prometheus-url` and
//! `kubeocean.io/policies-applied`; token Secrets carry `kubeocean.io/service-account-token`.

#![allow(clippy::unwrap_used)]

mod common;

use common::{eventually, from_json};

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, Secret, ServiceAccount};
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt};
use kube_sandbox::SimNode;
use kubeocean_core::naming::physical_name;
use kubeocean_core::syncer::{ProxierEndpoint, Syncer, SyncerConfig};
use serde_json::{Value, json};

const BINDING: &str = "worker-1";
const MOUNT: &str = "kubeocean-worker";
const NS: &str = "shop";
const VNODE: &str = "vnode-w1-n1";

/// A virtual pod on the virtual node, owned by `owner` (`kind`, `name`) when given.
fn pod(name: &str, owner: Option<(&str, &str)>, labels: Value) -> Pod {
    let mut meta = json!({ "name": name, "namespace": NS, "labels": labels });
    if let Some((kind, owner_name)) = owner {
        meta["ownerReferences"] = json!([{ "apiVersion": "apps/v1", "kind": kind,
            "name": owner_name, "uid": format!("uid-{owner_name}"), "controller": true }]);
    }
    from_json(json!({
        "metadata": meta,
        "spec": { "nodeName": VNODE,
            "tolerations": [{ "key": "kubeocean.io/vnode", "operator": "Exists" }],
            "volumes": [{ "name": "token", "projected": { "sources": [
                { "serviceAccountToken": { "path": "token", "expirationSeconds": 3600 } }] } }],
            "containers": [{ "name": "app", "image": "nginx" }] },
    }))
}

#[tokio::test]
async fn physical_pods_carry_the_workload_labels_and_the_virtual_node_upstreams_keys() {
    let pair = common::served_pair("upstream-keys-test").await;
    pair.worker
        .add_node(&SimNode::new("n1", "8", "16Gi"))
        .unwrap();
    pair.bind_worker(BINDING, "w1", MOUNT).await;
    kube_sandbox::testing::create_namespace(&pair.c, NS).await;
    Api::<ServiceAccount>::namespaced(pair.c.clone(), NS)
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "default" } })),
        )
        .await
        .unwrap();
    let mut config = SyncerConfig::new(BINDING);
    config.secret_namespace = "kubeocean-system".into();
    config.client_options = config.client_options.with_rate_limit(0.0, 0);
    config.connect_retry_interval = Duration::from_millis(200);
    config.retry_interval = Duration::from_millis(100);
    config.max_retry_interval = Duration::from_secs(1);
    config.probe_timeout = Duration::from_secs(1);
    config.proxier = ProxierEndpoint {
        address: Some("10.8.0.5".into()),
        ..ProxierEndpoint::default()
    };
    tokio::spawn(Syncer::new(pair.c.clone(), config).run(pair.sandboxes.token().clone()));

    // The virtual node: the physical node's InternalIP, where its metrics are scraped, the
    // policy applied (`physical_node_controller.go` `buildVirtualNodeLabels` /
    // `buildVirtualNodeAnnotations`).
    let physical_ip = Api::<Node>::all(pair.w.clone())
        .get("n1")
        .await
        .unwrap()
        .status
        .unwrap()
        .addresses
        .unwrap()
        .into_iter()
        .find(|a| a.type_ == "InternalIP")
        .unwrap()
        .address;
    let nodes: Api<Node> = Api::all(pair.c.clone());
    eventually("the virtual node with upstream's keys", || async {
        nodes
            .get_opt(VNODE)
            .await
            .unwrap()
            .is_some_and(|n| n.annotations().contains_key("kubeocean.io/prometheus-url"))
    })
    .await;
    let vnode = nodes.get(VNODE).await.unwrap();
    assert_eq!(
        vnode.labels().get("kubeocean.io/physical-node-innerip"),
        Some(&physical_ip)
    );
    assert_eq!(
        vnode.annotations()["kubeocean.io/prometheus-url"],
        format!("10.8.0.5:9006/{VNODE}")
    );
    assert_eq!(vnode.annotations()["kubeocean.io/policies-applied"], "all");

    // Pods of a Deployment (through its ReplicaSet), a StatefulSet, and no workload.
    let vpods: Api<Pod> = Api::namespaced(pair.c.clone(), NS);
    for p in [
        pod(
            "web-7d9f8c6b5-x2x4q",
            Some(("ReplicaSet", "web-7d9f8c6b5")),
            json!({ "app": "web", "pod-template-hash": "7d9f8c6b5" }),
        ),
        pod("db-0", Some(("StatefulSet", "db")), json!({ "app": "db" })),
        pod("lonely", None, json!({})),
    ] {
        vpods.create(&PostParams::default(), &p).await.unwrap();
    }
    let physical: Api<Pod> = Api::namespaced(pair.w.clone(), MOUNT);
    // (virtual pod, workload-type, workload-name)
    let cases = [
        ("web-7d9f8c6b5-x2x4q", "deployment", Some("web")),
        ("db-0", "statefulset", Some("db")),
        ("lonely", "pod", None),
    ];
    for (name, workload_type, workload_name) in cases {
        let physical_name = physical_name(NS, name);
        eventually("the physical pod", || async {
            physical.get_opt(&physical_name).await.unwrap().is_some()
        })
        .await;
        let p = physical.get(&physical_name).await.unwrap();
        let labels = p.labels();
        assert_eq!(labels["kubeocean.io/virtual-namespace"], NS, "{name}");
        assert_eq!(
            labels["kubeocean.io/workload-type"], workload_type,
            "{name}"
        );
        assert_eq!(
            labels.get("kubeocean.io/workload-name").map(String::as_str),
            workload_name,
            "{name}"
        );
        assert_eq!(labels["kubeocean.io/managed-by"], "kubeocean");
    }
    // What worker quotas and chargeback select on.
    let of_web = physical
        .list(&ListParams::default().labels(
            "kubeocean.io/workload-type=deployment,kubeocean.io/workload-name=web,kubeocean.io/virtual-namespace=shop",
        ))
        .await
        .unwrap();
    assert_eq!(of_web.items.len(), 1);
    // The token Secrets of the mapped pods carry upstream's label.
    let tokens = Api::<Secret>::namespaced(pair.w.clone(), MOUNT)
        .list(&ListParams::default().labels("kubeocean.io/service-account-token=true"))
        .await
        .unwrap();
    assert_eq!(tokens.items.len(), cases.len());
}
