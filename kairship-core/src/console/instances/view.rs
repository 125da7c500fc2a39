//! HTML of the instances feature's pages: the list with its filters and pager, the overview
//! (members, workloads, policies) and the delete page.

use serde_json::Value;

use crate::api::{ApiError, Workload};
use crate::console::html::{Html, url_segment};
use crate::console::page::{Viewer, csrf_field, error_box, i, page, s, state_badge};
use crate::console::workloads::view::placement;
use crate::instance::{Instance, InstanceSummary};

/// The instance list's query: search, state filter, sorting and paging.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct InstancesQuery {
    /// Fuzzy name search.
    pub q: String,
    /// Only instances in this state (`RUNNING`, ...); empty: all.
    pub state: String,
    /// `name`, `creationTimestamp` or `state`.
    pub sort: String,
    /// `asc` or `desc`.
    pub dir: String,
    /// 1-based page.
    pub page: Option<u32>,
    /// Rows per page.
    pub size: Option<u32>,
}

/// Rows per page of the instance list when none is asked for.
pub const DEFAULT_PAGE_SIZE: u32 = 20;
/// The states an instance can be in, for the filter.
pub const STATES: [&str; 5] = ["RUNNING", "INPROCESS", "UNAVAILABLE", "TERMINAL", "UNKNOWN"];

impl InstancesQuery {
    /// The page, from 1.
    pub fn page(&self) -> u32 {
        self.page.unwrap_or(1).max(1)
    }

    /// Rows per page, 1..=200.
    pub fn size(&self) -> u32 {
        self.size.unwrap_or(DEFAULT_PAGE_SIZE).clamp(1, 200)
    }

    /// The query string (`q=..&state=..`) of this query on `page`.
    pub fn to_query(&self, page: u32) -> String {
        let mut parts = Vec::new();
        for (k, v) in [
            ("q", self.q.as_str()),
            ("state", self.state.as_str()),
            ("sort", self.sort.as_str()),
            ("dir", self.dir.as_str()),
        ] {
            if !v.is_empty() {
                parts.push(format!("{k}={}", url_segment(v)));
            }
        }
        if page > 1 {
            parts.push(format!("page={page}"));
        }
        if self.size.is_some() {
            parts.push(format!("size={}", self.size()));
        }
        parts.join("&")
    }
}

/// One instance, as its row shows it.
#[derive(Clone, Debug)]
pub struct InstanceRow {
    /// The Instance (typed), or `None` when the object did not parse.
    pub instance: Option<Instance>,
    /// Its name.
    pub name: String,
    /// Whether the viewer may delete it (decides the delete control only; the API decides).
    pub can_delete: bool,
}

impl InstanceRow {
    /// A row from the API's Instance object.
    pub fn from_object(object: &Value, can_delete: bool) -> InstanceRow {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        InstanceRow {
            instance: serde_json::from_value(object.clone()).ok(),
            name,
            can_delete,
        }
    }

    fn summary(&self) -> Option<&InstanceSummary> {
        self.instance.as_ref()?.status.as_ref()?.summary.as_ref()
    }

    /// `status.state` (`UNKNOWN` when absent).
    pub fn state(&self) -> &'static str {
        self.instance
            .as_ref()
            .and_then(|i| i.status.as_ref())
            .map_or("UNKNOWN", |s| s.state.as_str())
    }
}

/// Milli-units of a quantity string (`500m` -> 500, `1Gi` -> 1073741824000), if it parses.
pub fn milli(q: &str) -> Option<i128> {
    kube_kit::quantity::Quantity::parse(q)
        .ok()
        .map(|q| q.milli_value())
}

