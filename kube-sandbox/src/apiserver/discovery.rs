//! Discovery documents shaped exactly as kube-apiserver serves them.

use crate::apiserver::resources::ResourceType;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// `/version`.
pub fn version(git_version: &str) -> Value {
    let trimmed = git_version.trim_start_matches('v');
    let mut parts = trimmed.split('.');
    let major = parts.next().unwrap_or("1");
    let minor = parts.next().unwrap_or("0");
    json!({
        "major": major,
        "minor": minor,
        "gitVersion": git_version,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
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
    let groups: Vec<Value> = groups(types)
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
        "status" => (same, None, None, vec!["get", "patch", "update"]),
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
        "ephemeralcontainers" => (same, None, None, vec!["get", "patch", "update"]),
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
        assert_eq!(version("v1.33.0")["minor"], "33");
    }
}
