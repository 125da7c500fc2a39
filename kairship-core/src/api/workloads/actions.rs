//! Deployment verbs as the merge patches kubectl sends.

use serde_json::{Value, json};

use crate::api::DeploymentAction;

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
}
