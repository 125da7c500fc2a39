//! A resource's list page: search by fuzzy name, label selector, namespace, sort and paging,
//! with the REST list's semantics (the same [`ListOptions`]), and typed columns where people
//! expect them; and the index's "open a resource" form.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use base64::Engine as _;
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::Value;

use super::ResourcePath;
use crate::access::{InstanceResource, Verb};
use crate::api::{
    ApiError, CORE_GROUP, ListObjectsRequest, ListOptions, ObjectList, SortBy, SortDir,
};
use crate::console::html::{Html, url_segment};
use crate::console::instances::view::{option, policy_places, policy_selects};
use crate::console::page::{PREVIOUS_NEXT, Viewer, error_box, live_open, page, page_nav};
use crate::console::request::{Shared, SignedIn, allowed, html, see_other, status_of};

/// Objects per list page unless `size` says otherwise.
pub const DEFAULT_PAGE_SIZE: u32 = 50;

/// The largest page a list shows.
pub const MAX_PAGE_SIZE: u32 = 500;

/// The "open a resource" form's fields.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct OpenQuery {
    /// API group (`core` for the core group).
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
}

/// `GET /ui/instances/{i}/resources/open`: the list page of the resource the form names.
pub(in crate::console) async fn open(
    headers: HeaderMap,
    Path(instance): Path<String>,
    Query(q): Query<OpenQuery>,
) -> Response {
    let resource = ResourcePath {
        instance,
        group: Some(q.group.trim())
            .filter(|g| !g.is_empty())
            .unwrap_or(CORE_GROUP)
            .to_owned(),
        version: q.version.trim().to_owned(),
        resource: q.resource.trim().to_lowercase(),
    };
    if resource.version.is_empty() || resource.resource.is_empty() {
        let index = format!(
            "/ui/instances/{}/resources",
            url_segment(&resource.instance)
        );
        return see_other(&headers, &index);
    }
    see_other(&headers, &resource.list_url())
}

/// A list page's query: the REST list's options under short names.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct BrowseQuery {
    /// Fuzzy name search.
    pub q: String,
    /// Label selector.
    pub selector: String,
    /// Namespace (empty: all namespaces).
    pub ns: String,
    /// `name`, `creationTimestamp` or `namespace`.
    pub sort: String,
    /// `asc` or `desc`.
    pub dir: String,
    /// 1-based page.
    pub page: Option<u32>,
    /// Objects per page.
    pub size: Option<u32>,
}

impl BrowseQuery {
    /// The page asked for (at least 1).
    pub fn page(&self) -> u32 {
        self.page.unwrap_or(1).max(1)
    }

    /// The page size asked for, within 1..=[`MAX_PAGE_SIZE`].
    pub fn size(&self) -> u32 {
        self.size
            .unwrap_or(DEFAULT_PAGE_SIZE)
            .clamp(1, MAX_PAGE_SIZE)
    }

    /// The API's list options for this query.
    pub fn options(&self) -> ListOptions {
        let text = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
        ListOptions {
            page: Some(self.page()),
            page_size: Some(self.size()),
            sort_by: match self.sort.as_str() {
                "creationTimestamp" => Some(SortBy::CreationTimestamp),
                "namespace" => Some(SortBy::Namespace),
                _ => None,
            },
            sort_dir: (self.dir == "desc").then_some(SortDir::Desc),
            name: text(&self.q),
            label_selector: text(&self.selector),
            namespaces: self.namespace_list(),
            ..ListOptions::default()
        }
    }

    /// The one namespace to list in (the REST list's path namespace), unless `ns` names
    /// several.
    pub fn namespace(&self) -> Option<String> {
        let ns = self.ns.trim();
        (!ns.is_empty() && !ns.contains(',')).then(|| ns.to_owned())
    }

    /// Several namespaces (`a,b`: the REST list's `namespaces` option).
    pub fn namespace_list(&self) -> Option<String> {
        let ns = self.ns.trim();
        ns.contains(',').then(|| ns.replace(' ', ""))
    }

