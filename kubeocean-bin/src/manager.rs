//! `kubeocean manager`: flags, then [`kubeocean_core::manager::Manager::run`] under leader
//! election, with the admin endpoints (metrics, health, readiness).

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use kube::Api;
use kube::api::ListParams;
use kube_kit::admin::AdminState;
use kube_kit::args::parse_duration;
use kube_kit::controller::ControllerMetrics;
use kube_kit::leader::{LeaderElectionMetrics, StopGrace, run_elected};
use kubeocean_core::crd::ClusterBinding;
use kubeocean_core::manager::serving_cert::{Approval, ServingCertConfig};
use kubeocean_core::manager::{
    BindingRuntime, EmbeddedProxierConfig, EmbeddedRunner, MANAGER_NAME, Manager, ManagerConfig,
    ManagerMetrics, PodSettings, SyncerProxierRuntime, SyncerRuntime, Templates,
    parse_workload_template,
};
use kubeocean_core::naming::is_dns1123_label;
use kubeocean_core::proxier::ProxierMetrics;
use kubeocean_core::syncer::{ServiceRef, SyncerConfig, SyncerMetrics};

/// The image both workloads run by default: this version of the `kubeocean` binary.
fn default_image() -> String {
    format!(
        "ghcr.io/kubeocean-rs/kubeocean:{}",
        env!("CARGO_PKG_VERSION")
    )
}

/// Flags of `kubeocean manager`.
#[derive(Debug, clap::Args)]
pub struct ManagerArgs {
    /// Namespace of the syncer and proxier workloads; also where a binding's Secret is looked
    /// up when its secretRef names no namespace.
    #[arg(long, env = "POD_NAMESPACE", default_value = "kubeocean-system")]
    namespace: String,

    /// Run each binding's syncer and proxier inside this process instead of as Deployments.
    #[arg(long, env = "KUBEOCEAN_EMBEDDED")]
    embedded: bool,

    /// Image of the syncer Deployments.
    #[arg(long, env = "SYNCER_IMAGE", default_value_t = default_image())]
    syncer_image: String,

    /// Image of the proxier Deployments.
    #[arg(long, env = "PROXIER_IMAGE", default_value_t = default_image())]
    proxier_image: String,

    /// imagePullPolicy of both workloads (default: the cluster's).
    #[arg(long, env = "IMAGE_PULL_POLICY", value_parser = ["Always", "IfNotPresent", "Never"])]
    image_pull_policy: Option<String>,

    /// Replicas of each syncer Deployment (more than one elects a leader).
    #[arg(long, env = "SYNCER_REPLICAS", default_value_t = 1)]
    syncer_replicas: i32,

    /// Replicas of each proxier Deployment.
    #[arg(long, env = "PROXIER_REPLICAS", default_value_t = 1)]
    proxier_replicas: i32,

    /// A further flag of every syncer Deployment, repeatable (e.g.
    /// `--syncer-arg=--runtime-threads=2`); not used with --embedded.
    #[arg(long = "syncer-arg", value_name = "FLAG", allow_hyphen_values = true)]
    syncer_args: Vec<String>,

    /// A further flag of every proxier Deployment, repeatable; not used with --embedded.
    #[arg(long = "proxier-arg", value_name = "FLAG", allow_hyphen_values = true)]
    proxier_args: Vec<String>,

    /// Kubelet port of the virtual nodes, served by the proxier, when they share one.
    #[arg(long, env = "PROXIER_PORT", default_value_t = 10250)]
    proxier_port: i32,

