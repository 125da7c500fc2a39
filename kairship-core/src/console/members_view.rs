//! What the console shows of the member clusters and of events: the pods of a workload per
//! member cluster (read through Karmada's cluster proxy by the service's member views) and the
//! recent events of a workload or an instance.

use serde_json::Value;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::html::{Html, url_segment};
use super::view::error_box;
use super::{Shared, html, signed_in};
use crate::access::Caller;
use crate::api::{
    ApiError, CLUSTER_ANNOTATION, KairshipApi, ListEventsRequest, ListOptions,
    ListWorkloadPodsRequest, ObjectList, SortDir, WorkloadKind,
};

/// Events shown at most.
pub const RECENT_EVENTS: u32 = 10;

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("–")
}

/// Restarts of a pod: the sum over its containers.
pub fn restarts(pod: &Value) -> i64 {
    pod.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map(|statuses| {
            statuses
                .iter()
                .filter_map(|s| s.get("restartCount").and_then(Value::as_i64))
                .sum()
        })
        .unwrap_or(0)
}

/// The pods of Deployment `name`, by cluster then name.
pub async fn load_pods(
    api: &dyn KairshipApi,
    caller: &Caller,
    instance: &str,
    namespace: &str,
    name: &str,
) -> Result<ObjectList, ApiError> {
    let mut pods = api
        .list_workload_pods(
            caller,
            ListWorkloadPodsRequest {
                instance: instance.to_owned(),
                namespace: namespace.to_owned(),
                kind: WorkloadKind::Deployments,
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

/// Where the pods part of a workload page refreshes from.
pub fn pods_url(instance: &str, namespace: &str, name: &str) -> String {
    format!(
        "/ui/instances/{}/namespaces/{}/workloads/{}/pods",
        url_segment(instance),
        url_segment(namespace),
        url_segment(name)
    )
}

/// The pods per cluster table (`id="pods"`, one row per pod with `data-cluster`), refreshed
/// from `refresh` every 5 s.
pub fn pods_section(refresh: &str, pods: &Result<ObjectList, ApiError>) -> Html {
    let mut h = Html::new();
    h.open(
        "section",
        &[
            ("id", "pods-live"),
            ("hx-get", refresh),
            ("hx-trigger", "every 5s"),
            ("hx-swap", "outerHTML"),
        ],
    );
    h.raw("<h2>Pods per cluster</h2>");
    match pods {
        Err(err) => error_box(&mut h, err),
        Ok(list) => {
            h.raw("<table id=\"pods\" class=\"list\"><thead><tr><th>Name</th><th>Cluster</th><th>Phase</th><th>Node</th><th>Restarts</th></tr></thead><tbody>");
            if list.items.is_empty() {
                h.raw("<tr><td colspan=\"5\" class=\"muted\">No pods in the member clusters.</td></tr>");
            }
            for pod in &list.items {
                let cluster = pod
                    .pointer("/metadata/annotations")
                    .and_then(|a| a.get(CLUSTER_ANNOTATION))
                    .and_then(Value::as_str)
                    .unwrap_or("–");
                let name = text(pod, "/metadata/name");
                h.open("tr", &[("data-cluster", cluster), ("data-pod", name)]);
                h.el("td", &[], name)
                    .el("td", &[("class", "cluster")], cluster)
                    .el("td", &[("class", "phase")], text(pod, "/status/phase"))
                    .el("td", &[("class", "node")], text(pod, "/spec/nodeName"))
                    .raw("<td class=\"restarts\">")
                    .num(restarts(pod))
                    .raw("</td></tr>");
            }
            h.raw("</tbody></table>");
        }
    }
    h.raw("</section>");
    h
}

/// `GET …/workloads/{name}/pods`: the pods part of a workload page, for its refresh.
pub(super) async fn workload_pods(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path((instance, namespace, name)): Path<(String, String, String)>,
) -> Response {
    let signed = match signed_in(&console, &headers).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let pods = load_pods(
        console.api.as_ref(),
        &signed.caller,
        &instance,
        &namespace,
        &name,
    )
    .await;
    let section = pods_section(&pods_url(&instance, &namespace, &name), &pods);
    html(StatusCode::OK, section.finish())
}

/// The recent events table (`id="events"`).
pub fn events_section(events: &Result<ObjectList, ApiError>) -> Html {
    let mut h = Html::new();
    h.raw("<section><h2>Recent events</h2>");
    match events {
        Err(err) => error_box(&mut h, err),
        Ok(list) => {
            h.raw("<table id=\"events\" class=\"list\"><thead><tr><th>Type</th><th>Reason</th><th>Object</th><th>Message</th><th>Last seen</th></tr></thead><tbody>");
            if list.items.is_empty() {
                h.raw("<tr><td colspan=\"5\" class=\"muted\">No recent events.</td></tr>");
            }
            for event in &list.items {
                let object = format!(
                    "{}/{}",
                    text(event, "/involvedObject/kind"),
                    text(event, "/involvedObject/name")
                );
                h.raw("<tr>")
                    .el("td", &[], text(event, "/type"))
                    .el("td", &[], text(event, "/reason"))
                    .el("td", &[], &object)
                    .el("td", &[], text(event, "/message"))
                    .el("td", &[], text(event, "/lastTimestamp"))
                    .raw("</tr>");
            }
            h.raw("</tbody></table>");
        }
    }
    h.raw("</section>");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Pagination;
    use serde_json::json;

    #[test]
    fn pods_show_their_cluster_phase_node_and_restarts_escaped() {
        let pods = Ok(ObjectList {
            items: vec![json!({
                "metadata": {"name": "web-1<script>", "annotations": {CLUSTER_ANNOTATION: "east"}},
                "spec": {"nodeName": "east-n1"},
                "status": {"phase": "Running", "containerStatuses": [{"restartCount": 2}, {"restartCount": 1}]}
            })],
            pagination: Pagination::default(),
        });
        let html = pods_section("/ui/x", &pods).finish();
        assert!(html.contains("data-cluster=\"east\""), "{html}");
        assert!(html.contains("<td class=\"phase\">Running</td>"), "{html}");
        assert!(html.contains("<td class=\"node\">east-n1</td>"), "{html}");
        assert!(html.contains("<td class=\"restarts\">3</td>"), "{html}");
        assert!(
            html.contains("web-1&lt;script&gt;") && !html.contains("<script>"),
            "{html}"
        );
        assert!(html.contains("hx-get=\"/ui/x\""), "{html}");
        let none = pods_section("/ui/x", &Ok(ObjectList::default())).finish();
        assert!(none.contains("No pods"));
    }

    #[test]
    fn events_show_what_happened_to_which_object() {
        let events = Ok(ObjectList {
            items: vec![json!({
                "type": "Warning", "reason": "BackOff", "message": "restarting",
                "involvedObject": {"kind": "Pod", "name": "web-1"},
                "lastTimestamp": "2024-05-01T00:00:00Z"
            })],
            pagination: Pagination::default(),
        });
        let html = events_section(&events).finish();
        for want in [
            "Warning",
            "BackOff",
            "Pod/web-1",
            "restarting",
            "2024-05-01T00:00:00Z",
        ] {
            assert!(html.contains(want), "{want}: {html}");
        }
    }
}
