//! One member cluster's page: its mode, readiness (the conditions with their reasons),
//! Kubernetes version, API endpoint, labels, taints, provider / region / zones and resource use
//! (CPU, memory and pods allocated against allocatable, from the Cluster's
//! `status.resourceSummary`), with links to its nodes, its workloads and, for who may change
//! it, the edit form. The facts refresh every 5 s.

use axum::extract::{Path, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use crate::access::{InstanceResource, Verb};
use crate::api::{ApiError, GetClusterRequest, cluster_zones};
use crate::console::html::{Html, url_segment};
use crate::console::instances::view::{condition_status, usage_bar};
use crate::console::page::{Viewer, error_box, i, page, s, state_badge};
use crate::console::request::{Console, Shared, SignedIn, allowed, error_answer, html, is_htmx};

/// The resources whose use the page draws, as `resourceSummary` names them, with their
/// labels.
const RESOURCES: [(&str, &str); 3] = [("cpu", "CPU"), ("memory", "Memory"), ("pods", "Pods")];

/// `/ui/instances/{instance}/members/{cluster}`.
pub fn member_path(instance: &str, cluster: &str) -> String {
    format!(
        "/ui/instances/{}/members/{}",
        url_segment(instance),
        url_segment(cluster)
    )
}

/// The readiness of a Cluster as its `Ready` condition says (`Ready`, `NotReady`, `Unknown`).
pub fn readiness(cluster: &Value) -> &'static str {
    match condition_status(cluster, "Ready") {
        Some("True") => "Ready",
        Some("False") => "NotReady",
        _ => "Unknown",
    }
}

/// The labels of a Cluster, in key order.
pub fn labels_of(cluster: &Value) -> Vec<(&str, &str)> {
    cluster
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}

/// A taint as `kubectl` prints one: `key=value:Effect`, or `key:Effect` without a value.
pub fn taint_text(taint: &Value) -> String {
    let key = taint.get("key").and_then(Value::as_str).unwrap_or_default();
    let effect = taint
        .get("effect")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match taint
        .get("value")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
    {
        Some(value) => format!("{key}={value}:{effect}"),
        None => format!("{key}:{effect}"),
    }
}

