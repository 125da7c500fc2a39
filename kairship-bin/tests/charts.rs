//! The Helm chart `deploy/helm/kairship`, checked with the real `helm`:
//! - `helm lint --strict` passes with the default values and with `ci/override-values.yaml`;
//! - `helm template` output parses as YAML, every object has apiVersion, kind and a name, no
//!   object appears twice, and each render holds exactly the expected kinds;
//! - every Deployment argument is a flag `kairship <subcommand> --help` lists, the ports in
//!   the flags are the container ports the probes and Services use, every file a flag names
//!   is on a mounted volume, and the pods run non-root with a read-only root filesystem;
//! - the chart's `crds/` is byte-for-byte the generated `deploy/crds/kairship/` file;
//! - the controller-manager's RBAC holds every right of the per-instance roles it creates and
//!   binds (Kubernetes refuses anything more), and the API server may review tokens and
//!   access.
//!
//! `helm` is looked up on PATH, then in `~/.cache/kubeocean-rs/venv/bin`. Without it the
//! tests print a notice and pass, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where they
//! fail with the install command.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use kairship_core::rbac::{InstanceRole, instance_cluster_role};
use kube_sandbox::testing::charts::{
    self, Render, allows, container_args, container_port, containers, deployment_problems, expand,
    flag_value, helm_or_skip, identity, kind_counts, named, object_problems, output_of,
    port_of_address, rules_of, split_args, workspace_root,
};
use serde_json::Value;

const CHART: &str = "kairship";
const NAMESPACE: &str = "kairship-system";
const OVERRIDES: &str = "ci/override-values.yaml";

fn rendering(values: Option<&str>) -> Render<'_> {
    Render {
        chart: CHART,
        release: "ks",
        namespace: NAMESPACE,
        values,
    }
}

fn render(helm: &Path, values: Option<&str>) -> Vec<Value> {
    rendering(values).run(helm)
}

fn values_args(values: Option<&str>) -> Vec<PathBuf> {
    rendering(values).values_args()
}

fn chart_dir() -> PathBuf {
    charts::chart_dir(CHART)
}

/// Flags `kairship <subcommand>` accepts, from its `--help`.
fn accepted_flags(subcommand: &str) -> BTreeSet<String> {
    charts::accepted_flags(Path::new(env!("CARGO_BIN_EXE_kairship")), subcommand)
}

/// The renders: (values file, expected count per kind).
fn cases() -> Vec<(Option<&'static str>, BTreeMap<String, usize>)> {
    let counts = |pairs: &[(&str, usize)]| {
        pairs
            .iter()
            .map(|(k, n)| ((*k).to_owned(), *n))
            .collect::<BTreeMap<_, _>>()
    };
    vec![
        (
            None,
            counts(&[
                // Instances and AuditRecords.
                ("CustomResourceDefinition", 2),
                ("ServiceAccount", 2),
                ("ClusterRole", 2),
                ("ClusterRoleBinding", 2),
                // The leader lease, the console's sessions and the audit trail.
                ("Role", 3),
                ("RoleBinding", 3),
                ("Deployment", 2),
                // The API server and the metrics.
                ("Service", 2),
            ]),
        ),
        (
            Some(OVERRIDES),
            counts(&[
                ("CustomResourceDefinition", 2),
                ("ServiceAccount", 2),
                ("ClusterRole", 2),
                ("ClusterRoleBinding", 2),
                // Plus the PediaClusters' Secrets in Clusterpedia's namespace.
                ("Role", 4),
                ("RoleBinding", 4),
                ("Deployment", 2),
                // Plus the role-binding webhook.
                ("Service", 3),
                ("ServiceMonitor", 1),
            ]),
        ),
    ]
}

#[test]
fn chart_lints_cleanly() {
    let Some(helm) = helm_or_skip("chart_lints_cleanly") else {
        return;
    };
    for (values, _) in cases() {
        output_of(
            Command::new(&helm)
                .args(["lint", "--strict", "--namespace", NAMESPACE])
                .arg(chart_dir())
                .args(values_args(values)),
        );
    }
}

#[test]
fn chart_renders_well_formed_objects_of_the_expected_kinds() {
    let Some(helm) = helm_or_skip("chart_renders_well_formed_objects_of_the_expected_kinds") else {
        return;
    };
    for (values, want) in cases() {
        let docs = render(&helm, values);
        let mut seen = BTreeSet::new();
        for doc in &docs {
            let problems = object_problems(doc);
            assert!(problems.is_empty(), "{values:?}: {problems:?} in {doc}");
            assert!(
                seen.insert(identity(doc)),
                "{values:?}: {} twice",
                identity(doc)
            );
        }
        assert_eq!(kind_counts(&docs), want, "{values:?}");
    }
}

