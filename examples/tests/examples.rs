//! Every example program runs to completion against in-process sandbox clusters and proves
//! what it says: each test runs the built binary (as `cargo run -p examples --bin <name>`
//! would), with a guard against a hang, and checks its exit status and the `proved:` lines it
//! prints.
#![allow(clippy::unwrap_used)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use kube_sandbox::testing::process::tail;
use kube_sandbox::testing::tools::skip_or_fail;

/// Longest any example may run before it counts as hung.
const GUARD: Duration = Duration::from_secs(240);

/// What a run printed.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Asserts success and returns the `proved:` lines.
    fn proved(&self) -> Vec<&str> {
        assert!(
            self.status.success(),
            "exit status {}\nstdout:\n{}\nstderr:\n{}",
            self.status,
            tail(&self.stdout),
            tail(&self.stderr)
        );
        self.stdout
            .lines()
            .filter(|l| l.starts_with("proved: "))
            .collect()
    }
}

/// Runs `binary args` until it exits, killing it (and failing) after [`GUARD`].
fn run(binary: &str, args: &[&str]) -> Run {
    let mut child = Command::new(binary)
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
    // Read on threads so that a chatty program cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = out.read_to_string(&mut text);
        text
    });
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
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
            panic!(
                "{binary} still ran after {GUARD:?}; stderr ends:\n{}",
                tail(&stderr.join().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Run {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

fn assert_proved(lines: &[&str], expected: &[&str]) {
    assert_eq!(lines.len(), expected.len(), "{lines:#?}");
    for (line, words) in lines.iter().zip(expected) {
        assert!(line.contains(words), "{line:?} does not say {words:?}");
    }
}

#[test]
fn crd_mapper_copies_a_crd_kind_like_kubeocean() {
    let run = run(env!("CARGO_BIN_EXE_crd_mapper"), &[]);
    assert_proved(
        &run.proved(),
        &[
            "apps/new-checkout was copied to kubeocean-worker/",
            "rolloutPercent 10 -> 50",
            "served: Some(true)",
            "a taken physical name is reported and left alone",
        ],
    );
}

#[test]
fn gpu_only_leasing_lends_only_the_gpu_node() {
    let run = run(env!("CARGO_BIN_EXE_gpu_only_leasing"), &["--sandbox"]);
    assert!(run.status.success(), "{}", tail(&run.stderr));
    let nodes: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(nodes.len(), 1, "{}", run.stdout);
    assert_eq!(nodes[0]["virtualNode"], "vnode-gpu-gpu-1");
    assert_eq!(nodes[0]["allocatable"]["nvidia.com/gpu"], "4");
    assert!(
        nodes[0]["taints"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "nvidia.com/gpu=present:NoSchedule"),
        "{}",
        nodes[0]
    );
}

#[test]
fn custom_access_decides_who_sees_which_instance() {
    let run = run(env!("CARGO_BIN_EXE_custom_access"), &[]);
    assert_proved(
        &run.proved(),
        &[
            "unknown key get 401",
            "lists payments-prod and shared-tools; root lists all three",
            "reading search-prod gets 403",
            "deleting it gets 403 and it stays",
        ],
    );
}

#[test]
fn embedded_syncer_hosts_two_syncers_in_one_process() {
    let run = run(env!("CARGO_BIN_EXE_embedded_syncer"), &["--sandbox"]);
    assert_proved(
        &run.proved(),
        &[
            "vnode-w1-n1 and vnode-w2-n1",
            "{\"worker-1\": 1, \"worker-2\": 1} Running pod(s) per binding",
            "one cancellation stopped both syncers",
        ],
    );
}

#[test]
fn instance_inventory_follows_kairship_instances() {
    let run = run(env!("CARGO_BIN_EXE_instance_inventory"), &["--sandbox"]);
    assert_proved(
        &run.proved(),
        &[
            "each Instance got its inventory entry",
            "a status change of the Instance reached its entry",
            "deleting Instance staging deleted its entry",
        ],
    );
}

#[test]
fn configmap_replicator_demo_runs_each_step() {
    let run = run(env!("CARGO_BIN_EXE_configmap_replicator"), &["--sandbox"]);
    assert_proved(
        &run.proved(),
        &[
            "copied into team-a and team-b",
            "team-c, created later, got its copy",
            "deleting the source deleted its copies",
        ],
    );
}

#[test]
fn custom_read_backend_serves_only_the_hot_kinds() {
    let run = run(env!("CARGO_BIN_EXE_custom_read_backend"), &[]);
    assert!(run.status.success(), "{}", tail(&run.stderr));
    assert!(
        run.stdout.contains("reads answered by HotKindsBackend"),
        "{}",
        run.stdout
    );
}

#[test]
fn leader_elected_controller_fails_over_and_greets() {
    let run = run(
        env!("CARGO_BIN_EXE_leader_elected_controller"),
        &[
            "--sandbox",
            "--leader-elect",
            "--replicas=2",
            "--run-for=10s",
            "--metrics-addr=127.0.0.1:0",
            "--probe-addr=127.0.0.1:0",
        ],
    );
    assert!(run.status.success(), "{}", tail(&run.stderr));
    assert!(
        run.stdout
            .contains("configmap default/hello: greeting = Some(\"hello from replica-"),
        "{}",
        run.stdout
    );
}

#[test]
fn generated_python_client_drives_kairship_sandbox() {
    const TEST: &str = "generated_python_client_drives_kairship_sandbox";
    let binary = env!("CARGO_BIN_EXE_generated_python_client");
    // `cargo test --workspace` builds the kairship binary beside the examples' binaries.
    let kairship = Path::new(binary).with_file_name("kairship");
    if !kairship.is_file() {
        skip_or_fail(
            TEST,
            "the kairship binary is not built",
            "cargo build -p kairship-bin",
        );
        return;
    }
    let run = run(binary, &[]);
    if run.status.code() == Some(75) {
        skip_or_fail(TEST, run.stderr.trim(), "see .ci/run");
        return;
    }
    assert_proved(
        &run.proved(),
        &[
            "openapi-generator-cli made a Python client",
            "the admin lists instances ['karmada-a', 'karmada-b'], the viewer only ['karmada-a']",
            "the viewer reads {'greeting': 'hello from Python'}",
            "the viewer's create is refused with 403",
        ],
    );
}
