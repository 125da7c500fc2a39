//! The nodes of one member cluster, read through Karmada's cluster proxy as the signed-in user
//! (`ListMemberNodes`): each node's name, readiness, roles, kubelet version, CPU, memory and
//! pods requested against allocatable as bars, taints and age, 50 per page; refreshed every
//! 5 s. What is requested on a node is summed from the member's pods (`ListMemberObjects` of
//! `v1` pods), as `kubectl describe node` sums it; when the pods cannot be read the bars show
//! nothing requested and the page says why.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::{Path, Query, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use kube_kit::quantity::Quantity;
use serde::Deserialize;
use serde_json::Value;

use super::detail::{member_path, taint_text};
use crate::api::{
    ApiError, ListMemberNodesRequest, ListMemberObjectsRequest, ListOptions, ObjectList,
};
use crate::console::html::Html;
use crate::console::instances::view::usage_bar;
use crate::console::page::{Viewer, error_box, notice_box, page, page_nav, s};
use crate::console::request::{Shared, SignedIn, error_answer, html, is_htmx};

/// Nodes per page.
pub const NODES_PAGE_SIZE: u32 = 50;

/// The resources requested per node that the page draws.
const REQUESTED: [&str; 2] = ["cpu", "memory"];

/// The nodes page's query.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct NodesQuery {
    /// 1-based page.
    pub page: Option<u32>,
}

/// What the pods bound to one node request, and how many they are.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Requested {
    /// Summed requests by resource (`cpu`, `memory`).
    pub resources: BTreeMap<String, Quantity>,
    /// Pods bound to the node and not finished.
    pub pods: i64,
}

fn add(total: &mut BTreeMap<String, Quantity>, resources: Option<&Value>, only_larger: bool) {
    let Some(resources) = resources.and_then(Value::as_object) else {
        return;
    };
    for name in REQUESTED {
        let Some(q) = resources
            .get(name)
            .and_then(Value::as_str)
            .and_then(|q| Quantity::parse(q).ok())
        else {
            continue;
        };
        let entry = total.entry(name.to_owned()).or_insert(Quantity::ZERO);
        if !only_larger {
            *entry += q;
        } else if q.milli_value() > entry.milli_value() {
            *entry = q;
        }
    }
}

/// What one pod requests: the larger of its containers' summed requests and its largest
/// init container's, plus its overhead (`resourcehelper.PodRequestsAndLimits`, which
/// `kubectl describe node` sums in k8s.io/kubectl/pkg/describe/describe.go,
/// `getPodsTotalRequestsAndLimits`).
pub fn pod_requests(pod: &Value) -> BTreeMap<String, Quantity> {
    let mut sum = BTreeMap::new();
    for c in pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        add(&mut sum, c.pointer("/resources/requests"), false);
    }
    let mut init = BTreeMap::new();
    for c in pod
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        add(&mut init, c.pointer("/resources/requests"), true);
    }
    for (name, q) in init {
        let entry = sum.entry(name).or_insert(Quantity::ZERO);
        if q.milli_value() > entry.milli_value() {
            *entry = q;
        }
    }
    add(&mut sum, pod.pointer("/spec/overhead"), false);
    sum
}

/// What the pods of `pods` request on each node: pods bound to a node and neither
/// `Succeeded` nor `Failed` (the pods `kubectl describe node` counts).
pub fn requested_by_node(pods: &[Value]) -> BTreeMap<String, Requested> {
    let mut out: BTreeMap<String, Requested> = BTreeMap::new();
    for pod in pods {
        let Some(node) = s(pod, "/spec/nodeName").filter(|n| !n.is_empty()) else {
            continue;
        };
        if matches!(s(pod, "/status/phase"), Some("Succeeded" | "Failed")) {
            continue;
        }
        let entry = out.entry(node.to_owned()).or_default();
        entry.pods += 1;
        for (name, q) in pod_requests(pod) {
            *entry.resources.entry(name).or_insert(Quantity::ZERO) += q;
        }
    }
    out
}

/// A node's roles as `kubectl get nodes` finds them: the `node-role.kubernetes.io/<role>`
/// labels and the `kubernetes.io/role` label's value; `<none>` without any
/// (k8s.io/kubernetes/pkg/printers/internalversion/printers.go, `findNodeRoles`).
pub fn node_roles(node: &Value) -> String {
    let mut roles = BTreeSet::new();
    if let Some(labels) = node.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_owned());
                }
            } else if k == "kubernetes.io/role"
                && let Some(role) = v.as_str().filter(|r| !r.is_empty())
            {
                roles.insert(role.to_owned());
            }
        }
    }
    if roles.is_empty() {
        "<none>".to_owned()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    }
}

