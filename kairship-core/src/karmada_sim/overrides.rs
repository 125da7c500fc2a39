//! Karmada's override manager (karmada-io/karmada `pkg/util/overridemanager/`): the
//! OverridePolicies and ClusterOverridePolicies that select a template, their rules for one
//! cluster, and the overriders applied in Karmada's order (`applyPolicyOverriders`: image,
//! command, args, labels, annotations, then plaintext JSON patches).

use serde_json::{Value, json};

use crate::models::cluster::Cluster;
use crate::scheduling::{ClusterAffinity, affinity_matches};

/// What was applied: `[{policyName, overriders}]`, the value of the Work's
/// `policy.karmada.io/applied-overrides` (`AppliedOverrides.MarshalJSON`).
pub type Applied = Vec<Value>;

/// Applies to `manifest` every rule of `policies` (sorted by Karmada's order: implicit
/// priority of the selector that matched, then name) whose target is `cluster`. Returns what
/// was applied, or why an overrider could not be.
pub fn apply(
    manifest: &mut Value,
    policies: &[&Value],
    cluster: &Cluster,
) -> Result<Applied, String> {
    let mut applied = Vec::new();
    for policy in policies {
        let name = policy["metadata"]["name"].as_str().unwrap_or_default();
        let spec = &policy["spec"];
        let mut rules: Vec<(Option<&Value>, &Value)> = spec["overrideRules"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| (r.get("targetCluster"), &r["overriders"]))
            .collect();
        if rules.is_empty()
            && spec["overriders"]
                .as_object()
                .is_some_and(|o| !o.is_empty())
        {
            // The deprecated top-level targetCluster and overriders.
            rules.push((spec.get("targetCluster"), &spec["overriders"]));
        }
        for (target, overriders) in rules {
            let matches = match target {
                None | Some(Value::Null) => true,
                Some(t) => serde_json::from_value::<ClusterAffinity>(t.clone())
                    .is_ok_and(|a| affinity_matches(cluster, &a)),
            };
            if !matches {
                continue;
            }
            apply_overriders(manifest, overriders).map_err(|e| format!("policy {name}: {e}"))?;
            applied.push(json!({"policyName": name, "overriders": overriders}));
        }
    }
    Ok(applied)
}

/// The container lists of `manifest`'s kind (`getPodSpecPaths`-like defaults).
fn container_paths(manifest: &Value) -> Vec<&'static str> {
    match manifest["kind"].as_str().unwrap_or_default() {
        "Pod" => vec!["/spec/containers", "/spec/initContainers"],
        "CronJob" => vec![
            "/spec/jobTemplate/spec/template/spec/containers",
            "/spec/jobTemplate/spec/template/spec/initContainers",
        ],
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => vec![
            "/spec/template/spec/containers",
            "/spec/template/spec/initContainers",
        ],
        _ => Vec::new(),
    }
}

fn apply_overriders(manifest: &mut Value, o: &Value) -> Result<(), String> {
    for image in o["imageOverrider"].as_array().into_iter().flatten() {
        let paths: Vec<String> = match image.pointer("/predicate/path").and_then(Value::as_str) {
            Some(p) => vec![p.to_owned()],
            None => container_paths(manifest)
                .into_iter()
                .flat_map(|list| {
                    let n = manifest
                        .pointer(list)
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    (0..n).map(move |i| format!("{list}/{i}/image"))
                })
                .collect(),
        };
        for path in paths {
            let current = manifest
                .pointer(&path)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("no image at {path}"))?;
            let next = override_image(current, image)?;
            if let Some(slot) = manifest.pointer_mut(&path) {
                *slot = json!(next);
            }
        }
    }
    for (field, list) in [
        ("command", &o["commandOverrider"]),
        ("args", &o["argsOverrider"]),
    ] {
        for rule in list.as_array().into_iter().flatten() {
            let container = rule["containerName"].as_str().unwrap_or_default();
            let values: Vec<Value> = rule["value"].as_array().cloned().unwrap_or_default();
            for path in container_paths(manifest) {
                let Some(containers) = manifest.pointer_mut(path).and_then(Value::as_array_mut)
                else {
                    continue;
                };
                for c in containers.iter_mut().filter(|c| c["name"] == container) {
                    let mut current: Vec<Value> = c[field].as_array().cloned().unwrap_or_default();
                    match rule["operator"].as_str().unwrap_or_default() {
                        "add" => current.extend(values.iter().cloned()),
                        "remove" => current.retain(|v| !values.contains(v)),
                        other => return Err(format!("unsupported {field} operator {other:?}")),
                    }
                    c[field] = json!(current);
                }
            }
        }
    }
    for (field, list) in [
        ("labels", &o["labelsOverrider"]),
        ("annotations", &o["annotationsOverrider"]),
    ] {
        for rule in list.as_array().into_iter().flatten() {
            let values = rule["value"].as_object().cloned().unwrap_or_default();
            if !manifest["metadata"][field].is_object() {
                manifest["metadata"][field] = json!({});
            }
            let Some(map) = manifest["metadata"][field].as_object_mut() else {
                continue;
            };
            for (k, v) in values {
                match rule["operator"].as_str().unwrap_or_default() {
                    "add" => {
                        map.insert(k, v);
                    }
                    "replace" => {
                        if map.contains_key(&k) {
                            map.insert(k, v);
                        }
                    }
                    "remove" => {
                        map.remove(&k);
                    }
                    other => return Err(format!("unsupported {field} operator {other:?}")),
                }
            }
        }
    }
    for patch in o["plaintext"].as_array().into_iter().flatten() {
        json_patch(
            manifest,
            patch["operator"].as_str().unwrap_or_default(),
            patch["path"].as_str().unwrap_or_default(),
            patch.get("value").cloned().unwrap_or(Value::Null),
        )?;
    }
    Ok(())
}

