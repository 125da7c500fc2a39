//! The CronJob controller: at each scheduled time (in `timeZone`, UTC by default) a Job named
//! `<cronjob>-<scheduled time in unix minutes>` from `jobTemplate`, `concurrencyPolicy`
//! (Allow, Forbid, Replace), `suspend`, `startingDeadlineSeconds`, finished Jobs kept per
//! `successfulJobsHistoryLimit` / `failedJobsHistoryLimit`, and status `active`,
//! `lastScheduleTime`, `lastSuccessfulTime`. Time is the controllers' clock
//! ([`crate::Cluster::advance_clock`]).

use super::Pass;
use super::cron;
use super::objects::{
    Writer, at, conditions_of, controller_ref, int_at, is_deleting, name_of, namespace_of,
    owned_by, rfc3339, str_at, time_at, uid_of,
};
use serde_json::{Map, Value, json};

/// The field manager of its writes.
pub const NAME: &str = "cronjob-controller";
/// The annotation of a created Job holding its scheduled time.
pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// The name of the Job for a scheduled time (upstream `getJobName`).
pub fn job_name(cronjob: &str, scheduled: jiff::Timestamp) -> String {
    format!("{cronjob}-{}", scheduled.as_second().div_euclid(60))
}

/// Syncs every CronJob.
pub fn sync_all(pass: &Pass) {
    let writer = Writer {
        state: pass.state,
        manager: NAME,
    };
    let jobs = pass.list("batch", "jobs");
    for cj in pass.list("batch", "cronjobs") {
        if !is_deleting(&cj) {
            sync(pass, &writer, &cj, &jobs);
        }
    }
}

/// Complete or Failed, with its time.
fn finished(job: &Value) -> Option<(&'static str, Option<jiff::Timestamp>)> {
    conditions_of(job).iter().find_map(|c| {
        let kind = match c["type"].as_str() {
            Some("Complete") => "Complete",
            Some("Failed") => "Failed",
            _ => return None,
        };
        (c["status"] == "True").then(|| {
            (
                kind,
                c["lastTransitionTime"]
                    .as_str()
                    .and_then(|t| t.parse().ok()),
            )
        })
    })
}

fn job_ref(job: &Value) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "name": name_of(job), "namespace": namespace_of(job), "uid": uid_of(job),
        "resourceVersion": str_at(job, &["metadata", "resourceVersion"]),
    })
}

fn sync(pass: &Pass, w: &Writer, cj: &Value, all_jobs: &[Value]) {
    let namespace = namespace_of(cj);
    let jobs: Vec<&Value> = owned_by(all_jobs, uid_of(cj))
        .into_iter()
        .filter(|j| namespace_of(j) == namespace)
        .collect();
    let mut status: Map<String, Value> = at(cj, &["status"])
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut last_success = time_at(cj, &["status", "lastSuccessfulTime"]);
    for job in &jobs {
        if let Some(("Complete", Some(t))) = finished(job)
            && last_success.is_none_or(|l| t > l)
        {
            last_success = Some(t);
        }
    }
    if let Some(t) = last_success {
        status.insert("lastSuccessfulTime".into(), json!(rfc3339(t)));
    }
    let mut active: Vec<&Value> = jobs
        .iter()
        .copied()
        .filter(|j| finished(j).is_none() && !is_deleting(j))
        .collect();

    let suspended = at(cj, &["spec", "suspend"]).and_then(Value::as_bool) == Some(true);
    let schedule = cron::parse(str_at(cj, &["spec", "schedule"]));
    let tz = match str_at(cj, &["spec", "timeZone"]) {
        "" => Ok(jiff::tz::TimeZone::UTC),
        name => jiff::tz::TimeZone::get(name).map_err(|e| e.to_string()),
    };
    if let (false, Ok(schedule), Ok(tz)) = (suspended, &schedule, &tz) {
        let created = time_at(cj, &["metadata", "creationTimestamp"]).unwrap_or(pass.now);
        let mut earliest = time_at(cj, &["status", "lastScheduleTime"]).unwrap_or(created);
        if let Some(deadline) = int_at(cj, &["spec", "startingDeadlineSeconds"]) {
            let window = pass.now - jiff::SignedDuration::from_secs(deadline);
            if window > earliest {
                earliest = window;
            }
        }
        let (scheduled, _) = schedule.most_recent(earliest, pass.now, tz, 1000);
        if let Some(scheduled) = scheduled {
            let policy = str_at(cj, &["spec", "concurrencyPolicy"]);
            let blocked = policy == "Forbid" && !active.is_empty();
            if !blocked {
                if policy == "Replace" {
                    for job in active.drain(..) {
                        let _ = w.delete("batch", "jobs", job);
                    }
                }
                match create_job(w, cj, scheduled, tz) {
                    Ok(job) => {
                        w.event(
                            cj,
                            "Normal",
                            "SuccessfulCreate",
                            &format!("Created job {}", name_of(&job)),
                        );
                        status.insert("lastScheduleTime".into(), json!(rfc3339(scheduled)));
                        let mut refs: Vec<Value> = active.iter().map(|j| job_ref(j)).collect();
                        refs.push(job_ref(&job));
                        set_active(&mut status, refs);
                        let _ = w.set_status("batch", "cronjobs", cj, Value::Object(status));
                        return;
                    }
                    Err(e) => {
                        tracing::debug!(cronjob = name_of(cj), "cannot create the job: {e}");
                    }
                }
            }
        }
    }
    set_active(&mut status, active.iter().map(|j| job_ref(j)).collect());
    cleanup_history(w, cj, &jobs);
    if let Err(e) = w.set_status("batch", "cronjobs", cj, Value::Object(status)) {
        tracing::debug!(cronjob = name_of(cj), "cannot write status: {e}");
    }
}

