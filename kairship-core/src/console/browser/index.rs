//! The browser's index: every resource the instance serves that can be listed, from the API's
//! `ListApiResources` (the instance's discovery), by group: the built-in groups people browse
//! first, then the other Kubernetes groups, custom resources, and Karmada's own groups. A
//! filter narrows it by kind, plural, short name, category or group; the form that opens any
//! resource by group, version and plural stays for what is not listed. The groups refresh
//! every 5 s, so a CRD created in the instance appears without a reload.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde::Deserialize;

use super::ResourcePath;
use crate::api::{ApiError, ApiResourceInfo, ApiResourceList, ListApiResourcesRequest};
use crate::console::html::{Html, url_segment};
use crate::console::page::{Viewer, error_box, page};
use crate::console::request::{Shared, SignedIn, html, is_htmx, status_of};

/// Which part of the index a group is shown in, in the index's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Section {
    /// Kubernetes' own groups.
    Kubernetes,
    /// Groups of CustomResourceDefinitions and aggregated APIs other than Karmada's.
    Custom,
    /// Karmada's groups (`*.karmada.io`).
    Karmada,
}

impl Section {
    /// The section's heading.
    pub fn heading(self) -> &'static str {
        match self {
            Section::Kubernetes => "Kubernetes",
            Section::Custom => "Custom resources",
            Section::Karmada => "Karmada",
        }
    }

    fn id(self) -> &'static str {
        match self {
            Section::Kubernetes => "section-kubernetes",
            Section::Custom => "section-custom",
            Section::Karmada => "section-karmada",
        }
    }
}

/// The built-in groups people browse most, in the order the index shows them.
const BROWSED_FIRST: &[&str] = &[
    crate::api::CORE_GROUP,
    "apps",
    "batch",
    "networking.k8s.io",
    "autoscaling",
    "policy",
    "storage.k8s.io",
    "rbac.authorization.k8s.io",
];

/// Where `group` comes in the index: its section, then its place among the groups browsed
/// first (the others after them, by name).
pub fn group_rank(group: &str) -> (Section, usize) {
    let first = BROWSED_FIRST
        .iter()
        .position(|g| *g == group)
        .unwrap_or(BROWSED_FIRST.len());
    let section = if first < BROWSED_FIRST.len()
        || group == "extensions"
        || group == "k8s.io"
        || group.ends_with(".k8s.io")
    {
        Section::Kubernetes
    } else if group == "karmada.io" || group.ends_with(".karmada.io") {
        Section::Karmada
    } else {
        Section::Custom
    };
    (section, first)
}

/// A resource the index offers: at its group's preferred version where it is served there,
/// else at the first version that serves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    /// API group (`core` for the core group).
    pub group: String,
    /// The version it is opened at.
    pub version: String,
    /// Every version serving it, that one first.
    pub versions: Vec<String>,
    /// Resource plural.
    pub resource: String,
    /// Kind.
    pub kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names.
    pub short_names: Vec<String>,
}

/// One group of the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexGroup {
    /// API group.
    pub group: String,
    /// Its section.
    pub section: Section,
    /// Its listable resources, by kind.
    pub entries: Vec<IndexEntry>,
}

/// Whether `r` matches the filter `needle` (lower case): a part of its kind, plural, group,
/// or a whole short name or category.
fn matches(r: &ApiResourceInfo, needle: &str) -> bool {
    needle.is_empty()
        || r.kind.to_lowercase().contains(needle)
        || r.resource.contains(needle)
        || r.group.contains(needle)
        || r.short_names.iter().any(|s| s == needle)
        || r.categories.iter().any(|c| c == needle)
}

