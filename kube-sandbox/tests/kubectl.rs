//! The real kubectl (v1.36) against `kube-sandbox serve --tls`, as a new user drives it:
//! `kubectl create` of built-in kinds (protobuf bodies), `kubectl apply` client-side and
//! server-side, validation of an unknown field, `kubectl explain`, `kubectl get` of each common
//! kind compared column for column with what a real kube-apiserver prints, scaling and rolling
//! out a Deployment, waiting for a Job, logs, exec, and deleting a namespace.
//!
//! kubectl is found as `kube_sandbox::testing::kubectl` says; without it the test prints a
//! notice and passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Duration;

use kube_sandbox::testing::kubectl::{Kubectl, kubectl_or_skip};
use kube_sandbox::testing::kubectl_session;
use kube_sandbox::testing::process::Background;

#[test]
fn kubectl_session_against_kube_sandbox_serve() {
    let Some(binary) = kubectl_or_skip("kubectl_session_against_kube_sandbox_serve") else {
        return;
    };
    let dir = tempdir("kubectl-serve");
    let kubeconfig = dir.join("kubeconfig");
    let mut command = Command::new(env!("CARGO_BIN_EXE_kube-sandbox"));
    command.args(["serve", "--tls", "--nodes", "3", "--kubeconfig"]);
    command.arg(&kubeconfig);
    let mut server = Background::spawn(command);
    server.wait_for_line(Duration::from_secs(60), |line| {
        line.starts_with("kubeconfig written to")
    });
    let kubectl = Kubectl::new(binary, &kubeconfig);

    kubectl_session::nodes_table(&kubectl, 3);
    kubectl_session::full(&kubectl, "kubectl-session");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
