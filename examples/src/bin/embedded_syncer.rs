//! Kubeocean's syncer embedded in another binary: one process, its own work, and a syncer per
//! worker cluster, all stopped by one token.
//!
//! `kubeocean manager` normally starts a syncer per ClusterBinding (as Deployments, or as
//! tasks in embedded mode). A platform agent that already runs in the computing cluster can
//! host them itself instead: `Syncer::new(client, SyncerConfig::new(binding)).run(token)` is
//! a future that connects to the worker through the binding's Secret, keeps the virtual nodes
//! and mapped pods in step, reconnects on its own, and returns once the token is cancelled.
//! Here the agent's own work is a report of how many pods each worker runs for it.
//!
//! Against clusters: `embedded_syncer --binding worker-1 --binding worker-2 --kubeconfig
//! computing.yaml`.
//!
//! Without any: `embedded_syncer --sandbox` starts a computing cluster and two worker
//! clusters (served over loopback HTTP, reached through the bindings' Secrets as in
//! production), runs both syncers in this process, runs a pod on a virtual node of each
//! worker, prints the agent's report, stops everything with one cancellation and exits.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use clap::Parser;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kube_sandbox::{Cluster, ServeOptions, Served, SimNode};
use kubeocean_core::crd::ResourceLeasingPolicy;
use kubeocean_core::labels;
use kubeocean_core::setup::{WorkerRegistration, install_crds, register_worker};
use kubeocean_core::syncer::{Syncer, SyncerConfig};
use serde_json::json;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

const MOUNT_NAMESPACE: &str = "kubeocean-worker";

#[derive(Parser, Debug)]
#[command(about = "A platform agent hosting Kubeocean's syncers")]
struct Cli {
    /// Run against in-process sandbox clusters, show what happened and exit.
    #[arg(long)]
    sandbox: bool,

    /// ClusterBindings to sync (repeat the flag); not with --sandbox.
    #[arg(long = "binding", required_unless_present = "sandbox")]
    bindings: Vec<String>,

    #[command(flatten)]
    common: kube_kit::Args,
}

/// Starts one syncer per binding on `tasks`, each stopping with `token`.
fn start_syncers(
    tasks: &mut JoinSet<()>,
    computing: &Client,
    bindings: &[String],
    tune: impl Fn(&mut SyncerConfig),
    token: &CancellationToken,
) {
    for binding in bindings {
        let mut config = SyncerConfig::new(binding.clone());
        tune(&mut config);
        tasks.spawn(Syncer::new(computing.clone(), config).run(token.clone()));
    }
}

