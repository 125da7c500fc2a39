//! Discovery documents shaped exactly as kube-apiserver serves them.

use crate::apiserver::resources::ResourceType;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// `/version`, as kube-apiserver answers it: the binary's version, then the emulation and
/// minimum compatibility versions of its compatibility-versions support (kubernetes
/// `staging/src/k8s.io/component-base/compatibility/version.go`, `effectiveVersion.Info`;
/// fields in the order of apimachinery's `pkg/version/types.go` `Info`). The sandbox emulates
/// its own version, and the minimum compatibility version is one minor below, kube's default
/// (`DefaultBuildEffectiveVersion`: `binaryVersion.SubtractMinor(1)`).
pub fn version(git_version: &str) -> Value {
    let trimmed = git_version.trim_start_matches('v');
    let mut parts = trimmed.split(['.', '-', '+']);
    let major = parts.next().unwrap_or("1");
    let minor = parts.next().unwrap_or("0");
    let min_compatibility_minor = minor
        .parse::<u32>()
        .map(|m| m.saturating_sub(1).to_string())
        .unwrap_or_else(|_| minor.to_string());
    json!({
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": min_compatibility_minor,
        "gitVersion": git_version,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `/api`.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_entry(group: &str, versions: &[String]) -> Value {
    let list: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = versions
        .first()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .unwrap_or(Value::Null);
    json!({"name": group, "versions": list, "preferredVersion": preferred})
}

/// Versions per group, preferred first, in a stable order.
fn groups(types: &[ResourceType]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for t in types.iter().filter(|t| !t.group.is_empty()) {
        let versions = out.entry(t.group.clone()).or_default();
        for v in &t.versions {
            if !versions.contains(v) {
                versions.push(v.clone());
            }
        }
    }
    out
}

/// `/apis`.
pub fn group_list(types: &[ResourceType]) -> Value {
    let mut by_priority: Vec<(String, Vec<String>)> = groups(types).into_iter().collect();
    by_priority.sort_by_key(|(g, _)| group_rank(g));
    let groups: Vec<Value> = by_priority
        .iter()
        .map(|(g, versions)| group_entry(g, versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`, if the group is served.
pub fn group(types: &[ResourceType], name: &str) -> Option<Value> {
    let groups = groups(types);
    let versions = groups.get(name)?;
    let mut entry = group_entry(name, versions);
    entry["kind"] = json!("APIGroup");
    entry["apiVersion"] = json!("v1");
    Some(entry)
}

/// `(kind, group, version, verbs)` of a subresource.
fn subresource_info(
    parent: &ResourceType,
    sub: &str,
) -> (
    String,
    Option<&'static str>,
    Option<&'static str>,
    Vec<&'static str>,
) {
    let same = parent.kind.clone();
    match sub {
        "status" | "approval" => (same, None, None, vec!["get", "patch", "update"]),
        "scale" => (
            "Scale".into(),
            Some("autoscaling"),
            Some("v1"),
            vec!["get", "patch", "update"],
        ),
        "log" => (same, None, None, vec!["get"]),
        "binding" => ("Binding".into(), None, None, vec!["create"]),
        "eviction" => (
            "Eviction".into(),
            Some("policy"),
            Some("v1"),
            vec!["create"],
        ),
        "exec" => ("PodExecOptions".into(), None, None, vec!["create", "get"]),
        "attach" => ("PodAttachOptions".into(), None, None, vec!["create", "get"]),
        "portforward" => (
            "PodPortForwardOptions".into(),
            None,
            None,
            vec!["create", "get"],
        ),
        "proxy" => (
            format!("{}ProxyOptions", parent.kind),
            None,
            None,
            vec!["create", "delete", "get", "patch", "update"],
        ),
        "token" => (
            "TokenRequest".into(),
            Some("authentication.k8s.io"),
            Some("v1"),
            vec!["create"],
        ),
        "finalize" => (same, None, None, vec!["update"]),
        "ephemeralcontainers" | "resize" => (same, None, None, vec!["get", "patch", "update"]),
        _ => (same, None, None, vec!["get"]),
    }
}

/// `/api/v1` or `/apis/{group}/{version}`, if served.
pub fn resource_list(types: &[ResourceType], group: &str, version: &str) -> Option<Value> {
    let served: Vec<&ResourceType> = types
        .iter()
        .filter(|t| t.group == group && t.versions.iter().any(|v| v == version))
        .collect();
    if served.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for t in served {
        let mut r = json!({
            "name": t.plural,
            "singularName": t.singular,
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": t.verbs,
        });
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if !t.categories.is_empty() {
            r["categories"] = json!(t.categories);
        }
        resources.push(r);
        for sub in &t.subresources {
            let (kind, sub_group, sub_version, verbs) = subresource_info(t, sub);
            let mut r = json!({
                "name": format!("{}/{}", t.plural, sub),
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": kind,
                "verbs": verbs,
            });
            if let Some(g) = sub_group {
                r["group"] = json!(g);
            }
            if let Some(v) = sub_version {
                r["version"] = json!(v);
            }
            resources.push(r);
        }
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

/// Which aggregated discovery document a client asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregated {
    /// `apidiscovery.k8s.io/v2`.
    V2,
    /// `apidiscovery.k8s.io/v2beta1`.
    V2Beta1,
}

impl Aggregated {
    /// The negotiated form for an Accept header: the first media range that is aggregated
    /// discovery as JSON, unless plain JSON (legacy discovery) comes first. Protobuf ranges are
    /// skipped, as the sandbox answers JSON only.
    pub fn negotiate(accept: &str) -> Option<Aggregated> {
        for range in accept.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("");
            let params: Vec<(&str, &str)> = parts.filter_map(|p| p.split_once('=')).collect();
            let param = |k: &str| params.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
            if !matches!(media, "application/json" | "application/*" | "*/*") {
                continue;
            }
            // Plain JSON before any aggregated form means legacy discovery.
            if param("as")? != "APIGroupDiscoveryList" {
                continue;
            }
            if param("g") != Some("apidiscovery.k8s.io") {
                continue;
            }
            match param("v") {
                Some("v2") => return Some(Aggregated::V2),
                Some("v2beta1") => return Some(Aggregated::V2Beta1),
                _ => continue,
            }
        }
        None
    }

    /// The `Content-Type` kube-apiserver answers with.
    pub fn content_type(self) -> &'static str {
        match self {
            Aggregated::V2 => {
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            }
            Aggregated::V2Beta1 => {
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            }
        }
    }

    fn api_version(self) -> &'static str {
        match self {
            Aggregated::V2 => "apidiscovery.k8s.io/v2",
            Aggregated::V2Beta1 => "apidiscovery.k8s.io/v2beta1",
        }
    }
}

/// The order kube-apiserver lists its built-in groups in (by group priority); other groups
/// (CRDs) follow in alphabetical order.
const GROUP_ORDER: &[&str] = &[
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "resource.k8s.io",
    "flowcontrol.apiserver.k8s.io",
];

/// Groups of APIServices whose `groupPriorityMinimum` is below the 1000 CRD groups get:
/// metrics-server's 100 (`manifests/base/apiservice.yaml`). kube-aggregator lists groups by
/// that priority, then name (`apiregistration/v1/helper`, `SortedByGroupAndVersion`).
const LOW_PRIORITY_GROUPS: &[&str] = &[crate::apiserver::resources::METRICS_GROUP];

/// Sort key of a group in discovery: built-in priority, then CRD groups, then low-priority
/// aggregated groups, each by name.
fn group_rank(group: &str) -> (usize, String) {
    let rank = GROUP_ORDER.iter().position(|g| *g == group).unwrap_or(
        if LOW_PRIORITY_GROUPS.contains(&group) {
            GROUP_ORDER.len() + 1
        } else {
            GROUP_ORDER.len()
        },
    );
    (rank, group.to_string())
}

/// Kubernetes' version priority (`v2` > `v1` > `v1beta2` > `v1beta1` > `v1alpha1` > other),
/// as a key that sorts the preferred version first.
pub fn version_rank(version: &str) -> (u8, i64, i64, String) {
    let parsed = version.strip_prefix('v').and_then(|rest| {
        let digits_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: i64 = rest[..digits_end].parse().ok()?;
        let tail = &rest[digits_end..];
        if tail.is_empty() {
            return Some((0u8, -major, 0));
        }
        let (stage, minor) = if let Some(m) = tail.strip_prefix("beta") {
            (1u8, m)
        } else if let Some(m) = tail.strip_prefix("alpha") {
            (2u8, m)
        } else {
            return None;
        };
        Some((stage, -major, -minor.parse::<i64>().ok()?))
    });
    match parsed {
        Some((stage, major, minor)) => (stage, major, minor, String::new()),
        None => (3, 0, 0, version.to_string()),
    }
}

/// Verbs in the order kube-apiserver lists them: sorted for built-in kinds, the handler's
/// order for custom resources.
fn aggregated_verbs(t: &ResourceType) -> Vec<&'static str> {
    if t.custom.is_some() {
        let order = [
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch",
        ];
        return order.into_iter().filter(|v| t.verbs.contains(v)).collect();
    }
    let mut verbs = t.verbs.clone();
    verbs.sort_unstable();
    verbs
}

fn aggregated_resource(t: &ResourceType, version: &str) -> Value {
    // Built-in kinds leave the response kind's group and version empty (same as the
    // resource's); custom resources spell them out.
    let (kind_group, kind_version) = if t.custom.is_some() {
        (t.group.as_str(), version)
    } else {
        ("", "")
    };
    let mut r = json!({
        "resource": t.plural,
        "responseKind": {"group": kind_group, "version": kind_version, "kind": t.kind},
        "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": t.singular,
        "verbs": aggregated_verbs(t),
    });
    if !t.short_names.is_empty() {
        r["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        r["categories"] = json!(t.categories);
    }
    let mut subs: Vec<&str> = t.subresources.clone();
    subs.sort_unstable();
    if !subs.is_empty() {
        let list: Vec<Value> = subs
            .iter()
            .map(|sub| {
                let (kind, sub_group, sub_version, mut verbs) = subresource_info(t, sub);
                verbs.sort_unstable();
                let (g, v) = match (sub_group, sub_version) {
                    (Some(g), Some(v)) => (g, v),
                    _ => (kind_group, kind_version),
                };
                json!({
                    "subresource": sub,
                    "responseKind": {"group": g, "version": v, "kind": kind},
                    "verbs": verbs,
                })
            })
            .collect();
        r["subresources"] = json!(list);
    }
    r
}

/// `/api` (`core`) or `/apis` as an `APIGroupDiscoveryList`: every served group, its
/// versions by priority, and each version's resources (sorted) with their subresources.
pub fn aggregated(types: &[ResourceType], core: bool, form: Aggregated) -> Value {
    type VersionKey = ((u8, i64, i64, String), String);
    let mut by_group: BTreeMap<(usize, String), BTreeMap<VersionKey, Vec<&ResourceType>>> =
        BTreeMap::new();
    for t in types.iter().filter(|t| t.group.is_empty() == core) {
        let versions = by_group.entry(group_rank(&t.group)).or_default();
        for v in &t.versions {
            versions
                .entry((version_rank(v), v.clone()))
                .or_default()
                .push(t);
        }
    }
    let items: Vec<Value> = by_group
        .into_iter()
        .map(|((_, group), versions)| {
            let versions: Vec<Value> = versions
                .into_iter()
                .map(|((_, version), mut list)| {
                    list.sort_by(|a, b| a.plural.cmp(&b.plural));
                    let resources: Vec<Value> = list
                        .iter()
                        .map(|t| aggregated_resource(t, &version))
                        .collect();
                    json!({"version": version, "resources": resources, "freshness": "Current"})
                })
                .collect();
            let metadata = if core {
                json!({})
            } else {
                json!({"name": group})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": form.api_version(),
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::resources::builtin_types;

    #[test]
    fn core_resource_list_has_pods_and_subresources() {
        let types = builtin_types();
        let list = resource_list(&types, "", "v1").unwrap();
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        for want in [
            "pods",
            "pods/status",
            "pods/log",
            "pods/binding",
            "nodes",
            "namespaces",
            "serviceaccounts/token",
        ] {
            assert!(names.contains(&want), "{want} missing");
        }
        let pods = &list["resources"].as_array().unwrap()
            [names.iter().position(|n| *n == "pods").unwrap()];
        assert_eq!(pods["namespaced"], true);
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert!(resource_list(&types, "apps", "v2").is_none());
    }

    #[test]
    fn groups_list_preferred_versions() {
        let types = builtin_types();
        let list = group_list(&types);
        let apps = list["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "apps")
            .unwrap();
        assert_eq!(apps["preferredVersion"]["groupVersion"], "apps/v1");
        assert!(group(&types, "nope").is_none());
    }

    #[test]
    fn version_carries_the_emulation_and_compatibility_versions() {
        let info = version("v1.36.2");
        let mut keys: Vec<&str> = info
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        // The fields of apimachinery `pkg/version/types.go` `Info`.
        let mut want = [
            "major",
            "minor",
            "emulationMajor",
            "emulationMinor",
            "minCompatibilityMajor",
            "minCompatibilityMinor",
            "gitVersion",
            "gitCommit",
            "gitTreeState",
            "buildDate",
            "goVersion",
            "compiler",
            "platform",
        ];
        want.sort_unstable();
        assert_eq!(keys, want);
        assert_eq!(info["minor"], "36");
        assert_eq!(info["emulationMinor"], "36");
        assert_eq!(info["minCompatibilityMinor"], "35");
        assert_eq!(info["gitVersion"], "v1.36.2");
    }

    #[test]
    fn aggregated_discovery_is_negotiated_from_accept() {
        let cases = [
            (
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
                Some(Aggregated::V2),
            ),
            (
                "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
                Some(Aggregated::V2Beta1),
            ),
            ("application/json, */*", None),
            (
                "application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
                None,
            ),
            (
                "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList",
                None,
            ),
            ("", None),
        ];
        for (accept, want) in cases {
            assert_eq!(Aggregated::negotiate(accept), want, "{accept}");
        }
    }

    #[test]
    fn versions_sort_by_kubernetes_priority() {
        let mut versions = vec![
            "v1alpha1",
            "foo",
            "v1beta1",
            "v2",
            "v1",
            "v1beta2",
            "v10alpha3",
        ];
        versions.sort_by_key(|v| version_rank(v));
        assert_eq!(
            versions,
            vec![
                "v2",
                "v1",
                "v1beta2",
                "v1beta1",
                "v10alpha3",
                "v1alpha1",
                "foo"
            ]
        );
    }

    #[test]
    fn metrics_server_groups_come_after_crd_groups() {
        let mut types = builtin_types();
        types.extend(crate::apiserver::resources::metrics_types());
        let mut crd = types[0].clone();
        crd.group = "zzz.example.com".into();
        types.push(crd);
        let list = group_list(&types);
        let names: Vec<&str> = list["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names[names.len() - 2..],
            ["zzz.example.com", "metrics.k8s.io"]
        );
        let aggregated = aggregated(&types, false, Aggregated::V2);
        let last = aggregated["items"].as_array().unwrap().last().unwrap();
        // metrics-server's resources as the generic API installer describes them.
        assert_eq!(
            last["versions"][0],
            json!({"version": "v1beta1", "freshness": "Current", "resources": [
                {"resource": "nodes", "responseKind": {"group": "", "version": "", "kind": "NodeMetrics"},
                 "scope": "Cluster", "singularResource": "", "verbs": ["get", "list"]},
                {"resource": "pods", "responseKind": {"group": "", "version": "", "kind": "PodMetrics"},
                 "scope": "Namespaced", "singularResource": "", "verbs": ["get", "list"]}]})
        );
        let legacy = resource_list(&types, "metrics.k8s.io", "v1beta1").unwrap();
        assert_eq!(
            legacy["resources"][0],
            json!({"name": "nodes", "singularName": "", "namespaced": false,
                   "kind": "NodeMetrics", "verbs": ["get", "list"]})
        );
        assert!(resource_list(&builtin_types(), "metrics.k8s.io", "v1beta1").is_none());
    }

    #[test]
    fn aggregated_lists_groups_in_priority_order() {
        let types = builtin_types();
        let apis = aggregated(&types, false, Aggregated::V2);
        let names: Vec<&str> = apis["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["metadata"]["name"].as_str().unwrap())
            .collect();
        // kube-apiserver's group priorities (`pkg/controlplane/apiserver/aggregator.go`,
        // `APIVersionPriorities`), as the recorded `/apis` lists them.
        assert_eq!(names[0], "apiregistration.k8s.io");
        assert_eq!(names[1], "apps");
        assert_eq!(names[2], "events.k8s.io");
        let core = aggregated(&types, true, Aggregated::V2Beta1);
        assert_eq!(core["apiVersion"], "apidiscovery.k8s.io/v2beta1");
        assert_eq!(core["items"][0]["metadata"], json!({}));
        let resources = core["items"][0]["versions"][0]["resources"]
            .as_array()
            .unwrap();
        let plurals: Vec<&str> = resources
            .iter()
            .map(|r| r["resource"].as_str().unwrap())
            .collect();
        let mut sorted = plurals.clone();
        sorted.sort_unstable();
        assert_eq!(plurals, sorted);
    }
}
