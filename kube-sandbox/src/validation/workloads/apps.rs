//! `apps/v1` kinds (kubernetes `pkg/apis/apps/validation/validation.go`).

use serde_json::Value;

use super::pod::{dns1123_label_errors, pod_template_spec, restart_policy};
use super::{
    NEGATIVE, WorkloadError, as_selector, go_scalar, go_selector, immutable_selector, int_at,
    label_errors, label_selector_errors, nonnegative, required_selector, selector_is_empty, str_at,
    template_labels_match,
};
use crate::validation::gocompat::go_quote;

const PERCENT_ERR: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

fn template(spec: &Value) -> &Value {
    spec.get("template").unwrap_or(&Value::Null)
}

/// `ValidateDeploymentSpec`, then (on update) the immutable selector of
/// `ValidateDeploymentUpdate`.
pub(super) fn deployment(spec: &Value, old_spec: Option<&Value>) -> Vec<WorkloadError> {
    let mut errs = Vec::new();
    nonnegative(&mut errs, spec, "replicas", "spec");
    required_selector(&mut errs, spec, "deployment");
    replica_set_template(&mut errs, spec);
    deployment_strategy(&mut errs, spec.get("strategy").unwrap_or(&Value::Null));
    nonnegative(&mut errs, spec, "minReadySeconds", "spec");
    nonnegative(&mut errs, spec, "revisionHistoryLimit", "spec");
    if let Some(deadline) = int_at(spec, "progressDeadlineSeconds") {
        nonnegative(&mut errs, spec, "progressDeadlineSeconds", "spec");
        if deadline <= int_at(spec, "minReadySeconds").unwrap_or(0) {
            errs.push(WorkloadError::invalid(
                "spec.progressDeadlineSeconds",
                deadline.to_string(),
                "must be greater than minReadySeconds",
            ));
        }
    }
    immutable_selector(&mut errs, spec, old_spec);
    errs
}

/// `ValidateReplicaSetSpec`, then (on update) the immutable selector of
/// `ValidateReplicaSetUpdate`.
pub(super) fn replica_set(spec: &Value, old_spec: Option<&Value>) -> Vec<WorkloadError> {
    let mut errs = Vec::new();
    nonnegative(&mut errs, spec, "replicas", "spec");
    nonnegative(&mut errs, spec, "minReadySeconds", "spec");
    // Upstream names Deployments in this ReplicaSet message too.
    required_selector(&mut errs, spec, "deployment");
    replica_set_template(&mut errs, spec);
    immutable_selector(&mut errs, spec, old_spec);
    errs
}

/// The selector parse and `ValidatePodTemplateSpecForReplicaSet` (Deployments and
/// ReplicaSets).
fn replica_set_template(errs: &mut Vec<WorkloadError>, spec: &Value) {
    let Some(selector) = as_selector(spec.get("selector")) else {
        errs.push(WorkloadError::invalid(
            "spec.selector",
            go_selector(spec.get("selector").unwrap_or(&Value::Null)),
            "invalid label selector",
        ));
        return;
    };
    let template = template(spec);
    if !selector.is_empty() {
        template_labels_match(errs, &selector, template, "spec.template");
    }
    errs.extend(pod_template_spec(template, "spec.template"));
    always_restart_only(errs, template, "ReplicaSet");
}

