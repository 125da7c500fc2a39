//! Console pages of the drift feature: the instance's drifted objects, one object's diff view
//! per member (what Karmada applies beside what the member holds), and the badge the workload
//! page loads when its Deployment has drifted. Everything comes from
//! [`DriftApi`](crate::api::DriftApi), so the API's rules and messages apply.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use http::StatusCode;
use serde_json::Value;

use super::html::{Html, url_segment};
use super::page::{live_page, notice_box};
use super::request::{Shared, SignedIn, html, status_of};
use crate::api::drift::{DriftState, MemberDrift};
use crate::api::{GetInstanceDriftRequest, GetObjectDriftRequest, InstanceDrift, ObjectDrift};

/// The console routes of this module (merged into [`super::routes`]).
pub(super) fn routes() -> Router<Shared> {
    let object = "/ui/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}/drift";
    Router::new()
        .route("/ui/instances/{instance}/drift", get(instance_page))
        .route(object, get(object_page))
        .route(&format!("{object}/badge"), get(badge))
}

/// The diff view of one namespaced object.
pub fn object_url(instance: &str, namespace: &str, gvr: (&str, &str, &str), name: &str) -> String {
    let (group, version, resource) = gvr;
    format!(
        "/ui/instances/{}/namespaces/{}/resources/{}/{}/{}/{}/drift",
        url_segment(instance),
        url_segment(namespace),
        url_segment(group),
        url_segment(version),
        url_segment(resource),
        url_segment(name)
    )
}

/// A placeholder the page fills with the drift badge of a Deployment once it loads (the
/// member reads take a moment, the page need not wait for them).
pub fn deployment_badge_loader(instance: &str, namespace: &str, name: &str) -> Html {
    let url = format!(
        "{}/badge",
        object_url(instance, namespace, ("apps", "v1", "deployments"), name)
    );
    let mut h = Html::new();
    h.open(
        "span",
        &[
            ("id", "drift-badge"),
            ("hx-get", &url),
            ("hx-trigger", "load"),
            ("hx-swap", "outerHTML"),
        ],
    )
    .close("span");
    h
}