    /// The query string of `page` of this query.
    pub fn to_query(&self, page: u32) -> String {
        let mut parts = Vec::new();
        for (key, value) in [
            ("q", &self.q),
            ("selector", &self.selector),
            ("ns", &self.ns),
            ("sort", &self.sort),
            ("dir", &self.dir),
        ] {
            if !value.is_empty() {
                parts.push(format!("{key}={}", url_segment(value)));
            }
        }
        if let Some(size) = self.size {
            parts.push(format!("size={size}"));
        }
        parts.push(format!("page={page}"));
        parts.join("&")
    }
}

/// `GET /ui/instances/{i}/resources/{g}/{v}/{r}`: a resource's list page.
pub(in crate::console) async fn list(
    State(console): State<Shared>,
    Path(resource): Path<ResourcePath>,
    Query(query): Query<BrowseQuery>,
    signed: SignedIn,
) -> Response {
    let namespace = query.namespace();
    let listed = console
        .api
        .list_objects(
            &signed.caller,
            ListObjectsRequest {
                instance: resource.instance.clone(),
                group: resource.group.clone(),
                version: resource.version.clone(),
                resource: resource.resource.clone(),
                namespace,
                options: query.options(),
            },
        )
        .await;
    // A refused query (a malformed selector, an unknown resource) is shown on the page with
    // the API's status, the form kept so it can be corrected.
    let status = listed.as_ref().err().map_or(StatusCode::OK, status_of);
    // Only who may create inside the instance gets the Create link (and the policy lists'
    // "New policy" button).
    let can_create = allowed(
        &console,
        &signed.caller,
        Verb::Create,
        InstanceResource::Proxy,
        &resource.instance,
    )
    .await;
    html(
        status,
        list_page(&signed.viewer(), &resource, &query, &listed, can_create),
    )
}

/// A column of a typed list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// `ready/desired` replicas of a Deployment, StatefulSet or ReplicaSet.
    ReplicasReady,
    /// `ready/desired` pods of a DaemonSet.
    DaemonSetReady,
    /// `succeeded/completions` of a Job.
    Completions,
    /// A CronJob's schedule.
    Schedule,
    /// Whether a CronJob is suspended.
    Suspended,
    /// A CronJob's last schedule time.
    LastSchedule,
    /// A Service's type.
    ServiceType,
    /// A Service's ports (`80/TCP`).
    Ports,
    /// An Ingress's hosts.
    Hosts,
    /// `status.phase` (PVCs, Namespaces).
    Phase,
    /// A PVC's capacity.
    Capacity,
    /// A Secret's type.
    SecretType,
    /// A Secret's keys and their sizes (never the values).
    SecretKeys,
    /// A ConfigMap's keys.
    Keys,
    /// What a policy selects.
    Selects,
    /// Where a policy places.
    Places,
}

impl Column {
    /// The column's heading.
    pub fn heading(self) -> &'static str {
        match self {
            Column::ReplicasReady | Column::DaemonSetReady => "Ready",
            Column::Completions => "Completions",
            Column::Schedule => "Schedule",
            Column::Suspended => "Suspended",
            Column::LastSchedule => "Last schedule",
            Column::ServiceType | Column::SecretType => "Type",
            Column::Ports => "Ports",
            Column::Hosts => "Hosts",
            Column::Phase => "Status",
            Column::Capacity => "Capacity",
            Column::SecretKeys | Column::Keys => "Keys",
            Column::Selects => "Selects",
            Column::Places => "Places",
        }
    }

    /// The cell of `object`.
    pub fn cell(self, object: &Value) -> String {
        let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
        let num = |p: &str| object.pointer(p).and_then(Value::as_i64);
        match self {
            Column::ReplicasReady => format!(
                "{}/{}",
                num("/status/readyReplicas").unwrap_or(0),
                num("/spec/replicas").unwrap_or(1)
            ),
            Column::DaemonSetReady => format!(
                "{}/{}",
                num("/status/numberReady").unwrap_or(0),
                num("/status/desiredNumberScheduled").unwrap_or(0)
            ),
            Column::Completions => format!(
                "{}/{}",
                num("/status/succeeded").unwrap_or(0),
                num("/spec/completions").unwrap_or(1)
            ),
            Column::Schedule => text("/spec/schedule").to_owned(),
            Column::Suspended => {
                let suspended = object.pointer("/spec/suspend").and_then(Value::as_bool);
                if suspended == Some(true) { "yes" } else { "no" }.to_owned()
            }
            Column::LastSchedule => text("/status/lastScheduleTime").to_owned(),
            Column::ServiceType => Some(text("/spec/type"))
                .filter(|t| !t.is_empty())
                .unwrap_or("ClusterIP")
                .to_owned(),
            Column::Ports => joined(object.pointer("/spec/ports"), |p| {
                let port = p.get("port").and_then(Value::as_i64)?;
                let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
                Some(format!("{port}/{protocol}"))
            }),
            Column::Hosts => joined(object.pointer("/spec/rules"), |r| {
                Some(
                    r.get("host")
                        .and_then(Value::as_str)
                        .unwrap_or("*")
                        .to_owned(),
                )
            }),
            Column::Phase => text("/status/phase").to_owned(),
            Column::Capacity => text("/status/capacity/storage").to_owned(),
            Column::SecretType => text("/type").to_owned(),
            Column::SecretKeys => secret_keys(object)
                .iter()
                .map(|(k, size)| format!("{k} ({size} bytes)"))
                .collect::<Vec<_>>()
                .join(", "),
            Column::Keys => object
                .get("data")
                .and_then(Value::as_object)
                .map(|d| d.keys().cloned().collect::<Vec<_>>().join(", "))
                .unwrap_or_default(),
            Column::Selects => policy_selects(object).join(", "),
            Column::Places => policy_places(object),
        }
    }
}