/// The agent's own work: how many Running pods each binding's virtual nodes hold.
async fn report(computing: &Client) -> anyhow::Result<BTreeMap<String, usize>> {
    let nodes = Api::<Node>::all(computing.clone())
        .list(&ListParams::default().labels(labels::CLUSTER_BINDING))
        .await?;
    let pods = Api::<Pod>::all(computing.clone())
        .list(&ListParams::default())
        .await?;
    let mut running = BTreeMap::new();
    for node in &nodes.items {
        let node_name = node.name_any();
        let binding = node
            .labels()
            .get(labels::CLUSTER_BINDING)
            .cloned()
            .unwrap_or_default();
        let count = pods
            .items
            .iter()
            .filter(|p| {
                p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node_name.as_str())
            })
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count();
        *running.entry(binding).or_default() += count;
    }
    Ok(running)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    kube_kit::telemetry::init(&cli.common.log_options()).context("logging")?;
    if cli.sandbox {
        return demo().await;
    }
    let options = cli.common.client_options(kube_kit::client::user_agent(
        "embedded-syncer",
        env!("CARGO_PKG_VERSION"),
    ));
    let computing = cli.common.client(&options).await?;
    let token = kube_kit::shutdown::signal_token()?;
    let mut tasks = JoinSet::new();
    start_syncers(
        &mut tasks,
        &computing,
        &cli.bindings,
        |config| config.client_options = options.clone(),
        &token,
    );
    let mut tick = tokio::time::interval(Duration::from_secs(30));
    loop {
        tokio::select! {
            () = token.cancelled() => break,
            _ = tick.tick() => match report(&computing).await {
                Ok(running) => tracing::info!(?running, "running pods per binding"),
                Err(error) => tracing::warn!(%error, "report failed"),
            },
        }
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// Worker `name`: CRDs, one simulated node, a policy lending it to `name`, the priority class
/// of physical pods; served over loopback and registered as binding `name`.
async fn worker(name: &str, id: &str, computing: &Client) -> anyhow::Result<(Cluster, Served)> {
    let cluster = Cluster::new(name);
    let w = cluster.client();
    install_crds(&w).await?;
    cluster.add_node(&SimNode::new("n1", "8", "16Gi"))?;
    let class: PriorityClass =
        serde_json::from_value(json!({"metadata": {"name": "kubeocean-default"}, "value": 100}))?;
    Api::<PriorityClass>::all(w.clone())
        .create(&PostParams::default(), &class)
        .await?;
    let policy: ResourceLeasingPolicy = serde_json::from_value(json!({
        "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
        "metadata": {"name": "all"}, "spec": {"cluster": name},
    }))?;
    Api::<ResourceLeasingPolicy>::all(w.clone())
        .create(&PostParams::default(), &policy)
        .await?;
    let served = cluster.serve(ServeOptions::default()).await?;
    register_worker(
        computing,
        &WorkerRegistration {
            binding: name,
            cluster_id: id,
            secret_namespace: "kubeocean-system",
            mount_namespace: MOUNT_NAMESPACE,
            kubeconfig: &served.kubeconfig_yaml,
        },
    )
    .await?;
    Ok((cluster, served))
}

/// Polls `check` every 50 ms for at most 60 s.
async fn wait_for<F, Fut>(what: &str, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check().await? {
        ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

async fn demo() -> anyhow::Result<()> {
    let computing = Cluster::new("computing");
    let c = computing.client();
    install_crds(&c).await?;
    let workers = [
        worker("worker-1", "w1", &c).await?,
        worker("worker-2", "w2", &c).await?,
    ];

    let token = CancellationToken::new();
    let mut tasks = JoinSet::new();
    let bindings = ["worker-1".to_owned(), "worker-2".to_owned()];
    start_syncers(
        &mut tasks,
        &c,
        &bindings,
        |config| {
            config.client_options = config.client_options.clone().with_rate_limit(0.0, 0);
            config.connect_retry_interval = Duration::from_millis(200);
            config.retry_interval = Duration::from_millis(100);
        },
        &token,
    );

    let nodes: Api<Node> = Api::all(c.clone());
    wait_for("both virtual nodes", || async {
        Ok(nodes.get_opt("vnode-w1-n1").await?.is_some()
            && nodes.get_opt("vnode-w2-n1").await?.is_some())
    })
    .await?;
    println!(
        "proved: one process hosts both syncers: vnode-w1-n1 and vnode-w2-n1 are in the computing cluster"
    );

    let pods: Api<Pod> = Api::namespaced(c.clone(), "default");
    for (name, node) in [("web-1", "vnode-w1-n1"), ("web-2", "vnode-w2-n1")] {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"nodeName": node, "automountServiceAccountToken": false,
                "tolerations": [{"key": labels::TAINT_VNODE, "operator": "Exists"}],
                "containers": [{"name": "app", "image": "nginx:1",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
        }))?;
        pods.create(&PostParams::default(), &pod).await?;
    }
    wait_for("both pods Running", || async {
        let running = report(&c).await?;
        Ok(running.get("worker-1") == Some(&1) && running.get("worker-2") == Some(&1))
    })
    .await?;
    println!(
        "proved: the agent's report: {:?} Running pod(s) per binding",
        report(&c).await?
    );
    for (cluster, _) in &workers {
        let physical = Api::<Pod>::namespaced(cluster.client(), MOUNT_NAMESPACE)
            .list(&ListParams::default())
            .await?;
        println!(
            "  {}: physical pods {:?}",
            cluster.name(),
            physical
                .items
                .iter()
                .map(ResourceExt::name_any)
                .collect::<Vec<_>>()
        );
    }

    token.cancel();
    let stopped = tokio::time::timeout(Duration::from_secs(30), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    ensure!(
        stopped.is_ok(),
        "the syncers did not stop after the cancellation"
    );
    println!("proved: one cancellation stopped both syncers");

    for (cluster, served) in &workers {
        served.stop();
        cluster.shutdown();
    }
    computing.shutdown();
    Ok(())
}
