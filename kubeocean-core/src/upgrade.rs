//! Taking over from upstream Kubeocean: the finalizers its manager and syncer leave on
//! objects, and which binding owns a `clusterID`. Pure functions; the manager and the syncer
//! write what they return.
//!
//! Upstream holds ClusterBindings with `kubeocean.io/clusterbinding-manager` and
//! `kubeocean.io/clusterbinding-syncer`, the virtual ConfigMaps, Secrets, PVCs and PVs it
//! copied with `kubeocean.io/finalizer-<clusterID>` (and marks them with labels and
//! annotations, [`release_synced_patch`]), and ResourceLeasingPolicies with
//! `policy.kubeocean.io/finalizer`. Nothing of ours removes them unless told to, so after a
//! switch every deletion of such an object would hang.

use std::cmp::Ordering;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::crd::ClusterBinding;
use crate::labels;

/// Upstream manager's finalizer on ClusterBindings.
pub const UPSTREAM_BINDING_MANAGER_FINALIZER: &str = "kubeocean.io/clusterbinding-manager";
/// Upstream syncer's finalizer on ClusterBindings.
pub const UPSTREAM_BINDING_SYNCER_FINALIZER: &str = "kubeocean.io/clusterbinding-syncer";
/// Upstream's finalizer on ResourceLeasingPolicies.
pub const UPSTREAM_POLICY_FINALIZER: &str = "policy.kubeocean.io/finalizer";
/// Prefix of upstream's per-cluster finalizer on virtual ConfigMaps, Secrets, PVCs and PVs
/// (`kubeocean.io/finalizer-<clusterID>`).
pub const UPSTREAM_SYNCED_FINALIZER_PREFIX: &str = "kubeocean.io/finalizer-";
/// Prefix of upstream's per-cluster label on the same virtual objects
/// (`kubeocean.io/synced-by-<clusterID>`).
pub const UPSTREAM_SYNCED_BY_LABEL_PREFIX: &str = "kubeocean.io/synced-by-";

/// Upstream's finalizer on the virtual objects it copied for `cluster_id`.
pub fn upstream_synced_finalizer(cluster_id: &str) -> String {
    format!("{UPSTREAM_SYNCED_FINALIZER_PREFIX}{cluster_id}")
}

/// The finalizers of a ClusterBinding once ours takes over: upstream's two removed, `ours`
/// added when `hold` (a live binding) and removed otherwise (a drained one). `None` when the
/// list stays as it is.
pub fn binding_finalizers(current: &[String], ours: &str, hold: bool) -> Option<Vec<String>> {
    let mut wanted: Vec<String> = current
        .iter()
        .filter(|f| {
            f.as_str() != UPSTREAM_BINDING_MANAGER_FINALIZER
                && f.as_str() != UPSTREAM_BINDING_SYNCER_FINALIZER
                && f.as_str() != ours
        })
        .cloned()
        .collect();
    if hold {
        wanted.push(ours.to_owned());
    }
    (wanted != current).then_some(wanted)
}

/// Whether a ClusterBinding is held by our finalizer or by one of upstream's (then it is
/// ours to drain before letting it go).
pub fn binding_held(current: &[String], ours: &str) -> bool {
    current.iter().any(|f| {
        f == ours
            || f == UPSTREAM_BINDING_MANAGER_FINALIZER
            || f == UPSTREAM_BINDING_SYNCER_FINALIZER
    })
}

/// `current` without `finalizer`; `None` when it does not hold it.
pub fn without_finalizer(current: &[String], finalizer: &str) -> Option<Vec<String>> {
    current.iter().any(|f| f == finalizer).then(|| {
        current
            .iter()
            .filter(|f| *f != finalizer)
            .cloned()
            .collect()
    })
}

