//! The Helm charts `deploy/helm/kubeocean` (computing cluster) and
//! `deploy/helm/kubeocean-worker` (worker clusters), checked with the real `helm`:
//! - `helm lint --strict` passes with the default values and with `ci/override-values.yaml`;
//! - `helm template` output parses as YAML, every object has apiVersion, kind and a name, no
//!   object appears twice, and each render holds exactly the expected kinds;
//! - every Deployment argument is a flag `kubeocean <subcommand> --help` lists, the admin
//!   ports in the flags are the container ports the probes use, and the pods run non-root
//!   with a read-only root filesystem;
//! - the charts' `crds/` are byte-for-byte the generated `deploy/crds/kubeocean/` files;
//! - the manager's RBAC holds every right it grants per binding (Kubernetes refuses to let it
//!   create a role with more), and the worker chart grants what the manager checks with
//!   SelfSubjectAccessReviews (the syncer's one list of grants, `deletecollection` for the
//!   cleanup included), plus the proxier's streams, and nothing cluster-wide it should only
//!   have in the mount namespace; it creates the `kubeocean-default` PriorityClass;
//! - the worker chart as `docs/kubeocean/bind-worker.md` installs it, applied to a sandbox
//!   worker, is all a binding needs: Ready, a pod mapped, and its deletion completes.
//!
//! `helm` is looked up on PATH, then in `~/.cache/kubeocean-rs/venv/bin`. Without it the
//! tests print a notice and pass, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where they
//! fail with the install command.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use kube_sandbox::testing::charts::{
    self, Render, allows, chart_dir, container_args, containers, deployment_problems, expand,
    flag_value, helm_or_skip, identity, kind_counts, object_problems, one_of_kind, output_of,
    parse_manifests, rules_of, split_args, workspace_root,
};
use kubeocean_core::crd::{
    DEFAULT_POD_PREEMPTION_POLICY, DEFAULT_POD_PRIORITY_CLASS_NAME, DEFAULT_POD_PRIORITY_VALUE,
};
use kubeocean_core::manager::permissions::required_permissions;
use kubeocean_core::manager::templates::computing_rules;
use serde_json::{Value, json};

const NAMESPACE: &str = "kubeocean-system";
const OVERRIDES: &str = "ci/override-values.yaml";
const EMBEDDED: &str = "ci/embedded-values.yaml";

fn render(helm: &Path, chart: &str, values: Option<&str>) -> Vec<Value> {
    Render {
        chart,
        release: "ko",
        namespace: NAMESPACE,
        values,
    }
    .run(helm)
}

fn values_args(chart: &str, values: Option<&str>) -> Vec<PathBuf> {
    Render {
        chart,
        release: "ko",
        namespace: NAMESPACE,
        values,
    }
    .values_args()
}

/// Flags `kubeocean <subcommand>` accepts, from its `--help`.
fn accepted_flags(subcommand: &str) -> BTreeSet<String> {
    charts::accepted_flags(Path::new(env!("CARGO_BIN_EXE_kubeocean")), subcommand)
}

/// The rendered charts: (chart, values file, expected count per kind).
fn cases() -> Vec<(&'static str, Option<&'static str>, BTreeMap<String, usize>)> {
    let counts = |pairs: &[(&str, usize)]| {
        pairs
            .iter()
            .map(|(k, n)| ((*k).to_owned(), *n))
            .collect::<BTreeMap<_, _>>()
    };
    let manager = [
        ("CustomResourceDefinition", 2),
        ("ServiceAccount", 1),
        ("ClusterRole", 1),
        ("ClusterRoleBinding", 1),
        ("Role", 1),
        ("RoleBinding", 1),
        ("Deployment", 1),
        ("Service", 1),
    ];
    let worker = [
        ("CustomResourceDefinition", 1),
        ("Namespace", 1),
        ("ServiceAccount", 1),
        ("ClusterRole", 1),
        ("ClusterRoleBinding", 1),
        ("Role", 1),
        ("RoleBinding", 1),
        ("PriorityClass", 1),
    ];
    let with = |base: &[(&str, usize)], extra: &[(&str, usize)]| {
        let mut all = counts(base);
        all.extend(counts(extra));
        all
    };
    vec![
        // Deployment mode: the workload template ConfigMap.
        ("kubeocean", None, with(&manager, &[("ConfigMap", 1)])),
        ("kubeocean", Some(EMBEDDED), counts(&manager)),
        (
            "kubeocean",
            Some(OVERRIDES),
            with(&manager, &[("ServiceMonitor", 1), ("ConfigMap", 1)]),
        ),
        ("kubeocean-worker", None, counts(&worker)),
        (
            "kubeocean-worker",
            Some(OVERRIDES),
            with(&worker, &[("Secret", 1), ("ResourceLeasingPolicy", 1)]),
        ),
    ]
}

