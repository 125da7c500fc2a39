//! Temporary: replaced by the full schema engine.
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn reason(&self) -> &'static str {
        "FieldValueInvalid"
    }
    pub fn to_string_k8s(&self) -> String {
        format!("{}: {}", self.field, self.message)
    }
}

pub fn validate_crd_schema(_schema: &Value) -> Vec<FieldError> {
    Vec::new()
}
pub fn default_object(_schema: &Value, _obj: &mut Value) {}
pub fn prune_unknown(_schema: &Value, _obj: &mut Value) -> Vec<String> {
    Vec::new()
}
pub fn validate_object(_schema: &Value, _obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    Vec::new()
}
