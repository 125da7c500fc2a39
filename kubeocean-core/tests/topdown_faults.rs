//! Crash safety of the top-down syncer: a syncer aborted in the middle of mapping 500 pods
//! and replaced by a new one, and a syncer whose worker answers errors, hangs and answers
//! too late for a while, both end with exactly one physical pod per virtual pod, each
//! recorded on its virtual pod, and nothing else.

#![allow(clippy::unwrap_used)]

mod common;

use common::{ServedPair, from_json};

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kube_sandbox::testing::Sandboxes;
use kube_sandbox::{Cluster, FaultAction, FaultRule, Served, SimNode};
use kubeocean_core::naming::physical_name;
use kubeocean_core::syncer::{Syncer, SyncerConfig, SyncerMetrics};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const BINDING: &str = "worker-1";
const MOUNT: &str = "kubeocean-worker";
const NS: &str = "default";
const PODS: usize = 500;

/// Waits up to 60 s, polling every 50 ms: 500-pod checks list a lot.
async fn eventually<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    common::eventually_every(
        what,
        Duration::from_secs(60),
        Duration::from_millis(50),
        check,
    )
    .await;
}

struct Env {
    /// Shuts the clusters down first on drop.
    _sandboxes: Sandboxes,
    worker: Cluster,
    _served: Vec<Served>,
    c: Client,
    w: Client,
}

async fn env() -> Env {
    let pair = common::served_pair("topdown-faults").await;
    for node in ["n1", "n2"] {
        pair.worker
            .add_node(&SimNode::new(node, "512", "2Ti").capacity("pods", "1000"))
            .unwrap();
    }
    pair.bind_worker(BINDING, "w1", MOUNT).await;
    let ServedPair {
        sandboxes,
        computing: _,
        worker,
        served_computing,
        served_worker,
        c,
        w,
    } = pair;
    Env {
        _sandboxes: sandboxes,
        worker,
        _served: vec![served_computing, served_worker],
        c,
        w,
    }
}

/// Starts a syncer; the returned task is aborted to simulate a crash.
fn start_syncer(c: &Client, metrics: &kube_kit::admin::Metrics) -> JoinHandle<()> {
    let mut config = SyncerConfig::new(BINDING);
    config.secret_namespace = "kubeocean-system".into();
    config.client_options = config.client_options.with_rate_limit(0.0, 0);
    config.connect_retry_interval = Duration::from_millis(200);
    config.retry_interval = Duration::from_millis(100);
    config.max_retry_interval = Duration::from_millis(800);
    config.request_timeout = Duration::from_secs(1);
    config.probe_timeout = Duration::from_secs(1);
    config.workers = 8;
    config.metrics = Some(SyncerMetrics::register(metrics));
    tokio::spawn(Syncer::new(c.clone(), config).run(CancellationToken::new()))
}

async fn wait_vnodes(c: &Client) {
    eventually("the virtual nodes", || async {
        Api::<Node>::all(c.clone())
            .list(&ListParams::default().labels("kubeocean.io/cluster-binding=worker-1"))
            .await
            .unwrap()
            .items
            .len()
            == 2
    })
    .await;
}

