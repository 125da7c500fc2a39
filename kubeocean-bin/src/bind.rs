//! `kubeocean bind` and `kubeocean unbind`: flags, then [`kubeocean_core::bind`]. Bad input
//! (a missing or unreadable file, a bad name or policy) exits with code 2 and a message; a
//! failure while binding with 1.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use kube_kit::args::parse_duration;
use kube_kit::client::{ClientOptions, client_from_kubeconfig};
use kubeocean_core::bind::{BindError, BindSpec, Step, WorkerEndpoint, worker_endpoint};
use kubeocean_core::crd::ResourceLeasingPolicy;

/// Flags of `kubeocean bind` and `kubeocean unbind`.
#[derive(Debug, clap::Args)]
pub struct BindArgs {
    /// Kubeconfig of the worker cluster (an admin's: bind installs RBAC there).
    #[arg(long, value_name = "FILE")]
    worker_kubeconfig: PathBuf,

    /// Context of --worker-kubeconfig; default: its current context.
    #[arg(long, value_name = "NAME")]
    worker_context: Option<String>,

    /// Name of the ClusterBinding.
    #[arg(long, default_value = "worker-1")]
    binding: String,

    /// `spec.clusterID` of the binding (the virtual nodes are `vnode-<ID>-<node>`); default:
    /// the binding name.
    #[arg(long)]
    cluster_id: Option<String>,

    /// Namespace of the kubeconfig Secret (computing cluster) and of the ServiceAccount
    /// (worker cluster).
    #[arg(long, default_value = "kubeocean-system")]
    namespace: String,

    /// Worker namespace that receives the mapped pods (`spec.mountNamespace`).
    #[arg(long, default_value = "kubeocean-worker")]
    mount_namespace: String,

    /// API server URL of the worker as the computing cluster's pods reach it; default: the
    /// worker kubeconfig's.
    #[arg(long, value_name = "URL")]
    worker_server: Option<String>,

    /// YAML or JSON file with a ResourceLeasingPolicy to create in the worker (its
    /// spec.cluster must be the binding name).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,

    /// How long to wait for the binding to be Ready (bind) or gone (unbind).
    #[arg(long, default_value = "3m", value_parser = parse_duration)]
    timeout: Duration,

    /// Kubeconfig of the computing cluster; default: $KUBECONFIG or ~/.kube/config.
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,

    /// Context of --kubeconfig.
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
}

/// Everything read from the files, before any cluster is contacted.
struct Prepared {
    spec: BindSpec,
    endpoint: WorkerEndpoint,
}

fn read_policy(path: &Path) -> Result<ResourceLeasingPolicy, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read --policy {}: {e}", path.display()))?;
    let value: serde_json::Value = serde_saphyr::from_str(&text)
        .map_err(|e| format!("--policy {} is not valid YAML or JSON: {e}", path.display()))?;
    if value["kind"] != "ResourceLeasingPolicy" {
        return Err(format!(
            "--policy {}: expected a ResourceLeasingPolicy, found {}",
            path.display(),
            value["kind"]
        ));
    }
    serde_json::from_value(value).map_err(|e| format!("--policy {}: {e}", path.display()))
}

/// Reads and checks the flags and files; the error is a usage error (exit code 2).
fn prepare(args: &BindArgs) -> Result<Prepared, String> {
    let kubeconfig = kube::config::Kubeconfig::read_from(&args.worker_kubeconfig).map_err(|e| {
        format!(
            "cannot read --worker-kubeconfig {}: {e}",
            args.worker_kubeconfig.display()
        )
    })?;
    let mut kubeconfig = kubeconfig;
    if let Some(context) = &args.worker_context {
        kubeconfig.current_context = Some(context.clone());
    }
    let endpoint = worker_endpoint(&kubeconfig).map_err(|e| {
        format!(
            "--worker-kubeconfig {}: {e}",
            args.worker_kubeconfig.display()
        )
    })?;
    let policy = args.policy.as_deref().map(read_policy).transpose()?;
    let spec = BindSpec {
        binding: args.binding.clone(),
        cluster_id: args
            .cluster_id
            .clone()
            .unwrap_or_else(|| args.binding.clone()),
        namespace: args.namespace.clone(),
        mount_namespace: args.mount_namespace.clone(),
        worker_server: args.worker_server.clone(),
        policy,
        timeout: args.timeout,
    };
    let problems = spec.problems();
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    Ok(Prepared { spec, endpoint })
}

/// `kubeocean bind`.
pub fn bind_main(args: BindArgs) -> ExitCode {
    run(args, false)
}

/// `kubeocean unbind`.
pub fn unbind_main(args: BindArgs) -> ExitCode {
    run(args, true)
}

fn run(args: BindArgs, undo: bool) -> ExitCode {
    let prepared = match prepare(&args) {
        Ok(prepared) => prepared,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the runtime: {err}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(execute(&args, &prepared, undo)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(BindError::Invalid(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(1)
        }
    }
}

async fn execute(args: &BindArgs, prepared: &Prepared, undo: bool) -> Result<(), BindError> {
    let options = ClientOptions::new("kubeocean-bind");
    let computing = client_from_kubeconfig(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
        &options,
    )
    .await
    .map_err(|e| BindError::Invalid(format!("the computing cluster: {e}")))?;
    let worker = client_from_kubeconfig(
        Some(&args.worker_kubeconfig),
        args.worker_context.as_deref(),
        &options,
    )
    .await
    .map_err(|e| BindError::Invalid(format!("the worker cluster: {e}")))?;
    let mut print = |step: &Step| println!("{step}");
    if undo {
        kubeocean_core::bind::unbind(&computing, &worker, &prepared.spec, &mut print).await?;
        println!(
            "unbound: ClusterBinding {} and what bind created are gone",
            prepared.spec.binding
        );
    } else {
        kubeocean_core::bind::bind(
            &computing,
            &worker,
            &prepared.endpoint,
            &prepared.spec,
            &mut print,
        )
        .await?;
        println!(
            "bound: ClusterBinding {} is Ready; its virtual nodes are vnode-{}-<node>",
            prepared.spec.binding, prepared.spec.cluster_id
        );
    }
    Ok(())
}
