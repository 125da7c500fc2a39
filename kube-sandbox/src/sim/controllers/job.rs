//! The Job controller: up to `parallelism` active pods until `completions` succeed (or, without
//! `completions`, until one succeeds), failed pods replaced until more than `backoffLimit`
//! failed, `activeDeadlineSeconds`, `suspend`; status with active, ready, terminating,
//! succeeded, failed, startTime, completionTime and the conditions of v1.31+:
//! `SuccessCriteriaMet` then `Complete` (reason `CompletionsReached`), or `FailureTarget` then
//! `Failed` (`BackoffLimitExceeded`, `DeadlineExceeded`), the final one once no pod runs.

use super::Pass;
use super::objects::{
    PodName, Writer, at, by_creation, conditions_of, int_at, is_active, is_deleting, is_ready,
    name_of, namespace_of, owned_by, phase, pod_from_template, rfc3339, time_at, uid_of,
};
use serde_json::{Map, Value, json};

/// The field manager of its writes.
pub const NAME: &str = "job-controller";

/// What a Job should do next, from its counts (pure, see [`decide`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Keep this many pods active.
    Run(i64),
    /// Succeeded: stop creating, condition `SuccessCriteriaMet` then `Complete`.
    Complete,
    /// Failed with this reason and message: active pods go, `FailureTarget` then `Failed`.
    Fail(&'static str, &'static str),
}

/// The counts and settings [`decide`] reads.
#[derive(Debug, Clone, Copy)]
pub struct Counts {
    /// `spec.completions` (None: any one success completes the Job).
    pub completions: Option<i64>,
    /// `spec.parallelism` (default 1).
    pub parallelism: i64,
    /// `spec.backoffLimit` (default 6).
    pub backoff_limit: i64,
    /// Succeeded pods.
    pub succeeded: i64,
    /// Failed pods.
    pub failed: i64,
    /// Whether `activeDeadlineSeconds` has passed.
    pub past_deadline: bool,
}

/// The Job controller's decision for one Job.
pub fn decide(c: Counts) -> Decision {
    match c.completions {
        Some(n) if c.succeeded >= n => return Decision::Complete,
        None if c.succeeded > 0 => return Decision::Complete,
        _ => {}
    }
    if c.failed > c.backoff_limit {
        return Decision::Fail(
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        );
    }
    if c.past_deadline {
        return Decision::Fail(
            "DeadlineExceeded",
            "Job was active longer than specified deadline",
        );
    }
    let want = match c.completions {
        Some(n) => c.parallelism.min(n - c.succeeded),
        None => c.parallelism,
    };
    Decision::Run(want.max(0))
}

/// Syncs every Job.
pub fn sync_all(pass: &Pass) {
    let writer = Writer {
        state: pass.state,
        manager: NAME,
    };
    for job in pass.list("batch", "jobs") {
        if !is_deleting(&job) {
            sync(pass, &writer, &job);
        }
    }
}

