//! The bottom-up syncer end to end, against two sandbox clusters: a computing cluster
//! (ClusterBinding, virtual nodes, Leases) and a worker cluster served over loopback HTTP
//! (physical nodes, pods, ResourceLeasingPolicies), reached through the binding's Secret.

#![allow(clippy::unwrap_used)]

mod common;

use common::{eventually, from_json};

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::ByteString;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use k8s_openapi::api::storage::v1::CSINode;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kube_sandbox::testing::{Sandboxes, create_namespace};
use kube_sandbox::{
    Cluster, ClusterOptions, FaultAction, FaultRule, ServeOptions, Served, SimNode,
};
use kubeocean_core::crd::{self, ClusterBinding, ResourceLeasingPolicy};
use kubeocean_core::syncer::{Clock, Syncer, SyncerConfig, SyncerMetrics};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const BINDING: &str = "worker-1";
const CLUSTER_ID: &str = "w1";
const SECRET_NS: &str = "kubeocean-system";
const SECRET: &str = "worker-1-kubeconfig";
const LEASE_RENEW: Duration = Duration::from_millis(200);

struct Env {
    /// Stops the syncers and shuts the clusters down first on drop.
    _sandboxes: Sandboxes,
    worker: Cluster,
    served: Served,
    c: Client,
    w: Client,
    token: CancellationToken,
}

/// Two clusters with the CRDs, a binding named [`BINDING`] and its Secret (unless
/// `secret_data` is `None`: no Secret), nodes added by the caller.
async fn env(secret_data: Option<&str>) -> Env {
    // Virtual nodes whose Lease is not renewed for 2 s turn NotReady.
    let mut sandboxes = Sandboxes::new();
    let computing = sandboxes.cluster_with_options(
        "computing",
        ClusterOptions {
            node_monitor_grace: Duration::from_secs(2),
            ..ClusterOptions::default()
        },
    );
    let worker = sandboxes.cluster_with_options(
        "worker",
        ClusterOptions {
            node_lease_renew: Duration::from_millis(200),
            node_monitor_grace: Duration::from_secs(2),
            ..ClusterOptions::default()
        },
    );
    let served = worker.serve(ServeOptions::default()).await.unwrap();
    let c = computing.client();
    let w = worker.client();
    kubeocean_core::setup::install_crds(&c).await.unwrap();
    kubeocean_core::setup::install_crds(&w).await.unwrap();
    create_namespace(&c, SECRET_NS).await;
    if let Some(key) = secret_data {
        put_secret(&c, key, &served.kubeconfig_yaml).await;
    }
    let binding: ClusterBinding = from_json(json!({
        "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ClusterBinding",
        "metadata": { "name": BINDING },
        "spec": { "clusterID": CLUSTER_ID, "secretRef": { "name": SECRET, "namespace": SECRET_NS },
                  "mountNamespace": "kubeocean-worker" },
    }));
    Api::<ClusterBinding>::all(c.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    Env {
        token: sandboxes.token().clone(),
        _sandboxes: sandboxes,
        worker,
        served,
        c,
        w,
    }
}

async fn put_secret(c: &Client, key: &str, kubeconfig: &str) {
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(SECRET.into()),
            namespace: Some(SECRET_NS.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            key.to_owned(),
            ByteString(kubeconfig.as_bytes().to_vec()),
        )])),
        ..Default::default()
    };
    let api: Api<Secret> = Api::namespaced(c.clone(), SECRET_NS);
    match api.get_opt(SECRET).await.unwrap() {
        Some(old) => {
            let mut new = secret;
            new.metadata.resource_version = old.resource_version();
            api.replace(SECRET, &PostParams::default(), &new)
                .await
                .unwrap();
        }
        None => {
            api.create(&PostParams::default(), &secret).await.unwrap();
        }
    }
}

fn config(clock: Clock) -> SyncerConfig {
    let mut config = SyncerConfig::new(BINDING);
    config.secret_namespace = SECRET_NS.into();
    config.client_options = config.client_options.with_rate_limit(0.0, 0);
    config.lease_renew_interval = LEASE_RENEW;
    config.connect_retry_interval = Duration::from_millis(200);
    config.retry_interval = Duration::from_millis(100);
    config.probe_timeout = Duration::from_millis(500);
    config.clock = clock;
    config
}

