//! `kairship controller-manager` and `kairship apiserver` against a sandbox host with a port
//! they need already taken: each exits at start with a non-zero status and names the address,
//! instead of running on without metrics, probes or its API.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use kube_sandbox::testing::process::{ServedWithKubeconfig, assert_fails_naming, busy_port};

/// A guard against a hang only: the processes exit long before it.
const GUARD: Duration = Duration::from_secs(60);

const FREE: &str = "127.0.0.1:0";

/// A sandbox host served over loopback, its files in a directory named after `name`.
async fn host(name: &str) -> ServedWithKubeconfig {
    ServedWithKubeconfig::start("host", &format!("kairship-busy-{name}")).await
}

/// Runs `kairship` with `args` and `<busy_flag>=<a taken port>` against `host`, and asserts
/// that it failed naming the port and `what`.
async fn exits_naming(host: &ServedWithKubeconfig, args: &[&str], busy_flag: &str, what: &str) {
    let (_taken, busy) = busy_port();
    let busy_arg = format!("{busy_flag}={busy}");
    let args = [args, &[busy_arg.as_str()]].concat();
    let binary = Path::new(env!("CARGO_BIN_EXE_kairship"));
    let (status, stderr) = host.run_to_exit(binary, &args, GUARD).await;
    assert_fails_naming(status, &stderr, busy, what);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_manager_exits_at_start_when_the_metrics_port_is_busy() {
    let host = host("cm-metrics").await;
    let args = ["controller-manager", "--probe-addr", FREE];
    exits_naming(&host, &args, "--metrics-addr", "metrics").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_manager_exits_at_start_when_the_probe_port_is_busy() {
    let host = host("cm-probe").await;
    let args = ["controller-manager", "--metrics-addr", FREE];
    exits_naming(&host, &args, "--probe-addr", "probes").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_manager_exits_at_start_when_the_webhook_port_is_busy() {
    let host = host("cm-webhook").await;
    let secret = host.dir.join("webhook-secret");
    std::fs::write(&secret, "s3cret").unwrap();
    let secret_flag = format!("--webhook-secret-file={}", secret.display());
    let args = [
        "controller-manager",
        "--metrics-addr",
        FREE,
        "--probe-addr",
        FREE,
        &secret_flag,
    ];
    exits_naming(&host, &args, "--webhook-addr", "webhook").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apiserver_exits_at_start_when_the_metrics_port_is_busy() {
    let host = host("api-metrics").await;
    let args = ["apiserver", "--listen", FREE, "--probe-addr", FREE];
    exits_naming(&host, &args, "--metrics-addr", "metrics").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apiserver_exits_at_start_when_its_listen_port_is_busy() {
    let host = host("api-listen").await;
    let args = ["apiserver", "--metrics-addr", FREE, "--probe-addr", FREE];
    exits_naming(&host, &args, "--listen", "--listen").await;
}
