//! Physical pod status -> virtual pod status.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateTerminated, ContainerStatus, PodCondition, PodReadinessGate,
    PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Reason of a virtual pod whose physical pod vanished.
pub const PHYSICAL_POD_LOST: &str = "PhysicalPodLost";
/// Condition the computing cluster's scheduler owns; the worker's is not copied.
const POD_SCHEDULED: &str = "PodScheduled";
/// Conditions the kubelet owns: copied from the physical pod, never kept from the virtual.
const KUBELET_CONDITIONS: [&str; 4] = [
    "Ready",
    "ContainersReady",
    "Initialized",
    "PodReadyToStartContainers",
];
/// Conditions that turn False when the physical pod is lost.
const READINESS_CONDITIONS: [&str; 2] = ["Ready", "ContainersReady"];
/// What the kubelet reports for a container it can no longer find.
const CONTAINER_UNKNOWN_REASON: &str = "ContainerStatusUnknown";
const CONTAINER_UNKNOWN_MESSAGE: &str =
    "The container could not be located when the pod was terminated";
const CONTAINER_UNKNOWN_EXIT_CODE: i32 = 137;

/// The virtual pod's status given its physical pod's: phase, conditions, message, reason,
/// host and pod IPs, start time and (init, ephemeral) container statuses come from the
/// physical pod. The virtual `PodScheduled` condition is kept (the worker's scheduling is
/// an implementation detail), and so are conditions set in the computing cluster that the
/// kubelet does not own (readiness gates, `DisruptionTarget`...). Everything else (QoS class,
/// nominated node...) stays as the virtual pod has it.
pub fn virtual_pod_status(physical: &PodStatus, virtual_status: &PodStatus) -> PodStatus {
    let mut out = virtual_status.clone();
    out.phase = physical.phase.clone();
    out.conditions = merged_conditions(physical, virtual_status);
    out.message = physical.message.clone();
    out.reason = physical.reason.clone();
    out.host_ip = physical.host_ip.clone();
    out.host_ips = physical.host_ips.clone();
    out.pod_ip = physical.pod_ip.clone();
    out.pod_ips = physical.pod_ips.clone();
    out.start_time = physical.start_time.clone();
    out.container_statuses = physical.container_statuses.clone();
    out.init_container_statuses = physical.init_container_statuses.clone();
    out.ephemeral_container_statuses = physical.ephemeral_container_statuses.clone();
    out
}

/// Reason the kubelet gives a pod that is not Ready because of its readiness gates.
pub const READINESS_GATES_NOT_READY: &str = "ReadinessGatesNotReady";

/// `status` (as [`virtual_pod_status`] made it) with the virtual pod's own readiness gates
/// applied, as the kubelet applies them: the pod is Ready only when the physical pod is and
/// every gate's condition (set in the computing cluster) is `True`. The physical pod knows
/// nothing of the gates, so its `Ready` alone would be wrong.
pub fn gate_readiness(status: &mut PodStatus, gates: &[PodReadinessGate]) {
    // No Ready from the worker yet: nothing to hold back (and nothing to add).
    let Some(conditions) = status.conditions.as_mut() else {
        return;
    };
    let unmet = gates.iter().find_map(|gate| {
        let kind = gate.condition_type.as_str();
        match conditions.iter().find(|c| c.type_ == kind) {
            None => Some(format!(
                "corresponding condition of pod readiness gate \"{kind}\" does not exist."
            )),
            Some(c) if c.status != "True" => Some(format!(
                "the status of pod readiness gate \"{kind}\" is not \"True\", but {}",
                c.status
            )),
            Some(_) => None,
        }
    });
    let Some(message) = unmet else {
        return;
    };
    let Some(ready) = conditions.iter_mut().find(|c| c.type_ == "Ready") else {
        return;
    };
    if ready.status == "True" {
        ready.status = "False".to_owned();
        ready.reason = Some(READINESS_GATES_NOT_READY.to_owned());
        ready.message = Some(message);
    }
}

