//! A kube-rs controller and its tests against kube-sandbox: the ConfigMap replicator.
//!
//! The controller is `examples::replicator` (ConfigMaps labelled
//! `replicate.example.com/all=true` in the source namespace are copied into every other
//! namespace); its tests, `examples/tests/replicator.rs`, run it against an in-process
//! kube-sandbox cluster: the pattern to copy for testing one's own controller.
//!
//! Against a cluster: `configmap_replicator --source-namespace shared --kubeconfig ~/.kube/config`.
//!
//! Without one: `configmap_replicator --sandbox` runs it against an in-process sandbox
//! cluster, creates a source and a namespace after it, deletes the source, prints what
//! happened at each step and exits.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use clap::Parser;
use examples::replicator::{FINALIZER, SOURCE_LABEL, run};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
#[command(about = "Copies labelled ConfigMaps of one namespace into every other namespace")]
struct Cli {
    /// Run against an in-process kube-sandbox cluster, show each step and exit.
    #[arg(long)]
    sandbox: bool,

    /// Namespace whose labelled ConfigMaps are copied.
    #[arg(long, default_value = "shared")]
    source_namespace: String,

    #[command(flatten)]
    common: kube_kit::Args,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    kube_kit::telemetry::init(&cli.common.log_options()).context("logging")?;
    if cli.sandbox {
        return demo(&cli.source_namespace).await;
    }
    let options = cli.common.client_options(kube_kit::client::user_agent(
        "configmap-replicator",
        env!("CARGO_PKG_VERSION"),
    ));
    let client = cli.common.client(&options).await?;
    let stop = kube_kit::shutdown::signal_token()?;
    run(client, &cli.source_namespace, stop).await;
    Ok(())
}

/// Polls `check` every 25 ms for at most 30 s.
async fn wait_for<F, Fut>(what: &str, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check().await? {
        ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Ok(())
}

async fn create_namespace(client: &Client, name: &str) -> anyhow::Result<()> {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    Ok(())
}

async fn copy_value(client: &Client, namespace: &str) -> anyhow::Result<Option<String>> {
    let copy = Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .get_opt("ca")
        .await?;
    Ok(copy
        .and_then(|c| c.data)
        .and_then(|d| d.get("value").cloned()))
}

async fn demo(source_namespace: &str) -> anyhow::Result<()> {
    let cluster = kube_sandbox::Cluster::new("replicator");
    let client = cluster.client();
    for ns in [source_namespace, "team-a", "team-b"] {
        create_namespace(&client, ns).await?;
    }
    let stop = CancellationToken::new();
    let controller = tokio::spawn({
        let (client, source_namespace, stop) =
            (client.clone(), source_namespace.to_owned(), stop.clone());
        async move { run(client, &source_namespace, stop).await }
    });

    let source: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "ca", "labels": {SOURCE_LABEL: "true"}},
        "data": {"value": "root-ca-v1"}
    }))?;
    let sources = Api::<ConfigMap>::namespaced(client.clone(), source_namespace);
    sources.create(&PostParams::default(), &source).await?;
    for ns in ["team-a", "team-b"] {
        wait_for(&format!("the copy in {ns}"), || async {
            Ok(copy_value(&client, ns).await?.is_some())
        })
        .await?;
    }
    println!("proved: {source_namespace}/ca was copied into team-a and team-b");

    create_namespace(&client, "team-c").await?;
    wait_for("the copy in team-c", || async {
        Ok(copy_value(&client, "team-c").await?.is_some())
    })
    .await?;
    println!("proved: namespace team-c, created later, got its copy");

    let finalizers = sources.get("ca").await?.metadata.finalizers;
    ensure!(
        finalizers.is_some_and(|f| f.iter().any(|f| f == FINALIZER)),
        "the source holds no finalizer"
    );
    sources.delete("ca", &DeleteParams::default()).await?;
    wait_for("the copies and the source gone", || async {
        for ns in ["team-a", "team-b", "team-c"] {
            if copy_value(&client, ns).await?.is_some() {
                return Ok(false);
            }
        }
        Ok(sources.get_opt("ca").await?.is_none())
    })
    .await?;
    println!("proved: deleting the source deleted its copies, then the finalizer let it go");

    stop.cancel();
    controller.await.context("the controller task")?;
    cluster.shutdown();
    Ok(())
}