#[test]
fn deployments_run_flags_the_binary_accepts() {
    let Some(helm) = helm_or_skip("deployments_run_flags_the_binary_accepts") else {
        return;
    };
    let mut help_of: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (values, image, backend) in [
        (None, "ghcr.io/kubeocean-rs/kairship:", "embedded"),
        (
            Some(OVERRIDES),
            "registry.example.com/kairship:1.2.3",
            "clusterpedia",
        ),
    ] {
        let docs = render(&helm, values);
        let mut subcommands = BTreeSet::new();
        for deployment in docs.iter().filter(|d| d["kind"] == "Deployment") {
            let problems = deployment_problems(deployment);
            assert!(problems.is_empty(), "{values:?}: {problems:?}");
            for container in containers(deployment) {
                let image_used = container["image"].as_str().unwrap();
                assert!(image_used.starts_with(image), "{values:?}: {image_used}");
                let args = container_args(container);
                let (subcommand, flags) = split_args(&args).unwrap();
                let accepted = help_of
                    .entry(subcommand.clone())
                    .or_insert_with(|| accepted_flags(&subcommand));
                for flag in &flags {
                    assert!(
                        accepted.contains(flag),
                        "{values:?}: `kairship {subcommand}` has no --{flag}; it accepts {accepted:?}"
                    );
                }
                assert_eq!(flag_value(&args, "read-backend"), Some(backend));
                subcommands.insert(subcommand);
            }
        }
        let want: BTreeSet<String> = ["apiserver", "controller-manager"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        assert_eq!(subcommands, want, "{values:?}");
        let manager = named(&docs, "Deployment", "ks-kairship-controller-manager");
        let manager_args = container_args(containers(manager)[0]);
        assert_eq!(flag_value(&manager_args, "leader-elect"), Some("true"));
        assert_eq!(
            manager["spec"]["replicas"],
            if values.is_some() { 3 } else { 2 }
        );
    }
}

#[test]
fn apiserver_serves_one_port_behind_its_service() {
    let Some(helm) = helm_or_skip("apiserver_serves_one_port_behind_its_service") else {
        return;
    };
    for (values, tls_flag, scheme) in [
        (None, "--tls-generate-dev", "https"),
        (
            Some(OVERRIDES),
            "--tls-cert-file=/etc/kairship/tls/tls.crt",
            "https",
        ),
    ] {
        let docs = render(&helm, values);
        let deployment = named(&docs, "Deployment", "ks-kairship-apiserver");
        let container = containers(deployment)[0];
        let args = container_args(container);
        assert!(args.iter().any(|a| a == tls_flag), "{values:?}: {args:?}");
        // The binary does not fall back to the pod's service account by itself.
        assert!(
            args.iter().any(|a| a == "--in-cluster"),
            "{values:?}: {args:?}"
        );
        let listen = flag_value(&args, "listen").and_then(port_of_address);
        assert_eq!(listen, container_port(container, "api"), "{values:?}");
        let service = named(&docs, "Service", "ks-kairship-apiserver");
        let ports = service["spec"]["ports"].as_array().unwrap();
        assert_eq!(ports.len(), 1, "REST, gRPC and the proxy share one port");
        assert_eq!(ports[0]["targetPort"], "api");
        assert_eq!(ports[0]["name"], scheme);
        assert_eq!(
            service["spec"]["selector"],
            deployment["spec"]["selector"]["matchLabels"]
        );
    }
}

#[test]
fn chart_crds_are_the_generated_ones() {
    let file = "kairship-crds.yaml";
    let generated =
        std::fs::read(workspace_root().join("deploy/crds/kairship").join(file)).unwrap();
    let names: Vec<String> = std::fs::read_dir(chart_dir().join("crds"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec![file.to_owned()]);
    let copy = std::fs::read(chart_dir().join("crds").join(file)).unwrap();
    assert!(
        copy == generated,
        "deploy/helm/kairship/crds/{file} differs from deploy/crds/kairship/{file}; \
         copy it again after regenerating the CRDs"
    );
}

#[test]
fn controller_manager_rbac_holds_what_it_grants_and_what_it_does() {
    let Some(helm) = helm_or_skip("controller_manager_rbac_holds_what_it_grants_and_what_it_does")
    else {
        return;
    };
    for values in [None, Some(OVERRIDES)] {
        let docs = render(&helm, values);
        let cluster = rules_of(named(
            &docs,
            "ClusterRole",
            "ks-kairship-controller-manager",
        ));
        // Escalation prevention: the instance roles (and the webhook's bindings to them) may
        // hold nothing the controller-manager lacks.
        for role in InstanceRole::ALL {
            for rule in instance_cluster_role("prod", role).rules.unwrap() {
                for (group, resource, verb, name) in expand(&rule) {
                    assert!(
                        allows(&cluster, &group, &resource, &verb, name.as_deref()),
                        "the controller-manager lacks {verb} {resource}.{group}, which role {} grants",
                        role.as_str()
                    );
                }
            }
        }
        for (group, resource, verb) in [
            ("kairship.io", "instances", "watch"),
            ("kairship.io", "instances", "patch"),
            ("kairship.io", "instances/status", "update"),
            ("kairship.io", "instances/finalizers", "update"),
            ("rbac.authorization.k8s.io", "clusterroles", "patch"),
            (
                "rbac.authorization.k8s.io",
                "clusterroles",
                "deletecollection",
            ),
            ("rbac.authorization.k8s.io", "clusterrolebindings", "patch"),
            (
                "rbac.authorization.k8s.io",
                "clusterrolebindings",
                "deletecollection",
            ),
            // Deleting an instance deletes every binding to its roles.
            ("rbac.authorization.k8s.io", "clusterrolebindings", "list"),
            ("rbac.authorization.k8s.io", "clusterrolebindings", "delete"),
            ("rbac.authorization.k8s.io", "rolebindings", "list"),
            ("rbac.authorization.k8s.io", "rolebindings", "delete"),
            ("", "secrets", "get"),
            // An adopted instance's Karmada release, from its component Deployments.
            ("apps", "deployments", "list"),
            ("operator.karmada.io", "karmadas", "create"),
            ("operator.karmada.io", "karmadas", "delete"),
            ("", "events", "create"),
        ] {
            assert!(
                allows(&cluster, group, resource, verb, None),
                "{verb} {resource}"
            );
        }
        let lease_role = named(&docs, "Role", "ks-kairship-controller-manager");
        assert_eq!(lease_role["metadata"]["namespace"], NAMESPACE);
        assert!(allows(
            &rules_of(lease_role),
            "coordination.k8s.io",
            "leases",
            "update",
            None
        ));
        // Secrets are only read cluster-wide; writes stay in Clusterpedia's namespace.
        assert!(!allows(&cluster, "", "secrets", "patch", None));
        let pedia = allows(
            &cluster,
            "cluster.clusterpedia.io",
            "pediaclusters",
            "patch",
            None,
        );
        assert_eq!(
            pedia,
            values.is_some(),
            "{values:?}: PediaClusters only with clusterpedia"
        );
        if values.is_some() {
            let role = named(&docs, "Role", "ks-kairship-pedia-secrets");
            assert_eq!(role["metadata"]["namespace"], "clusterpedia-system");
            assert!(allows(&rules_of(role), "", "secrets", "patch", None));
        }

        let api = rules_of(named(&docs, "ClusterRole", "ks-kairship-apiserver"));
        for (group, resource, verb) in [
            ("authentication.k8s.io", "tokenreviews", "create"),
            ("authorization.k8s.io", "subjectaccessreviews", "create"),
            ("kairship.io", "instances", "list"),
            ("kairship.io", "instances", "create"),
            ("kairship.io", "instances", "delete"),
            ("", "secrets", "get"),
        ] {
            assert!(
                allows(&api, group, resource, verb, None),
                "apiserver: {verb} {resource}"
            );
        }
        assert_eq!(
            allows(
                &api,
                "cluster.clusterpedia.io",
                "pediaclusters",
                "get",
                None
            ),
            values.is_some(),
            "{values:?}: the Clusterpedia backend checks its PediaCluster"
        );
        assert!(!allows(&api, "", "secrets", "list", None));
        // The console's session keys and sign-outs, by name, in the release namespace.
        let sessions = named(&docs, "Role", "ks-kairship-apiserver-console-sessions");
        let sessions = rules_of(sessions);
        for (resource, name) in [
            ("secrets", "kairship-console-session"),
            ("configmaps", "kairship-console-revocations"),
        ] {
            assert!(
                allows(&sessions, "", resource, "create", None),
                "{resource}"
            );
            for verb in ["get", "update"] {
                assert!(
                    allows(&sessions, "", resource, verb, Some(name)),
                    "{verb} {name}"
                );
            }
            assert!(
                !allows(&sessions, "", resource, "get", Some("other")),
                "{resource}"
            );
        }
        assert!(!allows(
            &api,
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            "create",
            None
        ));
        // The audit trail: its records in the release namespace, nothing more.
        let audit = named(&docs, "Role", "ks-kairship-apiserver-audit");
        assert_eq!(audit["metadata"]["namespace"], NAMESPACE);
        let audit = rules_of(audit);
        for verb in ["create", "list", "delete"] {
            assert!(
                allows(&audit, "kairship.io", "auditrecords", verb, None),
                "{verb} auditrecords"
            );
        }
        for verb in ["update", "patch", "watch"] {
            assert!(
                !allows(&audit, "kairship.io", "auditrecords", verb, None),
                "{verb} auditrecords"
            );
        }
        assert!(!allows(&api, "kairship.io", "auditrecords", "list", None));
    }
}
