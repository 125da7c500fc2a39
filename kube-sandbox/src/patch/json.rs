//! JSON merge patch (RFC 7386) and JSON patch (RFC 6902).

use super::*;

/// Applies an RFC 7386 JSON merge patch to `target` in place.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

/// Applies an RFC 6902 JSON patch (a JSON array of operations) to a copy of `target`.
/// A malformed patch is a [`PatchError::BadRequest`]; an operation that cannot be
/// applied, including a failed `test`, is a 422 error.
///
/// One departure from RFC 6902, as kube-apiserver's JSON patch (evanphx/json-patch v4,
/// `Patch.test`) has it: `test` of `null` passes when the key is absent from an existing
/// object (or the array element is `null`). Clients rely on it: kube-runtime's finalizer
/// helper adds the first finalizer with `test /metadata/finalizers null` then `add`.
pub fn json_patch(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    let ops: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|e| PatchError::BadRequest(format!("invalid JSON patch: {e}")))?;
    let mut doc = target.clone();
    for (index, op) in ops.iter().enumerate() {
        if let json_patch::PatchOperation::Test(test) = op
            && test.value.is_null()
            && null_test_passes(&doc, test.path.as_str())
        {
            continue;
        }
        json_patch::patch(&mut doc, std::slice::from_ref(op)).map_err(|e| match e.kind {
            json_patch::PatchErrorKind::TestFailed => PatchError::TestFailed {
                path: e.path.to_string(),
            },
            // The index in the whole patch, as the crate would name it.
            kind => PatchError::Unprocessable(format!(
                "operation '/{index}' failed at path '{}': {kind}",
                e.path
            )),
        })?;
    }
    Ok(doc)
}

/// Whether `test` of `null` at `path` passes on `doc` where RFC 6902 would fail it: the
/// parent exists and the key is absent from it (an object) or names a `null` element (an
/// array). A `null` value that is present compares equal anyway.
fn null_test_passes(doc: &Value, path: &str) -> bool {
    let Some((parent, key)) = path.rsplit_once('/') else {
        return false;
    };
    let key = key.replace("~1", "/").replace("~0", "~");
    match doc.pointer(parent) {
        Some(Value::Object(map)) => map.get(&key).is_none_or(Value::is_null),
        Some(Value::Array(items)) => key
            .parse::<usize>()
            .ok()
            .and_then(|i| items.get(i))
            .is_some_and(Value::is_null),
        _ => false,
    }
}
