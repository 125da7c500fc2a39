//! A tiny leader-elected controller built on kube-kit.
//!
//! Every replica campaigns for a Lease; only the leader runs the "greeter" controller, which
//! writes `data.greeting = "hello from <identity>"` into each ConfigMap labelled
//! `kube-kit.example/greet=true`. The process serves `/metrics`, `/healthz`, `/readyz` and
//! `/debug/log-level`, and shuts down gracefully on SIGTERM/SIGINT.
//!
//! Against a cluster:
//! `leader_elected_controller --leader-elect --kubeconfig ~/.kube/config`
//!
//! Without one: `leader_elected_controller --sandbox --leader-elect --replicas 2 --run-for 40s
//! --metrics-addr 127.0.0.1:0 --probe-addr 127.0.0.1:0` starts an in-process kube-sandbox
//! cluster, runs two replicas, stops the leader halfway through (it releases the lease) and
//! shows the other replica taking over.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::{Controller, watcher};
use kube::{Api, Client, ResourceExt};
use kube_kit::admin::{AdminServer, AdminState};
use kube_kit::args::parse_duration;
use kube_kit::client::user_agent;
use kube_kit::controller::{ControllerMetrics, ControllerRunner, ReconcileError};
use kube_kit::leader::{LeaderElectionMetrics, LeaderElector, StopGrace, run_elected};
use kube_kit::shutdown::{DEFAULT_SHUTDOWN_GRACE, run_with_grace, signal_token};
use tokio_util::sync::CancellationToken;

const LEASE_NAME: &str = "greeter-controller";
const LABEL: &str = "kube-kit.example/greet";

#[derive(Parser, Debug)]
#[command(about = "A tiny leader-elected controller built on kube-kit")]
struct Cli {
    #[command(flatten)]
    common: kube_kit::Args,

    /// Run against an in-process kube-sandbox cluster instead of a real one.
    #[arg(long)]
    sandbox: bool,

    /// Replicas to run in this process (each with its own identity), to watch a failover.
    #[arg(long, default_value_t = 1)]
    replicas: usize,

    /// Stop after this long (e.g. `30s`); by default run until SIGTERM/SIGINT.
    #[arg(long, value_parser = parse_duration)]
    run_for: Option<Duration>,
}

/// What the greeter's reconciles share.
struct Greeter {
    client: Client,
    identity: String,
}

#[derive(Debug, thiserror::Error)]
enum GreetError {
    #[error("configmap has no namespace")]
    NoNamespace,
    #[error("patching configmap {name}: {source}")]
    Patch {
        name: String,
        #[source]
        source: kube::Error,
    },
}

impl ReconcileError for GreetError {
    fn reason(&self) -> std::borrow::Cow<'static, str> {
        match self {
            Self::NoNamespace => "NoNamespace".into(),
            Self::Patch { .. } => "PatchFailed".into(),
        }
    }
}

async fn greet(cm: Arc<ConfigMap>, ctx: Arc<Greeter>) -> Result<Action, GreetError> {
    let greeting = format!("hello from {}", ctx.identity);
    let current = cm.data.as_ref().and_then(|d| d.get("greeting"));
    if current != Some(&greeting) {
        let namespace = cm.namespace().ok_or(GreetError::NoNamespace)?;
        let name = cm.name_any();
        let patch = serde_json::json!({ "data": { "greeting": greeting } });
        Api::<ConfigMap>::namespaced(ctx.client.clone(), &namespace)
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| GreetError::Patch {
                name: name.clone(),
                source,
            })?;
        tracing::info!(configmap = %name, %greeting, "greeted");
    }
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// One replica: campaigns with `elector` and runs the greeter while leading.
async fn run_replica(
    elector: Box<dyn LeaderElector>,
    client: Client,
    metrics: ControllerMetrics,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let identity = elector.identity().to_owned();
    let outcome = run_elected(elector.as_ref(), stop, StopGrace::default(), |token| {
        let context = Arc::new(Greeter {
            client: client.clone(),
            identity: identity.clone(),
        });
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: "greeter".into(),
                instance: Some(identity.clone()),
            },
        );
        let controller = Controller::new(
            Api::<ConfigMap>::all(client.clone()),
            watcher::Config::default().labels(&format!("{LABEL}=true")),
        );
        ControllerRunner::new("greeter", context, metrics.clone())
            .with_recorder(recorder)
            .run(controller, greet, token)
    })
    .await?;
    tracing::info!(%identity, ?outcome, "replica stopped");
    Ok(())
}

