//! The bottom-up syncer over many physical nodes, through two sandbox clusters (the worker
//! served over loopback HTTP and reached through the binding's Secret, as in production).
//!
//! Sizes are chosen with `KUBEOCEAN_BENCH_SYNC_NODES` (a comma-separated list of node counts,
//! default `1000`) and `KUBEOCEAN_BENCH_SYNC_PODS_PER_NODE` (default 3). Every node's pods
//! request 3 cpu in all, whatever their number, so each size lends the same per node. Each
//! size runs on fresh clusters with a fresh syncer and prints, with `<n>` its node count:
//! - `BENCH sync_<n>_nodes_s`: from starting the syncer until all `n` virtual nodes exist
//!   with their lent allocatable;
//! - `BENCH policy_edit_<n>_nodes_s`: after a policy edit, until every virtual node shows
//!   the new allocatable (printed as `sync_1000_nodes_update_s` before the sizes could be
//!   chosen);
//! - `BENCH syncer_rss_<n>_mib` / `BENCH syncer_peak_rss_<n>_mib`: resident memory (VmRSS /
//!   VmHWM) of the syncer after the edit. The syncer runs in a child process (this bench
//!   binary re-executed in syncer mode, on the runtime `kubeocean syncer` uses by default,
//!   talking to both clusters over loopback HTTP) so that the sandbox clusters' memory is
//!   not counted;
//! - `BENCH syncer_cpu_<n>_s`: CPU time (user + system) the syncer child spent until then;
//! - `BENCH bench_process_rss_delta_<n>_mib`: growth of this process's VmRSS over the same
//!   time: what the two sandbox clusters store for the new virtual nodes, Leases and watch
//!   history.
//!
//! Virtual nodes are followed with a watch of the computing cluster (not re-listed), so
//! the bench's own reads cost little next to the syncer's work.

mod common;

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use kube_sandbox::apiserver::resources::GroupResource;
use kube_sandbox::{Cluster, ClusterOptions, ServeOptions, SimNode};
use kubeocean_core::crd::ResourceLeasingPolicy;
use kubeocean_core::syncer::{Syncer, SyncerConfig};
use serde_json::json;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Node counts run when `KUBEOCEAN_BENCH_SYNC_NODES` is not set.
const DEFAULT_NODES: &[usize] = &[1_000];
const NODES_ENV: &str = "KUBEOCEAN_BENCH_SYNC_NODES";
const PODS_PER_NODE_ENV: &str = "KUBEOCEAN_BENCH_SYNC_PODS_PER_NODE";
const DEFAULT_PODS_PER_NODE: usize = 3;
/// What the pods of one node request in all, in millicores.
const PODS_CPU_MILLIS: usize = 3_000;
/// Pod creates in flight while the worker is filled.
const CREATE_CONCURRENCY: usize = 64;
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

/// CPU time (user + system) of process `pid`, from `/proc/<pid>/stat`.
fn cpu_time(pid: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may contain spaces) start after the last ')';
    // utime and stime are fields 14 and 15 (1-based), in clock ticks (100 per second).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|i| fields.get(*i)?.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

