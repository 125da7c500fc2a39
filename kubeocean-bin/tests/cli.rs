//! The `kubeocean` binary end to end: `leasing explain` on files and `crds`.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "kubeocean-cli-{name}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, file: &str, content: &str) -> PathBuf {
        let path = self.0.join(file);
        std::fs::write(&path, content).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn kubeocean(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubeocean"))
        .args(args)
        .output()
        .unwrap()
}

const NODE_YAML: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels:
    zone: a
spec:
  taints:
  - key: node.kubernetes.io/unschedulable
    effect: NoSchedule
status:
  allocatable:
    cpu: "4"
    memory: 8Gi
"#;

const PODS_YAML: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  nodeName: node-1
  containers:
  - name: app
    resources:
      limits:
        cpu: "1"
      requests:
        memory: 2Gi
status:
  phase: Running
---
apiVersion: v1
kind: Pod
metadata:
  name: done
spec:
  nodeName: node-1
  containers:
  - name: app
    resources:
      requests:
        cpu: "2"
status:
  phase: Succeeded
---
apiVersion: v1
kind: Pod
metadata:
  name: elsewhere
spec:
  nodeName: node-2
  containers:
  - name: app
    resources:
      requests:
        cpu: "2"
status:
  phase: Running
"#;

const BINDING_YAML: &str = r#"
apiVersion: cloud.tencent.com/v1beta1
kind: ClusterBinding
metadata:
  name: worker-1
spec:
  clusterID: c1
  secretRef:
    name: worker-1-kubeconfig
    namespace: kubeocean-system
"#;

fn policy_json(force_reclaim: bool) -> String {
    json!({
        "apiVersion": "cloud.tencent.com/v1beta1",
        "kind": "ResourceLeasingPolicy",
        "metadata": { "name": "nights", "creationTimestamp": "2025-01-01T00:00:00Z" },
        "spec": {
            "cluster": "worker-1",
            "timezone": "Europe/Berlin",
            "forceReclaim": force_reclaim,
            "timeWindows": [{ "start": "20:00", "end": "06:00" }],
            "resourceLimits": [{ "resource": "cpu", "percent": 50 }, { "resource": "memory", "percent": 75 }],
        },
    })
    .to_string()
}

fn explain(dir: &TempDir, pods: &Path, policy: &Path, at: &str) -> Output {
    let node = dir.write("node.yaml", NODE_YAML);
    let binding = dir.write("binding.yaml", BINDING_YAML);
    kubeocean(&[
        "leasing",
        "explain",
        "--node",
        node.to_str().unwrap(),
        "--pods",
        pods.to_str().unwrap(),
        "--policy",
        policy.to_str().unwrap(),
        "--binding",
        binding.to_str().unwrap(),
        "--at",
        at,
    ])
}

fn stdout_json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "exit {:?}, stderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn explains_the_design_example_inside_the_window() {
    let dir = TempDir::new("inside");
    let pods = dir.write("pods.yaml", PODS_YAML);
    let policy = dir.write("policy.json", &policy_json(false));
    // 23:00 in Berlin.
    let got = stdout_json(&explain(&dir, &pods, &policy, "2025-01-03T22:00:00Z"));
    assert_eq!(
        got,
        json!({
            "virtualNodeName": "vnode-c1-node-1",
            "policy": "nights",
            "inWindow": true,
            "allocatable": { "cpu": "1500m", "memory": "4608Mi" },
            "taints": [
                { "key": "kubeocean.io/physical-node-unschedulable", "value": null, "effect": "NoSchedule" },
                { "key": "kubeocean.io/vnode", "value": null, "effect": "NoSchedule" },
            ],
            "lent": true,
        })
    );
}

#[test]
fn outside_the_window_with_force_reclaim_taints_no_execute() {
    let dir = TempDir::new("outside");
    let pod_list = json!({ "apiVersion": "v1", "kind": "PodList", "items": [
        { "metadata": { "name": "web" }, "spec": { "nodeName": "node-1", "containers": [
            { "name": "app", "resources": { "requests": { "cpu": "1", "memory": "2Gi" } } }
        ] }, "status": { "phase": "Running" } }
    ] });
    let pods = dir.write("pods.json", &pod_list.to_string());
    let policy = dir.write("policy.json", &policy_json(true));
    // 13:00 in Berlin.
    let got = stdout_json(&explain(&dir, &pods, &policy, "2025-01-03T12:00:00Z"));
    assert_eq!(got["inWindow"], false);
    assert_eq!(got["lent"], true);
    assert_eq!(
        got["allocatable"],
        json!({ "cpu": "1500m", "memory": "4608Mi" })
    );
    assert_eq!(
        got["taints"][2],
        json!({ "key": "kubeocean.io/out-of-time-windows", "value": "true", "effect": "NoExecute" })
    );
}

#[test]
fn a_policy_for_another_binding_means_not_lent() {
    let dir = TempDir::new("not-lent");
    let pods = dir.write("pods.yaml", PODS_YAML);
    let policy = dir.write(
        "policy.json",
        &policy_json(false).replace("worker-1", "worker-2"),
    );
    let output = explain(&dir, &pods, &policy, "2025-01-03T22:00:00Z");
    assert_eq!(
        stdout_json(&output),
        json!({ "virtualNodeName": "vnode-c1-node-1", "policy": null, "inWindow": false, "allocatable": {}, "taints": [], "lent": false })
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not lent: no valid policy of the binding selects the node"),
        "{stderr}"
    );
}

