//! The instance state machine of the status-sync controller:
//! INPROCESS -> RUNNING -> UNAVAILABLE -> RUNNING, TERMINAL on delete.

use crate::instance::{InstanceState, reason};

/// Result of one control-plane probe (`/readyz` and `/version`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// The apiserver answered ready.
    Ready,
    /// The apiserver did not answer, or answered not ready.
    Failed,
    /// No probe was possible because no credentials are available yet (e.g. the operator has
    /// not published the admin kubeconfig).
    NoCredentials,
}

/// Failed probes in a row after a probe with `outcome`, given the count before it.
/// A probe that could not run leaves the count unchanged.
pub fn count_failures(previous: u32, outcome: ProbeOutcome) -> u32 {
    match outcome {
        ProbeOutcome::Ready => 0,
        ProbeOutcome::Failed => previous.saturating_add(1),
        ProbeOutcome::NoCredentials => previous,
    }
}

/// Computes the next state, whether the control plane counts as ready, and the reason.
///
/// - `consecutive_failures` is the count *including* this probe (see [`count_failures`]);
///   `threshold` is the number of failures in a row that makes an instance UNAVAILABLE
///   (a threshold of 0 is treated as 1).
/// - `deleting` (deletion timestamp set) wins over everything: TERMINAL.
/// - `operator_ready` is the operator `Karmada` object's Ready condition for Provision-mode
///   instances (`None` in Adopt mode or before the operator reported one). While it is not
///   `Some(true)`, a Provision-mode instance that never ran stays INPROCESS.
/// - A ready probe gives RUNNING; failures below the threshold keep the current state
///   (transient errors do not flap the state); at the threshold the instance becomes
///   UNAVAILABLE, except one still being provisioned by the operator, which stays INPROCESS.
/// - `controlPlaneReady` is true exactly when the result is RUNNING.
pub fn next_state(
    current: InstanceState,
    probe_outcome: ProbeOutcome,
    consecutive_failures: u32,
    threshold: u32,
    deleting: bool,
    operator_ready: Option<bool>,
) -> (InstanceState, bool, &'static str) {
    if deleting {
        return (InstanceState::Terminal, false, reason::DELETING);
    }
    let threshold = threshold.max(1);
    // A Provision-mode install the operator has not finished yet.
    let provisioning = operator_ready == Some(false)
        && matches!(
            current,
            InstanceState::InProcess | InstanceState::Unknown | InstanceState::Terminal
        );
    let (state, why) = match probe_outcome {
        _ if provisioning && probe_outcome != ProbeOutcome::Failed => {
            (InstanceState::InProcess, reason::PROVISIONING)
        }
        ProbeOutcome::Ready => (InstanceState::Running, reason::CONTROL_PLANE_READY),
        ProbeOutcome::NoCredentials => match current {
            InstanceState::Running | InstanceState::Unavailable => {
                (current, reason::WAITING_FOR_CREDENTIALS)
            }
            _ => (InstanceState::InProcess, reason::WAITING_FOR_CREDENTIALS),
        },
        ProbeOutcome::Failed if consecutive_failures >= threshold => {
            if provisioning {
                (InstanceState::InProcess, reason::PROVISIONING)
            } else {
                (
                    InstanceState::Unavailable,
                    reason::CONTROL_PLANE_UNREACHABLE,
                )
            }
        }
        ProbeOutcome::Failed => match current {
            InstanceState::Running => (InstanceState::Running, reason::PROBE_FAILING),
            InstanceState::Unavailable => (
                InstanceState::Unavailable,
                reason::CONTROL_PLANE_UNREACHABLE,
            ),
            _ if provisioning => (InstanceState::InProcess, reason::PROVISIONING),
            _ => (InstanceState::InProcess, reason::PROBE_FAILING),
        },
    };
    (state, state == InstanceState::Running, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use InstanceState::*;
    use ProbeOutcome::*;

    #[test]
    fn failure_counting() {
        assert_eq!(count_failures(4, Ready), 0);
        assert_eq!(count_failures(4, Failed), 5);
        assert_eq!(count_failures(4, NoCredentials), 4);
        assert_eq!(count_failures(u32::MAX, Failed), u32::MAX);
    }

    #[test]
    fn transitions() {
        // (current, outcome, failures, threshold, deleting, operator_ready) -> (state, reason)
        type Case = (
            InstanceState,
            ProbeOutcome,
            u32,
            u32,
            bool,
            Option<bool>,
            InstanceState,
            &'static str,
        );
        let cases: &[Case] = &[
            // Adopt: first successful probe.
            (
                Unknown,
                Ready,
                0,
                3,
                false,
                None,
                Running,
                reason::CONTROL_PLANE_READY,
            ),
            (
                InProcess,
                Ready,
                0,
                3,
                false,
                None,
                Running,
                reason::CONTROL_PLANE_READY,
            ),
            // Not reachable yet, below the threshold: still in process.
            (
                InProcess,
                Failed,
                1,
                3,
                false,
                None,
                InProcess,
                reason::PROBE_FAILING,
            ),
            // Never reachable, threshold reached: unavailable.
            (
                InProcess,
                Failed,
                3,
                3,
                false,
                None,
                Unavailable,
                reason::CONTROL_PLANE_UNREACHABLE,
            ),
            // Running tolerates failures below the threshold.
            (
                Running,
                Failed,
                2,
                3,
                false,
                None,
                Running,
                reason::PROBE_FAILING,
            ),
            (
                Running,
                Failed,
                3,
                3,
                false,
                None,
                Unavailable,
                reason::CONTROL_PLANE_UNREACHABLE,
            ),
            (
                Unavailable,
                Failed,
                7,
                3,
                false,
                None,
                Unavailable,
                reason::CONTROL_PLANE_UNREACHABLE,
            ),
            // Recovery.
            (
                Unavailable,
                Ready,
                0,
                3,
                false,
                None,
                Running,
                reason::CONTROL_PLANE_READY,
            ),
            // Threshold 0 behaves as 1.
            (
                Running,
                Failed,
                1,
                0,
                false,
                None,
                Unavailable,
                reason::CONTROL_PLANE_UNREACHABLE,
            ),
            // Deletion wins.
            (Running, Ready, 0, 3, true, None, Terminal, reason::DELETING),
            (
                Unavailable,
                Failed,
                9,
                3,
                true,
                Some(true),
                Terminal,
                reason::DELETING,
            ),
            // Provision: operator not done, apiserver may already answer.
            (
                InProcess,
                Ready,
                0,
                3,
                false,
                Some(false),
                InProcess,
                reason::PROVISIONING,
            ),
            (
                Unknown,
                NoCredentials,
                0,
                3,
                false,
                Some(false),
                InProcess,
                reason::PROVISIONING,
            ),
            (
                InProcess,
                Failed,
                5,
                3,
                false,
                Some(false),
                InProcess,
                reason::PROVISIONING,
            ),
            // Provision: operator done.
            (
                InProcess,
                Ready,
                0,
                3,
                false,
                Some(true),
                Running,
                reason::CONTROL_PLANE_READY,
            ),
            // Operator reports not ready on a running instance: probes decide.
            (
                Running,
                Ready,
                0,
                3,
                false,
                Some(false),
                Running,
                reason::CONTROL_PLANE_READY,
            ),
            (
                Running,
                Failed,
                3,
                3,
                false,
                Some(false),
                Unavailable,
                reason::CONTROL_PLANE_UNREACHABLE,
            ),
            // No credentials yet.
            (
                Unknown,
                NoCredentials,
                0,
                3,
                false,
                None,
                InProcess,
                reason::WAITING_FOR_CREDENTIALS,
            ),
            (
                Running,
                NoCredentials,
                0,
                3,
                false,
                None,
                Running,
                reason::WAITING_FOR_CREDENTIALS,
            ),
            // A stale TERMINAL without deletion is recomputed.
            (
                Terminal,
                Ready,
                0,
                3,
                false,
                None,
                Running,
                reason::CONTROL_PLANE_READY,
            ),
        ];
        for (i, &(current, outcome, failures, threshold, deleting, operator, want, why)) in
            cases.iter().enumerate()
        {
            let (state, ready, got_reason) =
                next_state(current, outcome, failures, threshold, deleting, operator);
            assert_eq!(
                (state, got_reason),
                (want, why),
                "case {i}: {current} {outcome:?} {failures}/{threshold}"
            );
            assert_eq!(ready, want == Running, "case {i}: controlPlaneReady");
        }
    }

    #[test]
    fn walk_through_the_lifecycle() {
        let threshold = 2;
        let mut state = Unknown;
        let mut failures = 0;
        let mut trace = vec![];
        for outcome in [NoCredentials, Ready, Failed, Failed, Failed, Ready] {
            failures = count_failures(failures, outcome);
            state = next_state(state, outcome, failures, threshold, false, None).0;
            trace.push(state);
        }
        state = next_state(state, Ready, 0, threshold, true, None).0;
        trace.push(state);
        assert_eq!(
            trace,
            [
                InProcess,
                Running,
                Running,
                Unavailable,
                Unavailable,
                Running,
                Terminal
            ]
        );
    }
}
