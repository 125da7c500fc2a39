//! Pod lifecycle through the syncer, against two sandbox clusters served over loopback HTTP:
//! an ephemeral container added to a virtual pod (`kubectl debug`) reaches its physical pod
//! through the `ephemeralcontainers` subresource and its status comes back; readiness gates
//! of the virtual pod hold its Ready until their conditions are True; what virtual pods
//! request shows in upstream's per-node gauge.

#![allow(clippy::unwrap_used)]

mod common;

use common::{eventually, from_json};

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kube_sandbox::SimNode;
use kubeocean_core::naming::physical_name;
use kubeocean_core::syncer::{Syncer, SyncerConfig, SyncerMetrics};
use serde_json::json;

const BINDING: &str = "worker-1";
const MOUNT: &str = "kubeocean-worker";
const NS: &str = "default";

async fn env() -> (common::ServedPair, kube_kit::admin::Metrics) {
    let pair = common::served_pair("pod-lifecycle-test").await;
    pair.worker
        .add_node(&SimNode::new("n1", "8", "16Gi"))
        .unwrap();
    pair.bind_worker(BINDING, "w1", MOUNT).await;
    let mut config = SyncerConfig::new(BINDING);
    config.secret_namespace = "kubeocean-system".into();
    config.client_options = config.client_options.with_rate_limit(0.0, 0);
    config.connect_retry_interval = Duration::from_millis(200);
    config.retry_interval = Duration::from_millis(100);
    config.max_retry_interval = Duration::from_secs(1);
    config.probe_timeout = Duration::from_secs(1);
    let registry = kube_kit::admin::Metrics::new();
    config.metrics = Some(SyncerMetrics::register(&registry));
    tokio::spawn(Syncer::new(pair.c.clone(), config).run(pair.sandboxes.token().clone()));
    let nodes: Api<Node> = Api::all(pair.c.clone());
    eventually("vnode-w1-n1", || async {
        nodes.get_opt("vnode-w1-n1").await.unwrap().is_some()
    })
    .await;
    (pair, registry)
}

fn ready(pod: &Pod) -> Option<(String, Option<String>)> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| (c.status.clone(), c.reason.clone()))
}

#[tokio::test]
async fn an_ephemeral_container_reaches_the_physical_pod_and_its_status_comes_back() {
    let (env, metrics) = env().await;
    let vpods: Api<Pod> = Api::namespaced(env.c.clone(), NS);
    let ppods: Api<Pod> = Api::namespaced(env.w.clone(), MOUNT);
    let pod: Pod = from_json(json!({
        "metadata": { "name": "web", "namespace": NS },
        "spec": { "nodeName": "vnode-w1-n1", "automountServiceAccountToken": false,
                  "containers": [{ "name": "app", "image": "nginx:1",
                      "resources": { "requests": { "cpu": "250m", "memory": "64Mi" } } }] },
    }));
    vpods.create(&PostParams::default(), &pod).await.unwrap();
    eventually("web Running", || async {
        vpods.get("web").await.unwrap().status.and_then(|s| s.phase) == Some("Running".into())
    })
    .await;
    // Upstream's per-node gauge of what virtual pods request (cpu in millicores).
    eventually("the virtual usage of vnode-w1-n1", || async {
        let text = metrics.encode().unwrap();
        text.contains("kubeocean_syncer_vnode_virtual_usage{clusterbinding=\"worker-1\",node=\"vnode-w1-n1\",resource=\"cpu\"} 250.0")
            && text.contains("kubeocean_syncer_cluster_virtual_usage{clusterbinding=\"worker-1\",resource=\"memory\"} 64.0")
    })
    .await;

    // What `kubectl debug -it web --image=busybox --target=app` sends.
    let debug = json!({ "spec": { "ephemeralContainers": [{
        "name": "debugger", "image": "busybox:1", "targetContainerName": "app",
        "stdin": true, "tty": true }] } });
    vpods
        .patch_ephemeral_containers("web", &PatchParams::default(), &Patch::Merge(&debug))
        .await
        .unwrap();

    let physical = physical_name(NS, "web");
    eventually("the debugger on the physical pod", || async {
        ppods
            .get(&physical)
            .await
            .unwrap()
            .spec
            .and_then(|s| s.ephemeral_containers)
            .is_some_and(|e| e.iter().any(|c| c.name == "debugger"))
    })
    .await;
    let p = ppods.get_ephemeral_containers(&physical).await.unwrap();
    let added = &p.spec.unwrap().ephemeral_containers.unwrap()[0];
    assert_eq!(added.image.as_deref(), Some("busybox:1"));
    assert_eq!(added.target_container_name.as_deref(), Some("app"));
    eventually("the debugger's status on the virtual pod", || async {
        vpods
            .get("web")
            .await
            .unwrap()
            .status
            .and_then(|s| s.ephemeral_container_statuses)
            .is_some_and(|s| {
                s.iter().any(|c| {
                    c.name == "debugger" && c.state.as_ref().is_some_and(|st| st.running.is_some())
                })
            })
    })
    .await;

    // Existing ephemeral containers cannot be changed, as kube-apiserver answers.
    let changed = json!({ "spec": { "ephemeralContainers": [{
        "name": "debugger", "image": "alpine:3", "targetContainerName": "app" }] } });
    let err = vpods
        .patch_ephemeral_containers("web", &PatchParams::default(), &Patch::Merge(&changed))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422),
        "{err}"
    );
    // A second debugger is appended on both sides.
    let two = json!({ "spec": { "ephemeralContainers": [
        { "name": "debugger", "image": "busybox:1", "targetContainerName": "app", "stdin": true, "tty": true },
        { "name": "debugger-2", "image": "busybox:1" }] } });
    vpods
        .patch_ephemeral_containers("web", &PatchParams::default(), &Patch::Merge(&two))
        .await
        .unwrap();
    eventually("both debuggers on the physical pod", || async {
        let names: Vec<String> = ppods
            .get(&physical)
            .await
            .unwrap()
            .spec
            .and_then(|s| s.ephemeral_containers)
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.name)
            .collect();
        names == ["debugger", "debugger-2"]
    })
    .await;
}

#[tokio::test]
async fn readiness_gates_of_the_virtual_pod_hold_its_ready() {
    let (env, _metrics) = env().await;
    let vpods: Api<Pod> = Api::namespaced(env.c.clone(), NS);
    let pod: Pod = from_json(json!({
        "metadata": { "name": "gated", "namespace": NS },
        "spec": { "nodeName": "vnode-w1-n1", "automountServiceAccountToken": false,
                  "readinessGates": [{ "conditionType": "example.com/lb-ready" }],
                  "containers": [{ "name": "app", "image": "nginx:1" }] },
    }));
    vpods.create(&PostParams::default(), &pod).await.unwrap();
    eventually("gated Running but not Ready", || async {
        let p = vpods.get("gated").await.unwrap();
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
            && ready(&p) == Some(("False".into(), Some("ReadinessGatesNotReady".into())))
    })
    .await;
    // The load balancer controller of the computing cluster sets its condition.
    let mut p = vpods.get_status("gated").await.unwrap();
    p.status
        .as_mut()
        .unwrap()
        .conditions
        .as_mut()
        .unwrap()
        .push(from_json(
            json!({ "type": "example.com/lb-ready", "status": "True" }),
        ));
    vpods
        .replace_status("gated", &PostParams::default(), &p)
        .await
        .unwrap();
    eventually("gated Ready", || async {
        let p = vpods.get("gated").await.unwrap();
        ready(&p).is_some_and(|(status, _)| status == "True")
    })
    .await;
}