#[test]
fn charts_lint_cleanly() {
    let Some(helm) = helm_or_skip("charts_lint_cleanly") else {
        return;
    };
    for (chart, values, _) in cases() {
        output_of(
            Command::new(&helm)
                .args(["lint", "--strict", "--namespace", NAMESPACE])
                .arg(chart_dir(chart))
                .args(values_args(chart, values)),
        );
    }
}

#[test]
fn charts_render_well_formed_objects_of_the_expected_kinds() {
    let Some(helm) = helm_or_skip("charts_render_well_formed_objects_of_the_expected_kinds") else {
        return;
    };
    for (chart, values, want) in cases() {
        let docs = render(&helm, chart, values);
        let mut seen = BTreeSet::new();
        for doc in &docs {
            let problems = object_problems(doc);
            assert!(
                problems.is_empty(),
                "{chart} {values:?}: {problems:?} in {doc}"
            );
            assert!(
                seen.insert(identity(doc)),
                "{chart} {values:?}: {} twice",
                identity(doc)
            );
        }
        assert_eq!(kind_counts(&docs), want, "{chart} {values:?}");
    }
}

/// What the manager Deployment must look like for one values file.
struct ManagerCase {
    values: Option<&'static str>,
    replicas: i64,
    leader_elect: &'static str,
    image_prefix: &'static str,
    /// `--syncer-image` prefix and `--syncer-replicas`; `None` in embedded mode.
    syncer: Option<(&'static str, &'static str)>,
    /// `--proxier-node-ports` and `--proxier-port`; `None` in embedded mode.
    kubelet_ports: Option<(&'static str, &'static str)>,
}

#[test]
fn manager_deployment_runs_flags_the_binary_accepts() {
    let Some(helm) = helm_or_skip("manager_deployment_runs_flags_the_binary_accepts") else {
        return;
    };
    let cases = [
        ManagerCase {
            values: None,
            replicas: 2,
            leader_elect: "true",
            image_prefix: "ghcr.io/kubeocean-rs/kubeocean:",
            syncer: Some(("ghcr.io/kubeocean-rs/kubeocean:", "1")),
            kubelet_ports: Some(("20000-29999", "10250")),
        },
        ManagerCase {
            values: Some(OVERRIDES),
            replicas: 3,
            leader_elect: "true",
            image_prefix: "registry.example.com/kubeocean:1.2.3",
            syncer: Some(("registry.example.com/kubeocean-syncer:1.2.3", "2")),
            kubelet_ports: Some(("0", "10350")),
        },
        ManagerCase {
            values: Some(EMBEDDED),
            replicas: 1,
            leader_elect: "false",
            image_prefix: "ghcr.io/kubeocean-rs/kubeocean:",
            syncer: None,
            kubelet_ports: None,
        },
    ];
    let accepted = accepted_flags("manager");
    for case in cases {
        let values = case.values;
        let docs = render(&helm, "kubeocean", values);
        let deployment = one_of_kind(&docs, "Deployment");
        let problems = deployment_problems(deployment);
        assert!(problems.is_empty(), "{values:?}: {problems:?}");
        assert_eq!(deployment["spec"]["replicas"], case.replicas, "{values:?}");
        let container = containers(deployment)[0];
        let args = container_args(container);
        let (subcommand, flags) = split_args(&args).unwrap();
        assert_eq!(subcommand, "manager");
        for flag in &flags {
            assert!(
                accepted.contains(flag),
                "{values:?}: `kubeocean manager` has no --{flag}; it accepts {accepted:?}"
            );
        }
        let flag = |name: &str| flag_value(&args, name);
        assert_eq!(flag("leader-elect"), Some(case.leader_elect), "{values:?}");
        assert_eq!(flag("namespace"), Some(NAMESPACE), "{values:?}");
        let image_used = container["image"].as_str().unwrap();
        assert!(
            image_used.starts_with(case.image_prefix),
            "{values:?}: image {image_used}"
        );
        assert_eq!(
            case.kubelet_ports,
            flag("proxier-node-ports").zip(flag("proxier-port")),
            "{values:?}"
        );
        match case.syncer {
            Some((syncer_image, syncer_replicas)) => {
                assert!(!flags.iter().any(|f| f == "embedded"), "{values:?}");
                let syncer = flag("syncer-image").unwrap();
                assert!(syncer.starts_with(syncer_image), "{values:?}: {syncer}");
                assert_eq!(flag("syncer-replicas"), Some(syncer_replicas), "{values:?}");
                // The proxier image falls back to the manager's own.
                assert_eq!(flag("proxier-image"), Some(image_used), "{values:?}");
            }
            None => {
                assert!(flags.iter().any(|f| f == "embedded"), "{values:?}");
                assert_eq!(flag("syncer-image"), None, "{values:?}");
            }
        }
    }
}