/// What upstream's syncer marks the virtual ConfigMaps, Secrets, PVCs and PVs it copied for
/// `cluster_id` with, removed as upstream removes it when the copy is no longer needed
/// (`pkg/syncer/topdown/common/common.go`, `RemoveSyncedResourceFinalizerAndLabels`): the
/// finalizer `kubeocean.io/finalizer-<clusterID>`; the labels `kubeocean.io/synced-by-
/// <clusterID>` and `kubeocean.io/used-by-pv`, and `kubeocean.io/managed-by` when no other
/// cluster's finalizer is left; the annotations `kubeocean.io/physical-name`,
/// `kubeocean.io/physical-namespace` and `kubeocean.io/deleting-<clusterID>`. As a JSON
/// merge patch guarded by the object's `resourceVersion`; `None` when the object holds
/// neither that finalizer nor that label (not upstream's copy for this cluster).
pub fn release_synced_patch(meta: &ObjectMeta, cluster_id: &str) -> Option<serde_json::Value> {
    use serde_json::{Map, Value, json};
    let finalizer = upstream_synced_finalizer(cluster_id);
    let synced_by = format!("{UPSTREAM_SYNCED_BY_LABEL_PREFIX}{cluster_id}");
    let finalizers = meta.finalizers.clone().unwrap_or_default();
    let held = finalizers.contains(&finalizer);
    let current_labels = meta.labels.clone().unwrap_or_default();
    if !held && !current_labels.contains_key(&synced_by) {
        return None;
    }
    let mut patch_meta = Map::new();
    patch_meta.insert(
        "resourceVersion".to_owned(),
        json!(meta.resource_version.clone().unwrap_or_default()),
    );
    let remaining = without_finalizer(&finalizers, &finalizer);
    let last_cluster = remaining.as_ref().is_some_and(|rest| {
        !rest
            .iter()
            .any(|f| f.starts_with(UPSTREAM_SYNCED_FINALIZER_PREFIX))
    });
    if let Some(rest) = remaining {
        patch_meta.insert("finalizers".to_owned(), json!(rest));
    }
    let nulls = |present: &std::collections::BTreeMap<String, String>, keys: Vec<String>| {
        keys.into_iter()
            .filter(|k| present.contains_key(k))
            .map(|k| (k, Value::Null))
            .collect::<Map<String, Value>>()
    };
    let mut label_keys = vec![synced_by, labels::USED_BY_PV.to_owned()];
    if last_cluster {
        label_keys.push(labels::MANAGED_BY.to_owned());
    }
    let removed_labels = nulls(&current_labels, label_keys);
    if !removed_labels.is_empty() {
        patch_meta.insert("labels".to_owned(), Value::Object(removed_labels));
    }
    let annotations = meta.annotations.clone().unwrap_or_default();
    let removed_annotations = nulls(
        &annotations,
        vec![
            labels::PHYSICAL_NAME.to_owned(),
            labels::PHYSICAL_NAMESPACE.to_owned(),
            format!("{}{cluster_id}", labels::DELETING_PREFIX),
        ],
    );
    if !removed_annotations.is_empty() {
        patch_meta.insert("annotations".to_owned(), Value::Object(removed_annotations));
    }
    Some(json!({ "metadata": patch_meta }))
}

