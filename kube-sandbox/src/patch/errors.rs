//! The errors of patching and of server-side apply (conflicts with other field managers).

use std::collections::BTreeMap;

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