/// The restart policy and `activeDeadlineSeconds` rules of the kinds whose pods run for good.
fn always_restart_only(errs: &mut Vec<WorkloadError>, template: &Value, kind: &str) {
    let policy = restart_policy(template);
    if policy != "Always" {
        errs.push(WorkloadError::not_supported(
            "spec.template.spec.restartPolicy",
            go_quote(policy),
            &["Always"],
        ));
    }
    if template
        .pointer("/spec/activeDeadlineSeconds")
        .is_some_and(|v| !v.is_null())
    {
        errs.push(WorkloadError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
}

/// An `intstr.IntOrString` field (`None` when unset).
fn int_or_string(obj: &Value, key: &str) -> Option<Value> {
    obj.get(key).filter(|v| !v.is_null()).cloned()
}

/// `getPercentValue`: the number of a valid percent string.
fn percent_value(v: &Value) -> Option<i64> {
    let s = v.as_str()?;
    let digits = s.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `getIntOrPercentValue`: the percent, the integer, or `IntValue` of another string (its
/// `Atoi`, 0 when not a number).
fn int_or_percent_value(v: &Value) -> i64 {
    percent_value(v)
        .or_else(|| v.as_i64())
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0)
}

/// `ValidatePositiveIntOrPercent`.
fn positive_int_or_percent(errs: &mut Vec<WorkloadError>, v: &Value, path: &str) {
    match v {
        Value::String(s) if percent_value(v).is_none() => {
            errs.push(WorkloadError::invalid(path, go_quote(s), PERCENT_ERR));
        }
        Value::Number(_) => {
            if let Some(n) = v.as_i64().filter(|n| *n < 0) {
                errs.push(WorkloadError::invalid(path, n.to_string(), NEGATIVE));
            }
        }
        _ => {}
    }
}

/// `IsNotMoreThan100Percent`.
fn not_more_than_100_percent(errs: &mut Vec<WorkloadError>, v: &Value, path: &str) {
    if percent_value(v).is_some_and(|p| p > 100) {
        errs.push(WorkloadError::invalid(
            path,
            go_scalar(v),
            "must not be greater than 100%",
        ));
    }
}

/// An internal strategy struct (no JSON tags, so Go's field names) as `ErrorBody` prints it.
fn internal_strategy(strategy: &Value, rolling: Option<String>) -> String {
    format!(
        "{{\"Type\":{},\"RollingUpdate\":{}}}",
        Value::String(str_at(strategy, "type").into()),
        rolling.unwrap_or_else(|| "null".into())
    )
}

/// An `IntOrString` as `json.Marshal` writes it, `default` when unset (only the RollingUpdate
/// type gets defaults: under another type an unset bound is the zero `IntOrString`, `0`).
fn render_int_or_string(v: Option<&Value>, default: &str) -> String {
    v.map(go_scalar).unwrap_or_else(|| default.to_string())
}

/// `ValidateDeploymentStrategy` and `ValidateRollingUpdateDeployment`.
fn deployment_strategy(errs: &mut Vec<WorkloadError>, strategy: &Value) {
    let rolling = strategy.get("rollingUpdate").filter(|v| !v.is_null());
    match str_at(strategy, "type") {
        "Recreate" => {
            if rolling.is_some() {
                errs.push(WorkloadError::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        // Unset is defaulted to RollingUpdate, with 25% for both bounds.
        "" | "RollingUpdate" => {
            let Some(rolling) = rolling else { return };
            let path = "spec.strategy.rollingUpdate";
            let pct = Value::String("25%".into());
            let unavailable = int_or_string(rolling, "maxUnavailable").unwrap_or(pct.clone());
            let surge = int_or_string(rolling, "maxSurge").unwrap_or(pct);
            positive_int_or_percent(errs, &unavailable, &format!("{path}.maxUnavailable"));
            positive_int_or_percent(errs, &surge, &format!("{path}.maxSurge"));
            if int_or_percent_value(&unavailable) == 0 && int_or_percent_value(&surge) == 0 {
                errs.push(WorkloadError::invalid(
                    format!("{path}.maxUnavailable"),
                    go_scalar(&unavailable),
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
            not_more_than_100_percent(errs, &unavailable, &format!("{path}.maxUnavailable"));
        }
        _ => {
            let rendered = rolling.map(|r| {
                format!(
                    "{{\"MaxUnavailable\":{},\"MaxSurge\":{}}}",
                    render_int_or_string(r.get("maxUnavailable"), "0"),
                    render_int_or_string(r.get("maxSurge"), "0")
                )
            });
            errs.push(WorkloadError::not_supported(
                "spec.strategy",
                internal_strategy(strategy, rendered),
                &["Recreate", "RollingUpdate"],
            ));
        }
    }
}

/// `ValidateStatefulSetSpec` (and, on update, its tolerance of a stored template that was
/// already invalid, and the forbidden spec changes of `ValidateStatefulSetUpdate`).
pub(super) fn stateful_set(spec: &Value, old_spec: Option<&Value>) -> Vec<WorkloadError> {
    // Upstream skips the pod template of an update whose stored spec fails validation.
    let check_template = old_spec.is_none_or(|old| stateful_set_spec(old, true, true).is_empty());
    let mut errs = stateful_set_spec(spec, old_spec.is_some(), check_template);
    if let Some(old) = old_spec
        && forbidden_stateful_set_change(spec, old)
    {
        errs.push(WorkloadError::forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
    errs
}

fn stateful_set_spec(spec: &Value, updating: bool, check_template: bool) -> Vec<WorkloadError> {
    let mut errs = Vec::new();
    match str_at(spec, "podManagementPolicy") {
        // Unset is defaulted to OrderedReady.
        "" | "OrderedReady" | "Parallel" => {}
        other => errs.push(WorkloadError::invalid(
            "spec.podManagementPolicy",
            go_quote(other),
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let strategy = spec.get("updateStrategy").unwrap_or(&Value::Null);
    let rolling = strategy.get("rollingUpdate").filter(|v| !v.is_null());
    let render_rolling = |r: &Value| {
        format!(
            "{{\"Partition\":{},\"MaxUnavailable\":{}}}",
            int_at(r, "partition").unwrap_or(0),
            render_int_or_string(r.get("maxUnavailable").filter(|v| !v.is_null()), "null")
        )
    };
    match str_at(strategy, "type") {
        "OnDelete" => {
            if let Some(r) = rolling {
                errs.push(WorkloadError::invalid(
                    "spec.updateStrategy.rollingUpdate",
                    render_rolling(r),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "" | "RollingUpdate" => {
            if let Some(r) = rolling {
                let path = "spec.updateStrategy.rollingUpdate";
                nonnegative(&mut errs, r, "partition", path);
                if let Some(max) = int_or_string(r, "maxUnavailable") {
                    let at = format!("{path}.maxUnavailable");
                    positive_int_or_percent(&mut errs, &max, &at);
                    if int_or_percent_value(&max) == 0 {
                        errs.push(WorkloadError::invalid(&at, go_scalar(&max), "cannot be 0"));
                    }
                    not_more_than_100_percent(&mut errs, &max, &at);
                }
            }
        }
        _ => errs.push(WorkloadError::invalid(
            "spec.updateStrategy",
            format!(
                "{{\"Type\":{},\"RollingUpdate\":{}}}",
                Value::String(str_at(strategy, "type").into()),
                rolling.map(render_rolling).unwrap_or_else(|| "null".into())
            ),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    nonnegative(&mut errs, spec, "replicas", "spec");
    nonnegative(&mut errs, spec, "minReadySeconds", "spec");
    if let Some(start) = spec
        .pointer("/ordinals/start")
        .and_then(Value::as_i64)
        .filter(|s| *s < 0)
    {
        errs.push(WorkloadError::invalid(
            "spec.ordinals.start",
            start.to_string(),
            NEGATIVE,
        ));
    }
    // `serviceName` is immutable: a stored invalid one is tolerated on update.
    let service = str_at(spec, "serviceName");
    if !updating && !service.is_empty() {
        for msg in dns1123_label_errors(service) {
            errs.push(WorkloadError::invalid(
                "spec.serviceName",
                go_quote(service),
                msg,
            ));
        }
    }
    required_selector(&mut errs, spec, "statefulset");
    let template = template(spec);
    match as_selector(spec.get("selector")) {
        None => errs.push(WorkloadError::invalid(
            "spec.selector",
            go_selector(spec.get("selector").unwrap_or(&Value::Null)),
            "",
        )),
        // `ValidatePodTemplateSpecForStatefulSet`.
        Some(selector) => {
            if !selector.is_empty() {
                template_labels_match(&mut errs, &selector, template, "spec.template");
            }
            if check_template {
                errs.extend(pod_template_spec(template, "spec.template"));
            }
            label_errors(
                &mut errs,
                template.pointer("/metadata/labels"),
                "spec.template.labels",
            );
        }
    }
    always_restart_only(&mut errs, template, "StatefulSet");
    errs
}

/// Whether an update changes a part of a StatefulSet's spec other than those
/// `ValidateStatefulSetUpdate` lets change. Compared without unset (null or empty) values,
/// which `Semantic.DeepEqual` of the typed spec does not tell apart either.
fn forbidden_stateful_set_change(spec: &Value, old: &Value) -> bool {
    const MUTABLE: [&str; 7] = [
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "minReadySeconds",
        "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy",
    ];
    let rest = |s: &Value| {
        let mut out = s.clone();
        if let Some(map) = out.as_object_mut() {
            map.retain(|k, _| !MUTABLE.contains(&k.as_str()));
        }
        without_unset(out)
    };
    rest(spec) != rest(old)
}

/// The value with null, empty string, empty object and empty array members removed.
fn without_unset(v: Value) -> Value {
    let unset = |v: &Value| match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    };
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (k, without_unset(v)))
                .filter(|(_, v)| !unset(v))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(without_unset).collect()),
        other => other,
    }
}

/// `ValidateDaemonSetSpecUpdate`'s immutable selector (on update, reported first), then
/// `ValidateDaemonSetSpec`.
pub(super) fn daemon_set(spec: &Value, old_spec: Option<&Value>) -> Vec<WorkloadError> {
    let mut errs = Vec::new();
    immutable_selector(&mut errs, spec, old_spec);
    let selector = spec.get("selector").filter(|v| !v.is_null());
    if let Some(selector) = selector {
        label_selector_errors(&mut errs, selector, "spec.selector");
    }
    let template = template(spec);
    if let Some(parsed) = as_selector(selector) {
        template_labels_match(&mut errs, &parsed, template, "spec.template");
    }
    if let Some(selector) = selector.filter(|s| selector_is_empty(s)) {
        errs.push(WorkloadError::invalid(
            "spec.selector",
            go_selector(selector),
            "empty selector is invalid for daemonset",
        ));
    }
    errs.extend(pod_template_spec(template, "spec.template"));
    always_restart_only(&mut errs, template, "DaemonSet");
    nonnegative(&mut errs, spec, "minReadySeconds", "spec");
    nonnegative(&mut errs, spec, "templateGeneration", "spec");
    daemon_set_strategy(
        &mut errs,
        spec.get("updateStrategy").unwrap_or(&Value::Null),
    );
    nonnegative(&mut errs, spec, "revisionHistoryLimit", "spec");
    errs
}

/// `ValidateDaemonSetUpdateStrategy` and `ValidateRollingUpdateDaemonSet`.
fn daemon_set_strategy(errs: &mut Vec<WorkloadError>, strategy: &Value) {
    let rolling = strategy.get("rollingUpdate").filter(|v| !v.is_null());
    match str_at(strategy, "type") {
        "OnDelete" => {}
        // Unset is defaulted to RollingUpdate with maxUnavailable 1 and maxSurge 0.
        "" | "RollingUpdate" => {
            let Some(rolling) = rolling else { return };
            let path = "spec.updateStrategy.rollingUpdate";
            let unavailable = int_or_string(rolling, "maxUnavailable").unwrap_or(Value::from(1));
            let surge = int_or_string(rolling, "maxSurge").unwrap_or(Value::from(0));
            let (u_path, s_path) = (format!("{path}.maxUnavailable"), format!("{path}.maxSurge"));
            positive_int_or_percent(errs, &unavailable, &u_path);
            positive_int_or_percent(errs, &surge, &s_path);
            not_more_than_100_percent(errs, &unavailable, &u_path);
            not_more_than_100_percent(errs, &surge, &s_path);
            let has_unavailable = int_or_percent_value(&unavailable) != 0;
            let has_surge = int_or_percent_value(&surge) != 0;
            if has_unavailable && has_surge {
                errs.push(WorkloadError::invalid(
                    s_path,
                    go_scalar(&surge),
                    "may not be set when maxUnavailable is non-zero",
                ));
            } else if !has_unavailable && !has_surge {
                errs.push(WorkloadError::required(
                    u_path,
                    "cannot be 0 when maxSurge is 0",
                ));
            }
        }
        _ => {
            let rendered = rolling.map(|r| {
                format!(
                    "{{\"MaxUnavailable\":{},\"MaxSurge\":{}}}",
                    render_int_or_string(r.get("maxUnavailable"), "0"),
                    render_int_or_string(r.get("maxSurge"), "0")
                )
            });
            errs.push(WorkloadError::not_supported(
                "spec.updateStrategy",
                internal_strategy(strategy, rendered),
                &["RollingUpdate", "OnDelete"],
            ));
        }
    }
}
