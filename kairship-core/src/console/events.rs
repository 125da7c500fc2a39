//! Console page of an instance's events: Karmada's and Kubernetes' Events with the API's
//! filters (namespace, kind and name of the object, type, reason, reporting component),
//! newest first, in pages, refreshed every 5 s.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::routing::get;
use http::{HeaderMap, StatusCode};
use serde::Deserialize;

use super::html::{Html, url_segment};
use super::page::{error_box, filtered_page_link, page, page_nav, s};
use super::request::{Shared, SignedIn, html, is_htmx, status_of};
use serde_json::Value;

use crate::api::{ApiError, ListEventsRequest, ListOptions, ObjectList, SortDir};

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    s(v, pointer).unwrap_or_default()
}

/// Events per page.
pub const EVENTS_PAGE_SIZE: u32 = 50;

/// The events page's query as the form sends it (empty means no filter).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct EventsQuery {
    /// Namespace of the events.
    pub ns: String,
    /// Kind of the object the events are about.
    pub kind: String,
    /// Name of the object the events are about.
    pub name: String,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Reason (`ScheduleBindingFailed`).
    pub reason: String,
    /// The reporting component (`default-scheduler`).
    pub component: String,
    /// 1-based page.
    pub page: Option<u32>,
}

/// Whether `value` may go into a field selector as it is: what names, kinds and components
/// are made of, nothing that would end or add a requirement.
fn selector_safe(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 253
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':'))
}

impl EventsQuery {
    /// The API request this query asks for; a name or component that cannot be a field
    /// selector's value is refused here with the field it came from.
    pub fn request(&self, instance: &str) -> Result<ListEventsRequest, ApiError> {
        let some = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_owned());
        let mut fields = Vec::new();
        for (param, path, value) in [
            ("name", "involvedObject.name", self.name.trim()),
            ("component", "reportingComponent", self.component.trim()),
        ] {
            if value.is_empty() {
                continue;
            }
            if !selector_safe(value) {
                return Err(ApiError::invalid_field(
                    param,
                    format!("{value:?} is not a name: letters, digits, '-', '.', '_' and ':'"),
                ));
            }
            fields.push(format!("{path}={value}"));
        }
        Ok(ListEventsRequest {
            instance: instance.to_owned(),
            namespace: some(&self.ns),
            type_: some(&self.type_),
            reason: some(&self.reason),
            kind: some(&self.kind),
            options: ListOptions {
                page: Some(self.page.unwrap_or(1).max(1)),
                page_size: Some(EVENTS_PAGE_SIZE),
                sort_field: Some(".lastTimestamp".to_owned()),
                sort_dir: Some(SortDir::Desc),
                field_selector: (!fields.is_empty()).then(|| fields.join(",")),
                ..ListOptions::default()
            },
            ..ListEventsRequest::default()
        })
    }

    fn filters(&self) -> [(&'static str, &str); 6] {
        [
            ("ns", self.ns.as_str()),
            ("kind", self.kind.as_str()),
            ("name", self.name.as_str()),
            ("type", self.type_.as_str()),
            ("reason", self.reason.as_str()),
            ("component", self.component.as_str()),
        ]
    }

    /// The link to page `page` with the same filters.
    fn page_link(&self, instance: &str, page: u32) -> String {
        filtered_page_link(&events_path(instance), &self.filters(), page)
    }
}

/// Where an instance's events page is.
pub fn events_path(instance: &str) -> String {
    format!("/ui/instances/{}/events", url_segment(instance))
}

fn filter_form(h: &mut Html, instance: &str, query: &EventsQuery) {
    let path = events_path(instance);
    h.open(
        "form",
        &[("method", "get"), ("action", &path), ("class", "filters")],
    );
    for (name, label, value) in [
        ("ns", "Namespace", query.ns.as_str()),
        ("kind", "Kind", query.kind.as_str()),
        ("name", "Object", query.name.as_str()),
        ("reason", "Reason", query.reason.as_str()),
        ("component", "Component", query.component.as_str()),
    ] {
        let id = format!("events-{name}");
        h.open("label", &[("for", &id)]).text(label).close("label");
        h.open("input", &[("name", name), ("id", &id), ("value", value)]);
    }
    h.raw("<label for=\"events-type\">Type</label><select name=\"type\" id=\"events-type\">");
    for t in ["", "Normal", "Warning"] {
        let shown = if t.is_empty() { "any" } else { t };
        if t == query.type_ {
            h.open("option", &[("value", t), ("selected", "selected")]);
        } else {
            h.open("option", &[("value", t)]);
        }
        h.text(shown).close("option");
    }
    h.raw("</select><button type=\"submit\" id=\"filter\">Filter</button></form>");
}