/// A node's status as `kubectl get nodes` prints it: `Ready`, `NotReady` or `Unknown` from
/// the `Ready` condition, with `,SchedulingDisabled` when cordoned.
pub fn node_status(node: &Value) -> String {
    let ready = node
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .and_then(|c| c["status"].as_str());
    let mut status = match ready {
        Some("True") => "Ready",
        Some("False") => "NotReady",
        _ => "Unknown",
    }
    .to_owned();
    if node.pointer("/spec/unschedulable") == Some(&Value::Bool(true)) {
        status.push_str(",SchedulingDisabled");
    }
    status
}

/// How long ago `created` (RFC 3339) was at `now`, in kubectl's short form (`45s`, `12m`,
/// `5h`, `3d`, `2y`); `–` when unknown.
pub fn age(created: Option<&str>, now: jiff::Timestamp) -> String {
    let Some(created) = created.and_then(|t| t.parse::<jiff::Timestamp>().ok()) else {
        return "–".to_owned();
    };
    let secs = now.duration_since(created).as_secs().max(0);
    let (m, h, d) = (secs / 60, secs / 3600, secs / 86400);
    if secs < 120 {
        format!("{secs}s")
    } else if m < 180 {
        format!("{m}m")
    } else if h < 48 {
        format!("{h}h")
    } else if d < 730 {
        format!("{d}d")
    } else {
        format!("{}y", d / 365)
    }
}

/// What the page shows: a page of nodes and what their pods request (or why that is unknown).
#[derive(Debug)]
pub struct NodesView {
    /// The page of nodes.
    pub nodes: ObjectList,
    /// Requests by node, or the API's refusal to list the member's pods.
    pub requested: Result<BTreeMap<String, Requested>, ApiError>,
    /// Now, for the ages.
    pub now: jiff::Timestamp,
}

/// A bar of `used` of the node's `allocatable`; only the allocatable when the use is unknown.
fn bar(h: &mut Html, what: &str, used: Option<&str>, allocatable: Option<&str>) {
    match (used, allocatable) {
        (None, Some(total)) => {
            h.open("span", &[("class", "bar-text")])
                .text(total)
                .raw(" allocatable")
                .close("span");
        }
        _ => usage_bar(h, what, used, allocatable),
    }
}

/// The live part of the nodes page.
pub fn nodes_live(instance: &str, cluster: &str, view: &NodesView) -> Html {
    let path = format!("{}/nodes", member_path(instance, cluster));
    let p = view.nodes.pagination;
    let refresh = format!("{path}?page={}", p.page.max(1));
    let mut h = Html::with_capacity(1024 + view.nodes.items.len() * 800);
    h.open(
        "div",
        &[
            ("id", "nodes-live"),
            ("hx-get", &refresh),
            ("hx-trigger", "every 5s"),
            ("hx-swap", "outerHTML"),
        ],
    );
    if let Err(err) = &view.requested {
        notice_box(
            &mut h,
            &format!(
                "What the pods request per node is not shown: the member's pods could not be read ({}).",
                err.message
            ),
        );
    }
    h.raw("<table id=\"nodes\" class=\"list\"><thead><tr><th>Name</th><th>Status</th><th>Roles</th><th>Kubelet</th><th>CPU requested</th><th>Memory requested</th><th>Pods</th><th>Taints</th><th>Age</th></tr></thead><tbody>");
    if view.nodes.items.is_empty() {
        h.raw("<tr><td colspan=\"9\" class=\"muted\">No nodes.</td></tr>");
    }
    let none = Requested::default();
    for node in &view.nodes.items {
        let name = s(node, "/metadata/name").unwrap_or_default();
        let requested = view
            .requested
            .as_ref()
            .ok()
            .and_then(|r| r.get(name))
            .unwrap_or(&none);
        let known = view.requested.is_ok();
        h.open("tr", &[("data-node", name)]);
        h.el("td", &[("class", "name")], name);
        let status = node_status(node);
        h.open("td", &[("class", "status")]);
        crate::console::page::state_badge(&mut h, &status);
        h.close("td");
        h.el("td", &[("class", "roles")], &node_roles(node));
        h.el(
            "td",
            &[("class", "kubelet")],
            s(node, "/status/nodeInfo/kubeletVersion").unwrap_or("–"),
        );
        for r in REQUESTED {
            let used = requested
                .resources
                .get(r)
                .map(Quantity::to_canonical_string);
            h.open("td", &[("class", r)]);
            bar(
                &mut h,
                r,
                if known {
                    Some(used.as_deref().unwrap_or("0"))
                } else {
                    None
                },
                s(node, &format!("/status/allocatable/{r}")),
            );
            h.close("td");
        }
        let pods = requested.pods.to_string();
        h.open("td", &[("class", "pods")]);
        bar(
            &mut h,
            "pods",
            known.then_some(pods.as_str()),
            s(node, "/status/allocatable/pods"),
        );
        h.close("td");
        let taints: Vec<String> = node
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(taint_text)
            .collect();
        h.el(
            "td",
            &[("class", "taints")],
            &if taints.is_empty() {
                "–".to_owned()
            } else {
                taints.join(", ")
            },
        );
        h.el(
            "td",
            &[("class", "age")],
            &age(s(node, "/metadata/creationTimestamp"), view.now),
        );
        h.raw("</tr>");
    }
    h.raw("</tbody></table>");
    page_nav(
        &mut h,
        (p.total, p.page, p.pages),
        "nodes",
        ("Previous", "Next"),
        |page| format!("{path}?page={page}"),
    );
    h.close("div");
    h
}