/// A bar of `used` of `total` (quantities), with both written beside it.
pub fn usage_bar(h: &mut Html, what: &str, used: Option<&str>, total: Option<&str>) {
    let (Some(total), used) = (total, used.unwrap_or("0")) else {
        h.raw("<span class=\"muted\">–</span>");
        return;
    };
    let (u, t) = (milli(used).unwrap_or(0), milli(total).unwrap_or(0));
    // A meter's value is a float; the ratio is what is drawn, so precision past 1e-6 is moot.
    let ratio = if t > 0 {
        (u as f64 / t as f64).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let value = format!("{ratio:.4}");
    let label = format!("{what} {used} of {total}");
    h.open("span", &[("class", "bar"), ("title", &label)])
        .open(
            "meter",
            &[
                ("min", "0"),
                ("max", "1"),
                ("high", "0.85"),
                ("value", &value),
                ("aria-label", &label),
            ],
        )
        .close("meter")
        .open("span", &[("class", "bar-text")])
        .text(used)
        .raw(" / ")
        .text(total)
        .close("span")
        .close("span");
}

pub(in crate::console) fn ratio_text(ready: i64, total: i64) -> String {
    format!("{ready}/{total}")
}

/// The instance list page (`fragment`: only the live table part, for htmx).
#[allow(clippy::too_many_arguments)]
pub fn instances_page(
    viewer: &Viewer<'_>,
    query: &InstancesQuery,
    rows: &[InstanceRow],
    total: u64,
    pages: u32,
    can_create: bool,
    fragment: bool,
) -> String {
    let table = instances_table(query, rows, total, pages);
    if fragment {
        return table.finish();
    }
    // The search box's value comes from the query, so it goes through the escaping builder.
    let mut fixed = Html::new();
    fixed
        .open(
            "input",
            &[
                ("id", "q"),
                ("type", "search"),
                ("name", "q"),
                ("placeholder", "Search names"),
                ("value", &query.q),
            ],
        )
        .open("select", &[("id", "state"), ("name", "state")])
        .raw("<option value=\"\">All states</option>");
    for s in STATES {
        option(&mut fixed, s, s, query.state == s);
    }
    fixed
        .close("select")
        .open("select", &[("id", "sort"), ("name", "sort")]);
    for (v, label) in [
        ("name", "Name"),
        ("creationTimestamp", "Created"),
        ("state", "State"),
    ] {
        option(&mut fixed, v, label, query.sort == v);
    }
    fixed
        .close("select")
        .open("select", &[("id", "dir"), ("name", "dir")]);
    for (v, label) in [("asc", "Ascending"), ("desc", "Descending")] {
        option(&mut fixed, v, label, query.dir == v);
    }
    fixed
        .close("select")
        .raw("<button type=\"submit\">Apply</button></form>");
    // The form around the controls: htmx swaps the table as the controls change.
    let mut h = Html::new();
    h.raw("<h1>Instances</h1>");
    if can_create {
        h.raw("<p><a class=\"button\" id=\"new-instance\" href=\"/ui/new-instance\">New instance</a></p>");
    }
    h.raw("<form id=\"instance-filter\" class=\"toolbar\" method=\"get\" action=\"/ui/instances\" ")
        .raw("hx-get=\"/ui/instances\" hx-target=\"#instances\" hx-swap=\"outerHTML\" hx-push-url=\"true\" ")
        .raw("hx-trigger=\"input changed delay:300ms from:#q, change, submit\">")
        .append(fixed);
    h.append(table);
    page("Instances", Some(viewer), h)
}

pub(in crate::console) fn option(h: &mut Html, value: &str, label: &str, selected: bool) {
    if selected {
        h.open("option", &[("value", value), ("selected", "")]);
    } else {
        h.open("option", &[("value", value)]);
    }
    h.text(label).close("option");
}

pub(in crate::console) fn instances_table(
    query: &InstancesQuery,
    rows: &[InstanceRow],
    total: u64,
    pages: u32,
) -> Html {
    let mut h = Html::with_capacity(1024 + rows.len() * 1200);
    let refresh = format!("/ui/instances?{}", query.to_query(query.page()));
    h.open(
        "section",
        &[
            ("id", "instances"),
            ("hx-get", &refresh),
            ("hx-trigger", "every 5s"),
            ("hx-swap", "outerHTML"),
        ],
    );
    h.raw("<table class=\"list\"><thead><tr><th>Name</th><th>State</th><th>Karmada</th><th>Kubernetes</th><th>Clusters</th><th>Nodes</th><th>CPU</th><th>Memory</th><th>Workloads</th><th>Policies</th><th></th></tr></thead><tbody>");
    if rows.is_empty() {
        h.raw("<tr><td colspan=\"11\" class=\"muted\">No instances match.</td></tr>");
    }
    for row in rows {
        instance_row(&mut h, row);
    }
    h.raw("</tbody></table>");
    pager(&mut h, "/ui/instances", query, total, pages);
    h.close("section");
    h
}

pub(in crate::console) fn instance_row(h: &mut Html, row: &InstanceRow) {
    let href = format!("/ui/instances/{}", url_segment(&row.name));
    let status = row.instance.as_ref().and_then(|i| i.status.as_ref());
    let summary = row.summary();
    h.open("tr", &[("data-instance", &row.name)]);
    h.raw("<td>")
        .el("a", &[("href", &href), ("class", "name")], &row.name)
        .raw("</td><td>");
    state_badge(h, row.state());
    h.raw("</td>");
    h.el(
        "td",
        &[("class", "karmada-version")],
        status
            .and_then(|s| s.karmada_version.as_deref())
            .unwrap_or("–"),
    );
    h.el(
        "td",
        &[("class", "kubernetes-version")],
        status
            .and_then(|s| s.kubernetes_version.as_deref())
            .unwrap_or("–"),
    );
    let (clusters, nodes) = summary.map_or(("–".to_owned(), "–".to_owned()), |s| {
        (
            ratio_text(
                s.cluster_summary.ready_num.into(),
                s.cluster_summary.total_num.into(),
            ),
            ratio_text(
                s.node_summary.ready_num.into(),
                s.node_summary.total_num.into(),
            ),
        )
    });
    h.el("td", &[("class", "clusters")], &clusters);
    h.el("td", &[("class", "nodes")], &nodes);
    for (class, resource) in [("cpu", "cpu"), ("memory", "memory")] {
        h.open("td", &[("class", class)]);
        let used = summary.and_then(|s| s.resource_summary.allocated.get(resource));
        let total = summary.and_then(|s| s.resource_summary.allocatable.get(resource));
        usage_bar(
            h,
            resource,
            used.map(|q| q.0.as_str()),
            total.map(|q| q.0.as_str()),
        );
        h.close("td");
    }
    let (workloads, policies) = summary.map_or(("–".to_owned(), "–".to_owned()), |s| {
        (
            ratio_text(
                s.workload_summary.deployments.ready_num.into(),
                s.workload_summary.deployments.total_num.into(),
            ),
            (s.policy_total_num.propagationpolicies + s.policy_total_num.overridepolicies)
                .to_string(),
        )
    });
    h.el("td", &[("class", "workloads")], &workloads);
    h.el("td", &[("class", "policies")], &policies);
    h.raw("<td class=\"actions\">");
    if row.can_delete {
        let delete = format!("{href}/delete");
        h.el(
            "a",
            &[("href", &delete), ("class", "button danger delete")],
            "Delete",
        );
    }
    h.raw("</td></tr>");
}

pub(in crate::console) fn pager(
    h: &mut Html,
    base: &str,
    query: &InstancesQuery,
    total: u64,
    pages: u32,
) {
    crate::console::page::page_nav(
        h,
        (total, query.page(), pages),
        "total",
        crate::console::page::PREVIOUS_NEXT,
        |page| format!("{base}?{}", query.to_query(page)),
    );
}

/// The confirmation page of an instance's deletion, with the API's answer when it refused.
pub fn delete_instance_page(viewer: &Viewer<'_>, instance: &str, err: Option<&ApiError>) -> String {
    let mut h = Html::new();
    h.open("h1", &[])
        .raw("Delete instance ")
        .text(instance)
        .close("h1");
    if let Some(err) = err {
        error_box(&mut h, err);
    }
    h.raw("<p>Kairship refuses to delete an instance while member clusters are joined, or while it cannot be reached to count them: unjoin them first, or delete anyway.</p>");
    let action = format!("/ui/instances/{}/delete", url_segment(instance));
    h.open("form", &[("method", "post"), ("action", &action)]);
    csrf_field(&mut h, viewer.csrf);
    h.raw("<p><label><input type=\"checkbox\" id=\"force\" name=\"force\" value=\"true\" autofocus> Delete anyway (member clusters stay joined to the Karmada)</label></p>");
    h.raw("<button id=\"confirm-delete\" class=\"danger\" type=\"submit\">Delete</button> ")
        .raw("<a href=\"/ui/instances\">Cancel</a></form>");
    page("Delete instance", Some(viewer), h)
}

/// The fields of the "adopt an instance" form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdoptForm {
    /// Instance name.
    pub name: String,
    /// Display name (optional).
    pub alias: String,
    /// Namespace of the Secret holding the Karmada kubeconfig.
    pub secret_namespace: String,
    /// Name of that Secret.
    pub secret_name: String,
    /// Its key (optional: the first of `kubeconfig`, `karmada.config`, `config`).
    pub secret_key: String,
}