#[test]
fn chart_crds_are_the_generated_ones() {
    let generated = workspace_root().join("deploy/crds/kubeocean");
    let read_dir = |dir: &Path| -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read(&path).unwrap())
            })
            .collect()
    };
    let all = read_dir(&generated);
    assert_eq!(all.len(), 2, "generated CRDs: {:?}", all.keys());
    let policies = "cloud.tencent.com_resourceleasingpolicies.yaml";
    for (chart, want) in [
        ("kubeocean", all.clone()),
        (
            "kubeocean-worker",
            all.iter()
                .filter(|(name, _)| name.as_str() == policies)
                .map(|(n, b)| (n.clone(), b.clone()))
                .collect(),
        ),
    ] {
        let have = read_dir(&chart_dir(chart).join("crds"));
        assert_eq!(
            have.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "{chart}/crds"
        );
        for (name, bytes) in &want {
            assert!(
                have[name] == *bytes,
                "deploy/helm/{chart}/crds/{name} differs from deploy/crds/kubeocean/{name}; \
                 copy it again after regenerating the CRDs"
            );
        }
    }
}

#[test]
fn manager_rbac_holds_what_it_grants_and_what_it_does() {
    let Some(helm) = helm_or_skip("manager_rbac_holds_what_it_grants_and_what_it_does") else {
        return;
    };
    let docs = render(&helm, "kubeocean", None);
    let cluster = rules_of(one_of_kind(&docs, "ClusterRole"));
    let role = one_of_kind(&docs, "Role");
    assert_eq!(role["metadata"]["namespace"], NAMESPACE);
    let local = rules_of(role);
    // Escalation prevention: the per-binding ClusterRole may hold nothing the manager lacks.
    for rule in computing_rules("any-binding") {
        for (group, resource, verb, name) in expand(&rule) {
            assert!(
                allows(&cluster, &group, &resource, &verb, name.as_deref()),
                "the manager's ClusterRole lacks {verb} {resource}.{group}, which it grants \
                 the syncer and proxier of every binding"
            );
        }
    }
    let cluster_wide = [
        ("cloud.tencent.com", "clusterbindings", "watch"),
        ("cloud.tencent.com", "clusterbindings", "patch"),
        ("cloud.tencent.com", "clusterbindings/status", "update"),
        ("cloud.tencent.com", "clusterbindings/finalizers", "update"),
        ("", "secrets", "get"),
        ("rbac.authorization.k8s.io", "clusterroles", "create"),
        ("rbac.authorization.k8s.io", "clusterrolebindings", "delete"),
        ("", "nodes", "list"),
        ("", "events", "create"),
    ];
    for (group, resource, verb) in cluster_wide {
        assert!(
            allows(&cluster, group, resource, verb, None),
            "{verb} {resource}"
        );
    }
    let in_namespace = [
        ("apps", "deployments", "patch"),
        ("apps", "deployments", "watch"),
        ("", "services", "create"),
        ("", "serviceaccounts", "delete"),
        ("", "secrets", "create"),
        ("coordination.k8s.io", "leases", "update"),
    ];
    for (group, resource, verb) in in_namespace {
        assert!(
            allows(&local, group, resource, verb, None)
                || allows(&cluster, group, resource, verb, None),
            "{verb} {resource} in {NAMESPACE}"
        );
    }
    // Writing Secrets and Deployments stays in the manager's namespace.
    assert!(!allows(&cluster, "", "secrets", "create", None));
    assert!(!allows(&cluster, "apps", "deployments", "create", None));
    // Proxier serving certificates: request, read, delete and approve, for the kubelet-serving
    // signer only (kube-apiserver checks `approve` on `signers` named by the request's signer).
    for (resource, verb, name, allowed) in [
        ("certificatesigningrequests", "create", None, true),
        ("certificatesigningrequests", "get", None, true),
        ("certificatesigningrequests", "delete", None, true),
        ("certificatesigningrequests", "update", None, false),
        ("certificatesigningrequests/approval", "update", None, true),
        ("certificatesigningrequests/status", "update", None, false),
        (
            "signers",
            "approve",
            Some("kubernetes.io/kubelet-serving"),
            true,
        ),
        (
            "signers",
            "approve",
            Some("kubernetes.io/kube-apiserver-client"),
            false,
        ),
        ("signers", "approve", Some("kubernetes.io/*"), false),
        (
            "signers",
            "sign",
            Some("kubernetes.io/kubelet-serving"),
            false,
        ),
    ] {
        assert_eq!(
            allows(&cluster, "certificates.k8s.io", resource, verb, name),
            allowed,
            "{verb} {resource} {name:?}"
        );
    }
}

