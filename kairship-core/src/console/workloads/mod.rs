//! Console pages of the workloads feature: a Deployment with its per-cluster status, scaling,
//! the Deployment verbs, and its pods and events per member cluster; the pages of
//! StatefulSets, DaemonSets and Jobs ([`kinds`]); what they share (pods, events, scale, the
//! clusters a policy could use that got nothing).

pub mod kinds;
pub mod view;

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use self::view::{RECENT_EVENTS, pods_section, pods_url, text};
use crate::access::{Caller, InstanceResource, Verb};
use crate::api::placement::WorkloadReference;
use crate::api::{
    ApiError, CLUSTER_ANNOTATION, DeploymentAction, DeploymentActionRequest, GetObjectRequest,
    GetWorkloadRequest, KairshipApi, ListEventsRequest, ListOptions, ListWorkloadPodsRequest,
    ObjectList, POLICY_GROUP, PlacementPreviewSpec, PreviewPlacementRequest, SortDir,
    UpdateObjectRequest, WorkloadKind,
};
use crate::console::request::{
    Console, Shared, SignedForm, SignedIn, allowed, error_answer, html, is_htmx, see_other,
    status_of,
};
use crate::scheduling::Exclusion;

pub(in crate::console) async fn get_workload(
    console: &Console,
    caller: &Caller,
    instance: &str,
    namespace: &str,
    name: &str,
) -> Result<crate::api::Workload, ApiError> {
    console
        .api
        .get_workload(
            caller,
            GetWorkloadRequest {
                instance: instance.to_owned(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            },
        )
        .await
}

pub(in crate::console) async fn workload(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path((instance, namespace, name)): Path<(String, String, String)>,
    signed: SignedIn,
) -> Response {
    let w = match get_workload(&console, &signed.caller, &instance, &namespace, &name).await {
        Ok(w) => w,
        Err(err) => {
            return html(
                status_of(&err),
                crate::console::page::error_page(Some(&signed.viewer()), &name, &err),
            );
        }
    };
    let can_write = allowed(
        &console,
        &signed.caller,
        Verb::Patch,
        InstanceResource::Proxy,
        &instance,
    )
    .await;
    let api = console.api.as_ref();
    let unplaced = unplaced_of(
        api,
        &signed.caller,
        &instance,
        WorkloadKind::Deployments,
        &w,
    )
    .await;
    let body = if is_htmx(&headers) {
        view::workload_live(
            &instance,
            &w,
            (can_write, &signed.session.csrf),
            &unplaced,
            None,
        )
        .finish()
    } else {
        let object = Some(("apps", "v1", "deployments", name.as_str()));
        let (pods, events) = futures::join!(
            load_pods(
                api,
                &signed.caller,
                (&instance, &namespace, &name),
                WorkloadKind::Deployments
            ),
            load_events(api, &signed.caller, &instance, Some(&namespace), object),
        );
        let refresh = crate::console::workloads::view::pods_url(&instance, &namespace, &name);
        // The drift badge loads on its own: it reads every member's copy.
        let mut members =
            crate::console::drift::deployment_badge_loader(&instance, &namespace, &name);
        members.append(crate::console::workloads::view::pods_section(
            &instance, &refresh, &pods,
        ));
        members.append(crate::console::workloads::view::events_section(&events));
        view::workload_page(
            &signed.viewer(),
            &instance,
            &w,
            can_write,
            &unplaced,
            members,
        )
    };
    html(StatusCode::OK, body)
}

/// Scales a Deployment or StatefulSet by replacing it with `spec.replicas` changed (the API
/// has no scale call; the replace carries the read `resourceVersion`, so a concurrent change
/// is refused).
pub(in crate::console) async fn scale(
    console: &Console,
    caller: &Caller,
    (instance, namespace, name): (&str, &str, &str),
    kind: WorkloadKind,
    replicas: &str,
) -> Result<(), ApiError> {
    let replicas: i64 = replicas
        .trim()
        .parse()
        .ok()
        .filter(|r| *r >= 0)
        .ok_or_else(|| {
            ApiError::invalid_field("replicas", "replicas must be a whole number >= 0")
        })?;
    let mut object = console
        .api
        .get_object(caller, object_request(instance, namespace, kind, name))
        .await?;
    object["spec"]["replicas"] = Value::from(replicas);
    if let Some(o) = object.as_object_mut() {
        o.remove("status");
    }
    let at = object_request(instance, namespace, kind, name);
    console
        .api
        .update_object(
            caller,
            UpdateObjectRequest {
                instance: at.instance,
                group: at.group,
                version: at.version,
                resource: at.resource,
                namespace: at.namespace,
                name: at.name,
                body: object,
            },
        )
        .await
        .map(|_| ())
}

/// The clusters the policy that placed a workload could use but gave nothing, as the API's
/// placement preview of that policy for that workload answers them now: the clusters it would
/// choose, and those it leaves out only for spread constraints, resources or a division that
/// gave them no replica (not those the affinity, a taint or readiness rule out), less the
/// clusters `placed`. `policy` is the binding's policy (`namespace/name` of a
/// PropagationPolicy, or a ClusterPropagationPolicy's name). Empty when anything cannot be
/// read: the picture then only lacks its empty bars.
pub(in crate::console) async fn unplaced_clusters(
    api: &dyn KairshipApi,
    caller: &Caller,
    instance: &str,
    policy: Option<&str>,
    reference: WorkloadReference,
    placed: &[String],
) -> Vec<String> {
    let Some(policy) = policy else {
        return Vec::new();
    };
    let (namespace, resource, name) = match policy.split_once('/') {
        Some((ns, name)) => (Some(ns.to_owned()), "propagationpolicies", name),
        None => (None, "clusterpropagationpolicies", policy),
    };
    let read = GetObjectRequest {
        instance: instance.to_owned(),
        group: POLICY_GROUP.to_owned(),
        version: "v1alpha1".to_owned(),
        resource: resource.to_owned(),
        namespace,
        name: name.to_owned(),
    };
    let Ok(policy) = api.get_object(caller, read).await else {
        return Vec::new();
    };
    let preview = PreviewPlacementRequest {
        instance: instance.to_owned(),
        preview: PlacementPreviewSpec {
            policy: Some(policy),
            workload_ref: Some(reference),
            ..PlacementPreviewSpec::default()
        },
    };
    let Ok(preview) = api.preview_placement(caller, preview).await else {
        return Vec::new();
    };
    let usable = preview.clusters.into_iter().map(|t| t.cluster).chain(
        preview
            .left_out
            .into_iter()
            .filter(|l| {
                matches!(
                    l.exclusion,
                    Exclusion::SpreadConstraint | Exclusion::Resources | Exclusion::NoReplicas
                )
            })
            .map(|l| l.cluster),
    );
    let mut unplaced: Vec<String> = usable.filter(|c| !placed.contains(c)).collect();
    unplaced.sort();
    unplaced.dedup();
    unplaced
}

/// [`unplaced_clusters`] of a workload of `kind` joined with its binding.
pub(in crate::console) async fn unplaced_of(
    api: &dyn KairshipApi,
    caller: &Caller,
    instance: &str,
    kind: WorkloadKind,
    w: &crate::api::Workload,
) -> Vec<String> {
    let placed: Vec<String> = w.clusters.iter().map(|c| c.cluster.clone()).collect();
    let reference = WorkloadReference {
        group: kind.group().to_owned(),
        version: "v1".to_owned(),
        resource: kind.plural().to_owned(),
        namespace: Some(w.namespace.clone()),
        name: w.name.clone(),
    };
    unplaced_clusters(
        api,
        caller,
        instance,
        w.policy.as_deref(),
        reference,
        &placed,
    )
    .await
}

/// The generic read of workload `name` of `kind`.
pub(in crate::console) fn object_request(
    instance: &str,
    namespace: &str,
    kind: WorkloadKind,
    name: &str,
) -> GetObjectRequest {
    GetObjectRequest {
        instance: instance.to_owned(),
        group: kind.group().to_owned(),
        version: "v1".to_owned(),
        resource: kind.plural().to_owned(),
        namespace: Some(namespace.to_owned()),
        name: name.to_owned(),
    }
}

pub(in crate::console) async fn workload_action(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path((instance, namespace, name, action)): Path<(String, String, String, String)>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    let result = if action == "scale" {
        let replicas = fields.get("replicas").map(String::as_str).unwrap_or("");
        scale(
            &console,
            &signed.caller,
            (&instance, &namespace, &name),
            WorkloadKind::Deployments,
            replicas,
        )
        .await
        .map(|()| format!("Scaled to {} replicas.", replicas.trim()))
    } else if let Some(a) = DeploymentAction::parse(&action) {
        console
            .api
            .deployment_action(
                &signed.caller,
                DeploymentActionRequest {
                    instance: instance.clone(),
                    namespace: namespace.clone(),
                    name: name.clone(),
                    action: a,
                    kind: None,
                },
            )
            .await
            .map(|_| match a {
                DeploymentAction::Pause => "Paused.".to_owned(),
                DeploymentAction::Resume => "Resumed.".to_owned(),
                DeploymentAction::Restart => "Restart requested: a new rollout begins.".to_owned(),
            })
    } else {
        Err(ApiError::not_found(format!("no action {action}")))
    };
    if !is_htmx(&headers) {
        return match result {
            Ok(_) => {
                let to = format!(
                    "/ui/instances/{}/namespaces/{}/workloads/{}",
                    crate::console::html::url_segment(&instance),
                    crate::console::html::url_segment(&namespace),
                    crate::console::html::url_segment(&name)
                );
                see_other(&headers, &to)
            }
            Err(err) => error_answer(&signed, &name, &err),
        };
    }
    let status = result.as_ref().err().map_or(StatusCode::OK, status_of);
    let can_write = allowed(
        &console,
        &signed.caller,
        Verb::Patch,
        InstanceResource::Proxy,
        &instance,
    )
    .await;
    match get_workload(&console, &signed.caller, &instance, &namespace, &name).await {
        Ok(w) => {
            let shown = result.as_ref().map(String::as_str);
            let api = console.api.as_ref();
            let unplaced = unplaced_of(
                api,
                &signed.caller,
                &instance,
                WorkloadKind::Deployments,
                &w,
            )
            .await;
            html(
                status,
                view::workload_live(
                    &instance,
                    &w,
                    (can_write, &signed.session.csrf),
                    &unplaced,
                    Some(shown),
                )
                .finish(),
            )
        }
        Err(err) => {
            let mut h = crate::console::html::Html::new();
            crate::console::page::error_box(&mut h, result.as_ref().err().unwrap_or(&err));
            html(status_of(&err), h.finish())
        }
    }
}

/// The pods of workload `name` of `kind`, by cluster then name.
pub async fn load_pods(
    api: &dyn KairshipApi,
    caller: &Caller,
    (instance, namespace, name): (&str, &str, &str),
    kind: WorkloadKind,
) -> Result<ObjectList, ApiError> {
    let mut pods = api
        .list_workload_pods(
            caller,
            ListWorkloadPodsRequest {
                instance: instance.to_owned(),
                namespace: namespace.to_owned(),
                kind,
                name: name.to_owned(),
                options: ListOptions::default(),
            },
        )
        .await?;
    pods.items.sort_by(|a, b| {
        let key = |p: &Value| {
            (
                text(
                    p,
                    &format!(
                        "/metadata/annotations/{}",
                        CLUSTER_ANNOTATION.replace('/', "~1")
                    ),
                )
                .to_owned(),
                text(p, "/metadata/name").to_owned(),
            )
        };
        key(a).cmp(&key(b))
    });
    Ok(pods)
}

/// The most recent events of an instance, or of one object (`resource` and `name` in
/// `namespace`), newest first.
pub async fn load_events(
    api: &dyn KairshipApi,
    caller: &Caller,
    instance: &str,
    namespace: Option<&str>,
    object: Option<(&str, &str, &str, &str)>,
) -> Result<ObjectList, ApiError> {
    let (group, version, resource, name) = match object {
        Some((g, v, r, n)) => (
            Some(g.to_owned()),
            Some(v.to_owned()),
            Some(r.to_owned()),
            Some(n.to_owned()),
        ),
        None => (None, None, None, None),
    };
    api.list_events(
        caller,
        ListEventsRequest {
            instance: instance.to_owned(),
            namespace: namespace.map(str::to_owned),
            group,
            version,
            resource,
            name,
            options: ListOptions {
                sort_field: Some(".lastTimestamp".to_owned()),
                sort_dir: Some(SortDir::Desc),
                page_size: Some(RECENT_EVENTS),
                ..ListOptions::default()
            },
            ..ListEventsRequest::default()
        },
    )
    .await
}

/// `GET …/workloads/{name}/pods`: the pods part of a workload page, for its refresh.
pub(super) async fn workload_pods(
    State(console): State<Shared>,
    Path((instance, namespace, name)): Path<(String, String, String)>,
    signed: SignedIn,
) -> Response {
    let pods = load_pods(
        console.api.as_ref(),
        &signed.caller,
        (&instance, &namespace, &name),
        WorkloadKind::Deployments,
    )
    .await;
    let section = pods_section(&instance, &pods_url(&instance, &namespace, &name), &pods);
    html(StatusCode::OK, section.finish())
}

/// A workload's page, its pods and its verbs.
pub(super) fn routes() -> Router<Shared> {
    let w = "/ui/instances/{instance}/namespaces/{namespace}/workloads/{name}";
    Router::new()
        .route(w, get(workload))
        .route(&format!("{w}/pods"), get(workload_pods))
        .route(&format!("{w}/{{action}}"), post(workload_action))
        .merge(kinds::routes())
}
