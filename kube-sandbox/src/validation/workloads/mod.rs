//! The built-in workload kinds (Pod, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job,
//! CronJob) as kube-apiserver's registry strategies validate them on create and update: the
//! rules of kubernetes `pkg/apis/apps/validation/validation.go`,
//! `pkg/apis/batch/validation/validation.go` and the pod-template part of
//! `pkg/apis/core/validation/validation.go` that users actually hit (numbers, required fields,
//! selectors that do not match their template, restart policies, container names, images and
//! ports), in upstream's order and with its messages.
//!
//! Pure functions on the JSON object after the kind's defaults are applied, as upstream
//! validates the defaulted internal object; `metadata` is left to the caller, which reports it
//! first as `ValidateObjectMeta` does.

mod apps;
mod batch;
mod pod;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use crate::validation::gocompat::go_quote;
use crate::validation::labels::{label_key_errors, label_value_errors};
use crate::validation::schema::FieldErrorKind;
use crate::validation::selectors::LabelSelector;

/// One field error, as apimachinery's `field.Error` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadError {
    /// The error type (its reason and label).
    pub kind: FieldErrorKind,
    /// The path, e.g. `spec.template.spec.containers[0].image`.
    pub field: String,
    /// The bad value as Go renders it in `ErrorBody` (quoted string, number, or JSON); `None`
    /// for the types that print no value (Required, Forbidden).
    pub value: Option<String>,
    /// The detail after the value; may be empty.
    pub detail: String,
}

impl WorkloadError {
    /// `field.Invalid`.
    fn invalid(field: impl Into<String>, value: String, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorKind::Invalid,
            field: field.into(),
            value: Some(value),
            detail: detail.into(),
        }
    }

    /// `field.Required`.
    fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorKind::Required,
            field: field.into(),
            value: None,
            detail: detail.into(),
        }
    }

    /// `field.Forbidden`.
    fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorKind::Forbidden,
            field: field.into(),
            value: None,
            detail: detail.into(),
        }
    }

    /// `field.Duplicate`.
    fn duplicate(field: impl Into<String>, value: String) -> Self {
        Self {
            kind: FieldErrorKind::Duplicate,
            field: field.into(),
            value: Some(value),
            detail: String::new(),
        }
    }

    /// `field.NotSupported`: `supported values: "A", "B"`.
    fn not_supported(field: impl Into<String>, value: String, supported: &[&str]) -> Self {
        let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        Self {
            kind: FieldErrorKind::NotSupported,
            field: field.into(),
            value: Some(value),
            detail: format!("supported values: {}", quoted.join(", ")),
        }
    }

    /// The message without the field (`field.Error.ErrorBody`), as the Status cause carries it.
    pub fn error_body(&self) -> String {
        let mut body = self.kind.label().to_string();
        if let Some(value) = &self.value {
            body.push_str(": ");
            body.push_str(value);
        }
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        body
    }
}

/// Upstream's `IsNegativeErrorMsg`.
const NEGATIVE: &str = "must be greater than or equal to 0";

/// Which kinds are validated here.
pub fn validates(group: &str, plural: &str) -> bool {
    matches!(
        (group, plural),
        ("", "pods")
            | (
                "apps",
                "deployments" | "replicasets" | "statefulsets" | "daemonsets"
            )
            | ("batch", "jobs" | "cronjobs")
    )
}

/// Every error of the (defaulted) workload `obj` of `group`/`plural`, `old` being the stored
/// object on update. Pods are validated on create only: what an update of a pod may change
/// is checked elsewhere.
pub fn validate(group: &str, plural: &str, obj: &Value, old: Option<&Value>) -> Vec<WorkloadError> {
    let empty = Value::Object(Map::new());
    let spec = obj.get("spec").filter(|s| s.is_object()).unwrap_or(&empty);
    let old_spec = old.map(|o| o.get("spec").filter(|s| s.is_object()).unwrap_or(&empty));
    match (group, plural) {
        ("", "pods") if old.is_none() => pod::pod_spec(spec, "spec"),
        ("apps", "deployments") => apps::deployment(spec, old_spec),
        ("apps", "replicasets") => apps::replica_set(spec, old_spec),
        ("apps", "statefulsets") => apps::stateful_set(spec, old_spec),
        ("apps", "daemonsets") => apps::daemon_set(spec, old_spec),
        ("batch", "jobs") => batch::job(spec),
        ("batch", "cronjobs") => batch::cron_job(obj, spec, old_spec),
        _ => Vec::new(),
    }
}