fn start(env: &Env, clock: Clock) -> kube_kit::admin::Metrics {
    let registry = kube_kit::admin::Metrics::new();
    let mut config = config(clock);
    config.metrics = Some(SyncerMetrics::register(&registry));
    let syncer = Syncer::new(env.c.clone(), config);
    tokio::spawn(syncer.run(env.token.clone()));
    registry
}

async fn create_policy(
    w: &Client,
    name: &str,
    spec: Value,
) -> Result<ResourceLeasingPolicy, kube::Error> {
    let policy: ResourceLeasingPolicy = from_json(json!({
        "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
        "metadata": { "name": name }, "spec": spec,
    }));
    Api::<ResourceLeasingPolicy>::all(w.clone())
        .create(&PostParams::default(), &policy)
        .await
}

async fn create_pod(w: &Client, name: &str, node: &str, cpu: &str, memory: &str) {
    let pod: Pod = from_json(json!({
        "metadata": { "name": name, "namespace": "default" },
        "spec": { "nodeName": node, "containers": [{ "name": "app", "image": "busybox",
            "resources": { "requests": { "cpu": cpu, "memory": memory } } }] },
    }));
    Api::<Pod>::namespaced(w.clone(), "default")
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
}

async fn vnode(c: &Client, name: &str) -> Option<Node> {
    Api::<Node>::all(c.clone()).get_opt(name).await.unwrap()
}

fn allocatable(node: &Node) -> BTreeMap<String, String> {
    node.status
        .as_ref()
        .and_then(|s| s.allocatable.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect()
}

fn taint_keys(node: &Node) -> Vec<String> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|t| format!("{}={}:{}", t.key, t.value.unwrap_or_default(), t.effect))
        .collect()
}

fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn wait_allocatable(c: &Client, name: &str, want: BTreeMap<String, String>) {
    let what = format!("{name} with allocatable {want:?}");
    eventually(&what, || async {
        vnode(c, name)
            .await
            .is_some_and(|n| allocatable(&n) == want)
    })
    .await;
}

async fn renew_time(c: &Client, name: &str) -> Option<Timestamp> {
    Api::<Lease>::namespaced(c.clone(), "kube-node-lease")
        .get_opt(name)
        .await
        .unwrap()
        .and_then(|l| l.spec)
        .and_then(|s| s.renew_time)
        .map(|t| t.0)
}

async fn binding_condition(c: &Client, type_: &str) -> Option<(String, String, String)> {
    let binding = Api::<ClusterBinding>::all(c.clone())
        .get(BINDING)
        .await
        .unwrap();
    binding
        .status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status, c.reason, c.message))
}