impl AdoptForm {
    /// The form from posted fields.
    pub fn from_fields(fields: &std::collections::HashMap<String, String>) -> AdoptForm {
        let field = |k: &str| {
            fields
                .get(k)
                .map(|v| v.trim().to_owned())
                .unwrap_or_default()
        };
        AdoptForm {
            name: field("name"),
            alias: field("alias"),
            secret_namespace: field("secretNamespace"),
            secret_name: field("secretName"),
            secret_key: field("secretKey"),
        }
    }

    /// The Instance to create (Adopt mode); optional fields left empty are left out, and the
    /// API checks the rest.
    pub fn instance(&self) -> Value {
        let mut secret = serde_json::json!({
            "namespace": self.secret_namespace,
            "name": self.secret_name,
        });
        if !self.secret_key.is_empty() {
            secret["key"] = Value::from(self.secret_key.clone());
        }
        let mut spec = serde_json::json!({"mode": "Adopt", "kubeconfigSecretRef": secret});
        if !self.alias.is_empty() {
            spec["alias"] = Value::from(self.alias.clone());
        }
        serde_json::json!({
            "apiVersion": "kairship.io/v1alpha1",
            "kind": "Instance",
            "metadata": {"name": self.name},
            "spec": spec,
        })
    }
}

/// What the overview of an instance shows.
#[derive(Debug, Default)]
pub struct Overview {
    /// The Instance object.
    pub instance: Value,
    /// Member clusters.
    pub clusters: Vec<Value>,
    /// Namespaces to suggest (of a sample of Deployments and of the policies).
    pub namespaces: Vec<String>,
    /// The namespace whose workloads are shown.
    pub namespace: String,
    /// Workloads of that namespace (this page).
    pub workloads: Vec<Workload>,
    /// Workloads of that namespace over all pages.
    pub workloads_total: u64,
    /// The workloads page shown and how many there are.
    pub workloads_page: (u32, u32),
    /// Propagation policies (namespaced and cluster-wide).
    pub propagation: Vec<Value>,
    /// Override policies (namespaced and cluster-wide).
    pub overrides: Vec<Value>,
    /// Whether the viewer may create objects inside the instance (controls only).
    pub can_write: bool,
    /// Whether the viewer may `update` the Instance (the **Edit** link).
    pub can_update: bool,
    /// Whether the viewer may `delete` the Instance (the **Delete** link).
    pub can_delete: bool,
    /// Recent events of the instance, when loaded.
    pub recent_events: Option<Result<crate::api::ObjectList, ApiError>>,
}

