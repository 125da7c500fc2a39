//! Pure conversions between the protobuf messages of `kairship.v1` and the service's own
//! messages: Kubernetes objects as `google.protobuf.Struct` <-> JSON, enums, and
//! [`ApiError`] -> [`tonic::Status`].

use prost_types::value::Kind;
use serde_json::{Map, Number, Value};

use super::pb;
use crate::api::{
    ApiError, ClusterWorkloadStatus, Code, CreateInstanceRequest, CreateKubeconfigRequest,
    CreateObjectRequest, CreateResourceRequest, DeleteInstanceRequest, DeleteObjectRequest,
    DeleteResourceRequest, DeploymentAction, DeploymentActionRequest, GetClusterRequest,
    GetInstanceRequest, GetObjectRequest, GetResourceRequest, GetWorkloadRequest,
    JoinClusterRequest, KubeconfigResponse, ListClustersRequest, ListEventsRequest,
    ListInstancesRequest, ListObjectsRequest, ListOptions, ListResourcesRequest,
    ListWorkloadsRequest, Object, ObjectList, Pagination, PatchObjectRequest, PatchType,
    RemoveClusterRequest, ResourceKind, SortBy, SortDir, UpdateClusterRequest,
    UpdateInstanceRequest, UpdateObjectRequest, UpdateResourceRequest, Workload, WorkloadKind,
    WorkloadList,
};

/// Integers up to this magnitude survive the trip through a protobuf `double` exactly.
const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0; // 2^53

/// A JSON value as a protobuf `Value`. Numbers become doubles (protobuf's only number), so
/// integers beyond 2^53 lose precision, as with every JSON/Struct bridge.
pub fn json_to_value(value: Value) -> prost_types::Value {
    let kind = match value {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => Kind::StringValue(s),
        Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items.into_iter().map(json_to_value).collect(),
        }),
        Value::Object(map) => Kind::StructValue(map_to_struct(map)),
    };
    prost_types::Value { kind: Some(kind) }
}

fn map_to_struct(map: Map<String, Value>) -> prost_types::Struct {
    prost_types::Struct {
        fields: map
            .into_iter()
            .map(|(k, v)| (k, json_to_value(v)))
            .collect(),
    }
}

/// A JSON object as a `Struct`; anything else is an internal error (objects are always JSON
/// objects).
pub fn json_to_struct(value: Value) -> Result<prost_types::Struct, ApiError> {
    match value {
        Value::Object(map) => Ok(map_to_struct(map)),
        other => Err(ApiError::internal(format!(
            "expected a JSON object to send as google.protobuf.Struct, got {}",
            crate::api::body::type_name(&other)
        ))),
    }
}

/// A protobuf `Value` as JSON. Whole doubles within 2^53 become JSON integers, so Kubernetes
/// integers (replicas, ports) come back as they were sent; NaN and infinities become null.
pub fn value_to_json(value: prost_types::Value) -> Value {
    match value.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(b),
        Some(Kind::NumberValue(n)) => number_to_json(n),
        Some(Kind::StringValue(s)) => Value::String(s),
        Some(Kind::ListValue(list)) => {
            Value::Array(list.values.into_iter().map(value_to_json).collect())
        }
        Some(Kind::StructValue(s)) => struct_to_json(s),
    }
}

fn number_to_json(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() <= MAX_EXACT_INTEGER {
        // Exact: |n| <= 2^53 and whole.
        #[allow(clippy::cast_possible_truncation)]
        return Value::Number(Number::from(n as i64));
    }
    Number::from_f64(n).map_or(Value::Null, Value::Number)
}

/// A `Struct` as a JSON object.
pub fn struct_to_json(value: prost_types::Struct) -> Value {
    Value::Object(
        value
            .fields
            .into_iter()
            .map(|(k, v)| (k, value_to_json(v)))
            .collect(),
    )
}

/// The object body of a write; absent is an `InvalidArgument` naming the field.
fn body(value: Option<prost_types::Struct>) -> Result<Object, ApiError> {
    value
        .map(struct_to_json)
        .ok_or_else(|| ApiError::invalid_field("body", "required: the object to write"))
}