/// The node counts and pods per node to run, from the environment.
fn sizes() -> BenchResult<(Vec<usize>, usize)> {
    let nodes = match std::env::var(NODES_ENV) {
        Ok(list) => list
            .split(',')
            .map(|n| n.trim().replace('_', "").parse::<usize>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{NODES_ENV}={list:?}: {e}"))?,
        Err(_) => DEFAULT_NODES.to_vec(),
    };
    let pods = match std::env::var(PODS_PER_NODE_ENV) {
        Ok(n) => n
            .trim()
            .parse::<usize>()
            .map_err(|e| format!("{PODS_PER_NODE_ENV}={n:?}: {e}"))?,
        Err(_) => DEFAULT_PODS_PER_NODE,
    };
    if nodes.is_empty() || nodes.contains(&0) || pods == 0 {
        return Err(format!("{NODES_ENV} and {PODS_PER_NODE_ENV} must be positive").into());
    }
    Ok((nodes, pods))
}

/// Follows the binding's virtual nodes with a watch; the receiver holds how many of them
/// have each cpu allocatable.
fn follow_vnodes(c: &Client) -> watch::Receiver<HashMap<String, usize>> {
    let (tx, rx) = watch::channel(HashMap::new());
    let api: Api<Node> = Api::all(c.clone());
    let config = watcher::Config::default().labels("kubeocean.io/cluster-binding=bench");
    tokio::spawn(async move {
        let mut cpu_of: HashMap<String, String> = HashMap::new();
        let mut listing: HashMap<String, String> = HashMap::new();
        let mut counts: HashMap<String, usize> = HashMap::new();
        let stream = watcher(api, config);
        futures::pin_mut!(stream);
        while let Ok(Some(event)) = stream.try_next().await {
            let cpu = |n: &Node| {
                n.status
                    .as_ref()
                    .and_then(|s| s.allocatable.as_ref())
                    .and_then(|a| a.get("cpu"))
                    .map(|q| q.0.clone())
                    .unwrap_or_default()
            };
            // Counts are kept up to date per event (a recount per event would cost the
            // bench process O(n^2) at 10,000 nodes, on the cores the syncer needs).
            let mut count = |cpu: &str, by: isize| {
                let entry = counts.entry(cpu.to_owned()).or_default();
                *entry = entry.saturating_add_signed(by);
            };
            match event {
                watcher::Event::Apply(n) => {
                    let new = cpu(&n);
                    count(&new, 1);
                    if let Some(old) = cpu_of.insert(n.name_any(), new) {
                        count(&old, -1);
                    }
                }
                watcher::Event::Delete(n) => {
                    if let Some(old) = cpu_of.remove(&n.name_any()) {
                        count(&old, -1);
                    }
                }
                watcher::Event::Init => listing.clear(),
                watcher::Event::InitApply(n) => {
                    listing.insert(n.name_any(), cpu(&n));
                }
                watcher::Event::InitDone => {
                    cpu_of = std::mem::take(&mut listing);
                    counts.clear();
                    for cpu in cpu_of.values() {
                        *counts.entry(cpu.clone()).or_default() += 1;
                    }
                }
            }
            if tx.send(counts.clone()).is_err() {
                return;
            }
        }
    });
    rx
}

/// Waits until `count` virtual nodes have `cpu` allocatable.
async fn wait_for(
    vnodes: &mut watch::Receiver<HashMap<String, usize>>,
    cpu: &str,
    count: usize,
    deadline: Duration,
) -> BenchResult<()> {
    let waited = tokio::time::timeout(
        deadline,
        vnodes.wait_for(|counts| counts.get(cpu).copied().unwrap_or(0) >= count),
    )
    .await;
    match waited.map(|w| w.map(|_| ())) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err("the virtual node watch ended".into()),
        Err(_) => {
            let done = vnodes.borrow().get(cpu).copied().unwrap_or(0);
            Err(format!("only {done} of {count} virtual nodes with cpu {cpu}").into())
        }
    }
}

