//! `kairship controller-manager`: flags, then the library's controllers under leader election
//! with the admin endpoints.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use kairship_core::controllers::role_binding_webhook::{self, WebhookState, tls_acceptor};
use kairship_core::controllers::{
    Context, ControllerConfig, GlobalRegistry, HttpRegistry, MANAGER_NAME, NoopRegistry,
    ReadBackend, run_leading,
};
use kube_kit::admin::{AdminState, Metrics, Readiness};
use kube_kit::args::parse_duration;
use kube_kit::leader::{LeaderElectionMetrics, StopGrace, run_elected};

/// Which read backend instances are registered with.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The apiserver's embedded cache: nothing is registered.
    Embedded,
    /// Clusterpedia: a PediaCluster per instance.
    Clusterpedia,
}

/// Flags of `kairship controller-manager`.
#[derive(clap::Args, Debug)]
pub struct ControllerManagerArgs {
    #[command(flatten)]
    common: kube_kit::Args,

    /// Interval between control-plane probes of each instance.
    #[arg(long, env = "KAIRSHIP_PROBE_INTERVAL", default_value = "10s", value_parser = parse_duration)]
    probe_interval: Duration,

    /// Time one call to an instance (probe, read) may take.
    #[arg(long, env = "KAIRSHIP_REQUEST_TIMEOUT", default_value = "5s", value_parser = parse_duration)]
    request_timeout: Duration,

    /// Failed probes in a row that make an instance UNAVAILABLE.
    #[arg(long, env = "KAIRSHIP_FAILURE_THRESHOLD", default_value_t = 3)]
    failure_threshold: u32,

    /// Read backend instances are registered with.
    #[arg(long, env = "KAIRSHIP_READ_BACKEND", value_enum, default_value_t = Backend::Embedded)]
    read_backend: Backend,

    /// Clusterpedia's namespace (kubeconfig Secrets of PediaClusters go there).
    #[arg(
        long,
        env = "KAIRSHIP_CLUSTERPEDIA_NAMESPACE",
        default_value = "clusterpedia-system"
    )]
    clusterpedia_namespace: String,

    /// Base URL of an HTTP global registry; default: none (Kubernetes RBAC only).
    #[arg(long, env = "KAIRSHIP_REGISTRY_URL")]
    registry_url: Option<String>,

    /// File holding the bearer token for the global registry.
    #[arg(long, env = "KAIRSHIP_REGISTRY_TOKEN_FILE")]
    registry_token_file: Option<PathBuf>,

    /// Address of the role-binding webhook; default: not served.
    #[arg(long, env = "KAIRSHIP_WEBHOOK_ADDR")]
    webhook_addr: Option<SocketAddr>,

    /// File holding the webhook's HMAC secret (required with --webhook-addr).
    #[arg(long, env = "KAIRSHIP_WEBHOOK_SECRET_FILE")]
    webhook_secret_file: Option<PathBuf>,

    /// Accepted clock difference of signed webhook calls.
    #[arg(long, env = "KAIRSHIP_WEBHOOK_REPLAY_WINDOW", default_value = "5m", value_parser = parse_duration)]
    webhook_replay_window: Duration,

    /// PEM certificate chain for HTTPS on the webhook.
    #[arg(long, env = "KAIRSHIP_WEBHOOK_TLS_CERT", requires = "webhook_tls_key")]
    webhook_tls_cert: Option<PathBuf>,

    /// PEM private key for HTTPS on the webhook.
    #[arg(long, env = "KAIRSHIP_WEBHOOK_TLS_KEY", requires = "webhook_tls_cert")]
    webhook_tls_key: Option<PathBuf>,
}

fn read_file(path: &PathBuf, what: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading the {what} from {}", path.display()))
}

/// Runs the controller-manager until SIGTERM/SIGINT.
pub async fn run(args: ControllerManagerArgs) -> anyhow::Result<()> {
    let kube_kit::process::Started {
        log,
        admin: admin_server,
        shutdown,
        client_options: _,
        client,
    } = kube_kit::process::start(&args.common, MANAGER_NAME, env!("CARGO_PKG_VERSION")).await?;
    // Every replica holds the webhook's port from the start (one that does not lead answers
    // 503), so a busy port stops the process here too, not when it first leads.
    let webhook_listener = match args.webhook_addr {
        None => None,
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| anyhow::anyhow!("cannot listen on {addr} (webhook): {e}"))?,
        ),
    };

    let metrics = Metrics::new();
    let readiness = Readiness::new();
    let elector = args.common.elector(
        &client,
        MANAGER_NAME,
        &LeaderElectionMetrics::register(&metrics),
    )?;
    readiness.add_leader_check("leader-election", elector.subscribe());

    let registry: Arc<dyn GlobalRegistry> = match &args.registry_url {
        Some(url) => {
            let token = match &args.registry_token_file {
                Some(path) => Some(
                    String::from_utf8(read_file(path, "registry token")?)
                        .context("the registry token is not UTF-8 text")?
                        .trim()
                        .to_owned(),
                ),
                None => None,
            };
            Arc::new(HttpRegistry::new(url, token, args.request_timeout)?)
        }
        None => Arc::new(NoopRegistry),
    };
    let config = ControllerConfig {
        read_backend: match args.read_backend {
            Backend::Embedded => ReadBackend::Embedded,
            Backend::Clusterpedia => ReadBackend::Clusterpedia {
                namespace: args.clusterpedia_namespace.clone(),
            },
        },
        probe_interval: args.probe_interval,
        request_timeout: args.request_timeout,
        failure_threshold: args.failure_threshold,
        ..ControllerConfig::default()
    };
    let webhook = match webhook_listener {
        None => None,
        Some(listener) => {
            let secret_file = args
                .webhook_secret_file
                .as_ref()
                .context("--webhook-addr needs --webhook-secret-file")?;
            let secret = read_file(secret_file, "webhook secret")?;
            let secret = secret.trim_ascii();
            anyhow::ensure!(!secret.is_empty(), "the webhook secret file is empty");
            let tls = match (&args.webhook_tls_cert, &args.webhook_tls_key) {
                (Some(cert), Some(key)) => Some(tls_acceptor(
                    &read_file(cert, "webhook certificate")?,
                    &read_file(key, "webhook key")?,
                )?),
                _ => None,
            };
            let state = WebhookState::new(client.clone(), secret, args.webhook_replay_window);
            state.set_leading(false);
            let router = role_binding_webhook::router(state.clone());
            let stop = shutdown.clone();
            tokio::spawn(async move {
                if let Err(err) =
                    role_binding_webhook::serve(listener, router, tls, stop.clone()).await
                {
                    tracing::error!(error = %err, "role-binding webhook stopped");
                    // Running on without the webhook would refuse every call unnoticed.
                    stop.cancel();
                }
            });
            Some(state)
        }
    };
    let ctx = Context::new(client, config, registry, &metrics);

    let admin = admin_server.spawn(
        AdminState {
            metrics,
            readiness,
            log: Some(log),
        },
        shutdown.clone(),
    );
    let outcome = run_elected(
        elector.as_ref(),
        shutdown.clone(),
        StopGrace::default(),
        |term| run_leading(ctx.clone(), webhook.clone(), term),
    )
    .await?;
    tracing::info!(?outcome, "controller-manager stopped");
    shutdown.cancel();
    admin.await.context("admin server task")??;
    Ok(())
}
