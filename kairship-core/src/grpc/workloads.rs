//! Conversions of the workloads feature's messages (the workload views, Deployment actions,
//! pods per cluster) between protobuf and the API's types.

use serde_json::Value;

use super::convert::{
    enum_value, json_to_struct, list_options, pagination, pagination_from_pb, struct_to_json,
};
use super::pb;
use crate::api::{
    ApiError, ClusterWorkloadStatus, DeploymentAction, DeploymentActionRequest, GetWorkloadRequest,
    ListWorkloadPodsRequest, ListWorkloadsRequest, Workload, WorkloadKind, WorkloadList,
};

/// `ListWorkloadPods`.
pub fn list_workload_pods(
    m: pb::ListWorkloadPodsRequest,
) -> Result<ListWorkloadPodsRequest, ApiError> {
    Ok(ListWorkloadPodsRequest {
        instance: m.instance,
        namespace: m.namespace,
        kind: workload_kind(&m.kind)?,
        name: m.name,
        options: list_options(m.options)?,
    })
}

/// The deployment verb; it must be given.
pub fn deployment_action(number: i32) -> Result<DeploymentAction, ApiError> {
    match enum_value::<pb::DeploymentVerb>("action", number)? {
        pb::DeploymentVerb::Unspecified => Err(ApiError::invalid_field(
            "action",
            "required: DEPLOYMENT_VERB_PAUSE, DEPLOYMENT_VERB_RESUME or DEPLOYMENT_VERB_RESTART",
        )),
        pb::DeploymentVerb::Pause => Ok(DeploymentAction::Pause),
        pb::DeploymentVerb::Resume => Ok(DeploymentAction::Resume),
        pb::DeploymentVerb::Restart => Ok(DeploymentAction::Restart),
    }
}

/// `DeploymentAction`.
pub fn deployment_action_request(
    m: pb::DeploymentActionRequest,
) -> Result<DeploymentActionRequest, ApiError> {
    Ok(DeploymentActionRequest {
        instance: m.instance,
        namespace: m.namespace,
        name: m.name,
        action: deployment_action(m.action)?,
        kind: m.kind.as_deref().map(workload_kind).transpose()?,
    })
}

/// `ListWorkloads`.
pub fn list_workloads(m: pb::ListWorkloadsRequest) -> Result<ListWorkloadsRequest, ApiError> {
    Ok(ListWorkloadsRequest {
        instance: m.instance,
        namespace: m.namespace,
        options: list_options(m.options)?,
    })
}

/// `GetWorkload`.
pub fn get_workload(m: pb::GetWorkloadRequest) -> GetWorkloadRequest {
    GetWorkloadRequest {
        instance: m.instance,
        namespace: m.namespace,
        name: m.name,
    }
}

fn cluster_status(c: ClusterWorkloadStatus) -> pb::ClusterWorkloadStatus {
    pb::ClusterWorkloadStatus {
        cluster: c.cluster,
        scheduled_replicas: c.scheduled_replicas,
        replicas: c.replicas,
        ready_replicas: c.ready_replicas,
        available_replicas: c.available_replicas,
        updated_replicas: c.updated_replicas,
        applied: c.applied,
        health: c.health,
        message: c.message,
    }
}

/// A workload.
pub fn workload(w: Workload) -> Result<pb::Workload, ApiError> {
    Ok(pb::Workload {
        name: w.name,
        namespace: w.namespace,
        replicas: w.replicas,
        ready_replicas: w.ready_replicas,
        available_replicas: w.available_replicas,
        paused: w.paused,
        binding: w.binding,
        policy: w.policy,
        clusters: w.clusters.into_iter().map(cluster_status).collect(),
        deployment: Some(json_to_struct(w.deployment)?),
    })
}