/// The sort key; unspecified is the default (name).
pub fn sort_by(value: pb::SortBy) -> Option<SortBy> {
    match value {
        pb::SortBy::Unspecified => None,
        pb::SortBy::Name => Some(SortBy::Name),
        pb::SortBy::CreationTimestamp => Some(SortBy::CreationTimestamp),
        pb::SortBy::State => Some(SortBy::State),
        pb::SortBy::Namespace => Some(SortBy::Namespace),
    }
}

/// The sort direction; unspecified is the default (ascending).
pub fn sort_dir(value: pb::SortDir) -> Option<SortDir> {
    match value {
        pb::SortDir::Unspecified => None,
        pb::SortDir::Asc => Some(SortDir::Asc),
        pb::SortDir::Desc => Some(SortDir::Desc),
    }
}

fn enum_value<E: TryFrom<i32>>(field: &str, number: i32) -> Result<E, ApiError> {
    E::try_from(number)
        .map_err(|_| ApiError::invalid_field(field, format!("unknown enum value {number}")))
}

/// List options; absent means the defaults.
pub fn list_options(value: Option<pb::ListOptions>) -> Result<ListOptions, ApiError> {
    let Some(o) = value else {
        return Ok(ListOptions::default());
    };
    Ok(ListOptions {
        page: o.page,
        page_size: o.page_size,
        sort_by: sort_by(enum_value("options.sortBy", o.sort_by)?),
        sort_dir: sort_dir(enum_value("options.sortDir", o.sort_dir)?),
        name: o.name,
        label_selector: o.label_selector,
        field_selector: o.field_selector,
        namespaces: o.namespaces,
        sort_field: o.sort_field,
    })
}

