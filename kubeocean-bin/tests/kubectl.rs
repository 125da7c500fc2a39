//! The real kubectl (v1.36) against `kubeocean sandbox`'s computing cluster: an ordinary
//! Deployment of 6 replicas that tolerates the virtual-node taint, created and rolled out with
//! kubectl, ends with 6 Running pods spread over the virtual nodes of both workers; kubectl's
//! logs of one of them come back through the proxier, and `kubectl top` shows their usage.
//!
//! kubectl is found as `kube_sandbox::testing::kubectl` says; without it the test prints a
//! notice and passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use kube_sandbox::testing::kubectl::{Kubectl, cells, kubectl_or_skip};
use kube_sandbox::testing::kubectl_session;
use kube_sandbox::testing::process::Background;

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: spread
  namespace: default
spec:
  replicas: 6
  selector:
    matchLabels: {app: spread}
  template:
    metadata:
      labels: {app: spread}
    spec:
      tolerations:
      - {key: kubeocean.io/vnode, operator: Exists}
      containers:
      - name: app
        image: nginx:1.27
        resources:
          requests: {cpu: 100m, memory: 64Mi}
"#;

#[test]
fn a_deployment_spreads_over_the_virtual_nodes_of_both_workers() {
    let Some(binary) =
        kubectl_or_skip("a_deployment_spreads_over_the_virtual_nodes_of_both_workers")
    else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("kubeocean-kubectl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut command = Command::new(env!("CARGO_BIN_EXE_kubeocean"));
    command.args(["sandbox", "--report-interval", "60s", "--dir"]);
    command.arg(&dir);
    let mut sandbox = Background::spawn(command);
    sandbox.wait_for_line(Duration::from_secs(120), |line| {
        line.starts_with("Ctrl-C to stop")
    });
    let kubectl = Kubectl::new(binary, dir.join("computing.kubeconfig"));

    // Six virtual nodes (two workers of three), Ready, before the workload.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let ready = kubectl.ok(&[
            "get",
            "nodes",
            "-l",
            "type=virtual-kubelet",
            "-o",
            "jsonpath={range .items[*]}{.status.conditions[?(@.type=='Ready')].status}{'\\n'}{end}",
        ]);
        if ready.lines().filter(|s| *s == "True").count() == 6 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "six Ready virtual nodes: {ready}\n{}",
            sandbox.printed
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    kubectl.ok_with_input(&["apply", "-f", "-"], DEPLOYMENT);
    kubectl.ok(&["rollout", "status", "deployment/spread", "--timeout=120s"]);
    let pods = kubectl.ok(&["get", "pods", "-l", "app=spread", "-o", "wide"]);
    let rows: Vec<Vec<String>> = pods.lines().skip(1).map(cells).collect();
    assert_eq!(rows.len(), 6, "{pods}");
    let mut workers = BTreeSet::new();
    for row in &rows {
        assert_eq!(row.get(2).map(String::as_str), Some("Running"), "{pods}");
        let node = row.get(6).cloned().unwrap_or_default();
        let worker = node
            .strip_prefix("vnode-")
            .and_then(|rest| rest.split('-').next())
            .unwrap_or_else(|| panic!("{node} is not a virtual node:\n{pods}"));
        workers.insert(worker.to_owned());
    }
    assert_eq!(
        workers,
        BTreeSet::from(["w1".to_owned(), "w2".to_owned()]),
        "{pods}"
    );
    let logs = kubectl.ok_within(&["logs", "deployment/spread"], kubectl_session::SETTLE);
    // The README's `kubectl top`: metrics-server's figures of every replica, read from the
    // virtual nodes' proxiers (once two scrapes since the pods started are stored).
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let out = kubectl.run(&["top", "pods", "-l", "app=spread"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let rows: Vec<Vec<String>> = text.lines().skip(1).map(cells).collect();
        if out.status.success() && rows.len() == 6 {
            for row in &rows {
                assert_eq!(row.get(1).map(String::as_str), Some("100m"), "{text}");
            }
            break;
        }
        assert!(
            Instant::now() < deadline,
            "kubectl top pods: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let nodes = kubectl.ok(&["top", "nodes", "-l", "type=virtual-kubelet"]);
    assert_eq!(nodes.lines().skip(1).count(), 6, "{nodes}");
    assert!(!logs.trim().is_empty());
    drop(sandbox);
    let _ = std::fs::remove_dir_all(&dir);
}