/// A page of workloads.
pub fn workload_list(list: WorkloadList) -> Result<pb::WorkloadList, ApiError> {
    Ok(pb::WorkloadList {
        items: list
            .items
            .into_iter()
            .map(workload)
            .collect::<Result<_, _>>()?,
        pagination: Some(pagination(list.pagination)),
    })
}

/// A gRPC workload as the service's [`Workload`].
pub fn workload_from_pb(w: pb::Workload) -> Workload {
    Workload {
        name: w.name,
        namespace: w.namespace,
        replicas: w.replicas,
        ready_replicas: w.ready_replicas,
        available_replicas: w.available_replicas,
        paused: w.paused,
        binding: w.binding,
        policy: w.policy,
        clusters: w
            .clusters
            .into_iter()
            .map(|c| ClusterWorkloadStatus {
                cluster: c.cluster,
                scheduled_replicas: c.scheduled_replicas,
                replicas: c.replicas,
                ready_replicas: c.ready_replicas,
                available_replicas: c.available_replicas,
                updated_replicas: c.updated_replicas,
                applied: c.applied,
                health: c.health,
                message: c.message,
            })
            .collect(),
        deployment: w.deployment.map_or(Value::Null, struct_to_json),
    }
}

/// A gRPC page of workloads as the service's [`WorkloadList`].
pub fn workload_list_from_pb(list: pb::WorkloadList) -> WorkloadList {
    WorkloadList {
        items: list.items.into_iter().map(workload_from_pb).collect(),
        pagination: pagination_from_pb(list.pagination),
    }
}

/// A workload kind of a member view or `:promote` (`deployments`, ...).
pub(super) fn workload_kind(text: &str) -> Result<WorkloadKind, ApiError> {
    WorkloadKind::parse(text).ok_or_else(|| {
        ApiError::invalid_field(
            "kind",
            format!(
                "unknown workload kind {text:?}; one of: deployments, statefulsets, daemonsets, jobs, cronjobs"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Pagination;
    use serde_json::json;

    #[test]
    fn deployment_verbs_table() {
        for (number, want) in [
            (1, Some(DeploymentAction::Pause)),
            (2, Some(DeploymentAction::Resume)),
            (3, Some(DeploymentAction::Restart)),
            (0, None),
            (9, None),
        ] {
            assert_eq!(deployment_action(number).ok(), want, "{number}");
        }
    }

    #[test]
    fn a_restart_names_its_workload_kind() {
        let request = |kind: Option<&str>| pb::DeploymentActionRequest {
            instance: "i".into(),
            namespace: "demo".into(),
            name: "db".into(),
            action: pb::DeploymentVerb::Restart as i32,
            kind: kind.map(str::to_owned),
        };
        assert_eq!(deployment_action_request(request(None)).unwrap().kind, None);
        assert_eq!(
            deployment_action_request(request(Some("statefulsets")))
                .unwrap()
                .kind,
            Some(WorkloadKind::Statefulsets)
        );
        let err = deployment_action_request(request(Some("pods"))).unwrap_err();
        assert!(err.message.contains("unknown workload kind"), "{err:?}");
    }

    #[test]
    fn workloads_round_trip() {
        let w = Workload {
            name: "web".into(),
            namespace: "team-a".into(),
            replicas: 3,
            ready_replicas: 2,
            available_replicas: 1,
            paused: true,
            binding: Some("web-deployment".into()),
            policy: None,
            clusters: vec![ClusterWorkloadStatus {
                cluster: "member1".into(),
                scheduled_replicas: Some(2),
                health: Some("Healthy".into()),
                ..Default::default()
            }],
            deployment: json!({"metadata": {"name": "web"}, "spec": {"replicas": 3}}),
        };
        let list = WorkloadList {
            items: vec![w.clone()],
            pagination: Pagination {
                total: 7,
                page: 2,
                page_size: 1,
                pages: 7,
            },
        };
        assert_eq!(
            workload_list_from_pb(workload_list(list.clone()).unwrap()),
            list
        );
    }
}