/// The nodes page (`fragment`: only its live part, for htmx).
pub fn nodes_page(
    viewer: &Viewer<'_>,
    instance: &str,
    cluster: &str,
    view: &NodesView,
    fragment: bool,
) -> String {
    let live = nodes_live(instance, cluster, view);
    if fragment {
        return live.finish();
    }
    let back = member_path(instance, cluster);
    let mut h = Html::new();
    h.open("p", &[("class", "crumbs")])
        .el("a", &[("href", &back)], cluster)
        .close("p");
    h.open("h1", &[])
        .raw("Nodes of member cluster ")
        .text(cluster)
        .close("h1");
    h.append(live);
    page(&format!("Nodes of {cluster}"), Some(viewer), h)
}

fn failed_live(instance: &str, cluster: &str, page: u32, err: &ApiError) -> String {
    let refresh = format!("{}/nodes?page={page}", member_path(instance, cluster));
    let mut h = Html::new();
    h.open(
        "div",
        &[
            ("id", "nodes-live"),
            ("hx-get", &refresh),
            ("hx-trigger", "every 5s"),
            ("hx-swap", "outerHTML"),
        ],
    );
    error_box(&mut h, err);
    h.close("div");
    h.finish()
}

/// `GET …/members/{cluster}/nodes?page=`.
pub(in crate::console) async fn nodes(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path((instance, cluster)): Path<(String, String)>,
    Query(query): Query<NodesQuery>,
    signed: SignedIn,
) -> Response {
    let page = query.page.unwrap_or(1).max(1);
    let fragment = is_htmx(&headers);
    let nodes_req = ListMemberNodesRequest {
        instance: instance.clone(),
        cluster: cluster.clone(),
        options: ListOptions {
            page: Some(page),
            page_size: Some(NODES_PAGE_SIZE),
            ..ListOptions::default()
        },
    };
    let pods_req = ListMemberObjectsRequest {
        instance: instance.clone(),
        cluster: cluster.clone(),
        group: "core".to_owned(),
        version: "v1".to_owned(),
        resource: "pods".to_owned(),
        namespace: None,
        options: ListOptions::default(),
    };
    let (nodes, pods) = tokio::join!(
        console.api.list_member_nodes(&signed.caller, nodes_req),
        console.api.list_member_objects(&signed.caller, pods_req),
    );
    match nodes {
        Ok(nodes) => {
            let view = NodesView {
                nodes,
                requested: pods.map(|p| requested_by_node(&p.items)),
                now: jiff::Timestamp::now(),
            };
            html(
                StatusCode::OK,
                nodes_page(&signed.viewer(), &instance, &cluster, &view, fragment),
            )
        }
        Err(err) if fragment => html(StatusCode::OK, failed_live(&instance, &cluster, page, &err)),
        Err(err) => error_answer(&signed, &cluster, &err),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::Pagination;

    #[test]
    fn roles_table() {
        for (labels, want) in [
            (json!({}), "<none>"),
            (
                json!({"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "edge"}),
                "control-plane,edge",
            ),
            (json!({"node-role.kubernetes.io/": "x"}), "<none>"),
            (json!({"node-role.kubernetes.io/worker": "true"}), "worker"),
        ] {
            let node = json!({"metadata": {"labels": labels}});
            assert_eq!(node_roles(&node), want, "{labels}");
        }
    }

    #[test]
    fn status_table() {
        for (node, want) in [
            (
                json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
                "Ready",
            ),
            (
                json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
                "NotReady",
            ),
            (json!({}), "Unknown"),
            (
                json!({"spec": {"unschedulable": true}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
                "Ready,SchedulingDisabled",
            ),
        ] {
            assert_eq!(node_status(&node), want, "{node}");
        }
    }

    #[test]
    fn age_table() {
        let now: jiff::Timestamp = "2026-01-10T00:00:00Z".parse().unwrap();
        for (created, want) in [
            (Some("2026-01-09T23:59:15Z"), "45s"),
            (Some("2026-01-09T23:48:00Z"), "12m"),
            (Some("2026-01-09T19:00:00Z"), "5h"),
            (Some("2026-01-07T00:00:00Z"), "3d"),
            (Some("2023-01-01T00:00:00Z"), "3y"),
            (Some("2026-01-10T00:00:05Z"), "0s"),
            (Some("yesterday"), "–"),
            (None, "–"),
        ] {
            assert_eq!(age(created, now), want, "{created:?}");
        }
    }

    #[test]
    fn requests_are_summed_per_node_as_kubectl_describe_does() {
        let pod = |node: &str, phase: &str, spec: Value| {
            let mut spec = spec;
            spec["nodeName"] = json!(node);
            json!({"spec": spec, "status": {"phase": phase}})
        };
        let containers = |cpus: &[&str]| {
            json!(
                cpus.iter()
                    .map(|c| json!({"resources": {"requests": {"cpu": c, "memory": "64Mi"}}}))
                    .collect::<Vec<_>>()
            )
        };
        let pods = vec![
            pod(
                "n1",
                "Running",
                json!({"containers": containers(&["100m", "200m"])}),
            ),
            // The largest init container wins over the containers' sum; overhead is added.
            pod(
                "n1",
                "Pending",
                json!({"containers": containers(&["100m"]),
                       "initContainers": containers(&["500m", "1"]),
                       "overhead": {"cpu": "10m"}}),
            ),
            pod("n1", "Succeeded", json!({"containers": containers(&["4"])})),
            pod("", "Pending", json!({"containers": containers(&["4"])})),
            pod("n2", "Running", json!({"containers": [{"name": "none"}]})),
        ];
        let by_node = requested_by_node(&pods);
        let n1 = &by_node["n1"];
        assert_eq!(n1.pods, 2);
        assert_eq!(n1.resources["cpu"].milli_value(), 300 + 1010);
        assert_eq!(
            n1.resources["memory"].milli_value(),
            (64 * 2 + 64) * 1024 * 1024 * 1000
        );
        assert_eq!(by_node["n2"].pods, 1);
        assert!(by_node["n2"].resources.is_empty());
        assert_eq!(by_node.len(), 2);
    }

    #[test]
    fn the_page_lists_nodes_with_bars_and_pages() {
        let node = json!({
            "metadata": {"name": "n1", "creationTimestamp": "2026-01-09T00:00:00Z",
                         "labels": {"node-role.kubernetes.io/worker": ""}},
            "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                       "nodeInfo": {"kubeletVersion": "v1.31.2"},
                       "conditions": [{"type": "Ready", "status": "True"}]}
        });
        let view = NodesView {
            nodes: ObjectList {
                items: vec![node],
                pagination: Pagination {
                    total: 120,
                    page: 2,
                    page_size: 50,
                    pages: 3,
                },
            },
            requested: Ok(BTreeMap::from([(
                "n1".to_owned(),
                Requested {
                    resources: BTreeMap::from([(
                        "cpu".to_owned(),
                        Quantity::parse("1500m").unwrap(),
                    )]),
                    pods: 3,
                },
            )])),
            now: "2026-01-10T00:00:00Z".parse().unwrap(),
        };
        let viewer = Viewer {
            user: "u",
            csrf: "c",
        };
        let page = nodes_page(&viewer, "i", "east", &view, false);
        for want in [
            "worker",
            "v1.31.2",
            "1500m / 4",
            "0 / 16Gi",
            "3 / 110",
            "gpu:NoSchedule",
            ">24h<",
            "120 nodes · page 2 of 3",
            "href=\"/ui/instances/i/members/east/nodes?page=1\"",
            "href=\"/ui/instances/i/members/east/nodes?page=3\"",
            "hx-trigger=\"every 5s\"",
        ] {
            assert!(page.contains(want), "{want} missing:\n{page}");
        }
        // Pods that cannot be read: the bars show no use, and the page says why.
        let view = NodesView {
            requested: Err(ApiError::forbidden("no pods for you")),
            ..view
        };
        let page = nodes_page(&viewer, "i", "east", &view, true);
        assert!(page.contains("no pods for you"));
        assert!(!page.contains("0 / 16Gi"));
    }
}
