//! JSON merge patch (RFC 7386) and JSON patch (RFC 6902).

use super::*;

/// Applies an RFC 7386 JSON merge patch to `target` in place.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

/// Applies an RFC 6902 JSON patch (a JSON array of operations) to a copy of `target`.
/// A malformed patch is a [`PatchError::BadRequest`]; an operation that cannot be
/// applied, including a failed `test`, is a 422 error.
pub fn json_patch(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    let ops: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|e| PatchError::BadRequest(format!("invalid JSON patch: {e}")))?;
    let mut doc = target.clone();
    json_patch::patch(&mut doc, &ops).map_err(|e| match e.kind {
        json_patch::PatchErrorKind::TestFailed => PatchError::TestFailed {
            path: e.path.to_string(),
        },
        _ => PatchError::Unprocessable(e.to_string()),
    })?;
    Ok(doc)
}