    /// Ports (`START-END`) each proxier Deployment serves one virtual node each on, at its
    /// pod IP (the computing cluster's API server must reach pod IPs); `0`: every virtual
    /// node shares the proxier Service's ClusterIP and --proxier-port. Not used with
    /// --embedded (its proxiers share one IP: one port per binding).
    #[arg(
        long,
        env = "PROXIER_NODE_PORTS",
        default_value = "20000-29999",
        value_parser = parse_port_range
    )]
    proxier_node_ports: PortRange,

    /// YAML file of the syncer and proxier pods' settings: sections `global`, `syncer` and
    /// `proxier`, each with imagePullSecrets, resources, nodeSelector, tolerations, affinity,
    /// priorityClassName, podLabels, podAnnotations, podSecurityContext and
    /// containerSecurityContext (docs/kubeocean/install.md). Not used with --embedded.
    #[arg(long, env = "WORKLOAD_TEMPLATE", value_name = "FILE")]
    workload_template: Option<PathBuf>,

    /// ConfigMap (key ca.crt) with the CA the proxiers trust for client certificates.
    #[arg(
        long,
        env = "PROXIER_CLIENT_CA_CONFIGMAP",
        default_value = "kube-root-ca.crt"
    )]
    proxier_client_ca_configmap: String,

    /// How often a Ready binding's connectivity and permissions are checked again.
    #[arg(long, env = "RESYNC_INTERVAL", default_value = "5m", value_parser = parse_duration)]
    resync_interval: Duration,

    /// How soon a failing or progressing binding is looked at again.
    #[arg(long, env = "RETRY_INTERVAL", default_value = "10s", value_parser = parse_duration)]
    retry_interval: Duration,

    /// Embedded mode: Service (`namespace/name`) whose address mapped pods use as their
    /// nameserver (a syncer Deployment takes `--syncer-arg=--dns-service=...`).
    #[arg(
        long,
        env = "DNS_SERVICE",
        default_value = "kube-system/kube-dns-intranet"
    )]
    dns_service: ServiceRef,

    /// Embedded mode: Service (`namespace/name`) whose address and first port mapped pods
    /// reach the API server at.
    #[arg(
        long,
        env = "API_SERVER_SERVICE",
        default_value = "default/kubernetes-intranet"
    )]
    api_server_service: ServiceRef,

    /// Embedded mode: how long a physical pod may stay unscheduled in the worker before it
    /// is deleted and its virtual pod fails.
    #[arg(long, env = "PHYSICAL_POD_SCHEDULING_TIMEOUT", default_value = "5m", value_parser = parse_duration)]
    physical_pod_scheduling_timeout: Duration,

    /// Embedded mode: run the syncers only, without proxiers.
    #[arg(long, env = "EMBEDDED_NO_PROXIER")]
    embedded_no_proxier: bool,

    /// Embedded mode: IP the proxiers listen on (each binding gets its own port).
    #[arg(long, env = "EMBEDDED_PROXIER_LISTEN_IP", default_value = "0.0.0.0")]
    embedded_proxier_listen_ip: IpAddr,

    /// Embedded mode: address written into the virtual nodes, reachable from the API server
    /// (default: $POD_IP, else the listen IP when it is not 0.0.0.0).
    #[arg(long, env = "EMBEDDED_PROXIER_ADDRESS")]
    embedded_proxier_address: Option<String>,

    /// Embedded mode: ports the proxiers take, `START-END`. Each binding keeps the port its
    /// virtual nodes advertise, else takes the one its name hashes to in this range (the next
    /// free one when taken), so restarts keep the kubelet endpoints; `0` lets the system pick.
    #[arg(
        long,
        env = "EMBEDDED_PROXIER_PORTS",
        default_value = "10400-10499",
        value_parser = parse_port_range
    )]
    embedded_proxier_ports: PortRange,

    /// Embedded mode: ports (`START-END`) of the virtual nodes' own endpoints, shared out in
    /// blocks of --embedded-proxier-node-ports-per-binding, one block per binding, one port
    /// per virtual node; `0`: each binding's virtual nodes share its proxier port.
    #[arg(
        long,
        env = "EMBEDDED_PROXIER_NODE_PORTS",
        default_value = "0",
        value_parser = parse_port_range
    )]
    embedded_proxier_node_ports: PortRange,

    /// Embedded mode: ports of --embedded-proxier-node-ports each binding gets.
    #[arg(
        long,
        env = "EMBEDDED_PROXIER_NODE_PORTS_PER_BINDING",
        default_value_t = 1000
    )]
    embedded_proxier_node_ports_per_binding: u16,

    /// Embedded mode: CA (PEM) of the API server's kubelet-client certificates; without it,
    /// each binding's proxier reads `client-ca-file` of the ConfigMap
    /// kube-system/extension-apiserver-authentication, which kube-apiserver publishes.
    #[arg(long, env = "EMBEDDED_PROXIER_CLIENT_CA_FILE", value_name = "FILE")]
    embedded_proxier_client_ca_file: Option<PathBuf>,

    /// Where the proxiers' serving certificates come from: `cluster` (a
    /// `kubernetes.io/kubelet-serving` CertificateSigningRequest signed by the computing
    /// cluster's CA; self-signed, with the binding's ProxierReady reason
    /// SelfSignedCertificate, when the cluster issues none) or `self-signed`.
    #[arg(
        long,
        env = "PROXIER_SERVING_CERT",
        value_enum,
        default_value = "cluster"
    )]
    proxier_serving_cert: ServingCertFlag,

    /// Who approves the proxiers' CertificateSigningRequests: `manager` (needs `approve` on
    /// the signer kubernetes.io/kubelet-serving) or `external` (an admin or another approver;
    /// the manager waits --proxier-csr-timeout).
    #[arg(
        long,
        env = "PROXIER_CSR_APPROVAL",
        value_enum,
        default_value = "manager"
    )]
    proxier_csr_approval: ApprovalFlag,

    /// How long to wait for a proxier's certificate before serving a self-signed one.
    #[arg(long, env = "PROXIER_CSR_TIMEOUT", value_parser = parse_duration, default_value = "60s")]
    proxier_csr_timeout: Duration,

    #[command(flatten)]
    kube: kube_kit::Args,
}