fn merged_conditions(
    physical: &PodStatus,
    virtual_status: &PodStatus,
) -> Option<Vec<PodCondition>> {
    let virtual_conditions = virtual_status.conditions.as_deref().unwrap_or_default();
    let physical_conditions = physical.conditions.as_deref().unwrap_or_default();
    let mut out: Vec<PodCondition> = virtual_conditions
        .iter()
        .filter(|c| c.type_ == POD_SCHEDULED)
        .cloned()
        .collect();
    out.extend(
        physical_conditions
            .iter()
            .filter(|c| c.type_ != POD_SCHEDULED)
            .cloned(),
    );
    let kept_virtual = virtual_conditions.iter().filter(|c| {
        c.type_ != POD_SCHEDULED
            && !KUBELET_CONDITIONS.contains(&c.type_.as_str())
            && !physical_conditions.iter().any(|p| p.type_ == c.type_)
    });
    out.extend(kept_virtual.cloned());
    (!out.is_empty()).then_some(out)
}

/// The virtual pod's status once its physical pod is gone for good: phase `Failed`, reason
/// `PhysicalPodLost`, not ready, and every container that had not finished reported the
/// way the kubelet reports a container it lost (terminated, exit code 137,
/// `ContainerStatusUnknown`). `now` stamps the conditions that change.
pub fn lost_pod_status(virtual_status: &PodStatus, now: Timestamp) -> PodStatus {
    let mut out = virtual_status.clone();
    out.phase = Some("Failed".to_owned());
    out.reason = Some(PHYSICAL_POD_LOST.to_owned());
    out.message =
        Some("The physical pod of this pod no longer exists in the worker cluster".into());
    let conditions = out.conditions.get_or_insert_with(Vec::new);
    for type_ in READINESS_CONDITIONS {
        match conditions.iter_mut().find(|c| c.type_ == type_) {
            Some(condition) => {
                if condition.status != "False" {
                    condition.status = "False".to_owned();
                    condition.last_transition_time = Some(Time(now));
                }
                condition.reason = Some(PHYSICAL_POD_LOST.to_owned());
            }
            None => conditions.push(PodCondition {
                type_: type_.to_owned(),
                status: "False".to_owned(),
                reason: Some(PHYSICAL_POD_LOST.to_owned()),
                last_transition_time: Some(Time(now)),
                ..PodCondition::default()
            }),
        }
    }
    for statuses in [
        &mut out.container_statuses,
        &mut out.init_container_statuses,
        &mut out.ephemeral_container_statuses,
    ] {
        for status in statuses.iter_mut().flatten() {
            terminate_lost_container(status, now);
        }
    }
    out
}

