//! `batch/v1` kinds (kubernetes `pkg/apis/batch/validation/validation.go`).

use serde_json::Value;

use super::pod::pod_template_spec;
use super::{
    WorkloadError, as_selector, go_scalar, go_selector, int_at, label_selector_errors, nonnegative,
    str_at, template_labels_match,
};
use crate::validation::cron;
use crate::validation::gocompat::go_quote;

/// `ValidateJobSpec`: the spec rules, then the selector, which the apiserver generates on
/// creation unless `manualSelector` is set.
pub(super) fn job(spec: &Value) -> Vec<WorkloadError> {
    let mut errs = job_spec(spec, "spec");
    let selector = spec.get("selector").filter(|v| !v.is_null());
    match selector {
        None => errs.push(WorkloadError::required("spec.selector", "")),
        Some(selector) => label_selector_errors(&mut errs, selector, "spec.selector"),
    }
    if let Some(parsed) = as_selector(selector) {
        let template = spec.get("template").unwrap_or(&Value::Null);
        template_labels_match(&mut errs, &parsed, template, "spec.template");
    }
    errs
}

/// `validateJobSpec` at `path` (`spec`, or `spec.jobTemplate.spec` of a CronJob).
fn job_spec(spec: &Value, path: &str) -> Vec<WorkloadError> {
    let mut errs = Vec::new();
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        nonnegative(&mut errs, spec, key, path);
        if key == "maxFailedIndexes"
            && int_at(spec, key).is_some()
            && int_at(spec, "backoffLimitPerIndex").is_none()
        {
            errs.push(WorkloadError::required(
                format!("{path}.backoffLimitPerIndex"),
                "when maxFailedIndexes is specified",
            ));
        }
    }
    let mode = spec.get("completionMode").and_then(Value::as_str);
    if let Some(mode) = mode {
        if !matches!(mode, "NonIndexed" | "Indexed") {
            errs.push(WorkloadError::not_supported(
                format!("{path}.completionMode"),
                go_quote(mode),
                &["NonIndexed", "Indexed"],
            ));
        }
        if mode == "Indexed" && int_at(spec, "completions").is_none() {
            errs.push(WorkloadError::required(
                format!("{path}.completions"),
                "when completion mode is Indexed",
            ));
        }
    }
    if matches!(mode, None | Some("NonIndexed")) {
        for key in ["backoffLimitPerIndex", "maxFailedIndexes"] {
            if let Some(v) = int_at(spec, key) {
                errs.push(WorkloadError::invalid(
                    format!("{path}.{key}"),
                    v.to_string(),
                    "requires indexed completion mode",
                ));
            }
        }
    }
    let template = spec.get("template").unwrap_or(&Value::Null);
    errs.extend(pod_template_spec(template, &format!("{path}.template")));
    // The apiserver defaults an unset restart policy to Always, which a Job may not use.
    let restart_path = format!("{path}.template.spec.restartPolicy");
    match template
        .pointer("/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("")
    {
        "" | "Always" => errs.push(WorkloadError::required(
            restart_path,
            "valid values: \"OnFailure\", \"Never\"",
        )),
        "OnFailure" => {
            if spec.get("podFailurePolicy").is_some_and(|p| !p.is_null()) {
                errs.push(WorkloadError::invalid(
                    restart_path,
                    go_quote("OnFailure"),
                    "only \"Never\" is supported when podFailurePolicy is specified",
                ));
            }
        }
        "Never" => {}
        other => errs.push(WorkloadError::not_supported(
            restart_path,
            go_quote(other),
            &["OnFailure", "Never"],
        )),
    }
    errs
}

/// `ValidateCronJobCreate` / `ValidateCronJobUpdate` (`validateCronJobSpec`,
/// `ValidateJobTemplateSpec`) but the time zone database lookup.
pub(super) fn cron_job(obj: &Value, spec: &Value, old_spec: Option<&Value>) -> Vec<WorkloadError> {
    let mut errs = Vec::new();
    let schedule = str_at(spec, "schedule");
    if schedule.is_empty() {
        errs.push(WorkloadError::required("spec.schedule", ""));
    } else {
        // `validateScheduleFormat`: a stored schedule with TZ keeps being accepted.
        let allow_tz = old_spec.is_some_and(|old| str_at(old, "schedule").contains("TZ"));
        if let Err(why) = cron::parse(without_tz_prefix(schedule)) {
            errs.push(WorkloadError::invalid(
                "spec.schedule",
                go_quote(schedule),
                why,
            ));
        }
        let time_zone = spec.get("timeZone").is_some_and(|v| !v.is_null());
        if allow_tz && schedule.contains("TZ") && time_zone {
            errs.push(WorkloadError::invalid(
                "spec.schedule",
                go_quote(schedule),
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        } else if !allow_tz && schedule.contains("TZ") {
            errs.push(WorkloadError::invalid(
                "spec.schedule",
                go_quote(schedule),
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        }
    }
    nonnegative(&mut errs, spec, "startingDeadlineSeconds", "spec");
    if spec.get("timeZone").and_then(Value::as_str) == Some("") {
        errs.push(WorkloadError::invalid(
            "spec.timeZone",
            go_quote(""),
            "timeZone must be nil or non-empty string",
        ));
    }
    match str_at(spec, "concurrencyPolicy") {
        // Unset is defaulted to Allow.
        "" | "Allow" | "Forbid" | "Replace" => {}
        other => errs.push(WorkloadError::not_supported(
            "spec.concurrencyPolicy",
            go_quote(other),
            &["Allow", "Forbid", "Replace"],
        )),
    }
    // `ValidateJobTemplateSpec`.
    let job = spec.pointer("/jobTemplate/spec").unwrap_or(&Value::Null);
    errs.extend(job_spec(job, "spec.jobTemplate.spec"));
    if let Some(selector) = job.get("selector").filter(|v| !v.is_null()) {
        errs.push(WorkloadError::invalid(
            "spec.jobTemplate.spec.selector",
            go_selector(selector),
            "`selector` will be auto-generated",
        ));
    }
    if let Some(manual) = job
        .get("manualSelector")
        .filter(|v| v.as_bool() == Some(true))
    {
        errs.push(WorkloadError::not_supported(
            "spec.jobTemplate.spec.manualSelector",
            go_scalar(manual),
            &["nil", "false"],
        ));
    }
    nonnegative(&mut errs, spec, "successfulJobsHistoryLimit", "spec");
    nonnegative(&mut errs, spec, "failedJobsHistoryLimit", "spec");
    // Job names are the CronJob's and an 11-character suffix (create only).
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if old_spec.is_none() && name.len() > 52 {
        errs.push(WorkloadError::invalid(
            "metadata.name",
            go_quote(name),
            "must be no more than 52 characters",
        ));
    }
    errs
}

/// The schedule without a leading `TZ=<zone>` or `CRON_TZ=<zone>`, which robfig/cron
/// accepts (and validation then refuses with its own message).
fn without_tz_prefix(schedule: &str) -> &str {
    let trimmed = schedule.trim_start();
    if trimmed.starts_with("TZ=") || trimmed.starts_with("CRON_TZ=") {
        trimmed
            .split_once(char::is_whitespace)
            .map(|(_, rest)| rest)
            .unwrap_or("")
    } else {
        schedule
    }
}