fn joined(list: Option<&Value>, each: impl Fn(&Value) -> Option<String>) -> String {
    list.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(&each).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

/// A Secret's keys (from `data`) with the size of each decoded value, in key order; the
/// values themselves are not returned.
pub fn secret_keys(secret: &Value) -> Vec<(String, usize)> {
    let Some(data) = secret.get("data").and_then(Value::as_object) else {
        return Vec::new();
    };
    data.iter()
        .map(|(k, v)| {
            let encoded = v.as_str().unwrap_or_default();
            let size = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_or(0, |bytes| bytes.len());
            (k.clone(), size)
        })
        .collect()
}

/// The typed columns of a resource (none for resources without one).
pub fn columns(group: &str, resource: &str) -> &'static [Column] {
    use Column::*;
    match (group, resource) {
        ("apps", "deployments" | "statefulsets" | "replicasets") => &[ReplicasReady],
        ("apps", "daemonsets") => &[DaemonSetReady],
        ("batch", "jobs") => &[Completions],
        ("batch", "cronjobs") => &[Schedule, Suspended, LastSchedule],
        (CORE_GROUP, "services") => &[ServiceType, Ports],
        ("networking.k8s.io", "ingresses") => &[Hosts],
        (CORE_GROUP, "persistentvolumeclaims") => &[Phase, Capacity],
        (CORE_GROUP, "namespaces") => &[Phase],
        (CORE_GROUP, "secrets") => &[SecretType, SecretKeys],
        (CORE_GROUP, "configmaps") => &[Keys],
        (
            "policy.karmada.io",
            "propagationpolicies"
            | "clusterpropagationpolicies"
            | "overridepolicies"
            | "clusteroverridepolicies",
        ) => &[Selects, Places],
        _ => &[],
    }
}

fn sort_options(h: &mut Html, query: &BrowseQuery) {
    h.raw("<label>Sort <select name=\"sort\">");
    for (value, label) in [
        ("", "name"),
        ("creationTimestamp", "created"),
        ("namespace", "namespace"),
    ] {
        option(h, value, label, query.sort == value);
    }
    h.raw("</select></label><label>Order <select name=\"dir\">");
    option(h, "", "ascending", query.dir != "desc");
    option(h, "desc", "descending", query.dir == "desc");
    h.raw("</select></label>");
}

/// The list's **Create** link: the create-from-YAML page prefilled with a skeleton of the
/// resource, in the list's namespace when it names one.
fn create_link(h: &mut Html, resource: &ResourcePath, ns_filter: &str) {
    let ns = if ns_filter.contains(',') {
        ""
    } else {
        ns_filter.trim()
    };
    let url = format!(
        "/ui/instances/{}/create?group={}&version={}&resource={}&ns={}",
        url_segment(&resource.instance),
        url_segment(&resource.group),
        url_segment(&resource.version),
        url_segment(&resource.resource),
        url_segment(ns)
    );
    h.el(
        "a",
        &[("href", &url), ("class", "button"), ("id", "create-object")],
        "Create",
    )
    .raw(" ");
}