pub(in crate::console) fn condition_status<'a>(v: &'a Value, kind: &str) -> Option<&'a str> {
    v.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))?
        .get("status")?
        .as_str()
}

/// The overview of an instance (`fragment`: only the live part, for htmx).
pub fn overview_page(viewer: &Viewer<'_>, name: &str, o: &Overview, fragment: bool) -> String {
    let base = format!("/ui/instances/{}", url_segment(name));
    let mut live = Html::with_capacity(4096 + o.workloads.len() * 600);
    let refresh = format!(
        "{base}?ns={}&page={}",
        url_segment(&o.namespace),
        o.workloads_page.0
    );
    live.open(
        "div",
        &[
            ("id", "overview-live"),
            ("hx-get", &refresh),
            ("hx-trigger", "every 5s"),
            ("hx-swap", "outerHTML"),
        ],
    );
    clusters_section(&mut live, &base, &o.clusters);
    workloads_section(&mut live, &base, o);
    policies_section(&mut live, o);
    if let Some(events) = &o.recent_events {
        live.append(crate::console::workloads::view::events_section(events));
    }
    live.close("div");
    if fragment {
        return live.finish();
    }
    let mut h = Html::new();
    h.open("h1", &[]).raw("Instance ").text(name).close("h1");
    let status = o.instance.get("status").cloned().unwrap_or(Value::Null);
    h.raw("<p class=\"facts\">");
    state_badge(&mut h, s(&status, "/state").unwrap_or("UNKNOWN"));
    h.raw(" Karmada ")
        .text(s(&status, "/karmadaVersion").unwrap_or("–"))
        .raw(" · Kubernetes ")
        .text(s(&status, "/kubernetesVersion").unwrap_or("–"))
        .raw(" · mode ")
        .text(s(&o.instance, "/spec/mode").unwrap_or("–"));
    if let Some(alias) = s(&o.instance, "/spec/alias") {
        h.raw(" · display name ")
            .el("span", &[("id", "alias")], alias);
    }
    h.raw(" · deletion policy ")
        .el(
            "span",
            &[("id", "deletion-policy")],
            s(&o.instance, "/spec/deletionPolicy").unwrap_or("Delete"),
        )
        .raw("</p>");
    // The instance itself: for who may update or delete it (the API checks again).
    if o.can_update || o.can_delete {
        h.raw("<p class=\"actions\">");
        if o.can_update {
            h.el(
                "a",
                &[
                    ("href", &format!("{base}/edit")),
                    ("class", "button"),
                    ("id", "edit-instance"),
                ],
                "Edit",
            );
        }
        if o.can_delete {
            h.raw(" ").el(
                "a",
                &[
                    ("href", &format!("{base}/delete")),
                    ("class", "button danger delete"),
                    ("id", "delete-instance"),
                ],
                "Delete",
            );
        }
        h.raw("</p>");
    }
    if o.can_write {
        let create = format!("{base}/create");
        h.el(
            "a",
            &[
                ("href", &create),
                ("class", "button"),
                ("id", "create-yaml"),
            ],
            "Create from YAML",
        );
        let new_app = format!("{base}/applications/new?ns={}", url_segment(&o.namespace));
        h.raw(" ").el(
            "a",
            &[
                ("href", &new_app),
                ("class", "button"),
                ("id", "new-application"),
            ],
            "New application",
        );
        crate::console::policies::overview_link(&mut h, name, &o.namespace);
    }
    let batch = format!("{base}/namespaces/{}/batch", url_segment(&o.namespace));
    h.raw(" ").el(
        "a",
        &[("href", &batch), ("id", "batch")],
        "Jobs and CronJobs",
    );
    h.raw(" ");
    h.el(
        "a",
        &[("href", &format!("{base}/members")), ("id", "members")],
        "Member clusters",
    );
    h.raw(" ").el(
        "a",
        &[("href", &format!("{base}/resources")), ("id", "resources")],
        "Resources",
    );
    h.raw(" ").el(
        "a",
        &[("href", &format!("{base}/events")), ("id", "events-link")],
        "Events",
    );
    h.raw(" ").el(
        "a",
        &[
            ("href", &format!("{base}/kubeconfig")),
            ("id", "kubeconfig"),
        ],
        "Kubeconfig",
    );
    namespace_form(&mut h, &base, o);
    h.append(live);
    page(name, Some(viewer), h)
}

