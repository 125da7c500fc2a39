//! Console page of the audit feature: the records of writes the signed-in user may read,
//! with the API's filters (instance, user, verb, door, time range) and paging.

use axum::Router;
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use http::StatusCode;
use serde::Deserialize;

use super::html::Html;
use super::page::live_page;
use super::request::{Shared, SignedIn, html, status_of};
use crate::api::{AuditRecordList, ListAuditRequest};

/// Records per page of the audit page.
pub const AUDIT_PAGE_SIZE: u32 = 100;

/// The audit page's query: the API's filters as the form sends them (empty means none).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct AuditPageQuery {
    /// Instance filter.
    pub instance: String,
    /// User filter.
    pub user: String,
    /// Verb filter.
    pub verb: String,
    /// Door filter.
    pub door: String,
    /// Start of the time range (RFC 3339).
    pub since: String,
    /// End of the time range (RFC 3339).
    pub until: String,
    /// 1-based page.
    pub page: Option<u32>,
}

impl AuditPageQuery {
    /// The API request this query asks for.
    pub fn request(&self) -> ListAuditRequest {
        let some = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_string());
        ListAuditRequest {
            instance: some(&self.instance),
            user: some(&self.user),
            verb: some(&self.verb),
            door: some(&self.door),
            since: some(&self.since),
            until: some(&self.until),
            page: Some(self.page.unwrap_or(1).max(1)),
            page_size: Some(AUDIT_PAGE_SIZE),
        }
    }

    /// The query string of page `page` with the same filters.
    fn page_link(&self, page: u32) -> String {
        super::page::filtered_page_link(
            "/ui/audit",
            &[
                ("instance", self.instance.as_str()),
                ("user", self.user.as_str()),
                ("verb", self.verb.as_str()),
                ("door", self.door.as_str()),
                ("since", self.since.as_str()),
                ("until", self.until.as_str()),
            ],
            page,
        )
    }
}

/// The filter form, filled in with `query`.
fn filters(h: &mut Html, query: &AuditPageQuery) {
    h.raw("<form method=\"get\" action=\"/ui/audit\" class=\"filters\">");
    for (name, label, value) in [
        ("instance", "Instance", query.instance.as_str()),
        ("user", "User", query.user.as_str()),
        ("verb", "Verb", query.verb.as_str()),
        ("since", "Since (RFC 3339)", query.since.as_str()),
        ("until", "Until (RFC 3339)", query.until.as_str()),
    ] {
        h.open("label", &[]).text(label).raw(" ");
        h.open("input", &[("name", name), ("id", name), ("value", value)]);
        h.close("label");
    }
    h.raw("<label>Door <select name=\"door\" id=\"door\">");
    for door in ["", "rest", "grpc", "console", "proxy"] {
        let shown = if door.is_empty() { "any" } else { door };
        if door == query.door {
            h.open("option", &[("value", door), ("selected", "selected")]);
        } else {
            h.open("option", &[("value", door)]);
        }
        h.text(shown).close("option");
    }
    h.raw("</select></label><button type=\"submit\" id=\"filter\">Filter</button></form>");
}

/// The records as a table, with links to the other pages.
fn records(h: &mut Html, list: &AuditRecordList, query: &AuditPageQuery) {
    if list.items.is_empty() {
        h.el("p", &[("class", "muted")], "No records match.");
        return;
    }
    h.raw("<table id=\"audit\"><thead><tr><th>Time</th><th>User</th><th>Acting as</th>")
        .raw("<th>Instance</th><th>Door</th><th>Verb</th><th>Object</th><th>Code</th>")
        .raw("<th>Message</th></tr></thead><tbody>");
    for r in &list.items {
        let o = &r.object;
        let group = if o.group.is_empty() {
            o.version.clone()
        } else {
            format!("{}/{}", o.group, o.version)
        };
        let mut object = format!("{group} {}", o.resource);
        if !o.subresource.is_empty() {
            object.push('/');
            object.push_str(&o.subresource);
        }
        if !o.namespace.is_empty() {
            object.push(' ');
            object.push_str(&o.namespace);
            object.push('/');
        } else {
            object.push(' ');
        }
        object.push_str(&o.name);
        let class = if r.code >= 400 {
            "badge bad"
        } else {
            "badge ok"
        };
        h.raw("<tr>")
            .el("td", &[], &r.time)
            .el("td", &[], &r.user)
            .el("td", &[], &r.acting_as)
            .el("td", &[], &r.instance)
            .el("td", &[], &r.door)
            .el("td", &[], &r.verb)
            .el("td", &[], &object)
            .raw("<td>")
            .el("span", &[("class", class)], &r.code.to_string())
            .raw("</td>")
            .el("td", &[], r.message.as_deref().unwrap_or(""))
            .raw("</tr>");
    }
    h.raw("</tbody></table>");
    let p = &list.pagination;
    super::page::page_nav(
        h,
        (p.total, p.page, p.pages),
        "records",
        ("Newer", "Older"),
        |page| query.page_link(page),
    );
}

async fn audit_page(
    State(console): State<Shared>,
    Query(query): Query<AuditPageQuery>,
    signed: SignedIn,
) -> Response {
    let mut head = Html::new();
    head.el("h1", &[], "Audit");
    filters(&mut head, &query);
    // New records appear as they are written; the filters above stay as typed.
    let refresh = query.page_link(query.page.unwrap_or(1).max(1));
    let part = console
        .api
        .list_audit(&signed.caller, query.request())
        .await
        .map(|list| {
            let mut h = Html::new();
            records(&mut h, &list, &query);
            h
        });
    let status = part.as_ref().err().map_or(StatusCode::OK, status_of);
    let live = ("audit-live", refresh.as_str());
    html(
        status,
        live_page(&signed.viewer(), "Audit", head, live, part),
    )
}

/// The audit page's route.
pub(super) fn routes() -> Router<Shared> {
    Router::new().route("/ui/audit", get(audit_page))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_asks_the_api_with_its_filters_only() {
        let query = AuditPageQuery {
            instance: "k1".into(),
            door: "proxy".into(),
            since: " 2026-11-29T00:00:00Z ".into(),
            ..Default::default()
        };
        let req = query.request();
        assert_eq!(req.instance.as_deref(), Some("k1"));
        assert_eq!(req.door.as_deref(), Some("proxy"));
        assert_eq!(req.since.as_deref(), Some("2026-11-29T00:00:00Z"));
        assert_eq!(req.user, None);
        assert_eq!(req.page, Some(1));
        assert_eq!(
            query.page_link(2),
            "/ui/audit?instance=k1&door=proxy&since=%202026-11-29T00%3A00%3A00Z%20&page=2"
        );
    }
}
