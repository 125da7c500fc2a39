//! What a write asks for: who makes it (the field manager) and whether it is a dry run, the
//! body type of a PATCH, the options of a DELETE, and what a DELETE did. Used by the API
//! semantics (`api`), the subresources and the cluster state alike, so it has a home of its
//! own.

use crate::apiserver::error::ApiError;
use crate::apiserver::store::Stored;
use serde_json::Value;
use std::sync::Arc;

/// Who is asking and how.
#[derive(Clone, Debug, Default)]
pub struct WriteContext {
    /// `fieldManager`, or a name derived from the user agent.
    pub field_manager: String,
    /// `dryRun=All`: validate and answer, store nothing.
    pub dry_run: bool,
}

impl WriteContext {
    /// A context for writes the server itself makes (controllers, kubelet).
    pub fn system(manager: &str) -> Self {
        WriteContext {
            field_manager: manager.to_string(),
            dry_run: false,
        }
    }
}

/// The body types PATCH accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json`
    Json,
    /// `application/merge-patch+json`
    Merge,
    /// `application/strategic-merge-patch+json`
    StrategicMerge,
    /// `application/apply-patch+yaml` (server-side apply)
    Apply {
        /// `force=true`
        force: bool,
    },
}

/// Options of a DELETE.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// `gracePeriodSeconds`
    pub grace_period_seconds: Option<i64>,
    /// `propagationPolicy`: Orphan, Background or Foreground.
    pub propagation_policy: Option<String>,
    /// `preconditions.uid`
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`
    pub precondition_rv: Option<String>,
    /// `dryRun=All`
    pub dry_run: bool,
    /// The deprecated `orphanDependents`, as sent.
    pub orphan_dependents: Option<bool>,
}

impl DeleteOptions {
    /// Reads a DeleteOptions body (JSON); an empty body means defaults.
    pub fn from_body(body: &[u8]) -> Result<DeleteOptions, ApiError> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(DeleteOptions::default());
        }
        let v: Value = serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?;
        let mut opts = DeleteOptions {
            grace_period_seconds: v.get("gracePeriodSeconds").and_then(Value::as_i64),
            propagation_policy: v
                .get("propagationPolicy")
                .and_then(Value::as_str)
                .map(str::to_string),
            precondition_uid: v
                .pointer("/preconditions/uid")
                .and_then(Value::as_str)
                .map(str::to_string),
            precondition_rv: v
                .pointer("/preconditions/resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_string),
            dry_run: v
                .get("dryRun")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty()),
            orphan_dependents: v.get("orphanDependents").and_then(Value::as_bool),
        };
        if v.get("orphanDependents").and_then(Value::as_bool) == Some(true)
            && opts.propagation_policy.is_none()
        {
            opts.propagation_policy = Some("Orphan".into());
        }
        Ok(opts)
    }
}

/// The result of a DELETE: the object, and whether it is gone already or only marked.
pub struct Deleted {
    /// The object as it was removed, or as it is now with its deletionTimestamp.
    pub object: Arc<Stored>,
    /// False when finalizers or a grace period keep it around for now.
    pub removed: bool,
}