/// Waits until every pod of the worker runs (the sandbox kubelet has written its status), so
/// that no pod start lands inside the measured time.
async fn wait_pods_running(worker: &Cluster, count: usize) -> BenchResult<()> {
    let pods = GroupResource::new("", "pods");
    let started = Instant::now();
    loop {
        let running = worker
            .state()
            .store
            .list(&pods, None, None, 0, &|p| {
                p.value["status"]["phase"] == "Running"
            })
            .items
            .len();
        if running >= count {
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(600) {
            return Err(format!("only {running} of {count} worker pods running").into());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

type Requests = std::collections::BTreeMap<kube_sandbox::apiserver::requests::RequestKind, u64>;

/// Prints (on stderr) the requests each cluster served between two snapshots, per kind.
fn print_requests(phase: &str, before: &(Requests, Requests), after: (Requests, Requests)) {
    for (cluster, before, after) in [
        ("computing", &before.0, &after.0),
        ("worker", &before.1, &after.1),
    ] {
        for (kind, count) in after {
            let grown = count - before.get(kind).copied().unwrap_or(0);
            if grown > 0 {
                eprintln!(
                    "requests {phase}: {cluster} {} {}{} x{grown}",
                    kind.verb,
                    kind.resource,
                    if kind.subresource.is_empty() {
                        String::new()
                    } else {
                        format!("/{}", kind.subresource)
                    },
                );
            }
        }
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

/// Creates `pods_per_node` pods on each of `nodes` nodes, `CREATE_CONCURRENCY` at once.
async fn create_pods(w: &Client, nodes: usize, pods_per_node: usize) -> BenchResult<()> {
    let api: Api<Pod> = Api::namespaced(w.clone(), "default");
    let cpu = format!("{}m", PODS_CPU_MILLIS / pods_per_node);
    let memory = format!("{}Mi", 3 * 1024 / pods_per_node);
    futures::stream::iter((0..nodes).flat_map(|i| (0..pods_per_node).map(move |j| (i, j))))
        .map(|(i, j)| {
            let api = api.clone();
            let pod = json!({
                "metadata": { "name": format!("p-{i}-{j}") },
                "spec": { "nodeName": format!("node-{i:05}"), "containers": [{ "name": "app", "image": "app",
                    "resources": { "requests": { "cpu": cpu, "memory": memory } } }] },
            });
            async move {
                let pod: Pod = serde_json::from_value(pod)?;
                api.create(&PostParams::default(), &pod).await?;
                Ok::<(), Box<dyn std::error::Error>>(())
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect::<()>()
        .await
}

/// One size: fresh clusters, `nodes` physical nodes with `pods_per_node` pods each, a fresh
/// syncer child.
async fn bench_size(nodes: usize, pods_per_node: usize) -> BenchResult<()> {
    // Room in the watch history for the sandbox's own loop to follow the filling of the
    // worker, and for the syncer's paged LIST and watches at 10,000 nodes; every event holds
    // a version of an object, so not more.
    let options = ClusterOptions {
        history_limit: (nodes * 20).max(50_000),
        ..ClusterOptions::default()
    };
    let computing = Cluster::with_options("computing", options.clone());
    let worker = Cluster::with_options("worker", options);
    let dir = std::env::temp_dir().join(format!(
        "kubeocean-sync-bench-{}-{nodes}",
        std::process::id()
    ));
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
    let filling = Instant::now();
    for i in 0..nodes {
        worker
            .add_node(&SimNode::new(&format!("node-{i:05}"), "16", "64Gi").label("pool", "lend"))?;
    }
    create_pods(&w, nodes, pods_per_node).await?;
    wait_pods_running(&worker, nodes * pods_per_node).await?;
    eprintln!(
        "{nodes} nodes x {pods_per_node} pods running in the worker after {:.1} s",
        filling.elapsed().as_secs_f64()
    );
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
    let mut vnodes = follow_vnodes(&c);
    // Let the sandboxes settle (node Leases, the policy) before measuring.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let deadline = Duration::from_secs(120) + Duration::from_millis(nodes as u64 * 20);

    let rss_before = memory_mib("self", "VmRSS");
    let cpu_before = cpu_time("self");
    let requests_before = (
        computing.requests().snapshot(),
        worker.requests().snapshot(),
    );
    let started = Instant::now();
    let child = Command::new(std::env::current_exe()?)
        .env(SYNCER_MODE_ENV, &kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let syncer = ChildSyncer(child);
    let pid = syncer.0.id().to_string();
    // 16 cpu - 3 cpu of pods = 13, half of it.
    wait_for(&mut vnodes, "6500m", nodes, deadline).await?;
    println!(
        "BENCH sync_{nodes}_nodes_s={:.3}",
        started.elapsed().as_secs_f64()
    );
    let synced_rss = memory_mib(&pid, "VmRSS");
    println!(
        "BENCH bench_process_cpu_until_synced_{nodes}_s={:.2}",
        (cpu_time("self") - cpu_before).as_secs_f64()
    );
    println!(
        "BENCH syncer_cpu_until_synced_{nodes}_s={:.2}",
        cpu_time(&pid).as_secs_f64()
    );
    print_requests(
        "until synced",
        &requests_before,
        (
            computing.requests().snapshot(),
            worker.requests().snapshot(),
        ),
    );
    let requests_synced = (
        computing.requests().snapshot(),
        worker.requests().snapshot(),
    );

    let started = Instant::now();
    let patch = json!({ "spec": { "resourceLimits": [{ "resource": "cpu", "percent": 20 }] } });
    policies
        .patch("half", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_for(&mut vnodes, "2600m", nodes, deadline).await?;
    println!(
        "BENCH policy_edit_{nodes}_nodes_s={:.3}",
        started.elapsed().as_secs_f64()
    );
    print_requests(
        "for the edit",
        &requests_synced,
        (
            computing.requests().snapshot(),
            worker.requests().snapshot(),
        ),
    );
    eprintln!("syncer VmRSS {synced_rss:.1} MiB right after the sync");
    println!(
        "BENCH syncer_rss_{nodes}_mib={:.1}",
        memory_mib(&pid, "VmRSS")
    );
    println!(
        "BENCH syncer_peak_rss_{nodes}_mib={:.1}",
        memory_mib(&pid, "VmHWM")
    );
    println!(
        "BENCH syncer_cpu_{nodes}_s={:.2}",
        cpu_time(&pid).as_secs_f64()
    );
    println!(
        "BENCH bench_process_rss_delta_{nodes}_mib={:.1}",
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

async fn bench() -> BenchResult<()> {
    let (sizes, pods_per_node) = sizes()?;
    println!("BENCH sync_pods_per_node={pods_per_node}");
    for nodes in sizes {
        bench_size(nodes, pods_per_node).await?;
    }
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
