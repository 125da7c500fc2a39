//! `kubeocean sandbox`: Kubeocean on one machine with no cluster. A computing sandbox cluster
//! (with the DNS and API server Services mapped pods use, and metrics-server for `kubectl top`) and `--workers` worker sandbox clusters (simulated nodes, a few online pods, a
//! ResourceLeasingPolicy each — the second one with a time window), all served over loopback
//! HTTPS; the manager in embedded mode (a syncer and a proxier per worker, in this process);
//! kubeconfigs in `--dir`. Prints what to try, then a short report every `--report-interval`
//! until Ctrl-C.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use jiff::{SignedDuration, Timestamp, tz::TimeZone};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Service};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kube_kit::admin::Metrics;
use kube_kit::args::parse_duration;
use kube_kit::controller::ControllerMetrics;
use kube_kit::telemetry::{LogFormat, LogOptions, resolve_filter};
use kube_sandbox::{Cluster, ClusterOptions, MetricsServerOptions, ServeOptions, Served, SimNode};
use kubeocean_core::crd::{
    ClusterBinding, DEFAULT_POD_PREEMPTION_POLICY, DEFAULT_POD_PRIORITY_CLASS_NAME,
    DEFAULT_POD_PRIORITY_VALUE, ResourceLeasingPolicy,
};
use kubeocean_core::labels;
use kubeocean_core::manager::{
    EmbeddedProxierConfig, EmbeddedRunner, Manager, ManagerConfig, SyncerProxierRuntime, Templates,
};
use kubeocean_core::setup::{WorkerRegistration, install_crds, register_worker};
use kubeocean_core::syncer::SyncerConfig;
use serde_json::{Value, json};

/// Namespace of the kubeconfig Secrets (and the manager's namespace).
const SYSTEM_NAMESPACE: &str = "kubeocean-system";
/// The workers' namespace that receives mapped pods.
const MOUNT_NAMESPACE: &str = "kubeocean-workloads";
/// Most workers the sandbox starts.
const MAX_WORKERS: usize = 16;
/// Most simulated nodes per worker.
const MAX_NODES: usize = 50;

/// `count` ports in a row, free now and below the ephemeral ports (so that sandboxes running
/// side by side rarely meet); `None` when none is found.
fn node_port_range(count: usize) -> Option<std::ops::RangeInclusive<u16>> {
    kube_sandbox::ports::free_port_run(u16::try_from(count).ok()?, std::process::id())
}

/// Flags of `kubeocean sandbox`.
#[derive(clap::Args, Debug)]
pub struct SandboxArgs {
    /// Directory the kubeconfigs are written to.
    #[arg(long, default_value = ".sandbox")]
    dir: PathBuf,
    /// Worker clusters to start.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Simulated nodes in each worker.
    #[arg(long, default_value_t = 3)]
    nodes_per_worker: usize,
    /// How often the report is printed.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    report_interval: Duration,
    /// Log filter for the sandbox's own logs on stderr (`EnvFilter` syntax; default: warn).
    #[arg(long, env = "LOG_LEVEL")]
    log_level: Option<String>,
}

/// Checks what clap cannot; the error is a usage error.
fn validate(args: &SandboxArgs) -> Result<(), String> {
    if !(1..=MAX_WORKERS).contains(&args.workers) {
        return Err(format!(
            "--workers must be between 1 and {MAX_WORKERS}, not {}",
            args.workers
        ));
    }
    if !(1..=MAX_NODES).contains(&args.nodes_per_worker) {
        return Err(format!(
            "--nodes-per-worker must be between 1 and {MAX_NODES}, not {}",
            args.nodes_per_worker
        ));
    }
    if args.report_interval < Duration::from_millis(100) {
        return Err("--report-interval must be at least 100ms".to_owned());
    }
    Ok(())
}

/// Runs the sandbox; exit code 2 for bad flags.
pub fn main(args: SandboxArgs) -> ExitCode {
    if let Err(message) = validate(&args) {
        eprintln!("error: {message}");
        return ExitCode::from(2);
    }
    // One worker thread per CPU.
    kube_kit::process::run(0, run(args))
}

/// Name of worker `i` (1-based): its cluster, ClusterBinding and kubeconfig file.
fn worker_name(i: usize) -> String {
    format!("worker-{i}")
}

/// Name of simulated node `j` of worker `i`.
fn node_name(i: usize, j: usize) -> String {
    format!("w{i}-node-{j}")
}

