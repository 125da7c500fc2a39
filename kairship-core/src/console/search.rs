//! Console page of the fleet search: the header's search box lands here, and the page offers
//! the API's filters (kind, name, label selector, namespace, instances) over every instance
//! the signed-in user may read, with each hit's instance, the hits per instance and paging.

use axum::Router;
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use http::StatusCode;
use serde::Deserialize;

use super::html::{Html, url_segment};
use super::page::live_page;
use super::request::{Shared, SignedIn, html, status_of};
use crate::api::{ResourceKind, SearchHit, SearchRequest, SearchResult};

/// Hits per page of the search page.
pub const SEARCH_PAGE_SIZE: u32 = 100;

/// The kind searched when the form names none (the header's box sends only a name).
const DEFAULT_KIND: &str = "Deployment";

/// The search page's query, as the forms send it (empty means none).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct SearchPageQuery {
    /// Kind searched (default Deployment).
    pub kind: String,
    /// Fuzzy name.
    pub name: String,
    /// Label selector.
    #[serde(rename = "labelSelector")]
    pub label_selector: String,
    /// Namespace.
    pub namespace: String,
    /// Instance or comma-separated instances.
    pub instance: String,
    /// 1-based page.
    pub page: Option<u32>,
}

impl SearchPageQuery {
    /// The kind searched.
    fn kind(&self) -> &str {
        let kind = self.kind.trim();
        if kind.is_empty() { DEFAULT_KIND } else { kind }
    }

    /// The API request this query asks for.
    pub fn request(&self) -> SearchRequest {
        let some = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_string());
        SearchRequest {
            kind: Some(self.kind().to_string()),
            name: some(&self.name),
            label_selector: some(&self.label_selector),
            namespace: some(&self.namespace),
            instance: some(&self.instance),
            page: Some(self.page.unwrap_or(1).max(1)),
            page_size: Some(SEARCH_PAGE_SIZE),
            ..SearchRequest::default()
        }
    }

    /// The query string of page `page` with the same filters.
    fn page_link(&self, page: u32) -> String {
        super::page::filtered_page_link(
            "/ui/search",
            &[
                ("kind", self.kind()),
                ("name", self.name.as_str()),
                ("labelSelector", self.label_selector.as_str()),
                ("namespace", self.namespace.as_str()),
                ("instance", self.instance.as_str()),
            ],
            page,
        )
    }
}

/// The filter form, filled in with `query`.
fn filters(h: &mut Html, query: &SearchPageQuery) {
    h.raw("<form method=\"get\" action=\"/ui/search\" class=\"filters\">");
    h.raw("<label>Kind <select name=\"kind\" id=\"kind\">");
    for kind in ResourceKind::ALL.map(ResourceKind::kind) {
        if kind.eq_ignore_ascii_case(query.kind()) {
            h.open("option", &[("value", kind), ("selected", "selected")]);
        } else {
            h.open("option", &[("value", kind)]);
        }
        h.text(kind).close("option");
    }
    h.raw("</select></label>");
    for (name, label, value) in [
        ("name", "Name contains", query.name.as_str()),
        (
            "labelSelector",
            "Label selector",
            query.label_selector.as_str(),
        ),
        ("namespace", "Namespace", query.namespace.as_str()),
        ("instance", "Instances (a,b)", query.instance.as_str()),
    ] {
        h.open("label", &[]).text(label).raw(" ");
        h.open("input", &[("name", name), ("id", name), ("value", value)]);
        h.close("label");
    }
    h.raw("<button type=\"submit\" id=\"search\">Search</button></form>");
}

/// Where a hit opens: a Deployment's workload page (status, scaling, pods), any other
/// object's page in the resource browser; `None` for a member cluster's copy (the browser
/// reads the Karmada control plane).
pub fn hit_url(hit: &SearchHit) -> Option<String> {
    if hit.cluster.is_some() {
        return None;
    }
    let namespace = hit.namespace.as_deref().filter(|ns| !ns.is_empty());
    if hit.kind == "Deployment"
        && let Some(ns) = namespace
    {
        return Some(format!(
            "/ui/instances/{}/namespaces/{}/workloads/{}",
            url_segment(&hit.instance),
            url_segment(ns),
            url_segment(&hit.name)
        ));
    }
    let (group, version) = super::browser::detail::group_version(&hit.api_version);
    let resource = super::browser::ResourcePath {
        instance: hit.instance.clone(),
        group: group.to_owned(),
        version: version.to_owned(),
        resource: super::browser::detail::guess_plural(&hit.kind),
    };
    Some(resource.object_url(namespace, &hit.name, ""))
}

