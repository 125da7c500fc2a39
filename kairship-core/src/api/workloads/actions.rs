//! Workload verbs as the merge patches kubectl sends: `kubectl rollout pause|resume` of a
//! Deployment, `kubectl rollout restart` of a Deployment, StatefulSet or DaemonSet.

use serde_json::{Value, json};

use crate::api::{ApiError, DeploymentAction, WorkloadKind};

/// Whether `kind` has `action`, as `kubectl rollout` offers them: pause and resume are
/// Deployment verbs (kubectl `pkg/polymorphichelpers/objectpauser.go`, `objectresumer.go`),
/// restart sets the template annotation of Deployments, DaemonSets and StatefulSets
/// (`objectrestarter.go` `defaultObjectRestarter`); a Job is re-run with `:restart` of its own.
pub fn check_action(kind: WorkloadKind, action: DeploymentAction) -> Result<(), ApiError> {
    match (kind, action) {
        (WorkloadKind::Deployments, _)
        | (WorkloadKind::Statefulsets | WorkloadKind::Daemonsets, DeploymentAction::Restart) => {
            Ok(())
        }
        (WorkloadKind::Statefulsets | WorkloadKind::Daemonsets, _) => Err(ApiError::invalid_field(
            "action",
            format!(
                "{kind} cannot be {}d: only Deployments pause and resume; {kind} restart",
                action.as_str()
            ),
        )),
        (WorkloadKind::Jobs | WorkloadKind::Cronjobs, _) => Err(ApiError::invalid_field(
            "kind",
            format!(
                "{kind} have no {} here: a Job is re-run with RestartJob, a CronJob paused or \
                 resumed with CronJobAction",
                action.as_str()
            ),
        )),
    }
}

/// The pod-template annotation `kubectl rollout restart` sets.
pub const RESTARTED_AT_ANNOTATION: &str = "kubectl.kubernetes.io/restartedAt";

/// The merge patch of `action` at time `now` (`kubectl rollout pause|resume|restart`).
pub fn deployment_patch(action: DeploymentAction, now: jiff::Timestamp) -> Value {
    match action {
        DeploymentAction::Pause => json!({"spec": {"paused": true}}),
        DeploymentAction::Resume => json!({"spec": {"paused": false}}),
        DeploymentAction::Restart => json!({"spec": {"template": {"metadata": {"annotations": {
            RESTARTED_AT_ANNOTATION: now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        }}}}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patches_match_kubectl() {
        let now: jiff::Timestamp = "2024-05-06T07:08:09.123Z".parse().unwrap();
        let cases = [
            (DeploymentAction::Pause, json!({"spec": {"paused": true}})),
            (DeploymentAction::Resume, json!({"spec": {"paused": false}})),
            (
                DeploymentAction::Restart,
                json!({"spec": {"template": {"metadata": {"annotations": {
                    "kubectl.kubernetes.io/restartedAt": "2024-05-06T07:08:09Z"}}}}}),
            ),
        ];
        for (action, want) in cases {
            assert_eq!(deployment_patch(action, now), want, "{action:?}");
            assert_eq!(DeploymentAction::parse(action.as_str()), Some(action));
        }
        assert_eq!(DeploymentAction::parse("scale"), None);
    }

    #[test]
    fn verbs_by_kind_as_kubectl_rollout_has_them() {
        use DeploymentAction::{Pause, Restart, Resume};
        use WorkloadKind::{Cronjobs, Daemonsets, Deployments, Jobs, Statefulsets};
        for (kind, action, ok) in [
            (Deployments, Pause, true),
            (Deployments, Resume, true),
            (Deployments, Restart, true),
            (Statefulsets, Restart, true),
            (Daemonsets, Restart, true),
            (Statefulsets, Pause, false),
            (Daemonsets, Resume, false),
            (Jobs, Restart, false),
            (Cronjobs, Pause, false),
        ] {
            let got = check_action(kind, action);
            assert_eq!(got.is_ok(), ok, "{kind} {action:?}: {got:?}");
            if let Err(err) = got {
                assert_eq!(err.code, crate::api::Code::InvalidArgument, "{kind}");
            }
        }
    }
}