/// The ResourceLeasingPolicy spec of worker `i`: the first lends half of every node's free
/// cpu and memory all the time; the others lend at most 4 cpus and 75% of the memory, during
/// a window from an hour before `now` to eleven hours after it (UTC), to show time windows
/// without hiding the nodes from a newcomer.
fn policy_spec(i: usize, binding: &str, now: Timestamp) -> Value {
    if i == 1 {
        return json!({
            "cluster": binding,
            "resourceLimits": [{"resource": "cpu", "percent": 50}, {"resource": "memory", "percent": 50}],
        });
    }
    let at = |offset_hours: i64| {
        let t = now
            .checked_add(SignedDuration::from_hours(offset_hours))
            .unwrap_or(now)
            .to_zoned(TimeZone::UTC);
        format!("{:02}:{:02}", t.hour(), t.minute())
    };
    json!({
        "cluster": binding,
        "timezone": "UTC",
        "timeWindows": [{"start": at(-1), "end": at(11)}],
        "resourceLimits": [{"resource": "cpu", "quantity": "4"}, {"resource": "memory", "percent": 75}],
    })
}

/// A sandbox cluster with the workload controllers on, as a real cluster's
/// kube-controller-manager runs them: Deployments in the computing cluster get pods.
fn sandbox_cluster(name: &str) -> Cluster {
    Cluster::with_options(
        name,
        ClusterOptions {
            workload_controllers: true,
            ..ClusterOptions::default()
        },
    )
}

/// How often the computing cluster's metrics-server scrapes the nodes (15 s in
/// metrics-server's manifests; shorter, so `kubectl top` has figures soon after a start).
const METRIC_RESOLUTION: Duration = Duration::from_secs(5);

/// The computing cluster: workload controllers and, as most clusters run it, metrics-server,
/// which scrapes the virtual nodes through their proxiers (`kubectl top`).
fn computing_cluster() -> Cluster {
    Cluster::with_options(
        "computing",
        ClusterOptions {
            workload_controllers: true,
            metrics_server: Some(MetricsServerOptions {
                metric_resolution: METRIC_RESOLUTION,
                ..MetricsServerOptions::default()
            }),
            ..ClusterOptions::default()
        },
    )
}

/// What to try, for the kubeconfigs in `dir`.
fn commands(dir: &Path, workers: usize) -> String {
    let computing = dir.join("computing.kubeconfig");
    let worker = dir.join("worker-1.kubeconfig");
    let mut text = String::new();
    let _ = writeln!(text, "Kubeconfigs:");
    let _ = writeln!(text, "  computing: {}", computing.display());
    for i in 1..=workers {
        let _ = writeln!(
            text,
            "  {}: {}",
            worker_name(i),
            dir.join(format!("{}.kubeconfig", worker_name(i))).display()
        );
    }
    let _ = writeln!(text, "Try:");
    let _ = writeln!(text, "  export KUBECONFIG={}", computing.display());
    let _ = writeln!(text, "  kubectl get clusterbindings");
    let _ = writeln!(
        text,
        "  kubectl get nodes -l type=virtual-kubelet -o custom-columns=NAME:.metadata.name,CPU:.status.allocatable.cpu,MEMORY:.status.allocatable.memory"
    );
    let _ = writeln!(
        text,
        "  kubectl run demo --image=nginx --overrides='{{\"spec\":{{\"tolerations\":[{{\"key\":\"{}\",\"operator\":\"Exists\"}}]}}}}'",
        labels::TAINT_VNODE
    );
    let _ = writeln!(text, "  kubectl get pods -o wide");
    let _ = writeln!(text, "  kubectl logs demo          # through the proxier");
    let _ = writeln!(
        text,
        "  # a Deployment whose replicas spread over the virtual nodes of every worker:"
    );
    let _ = writeln!(text, "  kubectl apply -f - <<'EOF'");
    let _ = write!(text, "{}", demo_deployment_yaml());
    let _ = writeln!(text, "EOF");
    let _ = writeln!(text, "  kubectl rollout status deployment/web");
    let _ = writeln!(text, "  kubectl get pods -l app=web -o wide");
    let _ = writeln!(
        text,
        "  kubectl top nodes -l type=virtual-kubelet   # each virtual node its worker node's usage"
    );
    let _ = writeln!(text, "  kubectl top pods -l app=web");
    let _ = writeln!(
        text,
        "  kubectl --kubeconfig {} get pods -n {MOUNT_NAMESPACE}   # the physical pod",
        worker.display()
    );
    text
}

