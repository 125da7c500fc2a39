//! Conversions of the applications feature's messages (`CreateApplication`, `:promote`) and
//! of the Job/CronJob verbs of `kairship.v1`.

use super::convert::{json_to_struct, struct_to_json};
use super::pb;
use super::workloads::workload_kind;
use crate::api::{
    ApiError, ApplicationPort, ApplicationResult, ApplicationService, ApplicationSpec,
    ClusterOverride, CreateApplicationRequest, CronJobAction, CronJobActionRequest, EnvVar,
    Placement, PromoteWorkloadRequest, PromoteWorkloadResponse, RestartJobRequest,
};

/// An application's placement (also previewed by `PreviewPlacement`).
pub fn placement_from_pb(placement: pb::Placement) -> Placement {
    Placement {
        cluster_names: placement.cluster_names,
        cluster_labels: placement.cluster_labels.into_iter().collect(),
        providers: placement.providers,
        regions: placement.regions,
        zones: placement.zones,
        weights: placement.weights.into_iter().collect(),
    }
}

/// `CreateApplication`; an absent workload is `null`, which the service refuses with a
/// message naming the field.
pub fn create_application(m: pb::CreateApplicationRequest) -> CreateApplicationRequest {
    let placement = m.placement.unwrap_or_default();
    CreateApplicationRequest {
        instance: m.instance,
        namespace: m.namespace,
        application: ApplicationSpec {
            workload: m
                .workload
                .map(struct_to_json)
                .unwrap_or(serde_json::Value::Null),
            service: m.service.map(|s| ApplicationService {
                type_: s.r#type,
                ports: s
                    .ports
                    .into_iter()
                    .map(|p| ApplicationPort {
                        name: p.name,
                        port: p.port,
                        target_port: p.target_port,
                        protocol: p.protocol,
                    })
                    .collect(),
            }),
            placement: placement_from_pb(placement),
            overrides: m
                .overrides
                .into_iter()
                .map(|o| ClusterOverride {
                    cluster: o.cluster,
                    image: o.image,
                    replicas: o.replicas,
                    env: o
                        .env
                        .into_iter()
                        .map(|e| EnvVar {
                            name: e.name,
                            value: e.value,
                        })
                        .collect(),
                    args: o.args,
                })
                .collect(),
            dry_run: m.dry_run,
        },
    }
}

/// The objects of an application.
pub fn application_result(r: ApplicationResult) -> Result<pb::ApplicationResult, ApiError> {
    Ok(pb::ApplicationResult {
        dry_run: r.dry_run,
        objects: r
            .objects
            .into_iter()
            .map(json_to_struct)
            .collect::<Result<_, _>>()?,
    })
}

/// The objects of an application, back from protobuf (for clients and tests).
pub fn application_result_from_pb(r: pb::ApplicationResult) -> ApplicationResult {
    ApplicationResult {
        dry_run: r.dry_run,
        objects: r.objects.into_iter().map(struct_to_json).collect(),
    }
}

/// `RestartJob`.
pub fn restart_job(m: pb::RestartJobRequest) -> RestartJobRequest {
    RestartJobRequest {
        instance: m.instance,
        namespace: m.namespace,
        name: m.name,
    }
}

/// `CronJobAction`; the verb must be given.
pub fn cronjob_action(m: pb::CronJobActionRequest) -> Result<CronJobActionRequest, ApiError> {
    let action = match pb::CronJobVerb::try_from(m.action) {
        Ok(pb::CronJobVerb::Pause) => CronJobAction::Pause,
        Ok(pb::CronJobVerb::Resume) => CronJobAction::Resume,
        Ok(pb::CronJobVerb::Unspecified) => {
            return Err(ApiError::invalid_field(
                "action",
                "required: CRON_JOB_VERB_PAUSE or CRON_JOB_VERB_RESUME",
            ));
        }
        Err(_) => {
            return Err(ApiError::invalid_field(
                "action",
                format!("unknown enum value {}", m.action),
            ));
        }
    };
    Ok(CronJobActionRequest {
        instance: m.instance,
        namespace: m.namespace,
        name: m.name,
        action,
    })
}

/// `PromoteWorkload`.
pub fn promote_workload(m: pb::PromoteWorkloadRequest) -> Result<PromoteWorkloadRequest, ApiError> {
    Ok(PromoteWorkloadRequest {
        instance: m.instance,
        cluster: m.cluster,
        namespace: m.namespace,
        kind: workload_kind(&m.kind)?,
        name: m.name,
        dry_run: m.dry_run,
    })
}

/// The answer of `PromoteWorkload`.
pub fn promote_response(
    r: PromoteWorkloadResponse,
) -> Result<pb::PromoteWorkloadResponse, ApiError> {
    Ok(pb::PromoteWorkloadResponse {
        dry_run: r.dry_run,
        objects: r
            .objects
            .into_iter()
            .map(json_to_struct)
            .collect::<Result<_, _>>()?,
    })
}

/// The API form of a `PromoteWorkload` answer (for clients).
pub fn promote_response_from_pb(r: pb::PromoteWorkloadResponse) -> PromoteWorkloadResponse {
    PromoteWorkloadResponse {
        dry_run: r.dry_run,
        objects: r
            .objects
            .into_iter()
            .map(super::convert::struct_to_json)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cronjob_verbs_must_be_given() {
        let m = |action| pb::CronJobActionRequest {
            instance: "i".into(),
            namespace: "n".into(),
            name: "c".into(),
            action,
        };
        assert_eq!(cronjob_action(m(1)).unwrap().action, CronJobAction::Pause);
        assert_eq!(cronjob_action(m(2)).unwrap().action, CronJobAction::Resume);
        assert!(
            cronjob_action(m(0))
                .unwrap_err()
                .message
                .starts_with("action")
        );
        assert!(cronjob_action(m(9)).is_err());
    }

    #[test]
    fn application_fields_carry_over() {
        let m = pb::CreateApplicationRequest {
            instance: "i".into(),
            namespace: "n".into(),
            workload: None,
            service: Some(pb::ApplicationService {
                r#type: Some("NodePort".into()),
                ports: vec![pb::ApplicationPort {
                    name: None,
                    port: 80,
                    target_port: Some(8080),
                    protocol: None,
                }],
            }),
            placement: Some(pb::Placement {
                cluster_names: vec!["a".into()],
                weights: [("a".to_owned(), 3)].into(),
                ..Default::default()
            }),
            overrides: vec![pb::ClusterOverride {
                cluster: "a".into(),
                image: Some("x:1".into()),
                replicas: Some(2),
                env: vec![pb::EnvVar {
                    name: "K".into(),
                    value: "V".into(),
                }],
                args: vec!["-v".into()],
            }],
            dry_run: true,
        };
        let req = create_application(m);
        let app = &req.application;
        assert!(app.dry_run && app.workload.is_null());
        assert_eq!(app.placement.weights["a"], 3);
        let service = app.service.as_ref().unwrap();
        assert_eq!(service.type_.as_deref(), Some("NodePort"));
        assert_eq!(service.ports[0].target_port, Some(8080));
        assert_eq!(app.overrides[0].env[0].value, "V");
        assert_eq!(app.overrides[0].args, ["-v"]);
    }
}
