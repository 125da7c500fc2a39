//! A custom leasing engine plugged into Kubeocean's syncer library: lend only GPUs.
//!
//! `GpuOnlyEngine` asks Kubeocean's default engine what a node would lend, then keeps only
//! nodes with GPUs to spare. Their virtual nodes offer the spare GPUs, one pod slot per GPU
//! and the cpu/memory the default rules allow, and carry the taint
//! `nvidia.com/gpu=present:NoSchedule` so that only GPU workloads land there. Nodes without a
//! spare GPU are not lent (their virtual nodes are drained and removed).
//!
//! Against clusters: `gpu_only_leasing --cluster-binding worker-1 --kubeconfig computing.yaml`
//! (the worker is reached through the binding's Secret, as with `kubeocean syncer`).
//!
//! Without any: `gpu_only_leasing --sandbox` starts a computing and a worker sandbox cluster
//! (a GPU node and a CPU-only node, a policy lending everything), runs the syncer with this
//! engine, prints the virtual nodes and exits.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use k8s_openapi::api::core::v1::Node;
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt};
use kube_kit::quantity::{Format, Quantity};
use kube_sandbox::{Cluster, ServeOptions, SimNode};
use kubeocean_core::crd::ResourceLeasingPolicy;
use kubeocean_core::leasing::{
    DefaultLeasingEngine, LeasingDecision, LeasingInput, LeasingPolicyEngine, NotLentReason, PODS,
    taint,
};
use kubeocean_core::syncer::{Syncer, SyncerConfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The GPU resource lent.
const GPU: &str = "nvidia.com/gpu";
/// Resources a GPU-only virtual node offers besides GPUs.
const KEPT: [&str; 3] = ["cpu", "memory", PODS];

/// Lends only GPU nodes, for GPU workloads.
#[derive(Clone, Copy, Debug, Default)]
struct GpuOnlyEngine;

impl LeasingPolicyEngine for GpuOnlyEngine {
    fn evaluate(&self, input: &LeasingInput<'_>) -> LeasingDecision {
        let mut decision = DefaultLeasingEngine.evaluate(input);
        if !decision.lent {
            return decision;
        }
        let gpus = decision
            .allocatable
            .get(GPU)
            .copied()
            .filter(|q| q.value() > 0);
        let Some(gpus) = gpus else {
            let name = decision.virtual_node_name.clone();
            return LeasingDecision::not_lent(name, NotLentReason::NothingToLend);
        };
        decision
            .allocatable
            .retain(|name, _| name == GPU || KEPT.contains(&name.as_str()));
        // One pod per GPU at most.
        let slots = Quantity::from_units(gpus.value(), Format::DecimalSI);
        let pods = decision.allocatable.entry(PODS.to_owned()).or_insert(slots);
        *pods = (*pods).min(slots);
        decision
            .taints
            .push(taint(GPU, Some("present"), "NoSchedule"));
        decision
    }
}

#[derive(Parser, Debug)]
#[command(about = "Kubeocean's syncer with a custom engine that lends only GPUs")]
struct Cli {
    /// Run against in-process sandbox clusters, print the virtual nodes and exit.
    #[arg(long)]
    sandbox: bool,

    /// The ClusterBinding to sync (not with --sandbox).
    #[arg(long, required_unless_present = "sandbox")]
    cluster_binding: Option<String>,

    #[command(flatten)]
    common: kube_kit::Args,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    kube_kit::telemetry::init(&cli.common.log_options()).context("logging")?;
    if cli.sandbox {
        return run_sandbox().await;
    }
    let binding = cli
        .cluster_binding
        .clone()
        .context("--cluster-binding is required")?;
    let options = cli.common.client_options(kube_kit::client::user_agent(
        "gpu-only-leasing",
        env!("CARGO_PKG_VERSION"),
    ));
    let client = cli.common.client(&options).await?;
    let token = kube_kit::shutdown::signal_token()?;
    let mut config = SyncerConfig::new(binding);
    config.client_options = options;
    Syncer::new(client, config)
        .with_engine(Arc::new(GpuOnlyEngine))
        .run(token)
        .await;
    Ok(())
}

async fn run_sandbox() -> anyhow::Result<()> {
    let computing = Cluster::new("computing");
    let worker = Cluster::new("worker");
    let served = worker.serve(ServeOptions::default()).await?;
    let (c, w) = (computing.client(), worker.client());
    kubeocean_core::setup::install_crds(&c).await?;
    kubeocean_core::setup::install_crds(&w).await?;
    worker.add_node(&SimNode::new("gpu-1", "32", "128Gi").capacity(GPU, "4"))?;
    worker.add_node(&SimNode::new("cpu-1", "16", "64Gi"))?;

    kubeocean_core::setup::register_worker(
        &c,
        &kubeocean_core::setup::WorkerRegistration {
            binding: "worker-1",
            cluster_id: "gpu",
            secret_namespace: "kubeocean-system",
            mount_namespace: "kubeocean-worker",
            kubeconfig: &served.kubeconfig_yaml,
        },
    )
    .await?;
    let policy: ResourceLeasingPolicy = serde_json::from_value(json!({
        "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
        "metadata": { "name": "lend-all" },
        "spec": { "cluster": "worker-1", "resourceLimits": [{ "resource": "cpu", "percent": 50 }] },
    }))?;
    Api::<ResourceLeasingPolicy>::all(w.clone())
        .create(&PostParams::default(), &policy)
        .await?;

    let token = CancellationToken::new();
    let mut config = SyncerConfig::new("worker-1");
    config.client_options = config.client_options.with_rate_limit(0.0, 0);
    let syncer = Syncer::new(c.clone(), config).with_engine(Arc::new(GpuOnlyEngine));
    let task = tokio::spawn(syncer.run(token.clone()));

    let nodes: Api<Node> = Api::all(c.clone());
    let selector = ListParams::default().labels("kubeocean.io/cluster-binding=worker-1");
    let mut found = Vec::new();
    for _ in 0..200 {
        found = nodes.list(&selector).await?.items;
        if !found.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::ensure!(!found.is_empty(), "no virtual node appeared");
    for node in &found {
        let allocatable: BTreeMap<String, String> = node
            .status
            .as_ref()
            .and_then(|s| s.allocatable.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        let taints: Vec<String> = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|t| format!("{}={}:{}", t.key, t.value.unwrap_or_default(), t.effect))
            .collect();
        println!(
            "{}",
            json!({ "virtualNode": node.name_any(), "allocatable": allocatable, "taints": taints })
        );
    }
    let cpu_only = nodes.get_opt("vnode-gpu-cpu-1").await?;
    anyhow::ensure!(cpu_only.is_none(), "the CPU-only node must not be lent");

    token.cancel();
    task.await?;
    served.stop();
    computing.shutdown();
    worker.shutdown();
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use kubeocean_core::crd::ClusterBinding;

    fn node(gpus: Option<&str>) -> Node {
        let mut allocatable =
            json!({ "cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi" });
        if let Some(g) = gpus {
            allocatable[GPU] = json!(g);
        }
        serde_json::from_value(
            json!({ "metadata": { "name": "n" }, "status": { "allocatable": allocatable } }),
        )
        .unwrap()
    }

    fn evaluate(node: &Node) -> LeasingDecision {
        let binding: ClusterBinding = serde_json::from_value(json!({ "metadata": { "name": "b" },
            "spec": { "clusterID": "c", "secretRef": { "name": "s" } } }))
        .unwrap();
        let policy: ResourceLeasingPolicy = serde_json::from_value(
            json!({ "metadata": { "name": "p" }, "spec": { "cluster": "b" } }),
        )
        .unwrap();
        GpuOnlyEngine.evaluate(&LeasingInput {
            node,
            pods: Vec::new(),
            policies: vec![&policy],
            binding: &binding,
            usage: None,
            now: jiff::Timestamp::UNIX_EPOCH,
        })
    }

    #[test]
    fn lends_only_gpu_nodes_with_a_pod_per_gpu() {
        let decision = evaluate(&node(Some("2")));
        assert!(decision.lent);
        let names: Vec<&str> = decision.allocatable.keys().map(String::as_str).collect();
        assert_eq!(names, ["cpu", "memory", GPU, "pods"]);
        assert_eq!(decision.allocatable[PODS].value(), 2);
        assert!(decision.taints.iter().any(|t| t.key == GPU));

        for gpus in [None, Some("0")] {
            let decision = evaluate(&node(gpus));
            assert!(!decision.lent, "{gpus:?}");
            assert_eq!(decision.not_lent_reason, Some(NotLentReason::NothingToLend));
        }
    }
}
