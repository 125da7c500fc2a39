//! `kubeocean manager`, `syncer` and `proxier` against a sandbox computing cluster with a port
//! they need already taken: each exits at start with a non-zero status and names the address,
//! instead of running on without metrics, probes or its kubelet API.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use kube_sandbox::testing::install_crds;
use kube_sandbox::testing::process::{ServedWithKubeconfig, assert_fails_naming, busy_port};
use kubeocean_core::crd;
use kubeocean_core::proxier::self_signed_serving_cert;

/// A guard against a hang only: the processes exit long before it.
const GUARD: Duration = Duration::from_secs(60);

const FREE: &str = "127.0.0.1:0";

/// A sandbox computing cluster with the CRDs, served over loopback with its kubeconfig written
/// to a file, in a directory named after `name`.
async fn computing(name: &str) -> ServedWithKubeconfig {
    let computing =
        ServedWithKubeconfig::start("computing", &format!("kubeocean-busy-{name}")).await;
    install_crds(&computing.cluster.client(), crd::crds()).await;
    computing
}

/// `--tls-cert-file` and `--tls-private-key-file` flags with a fresh self-signed pair written
/// next to the kubeconfig.
fn tls_flags(computing: &ServedWithKubeconfig) -> [String; 2] {
    let (cert, key) = self_signed_serving_cert(&[]).unwrap();
    let (cert_path, key_path) = (computing.dir.join("tls.crt"), computing.dir.join("tls.key"));
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    [
        format!("--tls-cert-file={}", cert_path.display()),
        format!("--tls-private-key-file={}", key_path.display()),
    ]
}

/// Runs `kubeocean` with `args` and `<busy_flag>=<a taken port>` against `computing`, and
/// asserts that it failed naming the port and `what`.
async fn exits_naming(
    computing: &ServedWithKubeconfig,
    args: &[&str],
    busy_flag: &str,
    what: &str,
) {
    let (_taken, busy) = busy_port();
    let busy_arg = format!("{busy_flag}={busy}");
    let args = [args, &[busy_arg.as_str()]].concat();
    let binary = Path::new(env!("CARGO_BIN_EXE_kubeocean"));
    let (status, stderr) = computing.run_to_exit(binary, &args, GUARD).await;
    assert_fails_naming(status, &stderr, busy, what);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_exits_at_start_when_the_metrics_port_is_busy() {
    let computing = computing("manager").await;
    let args = ["manager", "--probe-addr", FREE];
    exits_naming(&computing, &args, "--metrics-addr", "metrics").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn syncer_exits_at_start_when_the_probe_port_is_busy() {
    let computing = computing("syncer").await;
    let args = ["syncer", "--cluster-binding=b1", "--metrics-addr", FREE];
    exits_naming(&computing, &args, "--probe-addr", "probes").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxier_exits_at_start_when_its_listen_port_is_busy() {
    let computing = computing("proxier").await;
    let [cert, key] = tls_flags(&computing);
    let args = [
        "proxier",
        "--cluster-binding=b1",
        "--token-review",
        "--metrics-addr",
        FREE,
        "--probe-addr",
        FREE,
        &cert,
        &key,
    ];
    // The proxier names no listener: its one port is what it serves.
    exits_naming(&computing, &args, "--listen", "").await;
}
