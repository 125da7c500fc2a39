//! Taking over from upstream Kubeocean: the finalizers its manager and syncer leave on
//! objects, and which binding owns a `clusterID`. Pure functions; the manager and the syncer
//! write what they return.
//!
//! Upstream holds ClusterBindings with `kubeocean.io/clusterbinding-manager` and
//! `kubeocean.io/clusterbinding-syncer`, the virtual ConfigMaps, Secrets, PVCs and PVs it
//! copied with `kubeocean.io/finalizer-<clusterID>`, and ResourceLeasingPolicies with
//! `policy.kubeocean.io/finalizer`. Nothing of ours removes them unless told to, so after a
//! switch every deletion of such an object would hang.

use std::cmp::Ordering;

use crate::crd::ClusterBinding;

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
