//! The patch formats kube-apiserver accepts, applied to objects held as JSON.
//!
//! - [`merge_patch`]: RFC 7386 JSON merge patch (`application/merge-patch+json`).
//! - [`json_patch()`]: RFC 6902 JSON patch (`application/json-patch+json`).
//! - [`strategic_merge_patch`]: Kubernetes strategic merge patch
//!   (`application/strategic-merge-patch+json`), a port of apimachinery's
//!   `strategicpatch.StrategicMergeMapPatch` including its element ordering.
//! - [`server_side_apply`] and [`record_update`]: field ownership in
//!   `metadata.managedFields` (`application/apply-patch+yaml` and ordinary writes).
//!
//! Kept as upstream, though it may surprise: Node `spec.taints` and pod `tolerations`
//! have no patch merge key, so strategic merge replaces them whole; `$patch: merge` is
//! rejected ("unknown patch type" in a map, "merging lists cannot yet be specified in
//! the patch" in a list); items a patch adds to a merged list go before the server-only
//! items unless `$setElementOrder` says otherwise.
//!
//! What is approximated, compared with kube-apiserver:
//! - List strategies come from a built-in table keyed by kind and field path (the pod
//!   template of Pod, PodTemplate, Deployment, ReplicaSet, StatefulSet, DaemonSet,
//!   ReplicationController, Job and CronJob; `status.conditions` of every built-in kind;
//!   Node, Service and ServiceAccount specifics; `metadata.finalizers` and
//!   `metadata.ownerReferences` of every kind). Every other list is atomic.
//! - `$setElementOrder` sorting follows upstream's algorithm; items missing from the
//!   order list (which upstream places unpredictably) go last.
//! - Values a strategic merge patch adds where the original has nothing are cleaned of
//!   `null`s and `$` directives (upstream keeps them and the typed decode drops them).
//! - Server-side apply has one schema per kind and no conversion of managed fields
//!   between API versions. For custom resources every list is atomic and every object
//!   granular (`x-kubernetes-list-type` / `x-kubernetes-map-type` are ignored). The only
//!   atomic objects known are `spec.selector` of workloads and Services and Event
//!   `involvedObject`. List items are keyed by all their list-map keys with defaults
//!   (`k:{"containerPort":80,"protocol":"TCP"}`); strategic merge uses the single patch
//!   merge key, as upstream.
//! - Pruning removes a field the applier owned before and no longer applies unless some
//!   manager owns it or something below it; objects and lists left empty by pruning are
//!   removed when nobody owns anything in them (upstream also drops whole struct
//!   subtrees only the applier had fields in).
//! - `record_update` records the leaves a write added or changed, new list items and new
//!   empty objects; a `.` member is recorded for list items, new non-atomic lists and new
//!   `metadata.labels` / `metadata.annotations` (upstream also marks pointer structs).
//! - Not implemented: the cap of ten update managers ("ancient-changes"), upgrades from
//!   `kubectl.kubernetes.io/last-applied-configuration`, `resourceVersion` preconditions
//!   in apply configurations (ignored, like `uid`, `creationTimestamp` and
//!   `managedFields`), the field resets of subresource endpoints (the caller drops
//!   `status` from main-resource applies and everything else from status applies), and
//!   checking the configuration's `apiVersion` against the request path (the caller's).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use serde_json::{Map, Value};

mod apply;
mod fieldset;
mod json;
mod managed_fields;
mod strategic;
mod strategy;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
mod walk;

pub use apply::*;
use fieldset::*;
pub use json::*;
use managed_fields::*;
pub use strategic::*;
pub use strategy::*;
use walk::*;

/// Why a patch could not be applied. [`PatchError::status_code`] gives the HTTP status
/// kube-apiserver answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch document is malformed (400 Bad Request).
    #[error("{0}")]
    BadRequest(String),
    /// The patch is well formed but cannot be applied to this object (422).
    #[error("{0}")]
    Unprocessable(String),
    /// A JSON patch `test` operation did not hold (422).
    #[error("testing value {path} failed: test failed")]
    TestFailed {
        /// The JSON pointer the failed `test` operation checked.
        path: String,
    },
    /// The strategic merge failed on the content of the object or patch; kube-apiserver
    /// reports these as internal errors (500).
    #[error("{0}")]
    MergeFailed(String),
    /// Strategic merge patch on a kind without a built-in schema, such as a custom
    /// resource (415 Unsupported Media Type).
    #[error(
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )]
    UnsupportedKind {
        /// The kind the patch was sent for.
        kind: String,
    },
}

impl PatchError {
    /// The HTTP status code kube-apiserver uses for this error.
    pub fn status_code(&self) -> u16 {
        match self {
            Self::BadRequest(_) => 400,
            Self::Unprocessable(_) | Self::TestFailed { .. } => 422,
            Self::MergeFailed(_) => 500,
            Self::UnsupportedKind { .. } => 415,
        }
    }
}

/// One field that an apply would take from another manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyConflict {
    /// The manager that owns the field.
    pub manager: String,
    /// The field, in managed-fields path syntax (`.spec.replicas`,
    /// `.spec.template.spec.containers[name="app"].image`).
    pub field: String,
    /// The manager as kube-apiserver prints it: `"name"` for appliers,
    /// `"name" using apps/v1` for updaters.
    pub description: String,
}

impl ApplyConflict {
    /// The message of the matching `FieldManagerConflict` status cause.
    pub fn message(&self) -> String {
        format!("conflict with {}", self.description)
    }
}

/// Why a server-side apply was refused. [`ApplyError::status_code`] gives the HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers would change (409 Conflict, one cause per field
    /// with reason `FieldManagerConflict`).
    #[error("{}", conflict_message(.0))]
    Conflict(Vec<ApplyConflict>),
    /// No field manager was given (400).
    #[error("PATCH, fieldManager is required for apply requests")]
    MissingFieldManager,
    /// The apply configuration is not a valid object of its kind (400).
    #[error("{0}")]
    InvalidConfig(String),
}

impl ApplyError {
    /// The HTTP status code kube-apiserver uses for this error.
    pub fn status_code(&self) -> u16 {
        match self {
            Self::Conflict(_) => 409,
            Self::MissingFieldManager | Self::InvalidConfig(_) => 400,
        }
    }
}

/// The apiserver's summary of apply conflicts (`Apply failed with N conflicts: ...`).
fn conflict_message(conflicts: &[ApplyConflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.description, only.field
        );
    }
    let mut by_manager: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for c in conflicts {
        by_manager.entry(&c.description).or_default().push(&c.field);
    }
    let mut lines = Vec::new();
    for (manager, fields) in by_manager {
        lines.push(format!("conflicts with {manager}:"));
        lines.extend(fields.into_iter().map(|f| format!("- {f}")));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}