#[test]
fn a_binding_being_deleted_lends_nothing_as_the_syncer_drains_it() {
    // The form docs/kubeocean/migrate-from-upstream.md uses: no --pods, the policies as
    // `kubectl get resourceleasingpolicies -o yaml` prints them (a List), objects as
    // upstream leaves them (its finalizers).
    let dir = TempDir::new("deleting");
    let node = dir.write("node.yaml", NODE_YAML);
    let policies = json!({ "apiVersion": "v1", "kind": "List", "items": [
        serde_json::from_str::<Value>(&policy_json(false)).unwrap()] });
    let policies = dir.write("policies.yaml", &policies.to_string());
    let deleting = BINDING_YAML.replace(
        "  name: worker-1\n",
        "  name: worker-1\n  deletionTimestamp: \"2025-01-03T00:00:00Z\"\n  finalizers: [kubeocean.io/clusterbinding-manager]\n",
    );
    for (binding, lent) in [(BINDING_YAML.to_owned(), true), (deleting, false)] {
        let binding = dir.write("binding.yaml", &binding);
        let output = kubeocean(&[
            "leasing",
            "explain",
            "--node",
            node.to_str().unwrap(),
            "--policy",
            policies.to_str().unwrap(),
            "--binding",
            binding.to_str().unwrap(),
            "--at",
            "2025-01-03T22:00:00Z",
        ]);
        assert_eq!(stdout_json(&output)["lent"], lent);
        if !lent {
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                stderr.contains("not lent: the binding no longer exists or is being deleted"),
                "{stderr}"
            );
        }
    }
}

#[test]
fn an_invalid_policy_is_not_applied_and_explained_on_stderr() {
    let dir = TempDir::new("invalid");
    let pods = dir.write("pods.yaml", PODS_YAML);
    let policy = dir.write("policy.json", &policy_json(false).replace("20:00", "24:00"));
    let output = explain(&dir, &pods, &policy, "2025-01-03T22:00:00Z");
    assert_eq!(stdout_json(&output)["lent"], false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(r#"policy nights is invalid and not applied: spec.timeWindows[0].start "24:00" is not a time in HH:MM format"#),
        "{stderr}"
    );
}

#[test]
fn bad_input_exits_with_code_2_and_a_clear_message() {
    let dir = TempDir::new("bad");
    let pods = dir.write("pods.yaml", PODS_YAML);
    let policy = dir.write("policy.json", &policy_json(false));
    let broken = dir.write("broken.yaml", "metadata: [unclosed\n");
    let not_a_policy = dir.write("not-a-policy.yaml", NODE_YAML);
    let missing = dir.0.join("missing.yaml");
    // (case, pods file, policy file, --at, text expected on stderr)
    let cases: [(&str, &Path, &Path, &str, &str); 4] = [
        (
            "missing file",
            &missing,
            &policy,
            "2025-01-03T22:00:00Z",
            "missing.yaml",
        ),
        (
            "malformed YAML",
            &broken,
            &policy,
            "2025-01-03T22:00:00Z",
            "is not valid YAML or JSON",
        ),
        (
            "wrong kind",
            &pods,
            &not_a_policy,
            "2025-01-03T22:00:00Z",
            "expected a ResourceLeasingPolicy, found a Node",
        ),
        (
            "bad --at",
            &pods,
            &policy,
            "tomorrow",
            "--at \"tomorrow\" is not an RFC 3339 time",
        ),
    ];
    for (what, pods, policy, at, message) in cases {
        let output = explain(&dir, pods, policy, at);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{what}: exit code; stderr: {stderr}"
        );
        assert!(
            stderr.contains(message),
            "{what}: stderr {stderr:?} should mention {message:?}"
        );
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        assert!(output.stdout.is_empty(), "{what}: nothing on stdout");
    }
    let unknown_flag = kubeocean(&["leasing", "explain", "--nodes", "x"]);
    assert_eq!(unknown_flag.status.code(), Some(2), "unknown flag");
}

#[test]
fn crds_prints_yaml_and_writes_files() {
    let printed = kubeocean(&["crds"]);
    assert!(printed.status.success());
    let yaml = String::from_utf8(printed.stdout).unwrap();
    assert_eq!(yaml.matches("kind: CustomResourceDefinition").count(), 2);
    assert!(yaml.contains("name: clusterbindings.cloud.tencent.com"));
    assert!(yaml.contains("name: resourceleasingpolicies.cloud.tencent.com"));

    let dir = TempDir::new("crds");
    let out = dir.0.join("crds");
    let written = kubeocean(&["crds", "--out", out.to_str().unwrap()]);
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let mut files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "cloud.tencent.com_clusterbindings.yaml",
            "cloud.tencent.com_resourceleasingpolicies.yaml"
        ]
    );
    let joined: String = files
        .iter()
        .map(|f| std::fs::read_to_string(out.join(f)).unwrap())
        .collect();
    assert_eq!(joined, yaml, "the files hold what `crds` prints");
}

#[test]
fn a_bad_workload_template_exits_with_code_2_naming_the_field() {
    let dir = TempDir::new("workload-template");
    for (file, text, message) in [
        (
            "unknown.yaml",
            "syncer:\n  volumes: []\n",
            "unknown field `volumes`",
        ),
        (
            "quantity.yaml",
            "proxier:\n  resources: {limits: {memory: plenty}}\n",
            "proxier.resources.limits.memory",
        ),
    ] {
        let path = dir.write(file, text);
        let output = kubeocean(&[
            "manager",
            &format!("--workload-template={}", path.display()),
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{file}: {stderr}");
        assert!(stderr.contains(message), "{file}: {stderr}");
        assert!(!stderr.contains("panicked"), "{file}: {stderr}");
    }
}