/// `--proxier-serving-cert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ServingCertFlag {
    Cluster,
    SelfSigned,
}

/// `--proxier-csr-approval`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ApprovalFlag {
    Manager,
    External,
}

/// `--embedded-proxier-ports`: a range of ports, or none (`0`: the system picks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortRange(pub Option<std::ops::RangeInclusive<u16>>);

/// Parses `START-END` (`1 <= START <= END`), a single port, or `0`.
pub(crate) fn parse_port_range(text: &str) -> Result<PortRange, String> {
    let port = |p: &str| {
        p.trim()
            .parse::<u16>()
            .map_err(|_| format!("{p:?} is not a port"))
    };
    let (start, end) = match text.split_once('-') {
        Some((start, end)) => (port(start)?, port(end)?),
        None => {
            let single = port(text)?;
            (single, single)
        }
    };
    if start == 0 && end == 0 {
        return Ok(PortRange(None));
    }
    if start == 0 || start > end {
        return Err(format!(
            "{text:?} is not a port range START-END with 1 <= START <= END"
        ));
    }
    Ok(PortRange(Some(start..=end)))
}

/// `--proxier-serving-cert`, `--proxier-csr-approval` and `--proxier-csr-timeout`.
fn serving_cert_config(args: &ManagerArgs) -> ServingCertConfig {
    ServingCertConfig {
        from_cluster: args.proxier_serving_cert == ServingCertFlag::Cluster,
        approval: match args.proxier_csr_approval {
            ApprovalFlag::Manager => Approval::Manager,
            ApprovalFlag::External => Approval::External,
        },
        wait: args.proxier_csr_timeout,
        expiration_seconds: None,
    }
}

/// What the flags resolve to beyond clap's own checks.
#[derive(Debug)]
struct Resolved {
    /// The embedded proxier, when one runs.
    embedded_proxier: Option<EmbeddedProxierConfig>,
    /// Pod settings of the syncer and the proxier Deployments (`--workload-template`).
    pod_settings: (PodSettings, PodSettings),
}

