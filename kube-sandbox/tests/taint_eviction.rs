//! The taint-eviction controller and the DefaultTolerationSeconds admission plugin, as
//! kube-controller-manager and kube-apiserver run them: pods bound to a node with a
//! `NoExecute` taint they do not tolerate are deleted at once, pods tolerating it for
//! `tolerationSeconds` are deleted after that long, pods tolerating it for ever stay, and a
//! `NoSchedule` taint evicts nothing.

#![allow(clippy::unwrap_used)]

mod common;

use common::eventually;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, PostParams};
use kube_sandbox::Cluster;
use serde_json::{Value, json};
use std::time::Duration;

/// A node no simulated kubelet runs, so that deleted pods keep their deletion timestamp.
async fn node(cluster: &Cluster, name: &str, effect: &str) {
    let node: Node = serde_json::from_value(json!({"metadata": {"name": name},
        "spec": {"taints": [{"key": "maintenance", "value": "true", "effect": effect}]}}))
    .unwrap();
    Api::<Node>::all(cluster.client())
        .create(&PostParams::default(), &node)
        .await
        .unwrap();
}

async fn pod(pods: &Api<Pod>, name: &str, node: &str, tolerations: Value) {
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": name},
        "spec": {"nodeName": node, "tolerations": tolerations,
                 "containers": [{"name": "app", "image": "busybox"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
}

async fn evicted(pods: &Api<Pod>, name: &str) -> bool {
    pods.get_opt(name)
        .await
        .unwrap()
        .is_none_or(|p| p.metadata.deletion_timestamp.is_some())
}

#[tokio::test]
async fn no_execute_taints_evict_what_does_not_tolerate_them() {
    let cluster = Cluster::new("sim");
    node(&cluster, "drained", "NoExecute").await;
    node(&cluster, "cordoned", "NoSchedule").await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    pod(&pods, "intolerant", "drained", json!([])).await;
    pod(
        &pods,
        "for-ever",
        "drained",
        json!([{"key": "maintenance", "operator": "Exists"}]),
    )
    .await;
    pod(
        &pods,
        "for-a-minute",
        "drained",
        json!([{"key": "maintenance", "operator": "Equal", "value": "true",
                "effect": "NoExecute", "tolerationSeconds": 60}]),
    )
    .await;
    pod(&pods, "unbothered", "cordoned", json!([])).await;

    eventually("the intolerant pod evicted", || async {
        evicted(&pods, "intolerant").await
    })
    .await;
    let intolerant = pods.get("intolerant").await.unwrap();
    let condition = intolerant
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "DisruptionTarget")
        .unwrap();
    assert_eq!(condition.reason.as_deref(), Some("DeletionByTaintManager"));
    // The controller has looked at the node: the others are still there.
    for name in ["for-ever", "for-a-minute", "unbothered"] {
        assert!(!evicted(&pods, name).await, "{name}");
    }

    // A minute later (the controllers' clock), the pod tolerating it for a minute goes.
    cluster.advance_clock(Duration::from_secs(61));
    eventually("the pod tolerating it for a minute evicted", || async {
        evicted(&pods, "for-a-minute").await
    })
    .await;
    for name in ["for-ever", "unbothered"] {
        assert!(!evicted(&pods, name).await, "{name}");
    }
}

#[tokio::test]
async fn new_pods_tolerate_not_ready_and_unreachable_nodes_for_five_minutes() {
    let cluster = Cluster::new("sim");
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    pod(&pods, "plain", "", json!([])).await;
    pod(
        &pods,
        "own",
        "",
        json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                "effect": "NoExecute", "tolerationSeconds": 10}]),
    )
    .await;
    pod(&pods, "everything", "", json!([{"operator": "Exists"}])).await;
    let tolerations = |pod: Pod| -> Vec<Value> {
        pod.spec
            .unwrap()
            .tolerations
            .unwrap_or_default()
            .into_iter()
            .map(|t| serde_json::to_value(t).unwrap())
            .collect()
    };
    let default = |key: &str| json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300});
    assert_eq!(
        tolerations(pods.get("plain").await.unwrap()),
        [
            default("node.kubernetes.io/not-ready"),
            default("node.kubernetes.io/unreachable")
        ]
    );
    assert_eq!(
        tolerations(pods.get("own").await.unwrap()),
        [
            json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                   "effect": "NoExecute", "tolerationSeconds": 10}),
            default("node.kubernetes.io/not-ready"),
        ]
    );
    assert_eq!(
        tolerations(pods.get("everything").await.unwrap()),
        [json!({"operator": "Exists"})]
    );
}
