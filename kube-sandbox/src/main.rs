//! `kube-sandbox serve`: one in-memory Kubernetes API server on loopback, with simulated nodes.

use clap::{Parser, Subcommand};
use kube_sandbox::{Cluster, ClusterOptions, MetricsServerOptions, ServeOptions, SimNode};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "kube-sandbox",
    version,
    about = "An in-memory Kubernetes API server"
)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a cluster until Ctrl-C.
    Serve {
        /// Address to listen on (port 0 picks a free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Where to write the kubeconfig.
        #[arg(long, default_value = "./.sandbox/kubeconfig")]
        kubeconfig: PathBuf,
        /// Serve HTTPS with a generated CA (written into the kubeconfig).
        #[arg(long)]
        tls: bool,
        /// Simulated nodes to create.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// CPU of each simulated node.
        #[arg(long, default_value = "4")]
        node_cpu: String,
        /// Memory of each simulated node.
        #[arg(long, default_value = "8Gi")]
        node_memory: String,
        /// Name of the cluster (in the kubeconfig).
        #[arg(long, default_value = "sandbox")]
        name: String,
        /// Run the workload controllers (Deployments, ReplicaSets, StatefulSets, DaemonSets,
        /// Jobs, CronJobs, EndpointSlices and Endpoints): `--workload-controllers=false` turns
        /// them off.
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
        workload_controllers: bool,
        /// How long the containers of Job pods run before they exit, in seconds (a pod's
        /// `sandbox.kube/run-seconds` annotation overrides it).
        #[arg(long, default_value_t = 1.0)]
        job_pod_run_seconds: f64,
        /// Run the metrics-server model: nodes' resource metrics scraped and
        /// `metrics.k8s.io` served, for `kubectl top`.
        #[arg(long)]
        metrics_server: bool,
        /// How often the metrics-server model scrapes the nodes, in seconds
        /// (metrics-server's `--metric-resolution`).
        #[arg(long, default_value_t = 15.0)]
        metric_resolution_seconds: f64,
    },
}

/// The Deployment the printed `kubectl apply` creates (unindented, so that the heredoc can be
/// pasted as is).
const DEMO_DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, ports: [{name: http, containerPort: 80}]}]
";

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("kube-sandbox: {message}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    let Command::Serve {
        listen,
        kubeconfig,
        tls,
        nodes,
        node_cpu,
        node_memory,
        name,
        workload_controllers,
        job_pod_run_seconds,
        metrics_server,
        metric_resolution_seconds,
    } = args.command;
    let job_pod_run_time =
        std::time::Duration::try_from_secs_f64(job_pod_run_seconds).map_err(|_| {
            format!("--job-pod-run-seconds {job_pod_run_seconds} is not a number of seconds")
        })?;
    let metric_resolution = std::time::Duration::try_from_secs_f64(metric_resolution_seconds)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            format!(
                "--metric-resolution-seconds {metric_resolution_seconds} is not a positive number of seconds"
            )
        })?;
    if kube_sandbox::sim::scheduler::parse_quantity(&node_cpu).is_none() {
        return Err(format!(
            "--node-cpu {node_cpu:?} is not a Kubernetes quantity"
        ));
    }
    if kube_sandbox::sim::scheduler::parse_quantity(&node_memory).is_none() {
        return Err(format!(
            "--node-memory {node_memory:?} is not a Kubernetes quantity"
        ));
    }
    let cluster = Cluster::with_options(
        &name,
        ClusterOptions {
            workload_controllers,
            job_pod_run_time,
            metrics_server: metrics_server.then(|| MetricsServerOptions {
                metric_resolution,
                kubelet_request_timeout: metric_resolution.min(std::time::Duration::from_secs(10)),
            }),
            ..Default::default()
        },
    );
    for i in 1..=nodes {
        let node = SimNode::new(&format!("node-{i}"), &node_cpu, &node_memory).label(
            "topology.kubernetes.io/zone",
            &format!("zone-{}", (i - 1) % 3 + 1),
        );
        cluster.add_node(&node).map_err(|e| e.to_string())?;
    }
    let served = cluster
        .serve(ServeOptions {
            listen,
            tls,
            kubeconfig_path: Some(kubeconfig.clone()),
        })
        .await
        .map_err(|e| e.to_string())?;
    println!("kube-sandbox {name} serving at {}", served.url);
    println!("kubeconfig written to {}", kubeconfig.display());
    println!("{nodes} simulated nodes; pods scheduled on them turn Running.");
    println!(
        "Their kubelet API (logs; exec, attach and port-forward over WebSocket and SPDY) listens at https://{}",
        served.kubelet_addr
    );
    println!();
    println!("Try:");
    println!("  export KUBECONFIG={}", kubeconfig.display());
    println!("  kubectl get nodes");
    println!(
        "  kubectl run hello --image=busybox --command -- sh -c 'echo hello from the sandbox'"
    );
    println!("  kubectl get pods -w        # Pending -> Running");
    println!("  kubectl logs hello");
    println!("  kubectl exec hello -- echo hi    # simulated commands: echo, hostname, env");
    if workload_controllers {
        println!("  kubectl apply -f - <<'EOF'");
        print!("{DEMO_DEPLOYMENT}");
        println!("EOF");
        println!("  kubectl rollout status deployment/web");
        println!("  kubectl scale deployment web --replicas=4");
        println!("  kubectl expose deployment web --port=80 --target-port=http");
        println!("  kubectl get endpointslices -l kubernetes.io/service-name=web");
        println!("  kubectl rollout restart deployment/web");
    }
    if metrics_server {
        println!("  kubectl top nodes          # after two scrapes");
        println!("  kubectl top pods");
    }
    println!("Ctrl-C stops the server.");
    tokio::signal::ctrl_c()
        .await
        .map_err(|e| format!("cannot wait for Ctrl-C: {e}"))?;
    cluster.shutdown();
    Ok(())
}