#[test]
fn worker_rbac_grants_what_the_manager_checks_and_no_more_cluster_wide() {
    let Some(helm) =
        helm_or_skip("worker_rbac_grants_what_the_manager_checks_and_no_more_cluster_wide")
    else {
        return;
    };
    for (values, mount) in [
        (None, "kubeocean-worker"),
        (Some(OVERRIDES), "team-a-borrowed"),
    ] {
        let docs = render(&helm, "kubeocean-worker", values);
        assert_eq!(one_of_kind(&docs, "Namespace")["metadata"]["name"], mount);
        let role = one_of_kind(&docs, "Role");
        assert_eq!(role["metadata"]["namespace"], mount, "{values:?}");
        let cluster = rules_of(one_of_kind(&docs, "ClusterRole"));
        let local = rules_of(role);
        let service_account = one_of_kind(&docs, "ServiceAccount");
        for binding in [
            one_of_kind(&docs, "RoleBinding"),
            one_of_kind(&docs, "ClusterRoleBinding"),
        ] {
            let subject = &binding["subjects"][0];
            assert_eq!(subject["name"], service_account["metadata"]["name"]);
            assert_eq!(
                subject["namespace"],
                service_account["metadata"]["namespace"]
            );
        }
        for permission in required_permissions(mount) {
            let granted = allows(
                &cluster,
                permission.group,
                permission.resource,
                permission.verb,
                None,
            ) || (permission.namespace.as_deref() == Some(mount)
                && allows(
                    &local,
                    permission.group,
                    permission.resource,
                    permission.verb,
                    None,
                ));
            assert!(
                granted,
                "{values:?}: the worker chart does not grant {permission}"
            );
        }
        for (resource, verb) in [
            ("pods/log", "get"),
            ("pods/exec", "create"),
            ("pods/exec", "get"),
            ("pods/attach", "create"),
            ("pods/portforward", "create"),
        ] {
            assert!(
                allows(&local, "", resource, verb, None),
                "{verb} {resource}"
            );
        }
        assert!(allows(&cluster, "", "nodes/proxy", "get", None));
        // Drained bindings leave no PersistentVolume copies behind.
        assert!(allows(&cluster, "", "persistentvolumes", "delete", None));
        assert!(allows(
            &cluster,
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "create",
            None
        ));
        for (resource, verb) in [
            ("pods", "create"),
            ("pods", "delete"),
            ("secrets", "get"),
            ("configmaps", "list"),
            ("pods/exec", "create"),
            ("persistentvolumeclaims", "create"),
        ] {
            assert!(
                !allows(&cluster, "", resource, verb, None),
                "{values:?}: {verb} {resource} must not be granted cluster-wide"
            );
        }
    }
    // The PriorityClass physical pods get by default, as the sandbox creates it too.
    for values in [None, Some(OVERRIDES)] {
        let docs = render(&helm, "kubeocean-worker", values);
        let class = one_of_kind(&docs, "PriorityClass");
        assert_eq!(class["apiVersion"], "scheduling.k8s.io/v1");
        assert_eq!(class["metadata"]["name"], DEFAULT_POD_PRIORITY_CLASS_NAME);
        assert_eq!(class["value"], DEFAULT_POD_PRIORITY_VALUE);
        assert_eq!(class["preemptionPolicy"], DEFAULT_POD_PREEMPTION_POLICY);
        assert_eq!(class["globalDefault"], false);
    }
    let docs = render(&helm, "kubeocean-worker", Some(OVERRIDES));
    let secret = one_of_kind(&docs, "Secret");
    assert_eq!(secret["type"], "kubernetes.io/service-account-token");
    assert_eq!(
        secret["metadata"]["annotations"]["kubernetes.io/service-account.name"],
        "kubeocean-computing"
    );
    let policy = one_of_kind(&docs, "ResourceLeasingPolicy");
    assert_eq!(policy["spec"]["cluster"], "worker-1");
    assert_eq!(policy["spec"]["resourceLimits"][1]["quantity"], "16Gi");
}

