//! Top-down mapping throughput: 2,000 virtual pods on 50 virtual nodes become physical pods,
//! through two sandbox clusters served over loopback HTTP (the worker reached through the
//! binding's Secret, as in production). The syncer runs in a child process (this bench
//! binary re-executed in syncer mode), as it would in production and on the runtime
//! `kubeocean syncer` uses by default, so that its CPU time can be told apart from the
//! sandbox clusters'.
//!
//! The bench's own clients read answers without managedFields ([`Slim`]), in both phases,
//! and its measuring watch reads pod metadata only, so that measuring costs the machine as
//! little as it can.
//!
//! Prints:
//! - `BENCH raw_worker_creates_per_s`: 2,000 pods of the same shape created directly in the
//!   worker (another namespace, the syncer running), with the syncer's client options and as
//!   many requests in flight as the syncer has pod workers: the ceiling for the syncer;
//! - `BENCH mapping_pods_per_s`: from the first virtual pod create until the last physical
//!   pod appears, 2,000 / seconds;
//! - `BENCH mapping_create_to_physical_p50_ms` / `_p99_ms`: per pod, from its virtual create
//!   returning to its physical pod being seen by a watch of the worker;
//! - `BENCH mapping_vs_raw_ratio`: mapping rate / raw rate;
//! - `BENCH mapping_syncer_cpu_ms_per_pod`: CPU time (user + system) the syncer process
//!   spent during the mapping, per pod;
//! - `BENCH raw_cpu_ms_per_pod` / `mapping_cpu_ms_per_pod`: CPU time of both processes
//!   (the two sandbox clusters, the bench's clients, the syncer) during the raw creates and
//!   during the mapping, per pod.

mod common;

use std::borrow::Cow;
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use kube_kit::client::{ClientOptions, client_from_kubeconfig_yaml};
use kube_kit::slim::Slim;
use kube_sandbox::requests::difference;
use kube_sandbox::{Cluster, ServeOptions, SimNode};
use kubeocean_core::crd::ResourceLeasingPolicy;
use kubeocean_core::naming::physical_name;
use kubeocean_core::setup::{WorkerRegistration, install_crds, register_worker};
use kubeocean_core::syncer::{Syncer, SyncerConfig};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const NODES: usize = 50;
const PODS: usize = 2_000;
const MOUNT: &str = "kubeocean-worker";
const NS: &str = "default";
const DEADLINE: Duration = Duration::from_secs(300);
/// Set in the child process: path of the computing cluster's kubeconfig.
const SYNCER_MODE_ENV: &str = "KUBEOCEAN_MAPPING_BENCH_KUBECONFIG";

type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> BenchResult<T> {
    Ok(serde_json::from_value(value)?)
}

/// The `q`-quantile (0..=1) of sorted `values`.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// A pod as the measuring watch needs it: its metadata, without managedFields (spec and
/// status are skipped while parsing), so that measuring costs the machine little.
#[derive(Clone, Debug, serde::Deserialize)]
struct PodMetadata {
    metadata: ObjectMeta,
}

impl kube::Resource for PodMetadata {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Pod::kind(&())
    }

    fn group(_: &()) -> Cow<'_, str> {
        Pod::group(&())
    }

    fn version(_: &()) -> Cow<'_, str> {
        Pod::version(&())
    }

    fn plural(_: &()) -> Cow<'_, str> {
        Pod::plural(&())
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
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

/// CPU time (user + system) of process `pid`, from `/proc/<pid>/stat`.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15 (1-based), in clock ticks (100 per second on
    // Linux).
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|i| fields.get(*i)?.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

/// CPU time of this process (both sandbox clusters and the bench's clients) and of the
/// syncer child together.
fn machine_cpu(syncer_pid: u32) -> Duration {
    cpu_time(std::process::id()) + cpu_time(syncer_pid)
}

