//! HTML of the workloads feature's pages: the workload page and its live part, the overview's
//! workloads table, pods and events sections.

use serde_json::Value;

use crate::api::{ApiError, CLUSTER_ANNOTATION, ObjectList, Workload, WorkloadKind};
use crate::console::html::{Html, url_segment};
use crate::console::page::{Viewer, csrf_field, error_box, i, notice_box, page, state_badge};
use crate::console::pictures::{placement_picture, workload_bars};

/// The placement of a workload: one chip per member cluster with its ready and scheduled
/// replicas.
pub(in crate::console) fn placement(h: &mut Html, w: &Workload) {
    h.raw("<span class=\"placement\">");
    if w.clusters.is_empty() {
        h.raw("<span class=\"muted\">not propagated</span>");
    }
    for c in &w.clusters {
        let ready = c.ready_replicas.unwrap_or(0);
        let want = c.scheduled_replicas.or(c.replicas).unwrap_or(0);
        let class = if c.health.as_deref() == Some("Healthy") && ready >= want {
            "chip ok"
        } else {
            "chip wait"
        };
        let title = format!(
            "{}: {ready} ready of {want} scheduled{}",
            c.cluster,
            c.message
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default()
        );
        h.open("span", &[("class", class), ("title", &title)])
            .text(&c.cluster)
            .raw(" ")
            .num(ready)
            .raw("/")
            .num(want)
            .close("span");
    }
    h.raw("</span>");
}

/// The `kubectl.kubernetes.io/restartedAt` template annotation: when the last restart was
/// asked for.
pub fn restarted_at(deployment: &Value) -> Option<&str> {
    deployment
        .pointer("/spec/template/metadata/annotations")?
        .get("kubectl.kubernetes.io/restartedAt")?
        .as_str()
}

/// The live part of a workload's page: rollout facts, actions, per-cluster status and the
/// placement picture (`unplaced`: clusters the policy could use that got nothing).
pub fn workload_live(
    instance: &str,
    w: &Workload,
    (can_write, csrf): (bool, &str),
    unplaced: &[String],
    result: Option<Result<&str, &ApiError>>,
) -> Html {
    let base = format!(
        "/ui/instances/{}/namespaces/{}/workloads/{}",
        url_segment(instance),
        url_segment(&w.namespace),
        url_segment(&w.name)
    );
    let mut h = Html::with_capacity(4096);
    h.open(
        "div",
        &[
            ("id", "workload-live"),
            ("hx-get", &base),
            ("hx-trigger", "every 3s"),
            ("hx-swap", "outerHTML"),
        ],
    );
    match result {
        Some(Ok(message)) => notice_box(&mut h, message),
        Some(Err(err)) => error_box(&mut h, err),
        None => {}
    }
    let d = &w.deployment;
    h.raw("<dl class=\"facts\">")
        .raw("<dt>Ready</dt>")
        .el(
            "dd",
            &[("id", "ready")],
            &format!("{}/{}", w.ready_replicas, w.replicas),
        )
        .raw("<dt>Available</dt>")
        .open("dd", &[])
        .num(w.available_replicas)
        .close("dd")
        .raw("<dt>Paused</dt>")
        .el(
            "dd",
            &[("id", "paused")],
            if w.paused { "yes" } else { "no" },
        )
        .raw("<dt>Generation</dt>")
        .el(
            "dd",
            &[("id", "generation")],
            &format!(
                "{} (observed {})",
                i(d, "/metadata/generation"),
                i(d, "/status/observedGeneration")
            ),
        )
        .raw("<dt>Last restart</dt>")
        .el(
            "dd",
            &[("id", "restarted-at")],
            restarted_at(d).unwrap_or("never"),
        )
        .raw("<dt>Policy</dt>")
        .el("dd", &[], w.policy.as_deref().unwrap_or("–"))
        .raw("</dl>");
    if can_write {
        h.raw("<div class=\"toolbar\" id=\"actions\">");
        let pause = if w.paused { "resume" } else { "pause" };
        for (action, label) in [
            (pause, if w.paused { "Resume" } else { "Pause" }),
            ("restart", "Restart"),
        ] {
            let url = format!("{base}/{action}");
            open_action_form(&mut h, &url, csrf);
            let id = format!("action-{action}");
            h.el("button", &[("type", "submit"), ("id", &id)], label)
                .close("form");
        }
        let url = format!("{base}/scale");
        let replicas = w.replicas.to_string();
        open_action_form(&mut h, &url, csrf);
        replicas_input(&mut h, &replicas)
            .raw("<button type=\"submit\" id=\"action-scale\">Scale</button></form></div>");
    }
    h.raw("<h2>Clusters</h2><table id=\"workload-clusters\" class=\"list\"><thead><tr><th>Cluster</th><th>Scheduled</th><th>Replicas</th><th>Ready</th><th>Available</th><th>Updated</th><th>Applied</th><th>Health</th><th>Message</th></tr></thead><tbody>");
    if w.clusters.is_empty() {
        h.raw(
            "<tr><td colspan=\"9\" class=\"muted\">Not propagated to any member cluster.</td></tr>",
        );
    }
    let opt = |v: Option<i32>| v.map_or("–".to_owned(), |n| n.to_string());
    for c in &w.clusters {
        h.open("tr", &[("data-cluster", &c.cluster)]);
        h.el("td", &[], &c.cluster);
        for v in [
            c.scheduled_replicas,
            c.replicas,
            c.ready_replicas,
            c.available_replicas,
            c.updated_replicas,
        ] {
            h.el("td", &[], &opt(v));
        }
        h.el(
            "td",
            &[],
            match c.applied {
                Some(true) => "yes",
                Some(false) => "no",
                None => "–",
            },
        );
        h.raw("<td>");
        state_badge(&mut h, c.health.as_deref().unwrap_or("Unknown"));
        h.raw("</td>");
        h.el("td", &[], c.message.as_deref().unwrap_or(""));
        h.raw("</tr>");
    }
    h.raw("</tbody></table>");
    h.append(placement_picture(
        "placement-picture",
        &workload_bars(w, unplaced),
    ));
    h.raw("</div>");
    h
}