/// Checks what clap cannot; the error is a usage error (exit code 2).
fn resolve(args: &ManagerArgs, pod_ip: Option<String>) -> Result<Resolved, String> {
    if !is_dns1123_label(&args.namespace) {
        return Err(format!(
            "--namespace {:?} is not a valid namespace name",
            args.namespace
        ));
    }
    for (flag, image) in [
        ("--syncer-image", &args.syncer_image),
        ("--proxier-image", &args.proxier_image),
    ] {
        if image.trim().is_empty() {
            return Err(format!("{flag} must not be empty"));
        }
    }
    for (flag, replicas) in [
        ("--syncer-replicas", args.syncer_replicas),
        ("--proxier-replicas", args.proxier_replicas),
    ] {
        if replicas < 1 {
            return Err(format!("{flag} must be at least 1, not {replicas}"));
        }
    }
    if !(1..=65535).contains(&args.proxier_port) {
        return Err(format!(
            "--proxier-port {} is not a TCP port",
            args.proxier_port
        ));
    }
    if let Some(range) = &args.proxier_node_ports.0
        && u16::try_from(args.proxier_port).is_ok_and(|p| range.contains(&p))
    {
        return Err(format!(
            "--proxier-port {} lies in --proxier-node-ports {}-{}",
            args.proxier_port,
            range.start(),
            range.end()
        ));
    }
    if args.retry_interval.is_zero() || args.resync_interval.is_zero() {
        return Err("--retry-interval and --resync-interval must be positive".to_owned());
    }
    let pod_settings = match &args.workload_template {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read --workload-template {}: {e}", path.display()))?;
            parse_workload_template(&text)
                .map_err(|e| format!("--workload-template {}: {e}", path.display()))?
        }
        None => Default::default(),
    };
    if !args.embedded || args.embedded_no_proxier {
        return Ok(Resolved {
            embedded_proxier: None,
            pod_settings,
        });
    }
    let listen_ip = args.embedded_proxier_listen_ip;
    let advertise = args
        .embedded_proxier_address
        .clone()
        .or(pod_ip)
        .filter(|a| !a.is_empty());
    if advertise.is_none() && listen_ip.is_unspecified() {
        return Err(format!(
            "--embedded-proxier-address (or $POD_IP) is needed when the proxiers listen on {listen_ip}: \
             the virtual nodes must point at an address the API server reaches"
        ));
    }
    let client_ca_pem = match &args.embedded_proxier_client_ca_file {
        Some(path) => Some(std::fs::read_to_string(path).map_err(|e| {
            format!(
                "cannot read --embedded-proxier-client-ca-file {}: {e}",
                path.display()
            )
        })?),
        None => None,
    };
    let mut proxier = EmbeddedProxierConfig::new(listen_ip);
    proxier.advertise_address = advertise;
    proxier.client_ca_pem = client_ca_pem;
    proxier.ports = args.embedded_proxier_ports.0.clone();
    proxier.node_ports = args.embedded_proxier_node_ports.0.clone();
    proxier.node_ports_per_binding = args.embedded_proxier_node_ports_per_binding.max(1);
    proxier.serving_cert = serving_cert_config(args);
    if let (Some(nodes), Some(shared)) = (&proxier.node_ports, &proxier.ports)
        && nodes.start() <= shared.end()
        && shared.start() <= nodes.end()
    {
        return Err(format!(
            "--embedded-proxier-node-ports {}-{} overlaps --embedded-proxier-ports {}-{}",
            nodes.start(),
            nodes.end(),
            shared.start(),
            shared.end()
        ));
    }
    Ok(Resolved {
        embedded_proxier: Some(proxier),
        pod_settings,
    })
}