fn set_active(status: &mut Map<String, Value>, refs: Vec<Value>) {
    if refs.is_empty() {
        status.remove("active");
    } else {
        status.insert("active".into(), Value::Array(refs));
    }
}

fn create_job(
    w: &Writer,
    cj: &Value,
    scheduled: jiff::Timestamp,
    tz: &jiff::tz::TimeZone,
) -> Result<Value, crate::apiserver::error::ApiError> {
    let name = job_name(name_of(cj), scheduled);
    let template = at(cj, &["spec", "jobTemplate"])
        .cloned()
        .unwrap_or(json!({}));
    let mut annotations = template
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.insert(
        SCHEDULED_TIMESTAMP.into(),
        json!(
            scheduled
                .to_zoned(tz.clone())
                .strftime("%Y-%m-%dT%H:%M:%S%:z")
                .to_string()
        ),
    );
    let body = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {
            "name": name,
            "labels": template.pointer("/metadata/labels").cloned().unwrap_or(json!({})),
            "annotations": annotations,
            "ownerReferences": [controller_ref(cj)],
        },
        "spec": template.get("spec").cloned().unwrap_or(json!({})),
    });
    match w.create("batch", "jobs", namespace_of(cj), body) {
        Ok(job) => Ok(job.value.clone()),
        // Already made for this time (a pass that did not record it): take it.
        Err(e) if e.code == 409 => w
            .state
            .store
            .get(
                &crate::apiserver::resources::GroupResource::new("batch", "jobs"),
                namespace_of(cj),
                &name,
            )
            .filter(|j| super::objects::controller_uid(&j.value) == Some(uid_of(cj)))
            .map(|j| j.value.clone())
            .ok_or(e),
        Err(e) => Err(e),
    }
}

/// Deletes the oldest finished Jobs beyond the history limits (3 successful, 1 failed).
fn cleanup_history(w: &Writer, cj: &Value, jobs: &[&Value]) {
    for (kind, key, default) in [
        ("Complete", "successfulJobsHistoryLimit", 3),
        ("Failed", "failedJobsHistoryLimit", 1),
    ] {
        let limit = int_at(cj, &["spec", key]).unwrap_or(default).max(0) as usize;
        let mut done: Vec<&Value> = jobs
            .iter()
            .copied()
            .filter(|j| !is_deleting(j) && finished(j).is_some_and(|(k, _)| k == kind))
            .collect();
        if done.len() <= limit {
            continue;
        }
        done.sort_by_key(|j| {
            (
                str_at(j, &["status", "startTime"]).to_string(),
                name_of(j).to_string(),
            )
        });
        for job in done.iter().take(done.len() - limit) {
            if w.delete("batch", "jobs", job).is_ok() {
                w.event(
                    cj,
                    "Normal",
                    "SuccessfulDelete",
                    &format!("Deleted job {}", name_of(job)),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_names_count_minutes() {
        let t: jiff::Timestamp = "2024-05-01T10:15:00Z".parse().expect("timestamp");
        assert_eq!(job_name("hello", t), "hello-28575975");
    }
}