/// The index of `served` (as `ListApiResources` orders it: each group's preferred version
/// first): every resource with the `list` verb matching `filter`, once per group, grouped and
/// ordered by [`group_rank`], each group's entries by kind.
pub fn index_groups(served: &[ApiResourceInfo], filter: &str) -> Vec<IndexGroup> {
    let needle = filter.trim().to_lowercase();
    let mut groups: Vec<IndexGroup> = Vec::new();
    for r in served {
        if !r.verbs.iter().any(|v| v == "list") || !matches(r, &needle) {
            continue;
        }
        let at = match groups.iter().position(|g| g.group == r.group) {
            Some(at) => at,
            None => {
                groups.push(IndexGroup {
                    group: r.group.clone(),
                    section: group_rank(&r.group).0,
                    entries: Vec::new(),
                });
                groups.len() - 1
            }
        };
        let entries = &mut groups[at].entries;
        match entries.iter_mut().find(|e| e.resource == r.resource) {
            Some(e) => {
                if !e.versions.contains(&r.version) {
                    e.versions.push(r.version.clone());
                }
            }
            None => entries.push(IndexEntry {
                group: r.group.clone(),
                version: r.version.clone(),
                versions: vec![r.version.clone()],
                resource: r.resource.clone(),
                kind: r.kind.clone(),
                namespaced: r.namespaced,
                short_names: r.short_names.clone(),
            }),
        }
    }
    for g in &mut groups {
        g.entries
            .sort_by(|a, b| (&a.kind, &a.resource).cmp(&(&b.kind, &b.resource)));
    }
    groups.sort_by(|a, b| {
        let (sa, ra) = group_rank(&a.group);
        let (sb, rb) = group_rank(&b.group);
        (sa, ra, &a.group).cmp(&(sb, rb, &b.group))
    });
    groups
}

/// The index's query: the filter.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct IndexQuery {
    /// Kind, plural, short name, category or group (part of it).
    pub q: String,
}

/// `GET /ui/instances/{i}/resources[?q=]`: the index (only its groups for htmx, which
/// refreshes them).
pub(in crate::console) async fn index(
    State(console): State<Shared>,
    signed: SignedIn,
    headers: HeaderMap,
    Path(instance): Path<String>,
    Query(query): Query<IndexQuery>,
) -> Response {
    let served = console
        .api
        .list_api_resources(
            &signed.caller,
            ListApiResourcesRequest {
                instance: instance.clone(),
            },
        )
        .await;
    let status = served.as_ref().err().map_or(StatusCode::OK, status_of);
    if is_htmx(&headers) {
        return html(status, index_section(&instance, &query, &served).finish());
    }
    html(
        status,
        index_page(&signed.viewer(), &instance, &query, &served),
    )
}

/// The index's live part: the groups and their resources, or the API's error.
pub fn index_section(
    instance: &str,
    query: &IndexQuery,
    served: &Result<ApiResourceList, ApiError>,
) -> Html {
    let mut refresh = format!("/ui/instances/{}/resources", url_segment(instance));
    if !query.q.is_empty() {
        refresh.push_str("?q=");
        refresh.push_str(&url_segment(&query.q));
    }
    let mut h = Html::with_capacity(16 * 1024);
    h.open(
        "section",
        &[
            ("id", "resource-groups"),
            ("hx-get", &refresh),
            ("hx-trigger", "every 5s"),
            ("hx-swap", "outerHTML"),
        ],
    );
    let served = match served {
        Ok(list) => list,
        Err(err) => {
            error_box(&mut h, err);
            h.close("section");
            return h;
        }
    };
    let groups = index_groups(&served.items, &query.q);
    if groups.is_empty() {
        h.raw("<p class=\"muted\">No resource matches.</p>");
    }
    let mut section = None;
    for group in &groups {
        if section != Some(group.section) {
            section = Some(group.section);
            h.open("h2", &[("id", group.section.id())])
                .text(group.section.heading())
                .close("h2");
        }
        h.open("h3", &[("data-group", &group.group)])
            .text(&group.group)
            .close("h3");
        h.raw("<table class=\"list\"><thead><tr><th>Kind</th><th>Resource</th><th>Short names</th><th>Version</th><th>Scope</th></tr></thead><tbody>");
        for e in &group.entries {
            let href = ResourcePath {
                instance: instance.to_owned(),
                group: e.group.clone(),
                version: e.version.clone(),
                resource: e.resource.clone(),
            }
            .list_url();
            h.open(
                "tr",
                &[("data-resource", &e.resource), ("data-group", &e.group)],
            )
            .open("td", &[])
            .el("a", &[("href", &href)], &e.kind)
            .close("td")
            .el("td", &[], &e.resource)
            .el("td", &[], &e.short_names.join(", "))
            .el("td", &[], &e.versions.join(", "))
            .el(
                "td",
                &[],
                if e.namespaced {
                    "Namespaced"
                } else {
                    "Cluster"
                },
            )
            .raw("</tr>");
        }
        h.raw("</tbody></table>");
    }
    h.close("section");
    h
}

