//! Pod templates and pod specs (kubernetes `pkg/apis/core/validation/validation.go`,
//! `ValidatePodTemplateSpec`, `ValidatePodSpec`, `validateContainers`,
//! `validateInitContainers`, `validateContainerCommon`, `validateContainerPorts`,
//! `validateRestartPolicy`). Fields kube-apiserver defaults (restart, pull and termination
//! message policies, port protocols) are checked only when set: unset, they get valid defaults.

use serde_json::Value;

use super::{WorkloadError, label_errors, str_at};
use crate::validation::gocompat::go_quote;

const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// `validation.IsDNS1123Label`: every problem of `s`.
pub(super) fn dns1123_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let b = s.as_bytes();
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let shaped = match (b.first(), b.last()) {
        (Some(first), Some(last)) => ok(first) && ok(last) && b.iter().all(|c| ok(c) || *c == b'-'),
        _ => false,
    };
    if !shaped {
        errs.push(DNS1123_LABEL_ERR.to_string());
    }
    errs
}

/// `validation.IsValidPortName`.
fn port_name_errors(name: &str) -> Vec<&'static str> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push("must be no more than 15 characters");
    }
    if !name
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !name.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)");
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen");
    }
    errs
}

/// `validation.IsValidPortNum`'s message.
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// `ValidatePodTemplateSpec` at `path` (`spec.template`).
pub(super) fn pod_template_spec(template: &Value, path: &str) -> Vec<WorkloadError> {
    let mut errs = Vec::new();
    // Upstream's path for the template's labels is `<template>.labels`.
    label_errors(
        &mut errs,
        template.pointer("/metadata/labels"),
        &format!("{path}.labels"),
    );
    let empty = Value::Null;
    let spec = template.get("spec").unwrap_or(&empty);
    errs.extend(pod_spec(spec, &format!("{path}.spec")));
    if spec
        .get("ephemeralContainers")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        errs.push(WorkloadError::forbidden(
            format!("{path}.spec.ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

/// `ValidatePodSpec` at `path`: containers, init containers, restart policy, node selector and
/// `activeDeadlineSeconds`.
pub(super) fn pod_spec(spec: &Value, path: &str) -> Vec<WorkloadError> {
    let mut errs = Vec::new();
    let list = |key: &str| {
        spec.get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let containers = list("containers");
    let containers_path = format!("{path}.containers");
    if containers.is_empty() {
        errs.push(WorkloadError::required(containers_path, ""));
    } else {
        let mut names: Vec<&str> = Vec::new();
        for (i, c) in containers.iter().enumerate() {
            let at = format!("{containers_path}[{i}]");
            container_common(&mut errs, c, &at);
            let name = str_at(c, "name");
            if names.contains(&name) {
                errs.push(WorkloadError::duplicate(
                    format!("{at}.name"),
                    go_quote(name),
                ));
            } else {
                names.push(name);
            }
        }
    }
    // Init container names must differ from each other and from the regular containers'.
    let mut names: Vec<&str> = containers.iter().map(|c| str_at(c, "name")).collect();
    for (i, c) in list("initContainers").iter().enumerate() {
        let at = format!("{path}.initContainers[{i}]");
        container_common(&mut errs, c, &at);
        let name = str_at(c, "name");
        if names.contains(&name) {
            errs.push(WorkloadError::duplicate(
                format!("{at}.name"),
                go_quote(name),
            ));
        } else if !name.is_empty() {
            names.push(name);
        }
    }
    if let Some(policy) = spec.get("restartPolicy").and_then(Value::as_str) {
        match policy {
            // Empty is unset: defaulted to `Always`.
            "" | "Always" | "OnFailure" | "Never" => {}
            other => errs.push(WorkloadError::not_supported(
                format!("{path}.restartPolicy"),
                go_quote(other),
                &["Always", "OnFailure", "Never"],
            )),
        }
    }
    label_errors(
        &mut errs,
        spec.get("nodeSelector"),
        &format!("{path}.nodeSelector"),
    );
    if let Some(v) = spec
        .get("activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .filter(|v| *v < 1 || *v > i64::from(i32::MAX))
    {
        errs.push(WorkloadError::invalid(
            format!("{path}.activeDeadlineSeconds"),
            v.to_string(),
            "must be between 1 and 2147483647, inclusive",
        ));
    }
    errs
}

/// `validateContainerCommon`: name, image, termination message policy, ports, env names,
/// pull policy.
fn container_common(errs: &mut Vec<WorkloadError>, c: &Value, at: &str) {
    let name = str_at(c, "name");
    if name.is_empty() {
        errs.push(WorkloadError::required(format!("{at}.name"), ""));
    } else {
        for msg in dns1123_label_errors(name) {
            errs.push(WorkloadError::invalid(
                format!("{at}.name"),
                go_quote(name),
                msg,
            ));
        }
    }
    if str_at(c, "image").is_empty() {
        errs.push(WorkloadError::required(format!("{at}.image"), ""));
    }
    if let Some(policy) = c.get("terminationMessagePolicy").and_then(Value::as_str)
        && !matches!(policy, "" | "File" | "FallbackToLogsOnError")
    {
        errs.push(WorkloadError::not_supported(
            format!("{at}.terminationMessagePolicy"),
            go_quote(policy),
            &["File", "FallbackToLogsOnError"],
        ));
    }
    ports(errs, c, &format!("{at}.ports"));
    let env = c
        .get("env")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, var) in env.iter().enumerate() {
        if str_at(var, "name").is_empty() {
            errs.push(WorkloadError::required(format!("{at}.env[{i}].name"), ""));
        }
    }
    if let Some(policy) = c.get("imagePullPolicy").and_then(Value::as_str)
        && !matches!(policy, "" | "Always" | "IfNotPresent" | "Never")
    {
        errs.push(WorkloadError::not_supported(
            format!("{at}.imagePullPolicy"),
            go_quote(policy),
            &["Always", "IfNotPresent", "Never"],
        ));
    }
}

/// `validateContainerPorts`.
fn ports(errs: &mut Vec<WorkloadError>, c: &Value, path: &str) {
    let ports = c
        .get("ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut names: Vec<&str> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let name = str_at(port, "name");
        if !name.is_empty() {
            let msgs = port_name_errors(name);
            if !msgs.is_empty() {
                for msg in msgs {
                    errs.push(WorkloadError::invalid(
                        format!("{at}.name"),
                        go_quote(name),
                        msg,
                    ));
                }
            } else if names.contains(&name) {
                errs.push(WorkloadError::duplicate(
                    format!("{at}.name"),
                    go_quote(name),
                ));
            } else {
                names.push(name);
            }
        }
        match port
            .get("containerPort")
            .and_then(Value::as_i64)
            .unwrap_or(0)
        {
            0 => errs.push(WorkloadError::required(format!("{at}.containerPort"), "")),
            n if !(1..=65535).contains(&n) => errs.push(WorkloadError::invalid(
                format!("{at}.containerPort"),
                n.to_string(),
                PORT_RANGE,
            )),
            _ => {}
        }
        if let Some(n) = port
            .get("hostPort")
            .and_then(Value::as_i64)
            .filter(|n| *n != 0 && !(1..=65535).contains(n))
        {
            errs.push(WorkloadError::invalid(
                format!("{at}.hostPort"),
                n.to_string(),
                PORT_RANGE,
            ));
        }
        if let Some(protocol) = port.get("protocol").and_then(Value::as_str)
            && !matches!(protocol, "" | "SCTP" | "TCP" | "UDP")
        {
            errs.push(WorkloadError::not_supported(
                format!("{at}.protocol"),
                go_quote(protocol),
                &["SCTP", "TCP", "UDP"],
            ));
        }
    }
}

/// The template's restart policy after defaulting (`SetDefaults_PodSpec`: unset is `Always`).
pub(super) fn restart_policy(template: &Value) -> &str {
    match template
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("")
    {
        "" => "Always",
        other => other,
    }
}