/// Polls `check` every 50 ms for up to 60 s; panics naming `what` if it never holds.
async fn eventually<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    kube_sandbox::testing::eventually_every(
        what,
        std::time::Duration::from_secs(60),
        std::time::Duration::from_millis(50),
        check,
    )
    .await;
}

/// Creates `doc` (one rendered object) in the sandbox `client` talks to, by its kind.
async fn create_rendered(client: &kube::Client, doc: &Value) {
    use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    use k8s_openapi::api::scheduling::v1::PriorityClass;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::Api;
    use kube::api::PostParams;

    async fn create<K>(api: Api<K>, doc: &Value)
    where
        K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize,
        K: serde::de::DeserializeOwned,
    {
        let object: K = serde_json::from_value(doc.clone()).unwrap();
        api.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("creating {}: {e}", identity(doc)));
    }
    let c = client.clone();
    let ns = doc["metadata"]["namespace"].as_str().unwrap_or_default();
    match doc["kind"].as_str().unwrap_or_default() {
        "CustomResourceDefinition" => create(Api::<CustomResourceDefinition>::all(c), doc).await,
        "Namespace" => create(Api::<Namespace>::all(c), doc).await,
        "ServiceAccount" => create(Api::<ServiceAccount>::namespaced(c, ns), doc).await,
        "Secret" => create(Api::<Secret>::namespaced(c, ns), doc).await,
        "ClusterRole" => create(Api::<ClusterRole>::all(c), doc).await,
        "ClusterRoleBinding" => create(Api::<ClusterRoleBinding>::all(c), doc).await,
        "Role" => create(Api::<Role>::namespaced(c, ns), doc).await,
        "RoleBinding" => create(Api::<RoleBinding>::namespaced(c, ns), doc).await,
        "PriorityClass" => create(Api::<PriorityClass>::all(c), doc).await,
        other => panic!("the worker chart renders a {other} this test does not apply"),
    }
}