/// The member clusters table; each name links the member's page under `base` (the
/// instance's page).
pub(in crate::console) fn clusters_section(h: &mut Html, base: &str, clusters: &[Value]) {
    h.raw("<section><h2>Clusters</h2><table id=\"clusters\" class=\"list\"><thead><tr><th>Name</th><th>Ready</th><th>Kubernetes</th><th>Provider</th><th>Region</th><th>Zone</th><th>Nodes</th><th>CPU</th><th>Memory</th></tr></thead><tbody>");
    if clusters.is_empty() {
        h.raw("<tr><td colspan=\"9\" class=\"muted\">No member clusters.</td></tr>");
    }
    for c in clusters {
        let name = s(c, "/metadata/name").unwrap_or_default();
        h.open("tr", &[("data-cluster", name)]);
        let member = format!("{base}/members/{}", url_segment(name));
        h.raw("<td>")
            .el("a", &[("href", &member)], name)
            .raw("</td><td>");
        match condition_status(c, "Ready") {
            Some("True") => state_badge(h, "Ready"),
            Some("False") => state_badge(h, "NotReady"),
            _ => state_badge(h, "Unknown"),
        }
        h.raw("</td>");
        for p in [
            "/status/kubernetesVersion",
            "/spec/provider",
            "/spec/region",
        ] {
            h.el("td", &[], s(c, p).unwrap_or("–"));
        }
        let zones = crate::api::cluster_zones(c);
        h.el(
            "td",
            &[("class", "zones")],
            if zones.is_empty() {
                "–".to_owned()
            } else {
                zones.join(", ")
            }
            .as_str(),
        );
        h.el(
            "td",
            &[],
            &ratio_text(
                i(c, "/status/nodeSummary/readyNum"),
                i(c, "/status/nodeSummary/totalNum"),
            ),
        );
        for r in ["cpu", "memory"] {
            h.raw("<td>");
            usage_bar(
                h,
                r,
                s(c, &format!("/status/resourceSummary/allocated/{r}")),
                s(c, &format!("/status/resourceSummary/allocatable/{r}")),
            );
            h.raw("</td>");
        }
        h.raw("</tr>");
    }
    h.raw("</tbody></table></section>");
}

/// The namespace chooser of the overview, outside its live part so a refresh never replaces
/// what is being typed.
pub(in crate::console) fn namespace_form(h: &mut Html, base: &str, o: &Overview) {
    h.open(
        "form",
        &[("method", "get"), ("action", base), ("class", "toolbar")],
    )
    .raw("<label>Workloads in namespace ")
    .open(
        "input",
        &[
            ("name", "ns"),
            ("id", "ns"),
            ("list", "namespaces"),
            ("value", &o.namespace),
        ],
    )
    .raw("<datalist id=\"namespaces\">");
    for ns in &o.namespaces {
        h.open("option", &[("value", ns)]).close("option");
    }
    h.raw("</datalist></label><button type=\"submit\">Show</button></form>");
}