fn taints_of(object: &Value) -> &[Value] {
    object
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The live part of the page: the facts, conditions, labels, taints and resource use.
pub fn member_live(instance: &str, cluster: &Value) -> Html {
    let name = s(cluster, "/metadata/name").unwrap_or_default();
    let path = member_path(instance, name);
    let mut h = Html::with_capacity(4096);
    h.open(
        "div",
        &[
            ("id", "member-live"),
            ("hx-get", &path),
            ("hx-trigger", "every 5s"),
            ("hx-swap", "outerHTML"),
        ],
    );
    h.raw("<dl class=\"facts\" id=\"member-facts\"><dt>Ready</dt><dd id=\"ready\">");
    state_badge(&mut h, readiness(cluster));
    h.raw("</dd>");
    let zones = cluster_zones(cluster).join(", ");
    let nodes = format!(
        "{}/{} ready",
        i(cluster, "/status/nodeSummary/readyNum"),
        i(cluster, "/status/nodeSummary/totalNum")
    );
    for (term, id, value) in [
        ("Mode", "mode", s(cluster, "/spec/syncMode")),
        (
            "Kubernetes",
            "kubernetes-version",
            s(cluster, "/status/kubernetesVersion"),
        ),
        (
            "API endpoint",
            "api-endpoint",
            s(cluster, "/spec/apiEndpoint"),
        ),
        ("Provider", "provider", s(cluster, "/spec/provider")),
        ("Region", "region", s(cluster, "/spec/region")),
        (
            "Zones",
            "zones",
            Some(zones.as_str()).filter(|z| !z.is_empty()),
        ),
        ("Nodes", "node-summary", Some(nodes.as_str())),
    ] {
        h.el("dt", &[], term)
            .el("dd", &[("id", id)], value.unwrap_or("–"));
    }
    h.raw("</dl>");

    h.raw("<h2>Conditions</h2><table id=\"conditions\" class=\"list\"><thead><tr><th>Type</th><th>Status</th><th>Reason</th><th>Message</th><th>Last transition</th></tr></thead><tbody>");
    let conditions = cluster
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if conditions.is_empty() {
        h.raw("<tr><td colspan=\"5\" class=\"muted\">No conditions reported yet.</td></tr>");
    }
    for c in conditions {
        let kind = s(c, "/type").unwrap_or_default();
        h.open("tr", &[("data-condition", kind)]);
        h.el("td", &[], kind);
        for p in ["/status", "/reason", "/message", "/lastTransitionTime"] {
            h.el("td", &[], s(c, p).unwrap_or("–"));
        }
        h.raw("</tr>");
    }
    h.raw("</tbody></table>");

    h.raw("<h2>Labels</h2><p id=\"labels\" class=\"placement\">");
    let labels = labels_of(cluster);
    if labels.is_empty() {
        h.raw("<span class=\"muted\">No labels.</span>");
    }
    for (k, v) in labels {
        h.el(
            "span",
            &[("class", "chip"), ("data-label", k)],
            &format!("{k}={v}"),
        );
    }
    h.raw("</p>");

    h.raw("<h2>Taints</h2><table id=\"taints\" class=\"list\"><thead><tr><th>Key</th><th>Value</th><th>Effect</th></tr></thead><tbody>");
    let taints = taints_of(cluster);
    if taints.is_empty() {
        h.raw("<tr><td colspan=\"3\" class=\"muted\">No taints.</td></tr>");
    }
    for t in taints {
        h.open("tr", &[("data-taint", &taint_text(t))]);
        for p in ["/key", "/value", "/effect"] {
            h.el("td", &[], s(t, p).unwrap_or("–"));
        }
        h.raw("</tr>");
    }
    h.raw("</tbody></table>");

    h.raw("<h2>Resources</h2><table id=\"resources\" class=\"list\"><thead><tr><th>Resource</th><th>Allocated of allocatable</th></tr></thead><tbody>");
    for (r, label) in RESOURCES {
        h.open("tr", &[("data-resource", r)]).el("td", &[], label);
        h.raw("<td>");
        usage_bar(
            &mut h,
            label,
            s(cluster, &format!("/status/resourceSummary/allocated/{r}")),
            s(cluster, &format!("/status/resourceSummary/allocatable/{r}")),
        );
        h.raw("</td></tr>");
    }
    h.raw("</tbody></table>");
    h.close("div");
    h
}

/// The member's page (`fragment`: only its live part, for htmx).
pub fn member_page(
    viewer: &Viewer<'_>,
    instance: &str,
    cluster: &Value,
    can_edit: bool,
    fragment: bool,
) -> String {
    let live = member_live(instance, cluster);
    if fragment {
        return live.finish();
    }
    let name = s(cluster, "/metadata/name").unwrap_or_default();
    let path = member_path(instance, name);
    let instance_path = format!("/ui/instances/{}", url_segment(instance));
    let mut h = Html::new();
    h.open("p", &[("class", "crumbs")])
        .el("a", &[("href", &instance_path)], instance)
        .raw(" / ")
        .el(
            "a",
            &[("href", &format!("{instance_path}/members"))],
            "members",
        )
        .close("p");
    h.open("h1", &[])
        .raw("Member cluster ")
        .text(name)
        .close("h1");
    h.raw("<p class=\"toolbar\">");
    h.el(
        "a",
        &[("href", &format!("{path}/nodes")), ("id", "nodes")],
        "Nodes",
    );
    h.el(
        "a",
        &[("href", &format!("{path}/workloads")), ("id", "workloads")],
        "Workloads",
    );
    if can_edit {
        h.el(
            "a",
            &[
                ("href", &format!("{path}/edit")),
                ("class", "button"),
                ("id", "edit"),
            ],
            "Edit labels, taints and place",
        );
    }
    h.raw("</p>");
    h.append(live);
    page(&format!("Member {name}"), Some(viewer), h)
}

/// The live part when the refresh failed: the API's error, still refreshing.
fn failed_live(instance: &str, cluster: &str, err: &ApiError) -> String {
    let path = member_path(instance, cluster);
    let mut h = Html::new();
    h.open(
        "div",
        &[
            ("id", "member-live"),
            ("hx-get", &path),
            ("hx-trigger", "every 5s"),
            ("hx-swap", "outerHTML"),
        ],
    );
    error_box(&mut h, err);
    h.close("div");
    h.finish()
}

/// `GET /ui/instances/{instance}/members/{cluster}`.
pub(in crate::console) async fn member(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path((instance, cluster)): Path<(String, String)>,
    signed: SignedIn,
) -> Response {
    let req = GetClusterRequest {
        instance: instance.clone(),
        cluster: cluster.clone(),
    };
    let fragment = is_htmx(&headers);
    match console.api.get_cluster(&signed.caller, req).await {
        Ok(object) => {
            let can_edit = may_edit(&console, &signed, &instance).await;
            html(
                StatusCode::OK,
                member_page(&signed.viewer(), &instance, &object, can_edit, fragment),
            )
        }
        Err(err) if fragment => html(StatusCode::OK, failed_live(&instance, &cluster, &err)),
        Err(err) => error_answer(&signed, &cluster, &err),
    }
}

/// Whether the caller may change member clusters of the instance (`patch` inside it, as
/// `UpdateMember` needs).
pub(in crate::console) async fn may_edit(
    console: &Console,
    signed: &SignedIn,
    instance: &str,
) -> bool {
    allowed(
        console,
        &signed.caller,
        Verb::Patch,
        InstanceResource::Proxy,
        instance,
    )
    .await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn viewer() -> Viewer<'static> {
        Viewer {
            user: "u",
            csrf: "c",
        }
    }

    fn cluster() -> Value {
        json!({
            "metadata": {"name": "east", "labels": {"tier": "gold", "x": "<b>"}},
            "spec": {"syncMode": "Push", "apiEndpoint": "https://10.0.0.1:6443",
                     "provider": "aws", "region": "eu-west-1", "zones": ["eu-west-1a"],
                     "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                                {"key": "spot", "effect": "PreferNoSchedule"}]},
            "status": {"kubernetesVersion": "v1.31.2",
                       "conditions": [{"type": "Ready", "status": "False", "reason": "ClusterNotReachable",
                                       "message": "cluster is not reachable", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                       "nodeSummary": {"totalNum": 3, "readyNum": 2},
                       "resourceSummary": {"allocatable": {"cpu": "12", "memory": "48Gi", "pods": "330"},
                                           "allocated": {"cpu": "500m", "memory": "1Gi", "pods": "7"}}}
        })
    }

    #[test]
    fn taints_read_as_kubectl_prints_them() {
        for (taint, want) in [
            (
                json!({"key": "a", "value": "b", "effect": "NoSchedule"}),
                "a=b:NoSchedule",
            ),
            (json!({"key": "a", "effect": "NoExecute"}), "a:NoExecute"),
            (
                json!({"key": "a", "value": "", "effect": "NoExecute"}),
                "a:NoExecute",
            ),
        ] {
            assert_eq!(taint_text(&taint), want);
        }
    }

    #[test]
    fn readiness_table() {
        for (conditions, want) in [
            (json!([{"type": "Ready", "status": "True"}]), "Ready"),
            (json!([{"type": "Ready", "status": "False"}]), "NotReady"),
            (json!([]), "Unknown"),
        ] {
            let c = json!({"status": {"conditions": conditions}});
            assert_eq!(readiness(&c), want);
        }
    }

    #[test]
    fn the_page_shows_the_cluster_and_links_by_permission() {
        let page = member_page(&viewer(), "i", &cluster(), true, false);
        for want in [
            "ClusterNotReachable",
            "cluster is not reachable",
            "v1.31.2",
            "https://10.0.0.1:6443",
            "eu-west-1a",
            "2/3 ready",
            "tier=gold",
            "x=&lt;b&gt;",
            "dedicated=gpu:NoSchedule",
            "spot:PreferNoSchedule",
            "500m / 12",
            "7 / 330",
            "href=\"/ui/instances/i/members/east/nodes\"",
            "href=\"/ui/instances/i/members/east/workloads\"",
            "href=\"/ui/instances/i/members/east/edit\"",
            "hx-trigger=\"every 5s\"",
        ] {
            assert!(page.contains(want), "{want} missing:\n{page}");
        }
        assert!(!page.contains("<b>"));
        let page = member_page(&viewer(), "i", &cluster(), false, false);
        assert!(!page.contains("/edit"));
        // The refresh is the live part only.
        let fragment = member_page(&viewer(), "i", &cluster(), true, true);
        assert!(fragment.starts_with("<div id=\"member-live\""));
        assert!(!fragment.contains("<html"));
    }
}
