//! A member cluster's own workloads, and promoting one into the instance.
//!
//! The list (`…/members/{c}/workloads?ns=&kind=`) shows the Deployments, StatefulSets,
//! DaemonSets, Jobs and CronJobs member `c` holds, read through Karmada's cluster proxy as the
//! signed-in user ([`KairshipApi::list_member_objects`](crate::api::MembersApi::list_member_objects)),
//! with whether Karmada manages each one: promoted (its PropagationPolicy is the one a
//! promotion creates), propagated (by another policy), or member-only. A workload's page
//! (`…/members/{c}/namespaces/{ns}/workloads/{kind}/{name}`) shows its status, containers and
//! YAML and, for who may create in the instance, **Promote**: a CSRF-protected POST of the
//! API's dry run first (`PromoteWorkload` with `dry_run`), whose preview lists every object
//! the promotion would create, then the real call. The API's refusal is shown as it answers it.

pub mod detail;

use std::collections::BTreeSet;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::routing::{get, post};
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use super::html::{Html, url_segment};
use super::page::{Viewer, error_box, page};
use super::request::{Shared, SignedIn, html, is_htmx, status_of};
use crate::access::Caller;
use crate::api::applications::promote::policy_name;
use crate::api::{ApiError, ListMemberObjectsRequest, ListOptions, WorkloadKind};

/// Label Karmada puts on everything it applied to a member.
// karmada-io/karmada pkg/util/constants.go: `ManagedByKarmadaLabel`.
pub const MANAGED_LABEL: &str = "karmada.io/managed";

/// Annotation naming the PropagationPolicy of a propagated object (on the template and on
/// what Karmada applied to members from it).
// karmada-io/karmada pkg/apis/policy/v1alpha1/well_known_constants.go:
// `PropagationPolicyNameAnnotation`.
pub const POLICY_NAME_ANNOTATION: &str = "propagationpolicy.karmada.io/name";

/// Annotation naming the ClusterPropagationPolicy of a propagated object.
// Same file: `ClusterPropagationPolicyAnnotation`.
pub const CLUSTER_POLICY_NAME_ANNOTATION: &str = "clusterpropagationpolicy.karmada.io/name";

/// The routes (under `/ui/instances/{instance}/members/{cluster}`).
pub(super) fn routes() -> Router<Shared> {
    let one =
        "/ui/instances/{instance}/members/{cluster}/namespaces/{namespace}/workloads/{kind}/{name}";
    Router::new()
        .route(
            "/ui/instances/{instance}/members/{cluster}/workloads",
            get(list),
        )
        .route(one, get(detail::show))
        .route(&format!("{one}/promote"), post(detail::promote))
}

/// Whether Karmada manages a member's workload, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Management {
    /// Made in the member; Karmada does not manage it.
    MemberOnly,
    /// Propagated by Karmada from the instance by this policy (`namespace/name` of a
    /// PropagationPolicy, or the name of a ClusterPropagationPolicy; empty when unnamed).
    Propagated(String),
    /// Promoted from this member: its policy is the one a promotion creates.
    Promoted(String),
}

impl Management {
    /// The badge text.
    pub fn label(&self) -> &'static str {
        match self {
            Management::MemberOnly => "member-only",
            Management::Propagated(_) => "propagated",
            Management::Promoted(_) => "promoted",
        }
    }

    /// Whether Karmada manages it.
    pub fn managed(&self) -> bool {
        !matches!(self, Management::MemberOnly)
    }
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// How Karmada manages `object`, a member's workload of `kind`: by the `karmada.io/managed`
/// label Karmada's execution controller sets, and the policy annotation it carries over from
/// the template.
pub fn management(object: &Value, kind: WorkloadKind) -> Management {
    let managed = object
        .pointer("/metadata/labels")
        .and_then(|l| l.get(MANAGED_LABEL))
        .and_then(Value::as_str)
        == Some("true");
    if !managed {
        return Management::MemberOnly;
    }
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match annotation(object, POLICY_NAME_ANNOTATION) {
        Some(policy) if policy == policy_name(kind, name) => {
            Management::Promoted(policy.to_owned())
        }
        Some(policy) => {
            let ns = annotation(object, "propagationpolicy.karmada.io/namespace").unwrap_or("");
            Management::Propagated(if ns.is_empty() {
                policy.to_owned()
            } else {
                format!("{ns}/{policy}")
            })
        }
        None => Management::Propagated(
            annotation(object, CLUSTER_POLICY_NAME_ANNOTATION)
                .unwrap_or_default()
                .to_owned(),
        ),
    }
}