async fn create_virtual_pods(c: &Client) {
    let api: Api<Pod> = Api::namespaced(c.clone(), NS);
    futures::stream::iter(0..PODS)
        .map(|i| {
            let api = api.clone();
            async move {
                let pod: Pod = from_json(json!({
                    "metadata": { "name": format!("job-{i:03}"), "namespace": NS },
                    "spec": { "nodeName": if i % 2 == 0 { "vnode-w1-n1" } else { "vnode-w1-n2" },
                        "containers": [{ "name": "app", "image": "busybox" }] },
                }));
                api.create(&PostParams::default(), &pod).await.unwrap();
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
}

async fn physical_count(w: &Client) -> usize {
    Api::<Pod>::namespaced(w.clone(), MOUNT)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .len()
}

/// Sum of the top-down error counter for `reason`.
fn errors(metrics: &kube_kit::admin::Metrics, reason: &str) -> f64 {
    let text = metrics.encode().unwrap();
    text.lines()
        .filter(|l| {
            l.starts_with("kubeocean_topdown_errors_total{")
                && l.contains(&format!("reason=\"{reason}\""))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Waits until every virtual pod records a physical pod, then checks the invariant: exactly
/// one physical pod per virtual pod, pointing back at it, and nothing else.
async fn assert_mapped_exactly_once(env: &Env) {
    let vpods: Api<Pod> = Api::namespaced(env.c.clone(), NS);
    let ppods: Api<Pod> = Api::namespaced(env.w.clone(), MOUNT);
    // Mapped, and each virtual pod's phase in step with its physical pod's (the sandbox's
    // simulated scheduler may leave some physical pods Pending under this load).
    eventually("every virtual pod mapped, its status in step", || async {
        let pods = vpods.list(&ListParams::default()).await.unwrap().items;
        let physical: BTreeMap<String, Option<String>> = ppods
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|p| (p.name_any(), p.status.and_then(|s| s.phase)))
            .collect();
        pods.len() == PODS
            && pods.iter().all(|p| {
                let mapped = p
                    .annotations()
                    .contains_key("kubeocean.io/physical-pod-uid");
                let phase = p.status.as_ref().and_then(|s| s.phase.clone());
                let physical_phase = physical
                    .get(&physical_name(NS, &p.name_any()))
                    .cloned()
                    .flatten();
                mapped && (physical_phase.is_none() || physical_phase == phase)
            })
    })
    .await;
    let virtual_pods = vpods.list(&ListParams::default()).await.unwrap().items;
    let physical = Api::<Pod>::namespaced(env.w.clone(), MOUNT)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert_eq!(
        physical.len(),
        PODS,
        "one physical pod per virtual pod, no orphan"
    );
    let by_name: BTreeMap<String, &Pod> = physical.iter().map(|p| (p.name_any(), p)).collect();
    let mut recorded = BTreeSet::new();
    for v in &virtual_pods {
        let name = v.name_any();
        let a = v.annotations();
        let physical_name_recorded = a.get("kubeocean.io/physical-pod-name").unwrap();
        assert_eq!(*physical_name_recorded, physical_name(NS, &name), "{name}");
        let p = by_name
            .get(physical_name_recorded)
            .unwrap_or_else(|| panic!("{name}: its physical pod is missing"));
        assert_eq!(
            a.get("kubeocean.io/physical-pod-uid"),
            p.metadata.uid.as_ref(),
            "{name}: the recorded UID is the physical pod's"
        );
        assert_eq!(
            p.annotations().get("kubeocean.io/virtual-pod-uid"),
            v.metadata.uid.as_ref(),
            "{name}: the physical pod points back at it"
        );
        assert!(
            recorded.insert(physical_name_recorded.clone()),
            "{name}: shared"
        );
    }
    assert_eq!(recorded.len(), PODS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_syncer_aborted_while_mapping_500_pods_is_replaced_without_duplicates_or_orphans() {
    let env = env().await;
    let metrics = kube_kit::admin::Metrics::new();
    let first = start_syncer(&env.c, &metrics);
    wait_vnodes(&env.c).await;
    // Slow worker writes so that the abort lands in the middle of the burst.
    let slow = env.worker.faults().add(FaultRule {
        resource: Some("pods".into()),
        verbs: vec!["create".into()],
        action: FaultAction::Delay(Duration::from_millis(20)),
    });
    create_virtual_pods(&env.c).await;
    eventually("a first part mapped", || async {
        physical_count(&env.w).await >= 100
    })
    .await;
    // Crash: the task and every request it had in flight are dropped.
    first.abort();
    let _ = first.await;
    let at_crash = physical_count(&env.w).await;
    println!("physical pods when the syncer was aborted: {at_crash} of {PODS}");
    env.worker.faults().remove(slow);

    let second_metrics = kube_kit::admin::Metrics::new();
    let second = start_syncer(&env.c, &second_metrics);
    assert_mapped_exactly_once(&env).await;
    second.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_errors_hangs_and_late_answers_leave_exactly_one_physical_pod_each() {
    let env = env().await;
    let metrics = kube_kit::admin::Metrics::new();
    let syncer = start_syncer(&env.c, &metrics);
    wait_vnodes(&env.c).await;
    let pod_writes = |action: FaultAction| FaultRule {
        resource: Some("pods".into()),
        verbs: ["create", "get", "update", "patch", "delete"]
            .map(String::from)
            .to_vec(),
        action,
    };
    let creating = tokio::spawn({
        let c = env.c.clone();
        async move { create_virtual_pods(&c).await }
    });
    eventually("a first part mapped", || async {
        physical_count(&env.w).await >= 50
    })
    .await;

    // Internal errors for a while.
    let failing = env
        .worker
        .faults()
        .add(pod_writes(FaultAction::Status(500)));
    eventually("failed creates reported", || async {
        errors(&metrics, "WorkerRequestFailed") >= 20.0
    })
    .await;
    env.worker.faults().remove(failing);

    // No answer at all for a while.
    let before = errors(&metrics, "RequestTimeout");
    let hanging = env.worker.faults().add(pod_writes(FaultAction::Hang));
    eventually("hung requests timed out", || async {
        errors(&metrics, "RequestTimeout") >= before + 8.0
    })
    .await;
    env.worker.faults().remove(hanging);

    // Answers that come after the client gave up: the creates happen, their answers are lost.
    let before = errors(&metrics, "RequestTimeout");
    let late = env.worker.faults().add(FaultRule {
        resource: Some("pods".into()),
        verbs: vec!["create".into()],
        action: FaultAction::Delay(Duration::from_millis(1500)),
    });
    eventually("late answers timed out", || async {
        errors(&metrics, "RequestTimeout") >= before + 8.0
    })
    .await;
    env.worker.faults().remove(late);

    creating.await.unwrap();
    assert_mapped_exactly_once(&env).await;
    syncer.abort();
}
