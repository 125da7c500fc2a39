//! `kube-sandbox serve`: one in-memory Kubernetes API server on loopback, with simulated nodes.

use clap::{Parser, Subcommand};
use kube_sandbox::{Cluster, ServeOptions, SimNode};
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
    },
}

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
    } = args.command;
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
    let cluster = Cluster::new(&name);
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
        "Their kubelet API (logs, exec, attach, port-forward over WebSocket) listens at https://{}",
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
    println!("Ctrl-C stops the server.");
    tokio::signal::ctrl_c()
        .await
        .map_err(|e| format!("cannot wait for Ctrl-C: {e}"))?;
    cluster.shutdown();
    Ok(())
}