// ---- values as Go's `ErrorBody` prints them ----

/// A JSON value as Go's `json.Marshal` writes it for a map (keys sorted).
fn go_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::String((*k).clone()), go_json(&m[*k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_json).collect();
            format!("[{}]", parts.join(","))
        }
        other => other.to_string(),
    }
}

/// A scalar bad value: strings quoted (`%q`), numbers and bools plain, else as JSON.
fn go_scalar(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        other => go_json(other),
    }
}

/// A `*metav1.LabelSelector` as `json.Marshal` writes it: fields in struct order, empty ones
/// left out (`omitempty`).
fn go_selector(selector: &Value) -> String {
    let Some(sel) = selector.as_object() else {
        return "null".into();
    };
    let mut parts = Vec::new();
    if let Some(labels) = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
    {
        parts.push(format!(
            "\"matchLabels\":{}",
            go_json(&Value::Object(labels.clone()))
        ));
    }
    if let Some(exprs) = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
    {
        let rendered: Vec<String> = exprs
            .iter()
            .map(|e| {
                let s = |k: &str| {
                    Value::String(e.get(k).and_then(Value::as_str).unwrap_or("").into()).to_string()
                };
                let mut out = format!("{{\"key\":{},\"operator\":{}", s("key"), s("operator"));
                if let Some(values) = e
                    .get("values")
                    .and_then(Value::as_array)
                    .filter(|a| !a.is_empty())
                {
                    out.push_str(&format!(
                        ",\"values\":{}",
                        go_json(&Value::Array(values.clone()))
                    ));
                }
                out.push('}');
                out
            })
            .collect();
        parts.push(format!("\"matchExpressions\":[{}]", rendered.join(",")));
    }
    format!("{{{}}}", parts.join(","))
}

/// A `map[string]string` of labels (`null` when absent).
fn go_labels(labels: Option<&Value>) -> String {
    match labels {
        Some(v @ Value::Object(_)) => go_json(v),
        _ => "null".into(),
    }
}

// ---- shared rules ----

/// An integer field, if set (and not `null`).
fn int_at(obj: &Value, key: &str) -> Option<i64> {
    obj.get(key).and_then(Value::as_i64)
}

/// `ValidateNonnegativeField` (apimachinery `pkg/api/validation/generic.go`).
fn nonnegative(errs: &mut Vec<WorkloadError>, obj: &Value, key: &str, path: &str) {
    if let Some(v) = int_at(obj, key).filter(|v| *v < 0) {
        errs.push(WorkloadError::invalid(
            format!("{path}.{key}"),
            v.to_string(),
            NEGATIVE,
        ));
    }
}

/// `ValidateLabels` (apimachinery `pkg/apis/meta/v1/validation`): every error on `path`.
fn label_errors(errs: &mut Vec<WorkloadError>, labels: Option<&Value>, path: &str) {
    let Some(labels) = labels.and_then(Value::as_object) else {
        return;
    };
    let mut keys: Vec<&String> = labels.keys().collect();
    keys.sort();
    for key in keys {
        for msg in label_key_errors(key) {
            errs.push(WorkloadError::invalid(path, go_quote(key), msg));
        }
        if let Some(value) = labels[key].as_str() {
            for msg in label_value_errors(value) {
                errs.push(WorkloadError::invalid(path, go_quote(value), msg));
            }
        }
    }
}

