//! Service reflection: 200 Services of a `serviceNamespaces` namespace with one
//! EndpointSlice of 10 endpoints each, reflected into the worker by a syncer running in a
//! child process (this bench binary re-executed in syncer mode, as in `sync.rs`), both
//! clusters served over loopback HTTP.
//!
//! Prints:
//! - `BENCH service_reflection_200x10_s`: from starting the syncer until the worker holds
//!   every reflected Service and all 2,000 endpoints;
//! - `BENCH service_reflection_syncer_rss_mib` / `..._peak_rss_mib`: resident memory (VmRSS /
//!   VmHWM) of the syncer then.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use kube_sandbox::{Cluster, ServeOptions};
use kubeocean_core::crd::ClusterBinding;
use kubeocean_core::syncer::{Syncer, SyncerConfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const SERVICES: usize = 200;
const ENDPOINTS: usize = 10;
const NAMESPACE: &str = "shop";
const MOUNT: &str = "kubeocean-worker";
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

/// Waits until the worker holds `SERVICES` reflected Services and every endpoint.
async fn wait_reflected(w: &Client) -> BenchResult<()> {
    let services: Api<Service> = Api::namespaced(w.clone(), MOUNT);
    let slices: Api<EndpointSlice> = Api::namespaced(w.clone(), MOUNT);
    let managed = ListParams::default().labels("kubeocean.io/managed-by=kubeocean");
    let started = Instant::now();
    loop {
        let s = services.list(&managed).await?.items.len();
        let e: usize = slices
            .list(&managed)
            .await?
            .items
            .iter()
            .map(|s| s.endpoints.len())
            .sum();
        if s >= SERVICES && e >= SERVICES * ENDPOINTS {
            return Ok(());
        }
        if started.elapsed() > DEADLINE {
            return Err(format!("only {s} Services and {e} endpoints reflected").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn bench() -> BenchResult<()> {
    let computing = Cluster::new("computing");
    let worker = Cluster::new("worker");
    let dir = std::env::temp_dir().join(format!("kubeocean-svc-bench-{}", std::process::id()));
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
    kubeocean_core::setup::register_worker(
        &c,
        &kubeocean_core::setup::WorkerRegistration {
            binding: "bench",
            cluster_id: "bench",
            secret_namespace: "kubeocean-system",
            mount_namespace: MOUNT,
            kubeconfig: &served.kubeconfig_yaml,
        },
    )
    .await?;
    Api::<ClusterBinding>::all(c.clone())
        .patch(
            "bench",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "serviceNamespaces": [NAMESPACE] } })),
        )
        .await?;
    let namespace: Namespace =
        serde_json::from_value(json!({ "metadata": { "name": NAMESPACE } }))?;
    Api::<Namespace>::all(c.clone())
        .create(&PostParams::default(), &namespace)
        .await?;
    let services: Api<Service> = Api::namespaced(c.clone(), NAMESPACE);
    let slices: Api<EndpointSlice> = Api::namespaced(c.clone(), NAMESPACE);
    for i in 0..SERVICES {
        let name = format!("svc-{i:03}");
        let service: Service = serde_json::from_value(json!({
            "metadata": { "name": name },
            "spec": { "selector": { "app": name }, "ports": [{ "name": "http", "port": 80, "targetPort": 8080 }] },
        }))?;
        services.create(&PostParams::default(), &service).await?;
        let endpoints: Vec<_> = (0..ENDPOINTS)
            .map(|j| {
                json!({ "addresses": [format!("10.{}.{}.{}", 100 + i / 250, i % 250, j + 1)],
                "conditions": { "ready": true } })
            })
            .collect();
        let slice: EndpointSlice = serde_json::from_value(json!({
            "metadata": { "name": format!("{name}-abcde"),
                "labels": { "kubernetes.io/service-name": name } },
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": [{ "name": "http", "port": 8080, "protocol": "TCP" }],
        }))?;
        slices.create(&PostParams::default(), &slice).await?;
    }

    let started = Instant::now();
    let child = Command::new(std::env::current_exe()?)
        .env(SYNCER_MODE_ENV, &kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let syncer = ChildSyncer(child);
    let pid = syncer.0.id().to_string();
    wait_reflected(&w).await?;
    println!(
        "BENCH service_reflection_200x10_s={:.3}",
        started.elapsed().as_secs_f64()
    );
    println!(
        "BENCH service_reflection_syncer_rss_mib={:.1}",
        memory_mib(&pid, "VmRSS")
    );
    println!(
        "BENCH service_reflection_syncer_peak_rss_mib={:.1}",
        memory_mib(&pid, "VmHWM")
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
        panic!("service reflection bench failed: {err}");
    }
}