/// A workload's page: the live part and the Deployment as YAML.
pub fn workload_page(
    viewer: &Viewer<'_>,
    instance: &str,
    w: &Workload,
    can_write: bool,
    unplaced: &[String],
    members: Html,
) -> String {
    let mut h = Html::new();
    let back = format!(
        "/ui/instances/{}?ns={}",
        url_segment(instance),
        url_segment(&w.namespace)
    );
    h.open("p", &[("class", "crumbs")])
        .el("a", &[("href", &back)], instance)
        .raw(" / ")
        .text(&w.namespace)
        .close("p");
    h.open("h1", &[])
        .raw("Deployment ")
        .text(&w.name)
        .close("h1");
    h.append(workload_live(
        instance,
        w,
        (can_write, viewer.csrf),
        unplaced,
        None,
    ));
    // Pods per member cluster and events.
    h.append(members);
    h.raw("<h2>YAML</h2>");
    let yaml = serde_saphyr::to_string(&w.deployment)
        .unwrap_or_else(|e| format!("# cannot render as YAML: {e}"));
    h.el("pre", &[("id", "yaml"), ("class", "yaml")], &yaml);
    page(&w.name, Some(viewer), h)
}

/// Events shown at most.
pub const RECENT_EVENTS: u32 = 10;

pub(in crate::console) fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
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

/// Where the pods part of a Deployment's page refreshes from.
pub fn pods_url(instance: &str, namespace: &str, name: &str) -> String {
    format!(
        "{}/pods",
        page_url(instance, namespace, WorkloadKind::Deployments, name)
    )
}

/// The workload page of an object of `resource` (`(group, plural)`), when it has one: the
/// Deployments, StatefulSets, DaemonSets, Jobs and CronJobs of a namespace.
pub fn workload_page_for(
    instance: &str,
    (group, resource): (&str, &str),
    namespace: &str,
    name: &str,
) -> Option<String> {
    let kind = WorkloadKind::parse(resource).filter(|k| k.group() == group)?;
    (!namespace.is_empty()).then(|| page_url(instance, namespace, kind, name))
}

/// The console page of workload `name` of `kind`: `…/workloads/{name}` for a Deployment,
/// `…/{statefulsets|daemonsets|jobs|cronjobs}/{name}` for the others.
pub fn page_url(instance: &str, namespace: &str, kind: WorkloadKind, name: &str) -> String {
    let segment = match kind {
        WorkloadKind::Deployments => "workloads",
        other => other.plural(),
    };
    format!(
        "/ui/instances/{}/namespaces/{}/{segment}/{}",
        url_segment(instance),
        url_segment(namespace),
        url_segment(name)
    )
}