/// A demo ConfigMap for the sandbox.
async fn seed(client: &Client) -> anyhow::Result<()> {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("hello".into()),
            namespace: Some("default".into()),
            labels: Some(BTreeMap::from([(LABEL.to_owned(), "true".to_owned())])),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .context("creating the demo configmap")?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let log = kube_kit::telemetry::init(&cli.common.log_options())?;
    // Bound first: a busy port stops the process now, not after it ran without probes.
    let admin_server = AdminServer::bind(cli.common.metrics_addr, cli.common.probe_addr).await?;
    let shutdown = signal_token()?;
    if let Some(run_for) = cli.run_for {
        let token = shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(run_for).await;
            tracing::info!(?run_for, "run time over; shutting down");
            token.cancel();
        });
    }

    let sandbox = cli.sandbox.then(|| kube_sandbox::Cluster::new("example"));
    let client = match &sandbox {
        Some(cluster) => {
            let client = cluster.client();
            seed(&client).await?;
            client
        }
        None => {
            let options = cli.common.client_options(user_agent(
                "leader-elected-controller",
                env!("CARGO_PKG_VERSION"),
            ));
            cli.common.client(&options).await?
        }
    };

    let admin_state = AdminState {
        log: Some(log),
        ..AdminState::default()
    };
    let controller_metrics = ControllerMetrics::register(&admin_state.metrics);
    let leader_metrics = LeaderElectionMetrics::register(&admin_state.metrics);

    let mut replicas = Vec::new();
    for i in 0..cli.replicas.max(1) {
        let mut args = cli.common.clone();
        if cli.replicas > 1 {
            args.leader_elect_identity = Some(format!("replica-{i}"));
        }
        let elector = args.elector(&client, LEASE_NAME, &leader_metrics)?;
        admin_state
            .readiness
            .add_leader_check(format!("leader-election-{i}"), elector.subscribe());
        replicas.push((elector, shutdown.child_token()));
    }

    // The replicas' tokens are children of `shutdown`: a failing admin server stops them.
    let server = admin_server.spawn(admin_state, shutdown.clone());

    // In the sandbox demo, stop whichever replica leads halfway through to show a failover.
    if let (Some(run_for), true) = (cli.run_for, replicas.len() > 1) {
        let watched: Vec<_> = replicas
            .iter()
            .map(|(elector, token)| (elector.subscribe(), token.clone()))
            .collect();
        tokio::spawn(async move {
            tokio::time::sleep(run_for / 2).await;
            if let Some((_, token)) = watched
                .iter()
                .find(|(state, _)| state.borrow().is_leading())
            {
                tracing::info!("stopping the leading replica to show a failover");
                token.cancel();
            }
        });
    }

    let runs = replicas.into_iter().map(|(elector, token)| {
        run_replica(elector, client.clone(), controller_metrics.clone(), token)
    });
    let results = run_with_grace(
        &shutdown,
        DEFAULT_SHUTDOWN_GRACE,
        futures::future::join_all(runs),
    )
    .await?;
    for result in results {
        result?;
    }
    server.await.context("admin server task")??;

    if let Some(cluster) = sandbox {
        let cm = Api::<ConfigMap>::namespaced(cluster.client(), "default")
            .get("hello")
            .await?;
        let greeting = cm.data.and_then(|d| d.get("greeting").cloned());
        println!("configmap default/hello: greeting = {greeting:?}");
        cluster.shutdown();
    }
    Ok(())
}
