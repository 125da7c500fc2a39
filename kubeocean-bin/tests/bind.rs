//! `kubeocean bind` and `kubeocean unbind` end to end: the binary against sandbox clusters
//! served over loopback HTTP (workers that enforce RBAC for every token but their admin's),
//! with a manager (embedded, syncers only) running on the computing cluster.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Node, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::ListParams;
use kube::{Api, Client, Resource, ResourceExt};
use kube_kit::admin::Metrics;
use kube_kit::controller::ControllerMetrics;
use kube_sandbox::testing::Sandboxes;
use kube_sandbox::{ClusterOptions, ServeOptions, SimNode};
use kubeocean_core::crd::ClusterBinding;
use kubeocean_core::manager::{EmbeddedRunner, Manager, ManagerConfig, SyncerRuntime, Templates};
use kubeocean_core::syncer::SyncerConfig;
use serde::de::DeserializeOwned;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "kubeocean-bind-{name}-{}-{nanos}",
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

/// Runs the binary off the test's runtime (the sandboxes and the manager keep running).
async fn kubeocean(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_kubeocean"))
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `kind name -> resourceVersion` of everything of `K`.
async fn versions<K>(client: &Client, kind: &str, out: &mut BTreeMap<String, String>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    for o in Api::<K>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
    {
        let name = match o.namespace() {
            Some(ns) => format!("{kind} {ns}/{}", o.name_any()),
            None => format!("{kind} {}", o.name_any()),
        };
        out.insert(name, o.resource_version().unwrap_or_default());
    }
}

/// What a worker holds of the kinds `bind` touches, with versions, and its nodes' labels.
async fn worker_state(client: &Client) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    versions::<Namespace>(client, "Namespace", &mut out).await;
    versions::<ServiceAccount>(client, "ServiceAccount", &mut out).await;
    versions::<Secret>(client, "Secret", &mut out).await;
    versions::<ClusterRole>(client, "ClusterRole", &mut out).await;
    versions::<ClusterRoleBinding>(client, "ClusterRoleBinding", &mut out).await;
    versions::<Role>(client, "Role", &mut out).await;
    versions::<RoleBinding>(client, "RoleBinding", &mut out).await;
    versions::<PriorityClass>(client, "PriorityClass", &mut out).await;
    versions::<CustomResourceDefinition>(client, "CustomResourceDefinition", &mut out).await;
    for node in Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
    {
        out.insert(
            format!("Node {} labels", node.name_any()),
            format!("{:?}", node.labels()),
        );
    }
    out
}

/// Names only: what exists, whatever its version.
fn names(state: &BTreeMap<String, String>) -> Vec<String> {
    state
        .iter()
        .map(|(k, v)| {
            if k.ends_with(" labels") {
                format!("{k} {v}")
            } else {
                k.clone()
            }
        })
        .collect()
}

const POLICY: &str = "apiVersion: cloud.tencent.com/v1beta1
kind: ResourceLeasingPolicy
metadata:
  name: lend-all
spec:
  cluster: BINDING
";

fn bind_args(
    dir: &TempDir,
    computing: &Path,
    worker: &Path,
    i: usize,
    policy: &Path,
) -> Vec<String> {
    let _ = dir;
    vec![
        format!("--kubeconfig={}", computing.display()),
        format!("--worker-kubeconfig={}", worker.display()),
        format!("--binding=worker-{i}"),
        format!("--cluster-id=w{i}"),
        format!("--policy={}", policy.display()),
        "--timeout=60s".to_owned(),
    ]
}

