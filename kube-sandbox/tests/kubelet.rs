//! The simulated scheduler, kubelet and node lifecycle.

#![allow(clippy::unwrap_used)]

mod common;

use common::eventually;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, LogParams, PostParams};
use kube_sandbox::{Cluster, ClusterOptions, SimNode};
use serde_json::json;
use std::time::Duration;

fn fast() -> ClusterOptions {
    ClusterOptions {
        pod_start_delay: Duration::from_millis(50),
        node_lease_renew: Duration::from_millis(200),
        node_monitor_grace: Duration::from_secs(2),
        ..Default::default()
    }
}

fn pod(name: &str, spec: serde_json::Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

async fn phase_of(pods: &Api<Pod>, name: &str) -> (Option<String>, Option<String>) {
    let p = pods.get(name).await.unwrap();
    (
        p.spec.and_then(|s| s.node_name),
        p.status.and_then(|s| s.phase),
    )
}

#[tokio::test]
async fn pods_are_scheduled_where_they_fit_and_run() {
    let cluster = Cluster::with_options("sim", fast());
    cluster
        .add_node(&SimNode::new("small", "1", "1Gi").label("zone", "a"))
        .unwrap();
    cluster
        .add_node(
            &SimNode::new("tainted", "8", "16Gi")
                .label("zone", "b")
                .taint("dedicated", "gpu", "NoSchedule"),
        )
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let container = json!([{"name": "app", "image": "busybox:1", "command": ["sh", "-c", "echo ready"],
        "resources": {"requests": {"cpu": "2"}}}]);
    // Too big for `small`, not tolerating `tainted`: stays Pending.
    pods.create(
        &PostParams::default(),
        &pod("big", json!({"containers": container})),
    )
    .await
    .unwrap();
    // Tolerates the taint: lands on `tainted` and runs.
    pods.create(&PostParams::default(), &pod("tolerant", json!({"containers": container,
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]})))
        .await
        .unwrap();
    // Pinned by selector to zone a.
    pods.create(
        &PostParams::default(),
        &pod(
            "pinned",
            json!({"nodeSelector": {"zone": "a"},
        "containers": [{"name": "app", "image": "busybox:1"}]}),
        ),
    )
    .await
    .unwrap();
    let p = pods.clone();
    eventually("tolerant and pinned running", || {
        let p = p.clone();
        async move {
            phase_of(&p, "tolerant").await == (Some("tainted".into()), Some("Running".into()))
                && phase_of(&p, "pinned").await == (Some("small".into()), Some("Running".into()))
        }
    })
    .await;
    assert_eq!(phase_of(&pods, "big").await, (None, Some("Pending".into())));
    let running = pods.get("tolerant").await.unwrap();
    let status = running.status.unwrap();
    assert!(status.pod_ip.is_some_and(|ip| ip.starts_with("10.244.")));
    assert!(status.container_statuses.unwrap()[0].ready);
    // A container given a command prints what the command prints, nothing more; one running
    // its image's entrypoint gets a line saying what started (the image's own output is
    // unknown here).
    let logs = pods.logs("tolerant", &LogParams::default()).await.unwrap();
    assert_eq!(logs, "ready\n");
    let logs = pods.logs("pinned", &LogParams::default()).await.unwrap();
    assert_eq!(
        logs,
        "container app started from image busybox:1 on node small\n"
    );
    let tail = pods
        .logs(
            "tolerant",
            &LogParams {
                tail_lines: Some(1),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(tail.trim(), "ready");
}

#[tokio::test]
async fn deleted_pods_terminate_then_disappear() {
    let cluster = Cluster::with_options("sim-delete", fast());
    cluster.add_node(&SimNode::new("n1", "4", "8Gi")).unwrap();
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    pods.create(
        &PostParams::default(),
        &pod("p", json!({"containers": [{"name": "c", "image": "x:1"}]})),
    )
    .await
    .unwrap();
    let p = pods.clone();
    eventually("running", || {
        let p = p.clone();
        async move { phase_of(&p, "p").await.1.as_deref() == Some("Running") }
    })
    .await;
    pods.delete("p", &DeleteParams::default()).await.unwrap();
    // Graceful: still there with a deletionTimestamp right after the delete.
    if let Some(still) = pods.get_opt("p").await.unwrap() {
        assert!(still.metadata.deletion_timestamp.is_some());
    }
    let p = pods.clone();
    eventually("pod gone", || {
        let p = p.clone();
        async move { p.get_opt("p").await.unwrap().is_none() }
    })
    .await;
}

#[tokio::test]
async fn a_node_whose_lease_stops_turns_unknown_and_recovers() {
    let cluster = Cluster::with_options("sim-lease", fast());
    cluster.add_node(&SimNode::new("n1", "4", "8Gi")).unwrap();
    let leases: Api<Lease> = Api::namespaced(cluster.client(), "kube-node-lease");
    let nodes: Api<Node> = Api::all(cluster.client());
    let first = leases.get("n1").await.unwrap().spec.unwrap().renew_time;
    let l = leases.clone();
    eventually("lease renewed", || {
        let l = l.clone();
        let first = first.clone();
        async move { l.get("n1").await.unwrap().spec.unwrap().renew_time != first }
    })
    .await;
    let ready = |n: Node| {
        n.status
            .and_then(|s| s.conditions)
            .and_then(|c| c.into_iter().find(|c| c.type_ == "Ready"))
            .map(|c| c.status)
    };
    cluster.stop_node("n1");
    let n = nodes.clone();
    eventually("Ready=Unknown", || {
        let n = n.clone();
        async move { ready(n.get("n1").await.unwrap()).as_deref() == Some("Unknown") }
    })
    .await;
    let tainted = nodes
        .get("n1")
        .await
        .unwrap()
        .spec
        .unwrap()
        .taints
        .unwrap_or_default();
    assert!(
        tainted
            .iter()
            .any(|t| t.key == "node.kubernetes.io/unreachable")
    );
    cluster.start_node("n1");
    let n = nodes.clone();
    eventually("Ready=True again", || {
        let n = n.clone();
        async move { ready(n.get("n1").await.unwrap()).as_deref() == Some("True") }
    })
    .await;
}

#[tokio::test]
async fn a_binding_is_one_write_with_the_node_and_the_scheduled_condition() {
    use futures::{StreamExt, TryStreamExt};
    use kube::api::WatchParams;
    use kube::core::WatchEvent;
    // No nodes: the simulated scheduler leaves the pod alone; the binding comes from us.
    let cluster = Cluster::with_options("bind", fast());
    let client = cluster.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let created = pods
        .create(
            &PostParams::default(),
            &pod(
                "p",
                json!({"containers": [{"name": "c", "image": "busybox:1"}]}),
            ),
        )
        .await
        .unwrap();
    let rv = created.metadata.resource_version.clone().unwrap();
    let mut events = pods
        .watch(&WatchParams::default().fields("metadata.name=p"), &rv)
        .await
        .unwrap()
        .boxed();
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}});
    let request = http::Request::post("/api/v1/namespaces/default/pods/p/binding")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&binding).unwrap())
        .unwrap();
    client.request_text(request).await.unwrap();
    let first = tokio::time::timeout(Duration::from_secs(10), events.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let WatchEvent::Modified(bound) = first else {
        panic!("expected the binding's MODIFIED event, got {first:?}");
    };
    assert_eq!(
        bound.spec.as_ref().and_then(|s| s.node_name.as_deref()),
        Some("n1")
    );
    let scheduled = bound
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "PodScheduled")
        .map(|c| c.status);
    assert_eq!(scheduled.as_deref(), Some("True"), "in the same write");
    // A second binding is refused: the pod is already assigned.
    let again = http::Request::post("/api/v1/namespaces/default/pods/p/binding")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&binding).unwrap())
        .unwrap();
    assert!(client.request_text(again).await.is_err());
}

