//! Temporary: replaced by the full patch engine.
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug)]
pub struct ApplyConflict {
    pub manager: String,
    pub field: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("conflicts")]
    Conflict(Vec<ApplyConflict>),
    #[error("{0}")]
    Invalid(String),
}

pub fn merge_patch(target: &mut Value, patch: &Value) {
    if let Value::Object(p) = patch {
        if !target.is_object() {
            *target = Value::Object(Default::default());
        }
        if let Value::Object(t) = target {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
    } else {
        *target = patch.clone();
    }
}

pub fn json_patch(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    let p: json_patch::Patch = serde_json::from_value(patch.clone()).map_err(|e| PatchError::Invalid(e.to_string()))?;
    let mut t = target.clone();
    json_patch::patch(&mut t, &p).map_err(|e| PatchError::Invalid(e.to_string()))?;
    Ok(t)
}

pub fn strategic_merge_patch(original: &Value, patch: &Value, _kind: &str) -> Result<Value, PatchError> {
    let mut t = original.clone();
    merge_patch(&mut t, patch);
    Ok(t)
}

pub fn supports_strategic_merge(kind: &str) -> bool {
    matches!(kind, "Pod" | "Node" | "ConfigMap" | "Secret" | "Service" | "Deployment")
}

pub fn server_side_apply(existing: Option<&Value>, applied: &Value, _kind: &str, _manager: &str, _force: bool, _now: &str) -> Result<Value, ApplyError> {
    let mut t = existing.cloned().unwrap_or(Value::Object(Default::default()));
    merge_patch(&mut t, applied);
    Ok(t)
}

pub fn record_update(_old: Option<&Value>, _new: &mut Value, _manager: &str, _api_version: &str, _now: &str) {}