/// What a policy selects: `Kind/name`, `Kind (labels)` or `Kind`, per resource selector.
pub fn policy_selects(policy: &Value) -> Vec<String> {
    let Some(selectors) = policy
        .pointer("/spec/resourceSelectors")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    selectors
        .iter()
        .map(|sel| {
            let kind = s(sel, "/kind").unwrap_or("?");
            if let Some(name) = s(sel, "/name") {
                format!("{kind}/{name}")
            } else if let Some(labels) = sel
                .pointer("/labelSelector/matchLabels")
                .and_then(Value::as_object)
            {
                let l: Vec<String> = labels
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect();
                format!("{kind} ({})", l.join(","))
            } else {
                kind.to_owned()
            }
        })
        .collect()
}

/// Where a policy places what it selects: cluster names, cluster labels, or "all clusters";
/// for an override policy, the clusters its rules target.
pub fn policy_places(policy: &Value) -> String {
    let names = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    if let Some(affinity) = policy.pointer("/spec/placement/clusterAffinity") {
        let clusters = names(affinity.get("clusterNames"));
        if !clusters.is_empty() {
            return clusters.join(", ");
        }
        if let Some(labels) = affinity
            .pointer("/labelSelector/matchLabels")
            .and_then(Value::as_object)
        {
            let l: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect();
            return format!("clusters labelled {}", l.join(","));
        }
    }
    if let Some(rules) = policy
        .pointer("/spec/overrideRules")
        .and_then(Value::as_array)
    {
        let clusters: Vec<String> = rules
            .iter()
            .flat_map(|r| names(r.pointer("/targetCluster/clusterNames")))
            .collect();
        if !clusters.is_empty() {
            return clusters.join(", ");
        }
    }
    "all clusters".to_owned()
}

pub(in crate::console) fn policies_section(h: &mut Html, o: &Overview) {
    for (title, id, policies) in [
        ("Propagation policies", "propagation", &o.propagation),
        ("Override policies", "overrides", &o.overrides),
    ] {
        h.raw("<section>").el("h2", &[], title);
        h.open("table", &[("id", id), ("class", "list")])
            .raw("<thead><tr><th>Name</th><th>Namespace</th><th>Selects</th><th>Places on</th></tr></thead><tbody>");
        if policies.is_empty() {
            h.raw("<tr><td colspan=\"4\" class=\"muted\">None.</td></tr>");
        }
        for p in policies {
            h.raw("<tr>");
            h.el("td", &[], s(p, "/metadata/name").unwrap_or_default());
            h.el(
                "td",
                &[],
                s(p, "/metadata/namespace").unwrap_or("(cluster)"),
            );
            h.el("td", &[], &policy_selects(p).join(", "));
            h.el("td", &[], &policy_places(p));
            h.raw("</tr>");
        }
        h.raw("</tbody></table></section>");
    }
}