fn json_text(value: Option<&Value>) -> String {
    match value {
        None => "–".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn state_badge(h: &mut Html, state: DriftState) {
    let (class, text) = match state {
        DriftState::InSync => ("badge ok", "in sync"),
        DriftState::Drifted => ("badge bad", "drifted"),
        DriftState::Missing => ("badge bad", "missing"),
        DriftState::Unreachable => ("badge muted", "unreachable"),
    };
    h.el("span", &[("class", class)], text);
}

fn fields_table(h: &mut Html, member: &MemberDrift) {
    if member.fields.is_empty() {
        return;
    }
    h.raw("<table class=\"list drift\"><thead><tr><th>Field</th><th>Karmada applies</th><th>The member holds</th></tr></thead><tbody>");
    for f in &member.fields {
        h.open("tr", &[("data-path", &f.path)]);
        h.el("td", &[("class", "path")], &f.path)
            .el(
                "td",
                &[("class", "applied")],
                &json_text(f.applied.as_ref()),
            )
            .el("td", &[("class", "live")], &json_text(f.live.as_ref()))
            .close("tr");
    }
    h.raw("</tbody></table>");
}

/// One object's copies, member by member.
pub fn object_html(instance: &str, drift: &ObjectDrift) -> Html {
    let mut h = Html::new();
    let back = format!("/ui/instances/{}/drift", url_segment(instance));
    h.open("p", &[("class", "crumbs")])
        .el("a", &[("href", &back)], "Drift")
        .close("p");
    h.open("h1", &[])
        .text(&drift.kind)
        .raw(" ")
        .text(drift.namespace.as_deref().unwrap_or_default())
        .raw("/")
        .text(&drift.name)
        .close("h1");
    if drift.members.is_empty() {
        notice_box(&mut h, "Karmada applies this object to no member cluster.");
    }
    for m in &drift.members {
        h.open(
            "section",
            &[("class", "member-drift"), ("data-cluster", &m.cluster)],
        );
        h.open("h2", &[]).text(&m.cluster).raw(" ");
        state_badge(&mut h, m.state);
        h.close("h2");
        if let Some(message) = &m.message {
            h.el("p", &[("class", "muted")], message);
        }
        fields_table(&mut h, m);
        h.close("section");
    }
    h
}

/// The instance's drifted objects.
pub fn instance_html(instance: &str, drift: &InstanceDrift) -> Html {
    let mut h = Html::new();
    let back = format!("/ui/instances/{}", url_segment(instance));
    h.open("p", &[("class", "crumbs")])
        .el("a", &[("href", &back)], instance)
        .close("p");
    h.raw("<h1>Drift</h1><p>Member copies that no longer match what Karmada applies (the template with its overrides). What the members' controllers own is not drift.</p>");
    h.open("p", &[("id", "drift-checked")])
        .num(drift.checked)
        .raw(" member copies compared.")
        .close("p");
    for u in &drift.unreachable {
        h.open("p", &[("class", "muted unreachable")])
            .text(&u.cluster)
            .raw(": ")
            .text(&u.message)
            .close("p");
    }
    h.raw("<table id=\"drifted\" class=\"list\"><thead><tr><th>Object</th><th>Cluster</th><th>State</th><th>Fields</th></tr></thead><tbody>");
    if drift.items.is_empty() {
        h.raw("<tr><td colspan=\"4\" class=\"muted\">No drift.</td></tr>");
    }
    for item in &drift.items {
        let (group, version) = item
            .api_version
            .split_once('/')
            .unwrap_or(("core", item.api_version.as_str()));
        let resource = crate::api::drift::applied::guess_resource(&item.kind);
        let namespace = item.namespace.as_deref().unwrap_or_default();
        for m in &item.members {
            h.raw("<tr><td>");
            if namespace.is_empty() {
                h.text(&item.kind).raw(" ").text(&item.name);
            } else {
                let url = object_url(instance, namespace, (group, version, &resource), &item.name);
                h.open("a", &[("href", &url)])
                    .text(&item.kind)
                    .raw(" ")
                    .text(namespace)
                    .raw("/")
                    .text(&item.name)
                    .close("a");
            }
            h.raw("</td>")
                .el("td", &[("class", "cluster")], &m.cluster)
                .raw("<td>");
            state_badge(&mut h, m.state);
            let paths: Vec<&str> = m.fields.iter().map(|f| f.path.as_str()).collect();
            h.raw("</td>")
                .el("td", &[("class", "paths")], &paths.join(", "))
                .raw("</tr>");
        }
    }
    h.raw("</tbody></table>");
    h
}

/// The badge of an object: a link to its diff view when a copy drifted or is missing, nothing
/// otherwise.
pub fn badge_html(url: &str, drift: &ObjectDrift) -> Html {
    let mut h = Html::new();
    let off: Vec<&str> = drift
        .members
        .iter()
        .filter(|m| matches!(m.state, DriftState::Drifted | DriftState::Missing))
        .map(|m| m.cluster.as_str())
        .collect();
    if off.is_empty() {
        return h;
    }
    h.open(
        "a",
        &[("id", "drift-badge"), ("class", "badge bad"), ("href", url)],
    )
    .raw("drifted in ")
    .text(&off.join(", "))
    .close("a");
    h
}

/// A drift page: `part` (or the API's error), refreshing itself from `refresh` as the
/// members' copies change.
fn drift_page(
    signed: &SignedIn,
    title: &str,
    refresh: &str,
    part: Result<Html, crate::api::ApiError>,
) -> Response {
    let status = part.as_ref().err().map_or(StatusCode::OK, status_of);
    let live = ("drift-live", refresh);
    html(
        status,
        live_page(&signed.viewer(), title, Html::new(), live, part),
    )
}

async fn instance_page(
    State(console): State<Shared>,
    Path(instance): Path<String>,
    signed: SignedIn,
) -> Response {
    let req = GetInstanceDriftRequest {
        instance: instance.clone(),
    };
    let part = console
        .api
        .instance_drift(&signed.caller, req)
        .await
        .map(|drift| instance_html(&instance, &drift));
    let refresh = format!("/ui/instances/{}/drift", url_segment(&instance));
    drift_page(&signed, "Drift", &refresh, part)
}

/// Path of an object's drift pages.
type ObjectPath = (String, String, String, String, String, String);

async fn read_object(
    console: &super::request::Console,
    caller: &crate::access::Caller,
    (instance, namespace, group, version, resource, name): ObjectPath,
) -> Result<ObjectDrift, crate::api::ApiError> {
    let req = GetObjectDriftRequest {
        instance,
        group,
        version,
        resource,
        namespace: Some(namespace),
        name,
    };
    console.api.object_drift(caller, req).await
}

async fn object_page(
    State(console): State<Shared>,
    Path(path): Path<ObjectPath>,
    signed: SignedIn,
) -> Response {
    let instance = path.0.clone();
    let title = format!("Drift of {}", path.5);
    let refresh = object_url(&path.0, &path.1, (&path.2, &path.3, &path.4), &path.5);
    let part = read_object(&console, &signed.caller, path)
        .await
        .map(|drift| object_html(&instance, &drift));
    drift_page(&signed, &title, &refresh, part)
}

async fn badge(
    State(console): State<Shared>,
    Path(path): Path<ObjectPath>,
    signed: SignedIn,
) -> Response {
    let url = object_url(&path.0, &path.1, (&path.2, &path.3, &path.4), &path.5);
    // A badge that cannot be computed is left out: the diff view says why.
    let body = match read_object(&console, &signed.caller, path).await {
        Ok(drift) => badge_html(&url, &drift).finish(),
        Err(_) => String::new(),
    };
    html(StatusCode::OK, body)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::drift::UnreachableMember;
    use crate::drift::FieldDrift;

    fn drifted() -> ObjectDrift {
        ObjectDrift {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("demo".into()),
            name: "web<x>".into(),
            members: vec![
                MemberDrift {
                    cluster: "east".into(),
                    state: DriftState::Drifted,
                    fields: vec![FieldDrift {
                        path: "metadata.labels.tier".into(),
                        applied: None,
                        live: Some(json!("<script>")),
                    }],
                    message: None,
                },
                MemberDrift {
                    cluster: "west".into(),
                    state: DriftState::InSync,
                    fields: vec![],
                    message: None,
                },
            ],
        }
    }

    #[test]
    fn drift_pages_show_each_member_and_escape() {
        let page = object_html("i1", &drifted()).finish();
        assert!(
            page.contains("data-path=\"metadata.labels.tier\""),
            "{page}"
        );
        assert!(page.contains("&lt;script&gt;"), "{page}");
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("data-cluster=\"west\""), "{page}");
        let list = instance_html(
            "i1",
            &InstanceDrift {
                checked: 2,
                items: vec![drifted()],
                unreachable: vec![UnreachableMember {
                    cluster: "north".into(),
                    message: "no endpoint".into(),
                }],
            },
        )
        .finish();
        assert!(
            list.contains(
                "/ui/instances/i1/namespaces/demo/resources/apps/v1/deployments/web%3Cx%3E/drift"
            ),
            "{list}"
        );
        assert!(list.contains("north"), "{list}");
        let url = "/u";
        let badge = badge_html(url, &drifted()).finish();
        assert!(badge.contains("drifted in east"), "{badge}");
        let mut in_sync = drifted();
        in_sync.members.truncate(0);
        assert!(badge_html(url, &in_sync).is_empty());
    }
}