/// The events table with its pager, in the element the page refreshes.
fn events_table(
    instance: &str,
    query: &EventsQuery,
    events: &Result<ObjectList, ApiError>,
) -> Html {
    let mut h = Html::new();
    let refresh = query.page_link(instance, query.page.unwrap_or(1).max(1));
    h.open(
        "section",
        &[
            ("id", "events-live"),
            ("hx-get", &refresh),
            ("hx-trigger", "every 5s"),
            ("hx-swap", "outerHTML"),
        ],
    );
    let list = match events {
        Err(err) => {
            error_box(&mut h, err);
            h.close("section");
            return h;
        }
        Ok(list) => list,
    };
    if list.items.is_empty() {
        h.el(
            "p",
            &[("class", "muted"), ("id", "no-events")],
            "No events match.",
        );
        h.close("section");
        return h;
    }
    h.raw("<table id=\"events\" class=\"list\"><thead><tr><th>Last seen</th><th>Type</th>")
        .raw("<th>Reason</th><th>Object</th><th>Message</th><th>Component</th><th>Count</th>")
        .raw("</tr></thead><tbody>");
    for e in &list.items {
        let kind = text(e, "/involvedObject/kind");
        let ns = text(e, "/involvedObject/namespace");
        let name = text(e, "/involvedObject/name");
        let object = if ns.is_empty() {
            format!("{kind}/{name}")
        } else {
            format!("{kind}/{ns}/{name}")
        };
        let kind_type = text(e, "/type");
        let badge = if kind_type == "Warning" {
            "badge bad"
        } else {
            "badge ok"
        };
        let component = match text(e, "/reportingComponent") {
            "" => text(e, "/source/component"),
            c => c,
        };
        let count = e.get("count").and_then(|c| c.as_i64()).unwrap_or(1);
        h.raw("<tr>")
            .el("td", &[], text(e, "/lastTimestamp"))
            .raw("<td>")
            .el("span", &[("class", badge)], kind_type)
            .raw("</td>")
            .el("td", &[], text(e, "/reason"))
            .el("td", &[], &object)
            .el("td", &[], text(e, "/message"))
            .el("td", &[], component)
            .el("td", &[], &count.to_string())
            .raw("</tr>");
    }
    h.raw("</tbody></table>");
    let p = &list.pagination;
    page_nav(
        &mut h,
        (p.total, p.page, p.pages),
        "events",
        ("Newer", "Older"),
        |page| query.page_link(instance, page),
    );
    h.close("section");
    h
}

async fn events_page(
    State(console): State<Shared>,
    Path(instance): Path<String>,
    Query(query): Query<EventsQuery>,
    headers: HeaderMap,
    signed: SignedIn,
) -> Response {
    let events = match query.request(&instance) {
        Ok(req) => console.api.list_events(&signed.caller, req).await,
        Err(err) => Err(err),
    };
    let status = match &events {
        Ok(_) => StatusCode::OK,
        Err(err) => status_of(err),
    };
    let table = events_table(&instance, &query, &events);
    if is_htmx(&headers) {
        return html(status, table.finish());
    }
    let mut h = Html::new();
    h.open("h1", &[])
        .raw("Events of ")
        .text(&instance)
        .close("h1");
    h.el(
        "a",
        &[("href", &format!("/ui/instances/{}", url_segment(&instance)))],
        "Back to the instance",
    );
    filter_form(&mut h, &instance, &query);
    h.append(table);
    html(status, page("Events", Some(&signed.viewer()), h))
}

/// The events page's route.
pub(super) fn routes() -> Router<Shared> {
    Router::new().route("/ui/instances/{instance}/events", get(events_page))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Pagination;
    use serde_json::json;

    #[test]
    fn the_form_asks_the_api_with_its_filters_only() {
        let query = EventsQuery {
            ns: "demo".into(),
            name: " shop ".into(),
            type_: "Warning".into(),
            component: "default-scheduler".into(),
            ..Default::default()
        };
        let req = query.request("k1").unwrap();
        assert_eq!(req.instance, "k1");
        assert_eq!(req.namespace.as_deref(), Some("demo"));
        assert_eq!(req.type_.as_deref(), Some("Warning"));
        assert_eq!(req.kind, None);
        assert_eq!(
            req.options.field_selector.as_deref(),
            Some("involvedObject.name=shop,reportingComponent=default-scheduler")
        );
        assert_eq!(req.options.sort_dir, Some(SortDir::Desc));
        assert_eq!(req.options.page, Some(1));
        assert_eq!(
            query.page_link("k1", 2),
            "/ui/instances/k1/events?ns=demo&name=%20shop%20&type=Warning&component=default-scheduler&page=2"
        );
    }

    #[test]
    fn a_value_that_would_change_the_selector_is_refused() {
        for (name, component, field) in [
            ("web,reason=x", "", "name"),
            ("", "a=b", "component"),
            ("", "x!=y", "component"),
        ] {
            let query = EventsQuery {
                name: name.into(),
                component: component.into(),
                ..Default::default()
            };
            let err = query.request("k1").unwrap_err();
            assert!(err.message.contains(field), "{err:?}");
        }
    }

    #[test]
    fn events_are_shown_escaped_with_their_component_and_count() {
        let list = ObjectList {
            items: vec![json!({
                "involvedObject": {"kind": "Deployment", "namespace": "demo", "name": "<b>web</b>"},
                "type": "Warning", "reason": "ScheduleBindingFailed",
                "message": "<script>alert(1)</script>", "count": 3,
                "source": {"component": "default-scheduler"},
                "lastTimestamp": "2026-11-29T07:00:00Z",
            })],
            pagination: Pagination {
                total: 1,
                page: 1,
                page_size: 50,
                pages: 1,
            },
        };
        let html = events_table("k1", &EventsQuery::default(), &Ok(list)).finish();
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(!html.contains("<b>web"), "{html}");
        assert!(html.contains("default-scheduler"), "{html}");
        assert!(html.contains("<td>3</td>"), "{html}");
        assert!(html.contains("badge bad"), "{html}");
        assert!(html.contains("hx-trigger=\"every 5s\""), "{html}");
    }
}