#[tokio::test]
async fn policy_over_three_nodes_tracks_pods_policy_edits_selectors_and_user_labels() {
    let env = env(Some("kubeconfig")).await;
    for (name, zone) in [("n1", "a"), ("n2", "a"), ("n3", "b")] {
        let mut node = SimNode::new(name, "4", "8Gi")
            .label("pool", "lend")
            .label("zone", zone);
        if name == "n3" {
            node = node.taint("dedicated", "batch", "NoSchedule");
        }
        env.worker.add_node(&node).unwrap();
    }
    create_pod(&env.w, "p1", "n1", "1", "2Gi").await;
    create_pod(&env.w, "p2", "n2", "500m", "1Gi").await;
    create_pod(&env.w, "p3", "n3", "2", "4Gi").await;
    let selector = json!({ "nodeSelectorTerms": [{ "matchExpressions": [
        { "key": "pool", "operator": "In", "values": ["lend"] }] }] });
    create_policy(
        &env.w,
        "lend-half",
        json!({ "cluster": BINDING, "nodeSelector": selector,
            "resourceLimits": [{ "resource": "cpu", "percent": 50 }, { "resource": "memory", "percent": 75 }] }),
    )
    .await
    .unwrap();
    let metrics = start(&env, Clock::system());

    // cpu 4 / 8Gi minus the pod, then 50% cpu and 75% memory; one pod slot used.
    let expected = [
        ("vnode-w1-n1", "1500m", "4608Mi"),
        ("vnode-w1-n2", "1750m", "5376Mi"),
        ("vnode-w1-n3", "1", "3Gi"),
    ];
    for (name, cpu, memory) in expected {
        wait_allocatable(
            &env.c,
            name,
            strings(&[("cpu", cpu), ("memory", memory), ("pods", "109")]),
        )
        .await;
    }
    eventually("the virtual node gauge at 3", || async {
        metrics
            .encode()
            .unwrap()
            .contains("kubeocean_virtual_nodes{binding=\"worker-1\"} 3")
    })
    .await;
    let n1 = vnode(&env.c, "vnode-w1-n1").await.unwrap();
    let l = n1.labels();
    for (key, value) in [
        ("zone", "a"),
        ("pool", "lend"),
        ("kubeocean.io/cluster-binding", BINDING),
        ("kubeocean.io/physical-cluster-id", CLUSTER_ID),
        ("kubeocean.io/physical-node-name", "n1"),
        ("kubeocean.io/managed-by", "kubeocean"),
        ("type", "virtual-kubelet"),
        ("kubernetes.io/hostname", "vnode-w1-n1"),
    ] {
        assert_eq!(l.get(key).map(String::as_str), Some(value), "label {key}");
    }
    assert_eq!(
        n1.status.as_ref().unwrap().capacity,
        n1.status.as_ref().unwrap().allocatable
    );
    assert!(n1.finalizers().contains(&"kubeocean.io/vnode".to_owned()));
    assert_eq!(taint_keys(&n1), ["kubeocean.io/vnode=:NoSchedule"]);
    let n3 = vnode(&env.c, "vnode-w1-n3").await.unwrap();
    assert_eq!(
        taint_keys(&n3),
        [
            "dedicated=batch:NoSchedule",
            "kubeocean.io/vnode=:NoSchedule"
        ]
    );
    let node_info = n1.status.as_ref().unwrap().node_info.as_ref().unwrap();
    assert_eq!(node_info.os_image, "kube-sandbox");
    let physical = Api::<Node>::all(env.w.clone()).get("n1").await.unwrap();
    assert_eq!(
        physical
            .labels()
            .get("kubeocean.io/policy-applied")
            .map(String::as_str),
        Some("lend-half")
    );
    // The Lease is there and renewed.
    eventually("a lease for vnode-w1-n1", || async {
        renew_time(&env.c, "vnode-w1-n1").await.is_some()
    })
    .await;
    let first = renew_time(&env.c, "vnode-w1-n1").await;
    eventually("the lease renewed", || async {
        renew_time(&env.c, "vnode-w1-n1").await > first
    })
    .await;

    // A new pod on n2 lowers only its virtual node.
    create_pod(&env.w, "p4", "n2", "1", "1Gi").await;
    wait_allocatable(
        &env.c,
        "vnode-w1-n2",
        strings(&[("cpu", "1250m"), ("memory", "4608Mi"), ("pods", "108")]),
    )
    .await;

    // A user's label on a virtual node survives a re-sync caused by a physical change.
    let patch = json!({ "metadata": { "labels": { "team": "blue" } } });
    Api::<Node>::all(env.c.clone())
        .patch(
            "vnode-w1-n1",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .unwrap();
    let patch = json!({ "metadata": { "labels": { "rack": "r2" } } });
    Api::<Node>::all(env.w.clone())
        .patch("n1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    eventually("rack label copied to vnode-w1-n1", || async {
        vnode(&env.c, "vnode-w1-n1")
            .await
            .is_some_and(|n| n.labels().get("rack").is_some_and(|v| v == "r2"))
    })
    .await;
    let n1 = vnode(&env.c, "vnode-w1-n1").await.unwrap();
    assert_eq!(n1.labels().get("team").map(String::as_str), Some("blue"));

    // Editing the policy recomputes every node.
    let patch = json!({ "spec": { "resourceLimits": [{ "resource": "cpu", "percent": 25 }] } });
    Api::<ResourceLeasingPolicy>::all(env.w.clone())
        .patch("lend-half", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    wait_allocatable(
        &env.c,
        "vnode-w1-n1",
        strings(&[("cpu", "750m"), ("memory", "6Gi"), ("pods", "109")]),
    )
    .await;
    wait_allocatable(
        &env.c,
        "vnode-w1-n3",
        strings(&[("cpu", "500m"), ("memory", "4Gi"), ("pods", "109")]),
    )
    .await;

    // n3 leaves the selector: its virtual pod is deleted and its virtual node removed.
    let vpod: Pod = from_json(json!({
        "metadata": { "name": "vpod", "namespace": "default" },
        "spec": { "nodeName": "vnode-w1-n3", "containers": [{ "name": "app", "image": "busybox" }] },
    }));
    Api::<Pod>::namespaced(env.c.clone(), "default")
        .create(&PostParams::default(), &vpod)
        .await
        .unwrap();
    let patch = json!({ "metadata": { "labels": { "pool": "keep" } } });
    Api::<Node>::all(env.w.clone())
        .patch("n3", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    eventually("vnode-w1-n3 removed", || async {
        vnode(&env.c, "vnode-w1-n3").await.is_none()
    })
    .await;
    assert!(
        Api::<Pod>::namespaced(env.c.clone(), "default")
            .get_opt("vpod")
            .await
            .unwrap()
            .is_none(),
        "the virtual pod was deleted before the node"
    );
    eventually("policy-applied label removed from n3", || async {
        let n3 = Api::<Node>::all(env.w.clone()).get("n3").await.unwrap();
        !n3.labels().contains_key("kubeocean.io/policy-applied")
    })
    .await;
    assert!(
        renew_time(&env.c, "vnode-w1-n3").await.is_none(),
        "lease removed"
    );
    // The others stay.
    assert!(vnode(&env.c, "vnode-w1-n1").await.is_some());
    assert!(vnode(&env.c, "vnode-w1-n2").await.is_some());
}

#[tokio::test]
async fn window_edge_flips_the_taint_at_the_edge() {
    let env = env(Some("kubeconfig")).await;
    env.worker
        .add_node(&SimNode::new("n1", "4", "8Gi"))
        .unwrap();
    // Shift the syncer's clock so that a minute boundary (the edge) is 3 s ahead.
    let real = Timestamp::now();
    let edge = real
        .round(
            jiff::TimestampRound::new()
                .smallest(jiff::Unit::Minute)
                .mode(jiff::RoundMode::Ceil),
        )
        .unwrap()
        + SignedDuration::from_mins(1);
    let fake_start = edge - SignedDuration::from_secs(3);
    let clock = Clock::with_offset(fake_start.duration_since(real));
    // The window is the minute before the edge (ends inclusive at that minute).
    let last_minute = (edge - SignedDuration::from_mins(1)).to_zoned(jiff::tz::TimeZone::UTC);
    let hhmm = format!("{:02}:{:02}", last_minute.hour(), last_minute.minute());
    create_policy(
        &env.w,
        "short",
        json!({ "cluster": BINDING, "timeWindows": [{ "start": hhmm, "end": hhmm }] }),
    )
    .await
    .unwrap();
    start(&env, clock);

    let out_taint = "kubeocean.io/out-of-time-windows=true:NoSchedule".to_owned();
    eventually("vnode-w1-n1 created", || async {
        vnode(&env.c, "vnode-w1-n1").await.is_some()
    })
    .await;
    let before = vnode(&env.c, "vnode-w1-n1").await.unwrap();
    assert!(
        clock.now() < edge,
        "the syncer started too slowly for this test"
    );
    assert!(
        !taint_keys(&before).contains(&out_taint),
        "inside the window"
    );
    eventually("the out-of-time-windows taint", || async {
        vnode(&env.c, "vnode-w1-n1")
            .await
            .is_some_and(|n| taint_keys(&n).contains(&out_taint))
    })
    .await;
    assert!(
        clock.now() >= edge,
        "the taint must not come before the edge"
    );
    let policy = Api::<ResourceLeasingPolicy>::all(env.w.clone())
        .get("short")
        .await
        .unwrap();
    eventually("policy Inactive", || async {
        let p = Api::<ResourceLeasingPolicy>::all(env.w.clone())
            .get("short")
            .await
            .unwrap();
        p.status.and_then(|s| s.active_time_window) == Some(false)
    })
    .await;
    drop(policy);
}

#[tokio::test]
async fn worker_going_away_stops_lease_renewal() {
    let env = env(Some("kubeconfig")).await;
    env.worker
        .add_node(&SimNode::new("n1", "4", "8Gi"))
        .unwrap();
    env.worker
        .add_node(&SimNode::new("n2", "4", "8Gi"))
        .unwrap();
    create_policy(&env.w, "all", json!({ "cluster": BINDING }))
        .await
        .unwrap();
    start(&env, Clock::system());
    for name in ["vnode-w1-n1", "vnode-w1-n2"] {
        eventually("a renewed lease", || async {
            renew_time(&env.c, name).await.is_some()
        })
        .await;
    }

    // A physical node that is not Ready: its lease stops, the other's continues.
    env.worker.stop_node("n2");
    eventually("n2 NotReady in the worker", || async {
        let n2 = Api::<Node>::all(env.w.clone()).get("n2").await.unwrap();
        n2.status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status != "True")
    })
    .await;
    // Give the syncer a renew period to see the NotReady node.
    tokio::time::sleep(LEASE_RENEW * 3).await;
    let n2_stopped_at = renew_time(&env.c, "vnode-w1-n2").await;
    let n1_before = renew_time(&env.c, "vnode-w1-n1").await;
    tokio::time::sleep(LEASE_RENEW * 4).await;
    assert_eq!(renew_time(&env.c, "vnode-w1-n2").await, n2_stopped_at);
    assert!(renew_time(&env.c, "vnode-w1-n1").await > n1_before);

    // The worker disappears: no request is answered any more.
    env.served.stop();
    env.worker.faults().add(FaultRule::all(FaultAction::Hang));
    eventually("binding reports the worker unreachable", || async {
        binding_condition(&env.c, "Connected")
            .await
            .is_some_and(|(status, reason, _)| status == "False" && reason == "WorkerUnreachable")
    })
    .await;
    let stopped_at = renew_time(&env.c, "vnode-w1-n1").await;
    tokio::time::sleep(LEASE_RENEW * 5).await;
    assert_eq!(renew_time(&env.c, "vnode-w1-n1").await, stopped_at);

    // The computing cluster's node lifecycle marks the virtual node NotReady, and the
    // syncer does not write the stale physical status back over it.
    let ready = |node: Option<Node>| {
        node.and_then(|n| n.status)
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| c.status)
    };
    eventually("vnode-w1-n1 NotReady", || async {
        ready(vnode(&env.c, "vnode-w1-n1").await).is_some_and(|s| s != "True")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_ne!(
        ready(vnode(&env.c, "vnode-w1-n1").await).as_deref(),
        Some("True")
    );
}

#[tokio::test]
async fn invalid_policies_are_refused_or_marked_failed_and_not_applied() {
    let env = env(Some("kubeconfig")).await;
    env.worker
        .add_node(&SimNode::new("good", "4", "8Gi").label("p", "good"))
        .unwrap();
    env.worker
        .add_node(&SimNode::new("bad", "4", "8Gi").label("p", "bad"))
        .unwrap();
    let select = |v: &str| json!({ "nodeSelectorTerms": [{ "matchExpressions": [{ "key": "p", "operator": "In", "values": [v] }] }] });

    // The CRD schema refuses a malformed window at admission.
    let refused = create_policy(
        &env.w,
        "bad-window",
        json!({ "cluster": BINDING, "timeWindows": [{ "start": "25:00", "end": "06:00" }] }),
    )
    .await;
    match refused {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 422, "{status:?}"),
        other => panic!("expected 422, got {other:?}"),
    }
    // A time zone the schema cannot judge gets in, and is marked Failed.
    create_policy(
        &env.w,
        "bad-zone",
        json!({ "cluster": BINDING, "nodeSelector": select("bad"), "timezone": "Mars/Olympus_Mons" }),
    )
    .await
    .unwrap();
    create_policy(
        &env.w,
        "good",
        json!({ "cluster": BINDING, "nodeSelector": select("good") }),
    )
    .await
    .unwrap();
    start(&env, Clock::system());

    eventually("bad-zone marked Failed", || async {
        let p = Api::<ResourceLeasingPolicy>::all(env.w.clone())
            .get("bad-zone")
            .await
            .unwrap();
        p.status.and_then(|s| s.phase) == Some(crd::ResourceLeasingPolicyPhase::Failed)
    })
    .await;
    let p = Api::<ResourceLeasingPolicy>::all(env.w.clone())
        .get("bad-zone")
        .await
        .unwrap();
    let valid = p
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Valid")
        .unwrap();
    assert_eq!(
        (valid.status.as_str(), valid.reason.as_str()),
        ("False", "ValidationFailed")
    );
    assert!(
        valid.message.contains("Mars/Olympus_Mons"),
        "{}",
        valid.message
    );
    eventually("the good policy applied", || async {
        vnode(&env.c, "vnode-w1-good").await.is_some()
    })
    .await;
    eventually("good policy Active", || async {
        let p = Api::<ResourceLeasingPolicy>::all(env.w.clone())
            .get("good")
            .await
            .unwrap();
        p.status.and_then(|s| s.phase) == Some(crd::ResourceLeasingPolicyPhase::Active)
    })
    .await;
    // Nodes are reconciled in parallel; let one more pass go by before asserting absence.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        vnode(&env.c, "vnode-w1-bad").await.is_none(),
        "the invalid policy is not applied"
    );
    let bad = Api::<Node>::all(env.w.clone()).get("bad").await.unwrap();
    assert!(!bad.labels().contains_key("kubeocean.io/policy-applied"));
}