fn terminate_lost_container(status: &mut ContainerStatus, now: Timestamp) {
    status.ready = false;
    status.started = Some(false);
    let finished = status
        .state
        .as_ref()
        .is_some_and(|state| state.terminated.is_some());
    if finished {
        return;
    }
    status.last_state = status.state.take();
    status.state = Some(ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: CONTAINER_UNKNOWN_EXIT_CODE,
            reason: Some(CONTAINER_UNKNOWN_REASON.to_owned()),
            message: Some(CONTAINER_UNKNOWN_MESSAGE.to_owned()),
            finished_at: Some(Time(now)),
            ..ContainerStateTerminated::default()
        }),
        ..ContainerState::default()
    });
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ContainerStateRunning, HostIP, PodIP};

    use super::*;

    fn condition(type_: &str, status: &str, reason: Option<&str>) -> PodCondition {
        PodCondition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.map(str::to_owned),
            ..PodCondition::default()
        }
    }

    fn running(name: &str) -> ContainerStatus {
        ContainerStatus {
            name: name.into(),
            image: "nginx".into(),
            ready: true,
            started: Some(true),
            restart_count: 1,
            state: Some(ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(Time(Timestamp::UNIX_EPOCH)),
                }),
                ..ContainerState::default()
            }),
            ..ContainerStatus::default()
        }
    }

    fn types(status: &PodStatus) -> Vec<(String, String)> {
        status
            .conditions
            .iter()
            .flatten()
            .map(|c| (c.type_.clone(), c.status.clone()))
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn running_physical_pod_status_is_copied_up() {
        let physical = PodStatus {
            phase: Some("Running".into()),
            host_ip: Some("10.0.0.5".into()),
            host_ips: Some(vec![HostIP {
                ip: "10.0.0.5".into(),
            }]),
            pod_ip: Some("172.16.0.9".into()),
            pod_ips: Some(vec![PodIP {
                ip: "172.16.0.9".into(),
            }]),
            start_time: Some(Time(Timestamp::UNIX_EPOCH)),
            qos_class: Some("BestEffort".into()),
            conditions: Some(vec![
                condition("PodScheduled", "True", None),
                condition("Initialized", "True", None),
                condition("Ready", "True", None),
                condition("ContainersReady", "True", None),
            ]),
            container_statuses: Some(vec![running("app")]),
            init_container_statuses: Some(vec![running("init")]),
            ..PodStatus::default()
        };
        let virtual_status = PodStatus {
            phase: Some("Pending".into()),
            qos_class: Some("Burstable".into()),
            conditions: Some(vec![
                condition("PodScheduled", "True", Some("ByComputingScheduler")),
                condition("Ready", "False", Some("Stale")),
                condition("example.com/lb-ready", "True", None),
            ]),
            ..PodStatus::default()
        };
        let got = virtual_pod_status(&physical, &virtual_status);
        assert_eq!(got.phase.as_deref(), Some("Running"));
        assert_eq!(got.pod_ip.as_deref(), Some("172.16.0.9"));
        assert_eq!(got.pod_ips, physical.pod_ips);
        assert_eq!(got.host_ip.as_deref(), Some("10.0.0.5"));
        assert_eq!(got.host_ips, physical.host_ips);
        assert_eq!(got.start_time, physical.start_time);
        assert_eq!(got.container_statuses, physical.container_statuses);
        assert_eq!(
            got.init_container_statuses,
            physical.init_container_statuses
        );
        assert_eq!(
            got.qos_class.as_deref(),
            Some("Burstable"),
            "virtual QoS kept"
        );
        assert_eq!(
            types(&got),
            pairs(&[
                ("PodScheduled", "True"),
                ("Initialized", "True"),
                ("Ready", "True"),
                ("ContainersReady", "True"),
                ("example.com/lb-ready", "True"),
            ])
        );
        let scheduled = &got.conditions.as_ref().unwrap()[0];
        assert_eq!(scheduled.reason.as_deref(), Some("ByComputingScheduler"));
    }

    #[test]
    fn physical_scheduling_trouble_does_not_replace_virtual_pod_scheduled() {
        // (case, physical conditions, virtual conditions, expected)
        let table = [
            (
                "unschedulable in the worker",
                vec![condition("PodScheduled", "False", Some("Unschedulable"))],
                vec![condition("PodScheduled", "True", None)],
                pairs(&[("PodScheduled", "True")]),
            ),
            (
                "virtual pod without PodScheduled",
                vec![
                    condition("PodScheduled", "True", None),
                    condition("Ready", "False", None),
                ],
                vec![],
                pairs(&[("Ready", "False")]),
            ),
            ("nothing anywhere", vec![], vec![], vec![]),
        ];
        for (case, physical, virtual_conditions, want) in table {
            let got = virtual_pod_status(
                &PodStatus {
                    phase: Some("Pending".into()),
                    reason: Some("Waiting".into()),
                    message: Some("0/1 nodes".into()),
                    conditions: Some(physical),
                    ..PodStatus::default()
                },
                &PodStatus {
                    conditions: Some(virtual_conditions),
                    ..PodStatus::default()
                },
            );
            assert_eq!(types(&got), want, "{case}");
            assert_eq!(got.reason.as_deref(), Some("Waiting"), "{case}");
            assert_eq!(got.message.as_deref(), Some("0/1 nodes"), "{case}");
        }
    }

    #[test]
    fn lost_physical_pod_fails_the_virtual_pod() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let mut finished = running("sidecar");
        finished.state = Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: 0,
                reason: Some("Completed".into()),
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        });
        let virtual_status = PodStatus {
            phase: Some("Running".into()),
            pod_ip: Some("172.16.0.9".into()),
            conditions: Some(vec![
                condition("PodScheduled", "True", None),
                condition("Ready", "True", None),
            ]),
            container_statuses: Some(vec![running("app"), finished.clone()]),
            ..PodStatus::default()
        };
        let got = lost_pod_status(&virtual_status, now);
        assert_eq!(got.phase.as_deref(), Some("Failed"));
        assert_eq!(got.reason.as_deref(), Some(PHYSICAL_POD_LOST));
        assert!(got.message.is_some());
        assert_eq!(got.pod_ip.as_deref(), Some("172.16.0.9"));
        assert_eq!(
            types(&got),
            pairs(&[
                ("PodScheduled", "True"),
                ("Ready", "False"),
                ("ContainersReady", "False"),
            ])
        );
        let ready = &got.conditions.as_ref().unwrap()[1];
        assert_eq!(ready.last_transition_time, Some(Time(now)));
        assert_eq!(ready.reason.as_deref(), Some(PHYSICAL_POD_LOST));

        let statuses = got.container_statuses.unwrap();
        let app = &statuses[0];
        assert!(!app.ready);
        let terminated = app.state.as_ref().unwrap().terminated.as_ref().unwrap();
        assert_eq!(terminated.exit_code, 137);
        assert_eq!(terminated.reason.as_deref(), Some(CONTAINER_UNKNOWN_REASON));
        assert_eq!(terminated.finished_at, Some(Time(now)));
        assert!(app.last_state.as_ref().unwrap().running.is_some());
        // A container that had already finished keeps its own termination.
        assert_eq!(statuses[1].state, finished.state);

        // Applying it twice changes nothing more.
        assert_eq!(
            lost_pod_status(&lost_pod_status(&virtual_status, now), now),
            lost_pod_status(&virtual_status, now)
        );
    }

    #[test]
    fn readiness_gates_hold_ready_back_until_all_are_true() {
        fn cond(type_: &str, status: &str) -> PodCondition {
            PodCondition {
                type_: type_.to_owned(),
                status: status.to_owned(),
                ..PodCondition::default()
            }
        }
        fn gates(kinds: &[&str]) -> Vec<PodReadinessGate> {
            kinds
                .iter()
                .map(|k| PodReadinessGate {
                    condition_type: (*k).to_owned(),
                })
                .collect()
        }
        // (case, physical Ready, virtual gate conditions, gates, Ready status, reason)
        type Case = (
            &'static str,
            &'static str,
            Vec<PodCondition>,
            Vec<PodReadinessGate>,
            &'static str,
            Option<&'static str>,
        );
        let cases: Vec<Case> = vec![
            (
                "no gates: physical Ready",
                "True",
                vec![],
                gates(&[]),
                "True",
                None,
            ),
            (
                "all gates True",
                "True",
                vec![cond("lb/ready", "True"), cond("mesh/ready", "True")],
                gates(&["lb/ready", "mesh/ready"]),
                "True",
                None,
            ),
            (
                "a gate False",
                "True",
                vec![cond("lb/ready", "True"), cond("mesh/ready", "False")],
                gates(&["lb/ready", "mesh/ready"]),
                "False",
                Some(READINESS_GATES_NOT_READY),
            ),
            (
                "a gate missing",
                "True",
                vec![],
                gates(&["lb/ready"]),
                "False",
                Some(READINESS_GATES_NOT_READY),
            ),
            (
                "physical not Ready: stays as the worker says",
                "False",
                vec![cond("lb/ready", "True")],
                gates(&["lb/ready"]),
                "False",
                Some("ContainersNotReady"),
            ),
        ];
        let mut bare = PodStatus::default();
        gate_readiness(&mut bare, &gates(&["lb/ready"]));
        assert_eq!(bare, PodStatus::default(), "no conditions: none added");
        for (what, physical_ready, virtual_conditions, gates, want, reason) in cases {
            let physical = PodStatus {
                phase: Some("Running".into()),
                conditions: Some(vec![PodCondition {
                    reason: (physical_ready == "False").then(|| "ContainersNotReady".to_owned()),
                    ..cond("Ready", physical_ready)
                }]),
                ..PodStatus::default()
            };
            let virtual_status = PodStatus {
                conditions: Some(virtual_conditions),
                ..PodStatus::default()
            };
            let mut status = virtual_pod_status(&physical, &virtual_status);
            gate_readiness(&mut status, &gates);
            let ready = status
                .conditions
                .as_ref()
                .unwrap()
                .iter()
                .find(|c| c.type_ == "Ready")
                .unwrap();
            assert_eq!(ready.status, want, "{what}");
            assert_eq!(ready.reason.as_deref(), reason, "{what}");
            for gate in &gates {
                assert!(
                    status
                        .conditions
                        .as_ref()
                        .unwrap()
                        .iter()
                        .all(|c| c.type_ != gate.condition_type
                            || virtual_status.conditions.as_ref().unwrap().contains(c)),
                    "{what}: gate conditions are kept from the virtual pod"
                );
            }
        }
    }
}