/// The worker chart as docs/kubeocean/bind-worker.md installs it, applied to a sandbox worker
/// (which enforces RBAC for every token but its admin's); the manager (embedded, syncer only)
/// reaches the worker with a token of the chart's ServiceAccount. The binding becomes Ready
/// (the chart's PriorityClass included), a pod is mapped, a Service of a `serviceNamespaces`
/// namespace is reflected with its EndpointSlice (accepted by a worker that validates labels
/// as kube-apiserver does), and deleting the binding with an object left in the mount
/// namespace completes: the syncer removes what it labelled, the reflected slice included
/// (`deletecollection`), with the chart's rights alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_deletion_completes_with_the_worker_charts_rbac_as_rendered() {
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, Service, ServiceAccount};
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    use k8s_openapi::api::scheduling::v1::PriorityClass;
    use kube::api::{DeleteParams, ListParams, PostParams};
    use kube::api::{Patch, PatchParams};
    use kube::{Api, ResourceExt};
    use kube_kit::admin::Metrics;
    use kube_kit::controller::ControllerMetrics;
    use kube_sandbox::{Cluster, ServeOptions, SimNode};
    use kubeocean_core::crd::{ClusterBinding, ClusterBindingPhase, ResourceLeasingPolicy};
    use kubeocean_core::manager::{
        EmbeddedRunner, Manager, ManagerConfig, SyncerRuntime, Templates,
    };
    use kubeocean_core::setup::{WorkerRegistration, install_crds, register_worker};
    use kubeocean_core::syncer::SyncerConfig;
    use tokio_util::sync::CancellationToken;

    let Some(helm) =
        helm_or_skip("binding_deletion_completes_with_the_worker_charts_rbac_as_rendered")
    else {
        return;
    };
    // `helm install kubeocean-worker ... --namespace kubeocean-system` of bind-worker.md.
    let text = output_of(
        Command::new(&helm)
            .args(["template", "kubeocean-worker"])
            .arg(chart_dir("kubeocean-worker"))
            .args(["--namespace", NAMESPACE, "--include-crds"])
            .args(["--set", "mountNamespace.name=kubeocean-worker"])
            .args(["--set", "tokenSecret.create=true"]),
    );
    let docs = parse_manifests(&text).unwrap();
    let mount = "kubeocean-worker";
    let service_account = one_of_kind(&docs, "ServiceAccount")["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    // The names bind-worker.md uses.
    assert_eq!(service_account, "kubeocean-worker");
    assert_eq!(
        one_of_kind(&docs, "Secret")["metadata"]["name"],
        "kubeocean-worker-token"
    );

    let worker = Cluster::new("worker");
    let served = worker.serve(ServeOptions::default()).await.unwrap();
    let w = worker.client();
    Api::<Namespace>::all(w.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).unwrap(),
        )
        .await
        .unwrap();
    for doc in &docs {
        create_rendered(&w, doc).await;
    }
    worker.add_node(&SimNode::new("n1", "4", "8Gi")).unwrap();
    let policy: ResourceLeasingPolicy = serde_json::from_value(json!({
        "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
        "metadata": {"name": "lend"}, "spec": {"cluster": "worker-1"},
    }))
    .unwrap();
    Api::<ResourceLeasingPolicy>::all(w.clone())
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();
    let token = Api::<ServiceAccount>::namespaced(w.clone(), NAMESPACE)
        .create_token_request(
            &service_account,
            &PostParams::default(),
            &TokenRequest {
                spec: TokenRequestSpec {
                    audiences: Vec::new(),
                    expiration_seconds: Some(3600),
                    ..TokenRequestSpec::default()
                },
                ..TokenRequest::default()
            },
        )
        .await
        .unwrap()
        .status
        .unwrap()
        .token;
    let kubeconfig = kube_sandbox::serve::kubeconfig_yaml("worker", &served.url, None, &token);

    let computing = Cluster::new("computing");
    let c = computing.client();
    install_crds(&c).await.unwrap();
    Api::<Namespace>::all(c.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).unwrap(),
        )
        .await
        .unwrap();
    register_worker(
        &c,
        &WorkerRegistration {
            binding: "worker-1",
            cluster_id: "w1",
            secret_namespace: NAMESPACE,
            mount_namespace: mount,
            kubeconfig: &kubeconfig,
        },
    )
    .await
    .unwrap();
    // A Service of `shop`, reflected into the mount namespace with its EndpointSlice.
    Api::<ClusterBinding>::all(c.clone())
        .patch(
            "worker-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"serviceNamespaces": ["shop"]}})),
        )
        .await
        .unwrap();
    Api::<Namespace>::all(c.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "shop"}})).unwrap(),
        )
        .await
        .unwrap();
    Api::<Service>::namespaced(c.clone(), "shop")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "db"},
                "spec": {"ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}]}}))
            .unwrap(),
        )
        .await
        .unwrap();
    Api::<EndpointSlice>::namespaced(c.clone(), "shop")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "db-abcde", "labels": {
                    "kubernetes.io/service-name": "db",
                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.244.1.1"], "conditions": {"ready": true}}],
                "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}],
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let shutdown = CancellationToken::new();
    let _stop = shutdown.clone().drop_guard();
    let mut base = SyncerConfig::new("unused");
    base.secret_namespace = NAMESPACE.to_owned();
    base.client_options = base.client_options.with_rate_limit(0.0, 0);
    base.retry_interval = std::time::Duration::from_millis(100);
    base.connect_retry_interval = std::time::Duration::from_millis(200);
    let runner = std::sync::Arc::new(EmbeddedRunner::new(
        std::sync::Arc::new(SyncerRuntime::new(c.clone(), base)),
        shutdown.clone(),
    ));
    let mut config = ManagerConfig::new(Templates::new(NAMESPACE, "unused", "unused"));
    config.client_options = config.client_options.with_rate_limit(0.0, 0);
    config.retry_interval = std::time::Duration::from_millis(200);
    config.drain_interval = std::time::Duration::from_millis(200);
    let manager = Manager::embedded(c.clone(), config, runner.clone());
    tokio::spawn(manager.run(
        ControllerMetrics::register(&Metrics::new()),
        None,
        shutdown.clone(),
    ));

    let bindings: Api<ClusterBinding> = Api::all(c.clone());
    let phase = |b: &ClusterBinding| b.status.as_ref().and_then(|s| s.phase);
    eventually("the binding Ready", || async {
        bindings
            .get_opt("worker-1")
            .await
            .unwrap()
            .is_some_and(|b| phase(&b) == Some(ClusterBindingPhase::Ready))
    })
    .await;
    // The chart's PriorityClass is what physical pods get.
    assert!(
        Api::<PriorityClass>::all(w.clone())
            .get_opt(kubeocean_core::crd::DEFAULT_POD_PRIORITY_CLASS_NAME)
            .await
            .unwrap()
            .is_some()
    );
    eventually("the virtual node", || async {
        Api::<Node>::all(c.clone())
            .get_opt("vnode-w1-n1")
            .await
            .unwrap()
            .is_some()
    })
    .await;
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"nodeName": "vnode-w1-n1",
                 "tolerations": [{"key": "kubeocean.io/vnode", "operator": "Exists"}],
                 "containers": [{"name": "app", "image": "nginx"}]},
    }))
    .unwrap();
    Api::<Pod>::namespaced(c.clone(), "default")
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
    let managed = ListParams::default().labels("kubeocean.io/managed-by=kubeocean");
    let physical: Api<Pod> = Api::namespaced(w.clone(), mount);
    eventually("the physical pod", || async {
        physical.list(&managed).await.unwrap().items.len() == 1
    })
    .await;
    let mapped = physical.list(&managed).await.unwrap().items.remove(0);
    assert_eq!(
        mapped.spec.unwrap().priority_class_name.as_deref(),
        Some(kubeocean_core::crd::DEFAULT_POD_PRIORITY_CLASS_NAME)
    );
    let worker_slices: Api<EndpointSlice> = Api::namespaced(w.clone(), mount);
    eventually("the reflected EndpointSlice", || async {
        worker_slices.list(&managed).await.unwrap().items.len() == 1
    })
    .await;
    // Left behind in the mount namespace (as after a syncer crash): the cleanup removes it
    // with deletecollection.
    let leftover: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "leftover", "namespace": mount,
                     "labels": {"kubeocean.io/managed-by": "kubeocean"}},
    }))
    .unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(w.clone(), mount);
    config_maps
        .create(&PostParams::default(), &leftover)
        .await
        .unwrap();

    bindings
        .delete("worker-1", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the binding deleted", || async {
        bindings.get_opt("worker-1").await.unwrap().is_none()
    })
    .await;
    assert_eq!(
        kubeocean_core::syncer::topdown::remaining_physical_objects(&w, mount)
            .await
            .unwrap(),
        0
    );
    assert!(config_maps.get_opt("leftover").await.unwrap().is_none());
    assert!(worker_slices.list(&managed).await.unwrap().items.is_empty());
    eventually("the binding's syncer stopped", || async {
        runner.names().is_empty()
    })
    .await;
    let names: Vec<String> = physical
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert!(names.is_empty(), "{names:?}");
    served.stop();
    worker.shutdown();
    computing.shutdown();
}