#[tokio::test]
async fn binding_secret_problems_are_reported_and_the_syncer_keeps_running() {
    let env = env(None).await;
    env.worker
        .add_node(&SimNode::new("n1", "4", "8Gi"))
        .unwrap();
    create_policy(&env.w, "all", json!({ "cluster": BINDING }))
        .await
        .unwrap();
    start(&env, Clock::system());

    eventually("SecretNotFound reported", || async {
        binding_condition(&env.c, "Connected")
            .await
            .is_some_and(|(status, reason, _)| status == "False" && reason == "SecretNotFound")
    })
    .await;

    put_secret(&env.c, "config", &env.served.kubeconfig_yaml).await;
    eventually("KubeconfigMissing reported", || async {
        binding_condition(&env.c, "Connected")
            .await
            .is_some_and(|(status, reason, _)| status == "False" && reason == "KubeconfigMissing")
    })
    .await;
    let (_, _, message) = binding_condition(&env.c, "Connected").await.unwrap();
    assert!(message.contains("\"kubeconfig\""), "{message}");
    assert!(
        !message.contains(env.worker.admin_token()),
        "no credentials in status"
    );

    // Fixed: the same syncer connects and syncs.
    put_secret(&env.c, "kubeconfig", &env.served.kubeconfig_yaml).await;
    eventually("Connected", || async {
        binding_condition(&env.c, "Connected")
            .await
            .is_some_and(|(status, _, _)| status == "True")
    })
    .await;
    eventually("vnode-w1-n1 created", || async {
        vnode(&env.c, "vnode-w1-n1").await.is_some()
    })
    .await;
}

