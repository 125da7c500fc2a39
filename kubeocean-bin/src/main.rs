//! The `kubeocean` binary: parses flags and calls into `kubeocean-core`.

mod bind;
mod manager;
mod proxier;
#[cfg_attr(not(feature = "sandbox"), path = "sandbox_unavailable.rs")]
mod sandbox;
mod syncer;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kubeocean_core::{crd, explain};

/// Kubeocean: pool worker-cluster nodes into a computing cluster as virtual nodes.
#[derive(Debug, Parser)]
#[command(name = "kubeocean", version, about)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the CustomResourceDefinitions as multi-document YAML, or write one file per CRD.
    Crds {
        /// Write `<group>_<plural>.yaml` files into this directory instead of printing.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Sync a ClusterBinding's worker nodes into virtual nodes (bottom-up half).
    Syncer(Box<syncer::SyncerArgs>),
    /// Serve the kubelet API (logs, exec, attach, port-forward, stats) of a ClusterBinding's virtual nodes.
    Proxier(Box<proxier::ProxierArgs>),
    /// Reconcile ClusterBindings into a syncer and a proxier each (Deployments, or in-process with --embedded).
    Manager(Box<manager::ManagerArgs>),
    /// Run Kubeocean on this machine: sandbox computing and worker clusters, the manager embedded.
    Sandbox(Box<sandbox::SandboxArgs>),
    /// Bind a worker in one command: its RBAC and token, the kubeconfig Secret, the ClusterBinding, an optional policy; waits until Ready.
    Bind(Box<bind::BindArgs>),
    /// Undo `kubeocean bind`: delete the ClusterBinding (the worker is drained first) and what bind created.
    Unbind(Box<bind::BindArgs>),
    /// Leasing tools.
    Leasing {
        #[command(subcommand)]
        command: LeasingCommand,
    },
}

#[derive(Debug, Subcommand)]
enum LeasingCommand {
    /// Show, as JSON, the virtual node a physical node would get, without any cluster.
    Explain {
        /// YAML or JSON file with the physical Node.
        #[arg(long, value_name = "FILE")]
        node: PathBuf,
        /// File with the node's pods (List, PodList or multi-document YAML); repeatable.
        #[arg(long, value_name = "FILE")]
        pods: Vec<PathBuf>,
        /// File with ResourceLeasingPolicies; repeatable.
        #[arg(long = "policy", value_name = "FILE")]
        policies: Vec<PathBuf>,
        /// File with the ClusterBinding.
        #[arg(long, value_name = "FILE")]
        binding: PathBuf,
        /// Evaluate at this RFC 3339 time (default: now).
        #[arg(long, value_name = "RFC3339")]
        at: Option<String>,
    },
}

fn main() -> ExitCode {
    match Args::parse().command {
        Command::Proxier(args) => proxier::main(*args),
        Command::Manager(args) => manager::main(*args),
        Command::Sandbox(args) => sandbox::main(*args),
        Command::Bind(args) => bind::bind_main(*args),
        Command::Unbind(args) => bind::unbind_main(*args),
        Command::Syncer(args) => kube_kit::process::run(args.runtime_threads, syncer::run(*args)),
        Command::Crds { out: None } => match crd::crds_yaml() {
            Ok(yaml) => write_stdout(&yaml),
            Err(err) => fail(&err, 1),
        },
        Command::Crds { out: Some(dir) } => match crd::write_crd_files(&dir) {
            Ok(written) => {
                written.iter().for_each(|path| eprintln!("wrote {path}"));
                ExitCode::SUCCESS
            }
            Err(err) => fail(&err, 1),
        },
        Command::Leasing {
            command:
                LeasingCommand::Explain {
                    node,
                    pods,
                    policies,
                    binding,
                    at,
                },
        } => {
            let request = explain::ExplainRequest {
                node,
                pods,
                policies,
                binding,
                at,
            };
            match explain::explain_json(&request) {
                Ok((json, notes)) => {
                    notes.iter().for_each(|note| eprintln!("note: {note}"));
                    write_stdout(&format!("{json}\n"))
                }
                // Every explain error is about the given files or flags.
                Err(err) => fail(&err, 2),
            }
        }
    }
}

/// Writes `text` to stdout; a reader that went away early (`| head`) is not an error.
fn write_stdout(text: &str) -> ExitCode {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(err) => fail(&err, 1),
    }
}

fn fail(err: &dyn std::error::Error, code: u8) -> ExitCode {
    eprintln!("error: {err}");
    ExitCode::from(code)
}