/// The resource kind; it must be given.
pub fn resource_kind(number: i32) -> Result<ResourceKind, ApiError> {
    let kind = match enum_value::<pb::ResourceKind>("kind", number)? {
        pb::ResourceKind::Unspecified => {
            return Err(ApiError::invalid_field(
                "kind",
                "required: one of RESOURCE_KIND_DEPLOYMENTS, ..._SERVICES, ..._CONFIGMAPS, \
                 ..._SECRETS, ..._JOBS, ..._CRONJOBS, ..._PROPAGATIONPOLICIES, \
                 ..._OVERRIDEPOLICIES, ..._CLUSTERPROPAGATIONPOLICIES, ..._CLUSTEROVERRIDEPOLICIES",
            ));
        }
        pb::ResourceKind::Deployments => ResourceKind::Deployments,
        pb::ResourceKind::Services => ResourceKind::Services,
        pb::ResourceKind::Configmaps => ResourceKind::Configmaps,
        pb::ResourceKind::Secrets => ResourceKind::Secrets,
        pb::ResourceKind::Jobs => ResourceKind::Jobs,
        pb::ResourceKind::Cronjobs => ResourceKind::Cronjobs,
        pb::ResourceKind::Propagationpolicies => ResourceKind::Propagationpolicies,
        pb::ResourceKind::Overridepolicies => ResourceKind::Overridepolicies,
        pb::ResourceKind::Clusterpropagationpolicies => ResourceKind::Clusterpropagationpolicies,
        pb::ResourceKind::Clusteroverridepolicies => ResourceKind::Clusteroverridepolicies,
    };
    Ok(kind)
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

/// An API error as a gRPC status: the same code number, the same message.
pub fn status(err: &ApiError) -> tonic::Status {
    tonic::Status::new(
        tonic::Code::from_i32(err.code.number()),
        err.message.clone(),
    )
}

/// A gRPC status as an API error (for clients comparing the two transports).
pub fn api_error(status: &tonic::Status) -> ApiError {
    let code = Code::from_number(status.code() as i32).unwrap_or(Code::Unknown);
    ApiError::new(code, status.message())
}

// ---- requests -----------------------------------------------------------------------------

/// `ListInstances`.
pub fn list_instances(m: pb::ListInstancesRequest) -> Result<ListInstancesRequest, ApiError> {
    Ok(ListInstancesRequest {
        options: list_options(m.options)?,
    })
}

/// `GetInstance`.
pub fn get_instance(m: pb::GetInstanceRequest) -> GetInstanceRequest {
    GetInstanceRequest {
        instance: m.instance,
    }
}

/// `CreateInstance`.
pub fn create_instance(m: pb::CreateInstanceRequest) -> Result<CreateInstanceRequest, ApiError> {
    Ok(CreateInstanceRequest {
        body: body(m.body)?,
    })
}

/// `UpdateInstance`.
pub fn update_instance(m: pb::UpdateInstanceRequest) -> Result<UpdateInstanceRequest, ApiError> {
    Ok(UpdateInstanceRequest {
        instance: m.instance,
        body: body(m.body)?,
    })
}

/// `DeleteInstance`.
pub fn delete_instance(m: pb::DeleteInstanceRequest) -> DeleteInstanceRequest {
    DeleteInstanceRequest {
        instance: m.instance,
        force: m.force.unwrap_or(false),
    }
}

/// `CreateKubeconfig`; `request_server` is the base URL the call arrived at.
pub fn create_kubeconfig(
    m: pb::CreateKubeconfigRequest,
    request_server: Option<String>,
) -> CreateKubeconfigRequest {
    CreateKubeconfigRequest {
        instance: m.instance,
        server: m.server,
        request_server,
    }
}

/// `ListClusters`.
pub fn list_clusters(m: pb::ListClustersRequest) -> Result<ListClustersRequest, ApiError> {
    Ok(ListClustersRequest {
        instance: m.instance,
        options: list_options(m.options)?,
    })
}

/// `GetCluster`.
pub fn get_cluster(m: pb::GetClusterRequest) -> GetClusterRequest {
    GetClusterRequest {
        instance: m.instance,
        cluster: m.cluster,
    }
}

/// `JoinCluster`.
pub fn join_cluster(m: pb::JoinClusterRequest) -> Result<JoinClusterRequest, ApiError> {
    Ok(JoinClusterRequest {
        instance: m.instance,
        body: body(m.body)?,
    })
}

/// `UpdateCluster`.
pub fn update_cluster(m: pb::UpdateClusterRequest) -> Result<UpdateClusterRequest, ApiError> {
    Ok(UpdateClusterRequest {
        instance: m.instance,
        cluster: m.cluster,
        body: body(m.body)?,
    })
}

/// `RemoveCluster`.
pub fn remove_cluster(m: pb::RemoveClusterRequest) -> RemoveClusterRequest {
    RemoveClusterRequest {
        instance: m.instance,
        cluster: m.cluster,
        force: m.force,
    }
}

/// `ListResources`.
pub fn list_resources(m: pb::ListResourcesRequest) -> Result<ListResourcesRequest, ApiError> {
    Ok(ListResourcesRequest {
        instance: m.instance,
        kind: resource_kind(m.kind)?,
        namespace: m.namespace,
        options: list_options(m.options)?,
    })
}

/// `GetResource`.
pub fn get_resource(m: pb::GetResourceRequest) -> Result<GetResourceRequest, ApiError> {
    Ok(GetResourceRequest {
        instance: m.instance,
        kind: resource_kind(m.kind)?,
        namespace: m.namespace,
        name: m.name,
    })
}

/// `CreateResource`.
pub fn create_resource(m: pb::CreateResourceRequest) -> Result<CreateResourceRequest, ApiError> {
    Ok(CreateResourceRequest {
        instance: m.instance,
        kind: resource_kind(m.kind)?,
        namespace: m.namespace,
        body: body(m.body)?,
    })
}

/// `UpdateResource`.
pub fn update_resource(m: pb::UpdateResourceRequest) -> Result<UpdateResourceRequest, ApiError> {
    Ok(UpdateResourceRequest {
        instance: m.instance,
        kind: resource_kind(m.kind)?,
        namespace: m.namespace,
        name: m.name,
        body: body(m.body)?,
    })
}

/// `DeleteResource`.
pub fn delete_resource(m: pb::DeleteResourceRequest) -> Result<DeleteResourceRequest, ApiError> {
    Ok(DeleteResourceRequest {
        instance: m.instance,
        kind: resource_kind(m.kind)?,
        namespace: m.namespace,
        name: m.name,
    })
}

/// The patch type; unspecified is a merge patch.
pub fn patch_type(number: i32) -> Result<PatchType, ApiError> {
    Ok(match enum_value::<pb::PatchType>("patchType", number)? {
        pb::PatchType::Unspecified | pb::PatchType::Merge => PatchType::Merge,
        pb::PatchType::Json => PatchType::Json,
        pb::PatchType::Strategic => PatchType::Strategic,
        pb::PatchType::Apply => PatchType::Apply,
    })
}

/// `ListObjects`.
pub fn list_objects(m: pb::ListObjectsRequest) -> Result<ListObjectsRequest, ApiError> {
    Ok(ListObjectsRequest {
        instance: m.instance,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        options: list_options(m.options)?,
    })
}

/// `GetObject`.
pub fn get_object(m: pb::GetObjectRequest) -> GetObjectRequest {
    GetObjectRequest {
        instance: m.instance,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        name: m.name,
    }
}

/// `CreateObject`.
pub fn create_object(m: pb::CreateObjectRequest) -> Result<CreateObjectRequest, ApiError> {
    Ok(CreateObjectRequest {
        instance: m.instance,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        body: body(m.body)?,
    })
}

/// `UpdateObject`.
pub fn update_object(m: pb::UpdateObjectRequest) -> Result<UpdateObjectRequest, ApiError> {
    Ok(UpdateObjectRequest {
        instance: m.instance,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        name: m.name,
        body: body(m.body)?,
    })
}

/// `PatchObject`.
pub fn patch_object(m: pb::PatchObjectRequest) -> Result<PatchObjectRequest, ApiError> {
    Ok(PatchObjectRequest {
        instance: m.instance,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        name: m.name,
        patch_type: patch_type(m.patch_type)?,
        patch: m
            .patch
            .map(value_to_json)
            .ok_or_else(|| ApiError::invalid_field("patch", "required: the patch"))?,
        field_manager: m.field_manager,
        force: m.force,
    })
}

/// `ListEvents`.
pub fn list_events(m: pb::ListEventsRequest) -> Result<ListEventsRequest, ApiError> {
    Ok(ListEventsRequest {
        instance: m.instance,
        namespace: m.namespace,
        group: m.group,
        version: m.version,
        resource: m.resource,
        name: m.name,
        type_: m.r#type,
        reason: m.reason,
        kind: m.kind,
        options: list_options(m.options)?,
    })
}

/// `DeleteObject`.
pub fn delete_object(m: pb::DeleteObjectRequest) -> DeleteObjectRequest {
    DeleteObjectRequest {
        instance: m.instance,
        group: m.group,
        version: m.version,
        resource: m.resource,
        namespace: m.namespace,
        name: m.name,
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

// ---- responses ----------------------------------------------------------------------------

/// Paging facts.
pub fn pagination(p: Pagination) -> pb::Pagination {
    pb::Pagination {
        total: p.total,
        page: p.page,
        page_size: p.page_size,
        pages: p.pages,
    }
}

/// A page of objects.
pub fn object_list(list: ObjectList) -> Result<pb::ObjectList, ApiError> {
    Ok(pb::ObjectList {
        items: list
            .items
            .into_iter()
            .map(json_to_struct)
            .collect::<Result<_, _>>()?,
        pagination: Some(pagination(list.pagination)),
    })
}

/// A kubeconfig.
pub fn kubeconfig(k: KubeconfigResponse) -> pb::KubeconfigResponse {
    pb::KubeconfigResponse {
        instance: k.instance,
        server: k.server,
        kubeconfig: k.kubeconfig,
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

// ---- responses, back (for Rust clients of the gRPC API) ---------------------------------

fn pagination_from_pb(p: Option<pb::Pagination>) -> Pagination {
    let p = p.unwrap_or_default();
    Pagination {
        total: p.total,
        page: p.page,
        page_size: p.page_size,
        pages: p.pages,
    }
}

/// A gRPC page of objects as the service's [`ObjectList`].
pub fn object_list_from_pb(list: pb::ObjectList) -> ObjectList {
    ObjectList {
        items: list.items.into_iter().map(struct_to_json).collect(),
        pagination: pagination_from_pb(list.pagination),
    }
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
    use serde_json::json;

    #[test]
    fn json_survives_the_struct_round_trip() {
        for value in [
            json!({}),
            json!({"a": null, "b": true, "c": "s"}),
            json!({"replicas": 3, "port": 8080, "negative": -7, "big": 9_007_199_254_740_992_i64}),
            json!({"ratio": 0.25, "nested": {"list": [1, "two", {"three": [3.5]}], "empty": []}}),
            json!({"metadata": {"name": "web", "labels": {"app": "web"}, "generation": 1}}),
        ] {
            let back = struct_to_json(json_to_struct(value.clone()).unwrap());
            assert_eq!(back, value);
        }
    }

    #[test]
    fn numbers_table() {
        for (n, want) in [
            (0.0, json!(0)),
            (3.0, json!(3)),
            (-2.0, json!(-2)),
            (1.5, json!(1.5)),
            (MAX_EXACT_INTEGER, json!(9_007_199_254_740_992_i64)),
            (MAX_EXACT_INTEGER * 4.0, json!(36_028_797_018_963_968.0)),
            (f64::NAN, Value::Null),
            (f64::INFINITY, Value::Null),
        ] {
            assert_eq!(number_to_json(n), want, "{n}");
        }
    }

    #[test]
    fn only_objects_become_structs() {
        for value in [json!(null), json!(1), json!("x"), json!([1])] {
            let err = json_to_struct(value).unwrap_err();
            assert_eq!(err.code, Code::Internal);
        }
    }

    #[test]
    fn every_proto_kind_maps_to_a_distinct_service_kind() {
        let mut seen = std::collections::BTreeSet::new();
        for number in 1..=10 {
            seen.insert(resource_kind(number).unwrap());
        }
        assert_eq!(seen.len(), ResourceKind::ALL.len());
        for bad in [0, 11, -1] {
            assert_eq!(
                resource_kind(bad).unwrap_err().code,
                Code::InvalidArgument,
                "{bad}"
            );
        }
    }

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
    fn list_options_defaults_and_values() {
        assert_eq!(list_options(None).unwrap(), ListOptions::default());
        let got = list_options(Some(pb::ListOptions {
            page: Some(2),
            page_size: Some(10),
            sort_by: pb::SortBy::CreationTimestamp as i32,
            sort_dir: pb::SortDir::Desc as i32,
            name: Some("we".into()),
            label_selector: Some("app=web".into()),
            field_selector: None,
            namespaces: Some("a,b".into()),
            sort_field: Some(".spec.replicas".into()),
        }))
        .unwrap();
        assert_eq!(
            got,
            ListOptions {
                page: Some(2),
                page_size: Some(10),
                sort_by: Some(SortBy::CreationTimestamp),
                sort_dir: Some(SortDir::Desc),
                name: Some("we".into()),
                label_selector: Some("app=web".into()),
                field_selector: None,
                namespaces: Some("a,b".into()),
                sort_field: Some(".spec.replicas".into()),
            }
        );
        let bad = list_options(Some(pb::ListOptions {
            sort_by: 42,
            ..Default::default()
        }))
        .unwrap_err();
        assert!(bad.message.contains("options.sortBy"), "{}", bad.message);
    }

    #[test]
    fn a_write_without_body_is_invalid() {
        let err = create_instance(pb::CreateInstanceRequest { body: None }).unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument);
        assert!(err.message.starts_with("body:"), "{}", err.message);
    }

    #[test]
    fn workloads_and_lists_round_trip() {
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
        let objects = ObjectList {
            items: vec![json!({"a": 1}), json!({"b": [true]})],
            pagination: Pagination {
                total: 2,
                page: 1,
                page_size: 2,
                pages: 1,
            },
        };
        assert_eq!(
            object_list_from_pb(object_list(objects.clone()).unwrap()),
            objects
        );
    }

    #[test]
    fn status_keeps_code_and_message() {
        for code in Code::ALL {
            let err = ApiError::new(code, "what failed");
            let status = status(&err);
            assert_eq!(status.code() as i32, code.number());
            assert_eq!(status.message(), "what failed");
            assert_eq!(api_error(&status), err);
        }
    }
}