/// The demo Deployment: six replicas tolerating the virtual-node taint (the heredoc body the
/// printed `kubectl apply` reads, unindented so that it can be pasted as is).
fn demo_deployment_yaml() -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: 6
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      tolerations: [{{key: {}, operator: Exists}}]
      containers: [{{name: web, image: nginx}}]
",
        labels::TAINT_VNODE
    )
}

/// One virtual node in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
struct VirtualNodeRow {
    name: String,
    binding: String,
    cpu: String,
    memory: String,
    ready: bool,
}

/// One mapped pod in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PodRow {
    key: String,
    node: String,
    phase: String,
    physical: Option<String>,
}

fn virtual_node_row(node: &Node) -> VirtualNodeRow {
    let status = node.status.clone().unwrap_or_default();
    let quantity = |r: &str| {
        status
            .allocatable
            .as_ref()
            .and_then(|a| a.get(r))
            .map(|q| q.0.clone())
            .unwrap_or_else(|| "-".to_owned())
    };
    VirtualNodeRow {
        name: node.name_any(),
        binding: node
            .labels()
            .get(labels::CLUSTER_BINDING)
            .cloned()
            .unwrap_or_default(),
        cpu: quantity("cpu"),
        memory: quantity("memory"),
        ready: status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True"),
    }
}

fn pod_row(pod: &Pod) -> PodRow {
    let annotations = pod.annotations();
    let physical = match (
        annotations.get(labels::PHYSICAL_POD_NAMESPACE),
        annotations.get(labels::PHYSICAL_POD_NAME),
    ) {
        (Some(ns), Some(name)) => Some(format!("{ns}/{name}")),
        _ => None,
    };
    PodRow {
        key: format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any()),
        node: pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default(),
        phase: pod
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Pending".to_owned()),
        physical,
    }
}

/// The report text: bindings with their phase, virtual nodes with what they lend, mapped pods
/// with their phase.
fn render_report(
    at: Timestamp,
    bindings: &[(String, String)],
    nodes: &[VirtualNodeRow],
    pods: &[PodRow],
) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "--- report {}", at.strftime("%H:%M:%S"));
    let _ = writeln!(text, "bindings:");
    for (name, phase) in bindings {
        let _ = writeln!(text, "  {name:<12} {phase}");
    }
    let _ = writeln!(text, "virtual nodes: {}", nodes.len());
    for n in nodes {
        let _ = writeln!(
            text,
            "  {:<28} {:<10} cpu {:<8} memory {:<10} {}",
            n.name,
            n.binding,
            n.cpu,
            n.memory,
            if n.ready { "Ready" } else { "NotReady" }
        );
    }
    let _ = writeln!(text, "mapped pods: {}", pods.len());
    for p in pods {
        let _ = writeln!(
            text,
            "  {:<28} {:<10} on {:<28} -> {}",
            p.key,
            p.phase,
            p.node,
            p.physical.as_deref().unwrap_or("(not mapped yet)")
        );
    }
    text
}

/// Reads what the report shows from the computing cluster.
async fn report(c: &Client) -> anyhow::Result<String> {
    let bindings: Vec<(String, String)> = Api::<ClusterBinding>::all(c.clone())
        .list(&ListParams::default())
        .await
        .context("listing ClusterBindings")?
        .items
        .iter()
        .map(|b| {
            let phase = b
                .status
                .as_ref()
                .and_then(|s| s.phase)
                .map(|p| format!("{p:?}"))
                .unwrap_or_else(|| "Pending".to_owned());
            (b.name_any(), phase)
        })
        .collect();
    let selector = format!("{}={}", labels::MANAGED_BY, labels::MANAGED_BY_VALUE);
    let vnodes = Api::<Node>::all(c.clone())
        .list(&ListParams::default().labels(&selector))
        .await
        .context("listing virtual nodes")?
        .items;
    let names: Vec<String> = vnodes.iter().map(ResourceExt::name_any).collect();
    let mut nodes: Vec<VirtualNodeRow> = vnodes.iter().map(virtual_node_row).collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    let mut pods: Vec<PodRow> = Api::<Pod>::all(c.clone())
        .list(&ListParams::default())
        .await
        .context("listing pods")?
        .items
        .iter()
        .map(pod_row)
        .filter(|p| names.contains(&p.node))
        .collect();
    pods.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(render_report(Timestamp::now(), &bindings, &nodes, &pods))
}