/// The pods per cluster table (`id="pods"`, one row per pod with `data-cluster`), refreshed
/// from `refresh` every 5 s.
pub fn pods_section(instance: &str, refresh: &str, pods: &Result<ObjectList, ApiError>) -> Html {
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
                let page = crate::console::pods::pod_url(
                    instance,
                    cluster,
                    text(pod, "/metadata/namespace"),
                    name,
                );
                h.raw("<td>")
                    .el("a", &[("class", "pod"), ("href", &page)], name)
                    .raw("</td>")
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

/// Opens the form of a workload action: a POST that htmx sends in place, answered with the
/// page's live part, carrying the session's CSRF token.
pub(super) fn open_action_form(h: &mut Html, url: &str, csrf: &str) {
    h.open(
        "form",
        &[
            ("method", "post"),
            ("action", url),
            ("hx-post", url),
            ("hx-target", "#workload-live"),
            ("hx-swap", "outerHTML"),
            ("class", "inline"),
        ],
    );
    csrf_field(h, csrf);
}

/// The scale form's replicas field.
pub(super) fn replicas_input<'a>(h: &'a mut Html, replicas: &str) -> &'a mut Html {
    h.open(
        "input",
        &[
            ("type", "number"),
            ("name", "replicas"),
            ("id", "replicas"),
            // Kept as typed when the live part is refreshed around it.
            ("hx-preserve", "true"),
            ("min", "0"),
            ("value", replicas),
        ],
    )
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
    use crate::api::{ClusterWorkloadStatus, Pagination};
    use serde_json::json;

    fn viewer() -> Viewer<'static> {
        Viewer {
            user: "<b>alice</b>",
            csrf: "c0ffee",
        }
    }

    const EVIL: &str = "<script>alert(1)</script>";

    fn assert_no_injection(html: &str) {
        assert!(!html.contains(EVIL), "unescaped value in:\n{html}");
        assert!(!html.contains("<b>alice"), "unescaped user in:\n{html}");
    }

    fn workload(name: &str) -> Workload {
        Workload {
            name: name.into(),
            namespace: "demo".into(),
            replicas: 3,
            ready_replicas: 2,
            available_replicas: 2,
            paused: false,
            binding: None,
            policy: Some("demo/spread".into()),
            clusters: vec![ClusterWorkloadStatus {
                cluster: EVIL.into(),
                scheduled_replicas: Some(2),
                ready_replicas: Some(2),
                health: Some("Healthy".into()),
                message: Some(EVIL.into()),
                ..Default::default()
            }],
            deployment: json!({"metadata": {"name": name, "labels": {"app": EVIL}, "generation": 2},
                "spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}}}}}),
        }
    }

    #[test]
    fn workload_page_escapes_and_hides_writes_from_viewers() {
        let w = workload(EVIL);
        let html = workload_page(&viewer(), "karmada-a", &w, true, &[], Html::new());
        assert_no_injection(&html);
        assert!(html.contains("id=\"action-restart\""));
        assert!(html.contains("2026-01-01T00:00:00Z"));
        assert!(html.contains("name=\"_csrf\" value=\"c0ffee\""));
        assert!(
            html.contains("/workloads/%3Cscript%3Ealert%281%29%3C%2Fscript%3E"),
            "names are encoded in URLs: {html}"
        );
        let html = workload_page(&viewer(), "karmada-a", &w, false, &[], Html::new());
        assert!(!html.contains("action-"), "{html}");
    }

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
        let html = pods_section("i", "/ui/x", &pods).finish();
        assert!(html.contains("data-cluster=\"east\""), "{html}");
        assert!(html.contains("<td class=\"phase\">Running</td>"), "{html}");
        assert!(html.contains("<td class=\"node\">east-n1</td>"), "{html}");
        assert!(html.contains("<td class=\"restarts\">3</td>"), "{html}");
        assert!(
            html.contains("web-1&lt;script&gt;") && !html.contains("<script>"),
            "{html}"
        );
        assert!(html.contains("hx-get=\"/ui/x\""), "{html}");
        let none = pods_section("i", "/ui/x", &Ok(ObjectList::default())).finish();
        assert!(none.contains("No pods"));
    }

    #[test]
    fn workload_pages_by_resource() {
        for (group, resource, want) in [
            (
                "apps",
                "deployments",
                Some("/ui/instances/i/namespaces/demo/workloads/w%2F1"),
            ),
            (
                "apps",
                "statefulsets",
                Some("/ui/instances/i/namespaces/demo/statefulsets/w%2F1"),
            ),
            (
                "apps",
                "daemonsets",
                Some("/ui/instances/i/namespaces/demo/daemonsets/w%2F1"),
            ),
            (
                "batch",
                "jobs",
                Some("/ui/instances/i/namespaces/demo/jobs/w%2F1"),
            ),
            (
                "batch",
                "cronjobs",
                Some("/ui/instances/i/namespaces/demo/cronjobs/w%2F1"),
            ),
            ("apps", "replicasets", None),
            ("example.com", "deployments", None),
            ("core", "configmaps", None),
        ] {
            assert_eq!(
                workload_page_for("i", (group, resource), "demo", "w/1").as_deref(),
                want,
                "{group}/{resource}"
            );
        }
        assert_eq!(
            workload_page_for("i", ("apps", "deployments"), "", "w"),
            None
        );
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
