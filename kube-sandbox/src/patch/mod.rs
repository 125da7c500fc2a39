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

use serde_json::{Map, Value};

mod apply;
mod errors;
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
pub use errors::{ApplyConflict, ApplyError, PatchError};
use fieldset::*;
pub use json::*;
use managed_fields::*;
pub use strategic::*;
pub use strategy::*;
use walk::*;
