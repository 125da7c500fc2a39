//! `kubeocean manager`, `syncer` and `proxier` against a sandbox computing cluster with a port
//! they need already taken: each exits at start with a non-zero status and names the address,
//! instead of running on without metrics, probes or its kubelet API.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::PostParams;
use kube_sandbox::testing::process::{self, assert_fails_naming, busy_port};
use kube_sandbox::{Cluster, ServeOptions, Served};
use kubeocean_core::crd;
use kubeocean_core::proxier::self_signed_serving_cert;

/// A guard against a hang only: the processes exit long before it.
const GUARD: Duration = Duration::from_secs(60);

const FREE: &str = "127.0.0.1:0";

/// A sandbox computing cluster with the CRDs, served over loopback with its kubeconfig (and
/// the proxier's serving certificate) written to files.
struct Computing {
    _cluster: Cluster,
    served: Served,
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl Computing {
    async fn start(name: &str) -> Computing {
        let cluster = Cluster::new("computing");
        let dir =
            std::env::temp_dir().join(format!("kubeocean-busy-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kubeconfig = dir.join("computing.kubeconfig");
        let served = cluster
            .serve(ServeOptions {
                kubeconfig_path: Some(kubeconfig.clone()),
                ..ServeOptions::default()
            })
            .await
            .unwrap();
        let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
        for crd in crd::crds() {
            crds.create(&PostParams::default(), &crd).await.unwrap();
        }
        Computing {
            _cluster: cluster,
            served,
            dir,
            kubeconfig,
        }
    }

    /// `--tls-cert-file` and `--tls-private-key-file` flags with a fresh self-signed pair.
    fn tls_flags(&self) -> Vec<String> {
        let (cert, key) = self_signed_serving_cert(&[]).unwrap();
        let (cert_path, key_path) = (self.dir.join("tls.crt"), self.dir.join("tls.key"));
        std::fs::write(&cert_path, cert).unwrap();
        std::fs::write(&key_path, key).unwrap();
        vec![
            format!("--tls-cert-file={}", cert_path.display()),
            format!("--tls-private-key-file={}", key_path.display()),
        ]
    }
}

impl Drop for Computing {
    fn drop(&mut self) {
        self.served.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `kubeocean` with `args` against `kubeconfig` until it exits; its status and stderr.
fn run_to_exit(args: &[String], kubeconfig: &Path) -> (ExitStatus, String) {
    let mut args = args.to_vec();
    args.push(format!("--kubeconfig={}", kubeconfig.display()));
    args.push("--log-level=warn".to_owned());
    process::run_to_exit(Path::new(env!("CARGO_BIN_EXE_kubeocean")), &args, GUARD)
}

/// Runs `args` against `computing` off the async runtime that serves the sandbox.
async fn run(computing: &Computing, args: Vec<String>) -> (ExitStatus, String) {
    let kubeconfig = computing.kubeconfig.clone();
    tokio::task::spawn_blocking(move || run_to_exit(&args, &kubeconfig))
        .await
        .unwrap()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_exits_at_start_when_the_metrics_port_is_busy() {
    let computing = Computing::start("manager").await;
    let (_taken, busy) = busy_port();
    let mut args = strings(&["manager", "--probe-addr", FREE]);
    args.push(format!("--metrics-addr={busy}"));
    let (status, stderr) = run(&computing, args).await;
    assert_fails_naming(status, &stderr, busy, "metrics");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn syncer_exits_at_start_when_the_probe_port_is_busy() {
    let computing = Computing::start("syncer").await;
    let (_taken, busy) = busy_port();
    let mut args = strings(&["syncer", "--cluster-binding=b1", "--metrics-addr", FREE]);
    args.push(format!("--probe-addr={busy}"));
    let (status, stderr) = run(&computing, args).await;
    assert_fails_naming(status, &stderr, busy, "probes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxier_exits_at_start_when_its_listen_port_is_busy() {
    let computing = Computing::start("proxier").await;
    let (_taken, busy) = busy_port();
    let mut args = strings(&[
        "proxier",
        "--cluster-binding=b1",
        "--token-review",
        "--metrics-addr",
        FREE,
        "--probe-addr",
        FREE,
    ]);
    args.extend(computing.tls_flags());
    args.push(format!("--listen={busy}"));
    let (status, stderr) = run(&computing, args).await;
    // The proxier names no listener: its one port is what it serves.
    assert_fails_naming(status, &stderr, busy, "");
}
