//! `kubeocean syncer`: flags, then [`kubeocean_core::syncer::Syncer::run`].

use std::time::Duration;

use anyhow::Context as _;
use kube_kit::admin::AdminState;
use kube_kit::args::parse_duration;
use kube_kit::leader::{LeaderElectionMetrics, StopGrace, run_elected};
use kubeocean_core::syncer::config::ProxierPods;
use kubeocean_core::syncer::{ProxierEndpoint, ServiceRef, Syncer, SyncerConfig, SyncerMetrics};

/// Flags of `kubeocean syncer`.
#[derive(Debug, clap::Args)]
pub struct SyncerArgs {
    /// Name of the ClusterBinding to sync.
    #[arg(long, env = "CLUSTER_BINDING")]
    cluster_binding: String,

    /// Namespace of the binding's Secret when its secretRef has none.
    #[arg(long, env = "POD_NAMESPACE", default_value = "kubeocean-system")]
    secret_namespace: String,

    /// How often virtual node Leases are renewed.
    #[arg(long, env = "LEASE_RENEW_INTERVAL", default_value = "10s", value_parser = parse_duration)]
    lease_renew_interval: Duration,

    /// Duration written into virtual node Leases.
    #[arg(long, env = "LEASE_DURATION", default_value = "40s", value_parser = parse_duration)]
    lease_duration: Duration,

    /// Address of the proxier, written as the virtual nodes' InternalIP.
    #[arg(long, env = "PROXIER_ADDRESS")]
    proxier_address: Option<String>,

    /// Kubelet port of the virtual nodes (served by the proxier) when they share one.
    #[arg(long, env = "PROXIER_PORT", default_value_t = 10250)]
    proxier_port: i32,

    /// Ports (`START-END`) handed out one per virtual node, each served by the proxier for
    /// that node alone at --proxier-address (the proxier pod's IP); `0`: every virtual node
    /// shares --proxier-port.
    #[arg(long, env = "PROXIER_NODE_PORTS", default_value = "0", value_parser = crate::manager::parse_port_range)]
    proxier_node_ports: crate::manager::PortRange,

    /// Label selector of the proxier's pods: the virtual nodes advertise the IP of a ready
    /// one (instead of --proxier-address) and follow it when that pod is replaced.
    #[arg(long, env = "PROXIER_POD_SELECTOR")]
    proxier_pod_selector: Option<String>,

    /// Namespace of the proxier's pods (default: --secret-namespace).
    #[arg(long, env = "PROXIER_POD_NAMESPACE")]
    proxier_pod_namespace: Option<String>,

    /// How often the proxier's pods are listed.
    #[arg(long, env = "PROXIER_POD_INTERVAL", default_value = "5s", value_parser = parse_duration)]
    proxier_pod_interval: Duration,

    /// Virtual nodes reconciled at once; also the workers of each top-down pod queue.
    #[arg(long, env = "SYNCER_WORKERS", default_value_t = 16)]
    workers: usize,

    /// How long one top-down API request may take before it is retried.
    #[arg(long, env = "REQUEST_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    request_timeout: Duration,

    /// Longest wait between retries of a failing reconcile (every reconciler backs off to it).
    #[arg(long, env = "MAX_RETRY_INTERVAL", default_value = "60s", value_parser = parse_duration)]
    max_retry_interval: Duration,

    /// Service of the computing cluster (`namespace/name`) whose address mapped pods use as
    /// their nameserver.
    #[arg(
        long,
        env = "DNS_SERVICE",
        default_value = "kube-system/kube-dns-intranet"
    )]
    dns_service: ServiceRef,

    /// Service of the computing cluster (`namespace/name`) whose address and first port
    /// mapped pods reach the API server at.
    #[arg(
        long,
        env = "API_SERVER_SERVICE",
        default_value = "default/kubernetes-intranet"
    )]
    api_server_service: ServiceRef,

    /// How long a physical pod may stay unscheduled in the worker before it is deleted and
    /// its virtual pod fails.
    #[arg(long, env = "PHYSICAL_POD_SCHEDULING_TIMEOUT", default_value = "5m", value_parser = parse_duration)]
    physical_pod_scheduling_timeout: Duration,

    /// Threads of the async runtime: 1 runs everything on one thread, 0 one per CPU.
    #[arg(long, env = "RUNTIME_THREADS", default_value_t = kubeocean_core::syncer::SYNCER_RUNTIME_THREADS)]
    pub runtime_threads: usize,

    #[command(flatten)]
    kube: kube_kit::Args,
}

/// Runs the syncer until SIGTERM/SIGINT.
pub async fn run(args: SyncerArgs) -> anyhow::Result<()> {
    let kube_kit::process::Started {
        log,
        admin: admin_server,
        shutdown: token,
        client_options: options,
        client,
    } = kube_kit::process::start(&args.kube, "kubeocean-syncer", env!("CARGO_PKG_VERSION")).await?;

    let admin_state = AdminState {
        log: Some(log),
        ..AdminState::default()
    };
    let leader_metrics = LeaderElectionMetrics::register(&admin_state.metrics);
    let syncer_metrics = SyncerMetrics::register(&admin_state.metrics);
    let admin = admin_server.spawn(admin_state, token.clone());

    let mut config = SyncerConfig::new(&args.cluster_binding);
    config.secret_namespace = args.secret_namespace.clone();
    config.client_options = options;
    config.lease_renew_interval = args.lease_renew_interval;
    config.lease_duration = args.lease_duration;
    config.workers = args.workers;
    config.request_timeout = args.request_timeout;
    config.max_retry_interval = args.max_retry_interval;
    config.metrics = Some(syncer_metrics);
    config.dns_service = args.dns_service.clone();
    config.api_server_service = args.api_server_service.clone();
    config.physical_pod_scheduling_timeout = args.physical_pod_scheduling_timeout;
    config.proxier = ProxierEndpoint {
        address: args.proxier_address.clone(),
        port: args.proxier_port,
        node_ports: args.proxier_node_ports.0.clone(),
        pods: args
            .proxier_pod_selector
            .clone()
            .filter(|s| !s.trim().is_empty())
            .map(|selector| ProxierPods {
                namespace: args
                    .proxier_pod_namespace
                    .clone()
                    .unwrap_or_else(|| args.secret_namespace.clone()),
                selector,
                interval: args.proxier_pod_interval,
            }),
    };

    let lease_name = format!("kubeocean-syncer-{}", args.cluster_binding);
    let elector = args
        .kube
        .elector(&client, &lease_name, &leader_metrics)
        .context("leader election")?;
    run_elected(elector.as_ref(), token.clone(), StopGrace::default(), |t| {
        Syncer::new(client.clone(), config.clone()).run(t)
    })
    .await
    .context("leader election")?;
    token.cancel();
    admin.await.context("admin server task")??;
    Ok(())
}
