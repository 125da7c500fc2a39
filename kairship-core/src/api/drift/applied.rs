//! The plain steps of drift: what the Works of an instance apply to each member, how the
//! member's copy is found, and how one copy compares.

use std::collections::BTreeMap;

use serde_json::Value;

use super::types::{DriftState, MemberDrift, ObjectDrift};
use crate::drift::field_drift;

/// Prefix of a member's execution space (`names.GenerateExecutionSpaceName`).
const EXECUTION_SPACE_PREFIX: &str = "karmada-es-";

/// One manifest a Work applies to a member.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// The member (from the Work's execution space).
    pub cluster: String,
    /// `apiVersion` of the manifest.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its namespace (empty for cluster-scoped objects).
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The manifest, as Karmada applies it.
    pub manifest: Value,
}

impl Applied {
    /// `(group, version)` of the manifest (group empty for the core group).
    pub fn group_version(&self) -> (&str, &str) {
        group_version(&self.api_version)
    }
}

/// `(group, version)` of an `apiVersion`.
pub fn group_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// The resource of a kind, as `meta.UnsafeGuessKindToResource` guesses it
/// (k8s.io/apimachinery `pkg/api/meta/restmapper.go`): lower case, `s` appended, `es` after
/// `s`, `ies` for a final `y`, `endpoints` as it is. Works name kinds, member paths need
/// resources.
pub fn guess_resource(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if lower.is_empty() || lower.ends_with("endpoints") {
        return lower;
    }
    if lower.ends_with('s') {
        return format!("{lower}es");
    }
    if let Some(stem) = lower.strip_suffix('y') {
        return format!("{stem}ies");
    }
    format!("{lower}s")
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Every manifest the Works apply, with its member: Works outside an execution space, being
/// deleted, or with dispatching suspended apply nothing now.
pub fn applied_manifests(works: &[Value]) -> Vec<Applied> {
    let mut out = Vec::new();
    for work in works {
        let Some(cluster) = text(work, "/metadata/namespace").strip_prefix(EXECUTION_SPACE_PREFIX)
        else {
            continue;
        };
        if work
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null())
            || work.pointer("/spec/suspendDispatching") == Some(&Value::Bool(true))
        {
            continue;
        }
        for manifest in work
            .pointer("/spec/workload/manifests")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.push(Applied {
                cluster: cluster.to_owned(),
                api_version: text(manifest, "/apiVersion").to_owned(),
                kind: text(manifest, "/kind").to_owned(),
                namespace: text(manifest, "/metadata/namespace").to_owned(),
                name: text(manifest, "/metadata/name").to_owned(),
                manifest: manifest.clone(),
            });
        }
    }
    out
}

/// How the member's copy `live` (`None`: the member has none) compares with `applied`.
pub fn member_drift(cluster: &str, applied: &Value, live: Option<&Value>) -> MemberDrift {
    let (state, fields) = match live {
        None => (DriftState::Missing, Vec::new()),
        Some(live) => {
            let fields = field_drift(applied, live);
            let state = if fields.is_empty() {
                DriftState::InSync
            } else {
                DriftState::Drifted
            };
            (state, fields)
        }
    };
    MemberDrift {
        cluster: cluster.to_owned(),
        state,
        fields,
        message: None,
    }
}

/// The instance's answer: the copies that drifted or are missing, grouped by object and
/// sorted by kind, namespace, name, then cluster.
pub fn drifted_objects(found: Vec<(&Applied, MemberDrift)>) -> Vec<ObjectDrift> {
    let mut by_object: BTreeMap<(String, String, String, String), ObjectDrift> = BTreeMap::new();
    for (applied, member) in found {
        if !matches!(member.state, DriftState::Drifted | DriftState::Missing) {
            continue;
        }
        let key = (
            applied.kind.clone(),
            applied.namespace.clone(),
            applied.name.clone(),
            applied.api_version.clone(),
        );
        by_object
            .entry(key)
            .or_insert_with(|| ObjectDrift {
                api_version: applied.api_version.clone(),
                kind: applied.kind.clone(),
                namespace: (!applied.namespace.is_empty()).then(|| applied.namespace.clone()),
                name: applied.name.clone(),
                members: Vec::new(),
            })
            .members
            .push(member);
    }
    let mut items: Vec<ObjectDrift> = by_object.into_values().collect();
    for item in &mut items {
        item.members.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    }
    items
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn resources_are_guessed_as_kubernetes_guesses_them() {
        // restmapper_test.go TestUnsafeGuessKindToResource.
        for (kind, resource) in [
            ("Deployment", "deployments"),
            ("Ingress", "ingresses"),
            ("NetworkPolicy", "networkpolicies"),
            ("ConfigMap", "configmaps"),
            ("Endpoints", "endpoints"),
            ("Class", "classes"),
            ("", ""),
        ] {
            assert_eq!(guess_resource(kind), resource, "{kind}");
        }
        assert_eq!(group_version("apps/v1"), ("apps", "v1"));
        assert_eq!(group_version("v1"), ("", "v1"));
    }

    #[test]
    fn only_works_of_execution_spaces_that_apply_count() {
        let manifest = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "demo"}});
        let work = |ns: &str, extra: Value| {
            let mut w = json!({"metadata": {"name": "w", "namespace": ns},
                "spec": {"workload": {"manifests": [manifest]}}});
            if let (Some(w), Some(extra)) = (w.as_object_mut(), extra.as_object()) {
                for (k, v) in extra {
                    if k == "deletionTimestamp" {
                        w["metadata"][k] = v.clone();
                    } else {
                        w["spec"][k] = v.clone();
                    }
                }
            }
            w
        };
        let works = vec![
            work("karmada-es-east", json!({})),
            work("default", json!({})),
            work(
                "karmada-es-west",
                json!({"deletionTimestamp": "2026-01-01T00:00:00Z"}),
            ),
            work("karmada-es-south", json!({"suspendDispatching": true})),
        ];
        let applied = applied_manifests(&works);
        assert_eq!(applied.len(), 1);
        assert_eq!(
            (
                applied[0].cluster.as_str(),
                applied[0].kind.as_str(),
                applied[0].namespace.as_str()
            ),
            ("east", "Deployment", "demo")
        );
    }

    #[test]
    fn copies_compare_as_in_sync_drifted_or_missing() {
        let applied = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "demo"}, "data": {"a": "1"}});
        let same = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "demo", "uid": "u"}, "data": {"a": "1"}});
        let edited = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "demo"}, "data": {"a": "2"}});
        assert_eq!(
            member_drift("m", &applied, Some(&same)).state,
            DriftState::InSync
        );
        let d = member_drift("m", &applied, Some(&edited));
        assert_eq!(d.state, DriftState::Drifted);
        assert_eq!(d.fields.len(), 1);
        assert_eq!(d.fields[0].path, "data.a");
        assert_eq!(member_drift("m", &applied, None).state, DriftState::Missing);
        let a = applied_manifests(&[json!({"metadata": {"namespace": "karmada-es-m"},
            "spec": {"workload": {"manifests": [applied]}}})]);
        let items = drifted_objects(vec![
            (&a[0], member_drift("m", &a[0].manifest, Some(&edited))),
            (&a[0], member_drift("n", &a[0].manifest, Some(&same))),
        ]);
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].members.len(), 1);
        assert_eq!(items[0].members[0].cluster, "m");
    }
}