/// Where the pod template of a workload of `kind` is.
fn pod_spec(object: &Value, kind: WorkloadKind) -> Option<&Value> {
    match kind {
        WorkloadKind::Cronjobs => object.pointer("/spec/jobTemplate/spec/template/spec"),
        _ => object.pointer("/spec/template/spec"),
    }
}

/// `(name, image)` of each container of the pod template, init containers last.
pub fn containers(object: &Value, kind: WorkloadKind) -> Vec<(String, String)> {
    let Some(spec) = pod_spec(object, kind) else {
        return Vec::new();
    };
    ["containers", "initContainers"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or_default().to_owned(),
                c["image"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The distinct images of a workload's containers, in order.
pub fn images(object: &Value, kind: WorkloadKind) -> Vec<String> {
    let mut seen = BTreeSet::new();
    containers(object, kind)
        .into_iter()
        .map(|(_, image)| image)
        .filter(|image| !image.is_empty() && seen.insert(image.clone()))
        .collect()
}

fn int(object: &Value, pointer: &str) -> Option<i64> {
    object.pointer(pointer).and_then(Value::as_i64)
}

/// The readiness column, as `kubectl get` shows it per kind: ready/desired replicas
/// (Deployments, StatefulSets; a missing `spec.replicas` is 1), ready/desired pods
/// (DaemonSets), succeeded/completions (Jobs; a missing `completions` is 1), active Jobs and
/// whether suspended (CronJobs).
pub fn ready(object: &Value, kind: WorkloadKind) -> String {
    let n = |p: &str| int(object, p).unwrap_or(0);
    match kind {
        WorkloadKind::Deployments | WorkloadKind::Statefulsets => format!(
            "{}/{}",
            n("/status/readyReplicas"),
            int(object, "/spec/replicas").unwrap_or(1)
        ),
        WorkloadKind::Daemonsets => format!(
            "{}/{}",
            n("/status/numberReady"),
            n("/status/desiredNumberScheduled")
        ),
        WorkloadKind::Jobs => format!(
            "{}/{}",
            n("/status/succeeded"),
            int(object, "/spec/completions").unwrap_or(1)
        ),
        WorkloadKind::Cronjobs => {
            let active = object
                .pointer("/status/active")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let suspended = object.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
            format!(
                "{active} active{}",
                if suspended { ", suspended" } else { "" }
            )
        }
    }
}

/// How long ago `created` (RFC 3339) was, as `kubectl get` writes ages: `45s`, `12m`, `5h`,
/// `3d`; `–` when it does not parse.
pub fn age(created: &str, now: jiff::Timestamp) -> String {
    let Ok(created) = created.parse::<jiff::Timestamp>() else {
        return "–".to_owned();
    };
    let seconds = (now.as_second() - created.as_second()).max(0);
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// One row of the member's workload list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Kind.
    pub kind: WorkloadKind,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// The readiness column ([`ready`]).
    pub ready: String,
    /// Distinct images.
    pub images: Vec<String>,
    /// Age ([`age`]).
    pub age: String,
    /// Whether Karmada manages it.
    pub management: Management,
}

impl Row {
    /// The row of `object`, a workload of `kind`, at `now`.
    pub fn of(object: &Value, kind: WorkloadKind, now: jiff::Timestamp) -> Row {
        let text = |p: &str| {
            object
                .pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Row {
            kind,
            namespace: text("/metadata/namespace"),
            name: text("/metadata/name"),
            ready: ready(object, kind),
            images: images(object, kind),
            age: age(&text("/metadata/creationTimestamp"), now),
            management: management(object, kind),
        }
    }
}

/// The list's filters: namespace (empty: all) and kind (a plural; empty: every kind).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct WorkloadsQuery {
    /// Namespace; empty for all.
    pub ns: String,
    /// Kind, as its plural (`deployments`); empty for every kind.
    pub kind: String,
}

impl WorkloadsQuery {
    /// The kinds listed, or the API-shaped refusal of an unknown one.
    pub fn kinds(&self) -> Result<Vec<WorkloadKind>, ApiError> {
        let kind = self.kind.trim();
        if kind.is_empty() {
            return Ok(WorkloadKind::ALL.to_vec());
        }
        WorkloadKind::parse(kind).map(|k| vec![k]).ok_or_else(|| {
            let known: Vec<&str> = WorkloadKind::ALL.iter().map(|k| k.plural()).collect();
            ApiError::invalid_field(
                "kind",
                format!(
                    "{kind:?} is not a workload kind; one of {}",
                    known.join(", ")
                ),
            )
        })
    }

    fn namespace(&self) -> Option<String> {
        Some(self.ns.trim().to_owned()).filter(|n| !n.is_empty())
    }
}

fn member_base(instance: &str, cluster: &str) -> String {
    format!(
        "/ui/instances/{}/members/{}",
        url_segment(instance),
        url_segment(cluster)
    )
}

/// The list page of member `cluster`'s workloads with these filters.
pub fn workloads_url(instance: &str, cluster: &str, query: &WorkloadsQuery) -> String {
    let mut url = format!("{}/workloads", member_base(instance, cluster));
    let params: Vec<String> = [("ns", &query.ns), ("kind", &query.kind)]
        .iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .map(|(k, v)| format!("{k}={}", url_segment(v.trim())))
        .collect();
    if !params.is_empty() {
        url.push('?');
        url.push_str(&params.join("&"));
    }
    url
}

/// The page of one workload of member `cluster`.
pub fn workload_url(
    instance: &str,
    cluster: &str,
    namespace: &str,
    kind: WorkloadKind,
    name: &str,
) -> String {
    format!(
        "{}/namespaces/{}/workloads/{}/{}",
        member_base(instance, cluster),
        url_segment(namespace),
        kind.plural(),
        url_segment(name)
    )
}

/// The console page of the workload in the instance (Karmada's template): the typed pages of
/// Deployments, Jobs and CronJobs, the resource browser's for the other kinds.
pub fn karmada_url(instance: &str, namespace: &str, kind: WorkloadKind, name: &str) -> String {
    let (i, ns, n) = (
        url_segment(instance),
        url_segment(namespace),
        url_segment(name),
    );
    match kind {
        WorkloadKind::Deployments => format!("/ui/instances/{i}/namespaces/{ns}/workloads/{n}"),
        WorkloadKind::Jobs => format!("/ui/instances/{i}/namespaces/{ns}/jobs/{n}"),
        WorkloadKind::Cronjobs => format!("/ui/instances/{i}/namespaces/{ns}/cronjobs/{n}"),
        WorkloadKind::Statefulsets | WorkloadKind::Daemonsets => format!(
            "/ui/instances/{i}/resources/apps/v1/{}/{n}?ns={ns}",
            kind.plural()
        ),
    }
}

fn management_badge(h: &mut Html, m: &Management) {
    let class = match m {
        Management::MemberOnly => "badge wait",
        Management::Propagated(_) | Management::Promoted(_) => "badge ok",
    };
    h.el(
        "span",
        &[("class", class), ("data-management", m.label())],
        m.label(),
    );
    if let Management::Propagated(p) | Management::Promoted(p) = m
        && !p.is_empty()
    {
        h.raw(" ").el("span", &[("class", "muted")], p);
    }
}

/// What the list read: its rows, the namespaces to suggest, and the reads that failed.
#[derive(Debug, Default)]
pub struct Listed {
    /// The rows, by namespace, kind and name.
    pub rows: Vec<Row>,
    /// The member's namespaces (suggested in the filter).
    pub namespaces: Vec<String>,
    /// The reads that failed (one per kind, or the filter's refusal).
    pub errors: Vec<ApiError>,
}

fn filters_form(
    h: &mut Html,
    instance: &str,
    cluster: &str,
    query: &WorkloadsQuery,
    listed: &Listed,
) {
    let action = workloads_url(instance, cluster, &WorkloadsQuery::default());
    h.open(
        "form",
        &[("method", "get"), ("action", &action), ("class", "toolbar")],
    );
    h.raw("<label>Namespace ");
    h.open(
        "input",
        &[
            ("name", "ns"),
            ("id", "ns"),
            ("value", &query.ns),
            ("list", "member-namespaces"),
            ("placeholder", "all namespaces"),
        ],
    );
    h.raw("</label><datalist id=\"member-namespaces\">");
    for ns in &listed.namespaces {
        h.open("option", &[("value", ns)]).close("option");
    }
    h.raw("</datalist><label>Kind <select name=\"kind\" id=\"kind\">");
    let all_selected = query.kind.trim().is_empty();
    let mut all = vec![("value", "")];
    if all_selected {
        all.push(("selected", ""));
    }
    h.open("option", &all).raw("every kind</option>");
    for kind in WorkloadKind::ALL {
        let mut attrs = vec![("value", kind.plural())];
        if query.kind.trim() == kind.plural() {
            attrs.push(("selected", ""));
        }
        h.open("option", &attrs).text(kind.kind()).close("option");
    }
    h.raw("</select></label> <button type=\"submit\" id=\"filter\">Filter</button></form>");
}

/// The live part of the list: the table (refreshed every 5 s).
fn workloads_live(instance: &str, cluster: &str, query: &WorkloadsQuery, listed: &Listed) -> Html {
    let refresh = workloads_url(instance, cluster, query);
    let mut h = Html::with_capacity(1024 + listed.rows.len() * 400);
    h.open(
        "div",
        &[
            ("id", "member-workloads-live"),
            ("hx-get", &refresh),
            ("hx-trigger", "every 5s"),
            ("hx-swap", "outerHTML"),
        ],
    );
    for err in &listed.errors {
        error_box(&mut h, err);
    }
    h.raw("<table id=\"member-workloads\" class=\"list\"><thead><tr><th>Namespace</th><th>Kind</th><th>Name</th><th>Ready</th><th>Images</th><th>Age</th><th>Karmada</th></tr></thead><tbody>");
    if listed.rows.is_empty() {
        h.raw("<tr><td colspan=\"7\" class=\"muted\">No workloads.</td></tr>");
    }
    for row in &listed.rows {
        let url = workload_url(instance, cluster, &row.namespace, row.kind, &row.name);
        h.open(
            "tr",
            &[
                ("data-kind", row.kind.plural()),
                ("data-namespace", &row.namespace),
                ("data-name", &row.name),
            ],
        )
        .el("td", &[], &row.namespace)
        .el("td", &[], row.kind.kind())
        .raw("<td>")
        .el("a", &[("href", &url)], &row.name)
        .raw("</td>")
        .el("td", &[("class", "ready")], &row.ready)
        .el("td", &[], &row.images.join(", "))
        .el("td", &[], &row.age)
        .raw("<td class=\"management\">");
        management_badge(&mut h, &row.management);
        h.raw("</td></tr>");
    }
    h.raw("</tbody></table></div>");
    h
}

/// The member's workloads page (`fragment`: only the live table, for htmx).
pub fn workloads_page(
    viewer: &Viewer<'_>,
    instance: &str,
    cluster: &str,
    query: &WorkloadsQuery,
    listed: &Listed,
    fragment: bool,
) -> String {
    let live = workloads_live(instance, cluster, query, listed);
    if fragment {
        return live.finish();
    }
    let mut h = Html::new();
    h.open("h1", &[])
        .raw("Workloads of member ")
        .text(cluster)
        .close("h1");
    crumbs(&mut h, instance, cluster);
    h.raw("<p class=\"muted\">Read from the member through Karmada's cluster proxy as you. <strong>member-only</strong>: made in the member, Karmada does not manage it (it can be promoted into the instance); <strong>propagated</strong>: Karmada applied it from the instance; <strong>promoted</strong>: taken into the instance from this member.</p>");
    filters_form(&mut h, instance, cluster, query, listed);
    h.append(live);
    page(&format!("Workloads of {cluster}"), Some(viewer), h)
}

fn crumbs(h: &mut Html, instance: &str, cluster: &str) {
    let base = member_base(instance, cluster);
    h.open("p", &[("class", "crumbs")])
        .el(
            "a",
            &[("href", &format!("/ui/instances/{}", url_segment(instance)))],
            instance,
        )
        .raw(" / ")
        .el(
            "a",
            &[(
                "href",
                &format!("/ui/instances/{}/members", url_segment(instance)),
            )],
            "members",
        )
        .raw(" / ")
        .el("a", &[("href", &base)], cluster)
        .raw(" / ")
        .el(
            "a",
            &[
                ("href", &format!("{base}/workloads")),
                ("id", "member-workloads-link"),
            ],
            "workloads",
        )
        .close("p");
}

/// Reads the member's workloads of the query's kinds (all at once) and its namespaces.
pub async fn load_workloads(
    api: &dyn crate::api::KairshipApi,
    caller: &Caller,
    instance: &str,
    cluster: &str,
    query: &WorkloadsQuery,
    now: jiff::Timestamp,
) -> Listed {
    let mut listed = Listed::default();
    let kinds = match query.kinds() {
        Ok(k) => k,
        Err(err) => {
            listed.errors.push(err);
            return listed;
        }
    };
    let list = |group: &str, resource: &str, namespace: Option<String>| ListMemberObjectsRequest {
        instance: instance.to_owned(),
        cluster: cluster.to_owned(),
        group: group.to_owned(),
        version: "v1".to_owned(),
        resource: resource.to_owned(),
        namespace,
        options: ListOptions::default(),
    };
    let reads = futures::future::join_all(kinds.iter().map(|kind| {
        api.list_member_objects(caller, list(kind.group(), kind.plural(), query.namespace()))
    }));
    let namespaces = api.list_member_objects(caller, list("core", "namespaces", None));
    let (reads, namespaces) = futures::join!(reads, namespaces);
    for (kind, read) in kinds.iter().zip(reads) {
        match read {
            Ok(list) => listed
                .rows
                .extend(list.items.iter().map(|o| Row::of(o, *kind, now))),
            // An unreachable member fails every read the same way: said once.
            Err(err) if listed.errors.iter().any(|e| e.message == err.message) => {}
            Err(err) => listed.errors.push(err),
        }
    }
    listed.rows.sort_by(|a, b| {
        (&a.namespace, a.kind.plural(), &a.name).cmp(&(&b.namespace, b.kind.plural(), &b.name))
    });
    // Only suggestions: a member that does not let the caller list namespaces offers none.
    if let Ok(list) = namespaces {
        listed.namespaces = list
            .items
            .iter()
            .filter_map(|n| n.pointer("/metadata/name").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
    }
    listed
}

async fn list(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path((instance, cluster)): Path<(String, String)>,
    Query(query): Query<WorkloadsQuery>,
    signed: SignedIn,
) -> Response {
    let listed = load_workloads(
        console.api.as_ref(),
        &signed.caller,
        &instance,
        &cluster,
        &query,
        jiff::Timestamp::now(),
    )
    .await;
    // The filter's own mistake is the caller's; a member that cannot be read is shown as the
    // API answered, with what could be read.
    let status = match query.kinds() {
        Err(err) => status_of(&err),
        Ok(_) => StatusCode::OK,
    };
    html(
        status,
        workloads_page(
            &signed.viewer(),
            &instance,
            &cluster,
            &query,
            &listed,
            is_htmx(&headers),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn viewer() -> Viewer<'static> {
        Viewer {
            user: "u",
            csrf: "csrf-token",
        }
    }

    #[test]
    fn management_table() {
        let with = |labels: Value, annotations: Value| json!({"metadata": {"name": "web", "labels": labels, "annotations": annotations}});
        for (object, want) in [
            (json!({"metadata": {"name": "web"}}), Management::MemberOnly),
            (
                with(json!({"karmada.io/managed": "false"}), json!({})),
                Management::MemberOnly,
            ),
            (
                with(
                    json!({"karmada.io/managed": "true"}),
                    json!({"propagationpolicy.karmada.io/name": "web-deployment-promoted",
                           "propagationpolicy.karmada.io/namespace": "demo"}),
                ),
                Management::Promoted("web-deployment-promoted".into()),
            ),
            (
                with(
                    json!({"karmada.io/managed": "true"}),
                    json!({"propagationpolicy.karmada.io/name": "shop",
                           "propagationpolicy.karmada.io/namespace": "demo"}),
                ),
                Management::Propagated("demo/shop".into()),
            ),
            (
                with(
                    json!({"karmada.io/managed": "true"}),
                    json!({"clusterpropagationpolicy.karmada.io/name": "all"}),
                ),
                Management::Propagated("all".into()),
            ),
        ] {
            assert_eq!(
                management(&object, WorkloadKind::Deployments),
                want,
                "{object}"
            );
        }
    }

    #[test]
    fn ready_and_images_per_kind() {
        let template = json!({"spec": {"containers": [
            {"name": "app", "image": "nginx:1"}, {"name": "side", "image": "nginx:1"}],
            "initContainers": [{"name": "init", "image": "busybox"}]}});
        for (kind, object, want) in [
            (
                WorkloadKind::Deployments,
                json!({"spec": {"replicas": 3, "template": template}, "status": {"readyReplicas": 2}}),
                "2/3",
            ),
            (
                WorkloadKind::Statefulsets,
                json!({"spec": {"template": template}}),
                "0/1",
            ),
            (
                WorkloadKind::Daemonsets,
                json!({"spec": {"template": template}, "status": {"numberReady": 4, "desiredNumberScheduled": 5}}),
                "4/5",
            ),
            (
                WorkloadKind::Jobs,
                json!({"spec": {"completions": 3, "template": template}, "status": {"succeeded": 1}}),
                "1/3",
            ),
            (
                WorkloadKind::Cronjobs,
                json!({"spec": {"suspend": true, "jobTemplate": {"spec": {"template": template}}},
                       "status": {"active": [{"name": "j1"}]}}),
                "1 active, suspended",
            ),
        ] {
            assert_eq!(ready(&object, kind), want, "{kind}");
            assert_eq!(images(&object, kind), ["nginx:1", "busybox"], "{kind}");
            assert_eq!(containers(&object, kind).len(), 3, "{kind}");
        }
        assert!(images(&json!({}), WorkloadKind::Jobs).is_empty());
    }

    #[test]
    fn age_table() {
        let now: jiff::Timestamp = "2026-01-03T12:00:00Z".parse().unwrap();
        for (created, want) in [
            ("2026-01-03T11:59:15Z", "45s"),
            ("2026-01-03T11:48:00Z", "12m"),
            ("2026-01-03T07:00:00Z", "5h"),
            ("2025-12-31T12:00:00Z", "3d"),
            ("2026-01-03T12:00:30Z", "0s"),
            ("not a time", "–"),
            ("", "–"),
        ] {
            assert_eq!(age(created, now), want, "{created}");
        }
    }

    #[test]
    fn query_kinds_and_urls() {
        let all = WorkloadsQuery::default();
        assert_eq!(all.kinds().unwrap().len(), 5);
        let jobs = WorkloadsQuery {
            ns: " demo ".into(),
            kind: "jobs".into(),
        };
        assert_eq!(jobs.kinds().unwrap(), [WorkloadKind::Jobs]);
        let err = WorkloadsQuery {
            kind: "pods".into(),
            ..WorkloadsQuery::default()
        }
        .kinds()
        .unwrap_err();
        assert!(
            err.message.contains("not a workload kind"),
            "{}",
            err.message
        );
        assert_eq!(
            workloads_url("i", "c/1", &jobs),
            "/ui/instances/i/members/c%2F1/workloads?ns=demo&kind=jobs"
        );
        assert_eq!(
            workloads_url("i", "c", &all),
            "/ui/instances/i/members/c/workloads"
        );
        assert_eq!(
            workload_url("i", "c", "demo", WorkloadKind::Cronjobs, "a b"),
            "/ui/instances/i/members/c/namespaces/demo/workloads/cronjobs/a%20b"
        );
        assert_eq!(
            karmada_url("i", "demo", WorkloadKind::Deployments, "web"),
            "/ui/instances/i/namespaces/demo/workloads/web"
        );
        assert_eq!(
            karmada_url("i", "demo", WorkloadKind::Statefulsets, "db"),
            "/ui/instances/i/resources/apps/v1/statefulsets/db?ns=demo"
        );
    }

    #[test]
    fn the_list_escapes_and_marks_member_only_workloads() {
        let now = jiff::Timestamp::now();
        let object = json!({"metadata": {"name": "<script>x</script>", "namespace": "demo"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "img<1>"}]}}}});
        let listed = Listed {
            rows: vec![Row::of(&object, WorkloadKind::Deployments, now)],
            namespaces: vec!["demo".into()],
            errors: vec![ApiError::unavailable("member <down>")],
        };
        let q = WorkloadsQuery::default();
        let full = workloads_page(&viewer(), "i", "c", &q, &listed, false);
        assert!(!full.contains("<script>x"), "{full}");
        assert!(full.contains("img&lt;1&gt;") && full.contains("member &lt;down&gt;"));
        assert!(full.contains("data-management=\"member-only\""), "{full}");
        assert!(full.contains("hx-trigger=\"every 5s\""), "{full}");
        let fragment = workloads_page(&viewer(), "i", "c", &q, &listed, true);
        assert!(fragment.starts_with("<div id=\"member-workloads-live\""));
        assert!(!fragment.contains("<html"));
    }
}