/// Order in which bindings claim a `clusterID`: older `creationTimestamp` first, then name.
/// A binding without a timestamp (not from an API server) sorts last.
fn claim_order(a: &ClusterBinding, b: &ClusterBinding) -> Ordering {
    let created = |x: &ClusterBinding| x.metadata.creation_timestamp.as_ref().map(|t| t.0);
    match (created(a), created(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
    .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// The binding among `all` that owns `binding`'s `clusterID` when it is not `binding` itself:
/// the first in claim order (oldest, then name) of those with the same `clusterID`. A
/// binding being deleted still owns its `clusterID` until it is gone (its syncer drains).
pub fn cluster_id_owner<'a>(
    binding: &ClusterBinding,
    all: &'a [ClusterBinding],
) -> Option<&'a ClusterBinding> {
    let owner = all
        .iter()
        .filter(|b| {
            b.spec.cluster_id == binding.spec.cluster_id && b.metadata.name != binding.metadata.name
        })
        .min_by(|a, b| claim_order(a, b))?;
    claim_order(owner, binding).is_lt().then_some(owner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn binding_finalizers_table() {
        const OURS: &str = "kubeocean.io/manager";
        let m = UPSTREAM_BINDING_MANAGER_FINALIZER;
        let s = UPSTREAM_BINDING_SYNCER_FINALIZER;
        // (current, hold, wanted)
        let cases: Vec<(Vec<String>, bool, Option<Vec<String>>)> = vec![
            (strings(&[]), true, Some(strings(&[OURS]))),
            (strings(&[OURS]), true, None),
            (strings(&[m, s]), true, Some(strings(&[OURS]))),
            (
                strings(&["other", m]),
                true,
                Some(strings(&["other", OURS])),
            ),
            (strings(&[OURS, s]), true, Some(strings(&[OURS]))),
            (strings(&[OURS]), false, Some(strings(&[]))),
            (
                strings(&["other", m, OURS, s]),
                false,
                Some(strings(&["other"])),
            ),
            (strings(&["other"]), false, None),
        ];
        for (current, hold, wanted) in cases {
            assert_eq!(
                binding_finalizers(&current, OURS, hold),
                wanted,
                "{current:?} hold={hold}"
            );
        }
        assert!(binding_held(&strings(&[s]), OURS));
        assert!(binding_held(&strings(&[OURS]), OURS));
        assert!(!binding_held(&strings(&["other"]), OURS));
    }

    #[test]
    fn without_finalizer_table() {
        let f = upstream_synced_finalizer("c1");
        assert_eq!(f, "kubeocean.io/finalizer-c1");
        assert_eq!(
            without_finalizer(&strings(&["a", &f, "b"]), &f),
            Some(strings(&["a", "b"]))
        );
        assert_eq!(without_finalizer(&strings(&["a"]), &f), None);
        assert_eq!(
            without_finalizer(&strings(&["kubeocean.io/finalizer-c2"]), &f),
            None
        );
    }

    #[test]
    fn release_synced_patch_table() {
        let meta =
            |value: serde_json::Value| -> ObjectMeta { serde_json::from_value(value).unwrap() };
        // As `UpdateVirtualResourceLabelsAndAnnotations` leaves a virtual Secret a PV uses,
        // plus `AddClusterBindingDeletingAnnotation` and a user's keys.
        let upstream_copy = json!({
            "name": "s", "resourceVersion": "7",
            "finalizers": ["kubeocean.io/finalizer-c1", "user/f"],
            "labels": { "kubeocean.io/managed-by": "kubeocean", "kubeocean.io/synced-by-c1": "true",
                        "kubeocean.io/used-by-pv": "true", "app": "x" },
            "annotations": { "kubeocean.io/physical-name": "s-0123", "kubeocean.io/physical-namespace": "m",
                             "kubeocean.io/deleting-c1": "b1", "note": "y" },
        });
        let mut shared = upstream_copy.clone();
        shared["finalizers"] = json!(["kubeocean.io/finalizer-c1", "kubeocean.io/finalizer-c2"]);
        let cases = [
            (
                upstream_copy.clone(),
                Some(json!({ "metadata": {
                    "resourceVersion": "7",
                    "finalizers": ["user/f"],
                    "labels": { "kubeocean.io/managed-by": null, "kubeocean.io/synced-by-c1": null,
                                "kubeocean.io/used-by-pv": null },
                    "annotations": { "kubeocean.io/physical-name": null,
                                     "kubeocean.io/physical-namespace": null,
                                     "kubeocean.io/deleting-c1": null },
                } })),
            ),
            // Another cluster still holds it: managed-by stays.
            (
                shared,
                Some(json!({ "metadata": {
                    "resourceVersion": "7",
                    "finalizers": ["kubeocean.io/finalizer-c2"],
                    "labels": { "kubeocean.io/synced-by-c1": null, "kubeocean.io/used-by-pv": null },
                    "annotations": { "kubeocean.io/physical-name": null,
                                     "kubeocean.io/physical-namespace": null,
                                     "kubeocean.io/deleting-c1": null },
                } })),
            ),
            // The label without the finalizer: the label goes, managed-by stays.
            (
                json!({ "name": "s", "resourceVersion": "3",
                        "labels": { "kubeocean.io/synced-by-c1": "true", "kubeocean.io/managed-by": "kubeocean" } }),
                Some(json!({ "metadata": { "resourceVersion": "3",
                    "labels": { "kubeocean.io/synced-by-c1": null } } })),
            ),
            // Another cluster's copy, or a user's object: untouched.
            (
                json!({ "name": "s", "finalizers": ["kubeocean.io/finalizer-c2"],
                        "labels": { "kubeocean.io/synced-by-c2": "true" } }),
                None,
            ),
            (json!({ "name": "s", "labels": { "app": "x" } }), None),
        ];
        for (i, (object, want)) in cases.into_iter().enumerate() {
            assert_eq!(release_synced_patch(&meta(object), "c1"), want, "case {i}");
        }
    }

    fn binding(name: &str, cluster_id: &str, created: Option<&str>) -> ClusterBinding {
        let mut meta = json!({ "name": name });
        if let Some(created) = created {
            meta["creationTimestamp"] = json!(created);
        }
        serde_json::from_value(json!({
            "metadata": meta,
            "spec": { "clusterID": cluster_id, "secretRef": { "name": "s" } },
        }))
        .unwrap()
    }

    #[test]
    fn cluster_id_owner_table() {
        let all = vec![
            binding("b-old", "c1", Some("2025-01-01T00:00:00Z")),
            binding("a-new", "c1", Some("2025-02-01T00:00:00Z")),
            binding("z-same-time", "c2", Some("2025-01-01T00:00:00Z")),
            binding("a-same-time", "c2", Some("2025-01-01T00:00:00Z")),
            binding("alone", "c3", Some("2025-03-01T00:00:00Z")),
        ];
        // (binding, owner when refused)
        let cases = [
            ("b-old", None),
            ("a-new", Some("b-old")),
            ("a-same-time", None),
            ("z-same-time", Some("a-same-time")),
            ("alone", None),
        ];
        for (name, owner) in cases {
            let this = all
                .iter()
                .find(|b| b.metadata.name.as_deref() == Some(name));
            let found = cluster_id_owner(this.unwrap(), &all);
            assert_eq!(
                found.and_then(|b| b.metadata.name.as_deref()),
                owner,
                "{name}"
            );
        }
        // A binding not in the list yet (just created) is compared with what is stored.
        let newest = binding("fresh", "c3", Some("2025-04-01T00:00:00Z"));
        assert_eq!(
            cluster_id_owner(&newest, &all).and_then(|b| b.metadata.name.as_deref()),
            Some("alone")
        );
        let oldest = binding("first", "c3", Some("2024-01-01T00:00:00Z"));
        assert_eq!(cluster_id_owner(&oldest, &all), None);
    }
}