/// The index page.
pub fn index_page(
    viewer: &Viewer<'_>,
    instance: &str,
    query: &IndexQuery,
    served: &Result<ApiResourceList, ApiError>,
) -> String {
    let base = format!("/ui/instances/{}", url_segment(instance));
    let mut h = Html::new();
    h.open("p", &[])
        .el("a", &[("href", &base)], instance)
        .close("p");
    h.open("h1", &[])
        .raw("Resources of ")
        .text(instance)
        .close("h1");
    let index = format!("{base}/resources");
    h.raw("<p class=\"muted\">Every resource the instance serves that can be listed, from its discovery. Any other resource opens by group (<code>core</code> for the core group), version and plural.</p>");
    h.open(
        "form",
        &[
            ("method", "get"),
            ("action", &index),
            ("class", "toolbar"),
            ("id", "resource-filter"),
            ("role", "search"),
            ("hx-get", &index),
            ("hx-target", "#resource-groups"),
            ("hx-swap", "outerHTML"),
            ("hx-push-url", "true"),
            (
                "hx-trigger",
                "input changed delay:300ms from:#resource-q, submit",
            ),
        ],
    )
    .raw("<label>Filter ")
    .open(
        "input",
        &[
            ("type", "search"),
            ("id", "resource-q"),
            ("name", "q"),
            ("value", &query.q),
            ("placeholder", "kind, plural, short name or group"),
        ],
    )
    .raw("</label><button type=\"submit\">Filter</button></form>");
    let open = format!("{base}/resources/open");
    h.open(
        "form",
        &[
            ("method", "get"),
            ("action", &open),
            ("class", "toolbar"),
            ("id", "open"),
        ],
    );
    h.raw("<label>Group <input type=\"text\" name=\"group\" placeholder=\"core\" required></label>")
        .raw("<label>Version <input type=\"text\" name=\"version\" placeholder=\"v1\" required></label>")
        .raw("<label>Plural <input type=\"text\" name=\"resource\" placeholder=\"pods\" required></label>")
        .raw("<button type=\"submit\">Open</button></form>");
    h.append(index_section(instance, query, served));
    page(&format!("Resources of {instance}"), Some(viewer), h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(
        group: &str,
        version: &str,
        resource: &str,
        kind: &str,
        verbs: &[&str],
    ) -> ApiResourceInfo {
        ApiResourceInfo {
            group: group.into(),
            version: version.into(),
            preferred: true,
            resource: resource.into(),
            singular: String::new(),
            kind: kind.into(),
            namespaced: true,
            verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
            short_names: Vec::new(),
            categories: Vec::new(),
            subresources: Vec::new(),
        }
    }

    #[test]
    fn groups_rank_built_ins_first_then_custom_resources_then_karmada() {
        let cases = [
            ("core", (Section::Kubernetes, 0)),
            ("apps", (Section::Kubernetes, 1)),
            ("rbac.authorization.k8s.io", (Section::Kubernetes, 7)),
            ("apiextensions.k8s.io", (Section::Kubernetes, 8)),
            ("metrics.k8s.io", (Section::Kubernetes, 8)),
            ("example.io", (Section::Custom, 8)),
            ("kairship.io", (Section::Custom, 8)),
            ("policy.karmada.io", (Section::Karmada, 8)),
            ("karmada.io", (Section::Karmada, 8)),
            ("notkarmada.io", (Section::Custom, 8)),
        ];
        for (group, want) in cases {
            assert_eq!(group_rank(group), want, "{group}");
        }
    }

    #[test]
    fn the_index_lists_listable_resources_once_at_the_preferred_version() {
        let mut hpa_v1 = served(
            "autoscaling",
            "v1",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            &["list"],
        );
        hpa_v1.preferred = false;
        let mut binding = served("core", "v1", "bindings", "Binding", &["create"]);
        binding.namespaced = true;
        let mut deploy = served("apps", "v1", "deployments", "Deployment", &["get", "list"]);
        deploy.short_names = vec!["deploy".into()];
        let list = [
            binding,
            served("core", "v1", "pods", "Pod", &["list"]),
            deploy,
            served(
                "policy.karmada.io",
                "v1alpha1",
                "propagationpolicies",
                "PropagationPolicy",
                &["list"],
            ),
            served("example.io", "v1", "widgets", "Widget", &["list"]),
            served(
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                "CustomResourceDefinition",
                &["list"],
            ),
            served(
                "autoscaling",
                "v2",
                "horizontalpodautoscalers",
                "HorizontalPodAutoscaler",
                &["list"],
            ),
            hpa_v1,
        ];
        let groups = index_groups(&list, "");
        let order: Vec<&str> = groups.iter().map(|g| g.group.as_str()).collect();
        assert_eq!(
            order,
            [
                "core",
                "apps",
                "autoscaling",
                "apiextensions.k8s.io",
                "example.io",
                "policy.karmada.io"
            ]
        );
        // Bindings cannot be listed.
        let core: Vec<&str> = groups[0]
            .entries
            .iter()
            .map(|e| e.resource.as_str())
            .collect();
        assert_eq!(core, ["pods"]);
        let hpa = &groups[2].entries[0];
        assert_eq!(
            (hpa.version.as_str(), hpa.versions.clone()),
            ("v2", vec!["v2".to_owned(), "v1".to_owned()])
        );
        // The filter: part of a kind, a whole short name, part of a group.
        for (filter, want) in [
            ("DEPLOY", vec!["deployments"]),
            ("widget", vec!["widgets"]),
            ("karmada", vec!["propagationpolicies"]),
            ("nothing", vec![]),
        ] {
            let found: Vec<String> = index_groups(&list, filter)
                .into_iter()
                .flat_map(|g| g.entries.into_iter().map(|e| e.resource))
                .collect();
            assert_eq!(found, want, "{filter}");
        }
    }

    #[test]
    fn the_page_escapes_what_the_instance_names_and_refreshes_its_groups() {
        let viewer = Viewer {
            user: "alice",
            csrf: "c0ffee",
        };
        let list = ApiResourceList {
            items: vec![served("evil.io", "v1", "things", "<b>Thing</b>", &["list"])],
        };
        let query = IndexQuery {
            q: "\"><script>".into(),
        };
        // The filter is written back escaped (and matches nothing here).
        let filtered = index_page(&viewer, "karmada-a", &query, &Ok(list.clone()));
        assert!(!filtered.contains("\"><script>"), "{filtered}");
        assert!(filtered.contains("No resource matches."), "{filtered}");
        let out = index_page(&viewer, "karmada-a", &IndexQuery::default(), &Ok(list));
        assert!(!out.contains("<b>Thing"), "{out}");
        assert!(out.contains("&lt;b&gt;Thing&lt;/b&gt;"), "{out}");
        assert!(out.contains("hx-trigger=\"every 5s\""), "{out}");
        assert!(out.contains("id=\"open\""), "{out}");
        let refused = index_page(
            &viewer,
            "karmada-b",
            &IndexQuery::default(),
            &Err(ApiError::forbidden("user \"viewer\" may not list")),
        );
        assert!(refused.contains("may not list"), "{refused}");
    }
}
