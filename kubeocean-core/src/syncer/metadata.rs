//! Three-way merge of a virtual node's labels, annotations and taints: what the syncer wants
//! now, what it wrote last time (kept in the `kubeocean.io/expected-metadata` annotation) and
//! what the node holds. Keys the syncer never wrote are the users'; they survive.
//!
//! The annotation is upstream Kubeocean's: base64 (standard alphabet, padded) of the JSON of
//! `{"labels": {..}, "annotations": {..}, "taints": [..]}` (upstream's
//! `physical_node_controller.go`, `saveExpectedMetadataToAnnotation` /
//! `getExpectedMetadataFromAnnotation`, struct `ExpectedNodeMetadata`). We write that, so
//! upstream's syncer reads what we recorded after a roll-back, and read both it and the
//! plain JSON earlier releases of ours wrote, so that a take-over removes what upstream
//! recorded and we do not want.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::core::v1::Taint;
use serde::{Deserialize, Serialize};

use crate::labels;

/// What the syncer last wrote to a virtual node's metadata and taints. The field names are
/// upstream's (`ExpectedNodeMetadata`); `unschedulable` is ours, and upstream's decoder
/// ignores it as Go's `encoding/json` ignores unknown fields.
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

/// How an expected-metadata annotation was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Base64 of JSON: upstream's, and ours since we write upstream's.
    Base64Json,
    /// Plain JSON, as earlier releases of ours wrote it.
    PlainJson,
}

/// Decodes an expected-metadata annotation value, in either encoding; `None` when it is
/// neither (then nothing is known to have been written).
pub fn decode(value: &str) -> Option<(ExpectedMetadata, Encoding)> {
    let value = value.trim();
    let (mut metadata, encoding) = if value.starts_with('{') {
        (
            serde_json::from_str::<ExpectedMetadata>(value).ok()?,
            Encoding::PlainJson,
        )
    } else {
        let json = STANDARD.decode(value).ok()?;
        (
            serde_json::from_slice::<ExpectedMetadata>(&json).ok()?,
            Encoding::Base64Json,
        )
    };
    // Upstream records its annotations after writing this one, so its record holds an older
    // copy of itself; it is no annotation of the node's to merge.
    metadata.annotations.remove(labels::EXPECTED_METADATA);
    Some((metadata, encoding))
}

impl ExpectedMetadata {
    /// Reads the annotation from a node's annotations (either encoding); missing or
    /// unreadable means the syncer wrote nothing yet (so nothing is removed, only set).
    pub fn from_annotations(annotations: Option<&BTreeMap<String, String>>) -> ExpectedMetadata {
        annotations
            .and_then(|a| a.get(labels::EXPECTED_METADATA))
            .and_then(|value| decode(value))
            .map(|(metadata, _)| metadata)
            .unwrap_or_default()
    }

    /// The annotation value: base64 of the JSON, as upstream writes it.
    pub fn to_annotation(&self) -> String {
        // Serialising plain maps and taints cannot fail; fall back to "nothing written".
        let json = serde_json::to_vec(self).unwrap_or_else(|_| b"{}".to_vec());
        STANDARD.encode(json)
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
        for garbage in ["{not json", "not base64!", "bm90IGpzb24="] {
            let garbage = map(&[(labels::EXPECTED_METADATA, garbage)]);
            assert_eq!(
                ExpectedMetadata::from_annotations(Some(&garbage)),
                ExpectedMetadata::default()
            );
        }
        assert_eq!(
            ExpectedMetadata::from_annotations(None),
            ExpectedMetadata::default()
        );
    }

    #[test]
    fn both_encodings_are_read_and_upstreams_is_written() {
        let plain = r#"{"labels":{"a":"x"},"taints":[{"key":"k","effect":"NoSchedule"}]}"#;
        let base64 = STANDARD.encode(plain);
        let want = ExpectedMetadata {
            labels: map(&[("a", "x")]),
            taints: vec![taint("k", None, "NoSchedule")],
            ..ExpectedMetadata::default()
        };
        // (annotation value, what it decodes to)
        let table = [
            (plain.to_owned(), Some((want.clone(), Encoding::PlainJson))),
            (base64.clone(), Some((want.clone(), Encoding::Base64Json))),
            (
                format!(" {base64}\n"),
                Some((want.clone(), Encoding::Base64Json)),
            ),
            ("".to_owned(), None),
            ("e30".to_owned(), None),
        ];
        for (value, decoded) in table {
            assert_eq!(decode(&value), decoded, "{value:?}");
        }
        // Base64 of the same JSON document (members in any order, as JSON allows).
        let written: serde_json::Value =
            serde_json::from_slice(&STANDARD.decode(want.to_annotation()).unwrap()).unwrap();
        let upstreams: serde_json::Value = serde_json::from_str(plain).unwrap();
        assert_eq!(written, upstreams);
        // Upstream's own record of the annotation is not an annotation to merge.
        let nested =
            STANDARD.encode(r#"{"annotations":{"kubeocean.io/expected-metadata":"old","u":"1"}}"#);
        assert_eq!(decode(&nested).unwrap().0.annotations, map(&[("u", "1")]));
    }
}