/// `ValidateLabelSelector` with `AllowInvalidLabelValueInSelector: false` (apimachinery
/// `pkg/apis/meta/v1/validation/validation.go`, `ValidateLabelSelector` and
/// `ValidateLabelSelectorRequirement`).
fn label_selector_errors(errs: &mut Vec<WorkloadError>, selector: &Value, path: &str) {
    label_errors(
        errs,
        selector.get("matchLabels"),
        &format!("{path}.matchLabels"),
    );
    let exprs = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, expr) in exprs.iter().enumerate() {
        let at = format!("{path}.matchExpressions[{i}]");
        let values = expr
            .get("values")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let operator = expr.get("operator").and_then(Value::as_str).unwrap_or("");
        match operator {
            "In" | "NotIn" if values.is_empty() => errs.push(WorkloadError::required(
                format!("{at}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "In" | "NotIn" => {}
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(WorkloadError::forbidden(
                format!("{at}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "Exists" | "DoesNotExist" => {}
            other => errs.push(WorkloadError::invalid(
                format!("{at}.operator"),
                go_quote(other),
                "not a valid selector operator",
            )),
        }
        let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
        for msg in label_key_errors(key) {
            errs.push(WorkloadError::invalid(
                format!("{at}.key"),
                go_quote(key),
                msg,
            ));
        }
        for (j, value) in values.iter().enumerate() {
            let value = value.as_str().unwrap_or("");
            for msg in label_value_errors(value) {
                errs.push(WorkloadError::invalid(
                    format!("{at}.values[{j}]"),
                    go_quote(value),
                    msg,
                ));
            }
        }
    }
}

/// The selector's rules shared by Deployments, ReplicaSets and StatefulSets
/// (`ValidateDeploymentSpec`, `ValidateReplicaSetSpec`, `ValidateStatefulSetSpec`): required,
/// valid and non-empty (`empty selector is invalid for <what>`).
fn required_selector(errs: &mut Vec<WorkloadError>, spec: &Value, what: &str) {
    match spec.get("selector").filter(|s| !s.is_null()) {
        None => errs.push(WorkloadError::required("spec.selector", "")),
        Some(selector) => {
            label_selector_errors(errs, selector, "spec.selector");
            if selector_is_empty(selector) {
                errs.push(WorkloadError::invalid(
                    "spec.selector",
                    go_selector(selector),
                    format!("empty selector is invalid for {what}"),
                ));
            }
        }
    }
}

/// Whether a selector has neither `matchLabels` nor `matchExpressions`.
fn selector_is_empty(selector: &Value) -> bool {
    let len = |k: &str| {
        selector
            .get(k)
            .map(|v| match v {
                Value::Object(m) => m.len(),
                Value::Array(a) => a.len(),
                _ => 0,
            })
            .unwrap_or(0)
    };
    len("matchLabels") + len("matchExpressions") == 0
}

/// `metav1.LabelSelectorAsSelector`: `None` when the selector does not parse.
fn as_selector(selector: Option<&Value>) -> Option<LabelSelector> {
    LabelSelector::from_metav1(selector.unwrap_or(&Value::Null)).ok()
}

/// The template's `metadata.labels` check: a selector that selects something must select
/// the template's labels (`ValidatePodTemplateSpecForReplicaSet`,
/// `ValidatePodTemplateSpecForStatefulSet`; `ValidateDaemonSetSpec` and `ValidateJobSpec`
/// check an empty selector too, which matches everything).
fn template_labels_match(
    errs: &mut Vec<WorkloadError>,
    selector: &LabelSelector,
    template: &Value,
    template_path: &str,
) {
    let labels = template.pointer("/metadata/labels");
    if !selector.matches(labels.and_then(Value::as_object)) {
        errs.push(WorkloadError::invalid(
            format!("{template_path}.metadata.labels"),
            go_labels(labels),
            "`selector` does not match template `labels`",
        ));
    }
}

/// `ValidateImmutableField` of `spec.selector` on update.
fn immutable_selector(errs: &mut Vec<WorkloadError>, spec: &Value, old_spec: Option<&Value>) {
    let Some(old_spec) = old_spec else {
        return;
    };
    // Compared as rendered: `Semantic.DeepEqual` holds empty and missing maps equal.
    let render = |s: &Value| {
        s.get("selector")
            .filter(|v| !v.is_null())
            .map(go_selector)
            .unwrap_or_else(|| "null".into())
    };
    let new = render(spec);
    if new != render(old_spec) {
        errs.push(WorkloadError::invalid(
            "spec.selector",
            new,
            "field is immutable",
        ));
    }
}

/// A string field, `""` when unset.
fn str_at<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}