#[tokio::test]
async fn csinodes_are_mirrored_and_deleting_the_binding_drains_its_virtual_nodes() {
    let env = env(Some("kubeconfig")).await;
    env.worker
        .add_node(&SimNode::new("n1", "4", "8Gi"))
        .unwrap();
    let csinode: CSINode = from_json(json!({ "metadata": { "name": "n1" },
        "spec": { "drivers": [{ "name": "disk.csi.example.com", "nodeID": "n1-id",
            "topologyKeys": ["topology.disk.csi.example.com/zone"], "allocatable": { "count": 16 } }] } }));
    Api::<CSINode>::all(env.w.clone())
        .create(&PostParams::default(), &csinode)
        .await
        .unwrap();
    create_policy(&env.w, "all", json!({ "cluster": BINDING }))
        .await
        .unwrap();
    start(&env, Clock::system());
    eventually("vnode-w1-n1 created", || async {
        vnode(&env.c, "vnode-w1-n1").await.is_some()
    })
    .await;
    let csinodes: Api<CSINode> = Api::all(env.c.clone());
    eventually("the CSINode mirrored", || async {
        csinodes.get_opt("vnode-w1-n1").await.unwrap().is_some()
    })
    .await;
    let mirror = csinodes.get("vnode-w1-n1").await.unwrap();
    assert_eq!(mirror.spec, csinode.spec);
    let owner = &mirror.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Node", "vnode-w1-n1")
    );
    eventually("the policy label on n1", || async {
        let n1 = Api::<Node>::all(env.w.clone()).get("n1").await.unwrap();
        n1.labels().contains_key("kubeocean.io/policy-applied")
    })
    .await;
    Api::<ClusterBinding>::all(env.c.clone())
        .delete(BINDING, &Default::default())
        .await
        .unwrap();
    eventually("vnode-w1-n1 removed", || async {
        vnode(&env.c, "vnode-w1-n1").await.is_none()
    })
    .await;
    eventually("the policy label removed from n1", || async {
        let n1 = Api::<Node>::all(env.w.clone()).get("n1").await.unwrap();
        !n1.labels().contains_key("kubeocean.io/policy-applied")
    })
    .await;
    assert!(csinodes.get_opt("vnode-w1-n1").await.unwrap().is_none());
    // The policy no longer says Active: its binding is gone.
    eventually("the policy Inactive, reason BindingGone", || async {
        let policy = Api::<ResourceLeasingPolicy>::all(env.w.clone())
            .get("all")
            .await
            .unwrap();
        let status = policy.status.unwrap_or_default();
        status.phase == Some(crd::ResourceLeasingPolicyPhase::Inactive)
            && status
                .conditions
                .iter()
                .any(|c| c.type_ == "Active" && c.status == "False" && c.reason == "BindingGone")
    })
    .await;
}