async fn create<K>(api: &Api<K>, object: Value, what: &str) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let object: K = serde_json::from_value(object).with_context(|| format!("building {what}"))?;
    api.create(&PostParams::default(), &object)
        .await
        .with_context(|| format!("creating {what}"))?;
    Ok(())
}

/// The computing cluster's Services that mapped pods reach its DNS and API server through
/// (the syncer's `--dns-service` and `--api-server-service` defaults, upstream's names), as an
/// operator creates them in a real computing cluster: without them mapped pods would keep the
/// worker's DNS.
async fn create_in_cluster_services(c: &Client) -> anyhow::Result<()> {
    create(
        &Api::<Service>::namespaced(c.clone(), "kube-system"),
        json!({"metadata": {"name": "kube-dns-intranet", "namespace": "kube-system",
                            "labels": {"k8s-app": "kube-dns"}},
               "spec": {"selector": {"k8s-app": "kube-dns"},
                        "ports": [{"name": "dns", "port": 53, "protocol": "UDP"},
                                  {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}}),
        "Service kube-system/kube-dns-intranet",
    )
    .await?;
    create(
        &Api::<Service>::namespaced(c.clone(), "default"),
        json!({"metadata": {"name": "kubernetes-intranet", "namespace": "default"},
               "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}}),
        "Service default/kubernetes-intranet",
    )
    .await
}

/// Worker `i`: CRDs, the priority class physical pods use, the mount namespace, simulated
/// nodes, two online pods on the first node, its leasing policy; served over HTTPS.
async fn start_worker(
    i: usize,
    nodes: usize,
    dir: &Path,
    computing: &Client,
) -> anyhow::Result<(Cluster, Served)> {
    let name = worker_name(i);
    let cluster = sandbox_cluster(&name);
    let w = cluster.client();
    install_crds(&w)
        .await
        .with_context(|| format!("installing the CRDs in {name}"))?;
    // As the kubeocean-worker chart creates it.
    create(
        &Api::<PriorityClass>::all(w.clone()),
        json!({"metadata": {"name": DEFAULT_POD_PRIORITY_CLASS_NAME},
               "value": DEFAULT_POD_PRIORITY_VALUE,
               "preemptionPolicy": DEFAULT_POD_PREEMPTION_POLICY,
               "description": "Pods mapped from the computing cluster"}),
        "the kubeocean-default PriorityClass",
    )
    .await?;
    create(
        &Api::<Namespace>::all(w.clone()),
        json!({"metadata": {"name": MOUNT_NAMESPACE}}),
        "the mount namespace",
    )
    .await?;
    for j in 1..=nodes {
        cluster
            .add_node(&SimNode::new(&node_name(i, j), "8", "32Gi").label("pool", "lend"))
            .with_context(|| format!("adding node {} to {name}", node_name(i, j)))?;
    }
    for k in 1..=2 {
        create(
            &Api::<Pod>::namespaced(w.clone(), "default"),
            json!({"metadata": {"name": format!("online-{k}"), "namespace": "default",
                                "labels": {"app": "online"}},
                   "spec": {"nodeName": node_name(i, 1), "containers": [{"name": "app", "image": "online:1",
                       "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}}),
            "an online pod",
        )
        .await?;
    }
    create(
        &Api::<ResourceLeasingPolicy>::all(w.clone()),
        json!({"apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
               "metadata": {"name": format!("lend-to-{name}")},
               "spec": policy_spec(i, &name, Timestamp::now())}),
        "the leasing policy",
    )
    .await?;
    let served = cluster
        .serve(ServeOptions {
            tls: true,
            kubeconfig_path: Some(dir.join(format!("{name}.kubeconfig"))),
            ..ServeOptions::default()
        })
        .await
        .with_context(|| format!("serving {name}"))?;
    register_worker(
        computing,
        &WorkerRegistration {
            binding: &name,
            cluster_id: &format!("w{i}"),
            secret_namespace: SYSTEM_NAMESPACE,
            mount_namespace: MOUNT_NAMESPACE,
            kubeconfig: &served.kubeconfig_yaml,
        },
    )
    .await
    .with_context(|| format!("registering {name}"))?;
    Ok((cluster, served))
}

/// Runs until SIGTERM/SIGINT.
async fn run(args: SandboxArgs) -> anyhow::Result<()> {
    let rust_log = std::env::var("RUST_LOG").ok();
    let filter = resolve_filter(
        args.log_level.as_deref(),
        rust_log.as_deref().or(Some("warn")),
    );
    kube_kit::telemetry::init(&LogOptions {
        filter,
        format: LogFormat::Text,
    })
    .context("logging")?;
    kube_kit::client::install_crypto_provider();
    let shutdown = kube_kit::shutdown::signal_token().context("signal handlers")?;
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))?;

    let computing = computing_cluster();
    let c = computing.client();
    install_crds(&c)
        .await
        .context("installing the CRDs in the computing cluster")?;
    create_in_cluster_services(&c).await?;
    let computing_served = computing
        .serve(ServeOptions {
            tls: true,
            kubeconfig_path: Some(args.dir.join("computing.kubeconfig")),
            ..ServeOptions::default()
        })
        .await
        .context("serving the computing cluster")?;
    let mut workers = Vec::new();
    for i in 1..=args.workers {
        workers.push(start_worker(i, args.nodes_per_worker, &args.dir, &c).await?);
    }

    // The manager in embedded mode: per worker a proxier on 127.0.0.1 and a syncer.
    let mut base = SyncerConfig::new("");
    base.secret_namespace = SYSTEM_NAMESPACE.to_owned();
    base.lease_renew_interval = Duration::from_secs(5);
    base.connect_retry_interval = Duration::from_secs(1);
    // The API server reaches the proxiers with a kubelet-client certificate signed by its CA,
    // which each proxier reads from kube-system/extension-apiserver-authentication as in a
    // real cluster; bearer tokens are checked by TokenReview.
    let mut proxier = EmbeddedProxierConfig::new([127, 0, 0, 1].into());
    proxier.token_review = true;
    // Each virtual node its own port, so its stats are its own (kubectl get --raw
    // /api/v1/nodes/<node>/proxy/stats/summary).
    proxier.node_ports = node_port_range(args.workers * args.nodes_per_worker);
    proxier.node_ports_per_binding = u16::try_from(args.nodes_per_worker).unwrap_or(u16::MAX);
    let runtime = Arc::new(SyncerProxierRuntime::new(c.clone(), base, proxier));
    let runner = Arc::new(EmbeddedRunner::new(runtime, shutdown.clone()));
    let mut config = ManagerConfig::new(Templates::new(SYSTEM_NAMESPACE, "unused", "unused"));
    config.retry_interval = Duration::from_secs(1);
    config.resync_interval = Duration::from_secs(30);
    config.drain_interval = Duration::from_secs(1);
    let manager = Manager::embedded(c.clone(), config, runner);
    let metrics = ControllerMetrics::register(&Metrics::new());
    let manager = tokio::spawn(manager.run(metrics, None, shutdown.clone()));

    println!(
        "kubeocean sandbox: computing cluster at {}, {} worker(s) with {} node(s) each",
        computing_served.url, args.workers, args.nodes_per_worker
    );
    for (cluster, served) in &workers {
        println!("  {} at {}", cluster.name(), served.url);
    }
    print!("{}", commands(&args.dir, args.workers));
    println!("Ctrl-C to stop.");

    let mut tick = tokio::time::interval(args.report_interval);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = tick.tick() => {}
        }
        match report(&c).await {
            Ok(text) => print!("{text}"),
            Err(err) => eprintln!("report: {err:#}"),
        }
    }
    println!("stopping");
    let _ = tokio::time::timeout(Duration::from_secs(5), manager).await;
    computing_served.stop();
    computing.shutdown();
    for (cluster, served) in &workers {
        served.stop();
        cluster.shutdown();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeocean_core::leasing::validate_policy;

    fn policy(spec: Value) -> ResourceLeasingPolicy {
        serde_json::from_value(json!({
            "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
            "metadata": {"name": "p"}, "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn policies_are_valid_and_the_second_has_a_window_around_now() {
        for (now, start, end) in [
            ("2026-01-01T12:30:00Z", "11:30", "23:30"),
            ("2026-01-01T00:10:00Z", "23:10", "11:10"),
            ("2026-01-01T20:05:00Z", "19:05", "07:05"),
        ] {
            let now: Timestamp = now.parse().unwrap();
            let second = policy_spec(2, "worker-2", now);
            assert_eq!(second["timeWindows"][0]["start"], start);
            assert_eq!(second["timeWindows"][0]["end"], end);
            assert!(validate_policy(&policy(second)).is_ok());
            let first = policy_spec(1, "worker-1", now);
            assert!(first.get("timeWindows").is_none());
            assert!(validate_policy(&policy(first)).is_ok());
        }
    }

    #[test]
    fn validate_table() {
        let args = |workers, nodes, interval_ms| SandboxArgs {
            dir: PathBuf::from(".sandbox"),
            workers,
            nodes_per_worker: nodes,
            report_interval: Duration::from_millis(interval_ms),
            log_level: None,
        };
        for (a, ok) in [
            (args(2, 3, 5000), true),
            (args(0, 3, 5000), false),
            (args(17, 3, 5000), false),
            (args(1, 0, 5000), false),
            (args(1, 51, 5000), false),
            (args(1, 1, 10), false),
        ] {
            assert_eq!(validate(&a).is_ok(), ok, "{a:?}");
        }
    }

    #[test]
    fn report_lists_nodes_and_pods() {
        let at: Timestamp = "2026-01-01T12:30:05Z".parse().unwrap();
        let text = render_report(
            at,
            &[("worker-1".into(), "Ready".into())],
            &[VirtualNodeRow {
                name: "vnode-w1-w1-node-1".into(),
                binding: "worker-1".into(),
                cpu: "3500m".into(),
                memory: "15Gi".into(),
                ready: true,
            }],
            &[
                PodRow {
                    key: "default/demo".into(),
                    node: "vnode-w1-w1-node-1".into(),
                    phase: "Running".into(),
                    physical: Some("kubeocean-workloads/demo-abc".into()),
                },
                PodRow {
                    key: "default/new".into(),
                    node: "vnode-w1-w1-node-1".into(),
                    phase: "Pending".into(),
                    physical: None,
                },
            ],
        );
        for fragment in [
            "--- report 12:30:05",
            "worker-1     Ready",
            "virtual nodes: 1",
            "cpu 3500m",
            "memory 15Gi",
            "mapped pods: 2",
            "default/demo",
            "-> kubeocean-workloads/demo-abc",
            "(not mapped yet)",
        ] {
            assert!(text.contains(fragment), "{fragment} in\n{text}");
        }
    }

    #[test]
    fn rows_read_nodes_and_pods() {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "vnode-w1-n1", "labels": {"kubeocean.io/cluster-binding": "worker-1"}},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi"},
                       "conditions": [{"type": "Ready", "status": "True"}]},
        }))
        .unwrap();
        assert_eq!(
            virtual_node_row(&node),
            VirtualNodeRow {
                name: "vnode-w1-n1".into(),
                binding: "worker-1".into(),
                cpu: "2".into(),
                memory: "4Gi".into(),
                ready: true,
            }
        );
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "demo", "namespace": "default", "annotations": {
                "kubeocean.io/physical-pod-namespace": "m", "kubeocean.io/physical-pod-name": "demo-x"}},
            "spec": {"nodeName": "vnode-w1-n1", "containers": []},
            "status": {"phase": "Running"},
        }))
        .unwrap();
        let row = pod_row(&pod);
        assert_eq!(row.physical.as_deref(), Some("m/demo-x"));
        assert_eq!(
            (row.phase.as_str(), row.node.as_str()),
            ("Running", "vnode-w1-n1")
        );
    }

    #[test]
    fn the_demo_deployment_tolerates_virtual_nodes() {
        let deployment: k8s_openapi::api::apps::v1::Deployment =
            serde_saphyr::from_str(&demo_deployment_yaml()).unwrap();
        let spec = deployment.spec.unwrap();
        assert_eq!(spec.replicas, Some(6));
        let tolerations = spec.template.spec.unwrap().tolerations.unwrap();
        assert_eq!(tolerations[0].key.as_deref(), Some(labels::TAINT_VNODE));
    }

    #[test]
    fn commands_name_the_kubeconfigs_and_the_taint() {
        let text = commands(Path::new("/tmp/sb"), 2);
        for fragment in [
            "/tmp/sb/computing.kubeconfig",
            "/tmp/sb/worker-2.kubeconfig",
            "kubeocean.io/vnode",
            "kubectl logs demo",
            "kubectl rollout status deployment/web",
            "kubectl top nodes -l type=virtual-kubelet",
        ] {
            assert!(text.contains(fragment), "{fragment} in\n{text}");
        }
    }
}