#[tokio::test]
async fn annotated_pods_end_with_the_exit_code_of_their_command() {
    let cluster = Cluster::with_options("sim", fast());
    cluster.add_node(&SimNode::new("n1", "4", "8Gi")).unwrap();
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let ending = |name: &str, policy: &str, script: &str| {
        serde_json::from_value::<Pod>(json!({
            "metadata": {"name": name, "annotations": {"sandbox.kube/run-seconds": "0.1"}},
            "spec": {"restartPolicy": policy, "containers": [
                {"name": "main", "image": "busybox", "command": ["sh", "-c", script]}]}
        }))
        .unwrap()
    };
    // restartPolicy Always: the annotation does not end it. It runs before the others start,
    // so its 0.1 s are over when theirs are.
    pods.create(
        &PostParams::default(),
        &ending("server", "Always", "exit 1"),
    )
    .await
    .unwrap();
    let p = pods.clone();
    eventually("server running", || {
        let p = p.clone();
        async move { phase_of(&p, "server").await.1.as_deref() == Some("Running") }
    })
    .await;
    for pod in [
        ending("ok", "Never", "echo done"),
        ending("broken", "OnFailure", "echo failing; exit 2"),
    ] {
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    let p = pods.clone();
    eventually("both ending pods finished", || {
        let p = p.clone();
        async move {
            phase_of(&p, "ok").await.1.as_deref() == Some("Succeeded")
                && phase_of(&p, "broken").await.1.as_deref() == Some("Failed")
        }
    })
    .await;
    for (name, code, reason) in [("ok", 0, "Completed"), ("broken", 2, "Error")] {
        let status = pods.get(name).await.unwrap().status.unwrap();
        let container = &status.container_statuses.unwrap()[0];
        let terminated = container.state.clone().unwrap().terminated.unwrap();
        assert_eq!(
            (terminated.exit_code, terminated.reason.as_deref()),
            (code, Some(reason)),
            "{name}"
        );
        assert!(!container.ready);
        let ready = status
            .conditions
            .unwrap()
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_deref()),
            ("False", Some("PodCompleted"))
        );
    }
    // Its run time has passed too, and it still runs.
    assert_eq!(
        phase_of(&pods, "server").await.1.as_deref(),
        Some("Running")
    );
}