/// The out-of-time-windows taint of `name`, if any.
async fn window_taint(c: &Client, name: &str) -> Option<k8s_openapi::api::core::v1::Taint> {
    vnode(c, name)
        .await?
        .spec?
        .taints?
        .into_iter()
        .find(|t| t.key == "kubeocean.io/out-of-time-windows")
}

#[tokio::test]
async fn force_reclaim_evicts_only_after_the_grace_period() {
    const GRACE: i64 = 600;
    let env = env(Some("kubeconfig")).await;
    env.worker
        .add_node(&SimNode::new("n1", "4", "8Gi"))
        .unwrap();
    // A window twelve hours away: the node is lent but outside its window.
    let away =
        (Timestamp::now() + SignedDuration::from_hours(12)).to_zoned(jiff::tz::TimeZone::UTC);
    let hhmm = format!("{:02}:{:02}", away.hour(), away.minute());
    create_policy(
        &env.w,
        "nights",
        json!({ "cluster": BINDING, "forceReclaim": true, "gracefulReclaimPeriodSeconds": GRACE,
            "timeWindows": [{ "start": hhmm, "end": hhmm }] }),
    )
    .await
    .unwrap();
    // Virtual pods bound to the virtual node before the syncer runs: one does not tolerate
    // the taint, one tolerates it for ever, one for a second once it is NoExecute.
    let vpods: Api<Pod> = Api::namespaced(env.c.clone(), "default");
    for (name, tolerations) in [
        (
            "intolerant",
            json!([{ "key": "kubeocean.io/vnode", "operator": "Exists" }]),
        ),
        (
            "tolerant",
            json!([{ "key": "kubeocean.io/out-of-time-windows", "operator": "Exists" }]),
        ),
        (
            "tolerant-for-a-second",
            json!([{ "key": "kubeocean.io/out-of-time-windows", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 1 }]),
        ),
    ] {
        let pod: Pod = from_json(json!({
            "metadata": { "name": name, "namespace": "default" },
            "spec": { "nodeName": "vnode-w1-n1", "tolerations": tolerations,
                "containers": [{ "name": "app", "image": "busybox" }] },
        }));
        vpods.create(&PostParams::default(), &pod).await.unwrap();
    }
    let first = env.token.child_token();
    tokio::spawn(Syncer::new(env.c.clone(), config(Clock::system())).run(first.clone()));

    // During the grace period the taint is NoSchedule: the computing cluster's taint-eviction
    // controller leaves every pod where it is.
    eventually("the out-of-time-windows taint", || async {
        window_taint(&env.c, "vnode-w1-n1").await.is_some()
    })
    .await;
    let taint = window_taint(&env.c, "vnode-w1-n1").await.unwrap();
    assert_eq!(taint.effect, "NoSchedule", "{taint:?}");
    let grace_end = taint.time_added.clone().unwrap().0 + SignedDuration::from_secs(GRACE);
    for _ in 0..20 {
        assert!(Timestamp::now() < grace_end);
        for name in ["intolerant", "tolerant", "tolerant-for-a-second"] {
            let pod = vpods.get_opt(name).await.unwrap();
            assert!(
                pod.is_some_and(|p| p.metadata.deletion_timestamp.is_none()),
                "{name} evicted during the grace period"
            );
        }
        let taint = window_taint(&env.c, "vnode-w1-n1").await.unwrap();
        assert_eq!(taint.effect, "NoSchedule");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A syncer whose clock is past the grace end: NoExecute, the intolerant pod reclaimed,
    // the one tolerating it for a second evicted by the taint-eviction controller, the
    // tolerant one kept.
    first.cancel();
    let shifted = Clock::with_offset(SignedDuration::from_secs(GRACE + 1));
    start(&env, shifted);
    eventually("the taint turned NoExecute", || async {
        window_taint(&env.c, "vnode-w1-n1")
            .await
            .is_some_and(|t| t.effect == "NoExecute")
    })
    .await;
    eventually("the intolerant pod reclaimed", || async {
        vpods.get_opt("intolerant").await.unwrap().is_none()
    })
    .await;
    eventually("the pod tolerating it for a second evicted", || async {
        vpods
            .get_opt("tolerant-for-a-second")
            .await
            .unwrap()
            .is_none_or(|p| p.metadata.deletion_timestamp.is_some())
    })
    .await;
    let tolerant = vpods.get_opt("tolerant").await.unwrap().unwrap();
    assert!(tolerant.metadata.deletion_timestamp.is_none());
}

#[tokio::test]
async fn a_physical_node_replaced_under_the_same_name_gets_a_fresh_virtual_node() {
    let env = env(Some("kubeconfig")).await;
    env.worker
        .add_node(
            &SimNode::new("n1", "4", "8Gi").label("node.kubernetes.io/instance-type", "m5.large"),
        )
        .unwrap();
    create_policy(&env.w, "all", json!({ "cluster": BINDING }))
        .await
        .unwrap();
    let first = env.token.child_token();
    tokio::spawn(Syncer::new(env.c.clone(), config(Clock::system())).run(first.clone()));
    eventually("vnode-w1-n1 created", || async {
        vnode(&env.c, "vnode-w1-n1").await.is_some()
    })
    .await;
    let nodes: Api<Node> = Api::all(env.w.clone());
    let old_physical_uid = nodes.get("n1").await.unwrap().uid().unwrap();
    let old = vnode(&env.c, "vnode-w1-n1").await.unwrap();
    let l = old.labels();
    assert_eq!(
        l.get("kubeocean.io/physical-node-uid"),
        Some(&old_physical_uid)
    );
    assert_eq!(l.get("node.kubernetes.io/instance-type").unwrap(), "vnode");
    assert_eq!(l.get("beta.kubernetes.io/instance-type").unwrap(), "vnode");
    // A virtual pod bound to the old virtual node (never mapped: no physical pod).
    let pods: Api<Pod> = Api::namespaced(env.c.clone(), "default");
    let pod: Pod = from_json(json!({
        "metadata": { "name": "on-old-node", "namespace": "default" },
        "spec": { "nodeName": "vnode-w1-n1", "tolerations": [{ "operator": "Exists" }],
            "containers": [{ "name": "app", "image": "busybox" }] },
    }));
    let pod_uid = pods
        .create(&PostParams::default(), &pod)
        .await
        .unwrap()
        .uid()
        .unwrap();

    // The syncer is down while the machine is replaced: it only ever sees the new UID.
    first.cancel();
    nodes.delete("n1", &Default::default()).await.unwrap();
    eventually("n1 gone from the worker", || async {
        nodes.get_opt("n1").await.unwrap().is_none()
    })
    .await;
    env.worker
        .add_node(&SimNode::new("n1", "8", "16Gi"))
        .unwrap();
    let new_physical_uid = nodes.get("n1").await.unwrap().uid().unwrap();
    assert_ne!(new_physical_uid, old_physical_uid);
    let metrics = start(&env, Clock::system());

    eventually("a fresh vnode-w1-n1 for the new machine", || async {
        vnode(&env.c, "vnode-w1-n1").await.is_some_and(|n| {
            n.uid() != old.uid()
                && n.labels().get("kubeocean.io/physical-node-uid") == Some(&new_physical_uid)
        })
    })
    .await;
    eventually("the virtual pod of the old node deleted", || async {
        pods.get_opt("on-old-node")
            .await
            .unwrap()
            .is_none_or(|p| p.uid() != Some(pod_uid.clone()))
    })
    .await;
    let fresh = vnode(&env.c, "vnode-w1-n1").await.unwrap();
    assert_eq!(allocatable(&fresh)["cpu"], "8");
    assert!(
        !taint_keys(&fresh)
            .iter()
            .any(|t| t.starts_with("kubeocean.io/vnode-deleting")),
        "{:?}",
        taint_keys(&fresh)
    );
    assert_eq!(fresh.spec.as_ref().unwrap().unschedulable, None);
    // Upstream's per-node gauges (cpu in millicores, memory in MiB) describe the new machine.
    eventually("the per-node gauges of the new machine", || async {
        let text = metrics.encode().unwrap();
        [
            "kubeocean_syncer_vnode_origin_resource{clusterbinding=\"worker-1\",node=\"vnode-w1-n1\",resource=\"cpu\"} 8000.0",
            "kubeocean_syncer_vnode_available_resource{clusterbinding=\"worker-1\",node=\"vnode-w1-n1\",resource=\"memory\"} 16384.0",
            "kubeocean_syncer_cluster_available_resource{clusterbinding=\"worker-1\",resource=\"cpu\"} 8000.0",
            "kubeocean_syncer_vnode_total{clusterbinding=\"worker-1\"} 1",
        ]
        .iter()
        .all(|want| text.contains(want))
    })
    .await;
}
