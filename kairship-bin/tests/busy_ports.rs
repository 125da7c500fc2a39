//! `kairship controller-manager` and `kairship apiserver` against a sandbox host with a port
//! they need already taken: each exits at start with a non-zero status and names the address,
//! instead of running on without metrics, probes or its API.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use kube_sandbox::testing::process::{self, assert_fails_naming, busy_port};
use kube_sandbox::{Cluster, ServeOptions, Served};

/// A guard against a hang only: the processes exit long before it.
const GUARD: Duration = Duration::from_secs(60);

const FREE: &str = "127.0.0.1:0";

/// A sandbox host served over loopback with its kubeconfig written to a file.
struct Host {
    _cluster: Cluster,
    served: Served,
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl Host {
    async fn start(name: &str) -> Host {
        let cluster = Cluster::new("host");
        let dir = std::env::temp_dir().join(format!("kairship-busy-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kubeconfig = dir.join("host.kubeconfig");
        let served = cluster
            .serve(ServeOptions {
                kubeconfig_path: Some(kubeconfig.clone()),
                ..ServeOptions::default()
            })
            .await
            .unwrap();
        Host {
            _cluster: cluster,
            served,
            dir,
            kubeconfig,
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.served.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `kairship` with `args` against `kubeconfig` until it exits; its status and stderr.
fn run_to_exit(args: &[String], kubeconfig: &Path) -> (ExitStatus, String) {
    let mut args = args.to_vec();
    args.push(format!("--kubeconfig={}", kubeconfig.display()));
    args.push("--log-level=warn".to_owned());
    process::run_to_exit(Path::new(env!("CARGO_BIN_EXE_kairship")), &args, GUARD)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_manager_exits_at_start_when_the_metrics_port_is_busy() {
    let host = Host::start("cm-metrics").await;
    let (_taken, busy) = busy_port();
    let mut args = strings(&["controller-manager", "--probe-addr", FREE]);
    args.push(format!("--metrics-addr={busy}"));
    let kubeconfig = host.kubeconfig.clone();
    let (status, stderr) = tokio::task::spawn_blocking(move || run_to_exit(&args, &kubeconfig))
        .await
        .unwrap();
    assert_fails_naming(status, &stderr, busy, "metrics");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_manager_exits_at_start_when_the_probe_port_is_busy() {
    let host = Host::start("cm-probe").await;
    let (_taken, busy) = busy_port();
    let mut args = strings(&["controller-manager", "--metrics-addr", FREE]);
    args.push(format!("--probe-addr={busy}"));
    let kubeconfig = host.kubeconfig.clone();
    let (status, stderr) = tokio::task::spawn_blocking(move || run_to_exit(&args, &kubeconfig))
        .await
        .unwrap();
    assert_fails_naming(status, &stderr, busy, "probes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_manager_exits_at_start_when_the_webhook_port_is_busy() {
    let host = Host::start("cm-webhook").await;
    let (_taken, busy) = busy_port();
    let secret = host.dir.join("webhook-secret");
    std::fs::write(&secret, "s3cret").unwrap();
    let mut args = strings(&[
        "controller-manager",
        "--metrics-addr",
        FREE,
        "--probe-addr",
        FREE,
    ]);
    args.push(format!("--webhook-addr={busy}"));
    args.push(format!("--webhook-secret-file={}", secret.display()));
    let kubeconfig = host.kubeconfig.clone();
    let (status, stderr) = tokio::task::spawn_blocking(move || run_to_exit(&args, &kubeconfig))
        .await
        .unwrap();
    assert_fails_naming(status, &stderr, busy, "webhook");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apiserver_exits_at_start_when_the_metrics_port_is_busy() {
    let host = Host::start("api-metrics").await;
    let (_taken, busy) = busy_port();
    let mut args = strings(&["apiserver", "--listen", FREE, "--probe-addr", FREE]);
    args.push(format!("--metrics-addr={busy}"));
    let kubeconfig = host.kubeconfig.clone();
    let (status, stderr) = tokio::task::spawn_blocking(move || run_to_exit(&args, &kubeconfig))
        .await
        .unwrap();
    assert_fails_naming(status, &stderr, busy, "metrics");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apiserver_exits_at_start_when_its_listen_port_is_busy() {
    let host = Host::start("api-listen").await;
    let (_taken, busy) = busy_port();
    let mut args = strings(&["apiserver", "--metrics-addr", FREE, "--probe-addr", FREE]);
    args.push(format!("--listen={busy}"));
    let kubeconfig = host.kubeconfig.clone();
    let (status, stderr) = tokio::task::spawn_blocking(move || run_to_exit(&args, &kubeconfig))
        .await
        .unwrap();
    assert_fails_naming(status, &stderr, busy, "--listen");
}