/// Child process: the syncer alone, against the computing cluster's kubeconfig.
async fn run_syncer(kubeconfig: &str) -> BenchResult<()> {
    let options = ClientOptions::new("kubeocean-bench").with_rate_limit(0.0, 0);
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

/// A pod like the ones the syncer writes: pinned to a node by affinity, one container.
fn pod_like_physical(name: &str, node: &str) -> BenchResult<Pod> {
    from_json(json!({
        "metadata": { "name": name, "labels": { "app": "bench", "kubeocean.io/managed-by": "kubeocean" },
            "annotations": { "kubeocean.io/virtual-pod-namespace": NS, "kubeocean.io/virtual-pod-name": name } },
        "spec": {
            "affinity": { "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{ "matchFields": [{ "key": "metadata.name", "operator": "In", "values": [node] }] }] } } },
            "priorityClassName": "kubeocean-default",
            "automountServiceAccountToken": false,
            "containers": [{ "name": "app", "image": "nginx:1",
                "resources": { "requests": { "cpu": "10m", "memory": "16Mi" } } }],
        },
    }))
}

/// Creates `PODS` pods in `namespace` of the worker with `concurrency` requests in flight;
/// returns creates per second.
async fn raw_creates(w: &Client, namespace: &str, concurrency: usize) -> BenchResult<f64> {
    let api: Api<Slim<Pod>> = Api::namespaced(w.clone(), namespace);
    let pods: Vec<Slim<Pod>> = (0..PODS)
        .map(|i| {
            pod_like_physical(&format!("raw-{i:04}"), &format!("node-{:02}", i % NODES)).map(Slim)
        })
        .collect::<BenchResult<_>>()?;
    let started = Instant::now();
    let results: Vec<Result<Slim<Pod>, kube::Error>> = futures::stream::iter(pods)
        .map(|pod| {
            let api = api.clone();
            async move { api.create(&PostParams::default(), &pod).await }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let took = started.elapsed();
    for result in results {
        result?;
    }
    Ok(PODS as f64 / took.as_secs_f64())
}

async fn bench() -> BenchResult<()> {
    let computing = Cluster::new("computing");
    let worker = Cluster::new("worker");
    let dir = std::env::temp_dir().join(format!("kubeocean-mapping-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let kubeconfig = dir.join("computing.yaml");
    let served_computing = computing
        .serve(ServeOptions {
            kubeconfig_path: Some(kubeconfig.clone()),
            ..ServeOptions::default()
        })
        .await?;
    let served_worker = worker.serve(ServeOptions::default()).await?;
    let options = ClientOptions::new("kubeocean-bench").with_rate_limit(0.0, 0);
    let c = client_from_kubeconfig_yaml(
        &served_computing.kubeconfig_yaml,
        None,
        &options,
        "computing",
    )
    .await?;
    let w = client_from_kubeconfig_yaml(&served_worker.kubeconfig_yaml, None, &options, "worker")
        .await?;
    install_crds(&c).await?;
    install_crds(&w).await?;
    for i in 0..NODES {
        worker.add_node(
            &SimNode::new(&format!("node-{i:02}"), "64", "256Gi").capacity("pods", "500"),
        )?;
    }
    Api::<PriorityClass>::all(w.clone())
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "kubeocean-default" }, "value": 100 }))?,
        )
        .await?;
    let policy: ResourceLeasingPolicy = from_json(json!({
        "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
        "metadata": { "name": "all" }, "spec": { "cluster": "bench" },
    }))?;
    Api::<ResourceLeasingPolicy>::all(w.clone())
        .create(&PostParams::default(), &policy)
        .await?;

    register_worker(
        &c,
        &WorkerRegistration {
            binding: "bench",
            cluster_id: "bench",
            secret_namespace: "kubeocean-system",
            mount_namespace: MOUNT,
            kubeconfig: &served_worker.kubeconfig_yaml,
        },
    )
    .await?;
    let workers = SyncerConfig::new("bench").workers;
    let child = Command::new(std::env::current_exe()?)
        .env(SYNCER_MODE_ENV, &kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let syncer = ChildSyncer(child);
    let syncer_pid = syncer.0.id();
    let vnodes: Api<Node> = Api::all(c.clone());
    let started = Instant::now();
    loop {
        let ready = vnodes
            .list(&ListParams::default().labels("kubeocean.io/cluster-binding=bench"))
            .await?
            .items
            .len();
        if ready == NODES {
            break;
        }
        if started.elapsed() > DEADLINE {
            return Err(format!("only {ready} of {NODES} virtual nodes").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The raw ceiling, with the syncer running (its watches see these pods too), in a
    // namespace of its own, then cleared away.
    Api::<Namespace>::all(w.clone())
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "raw" } }))?,
        )
        .await?;
    let raw_cpu_before = machine_cpu(syncer_pid);
    let raw_rate = raw_creates(&w, "raw", workers).await?;
    let raw_cpu = machine_cpu(syncer_pid).saturating_sub(raw_cpu_before);
    let raw_pods: Api<Pod> = Api::namespaced(w.clone(), "raw");
    raw_pods
        .delete_collection(
            &DeleteParams {
                grace_period_seconds: Some(0),
                ..DeleteParams::default()
            },
            &ListParams::default(),
        )
        .await?;
    let started = Instant::now();
    while !raw_pods
        .list(&ListParams::default())
        .await?
        .items
        .is_empty()
    {
        if started.elapsed() > DEADLINE {
            return Err("the raw pods were not removed".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Physical pods as a watch of the worker sees them.
    let seen: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let watch = tokio::spawn({
        let seen = seen.clone();
        let api: Api<Slim<PodMetadata>> = Api::namespaced(w.clone(), MOUNT);
        async move {
            let stream = watcher(api, watcher::Config::default());
            futures::pin_mut!(stream);
            while let Some(event) = stream.next().await {
                let pods = match event {
                    Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => vec![p],
                    _ => Vec::new(),
                };
                let now = Instant::now();
                let mut seen = seen
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                for pod in pods {
                    seen.entry(pod.name_any()).or_insert(now);
                }
            }
        }
    });

    let virtual_pods: Api<Slim<Pod>> = Api::namespaced(c.clone(), NS);
    let to_create: Vec<(String, Slim<Pod>)> = (0..PODS)
        .map(|i| {
            let name = format!("web-{i:04}");
            let pod = from_json(json!({
                "metadata": { "name": name, "labels": { "app": "web" } },
                "spec": { "nodeName": format!("vnode-bench-node-{:02}", i % NODES),
                    "tolerations": [{ "key": "kubeocean.io/vnode", "operator": "Exists" }],
                    "containers": [{ "name": "app", "image": "nginx:1",
                        "resources": { "requests": { "cpu": "10m", "memory": "16Mi" } } }] },
            }))?;
            Ok((name, Slim(pod)))
        })
        .collect::<BenchResult<_>>()?;
    let requests_before = (
        computing.requests().snapshot(),
        worker.requests().snapshot(),
    );
    let cpu_before = cpu_time(syncer_pid);
    let mapping_cpu_before = machine_cpu(syncer_pid);
    let first_create = Instant::now();
    let created: Vec<BenchResult<(String, Instant)>> = futures::stream::iter(to_create)
        .map(|(name, pod)| {
            let api = virtual_pods.clone();
            async move {
                api.create(&PostParams::default(), &pod).await?;
                Ok((name, Instant::now()))
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    let virtual_created = first_create.elapsed();
    let mut created_at = HashMap::new();
    for result in created {
        let (name, at) = result?;
        created_at.insert(physical_name(NS, &name), at);
    }
    let started = Instant::now();
    loop {
        let count = seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .filter(|k| created_at.contains_key(*k))
            .count();
        if count == PODS {
            break;
        }
        if started.elapsed() > DEADLINE {
            return Err(format!("only {count} of {PODS} physical pods").into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let syncer_cpu = cpu_time(syncer_pid).saturating_sub(cpu_before);
    let mapping_cpu = machine_cpu(syncer_pid).saturating_sub(mapping_cpu_before);
    let requests = [
        (
            "computing",
            difference(&requests_before.0, &computing.requests().snapshot()),
        ),
        (
            "worker",
            difference(&requests_before.1, &worker.requests().snapshot()),
        ),
    ];
    let seen = seen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let mut latencies: Vec<f64> = created_at
        .iter()
        .filter_map(|(name, at)| {
            let physical = seen.get(name)?;
            Some(physical.saturating_duration_since(*at).as_secs_f64() * 1000.0)
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    let last_seen = created_at
        .keys()
        .filter_map(|name| seen.get(name))
        .max()
        .copied()
        .unwrap_or(first_create);
    let mapping_rate = PODS as f64 / last_seen.duration_since(first_create).as_secs_f64();

    println!("BENCH raw_worker_creates_per_s={raw_rate:.1}");
    println!("BENCH mapping_pods_per_s={mapping_rate:.1}");
    println!(
        "BENCH mapping_create_to_physical_p50_ms={:.1}",
        quantile(&latencies, 0.5)
    );
    println!(
        "BENCH mapping_create_to_physical_p99_ms={:.1}",
        quantile(&latencies, 0.99)
    );
    println!("BENCH mapping_vs_raw_ratio={:.2}", mapping_rate / raw_rate);
    println!(
        "BENCH mapping_virtual_creates_per_s={:.1}",
        PODS as f64 / virtual_created.as_secs_f64()
    );
    println!(
        "BENCH mapping_syncer_cpu_ms_per_pod={:.3}",
        syncer_cpu.as_secs_f64() * 1000.0 / PODS as f64
    );
    println!(
        "BENCH raw_cpu_ms_per_pod={:.3}",
        raw_cpu.as_secs_f64() * 1000.0 / PODS as f64
    );
    println!(
        "BENCH mapping_cpu_ms_per_pod={:.3}",
        mapping_cpu.as_secs_f64() * 1000.0 / PODS as f64
    );

    for (cluster, counts) in &requests {
        let writes: u64 = counts
            .iter()
            .filter(|(k, _)| k.is_write())
            .map(|(_, n)| n)
            .sum();
        println!(
            "BENCH mapping_{cluster}_writes_per_pod={:.2}",
            writes as f64 / PODS as f64
        );
        for (kind, n) in counts {
            eprintln!(
                "{cluster}: {} {}/{} x{n}",
                kind.verb, kind.resource, kind.subresource
            );
        }
    }

    drop(syncer);
    watch.abort();
    let _ = std::fs::remove_dir_all(&dir);
    served_computing.stop();
    served_worker.stop();
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
        panic!("mapping bench failed: {err}");
    }
}