fn has_condition(job: &Value, kind: &str) -> bool {
    conditions_of(job)
        .iter()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

fn condition(kind: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({
        "type": kind, "status": "True", "reason": reason, "message": message,
        "lastProbeTime": now, "lastTransitionTime": now,
    })
}

fn sync(pass: &Pass, w: &Writer, job: &Value) {
    let namespace = namespace_of(job);
    let all_pods = pass.pods_in(namespace);
    let mut pods: Vec<&Value> = owned_by(&all_pods, uid_of(job));
    pods.sort_by(|a, b| by_creation(a, b));
    let active: Vec<&Value> = pods.iter().copied().filter(|p| is_active(p)).collect();
    let succeeded = pods.iter().filter(|p| phase(p) == "Succeeded").count() as i64;
    let failed = pods.iter().filter(|p| phase(p) == "Failed").count() as i64;
    let terminating = pods.iter().filter(|p| is_deleting(p)).count() as i64;
    let now = rfc3339(pass.now);
    let finished = has_condition(job, "Complete") || has_condition(job, "Failed");
    let suspended = at(job, &["spec", "suspend"]).and_then(Value::as_bool) == Some(true);
    let mut conditions = conditions_of(job);
    let mut status: Map<String, Value> = at(job, &["status"])
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();

    if !finished && !suspended {
        if status.get("startTime").is_none_or(Value::is_null) {
            status.insert("startTime".into(), json!(now));
        }
        let started = time_at(job, &["status", "startTime"]).unwrap_or(pass.now);
        let past_deadline = int_at(job, &["spec", "activeDeadlineSeconds"])
            .is_some_and(|s| started + jiff::SignedDuration::from_secs(s) <= pass.now);
        let decision = decide(Counts {
            completions: int_at(job, &["spec", "completions"]),
            parallelism: int_at(job, &["spec", "parallelism"]).unwrap_or(1).max(0),
            backoff_limit: int_at(job, &["spec", "backoffLimit"]).unwrap_or(6),
            succeeded,
            failed,
            past_deadline,
        });
        match decision {
            Decision::Run(want) => {
                let have = active.len() as i64;
                if have < want {
                    create_pods(w, job, want - have);
                } else {
                    for pod in active.iter().rev().take((have - want) as usize) {
                        let _ = w.delete("", "pods", pod);
                    }
                }
            }
            Decision::Complete => {
                if !has_condition(job, "SuccessCriteriaMet") {
                    conditions.push(condition(
                        "SuccessCriteriaMet",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods",
                        &now,
                    ));
                }
                for pod in &active {
                    let _ = w.delete("", "pods", pod);
                }
                if active.is_empty() && terminating == 0 {
                    conditions.push(condition(
                        "Complete",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods",
                        &now,
                    ));
                    status.insert("completionTime".into(), json!(now));
                    w.event(job, "Normal", "Completed", "Job completed");
                }
            }
            Decision::Fail(reason, message) => {
                if !has_condition(job, "FailureTarget") {
                    conditions.push(condition("FailureTarget", reason, message, &now));
                }
                for pod in &active {
                    let _ = w.delete("", "pods", pod);
                }
                if active.is_empty() && terminating == 0 {
                    conditions.push(condition("Failed", reason, message, &now));
                    w.event(job, "Warning", reason, message);
                }
            }
        }
    } else if suspended && !finished {
        for pod in &active {
            let _ = w.delete("", "pods", pod);
        }
    }

    // Zero counts are left out as upstream's `omitempty` does; ready and terminating are
    // pointers upstream, so they are written even when 0.
    for (key, value) in [
        ("active", active.len() as i64),
        ("succeeded", succeeded),
        ("failed", failed),
    ] {
        if value != 0 {
            status.insert(key.into(), json!(value));
        } else {
            status.remove(key);
        }
    }
    status.insert(
        "ready".into(),
        json!(active.iter().filter(|p| is_ready(p)).count()),
    );
    status.insert("terminating".into(), json!(terminating));
    status.insert("uncountedTerminatedPods".into(), json!({}));
    if !conditions.is_empty() {
        status.insert("conditions".into(), Value::Array(conditions));
    }
    if let Err(e) = w.set_status("batch", "jobs", job, Value::Object(status)) {
        tracing::debug!(job = name_of(job), "cannot write status: {e}");
    }
}

fn create_pods(w: &Writer, job: &Value, count: i64) {
    let name = name_of(job);
    let uid = uid_of(job);
    let template = at(job, &["spec", "template"]).cloned().unwrap_or(json!({}));
    let prefix = format!("{name}-");
    for _ in 0..count {
        let pod = pod_from_template(
            &template,
            job,
            PodName::Generate(&prefix),
            &[
                ("batch.kubernetes.io/controller-uid", uid),
                ("batch.kubernetes.io/job-name", name),
                ("controller-uid", uid),
                ("job-name", name),
            ],
        );
        match w.create("", "pods", namespace_of(job), pod) {
            Ok(created) => w.event(
                job,
                "Normal",
                "SuccessfulCreate",
                &format!("Created pod: {}", name_of(&created.value)),
            ),
            Err(e) => {
                tracing::debug!(job = name, "cannot create a pod: {e}");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(completions: Option<i64>, parallelism: i64, succeeded: i64, failed: i64) -> Counts {
        Counts {
            completions,
            parallelism,
            backoff_limit: 2,
            succeeded,
            failed,
            past_deadline: false,
        }
    }

    #[test]
    fn decisions() {
        let cases = [
            (counts(Some(3), 2, 0, 0), Decision::Run(2)),
            (counts(Some(3), 2, 2, 0), Decision::Run(1)),
            (counts(Some(3), 2, 3, 0), Decision::Complete),
            (counts(None, 2, 0, 0), Decision::Run(2)),
            (counts(None, 2, 1, 0), Decision::Complete),
            (counts(Some(1), 1, 0, 2), Decision::Run(1)),
            (
                counts(Some(1), 1, 0, 3),
                Decision::Fail(
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                ),
            ),
            (counts(Some(1), 0, 0, 0), Decision::Run(0)),
        ];
        for (c, expected) in cases {
            assert_eq!(decide(c), expected, "{c:?}");
        }
        let late = Counts {
            past_deadline: true,
            ..counts(Some(1), 1, 0, 0)
        };
        assert!(matches!(
            decide(late),
            Decision::Fail("DeadlineExceeded", _)
        ));
    }
}