/// A resource's list page (`listed` is the API's answer, an error shown above the form).
pub fn list_page(
    viewer: &Viewer<'_>,
    resource: &ResourcePath,
    query: &BrowseQuery,
    listed: &Result<ObjectList, ApiError>,
    can_create: bool,
) -> String {
    let base = resource.list_url();
    let rows = listed.as_ref().map_or(0, |l| l.items.len());
    let mut h = Html::with_capacity(4096 + rows * 400);
    let index = format!(
        "/ui/instances/{}/resources",
        url_segment(&resource.instance)
    );
    h.open("p", &[])
        .el(
            "a",
            &[("href", &index)],
            &format!("Resources of {}", resource.instance),
        )
        .close("p");
    h.open("h1", &[])
        .text(&resource.resource)
        .raw(" <span class=\"muted\">")
        .text(&format!("{}/{}", resource.group, resource.version))
        .raw("</span></h1>");
    if can_create {
        h.open("p", &[]);
        create_link(&mut h, resource, &query.ns);
        crate::console::policies::list_link(
            &mut h,
            &resource.instance,
            &resource.group,
            &resource.resource,
            &query.ns,
        );
        h.close("p");
    }
    h.open(
        "form",
        &[
            ("method", "get"),
            ("action", &base),
            ("class", "toolbar"),
            ("id", "filter"),
        ],
    );
    h.raw("<label>Name <input type=\"search\" id=\"q\" name=\"q\" value=\"")
        .text(&query.q)
        .raw("\" placeholder=\"fuzzy name\"></label>")
        .raw("<label>Labels <input type=\"text\" id=\"selector\" name=\"selector\" value=\"")
        .text(&query.selector)
        .raw("\" placeholder=\"app=web,tier!=db\"></label>")
        .raw("<label>Namespace <input type=\"text\" id=\"ns\" name=\"ns\" value=\"")
        .text(&query.ns)
        .raw("\" placeholder=\"all (or a,b)\"></label>");
    sort_options(&mut h, query);
    h.raw("<button id=\"apply-filter\" type=\"submit\">Show</button></form>");
    // The table and its pager refresh themselves with the same query and page; the form
    // above stays as typed.
    let refresh = format!("{base}?{}", query.to_query(query.page()));
    live_open(&mut h, "section", "objects-live", &refresh);
    let list = match listed {
        Ok(list) => list,
        Err(err) => {
            error_box(&mut h, err);
            h.close("section");
            return page(&resource.resource, Some(viewer), h);
        }
    };
    let columns = columns(&resource.group, &resource.resource);
    h.raw("<table id=\"objects\" class=\"list\"><thead><tr><th>Name</th><th>Namespace</th>");
    for c in columns {
        h.el("th", &[], c.heading());
    }
    h.raw("<th>Created</th></tr></thead><tbody>");
    if list.items.is_empty() {
        h.raw("<tr><td colspan=\"9\" class=\"muted\">No objects match.</td></tr>");
    }
    for object in &list.items {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // The list's own URL is reused: only the name and namespace are encoded per row.
        let mut href = format!("{base}/{}", url_segment(name));
        if !namespace.is_empty() {
            href.push_str("?ns=");
            href.push_str(&url_segment(namespace));
        }
        h.open("tr", &[("data-name", name), ("data-namespace", namespace)])
            .open("td", &[])
            .el("a", &[("href", &href), ("class", "object")], name);
        if let Some(page) = crate::console::workloads::view::workload_page_for(
            &resource.instance,
            (&resource.group, &resource.resource),
            namespace,
            name,
        ) {
            h.raw(" ").el(
                "a",
                &[("href", &page), ("class", "workload-page")],
                "workload page",
            );
        }
        h.close("td").el("td", &[], namespace);
        for c in columns {
            h.el("td", &[], &c.cell(object));
        }
        h.el(
            "td",
            &[],
            object
                .pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        )
        .raw("</tr>");
    }
    h.raw("</tbody></table>");
    let p = &list.pagination;
    page_nav(
        &mut h,
        (p.total, p.page, p.pages),
        "total",
        PREVIOUS_NEXT,
        |page| format!("{base}?{}", query.to_query(page)),
    );
    h.close("section");
    page(&resource.resource, Some(viewer), h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Pagination;
    use serde_json::json;

    fn viewer() -> Viewer<'static> {
        Viewer {
            user: "alice",
            csrf: "c0ffee",
        }
    }

    #[test]
    fn query_maps_to_the_rest_list_options() {
        let q = BrowseQuery {
            q: " web ".into(),
            selector: "app in (web)".into(),
            ns: "demo".into(),
            sort: "creationTimestamp".into(),
            dir: "desc".into(),
            page: Some(0),
            size: Some(10_000),
        };
        let o = q.options();
        assert_eq!(o.name.as_deref(), Some("web"));
        assert_eq!(o.label_selector.as_deref(), Some("app in (web)"));
        assert_eq!(o.sort_by, Some(SortBy::CreationTimestamp));
        assert_eq!(o.sort_dir, Some(SortDir::Desc));
        assert_eq!((o.page, o.page_size), (Some(1), Some(MAX_PAGE_SIZE)));
        assert_eq!(
            q.to_query(2),
            "q=%20web%20&selector=app%20in%20%28web%29&ns=demo&sort=creationTimestamp&dir=desc&size=10000&page=2"
        );
        assert_eq!(
            (q.namespace().as_deref(), o.namespaces),
            (Some("demo"), None)
        );
        let several = BrowseQuery {
            ns: "demo, prod".into(),
            ..BrowseQuery::default()
        };
        assert_eq!(several.namespace(), None);
        assert_eq!(several.options().namespaces.as_deref(), Some("demo,prod"));
        let empty = BrowseQuery::default().options();
        assert_eq!(
            (empty.name, empty.label_selector, empty.sort_by),
            (None, None, None)
        );
        assert_eq!(empty.page_size, Some(DEFAULT_PAGE_SIZE));
    }

    #[test]
    fn typed_cells() {
        let cases = [
            (
                Column::ReplicasReady,
                json!({"spec": {"replicas": 3}, "status": {"readyReplicas": 2}}),
                "2/3",
            ),
            (Column::ReplicasReady, json!({}), "0/1"),
            (
                Column::DaemonSetReady,
                json!({"status": {"numberReady": 4, "desiredNumberScheduled": 5}}),
                "4/5",
            ),
            (
                Column::Completions,
                json!({"status": {"succeeded": 1}}),
                "1/1",
            ),
            (Column::Suspended, json!({"spec": {"suspend": true}}), "yes"),
            (Column::ServiceType, json!({"spec": {}}), "ClusterIP"),
            (
                Column::Ports,
                json!({"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}}),
                "80/TCP, 53/UDP",
            ),
            (
                Column::Hosts,
                json!({"spec": {"rules": [{"host": "a.example"}, {}]}}),
                "a.example, *",
            ),
            (
                Column::Phase,
                json!({"status": {"phase": "Bound"}}),
                "Bound",
            ),
            (
                Column::SecretKeys,
                json!({"data": {"password": "aHVudGVyMg==", "user": "YWRtaW4="}}),
                "password (7 bytes), user (5 bytes)",
            ),
            (Column::Keys, json!({"data": {"a": "1", "b": "2"}}), "a, b"),
            (
                Column::Selects,
                json!({"spec": {"resourceSelectors": [{"kind": "Deployment", "name": "web"}]}}),
                "Deployment/web",
            ),
        ];
        for (column, object, want) in cases {
            assert_eq!(column.cell(&object), want, "{column:?} {object}");
        }
        assert_eq!(
            columns("core", "secrets"),
            &[Column::SecretType, Column::SecretKeys]
        );
        assert!(columns("example.io", "widgets").is_empty());
    }

    #[test]
    fn secret_list_shows_keys_and_sizes_never_values() {
        let resource = ResourcePath {
            instance: "i".into(),
            group: "core".into(),
            version: "v1".into(),
            resource: "secrets".into(),
        };
        let listed = Ok(ObjectList {
            items: vec![json!({"metadata": {"name": "db", "namespace": "demo"},
                "type": "Opaque", "data": {"password": "aHVudGVyMg=="}})],
            pagination: Pagination {
                total: 1,
                page: 1,
                page_size: 50,
                pages: 1,
            },
        });
        let out = list_page(
            &viewer(),
            &resource,
            &BrowseQuery::default(),
            &listed,
            false,
        );
        assert!(out.contains("password (7 bytes)"), "{out}");
        assert!(
            !out.contains("aHVudGVyMg") && !out.contains("hunter2"),
            "{out}"
        );
    }

    #[test]
    fn only_who_may_create_gets_the_new_policy_button() {
        let empty = || {
            Ok(ObjectList {
                items: vec![],
                pagination: Pagination::default(),
            })
        };
        for (group, resource, can_create, shown) in [
            ("policy.karmada.io", "propagationpolicies", true, true),
            ("policy.karmada.io", "propagationpolicies", false, false),
            ("policy.karmada.io", "overridepolicies", true, true),
            ("core", "configmaps", true, false),
        ] {
            let path = ResourcePath {
                instance: "i".into(),
                group: group.into(),
                version: "v1alpha1".into(),
                resource: resource.into(),
            };
            let out = list_page(
                &viewer(),
                &path,
                &BrowseQuery::default(),
                &empty(),
                can_create,
            );
            assert_eq!(
                out.contains("id=\"new-policy\""),
                shown,
                "{resource} {can_create}"
            );
            // Every list has the Create link, for who may create only.
            assert_eq!(
                out.contains("id=\"create-object\""),
                can_create,
                "{resource} {can_create}"
            );
        }
    }

    #[test]
    fn the_create_link_names_the_resource_and_the_one_namespace() {
        let path = ResourcePath {
            instance: "karmada-a".into(),
            group: "example.io".into(),
            version: "v1".into(),
            resource: "widgets".into(),
        };
        for (ns, want) in [("demo", "ns=demo"), ("a,b", "ns=\""), ("", "ns=\"")] {
            let query = BrowseQuery {
                ns: ns.into(),
                ..BrowseQuery::default()
            };
            let listed = Ok(ObjectList {
                items: vec![],
                pagination: Pagination::default(),
            });
            let out = list_page(&viewer(), &path, &query, &listed, true);
            let link = format!(
                "href=\"/ui/instances/karmada-a/create?group=example.io&amp;version=v1&amp;resource=widgets&amp;{want}"
            );
            assert!(out.contains(&link), "{ns}: {out}");
        }
    }

    #[test]
    fn the_table_refreshes_with_its_query_and_page_outside_the_form() {
        let resource = ResourcePath {
            instance: "i".into(),
            group: "core".into(),
            version: "v1".into(),
            resource: "configmaps".into(),
        };
        let query = BrowseQuery {
            q: "web".into(),
            ns: "demo".into(),
            page: Some(2),
            ..BrowseQuery::default()
        };
        let listed = Ok(ObjectList {
            items: vec![json!({"metadata": {"name": "web-config", "namespace": "demo"}})],
            pagination: Pagination {
                total: 51,
                page: 2,
                page_size: 50,
                pages: 2,
            },
        });
        let out = list_page(&viewer(), &resource, &query, &listed, false);
        let live = out
            .find("<section id=\"objects-live\"")
            .expect("a live part");
        assert!(
            out[live..].starts_with("<section id=\"objects-live\" class=\"live\" hx-get=\"/ui/instances/i/resources/core/v1/configmaps?q=web&amp;ns=demo&amp;page=2\""),
            "{out}"
        );
        assert!(
            out.find("id=\"filter\"").unwrap() < live,
            "the form is not refreshed"
        );
        assert!(out[live..].contains("data-name=\"web-config\""), "{out}");
        assert!(out[live..].contains("rel=\"prev\""), "{out}");
        assert!(out.contains("51 total · page 2 of 2"), "{out}");
    }

    #[test]
    fn a_refused_query_shows_the_api_message_and_keeps_the_form() {
        let resource = ResourcePath {
            instance: "i".into(),
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
        };
        let query = BrowseQuery {
            selector: "app in (<b>".into(),
            ..BrowseQuery::default()
        };
        let err = Err(ApiError::invalid_field("labelSelector", "unable to parse"));
        let out = list_page(&viewer(), &resource, &query, &err, false);
        assert!(out.contains("labelSelector: unable to parse"), "{out}");
        assert!(out.contains("value=\"app in (&lt;b&gt;\""), "{out}");
        assert!(!out.contains("<b>"), "{out}");
    }
}