/// An image reference split as Karmada's `imageparser.Parse`: registry (a first component
/// with `.` or `:`, or `localhost`), repository, tag, digest.
fn split_image(image: &str) -> (String, String, String, String) {
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, d.to_owned()),
        None => (image, String::new()),
    };
    let (registry, path) = match rest.split_once('/') {
        Some((first, path))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (first.to_owned(), path)
        }
        _ => (String::new(), rest),
    };
    let (repository, tag) = match path.rsplit_once(':') {
        Some((r, t)) => (r.to_owned(), t.to_owned()),
        None => (path.to_owned(), String::new()),
    };
    (registry, repository, tag, digest)
}

fn override_image(image: &str, rule: &Value) -> Result<String, String> {
    let (mut registry, mut repository, mut tag, digest) = split_image(image);
    let value = rule["value"].as_str().unwrap_or_default();
    let operator = rule["operator"].as_str().unwrap_or_default();
    let part = match rule["component"].as_str().unwrap_or_default() {
        "Registry" => &mut registry,
        "Repository" => &mut repository,
        "Tag" => &mut tag,
        other => return Err(format!("unsupported image component {other:?}")),
    };
    match operator {
        "add" if rule["component"] == "Tag" => *part = value.to_owned(),
        "add" => part.push_str(value),
        "replace" => *part = value.to_owned(),
        "remove" => part.clear(),
        other => return Err(format!("unsupported image operator {other:?}")),
    }
    let mut out = String::new();
    if !registry.is_empty() {
        out.push_str(&registry);
        out.push('/');
    }
    out.push_str(&repository);
    if !tag.is_empty() {
        out.push(':');
        out.push_str(&tag);
    }
    if !digest.is_empty() {
        out.push('@');
        out.push_str(&digest);
    }
    Ok(out)
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// One RFC 6902 operation (`add`, `remove`, `replace`) at JSON pointer `path`.
pub fn json_patch(doc: &mut Value, op: &str, path: &str, value: Value) -> Result<(), String> {
    let (parent, last) = match path.rsplit_once('/') {
        Some((p, l)) => (p, unescape(l)),
        None => return Err(format!("invalid path {path:?}")),
    };
    let target = doc
        .pointer_mut(parent)
        .ok_or_else(|| format!("{op} {path}: no parent"))?;
    match target {
        Value::Object(map) => match op {
            "add" => {
                map.insert(last, value);
            }
            "replace" => {
                if !map.contains_key(&last) {
                    return Err(format!("replace {path}: missing"));
                }
                map.insert(last, value);
            }
            "remove" => {
                map.remove(&last)
                    .ok_or_else(|| format!("remove {path}: missing"))?;
            }
            other => return Err(format!("unsupported operator {other:?}")),
        },
        Value::Array(list) => {
            let index = if last == "-" {
                list.len()
            } else {
                last.parse::<usize>()
                    .map_err(|_| format!("{op} {path}: bad index"))?
            };
            match op {
                "add" if index <= list.len() => list.insert(index, value),
                "replace" if index < list.len() => list[index] = value,
                "remove" if index < list.len() => {
                    list.remove(index);
                }
                _ => return Err(format!("{op} {path}: index out of range")),
            }
        }
        _ => return Err(format!("{op} {path}: parent is not a container")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(name: &str) -> Cluster {
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {}})).unwrap_or_default()
    }

    #[test]
    fn the_recorded_overrides_give_the_recorded_manifests() {
        // kairship-core/tests/data/karmada-v1.19/overridepolicy-shop-*-as-stored.json and the
        // manifests of works-karmada-es-*.json.
        let msb = json!({"metadata": {"name": "shop-msb"}, "spec": {"overrideRules": [{
            "targetCluster": {"clusterNames": ["msb"]},
            "overriders": {
                "imageOverrider": [
                    {"component": "Registry", "operator": "replace", "predicate": {"path": "/spec/template/spec/containers/0/image"}, "value": "registry.example"},
                    {"component": "Repository", "operator": "replace", "predicate": {"path": "/spec/template/spec/containers/0/image"}, "value": "shop/nginx"},
                    {"component": "Tag", "operator": "replace", "predicate": {"path": "/spec/template/spec/containers/0/image"}, "value": "1.28"}],
                "plaintext": [{"operator": "replace", "path": "/spec/replicas", "value": 3}]}}]}});
        let mreal = json!({"metadata": {"name": "shop-mreal"}, "spec": {"overrideRules": [{
            "targetCluster": {"clusterNames": ["mreal"]},
            "overriders": {"plaintext": [{"operator": "add", "path": "/spec/template/spec/containers/0/env",
                "value": [{"name": "REGION", "value": "us"}]}]}}]}});
        let deployment = json!({"kind": "Deployment", "spec": {"replicas": 1,
            "template": {"spec": {"containers": [{"name": "shop", "image": "nginx:1.27"}]}}}});
        let mut on_msb = deployment.clone();
        let applied = apply(&mut on_msb, &[&mreal, &msb], &cluster("msb")).unwrap_or_default();
        assert_eq!(
            on_msb["spec"]["template"]["spec"]["containers"][0]["image"],
            "registry.example/shop/nginx:1.28"
        );
        assert_eq!(on_msb["spec"]["replicas"], 3);
        assert_eq!(applied.len(), 1);
        assert_eq!(applied[0]["policyName"], "shop-msb");
        let mut on_mreal = deployment.clone();
        apply(&mut on_mreal, &[&mreal, &msb], &cluster("mreal")).unwrap_or_default();
        assert_eq!(
            on_mreal["spec"]["template"]["spec"]["containers"][0]["env"],
            json!([{"name": "REGION", "value": "us"}])
        );
        assert_eq!(
            on_mreal["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginx:1.27"
        );
    }

    #[test]
    fn overriders_of_each_kind() {
        let mut d = json!({"kind": "Deployment", "metadata": {"labels": {"a": "1"}},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "docker.io/library/nginx:1", "args": ["x"]}]}}}});
        let o = json!({
            "imageOverrider": [{"component": "Registry", "operator": "replace", "value": "mirror.local"}],
            "commandOverrider": [{"containerName": "c", "operator": "add", "value": ["run"]}],
            "argsOverrider": [{"containerName": "c", "operator": "remove", "value": ["x"]}],
            "labelsOverrider": [{"operator": "add", "value": {"b": "2"}}, {"operator": "replace", "value": {"a": "9", "z": "0"}}],
            "annotationsOverrider": [{"operator": "add", "value": {"n": "v"}}],
        });
        apply_overriders(&mut d, &o).unwrap_or_default();
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["image"], "mirror.local/library/nginx:1");
        assert_eq!(c["command"], json!(["run"]));
        assert_eq!(c["args"], json!([]));
        assert_eq!(d["metadata"]["labels"], json!({"a": "9", "b": "2"}));
        assert_eq!(d["metadata"]["annotations"], json!({"n": "v"}));
        assert!(json_patch(&mut d, "replace", "/spec/nothing", json!(1)).is_err());
        assert!(
            json_patch(
                &mut d,
                "remove",
                "/spec/template/spec/containers/0/args/5",
                Value::Null
            )
            .is_err()
        );
    }
}
