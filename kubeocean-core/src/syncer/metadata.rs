//! Three-way merge of a virtual node's labels, annotations and taints: what the syncer wants
//! now, what it wrote last time (kept in the `kubeocean.io/expected-metadata` annotation) and
//! what the node holds. Keys the syncer never wrote are the users'; they survive.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use serde::{Deserialize, Serialize};

use crate::labels;

/// What the syncer last wrote to a virtual node's metadata and taints.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExpectedMetadata {
    /// Labels the syncer set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations the syncer set (never the expected-metadata annotation itself).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Taints the syncer set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
    /// Whether the syncer cordoned the node (to drain it); a user's cordon is not recorded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unschedulable: bool,
}

impl ExpectedMetadata {
    /// Reads the annotation from a node's annotations; missing or unreadable means the
    /// syncer wrote nothing yet (so nothing is removed, only set).
    pub fn from_annotations(annotations: Option<&BTreeMap<String, String>>) -> ExpectedMetadata {
        annotations
            .and_then(|a| a.get(labels::EXPECTED_METADATA))
            .and_then(|json| serde_json::from_str(json).ok())
            .unwrap_or_default()
    }

    /// The annotation value.
    pub fn to_annotation(&self) -> String {
        // Serialising plain maps and taints cannot fail; fall back to "nothing written".
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned())
    }
}

/// Merges a map (labels or annotations): keys the syncer wrote before but no longer wants are
/// removed, wanted keys are set, everything else of `current` is kept.
pub fn merge_map(
    current: &BTreeMap<String, String>,
    last: &BTreeMap<String, String>,
    desired: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut merged = current.clone();
    for key in last.keys() {
        if !desired.contains_key(key) {
            merged.remove(key);
        }
    }
    for (key, value) in desired {
        merged.insert(key.clone(), value.clone());
    }
    merged
}

/// Merges taints, identified by key and effect: the desired ones in their order (keeping the
/// `timeAdded` a current taint already has, so it records when the taint first appeared),
/// then the current taints the syncer never wrote.
pub fn merge_taints(current: &[Taint], last: &[Taint], desired: &[Taint]) -> Vec<Taint> {
    let same = |a: &Taint, b: &Taint| a.key == b.key && a.effect == b.effect;
    let mut merged: Vec<Taint> = desired
        .iter()
        .map(|want| {
            let mut taint = want.clone();
            if let Some(have) = current.iter().find(|have| same(have, want))
                && have.value == want.value
                && have.time_added.is_some()
            {
                taint.time_added.clone_from(&have.time_added);
            }
            taint
        })
        .collect();
    for taint in current {
        let ours = desired.iter().chain(last).any(|t| same(t, taint));
        if !ours {
            merged.push(taint.clone());
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
        crate::leasing::taint(key, value, effect)
    }

    #[test]
    fn merge_map_table() {
        // (current, last written, desired, expected)
        let table = [
            // First sync: nothing written before, user keys kept.
            (
                map(&[("user", "1")]),
                map(&[]),
                map(&[("a", "x")]),
                map(&[("a", "x"), ("user", "1")]),
            ),
            // A key the syncer wrote and no longer wants goes away.
            (
                map(&[("a", "x"), ("b", "y"), ("user", "1")]),
                map(&[("a", "x"), ("b", "y")]),
                map(&[("a", "x")]),
                map(&[("a", "x"), ("user", "1")]),
            ),
            // A changed value of ours overrides a user edit of that key.
            (
                map(&[("a", "edited")]),
                map(&[("a", "x")]),
                map(&[("a", "z")]),
                map(&[("a", "z")]),
            ),
            // A user key never written by the syncer survives even if it looks like ours.
            (
                map(&[("team", "blue")]),
                map(&[("a", "x")]),
                map(&[("a", "x")]),
                map(&[("a", "x"), ("team", "blue")]),
            ),
            // A key the user deleted is restored.
            (
                map(&[]),
                map(&[("a", "x")]),
                map(&[("a", "x")]),
                map(&[("a", "x")]),
            ),
        ];
        for (i, (current, last, desired, want)) in table.into_iter().enumerate() {
            assert_eq!(merge_map(&current, &last, &desired), want, "case {i}");
        }
    }

    #[test]
    fn merge_taints_table() {
        let vnode = taint("kubeocean.io/vnode", None, "NoSchedule");
        let window = taint(
            "kubeocean.io/out-of-time-windows",
            Some("true"),
            "NoSchedule",
        );
        let user = taint("team", Some("blue"), "NoExecute");
        let gpu = taint("gpu", Some("true"), "NoSchedule");
        // (current, last, desired, expected)
        let table = [
            (
                vec![user.clone()],
                vec![],
                vec![vnode.clone()],
                vec![vnode.clone(), user.clone()],
            ),
            (
                vec![vnode.clone(), window.clone(), user.clone()],
                vec![vnode.clone(), window.clone()],
                vec![vnode.clone()],
                vec![vnode.clone(), user.clone()],
            ),
            (
                vec![vnode.clone(), user.clone()],
                vec![vnode.clone()],
                vec![vnode.clone(), gpu.clone()],
                vec![vnode.clone(), gpu.clone(), user.clone()],
            ),
            // The same key with another effect is another taint.
            (
                vec![taint("team", Some("blue"), "NoSchedule")],
                vec![],
                vec![user.clone()],
                vec![user.clone(), taint("team", Some("blue"), "NoSchedule")],
            ),
        ];
        for (i, (current, last, desired, want)) in table.into_iter().enumerate() {
            assert_eq!(merge_taints(&current, &last, &desired), want, "case {i}");
        }
    }

    #[test]
    fn merge_taints_keeps_time_added() {
        let mut current = taint(
            "kubeocean.io/out-of-time-windows",
            Some("true"),
            "NoExecute",
        );
        current.time_added = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::UNIX_EPOCH,
        ));
        let desired = taint(
            "kubeocean.io/out-of-time-windows",
            Some("true"),
            "NoExecute",
        );
        let merged = merge_taints(
            std::slice::from_ref(&current),
            std::slice::from_ref(&desired),
            std::slice::from_ref(&desired),
        );
        assert_eq!(merged, vec![current]);
    }

    #[test]
    fn expected_metadata_round_trips_and_tolerates_garbage() {
        let expected = ExpectedMetadata {
            labels: map(&[("a", "x")]),
            annotations: map(&[]),
            taints: vec![taint("k", None, "NoSchedule")],
            unschedulable: true,
        };
        let annotations = map(&[(labels::EXPECTED_METADATA, &expected.to_annotation())]);
        assert_eq!(
            ExpectedMetadata::from_annotations(Some(&annotations)),
            expected
        );
        let garbage = map(&[(labels::EXPECTED_METADATA, "{not json")]);
        assert_eq!(
            ExpectedMetadata::from_annotations(Some(&garbage)),
            ExpectedMetadata::default()
        );
        assert_eq!(
            ExpectedMetadata::from_annotations(None),
            ExpectedMetadata::default()
        );
    }
}
