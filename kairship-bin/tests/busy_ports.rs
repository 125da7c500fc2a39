//! `kairship controller-manager` and `kairship apiserver` against a sandbox host with a port
//! they need already taken: each exits at start with a non-zero status and names the address,
//! instead of running on without metrics, probes or its API.
#![allow(clippy::unwrap_used)]

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

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

/// Runs the binary until it exits (killing it after [`GUARD`]); its status and stderr.
fn run_to_exit(args: &[String], kubeconfig: &Path) -> (ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kairship"))
        .args(args)
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .arg("--log-level=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    // Read on a thread so that a chatty process cannot block on a full pipe.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > GUARD {
            let _ = child.kill();
            let _ = child.wait();
            let text = reader.join().unwrap();
            panic!(
                "{args:?} still ran after {GUARD:?}; stderr ends:\n{}",
                tail(&text)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status, reader.join().unwrap())
}

/// The end of a long stderr, for failure messages.
fn tail(text: &str) -> &str {
    let mut start = text.len().saturating_sub(2000);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

fn busy_port() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind(FREE).unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

fn assert_fails_naming(status: ExitStatus, stderr: &str, addr: SocketAddr, what: &str) {
    assert!(
        !status.success(),
        "exit status {status}; stderr:\n{}",
        tail(stderr)
    );
    assert!(
        stderr.contains(&format!("cannot listen on {addr} ({what})")),
        "stderr does not name {addr} ({what}):\n{}",
        tail(stderr)
    );
    // The OS's words for the busy port, once: not repeated by a printed error chain.
    let cause = TcpListener::bind(addr).unwrap_err().to_string();
    assert_eq!(
        stderr.matches(cause.as_str()).count(),
        1,
        "the cause once:\n{}",
        tail(stderr)
    );
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
