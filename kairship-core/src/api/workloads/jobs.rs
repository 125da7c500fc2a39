//! Job and CronJob verbs: re-running a Job (`:restart`) and suspending a CronJob
//! (`:pause`/`:resume`), their request messages and the plain functions behind them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

/// A verb on a CronJob.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CronJobAction {
    /// Sets `spec.suspend`: no new Jobs are scheduled.
    Pause,
    /// Clears `spec.suspend`.
    Resume,
}

impl CronJobAction {
    /// Every action.
    pub const ALL: [CronJobAction; 2] = [CronJobAction::Pause, CronJobAction::Resume];

    /// The verb as in URLs (`pause`).
    pub fn as_str(self) -> &'static str {
        match self {
            CronJobAction::Pause => "pause",
            CronJobAction::Resume => "resume",
        }
    }

    /// The action spelled `verb`.
    pub fn parse(verb: &str) -> Option<CronJobAction> {
        Self::ALL.into_iter().find(|a| a.as_str() == verb)
    }

    /// The `spec.suspend` the action sets.
    pub fn suspend(self) -> bool {
        self == CronJobAction::Pause
    }
}

/// `CronJobAction`: `POST …/cronjobs/{name}:pause|:resume`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CronJobActionRequest {
    /// Instance name.
    pub instance: String,
    /// Namespace.
    pub namespace: String,
    /// CronJob name.
    pub name: String,
    /// What to do.
    pub action: CronJobAction,
}

/// `RestartJob`: `POST …/jobs/{name}:restart`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestartJobRequest {
    /// Instance name.
    pub instance: String,
    /// Namespace.
    pub namespace: String,
    /// Job name.
    pub name: String,
}

/// Labels the Job API server generates from the Job's uid, in the selector and the pod
/// template; a re-created Job gets new ones.
const GENERATED_LABELS: [&str; 2] = ["controller-uid", "batch.kubernetes.io/controller-uid"];

/// The merge patch of a CronJob action.
pub fn cronjob_patch(action: CronJobAction) -> Value {
    json!({"spec": {"suspend": action.suspend()}})
}

/// Whether a CronJob is suspended.
pub fn cronjob_suspended(cronjob: &Value) -> bool {
    cronjob.pointer("/spec/suspend") == Some(&Value::Bool(true))
}

/// Pods a Job still runs (`status.active`).
pub fn job_active(job: &Value) -> i64 {
    job.pointer("/status/active")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn without_generated(labels: Option<&Value>) -> Option<Value> {
    let labels = labels?.as_object()?;
    let kept: Map<String, Value> = labels
        .iter()
        .filter(|(k, _)| !GENERATED_LABELS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (!kept.is_empty()).then_some(Value::Object(kept))
}

/// A new Job from `job`'s spec: the same name, namespace, labels, annotations and spec, without
/// what the server filled in for the old one (uid, status, the generated selector and the
/// `controller-uid` labels), so the API server generates them anew. A Job with a manual
/// selector keeps its selector.
pub fn job_rerun(job: &Value) -> Value {
    let mut metadata = Map::new();
    for field in ["name", "namespace", "annotations"] {
        if let Some(v) = job.pointer(&format!("/metadata/{field}")) {
            metadata.insert(field.into(), v.clone());
        }
    }
    if let Some(labels) = without_generated(job.pointer("/metadata/labels")) {
        metadata.insert("labels".into(), labels);
    }
    let mut spec = job.get("spec").cloned().unwrap_or_else(|| json!({}));
    let manual = spec.get("manualSelector") == Some(&Value::Bool(true));
    if let Some(spec) = spec.as_object_mut() {
        if !manual {
            spec.remove("selector");
        }
        if let Some(template_meta) = spec
            .get_mut("template")
            .and_then(|t| t.get_mut("metadata"))
            .and_then(Value::as_object_mut)
        {
            match without_generated(template_meta.get("labels")) {
                Some(labels) if !manual => {
                    template_meta.insert("labels".into(), labels);
                }
                _ if !manual => {
                    template_meta.remove("labels");
                }
                _ => {}
            }
        }
    }
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": spec,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rerun_drops_what_the_server_generated() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "once", "namespace": "a", "uid": "u-1", "resourceVersion": "7",
                "creationTimestamp": "2024-01-01T00:00:00Z",
                "labels": {"team": "x", "controller-uid": "u-1", "batch.kubernetes.io/controller-uid": "u-1"},
                "annotations": {"note": "keep"}},
            "spec": {"backoffLimit": 2,
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}},
                "template": {"metadata": {"labels": {"job-name": "once", "controller-uid": "u-1",
                    "batch.kubernetes.io/controller-uid": "u-1", "app": "once"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
            "status": {"succeeded": 1}});
        assert_eq!(
            job_rerun(&job),
            json!({"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "once", "namespace": "a", "labels": {"team": "x"},
                    "annotations": {"note": "keep"}},
                "spec": {"backoffLimit": 2,
                    "template": {"metadata": {"labels": {"job-name": "once", "app": "once"}},
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}})
        );
        let manual = json!({"metadata": {"name": "m"}, "spec": {"manualSelector": true,
            "selector": {"matchLabels": {"app": "m"}},
            "template": {"metadata": {"labels": {"app": "m"}}}}});
        assert_eq!(
            job_rerun(&manual)["spec"]["selector"],
            json!({"matchLabels": {"app": "m"}})
        );
        assert_eq!(job_active(&json!({"status": {"active": 2}})), 2);
        assert_eq!(job_active(&json!({})), 0);
    }

    #[test]
    fn cronjob_verbs() {
        for action in CronJobAction::ALL {
            assert_eq!(CronJobAction::parse(action.as_str()), Some(action));
        }
        assert_eq!(CronJobAction::parse("restart"), None);
        assert_eq!(
            cronjob_patch(CronJobAction::Pause),
            json!({"spec": {"suspend": true}})
        );
        assert_eq!(
            cronjob_patch(CronJobAction::Resume),
            json!({"spec": {"suspend": false}})
        );
        assert!(cronjob_suspended(&json!({"spec": {"suspend": true}})));
        assert!(!cronjob_suspended(&json!({"spec": {}})));
    }
}