/// `ci/override-values.yaml` sets imagePullSecrets, resources, tolerations, affinity, a
/// priority class and pod labels for the per-binding workloads. The chart renders them into
/// the ConfigMap its manager Deployment mounts and names in `--workload-template`; a manager
/// in Deployment mode, given that file's text, creates syncer and proxier Deployments that
/// carry them on sandbox clusters. A setting the chart does not take fails the render.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_values_reach_the_syncer_and_proxier_deployments() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Namespace;
    use kube::Api;
    use kube::api::PostParams;
    use kube_kit::admin::Metrics;
    use kube_kit::controller::ControllerMetrics;
    use kube_sandbox::{Cluster, ServeOptions};
    use kubeocean_core::manager::{
        Manager, ManagerConfig, Templates, parse_workload_template, workload_names,
    };
    use kubeocean_core::setup::{WorkerRegistration, install_crds, register_worker};
    use tokio_util::sync::CancellationToken;

    let Some(helm) = helm_or_skip("workload_values_reach_the_syncer_and_proxier_deployments")
    else {
        return;
    };
    let docs = render(&helm, "kubeocean", Some(OVERRIDES));
    let manager = one_of_kind(&docs, "Deployment");
    let args = container_args(containers(manager)[0]);
    let file = flag_value(&args, "workload-template").expect("--workload-template");
    let (dir, key) = file.rsplit_once('/').unwrap();
    let mount = containers(manager)[0]["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mountPath"] == dir)
        .unwrap_or_else(|| panic!("{dir} is not mounted"));
    let volume = manager["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap();
    let config_map = docs
        .iter()
        .find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == volume["configMap"]["name"])
        .expect("the mounted ConfigMap is rendered");
    let text = config_map["data"][key].as_str().unwrap();
    let (syncer_pod, proxier_pod) = parse_workload_template(text).unwrap();

    let worker = Cluster::new("worker");
    let served = worker.serve(ServeOptions::default()).await.unwrap();
    let w = worker.client();
    install_crds(&w).await.unwrap();
    let computing = Cluster::new("computing");
    let c = computing.client();
    install_crds(&c).await.unwrap();
    for (client, ns) in [(&c, NAMESPACE), (&w, "kubeocean-worker")] {
        Api::<Namespace>::all(client.clone())
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
            )
            .await
            .unwrap();
    }
    register_worker(
        &c,
        &WorkerRegistration {
            binding: "worker-1",
            cluster_id: "w1",
            secret_namespace: NAMESPACE,
            mount_namespace: "kubeocean-worker",
            kubeconfig: &served.kubeconfig_yaml,
        },
    )
    .await
    .unwrap();
    // Physical pods' PriorityClass, which the worker chart installs; the manager checks it.
    Api::<k8s_openapi::api::scheduling::v1::PriorityClass>::all(w.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": DEFAULT_POD_PRIORITY_CLASS_NAME}, "value": 0}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let mut templates = Templates::new(NAMESPACE, "kubeocean:1", "kubeocean:1");
    templates.syncer.pod = syncer_pod;
    templates.proxier.pod = proxier_pod;
    let mut config = ManagerConfig::new(templates);
    config.client_options = config.client_options.with_rate_limit(0.0, 0);
    config.retry_interval = std::time::Duration::from_millis(200);
    let shutdown = CancellationToken::new();
    let _stop = shutdown.clone().drop_guard();
    tokio::spawn(Manager::new(c.clone(), config).run(
        ControllerMetrics::register(&Metrics::new()),
        None,
        shutdown.clone(),
    ));

    let names = workload_names("worker-1", NAMESPACE);
    let deployments: Api<Deployment> = Api::namespaced(c.clone(), NAMESPACE);
    let mut stored = Vec::new();
    for name in [&names.syncer, &names.proxier] {
        eventually(&format!("Deployment {name}"), || async {
            deployments.get_opt(name).await.unwrap().is_some()
        })
        .await;
        stored.push(serde_json::to_value(deployments.get(name).await.unwrap()).unwrap());
    }
    let pod = |d: &Value| d["spec"]["template"]["spec"].clone();
    let (syncer, proxier) = (pod(&stored[0]), pod(&stored[1]));
    for (what, pod) in [("syncer", &syncer), ("proxier", &proxier)] {
        // The chart's top-level imagePullSecrets and global tolerations reach both.
        assert_eq!(
            pod["imagePullSecrets"],
            json!([{"name": "regcred"}]),
            "{what}"
        );
        assert_eq!(
            pod["tolerations"],
            json!([{"key": "dedicated", "operator": "Equal", "value": "kubeocean", "effect": "NoSchedule"}]),
            "{what}"
        );
        // The manager's defaults stay where nothing replaces them.
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{what}");
        assert_eq!(
            pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"], true,
            "{what}"
        );
    }
    assert_eq!(
        syncer["containers"][0]["resources"],
        json!({"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}})
    );
    assert_eq!(syncer["priorityClassName"], "system-cluster-critical");
    assert!(syncer["affinity"].is_null(), "{syncer}");
    assert_eq!(
        proxier["containers"][0]["resources"],
        json!({"requests": {"cpu": "200m", "memory": "256Mi"}})
    );
    assert_eq!(
        proxier["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            [0]["matchExpressions"][0]["key"],
        "node-role.example.com/infra"
    );
    assert_eq!(
        stored[1]["spec"]["template"]["metadata"]["labels"]["example.com/team"],
        "platform"
    );
    assert!(proxier["priorityClassName"].is_null(), "{proxier}");

    // An upstream value this chart does not take fails the render, naming it.
    let refused = Command::new(&helm)
        .args(["template", "ko"])
        .arg(chart_dir("kubeocean"))
        .args(["--set", "syncer.volumes[0].name=extra"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("syncer.volumes is not a workload setting"),
        "{stderr}"
    );
}

/// `kubeocean bind` installs the worker chart's templates as rendered
/// (`kubeocean_core::bind::WORKER_CHART_MANIFEST`): the embedded copy is what `helm template`
/// renders today, so a change of the chart reaches `bind` (regenerate with the command in the
/// file's header).
#[test]
fn bind_installs_what_the_worker_chart_renders() {
    let Some(helm) = helm_or_skip("bind_installs_what_the_worker_chart_renders") else {
        return;
    };
    let rendered = output_of(
        Command::new(&helm)
            .args(["template", "kubeocean-worker"])
            .arg(chart_dir("kubeocean-worker"))
            .args(["--namespace", NAMESPACE])
            .args(["--set", "tokenSecret.create=true"]),
    );
    let embedded: String = kubeocean_core::bind::WORKER_CHART_MANIFEST
        .lines()
        .skip_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        embedded, rendered,
        "kubeocean-core/src/bind/worker-chart.yaml is not what the worker chart renders"
    );
}