/// The hits as a table, the totals per instance, the instances not searched and paging.
fn results(h: &mut Html, result: &SearchResult, query: &SearchPageQuery) {
    for u in &result.unavailable {
        h.raw("<p class=\"muted unavailable\">")
            .text(&format!("{} not searched: {}", u.instance, u.reason))
            .raw("</p>");
    }
    if !result.totals.is_empty() {
        let totals: Vec<String> = result
            .totals
            .iter()
            .map(|t| format!("{} {}", t.instance, t.total))
            .collect();
        h.el(
            "p",
            &[("class", "totals")],
            &format!("Per instance: {}", totals.join(", ")),
        );
    }
    if result.items.is_empty() {
        h.el("p", &[("class", "muted")], "Nothing matches.");
        return;
    }
    h.raw("<table id=\"hits\"><thead><tr><th>Instance</th><th>Namespace</th><th>Name</th>")
        .raw("<th>Kind</th><th>Labels</th><th>Created</th></tr></thead><tbody>");
    for hit in &result.items {
        let labels: Vec<String> = hit.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        h.raw("<tr><td>")
            .el(
                "a",
                &[(
                    "href",
                    &format!("/ui/instances/{}", url_segment(&hit.instance)),
                )],
                &hit.instance,
            )
            .raw("</td>")
            .el("td", &[], hit.namespace.as_deref().unwrap_or(""))
            .open("td", &[]);
        match hit_url(hit) {
            Some(url) => h.el("a", &[("href", &url), ("class", "hit")], &hit.name),
            None => h.text(&hit.name),
        };
        h.close("td")
            .el("td", &[], &hit.kind)
            .el("td", &[], &labels.join(", "))
            .el("td", &[], hit.creation_timestamp.as_deref().unwrap_or(""))
            .raw("</tr>");
    }
    h.raw("</tbody></table>");
    let p = &result.pagination;
    super::page::page_nav(
        h,
        (p.total, p.page, p.pages),
        "hits",
        ("Previous", "Next"),
        |page| query.page_link(page),
    );
}

async fn search_page(
    State(console): State<Shared>,
    Query(query): Query<SearchPageQuery>,
    signed: SignedIn,
) -> Response {
    let mut head = Html::new();
    head.el("h1", &[], "Search");
    filters(&mut head, &query);
    // The hits follow the instances as they change; the filters above stay as typed.
    let refresh = query.page_link(query.page.unwrap_or(1).max(1));
    let part = console
        .api
        .search(&signed.caller, query.request())
        .await
        .map(|result| {
            let mut h = Html::new();
            results(&mut h, &result, &query);
            h
        });
    let status = part.as_ref().err().map_or(StatusCode::OK, status_of);
    let live = ("hits-live", refresh.as_str());
    html(
        status,
        live_page(&signed.viewer(), "Search", head, live, part),
    )
}

/// The search page's route.
pub(super) fn routes() -> Router<Shared> {
    Router::new().route("/ui/search", get(search_page))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_asks_the_api_with_its_filters_only() {
        let query = SearchPageQuery {
            name: " web ".into(),
            instance: "k1,k2".into(),
            ..Default::default()
        };
        let req = query.request();
        assert_eq!(req.kind.as_deref(), Some("Deployment"));
        assert_eq!(req.name.as_deref(), Some("web"));
        assert_eq!(req.instance.as_deref(), Some("k1,k2"));
        assert_eq!(req.label_selector, None);
        assert_eq!(req.page, Some(1));
        assert_eq!(
            query.page_link(2),
            "/ui/search?kind=Deployment&name=%20web%20&instance=k1%2Ck2&page=2"
        );
    }

    #[test]
    fn hits_open_the_workload_or_the_object_page() {
        let hit =
            |kind: &str, api_version: &str, namespace: Option<&str>, cluster: Option<&str>| {
                SearchHit {
                    instance: "karmada a".into(),
                    cluster: cluster.map(str::to_owned),
                    api_version: api_version.into(),
                    kind: kind.into(),
                    namespace: namespace.map(str::to_owned),
                    name: "web/1".into(),
                    labels: Default::default(),
                    creation_timestamp: None,
                }
            };
        for (h, want) in [
            (
                hit("Deployment", "apps/v1", Some("demo"), None),
                Some("/ui/instances/karmada%20a/namespaces/demo/workloads/web%2F1"),
            ),
            (
                hit("ConfigMap", "v1", Some("demo"), None),
                Some("/ui/instances/karmada%20a/resources/core/v1/configmaps/web%2F1?ns=demo"),
            ),
            (
                hit(
                    "ClusterPropagationPolicy",
                    "policy.karmada.io/v1alpha1",
                    None,
                    None,
                ),
                Some(
                    "/ui/instances/karmada%20a/resources/policy.karmada.io/v1alpha1/clusterpropagationpolicies/web%2F1",
                ),
            ),
            (
                hit("Deployment", "apps/v1", Some("demo"), Some("east")),
                None,
            ),
        ] {
            assert_eq!(hit_url(&h).as_deref(), want, "{h:?}");
        }
    }

    #[test]
    fn each_hit_is_a_link_and_escaped() {
        let query = SearchPageQuery {
            name: "web".into(),
            page: Some(2),
            ..Default::default()
        };
        let result = SearchResult {
            items: vec![SearchHit {
                instance: "k1".into(),
                cluster: None,
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("demo".into()),
                name: "<web>".into(),
                labels: Default::default(),
                creation_timestamp: None,
            }],
            ..SearchResult::default()
        };
        let mut h = Html::new();
        results(&mut h, &result, &query);
        let out = h.finish();
        assert!(
            out.contains("href=\"/ui/instances/k1/namespaces/demo/workloads/%3Cweb%3E\" class=\"hit\">&lt;web&gt;</a>"),
            "{out}"
        );
    }
}
