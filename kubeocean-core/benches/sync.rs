//! The bottom-up syncer over 1,000 physical nodes, through two sandbox clusters (the worker
//! served over loopback HTTP and reached through the binding's Secret, as in production).
//!
//! Prints:
//! - `BENCH sync_1000_nodes_s`: from starting the syncer until all 1,000 virtual nodes exist
//!   with their lent allocatable;
//! - `BENCH sync_1000_nodes_update_s`: after a policy edit, until every virtual node shows
//!   the new allocatable;
//! - `BENCH syncer_rss_mib` / `BENCH syncer_peak_rss_mib`: resident memory (VmRSS / VmHWM)
//!   of the syncer after the update. The syncer runs in a child process (this bench binary
//!   re-executed in syncer mode, on the runtime `kubeocean syncer` uses by default, talking to
//!   both clusters over loopback HTTP) so that the sandbox clusters' memory is not counted;
//! - `BENCH bench_process_rss_delta_mib`: growth of this process's VmRSS over the same time:
//!   what the two sandbox clusters store for the new virtual nodes, Leases and watch history.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use kube_sandbox::{Cluster, ServeOptions, SimNode};
use kubeocean_core::crd::ResourceLeasingPolicy;
use kubeocean_core::syncer::{Syncer, SyncerConfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const NODES: usize = 1_000;
const PODS_PER_NODE: usize = 3;
const DEADLINE: Duration = Duration::from_secs(120);
/// Set in the child process: path of the computing cluster's kubeconfig.
const SYNCER_MODE_ENV: &str = "KUBEOCEAN_BENCH_SYNCER_KUBECONFIG";

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// A `/proc/<pid>/status` memory field (`VmRSS`, `VmHWM`) in MiB.
fn memory_mib(pid: &str, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let prefix = format!("{field}:");
    status
        .lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// Waits until `count` virtual nodes of the binding have `cpu` allocatable.
async fn wait_for(c: &Client, cpu: &str, count: usize) -> BenchResult<()> {
    let api: Api<Node> = Api::all(c.clone());
    let started = Instant::now();
    loop {
        let nodes = api
            .list(&ListParams::default().labels("kubeocean.io/cluster-binding=bench"))
            .await?;
        let done = nodes
            .items
            .iter()
            .filter(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.allocatable.as_ref())
                    .and_then(|a| a.get("cpu"))
                    .is_some_and(|q| q.0 == cpu)
            })
            .count();
        if done >= count {
            return Ok(());
        }
        if started.elapsed() > DEADLINE {
            return Err(format!("only {done} of {count} virtual nodes with cpu {cpu}").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Kills the child syncer on drop (by its own handle).
struct ChildSyncer(Child);

impl Drop for ChildSyncer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Child process: the syncer alone, against the computing cluster's kubeconfig.
async fn run_syncer(kubeconfig: &str) -> BenchResult<()> {
    let options = kube_kit::client::ClientOptions::new("kubeocean-bench").with_rate_limit(0.0, 0);
    let client = kube_kit::client::client_from_kubeconfig(
        Some(std::path::Path::new(kubeconfig)),
        None,
        &options,
    )
    .await?;
    let mut config = SyncerConfig::new("bench");
    config.client_options = options;
    Syncer::new(client, config)
        .run(CancellationToken::new())
        .await;
    Ok(())
}

async fn bench() -> BenchResult<()> {
    let computing = Cluster::new("computing");
    let worker = Cluster::new("worker");
    let dir = std::env::temp_dir().join(format!("kubeocean-sync-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let kubeconfig = dir.join("computing.yaml");
    let served_computing = computing
        .serve(ServeOptions {
            kubeconfig_path: Some(kubeconfig.clone()),
            ..ServeOptions::default()
        })
        .await?;
    let served = worker.serve(ServeOptions::default()).await?;
    let (c, w) = (computing.client(), worker.client());
    kubeocean_core::setup::install_crds(&c).await?;
    kubeocean_core::setup::install_crds(&w).await?;
    for i in 0..NODES {
        worker
            .add_node(&SimNode::new(&format!("node-{i:04}"), "16", "64Gi").label("pool", "lend"))?;
    }
    let pods: Api<Pod> = Api::namespaced(w.clone(), "default");
    for i in 0..NODES {
        for j in 0..PODS_PER_NODE {
            let pod: Pod = serde_json::from_value(json!({
                "metadata": { "name": format!("p-{i}-{j}") },
                "spec": { "nodeName": format!("node-{i:04}"), "containers": [{ "name": "app", "image": "app",
                    "resources": { "requests": { "cpu": "1", "memory": "1Gi" } } }] },
            }))?;
            pods.create(&PostParams::default(), &pod).await?;
        }
    }
    kubeocean_core::setup::register_worker(
        &c,
        &kubeocean_core::setup::WorkerRegistration {
            binding: "bench",
            cluster_id: "bench",
            secret_namespace: "kubeocean-system",
            mount_namespace: "kubeocean-worker",
            kubeconfig: &served.kubeconfig_yaml,
        },
    )
    .await?;
    let policy: ResourceLeasingPolicy = serde_json::from_value(json!({
        "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
        "metadata": { "name": "half" },
        "spec": { "cluster": "bench", "resourceLimits": [{ "resource": "cpu", "percent": 50 }] },
    }))?;
    let policies: Api<ResourceLeasingPolicy> = Api::all(w.clone());
    policies.create(&PostParams::default(), &policy).await?;
    // Let the sandbox kubelets settle (pods started) before measuring.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let rss_before = memory_mib("self", "VmRSS");
    let started = Instant::now();
    let child = Command::new(std::env::current_exe()?)
        .env(SYNCER_MODE_ENV, &kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let syncer = ChildSyncer(child);
    let pid = syncer.0.id().to_string();
    // 16 cpu - 3 pods x 1 cpu = 13, half of it.
    wait_for(&c, "6500m", NODES).await?;
    let took = started.elapsed();
    println!("BENCH sync_1000_nodes_s={:.3}", took.as_secs_f64());

    let started = Instant::now();
    let patch = json!({ "spec": { "resourceLimits": [{ "resource": "cpu", "percent": 20 }] } });
    policies
        .patch("half", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_for(&c, "2600m", NODES).await?;
    println!(
        "BENCH sync_1000_nodes_update_s={:.3}",
        started.elapsed().as_secs_f64()
    );
    println!("BENCH syncer_rss_mib={:.1}", memory_mib(&pid, "VmRSS"));
    println!("BENCH syncer_peak_rss_mib={:.1}", memory_mib(&pid, "VmHWM"));
    println!(
        "BENCH bench_process_rss_delta_mib={:.1}",
        memory_mib("self", "VmRSS") - rss_before
    );

    drop(syncer);
    served.stop();
    served_computing.stop();
    let _ = std::fs::remove_dir_all(&dir);
    computing.shutdown();
    worker.shutdown();
    Ok(())
}

fn main() {
    let syncer_mode = std::env::var(SYNCER_MODE_ENV).ok();
    let runtime = common::runtime(syncer_mode.is_some());
    let result = match syncer_mode {
        Some(kubeconfig) => runtime.block_on(run_syncer(&kubeconfig)),
        None => runtime.block_on(bench()),
    };
    if let Err(err) = result {
        panic!("sync bench failed: {err}");
    }
}