pub(in crate::console) fn workloads_section(h: &mut Html, base: &str, o: &Overview) {
    h.raw("<section><h2>Workloads</h2>");
    h.raw("<table id=\"workloads\" class=\"list\"><thead><tr><th>Name</th><th>Ready</th><th>Paused</th><th>Policy</th><th>Placement</th></tr></thead><tbody>");
    if o.workloads.is_empty() {
        h.raw("<tr><td colspan=\"5\" class=\"muted\">No Deployments in this namespace.</td></tr>");
    }
    for w in &o.workloads {
        let href = format!(
            "{base}/namespaces/{}/workloads/{}",
            url_segment(&w.namespace),
            url_segment(&w.name)
        );
        h.open("tr", &[("data-workload", &w.name)]).raw("<td>");
        h.el("a", &[("href", &href)], &w.name).raw("</td>");
        h.el(
            "td",
            &[("class", "ready")],
            &format!("{}/{}", w.ready_replicas, w.replicas),
        );
        h.el("td", &[], if w.paused { "yes" } else { "no" });
        h.el("td", &[], w.policy.as_deref().unwrap_or("–"));
        h.raw("<td>");
        placement(h, w);
        h.raw("</td></tr>");
    }
    h.raw("</tbody></table>");
    // The other workload kinds have their pages too; their lists are the resource browser's.
    let ns = url_segment(&o.namespace);
    h.raw("<p id=\"other-workloads\">Also in this namespace: ");
    for (i, (label, path)) in [
        ("StatefulSets", "apps/v1/statefulsets"),
        ("DaemonSets", "apps/v1/daemonsets"),
    ]
    .into_iter()
    .enumerate()
    {
        if i > 0 {
            h.raw(" · ");
        }
        h.el(
            "a",
            &[("href", &format!("{base}/resources/{path}?ns={ns}"))],
            label,
        );
    }
    h.raw(" · ")
        .el(
            "a",
            &[("href", &format!("{base}/namespaces/{ns}/batch"))],
            "Jobs and CronJobs",
        )
        .raw("</p>");
    let (page, pages) = o.workloads_page;
    crate::console::page::page_nav(
        h,
        (o.workloads_total, page, pages),
        "workloads",
        crate::console::page::PREVIOUS_NEXT,
        |p| format!("{base}?ns={}&page={p}", url_segment(&o.namespace)),
    );
    h.raw("</section>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ClusterWorkloadStatus;
    use crate::console::page::{error_page, signin_page};
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
    fn instance_rows_show_the_summary_and_escape_names() {
        let object = json!({
            "apiVersion": "kairship.io/v1alpha1", "kind": "Instance",
            "metadata": {"name": EVIL, "labels": {"x": EVIL}},
            "spec": {"mode": "Adopt"},
            "status": {"state": "RUNNING", "karmadaVersion": "v1.12.0", "kubernetesVersion": "v1.31.2",
              "summary": {"clusterSummary": {"totalNum": 3, "readyNum": 2},
                "nodeSummary": {"totalNum": 7, "readyNum": 5},
                "resourceSummary": {"allocatable": {"cpu": "16", "memory": "64Gi"}, "allocated": {"cpu": "4", "memory": "16Gi"}},
                "policyTotalNum": {"propagationpolicies": 2, "overridepolicies": 1},
                "workloadSummary": {"deployments": {"totalNum": 4, "readyNum": 3}}}}
        });
        let row = InstanceRow::from_object(&object, true);
        assert_eq!(row.state(), "RUNNING");
        let html = instances_page(
            &viewer(),
            &InstancesQuery::default(),
            &[row],
            1,
            1,
            true,
            false,
        );
        assert_no_injection(&html);
        for want in [
            "&lt;script&gt;alert(1)&lt;/script&gt;",
            "<td class=\"clusters\">2/3</td>",
            "<td class=\"nodes\">5/7</td>",
            "<td class=\"workloads\">3/4</td>",
            "<td class=\"policies\">3</td>",
            "value=\"0.2500\"",
            "4 / 16",
            "16Gi / 64Gi",
            "v1.12.0",
            "class=\"button danger delete\"",
            "hx-trigger=\"every 5s\"",
        ] {
            assert!(html.contains(want), "{want} missing from:\n{html}");
        }
        let viewer_row = InstanceRow::from_object(&object, false);
        let html = instances_page(
            &viewer(),
            &InstancesQuery::default(),
            &[viewer_row],
            1,
            1,
            false,
            true,
        );
        assert!(!html.contains("delete"), "{html}");
        assert!(!html.contains("<html"), "a fragment is not a page");
    }

    #[test]
    fn adopt_form_builds_the_instance() {
        let fields: std::collections::HashMap<String, String> = [
            ("name", " prod "),
            ("alias", ""),
            ("secretNamespace", "kairship-system"),
            ("secretName", "prod-karmada"),
            ("secretKey", ""),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let form = AdoptForm::from_fields(&fields);
        assert_eq!(
            form.instance(),
            json!({"apiVersion": "kairship.io/v1alpha1", "kind": "Instance",
                "metadata": {"name": "prod"},
                "spec": {"mode": "Adopt", "kubeconfigSecretRef": {"namespace": "kairship-system", "name": "prod-karmada"}}})
        );
        let with_key = AdoptForm {
            alias: "Prod".into(),
            secret_key: "config".into(),
            ..form.clone()
        };
        assert_eq!(
            with_key.instance()["spec"]["kubeconfigSecretRef"]["key"],
            "config"
        );
        assert_eq!(with_key.instance()["spec"]["alias"], "Prod");
    }

    #[test]
    fn usage_bar_table() {
        for (used, total, want) in [
            (Some("500m"), Some("2"), "value=\"0.2500\""),
            (None, Some("2"), "value=\"0.0000\""),
            (Some("3"), Some("2"), "value=\"1.0000\""),
            (Some("1Gi"), Some("4Gi"), "value=\"0.2500\""),
            (Some("1"), Some("0"), "value=\"0.0000\""),
        ] {
            let mut h = Html::new();
            usage_bar(&mut h, "cpu", used, total);
            let out = h.finish();
            assert!(out.contains(want), "{used:?}/{total:?}: {out}");
        }
        let mut h = Html::new();
        usage_bar(&mut h, "cpu", Some("1"), None);
        assert!(!h.finish().contains("meter"));
    }

    #[test]
    fn query_round_trip() {
        let q = InstancesQuery {
            q: "a&b".into(),
            state: "RUNNING".into(),
            sort: "state".into(),
            dir: "desc".into(),
            page: Some(3),
            size: Some(500),
        };
        assert_eq!(q.size(), 200);
        assert_eq!(
            q.to_query(2),
            "q=a%26b&state=RUNNING&sort=state&dir=desc&page=2&size=200"
        );
        assert_eq!(InstancesQuery::default().to_query(1), "");
    }

    #[test]
    fn policies_say_what_and_where() {
        let pp = json!({"spec": {"resourceSelectors": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                {"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"app": "api"}}},
                {"apiVersion": "v1", "kind": "ConfigMap"}],
            "placement": {"clusterAffinity": {"clusterNames": ["a-east", "a-west"]}}}});
        assert_eq!(
            policy_selects(&pp),
            ["Deployment/web", "Deployment (app=api)", "ConfigMap"]
        );
        assert_eq!(policy_places(&pp), "a-east, a-west");
        let by_label = json!({"spec": {"placement": {"clusterAffinity": {"labelSelector": {"matchLabels": {"region": "eu"}}}}}});
        assert_eq!(policy_places(&by_label), "clusters labelled region=eu");
        let op = json!({"spec": {"overrideRules": [{"targetCluster": {"clusterNames": ["b-1"]}}]}});
        assert_eq!(policy_places(&op), "b-1");
        assert_eq!(policy_places(&json!({})), "all clusters");
    }

    #[test]
    fn the_zone_column_shows_zones_and_the_deprecated_zone() {
        let mut h = Html::new();
        clusters_section(
            &mut h,
            "/ui/instances/i",
            &[
                json!({"metadata": {"name": "a"}, "spec": {"zones": ["eu-1a", "eu-1b"]}}),
                json!({"metadata": {"name": "b"}, "spec": {"zone": "us-1a"}}),
                json!({"metadata": {"name": "c"}, "spec": {}}),
            ],
        );
        let html = h.finish();
        let zones: Vec<&str> = html
            .split("<td class=\"zones\">")
            .skip(1)
            .map(|rest| rest.split("</td>").next().unwrap())
            .collect();
        assert_eq!(zones, ["eu-1a, eu-1b", "us-1a", "–"]);
    }

    #[test]
    fn overview_and_create_escape_everything() {
        let o = Overview {
            instance: json!({"metadata": {"name": "a"}, "status": {"state": EVIL}}),
            clusters: vec![json!({"metadata": {"name": EVIL}, "spec": {"region": EVIL},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}})],
            namespaces: vec![EVIL.into()],
            namespace: EVIL.into(),
            workloads: vec![workload(EVIL)],
            workloads_total: 1,
            workloads_page: (1, 1),
            propagation: vec![json!({"metadata": {"name": EVIL, "namespace": EVIL},
                "spec": {"resourceSelectors": [{"kind": EVIL, "name": EVIL}]}})],
            overrides: vec![],
            can_write: true,
            can_update: true,
            can_delete: true,
            recent_events: Some(Ok(crate::api::ObjectList {
                items: vec![json!({"type": EVIL, "reason": EVIL, "message": EVIL,
                    "involvedObject": {"kind": EVIL, "name": EVIL}, "lastTimestamp": EVIL})],
                pagination: Default::default(),
            })),
        };
        assert_no_injection(&overview_page(&viewer(), EVIL, &o, false));
        let err = ApiError::invalid(EVIL)
            .with_detail(json!({"fieldViolations": [{"field": EVIL, "description": EVIL}]}));
        assert_no_injection(&error_page(Some(&viewer()), EVIL, &err));
        assert_no_injection(&delete_instance_page(&viewer(), EVIL, Some(&err)));
        assert_no_injection(&signin_page(Some(EVIL), true));
    }

    #[test]
    fn the_overview_links_the_namespace_s_other_workload_kinds() {
        let o = Overview {
            instance: json!({"metadata": {"name": "a"}}),
            clusters: vec![],
            namespaces: vec!["demo".into()],
            namespace: "demo".into(),
            workloads: vec![],
            workloads_total: 0,
            workloads_page: (1, 1),
            propagation: vec![],
            overrides: vec![],
            can_write: false,
            can_update: false,
            can_delete: false,
            recent_events: None,
        };
        let html = overview_page(&viewer(), "a", &o, false);
        for href in [
            "/ui/instances/a/resources/apps/v1/statefulsets?ns=demo",
            "/ui/instances/a/resources/apps/v1/daemonsets?ns=demo",
            "/ui/instances/a/namespaces/demo/batch",
        ] {
            assert!(html.contains(&format!("href=\"{href}\"")), "{href}");
        }
    }
}
