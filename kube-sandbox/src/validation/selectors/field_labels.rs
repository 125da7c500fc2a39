//! Per-resource field labels: which fields each resource selects on, and their values.

use serde_json::Value;

use crate::validation::gocompat::go_quote;

use super::fields::FieldSelector;
use super::requirements::SelectorError;

/// The extra field labels a resource supports, beyond `metadata.name` /
/// `metadata.namespace` (from the field label conversion functions).
pub(super) fn resource_fields(resource: &str) -> &'static [&'static str] {
    match resource {
        "pods" => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
            "spec.host",
        ],
        "events" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        "secrets" => &["type"],
        "nodes" => &["spec.unschedulable"],
        "namespaces" => &["status.phase"],
        "services" => &["spec.clusterIP", "spec.type"],
        "replicationcontrollers" => &["status.replicas"],
        "jobs" => &["status.successful"],
        "certificatesigningrequests" => &["spec.signerName"],
        _ => &[],
    }
}

/// Cluster-scoped resources whose conversion function rejects `metadata.namespace`.
pub(super) fn rejects_namespace_field(resource: &str) -> bool {
    matches!(
        resource,
        "nodes" | "namespaces" | "certificatesigningrequests"
    )
}

/// Whether `?fieldSelector=` may name `field` for `resource` (a plural such as `pods`).
/// Every resource supports `metadata.name`; all but nodes, namespaces and CSRs support
/// `metadata.namespace`; custom resources support only those two.
pub fn supported_field(resource: &str, field: &str) -> bool {
    match field {
        "metadata.name" => true,
        "metadata.namespace" => !rejects_namespace_field(resource),
        other => resource_fields(resource).contains(&other),
    }
}

/// The message kube-apiserver gives (with 400) for an unsupported field label.
pub fn unsupported_field_message(resource: &str, field: &str) -> String {
    match resource {
        "pods"
        | "events"
        | "secrets"
        | "nodes"
        | "namespaces"
        | "services"
        | "replicationcontrollers" => format!("field label not supported: {field}"),
        "jobs" => format!(
            "field label {} not supported for batchv1.Job",
            go_quote(field)
        ),
        _ => format!(
            "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
            go_quote(field)
        ),
    }
}

/// Checks every field of `selector` against [`supported_field`].
pub fn validate_fields(resource: &str, selector: &FieldSelector) -> Result<(), SelectorError> {
    match selector.fields().find(|f| !supported_field(resource, f)) {
        Some(field) => Err(SelectorError::UnsupportedField(unsupported_field_message(
            resource, field,
        ))),
        None => Ok(()),
    }
}

pub(super) fn str_at(obj: &Value, path: &[&str]) -> Option<String> {
    let mut cur = obj;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str().map(str::to_string)
}

pub(super) fn bool_at(obj: &Value, path: &[&str]) -> String {
    let mut cur = Some(obj);
    for p in path {
        cur = cur.and_then(|c| c.get(p));
    }
    cur.and_then(Value::as_bool).unwrap_or(false).to_string()
}

pub(super) fn int_at(obj: &Value, path: &[&str]) -> String {
    let mut cur = Some(obj);
    for p in path {
        cur = cur.and_then(|c| c.get(p));
    }
    cur.and_then(Value::as_i64).unwrap_or(0).to_string()
}

/// The value of a field label of `obj` (a `resource` object as JSON), as the
/// registry's selectable field set computes it; `None` when the object lacks it
/// or the field is not supported (both match as the empty string).
pub fn field_value(resource: &str, obj: &Value, field: &str) -> Option<String> {
    if !supported_field(resource, field) {
        return None;
    }
    match field {
        "metadata.name" => return str_at(obj, &["metadata", "name"]),
        "metadata.namespace" => return str_at(obj, &["metadata", "namespace"]),
        _ => {}
    }
    match (resource, field) {
        ("pods", "spec.nodeName" | "spec.host") => str_at(obj, &["spec", "nodeName"]),
        ("pods", "spec.hostNetwork") => Some(bool_at(obj, &["spec", "hostNetwork"])),
        ("pods", "status.podIP") => obj
            .pointer("/status/podIPs/0/ip")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| str_at(obj, &["status", "podIP"])),
        // Accepted by the conversion function but absent from the selectable set.
        ("pods", "status.podIPs") => None,
        ("events", "source") => str_at(obj, &["source", "component"])
            .filter(|s| !s.is_empty())
            .or_else(|| str_at(obj, &["reportingComponent"])),
        ("nodes", "spec.unschedulable") => Some(bool_at(obj, &["spec", "unschedulable"])),
        ("replicationcontrollers", "status.replicas") => Some(int_at(obj, &["status", "replicas"])),
        ("jobs", "status.successful") => Some(int_at(obj, &["status", "succeeded"])),
        _ => {
            let path: Vec<&str> = field.split('.').collect();
            str_at(obj, &path)
        }
    }
}
