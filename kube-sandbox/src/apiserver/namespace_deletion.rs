//! The status conditions the namespace controller keeps on a terminating namespace, saying
//! what content and which finalizers still hold it (kubernetes
//! `pkg/controller/namespace/deletion/status_condition_utils.go`: `ProcessContentTotals`,
//! `updateConditions`, `okReasons`, `okMessages`). The sandbox discovers every resource and
//! deletes content without failing, so the first three conditions always read as succeeded.

use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The condition types, in upstream's order, with their "nothing wrong" reason and message.
const CONDITIONS: &[(&str, &str, &str)] = &[
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        "NamespaceContentRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        "NamespaceFinalizersRemaining",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
];

/// What is left in a terminating namespace.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Remaining {
    /// Objects left, by `(resource, group)`.
    pub resources: BTreeMap<(String, String), usize>,
    /// Objects left, by each finalizer they still carry.
    pub finalizers: BTreeMap<String, usize>,
}

/// The namespace's conditions after a pass that left `remaining`: `old` updated in place as
/// upstream's `updateConditions` does (a condition's `lastTransitionTime` moves only when its
/// status changes).
pub fn conditions(old: &[Value], remaining: &Remaining, now: &str) -> Vec<Value> {
    let mut out: Vec<Value> = old.to_vec();
    for (kind, ok_reason, ok_message) in CONDITIONS {
        let (status, reason, message) = match *kind {
            "NamespaceContentRemaining" if !remaining.resources.is_empty() => {
                let mut parts: Vec<String> = remaining
                    .resources
                    .iter()
                    .map(|((resource, group), n)| {
                        format!("{resource}.{group} has {n} resource instances")
                    })
                    .collect();
                parts.sort();
                (
                    "True",
                    "SomeResourcesRemain",
                    format!("Some resources are remaining: {}", parts.join(", ")),
                )
            }
            "NamespaceFinalizersRemaining" if !remaining.finalizers.is_empty() => {
                let mut parts: Vec<String> = remaining
                    .finalizers
                    .iter()
                    .map(|(finalizer, n)| format!("{finalizer} in {n} resource instances"))
                    .collect();
                parts.sort();
                (
                    "True",
                    "SomeFinalizersRemain",
                    format!(
                        "Some content in the namespace has finalizers remaining: {}",
                        parts.join(", ")
                    ),
                )
            }
            _ => ("False", *ok_reason, (*ok_message).to_owned()),
        };
        match out.iter_mut().find(|c| c["type"] == *kind) {
            None => out.push(json!({"type": kind, "status": status,
                "lastTransitionTime": now, "reason": reason, "message": message})),
            Some(c) => {
                if c["status"] != status {
                    c["lastTransitionTime"] = json!(now);
                }
                c["status"] = json!(status);
                c["reason"] = json!(reason);
                c["message"] = json!(message);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remaining_content_and_finalizers_are_named_as_upstream_names_them() {
        let mut remaining = Remaining::default();
        remaining
            .resources
            .insert(("configmaps".into(), String::new()), 2);
        remaining
            .resources
            .insert(("deployments".into(), "apps".into()), 1);
        remaining.finalizers.insert("example.com/hold".into(), 2);
        let first = conditions(&[], &remaining, "T0");
        let types: Vec<&str> = first.iter().map(|c| c["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "NamespaceDeletionDiscoveryFailure",
                "NamespaceDeletionGroupVersionParsingFailure",
                "NamespaceDeletionContentFailure",
                "NamespaceContentRemaining",
                "NamespaceFinalizersRemaining"
            ]
        );
        assert_eq!(first[0]["status"], "False");
        assert_eq!(first[0]["reason"], "ResourcesDiscovered");
        assert_eq!(
            first[3]["message"],
            "Some resources are remaining: configmaps. has 2 resource instances, deployments.apps has 1 resource instances"
        );
        assert_eq!(first[3]["reason"], "SomeResourcesRemain");
        assert_eq!(
            first[4]["message"],
            "Some content in the namespace has finalizers remaining: example.com/hold in 2 resource instances"
        );
        // Emptied: the two turn False; only they move their transition time.
        let emptied = conditions(&first, &Remaining::default(), "T1");
        assert_eq!(emptied[3]["status"], "False");
        assert_eq!(emptied[3]["reason"], "ContentRemoved");
        assert_eq!(emptied[3]["lastTransitionTime"], "T1");
        assert_eq!(
            emptied[4]["message"],
            "All content-preserving finalizers finished"
        );
        assert_eq!(emptied[0]["lastTransitionTime"], "T0");
    }
}
