//! Field errors as apimachinery reports them (`field.Error`), and Go's formatting of bad values.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::validation::gocompat::{go_format_float, go_quote};

/// Field name the apiserver prints for an error without a path (a nil `field.Path`).
pub const NIL_FIELD: &str = "<nil>";

/// The kind of a field error (apimachinery `field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// `FieldValueInvalid`.
    Invalid,
    /// `FieldValueRequired`.
    Required,
    /// `FieldValueNotSupported`.
    NotSupported,
    /// `FieldValueTooLong`.
    TooLong,
    /// `FieldValueTooMany`.
    TooMany,
    /// `FieldValueDuplicate`.
    Duplicate,
    /// `FieldValueTypeInvalid`.
    TypeInvalid,
    /// `FieldValueForbidden`.
    Forbidden,
}

impl FieldErrorKind {
    /// The Status cause reason.
    pub fn reason(self) -> &'static str {
        match self {
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::NotSupported => "FieldValueNotSupported",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::TooMany => "FieldValueTooMany",
            FieldErrorKind::Duplicate => "FieldValueDuplicate",
            FieldErrorKind::TypeInvalid => "FieldValueTypeInvalid",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
        }
    }

    /// The human label apimachinery prints ("Invalid value", "Required value", ...).
    pub fn label(self) -> &'static str {
        match self {
            FieldErrorKind::Invalid | FieldErrorKind::TypeInvalid => "Invalid value",
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::TooMany => "Too many",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::Forbidden => "Forbidden",
        }
    }
}

/// A field-level validation error, as apimachinery's `field.Error`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.to_string_k8s())]
pub struct FieldError {
    /// What kind of error.
    pub kind: FieldErrorKind,
    /// The field path, e.g. `spec.timeWindows[0].start` (`<nil>` for the object itself).
    pub field: String,
    /// The detail, e.g. `spec.clusterID in body should match '^[a-z]'`; may be empty.
    pub message: String,
    /// The offending value, printed for every kind but Required, Forbidden and TooLong.
    pub bad_value: Option<Value>,
}

impl FieldError {
    fn new(
        kind: FieldErrorKind,
        field: impl Into<String>,
        bad_value: Option<Value>,
        message: impl Into<String>,
    ) -> Self {
        FieldError {
            kind,
            field: field.into(),
            message: message.into(),
            bad_value,
        }
    }

    /// `field.Invalid`.
    pub fn invalid(
        field: impl Into<String>,
        bad_value: Option<Value>,
        message: impl Into<String>,
    ) -> Self {
        Self::new(FieldErrorKind::Invalid, field, bad_value, message)
    }

    /// `field.TypeInvalid`.
    pub fn type_invalid(
        field: impl Into<String>,
        bad_value: Option<Value>,
        message: impl Into<String>,
    ) -> Self {
        Self::new(FieldErrorKind::TypeInvalid, field, bad_value, message)
    }

    /// `field.Required`.
    pub fn required(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Required, field, None, message)
    }

    /// `field.Forbidden`.
    pub fn forbidden(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Forbidden, field, None, message)
    }

    /// `field.Duplicate`.
    pub fn duplicate(field: impl Into<String>, bad_value: Value) -> Self {
        Self::new(FieldErrorKind::Duplicate, field, Some(bad_value), "")
    }

    /// `field.NotSupported` with the list of supported values.
    pub fn not_supported(field: impl Into<String>, bad_value: Value, supported: &[String]) -> Self {
        let message = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(
            FieldErrorKind::NotSupported,
            field,
            Some(bad_value),
            message,
        )
    }

    /// `field.TooLongMaxLength`.
    pub fn too_long(field: impl Into<String>, bad_value: Value, max: i64) -> Self {
        Self::new(
            FieldErrorKind::TooLong,
            field,
            Some(bad_value),
            format!("may not be longer than {max}"),
        )
    }

    /// `field.TooMany`.
    pub fn too_many(field: impl Into<String>, actual: usize, max: i64) -> Self {
        Self::new(
            FieldErrorKind::TooMany,
            field,
            Some(Value::from(actual)),
            format!("must have at most {max} items"),
        )
    }

    /// The Status cause reason (`FieldValueInvalid`, ...).
    pub fn reason(&self) -> &'static str {
        self.kind.reason()
    }

    /// The message without the field (`ErrorBody`), used as the Status cause message.
    pub fn error_body(&self) -> String {
        let mut body = self.kind.label().to_string();
        if !matches!(
            self.kind,
            FieldErrorKind::Required | FieldErrorKind::Forbidden | FieldErrorKind::TooLong
        ) {
            body.push_str(": ");
            body.push_str(&go_value(self.bad_value.as_ref()));
        }
        if !self.message.is_empty() {
            body.push_str(": ");
            body.push_str(&self.message);
        }
        body
    }

    /// The apiserver's rendering, e.g.
    /// `spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`.
    pub fn to_string_k8s(&self) -> String {
        format!("{}: {}", self.field, self.error_body())
    }

    /// Puts `prefix` in front of the field (`<nil>` becomes the prefix itself), e.g. to turn
    /// [`validate_crd_schema`](super::validate_crd_schema) paths into `spec.versions[0].schema.openAPIV3Schema....`.
    pub fn with_prefix(mut self, prefix: &str) -> Self {
        self.field = if self.field == NIL_FIELD || self.field.is_empty() {
            prefix.to_string()
        } else if prefix.is_empty() {
            self.field
        } else if self.field.starts_with('[') {
            format!("{prefix}{}", self.field)
        } else {
            format!("{prefix}.{}", self.field)
        };
        self
    }
}

/// Formats a bad value as Go's `ErrorBody` does: strings quoted, numbers and bools plain, nil as
/// `"null"`, maps and slices in `%#v` syntax.
fn go_value(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => go_quote("null"),
        Some(Value::String(s)) => go_quote(s),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => go_number(n),
        Some(other) => go_sharp_v(other),
    }
}

fn go_number(n: &serde_json::Number) -> String {
    if n.is_f64() {
        go_format_float(n.as_f64().unwrap_or(f64::NAN))
    } else {
        n.to_string()
    }
}

/// Go's `%#v` of an unstructured value.
fn go_sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            let s = go_number(n);
            if n.is_f64() && !s.contains(['.', 'e', 'I', 'N']) {
                format!("{s}.0")
            } else {
                s
            }
        }
        Value::String(s) => go_quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", parts.join(", "))
        }
        Value::Object(m) => {
            let sorted: BTreeMap<&String, &Value> = m.iter().collect();
            let parts: Vec<String> = sorted
                .iter()
                .map(|(k, v)| format!("{}:{}", go_quote(k), go_sharp_v(v)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}