/// Parses the rest of the flags and runs the manager; exit code 2 for bad flags.
pub fn main(args: ManagerArgs) -> ExitCode {
    let resolved = match resolve(&args, std::env::var("POD_IP").ok()) {
        Ok(resolved) => resolved,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    // One worker thread per CPU.
    kube_kit::process::run(0, run(args, resolved))
}

fn templates(args: &ManagerArgs, pod_settings: &(PodSettings, PodSettings)) -> Templates {
    let mut t = Templates::new(&args.namespace, &args.syncer_image, &args.proxier_image);
    t.syncer.pod = pod_settings.0.clone();
    t.proxier.pod = pod_settings.1.clone();
    t.syncer.replicas = args.syncer_replicas;
    t.proxier.replicas = args.proxier_replicas;
    t.syncer.image_pull_policy = args.image_pull_policy.clone();
    t.proxier.image_pull_policy = args.image_pull_policy.clone();
    t.syncer.extra_args = args.syncer_args.clone();
    t.proxier.extra_args = args.proxier_args.clone();
    t.proxier_port = args.proxier_port;
    t.proxier_node_ports = args.proxier_node_ports.0.clone();
    t.proxier_client_ca_config_map = args.proxier_client_ca_configmap.clone();
    t
}

/// Runs until SIGTERM/SIGINT.
async fn run(args: ManagerArgs, resolved: Resolved) -> anyhow::Result<()> {
    let kube_kit::process::Started {
        log,
        admin: admin_server,
        shutdown: token,
        client_options: options,
        client,
    } = kube_kit::process::start(&args.kube, MANAGER_NAME, env!("CARGO_PKG_VERSION")).await?;
    // Without the CRD the controller could only retry; say what is missing instead.
    let bindings: Api<ClusterBinding> = Api::all(client.clone());
    match bindings
        .list_metadata(&ListParams::default().limit(1))
        .await
    {
        Err(kube::Error::Api(status)) if status.code == 404 => anyhow::bail!(
            "the ClusterBinding CRD is not installed in the computing cluster \
             (install it with: kubeocean crds | kubectl apply -f -)"
        ),
        Err(err) => return Err(err).context("listing ClusterBindings"),
        Ok(_) => {}
    }

    let admin_state = AdminState {
        log: Some(log),
        ..AdminState::default()
    };
    let leader_metrics = LeaderElectionMetrics::register(&admin_state.metrics);
    let controller_metrics = ControllerMetrics::register(&admin_state.metrics);
    // Readiness follows leader election only: a standby replica must be ready too, or a
    // two-replica rollout would never finish (the controller's cache only exists on the leader).
    let elector = args
        .kube
        .elector(&client, MANAGER_NAME, &leader_metrics)
        .context("leader election")?;
    admin_state
        .readiness
        .add_leader_check("leader-election", elector.subscribe());

    let mut config = ManagerConfig::new(templates(&args, &resolved.pod_settings));
    config.metrics = Some(ManagerMetrics::register(&admin_state.metrics));
    config.serving_cert = serving_cert_config(&args);
    config.client_options = options.clone();
    config.retry_interval = args.retry_interval;
    config.resync_interval = args.resync_interval;

    let runtime: Option<Arc<dyn BindingRuntime>> = if args.embedded {
        let mut base = SyncerConfig::new("");
        base.secret_namespace = args.namespace.clone();
        base.client_options = options.clone();
        base.proxier.port = args.proxier_port;
        base.dns_service = args.dns_service.clone();
        base.api_server_service = args.api_server_service.clone();
        base.physical_pod_scheduling_timeout = args.physical_pod_scheduling_timeout;
        base.metrics = Some(SyncerMetrics::register(&admin_state.metrics));
        Some(match resolved.embedded_proxier {
            Some(mut proxier) => {
                proxier.metrics = Some(ProxierMetrics::register(&admin_state.metrics));
                Arc::new(SyncerProxierRuntime::new(client.clone(), base, proxier))
            }
            None => Arc::new(SyncerRuntime::new(client.clone(), base)),
        })
    } else {
        None
    };
    let admin = admin_server.spawn(admin_state, token.clone());
    tracing::info!(
        namespace = %args.namespace,
        embedded = args.embedded,
        "kubeocean manager starting"
    );
    let outcome = run_elected(
        elector.as_ref(),
        token.clone(),
        StopGrace::default(),
        |term| {
            // Each leadership term gets its own task groups; they stop with the term.
            let manager = match &runtime {
                Some(runtime) => Manager::embedded(
                    client.clone(),
                    config.clone(),
                    Arc::new(EmbeddedRunner::new(runtime.clone(), term.clone())),
                ),
                None => Manager::new(client.clone(), config.clone()),
            };
            manager.run(controller_metrics.clone(), None, term)
        },
    )
    .await
    .context("leader election")?;
    tracing::info!(?outcome, "kubeocean manager stopped");
    token.cancel();
    admin.await.context("admin server task")??;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        args: ManagerArgs,
    }

    fn parse(flags: &[&str]) -> Result<ManagerArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("manager").chain(flags.iter().copied())).map(|c| c.args)
    }

    /// Flags, `$POD_IP`, and whether an embedded proxier results (or the error's fragment).
    type ResolveCase = (
        &'static [&'static str],
        Option<&'static str>,
        Result<bool, &'static str>,
    );

    #[test]
    fn resolve_table() {
        let cases: Vec<ResolveCase> = vec![
            (&[], None, Ok(false)),
            (
                &["--embedded", "--embedded-proxier-address=10.0.0.5"],
                None,
                Ok(true),
            ),
            (&["--embedded"], Some("10.0.0.7"), Ok(true)),
            (
                &["--embedded", "--embedded-proxier-listen-ip=127.0.0.1"],
                None,
                Ok(true),
            ),
            (&["--embedded", "--embedded-no-proxier"], None, Ok(false)),
            (&["--embedded"], None, Err("--embedded-proxier-address")),
            (&["--namespace=Bad_NS"], None, Err("--namespace")),
            (
                &["--syncer-image= "],
                None,
                Err("--syncer-image must not be empty"),
            ),
            (
                &["--proxier-replicas=0"],
                None,
                Err("--proxier-replicas must be at least 1"),
            ),
            (&["--proxier-port=70000"], None, Err("--proxier-port")),
            (
                &["--workload-template=/nonexistent/workloads.yaml"],
                None,
                Err("cannot read --workload-template /nonexistent/workloads.yaml"),
            ),
            (
                &["--proxier-port=20001"],
                None,
                Err("--proxier-port 20001 lies in --proxier-node-ports 20000-29999"),
            ),
            (
                &["--proxier-port=20001", "--proxier-node-ports=0"],
                None,
                Ok(false),
            ),
            (
                &[
                    "--embedded",
                    "--embedded-proxier-address=a",
                    "--embedded-proxier-node-ports=10450-10600",
                ],
                None,
                Err("overlaps --embedded-proxier-ports 10400-10499"),
            ),
            (
                &[
                    "--embedded",
                    "--embedded-proxier-address=a",
                    "--embedded-proxier-node-ports=20000-29999",
                ],
                None,
                Ok(true),
            ),
            (&["--retry-interval=0s"], None, Err("--retry-interval")),
            (
                &[
                    "--embedded",
                    "--embedded-proxier-address=a",
                    "--embedded-proxier-client-ca-file=/nonexistent/ca.crt",
                ],
                None,
                Err("cannot read --embedded-proxier-client-ca-file"),
            ),
        ];
        for (flags, pod_ip, want) in cases {
            let args = parse(flags).unwrap();
            match (resolve(&args, pod_ip.map(str::to_owned)), want) {
                (Ok(r), Ok(proxier)) => {
                    assert_eq!(r.embedded_proxier.is_some(), proxier, "{flags:?}");
                }
                (Err(message), Err(fragment)) => {
                    assert!(message.contains(fragment), "{flags:?}: {message}");
                }
                (got, want) => panic!("{flags:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn port_range_table() {
        for (text, want) in [
            ("10400-10499", Ok(Some(10400..=10499))),
            ("10400", Ok(Some(10400..=10400))),
            (" 1 - 2", Ok(Some(1..=2))),
            ("0", Ok(None)),
            ("0-0", Ok(None)),
            ("10499-10400", Err(())),
            ("0-10", Err(())),
            ("70000", Err(())),
            ("a-b", Err(())),
            ("", Err(())),
        ] {
            assert_eq!(
                parse_port_range(text).map(|r| r.0).map_err(|_| ()),
                want,
                "{text:?}"
            );
        }
        let args = parse(&["--embedded", "--embedded-proxier-address=a"]).unwrap();
        let r = resolve(&args, None).unwrap();
        assert_eq!(r.embedded_proxier.unwrap().ports, Some(10400..=10499));
        let args = parse(&[
            "--embedded",
            "--embedded-proxier-address=a",
            "--embedded-proxier-ports=0",
        ])
        .unwrap();
        let r = resolve(&args, None).unwrap();
        assert_eq!(r.embedded_proxier.unwrap().ports, None);
    }

    #[test]
    fn advertised_address_prefers_the_flag_then_the_pod_ip() {
        let args = parse(&["--embedded", "--embedded-proxier-address=10.0.0.5"]).unwrap();
        let r = resolve(&args, Some("10.0.0.7".into())).unwrap();
        assert_eq!(
            r.embedded_proxier.unwrap().advertise_address.as_deref(),
            Some("10.0.0.5")
        );
        let args = parse(&["--embedded"]).unwrap();
        let r = resolve(&args, Some("10.0.0.7".into())).unwrap();
        assert_eq!(
            r.embedded_proxier.unwrap().advertise_address.as_deref(),
            Some("10.0.0.7")
        );
    }

    /// The container args of a Deployment.
    fn container_args(d: &k8s_openapi::api::apps::v1::Deployment) -> Vec<String> {
        d.spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .containers[0]
            .args
            .clone()
            .unwrap()
    }

    #[test]
    fn generated_workloads_use_flags_this_binary_accepts() {
        use kubeocean_core::manager::templates::{proxier_deployment, syncer_deployment};
        let binding: ClusterBinding = serde_json::from_value(serde_json::json!({
            "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ClusterBinding",
            "metadata": {"name": "w1", "uid": "u"},
            "spec": {"clusterID": "w1", "secretRef": {"name": "kc"}, "mountNamespace": "m"},
        }))
        .unwrap();
        let args = parse(&[
            "--syncer-replicas=2",
            "--proxier-replicas=2",
            "--syncer-arg=--runtime-threads=2",
            "--syncer-arg",
            "--workers=8",
            "--proxier-arg=--log-format=json",
        ])
        .unwrap();
        let t = templates(&args, &Default::default());
        for deployment in [
            syncer_deployment(&binding, &t, Some("10.0.0.1")),
            proxier_deployment(&binding, &t),
        ] {
            let argv = container_args(&deployment);
            let parsed = crate::Args::try_parse_from(
                std::iter::once("kubeocean".to_owned()).chain(argv.clone()),
            );
            assert!(parsed.is_ok(), "{argv:?}: {}", parsed.unwrap_err());
        }
        let syncer = container_args(&syncer_deployment(&binding, &t, Some("10.0.0.1")));
        assert!(syncer.ends_with(&["--runtime-threads=2".to_owned(), "--workers=8".to_owned()]));
        let proxier = container_args(&proxier_deployment(&binding, &t));
        assert!(proxier.ends_with(&["--log-format=json".to_owned()]));
    }

    #[test]
    fn flags_shape_the_templates() {
        let args = parse(&[
            "--namespace=ops",
            "--syncer-image=reg/kubeocean:2",
            "--syncer-replicas=2",
            "--proxier-port=10350",
            "--image-pull-policy=Always",
        ])
        .unwrap();
        let t = templates(&args, &Default::default());
        assert_eq!(t.namespace, "ops");
        assert_eq!(t.syncer.image, "reg/kubeocean:2");
        assert_eq!(t.proxier.image, default_image());
        assert_eq!(t.syncer.replicas, 2);
        assert_eq!(t.proxier_port, 10350);
        assert_eq!(t.proxier_node_ports, Some(20000..=29999));
        let shared = templates(
            &parse(&["--proxier-node-ports=0"]).unwrap(),
            &Default::default(),
        );
        assert_eq!(shared.proxier_node_ports, None);
        assert!(parse(&["--proxier-node-ports=9-8"]).is_err());
        assert_eq!(t.proxier.image_pull_policy.as_deref(), Some("Always"));
        assert!(parse(&["--image-pull-policy=Sometimes"]).is_err());
        let passed = parse(&[
            "--syncer-arg=--runtime-threads=2",
            "--syncer-arg",
            "--workers=8",
        ])
        .unwrap();
        let t = templates(&passed, &Default::default());
        assert_eq!(t.syncer.extra_args, ["--runtime-threads=2", "--workers=8"]);
        assert!(t.proxier.extra_args.is_empty());
        // Leader election defaults come from kube-kit: 15 s / 10 s / 2 s.
        let defaults = parse(&[]).unwrap();
        assert_eq!(
            defaults.kube.leader_elect_lease_duration,
            Duration::from_secs(15)
        );
        assert_eq!(
            defaults.kube.leader_elect_renew_deadline,
            Duration::from_secs(10)
        );
        assert_eq!(
            defaults.kube.leader_elect_retry_period,
            Duration::from_secs(2)
        );
    }
}