/// Two fresh sandbox workers, each bound with one `kubeocean bind` (the command of
/// docs/kubeocean/bind-worker.md, with a shorter timeout): Ready bindings with Ready virtual
/// nodes; a second run reports everything unchanged and changes no object; `unbind` leaves
/// each worker as it was before (same objects, same node labels), and a second `unbind`
/// finds nothing to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bind_twice_changes_nothing_and_unbind_restores_the_worker() {
    let mut sandboxes = Sandboxes::new();
    let computing = sandboxes.cluster("computing");
    let served_computing = computing.serve(ServeOptions::default()).await.unwrap();
    let c = computing.client();
    kubeocean_core::setup::install_crds(&c).await.unwrap();
    let dir = TempDir::new("two-workers");
    let computing_kubeconfig = dir.write("computing.kubeconfig", &served_computing.kubeconfig_yaml);

    // The manager, embedded, syncers only.
    let token = sandboxes.token().clone();
    let mut base = SyncerConfig::new("unused");
    base.secret_namespace = "kubeocean-system".to_owned();
    base.client_options = base.client_options.with_rate_limit(0.0, 0);
    base.retry_interval = Duration::from_millis(100);
    base.connect_retry_interval = Duration::from_millis(200);
    let runner = Arc::new(EmbeddedRunner::new(
        Arc::new(SyncerRuntime::new(c.clone(), base)),
        token.clone(),
    ));
    let mut config = ManagerConfig::new(Templates::new("kubeocean-system", "unused", "unused"));
    config.client_options = config.client_options.with_rate_limit(0.0, 0);
    config.retry_interval = Duration::from_millis(200);
    config.drain_interval = Duration::from_millis(200);
    tokio::spawn(Manager::embedded(c.clone(), config, runner).run(
        ControllerMetrics::register(&Metrics::new()),
        None,
        token.clone(),
    ));

    let mut workers = Vec::new();
    for i in 1..=2 {
        // A worker runs kube-controller-manager: its token controller fills the token Secret.
        let worker = sandboxes.cluster_with_options(
            &format!("worker-{i}"),
            ClusterOptions {
                workload_controllers: true,
                ..ClusterOptions::default()
            },
        );
        worker.add_node(&SimNode::new("n1", "4", "8Gi")).unwrap();
        let served = worker.serve(ServeOptions::default()).await.unwrap();
        let kubeconfig = dir.write(&format!("worker-{i}.kubeconfig"), &served.kubeconfig_yaml);
        let policy = dir.write(
            &format!("policy-{i}.yaml"),
            &POLICY.replace("BINDING", &format!("worker-{i}")),
        );
        let before = worker_state(&worker.client()).await;
        workers.push((worker, served, kubeconfig, policy, before));
    }

    for (i, (worker, _, kubeconfig, policy, _)) in workers.iter().enumerate() {
        let i = i + 1;
        let args = bind_args(&dir, &computing_kubeconfig, kubeconfig, i, policy);
        let mut full = vec!["bind".to_owned()];
        full.extend(args.clone());
        let first = kubeocean(full.clone()).await;
        assert_eq!(first.status.code(), Some(0), "{}", text(&first));
        let stdout = String::from_utf8_lossy(&first.stdout).into_owned();
        for want in [
            "created   ClusterRole kubeocean-worker",
            "created   ClusterBinding worker-",
            "created   ResourceLeasingPolicy lend-all",
            "ready     ClusterBinding worker-",
        ] {
            assert!(stdout.contains(want), "{want}: {}", text(&first));
        }
        // A Ready virtual node of this worker's node.
        let vnode = format!("vnode-w{i}-n1");
        kube_sandbox::testing::eventually(&format!("{vnode} Ready"), || async {
            let node = Api::<Node>::all(c.clone()).get_opt(&vnode).await.unwrap();
            node.and_then(|n| n.status)
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .into_iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
        .await;

        // The second run: nothing created or updated, no version moved.
        let worker_before = worker_state(&worker.client()).await;
        let binding_before = Api::<ClusterBinding>::all(c.clone())
            .get(&format!("worker-{i}"))
            .await
            .unwrap();
        let again = kubeocean(full).await;
        assert_eq!(again.status.code(), Some(0), "{}", text(&again));
        let again_out = String::from_utf8_lossy(&again.stdout).into_owned();
        assert!(
            !again_out.contains("created") && !again_out.contains("updated"),
            "{}",
            text(&again)
        );
        let binding_after = Api::<ClusterBinding>::all(c.clone())
            .get(&format!("worker-{i}"))
            .await
            .unwrap();
        assert_eq!(
            binding_before.spec, binding_after.spec,
            "the binding's spec is unchanged"
        );
        let worker_after = worker_state(&worker.client()).await;
        for (key, version) in &worker_before {
            // Node labels and Leases move with the syncer; bind's objects must not.
            if key.starts_with("Node ") {
                continue;
            }
            assert_eq!(worker_after.get(key), Some(version), "{key} changed");
        }
    }

    for (i, (worker, _, kubeconfig, policy, before)) in workers.iter().enumerate() {
        let i = i + 1;
        let mut full = vec!["unbind".to_owned()];
        full.extend(bind_args(
            &dir,
            &computing_kubeconfig,
            kubeconfig,
            i,
            policy,
        ));
        let out = kubeocean(full.clone()).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let after = worker_state(&worker.client()).await;
        assert_eq!(names(before), names(&after), "worker-{i} as it was");
        // Unbinding again finds nothing to do.
        let again = kubeocean(full).await;
        assert_eq!(again.status.code(), Some(0), "{}", text(&again));
        let again_out = String::from_utf8_lossy(&again.stdout).into_owned();
        assert!(!again_out.contains("deleted "), "{}", text(&again));
        assert!(
            again_out.contains("absent    ClusterBinding"),
            "{}",
            text(&again)
        );
        assert!(
            Api::<ClusterBinding>::all(c.clone())
                .get_opt(&format!("worker-{i}"))
                .await
                .unwrap()
                .is_none()
        );
    }
}

/// Bad input exits with code 2 and says what is wrong, before any cluster is contacted.
#[test]
fn bad_input_exits_with_code_2() {
    let dir = TempDir::new("bad");
    let kubeconfig = dir.write(
        "worker.kubeconfig",
        "apiVersion: v1\nkind: Config\nclusters: [{name: w, cluster: {server: 'https://127.0.0.1:1'}}]\n\
         users: [{name: u, user: {token: t}}]\ncontexts: [{name: w, context: {cluster: w, user: u}}]\n\
         current-context: w\n",
    );
    let wrong_cluster = dir.write("policy.yaml", &POLICY.replace("BINDING", "someone-else"));
    let not_a_policy = dir.write(
        "node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n",
    );
    let missing = dir.0.join("missing.kubeconfig");
    let worker = format!("--worker-kubeconfig={}", kubeconfig.display());
    for (args, message) in [
        (
            vec![format!("--worker-kubeconfig={}", missing.display())],
            "cannot read --worker-kubeconfig",
        ),
        (
            vec![worker.clone(), "--binding=Bad_Name".to_owned()],
            "binding name \"Bad_Name\"",
        ),
        (
            vec![
                worker.clone(),
                format!("--policy={}", wrong_cluster.display()),
            ],
            "is for cluster \"someone-else\"",
        ),
        (
            vec![
                worker.clone(),
                format!("--policy={}", not_a_policy.display()),
            ],
            "expected a ResourceLeasingPolicy",
        ),
    ] {
        for command in ["bind", "unbind"] {
            let mut full = vec![command.to_owned()];
            full.extend(args.clone());
            let output = std::process::Command::new(env!("CARGO_BIN_EXE_kubeocean"))
                .args(&full)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{full:?}: {stderr}");
            assert!(stderr.contains(message), "{full:?}: {stderr}");
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
    }
}
