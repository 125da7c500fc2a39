//! The emulated Karmada's propagation at scale: 1,000 Deployments in a kube-sandbox Karmada
//! API server, one PropagationPolicy dividing each over 3 kube-sandbox members (all served over
//! loopback HTTP). Reports the time from the first Deployment created to every
//! ResourceBinding `FullyApplied`, and the CPU the emulation's controllers spent per
//! Deployment (its own runtime's threads, `karmada-sim*`, read from /proc; the API servers'
//! work is not counted).
//!
//! `cargo bench -p kairship-core --bench propagation`; `KAIRSHIP_BENCH_PROPAGATION_DEPLOYMENTS`
//! changes the count. Prints `BENCH name=value` lines.
#![allow(clippy::unwrap_used)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{CLUSTER_CRD, load_crd};
use kairship_core::karmada_sim::{cluster_status, execution_space, propagation};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::{Api, Client};
use kube_sandbox::{ServeOptions, Served, SimNode};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const MEMBERS: [&str; 3] = ["m1", "m2", "m3"];
const THREAD_PREFIX: &str = "karmada-sim";

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

async fn create(client: &Client, r: &ApiResource, ns: Option<&str>, body: Value) {
    let api: Api<DynamicObject> = match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, r),
        None => Api::all_with(client.clone(), r),
    };
    api.create(
        &PostParams::default(),
        &serde_json::from_value(body).unwrap(),
    )
    .await
    .unwrap();
}

/// CPU seconds spent so far by this process's threads named `karmada-sim*`.
fn emulation_cpu() -> f64 {
    let mut ticks = 0u64;
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with(THREAD_PREFIX) {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // Fields after the parenthesised name: utime and stime are the 14th and 15th.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
        let fields: Vec<&str> = rest.split_whitespace().collect();
        for i in [11, 12] {
            ticks += fields
                .get(i)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    // USER_HZ is 100 on Linux.
    ticks as f64 / 100.0
}

async fn run(count: usize, sim: tokio::runtime::Handle) {
    let instance = kube_sandbox::Cluster::new("karmada");
    let mut crds = vec![serde_json::from_str(CLUSTER_CRD).unwrap()];
    for file in [
        "karmada/policy.karmada.io_propagationpolicies.yaml",
        "karmada/policy.karmada.io_clusterpropagationpolicies.yaml",
        "karmada/policy.karmada.io_overridepolicies.yaml",
        "karmada/policy.karmada.io_clusteroverridepolicies.yaml",
        "karmada/work.karmada.io_resourcebindings.yaml",
        "karmada/work.karmada.io_clusterresourcebindings.yaml",
        "karmada/work.karmada.io_works.yaml",
    ] {
        crds.push(load_crd(file));
    }
    kube_sandbox::testing::install_crds(&instance.client(), crds).await;
    let served = instance.serve(ServeOptions::default()).await.unwrap();
    let karmada = served.client().await.unwrap();
    let mut members: Vec<(kube_sandbox::Cluster, Served)> = Vec::new();
    kube_sandbox::testing::ensure_namespace(&karmada, "karmada-cluster").await;
    for name in MEMBERS {
        // No workload controllers: the benchmark is about propagation, not running pods.
        let cluster = kube_sandbox::Cluster::new(name);
        cluster
            .add_node(&SimNode::new(&format!("{name}-node"), "64", "256Gi"))
            .unwrap();
        let member_served = cluster.serve(ServeOptions::default()).await.unwrap();
        use base64::Engine as _;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let ca = member_served
            .ca_pem
            .clone()
            .unwrap_or_else(|| member_served.cluster_ca_pem().to_owned());
        create(
            &karmada,
            &resource("", "v1", "Secret", "secrets"),
            Some("karmada-cluster"),
            json!({
                "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                "data": {"token": b64(cluster.admin_token()), "caBundle": b64(&ca)}
            }),
        )
        .await;
        create(&karmada, &resource("cluster.karmada.io", "v1alpha1", "Cluster", "clusters"), None, json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
            "spec": {"syncMode": "Push", "apiEndpoint": member_served.url,
                     "secretRef": {"namespace": "karmada-cluster", "name": name}}
        }))
        .await;
        members.push((cluster, member_served));
    }

    // The emulation on its own runtime, so its CPU can be told apart.
    let shutdown = CancellationToken::new();
    {
        let _guard = sim.enter();
        cluster_status::spawn(karmada.clone(), Duration::from_secs(5), shutdown.clone());
        execution_space::spawn(karmada.clone(), Duration::from_secs(5), shutdown.clone());
        propagation::spawn(karmada.clone(), shutdown.clone());
    }
    // Members Ready and their execution spaces made before the clock starts.
    let clusters: Api<DynamicObject> = Api::all_with(
        karmada.clone(),
        &resource("cluster.karmada.io", "v1alpha1", "Cluster", "clusters"),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let list = clusters.list(&ListParams::default()).await.unwrap();
        let ready = list
            .items
            .iter()
            .filter(|c| {
                c.data["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
            })
            .count();
        if ready == MEMBERS.len() {
            break;
        }
        assert!(Instant::now() < deadline, "members never Ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let cpu_before = emulation_cpu();
    let started = Instant::now();
    kube_sandbox::testing::ensure_namespace(&karmada, "bench").await;
    create(&karmada, &resource("policy.karmada.io", "v1alpha1", "PropagationPolicy", "propagationpolicies"), Some("bench"), json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "spread", "namespace": "bench"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                 "placement": {"clusterAffinity": {"clusterNames": MEMBERS},
                               "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}}
    }))
    .await;
    let deployments = resource("apps", "v1", "Deployment", "deployments");
    for i in 0..count {
        let name = format!("d{i}");
        create(&karmada, &deployments, Some("bench"), json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                                      "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}
        }))
        .await;
    }
    let created = started.elapsed();
    let bindings: Api<DynamicObject> = Api::namespaced_with(
        karmada.clone(),
        "bench",
        &resource(
            "work.karmada.io",
            "v1alpha2",
            "ResourceBinding",
            "resourcebindings",
        ),
    );
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let list = bindings.list(&ListParams::default()).await.unwrap();
        let applied = list
            .items
            .iter()
            .filter(|b| {
                b.data["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "FullyApplied" && c["status"] == "True")
                })
            })
            .count();
        if applied == count {
            break;
        }
        assert!(Instant::now() < deadline, "{applied}/{count} FullyApplied");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let total = started.elapsed();
    let cpu = emulation_cpu() - cpu_before;
    let on_member: Api<DynamicObject> =
        Api::namespaced_with(members[0].0.client(), "bench", &deployments);
    let landed = on_member
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .len();
    println!("BENCH propagation_deployments={count}");
    println!("BENCH propagation_members={}", MEMBERS.len());
    println!("BENCH propagation_create_s={:.2}", created.as_secs_f64());
    println!(
        "BENCH propagation_all_fully_applied_s={:.2}",
        total.as_secs_f64()
    );
    println!("BENCH propagation_emulation_cpu_s={cpu:.2}");
    println!(
        "BENCH propagation_emulation_cpu_ms_per_deployment={:.2}",
        cpu * 1000.0 / count as f64
    );
    println!("BENCH propagation_deployments_on_first_member={landed}");
    shutdown.cancel();
}

fn main() {
    let count = std::env::var("KAIRSHIP_BENCH_PROPAGATION_DEPLOYMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sim = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(THREAD_PREFIX)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(count, sim.handle().clone()));
    sim.shutdown_timeout(Duration::from_secs(5));
}
