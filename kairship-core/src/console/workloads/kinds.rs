//! The pages of StatefulSets, DaemonSets and Jobs, like a Deployment's: the counts each kind
//! has, the policy, the per-cluster status from the ResourceBinding's `aggregatedStatus`, the
//! placement picture, the pods per member cluster (the API's `ListWorkloadPods`, by the
//! workload's selector), events and YAML; restart of a StatefulSet or DaemonSet and scale of a
//! StatefulSet (a Job's re-run is the Jobs page's button). The object and its binding are read
//! with the generic calls and joined by the API's own join
//! ([`crate::api::workloads::view::workload`]), so a Deployment and these kinds share
//! one reading of Karmada's status.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use http::{HeaderMap, StatusCode};
use kube::core::DynamicObject;
use serde_json::Value;

use super::view::{
    events_section, open_action_form, page_url, pods_section, replicas_input, restarted_at, text,
};
use super::{load_events, load_pods, object_request, scale, unplaced_of};
use crate::access::{InstanceResource, Verb};
use crate::api::workloads::view::{parse_binding, workload};
use crate::api::{
    ApiError, Code, DeploymentAction, DeploymentActionRequest, GetObjectRequest, KairshipApi,
    Workload, WorkloadKind, resource_bindings_resource,
};
use crate::console::html::{Html, url_segment};
use crate::console::page::{Viewer, csrf_field, error_box, i, notice_box, page, state_badge};
use crate::console::pictures::{placement_picture, workload_bars};
use crate::console::request::{
    Console, Shared, SignedForm, SignedIn, allowed, error_answer, html, is_htmx, see_other,
    status_of,
};

/// The kinds with a page here (a Deployment has its own page, `workloads/mod.rs`).
pub const KINDS: [WorkloadKind; 3] = [
    WorkloadKind::Statefulsets,
    WorkloadKind::Daemonsets,
    WorkloadKind::Jobs,
];

/// A workload of one of [`KINDS`] as its page shows it.
#[derive(Clone, Debug)]
pub struct KindView {
    /// Its kind.
    pub kind: WorkloadKind,
    /// The object joined with its binding (the object in `deployment`).
    pub workload: Workload,
    /// Each cluster's `aggregatedStatus[].status`, by cluster name.
    pub member_status: Vec<(String, Value)>,
    /// Clusters the policy could use that got nothing.
    pub unplaced: Vec<String>,
}

/// The verbs a kind's page offers, as `(action, label)`.
pub fn actions(kind: WorkloadKind) -> &'static [(&'static str, &'static str)] {
    match kind {
        WorkloadKind::Statefulsets => &[("restart", "Restart"), ("scale", "Scale")],
        WorkloadKind::Daemonsets => &[("restart", "Restart")],
        _ => &[],
    }
}

/// Reads workload `name` of `kind` and its binding, and joins them.
pub(in crate::console) async fn load(
    console: &Console,
    caller: &crate::access::Caller,
    (instance, namespace, name): (&str, &str, &str),
    kind: WorkloadKind,
) -> Result<KindView, ApiError> {
    let api: &dyn KairshipApi = console.api.as_ref();
    let bindings = resource_bindings_resource();
    let binding_read = GetObjectRequest {
        instance: instance.to_owned(),
        group: bindings.group,
        version: bindings.version,
        resource: bindings.plural,
        namespace: Some(namespace.to_owned()),
        name: kind.binding_name(name),
    };
    let (object, binding) = futures::join!(
        api.get_object(caller, object_request(instance, namespace, kind, name)),
        api.get_object(caller, binding_read),
    );
    let object: DynamicObject = serde_json::from_value(object?)
        .map_err(|e| ApiError::internal(format!("the {} read is not an object: {e}", kind)))?;
    let binding = match binding {
        Ok(b) => serde_json::from_value::<DynamicObject>(b).ok(),
        Err(err) if err.code == Code::NotFound => None,
        Err(err) => return Err(err),
    };
    let parsed = binding.as_ref().and_then(parse_binding);
    let member_status = parsed
        .as_ref()
        .and_then(|b| b.status.as_ref())
        .map(|s| {
            s.aggregated_status
                .iter()
                .map(|a| {
                    (
                        a.cluster_name.clone(),
                        a.status.clone().unwrap_or(Value::Null),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let workload = workload(&object, parsed.as_ref());
    let unplaced = unplaced_of(api, caller, instance, kind, &workload).await;
    Ok(KindView {
        kind,
        workload,
        member_status,
        unplaced,
    })
}

fn number(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_i64)
        .map_or_else(|| "–".to_owned(), |n| n.to_string())
}

/// The facts a kind has: `(label, id, value)`.
pub fn facts(kind: WorkloadKind, object: &Value) -> Vec<(&'static str, &'static str, String)> {
    let n = |p: &str| number(object, p);
    match kind {
        WorkloadKind::Statefulsets => vec![
            (
                "Ready",
                "ready",
                format!(
                    "{}/{}",
                    i(object, "/status/readyReplicas"),
                    object
                        .pointer("/spec/replicas")
                        .and_then(Value::as_i64)
                        .unwrap_or(1)
                ),
            ),
            ("Current", "current", n("/status/currentReplicas")),
            ("Updated", "updated", n("/status/updatedReplicas")),
            (
                "Partition",
                "partition",
                object
                    .pointer("/spec/updateStrategy/rollingUpdate/partition")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
                    .to_string(),
            ),
        ],
        WorkloadKind::Daemonsets => vec![
            ("Desired", "desired", n("/status/desiredNumberScheduled")),
            ("Current", "current", n("/status/currentNumberScheduled")),
            ("Ready", "ready", n("/status/numberReady")),
            ("Updated", "updated", n("/status/updatedNumberScheduled")),
            ("Available", "available", n("/status/numberAvailable")),
        ],
        _ => vec![
            ("Active", "active", i(object, "/status/active").to_string()),
            (
                "Succeeded",
                "succeeded",
                i(object, "/status/succeeded").to_string(),
            ),
            ("Failed", "failed", i(object, "/status/failed").to_string()),
            ("Completions", "completions", n("/spec/completions")),
            ("Parallelism", "parallelism", n("/spec/parallelism")),
            (
                "UID",
                "uid",
                object
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .unwrap_or("–")
                    .to_owned(),
            ),
        ],
    }
}

/// The per-cluster columns of a kind: `(heading, class, pointer into the member's status)`.
pub fn member_columns(kind: WorkloadKind) -> &'static [(&'static str, &'static str, &'static str)] {
    match kind {
        WorkloadKind::Statefulsets => &[
            ("Replicas", "replicas", "/replicas"),
            ("Ready", "ready", "/readyReplicas"),
            ("Current", "current", "/currentReplicas"),
            ("Updated", "updated", "/updatedReplicas"),
            ("Available", "available", "/availableReplicas"),
        ],
        WorkloadKind::Daemonsets => &[
            ("Desired", "desired", "/desiredNumberScheduled"),
            ("Current", "current", "/currentNumberScheduled"),
            ("Ready", "ready", "/numberReady"),
            ("Updated", "updated", "/updatedNumberScheduled"),
            ("Available", "available", "/numberAvailable"),
        ],
        _ => &[
            ("Active", "active", "/active"),
            ("Succeeded", "succeeded", "/succeeded"),
            ("Failed", "failed", "/failed"),
        ],
    }
}

/// The live part of a kind's page (`id="workload-live"`, refreshed every 5 s): facts,
/// actions, per-cluster status and the placement picture.
pub fn kind_live(
    instance: &str,
    v: &KindView,
    (can_write, csrf): (bool, &str),
    result: Option<Result<&str, &ApiError>>,
) -> Html {
    let w = &v.workload;
    let object = &w.deployment;
    let base = page_url(instance, &w.namespace, v.kind, &w.name);
    let mut h = Html::with_capacity(4096);
    h.open(
        "div",
        &[
            ("id", "workload-live"),
            ("hx-get", &base),
            ("hx-trigger", "every 5s"),
            ("hx-swap", "outerHTML"),
        ],
    );
    match result {
        Some(Ok(message)) => notice_box(&mut h, message),
        Some(Err(err)) => error_box(&mut h, err),
        None => {}
    }
    let facts_id = if v.kind == WorkloadKind::Jobs {
        "job-facts"
    } else {
        "facts"
    };
    h.open("dl", &[("class", "facts"), ("id", facts_id)]);
    for (label, id, value) in facts(v.kind, object) {
        h.open("dt", &[]).text(label).close("dt");
        h.el("dd", &[("id", id), ("class", id)], &value);
    }
    // Jobs (and Karmada's aggregate of them) report no observedGeneration.
    let generation = match object.pointer("/status/observedGeneration") {
        Some(observed) => format!(
            "{} (observed {observed})",
            i(object, "/metadata/generation")
        ),
        None => i(object, "/metadata/generation").to_string(),
    };
    h.raw("<dt>Generation</dt>")
        .el("dd", &[("id", "generation")], &generation);
    if v.kind != WorkloadKind::Jobs {
        h.raw("<dt>Last restart</dt>").el(
            "dd",
            &[("id", "restarted-at")],
            restarted_at(object).unwrap_or("never"),
        );
    }
    h.raw("<dt>Policy</dt>")
        .el(
            "dd",
            &[("id", "policy")],
            w.policy.as_deref().unwrap_or("–"),
        )
        .raw("</dl>");
    if can_write && v.kind == WorkloadKind::Jobs {
        // Served with the Jobs page's other buttons (`RestartJob`); it answers with the page.
        let url = format!("{base}/restart");
        h.raw("<div class=\"toolbar\" id=\"job-actions\">").open(
            "form",
            &[("method", "post"), ("action", &url), ("class", "inline")],
        );
        csrf_field(&mut h, csrf);
        h.raw(
            "<button type=\"submit\" id=\"job-restart\">Restart (run again)</button></form></div>",
        );
    }
    if can_write && !actions(v.kind).is_empty() {
        h.raw("<div class=\"toolbar\" id=\"actions\">");
        for (action, label) in actions(v.kind) {
            let url = format!("{base}/{action}");
            open_action_form(&mut h, &url, csrf);
            if *action == "scale" {
                let replicas = object
                    .pointer("/spec/replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(1)
                    .to_string();
                h.raw("<label>Replicas ");
                replicas_input(&mut h, &replicas).raw("</label> ");
            }
            let id = format!("action-{action}");
            h.el("button", &[("type", "submit"), ("id", &id)], label)
                .close("form");
        }
        h.raw("</div>");
    }
    clusters_table(&mut h, v);
    h.append(placement_picture(
        "placement-picture",
        &workload_bars(w, &v.unplaced),
    ));
    h.raw("</div>");
    h
}

fn clusters_table(h: &mut Html, v: &KindView) {
    let columns = member_columns(v.kind);
    let divided = v.kind != WorkloadKind::Daemonsets;
    h.raw("<h2>Clusters</h2><table id=\"workload-clusters\" class=\"list\"><thead><tr><th>Cluster</th>");
    if divided {
        h.raw("<th>Scheduled</th>");
    }
    for (heading, _, _) in columns {
        h.open("th", &[]).text(heading).close("th");
    }
    h.raw("<th>Applied</th><th>Health</th><th>Message</th></tr></thead><tbody>");
    let width = columns.len() + if divided { 5 } else { 4 };
    if v.workload.clusters.is_empty() {
        let span = width.to_string();
        h.open("tr", &[])
            .open("td", &[("colspan", &span), ("class", "muted")])
            .raw("Not propagated to any member cluster.")
            .close("td")
            .close("tr");
    }
    for c in &v.workload.clusters {
        let status = v
            .member_status
            .iter()
            .find(|(name, _)| name == &c.cluster)
            .map_or(&Value::Null, |(_, s)| s);
        h.open("tr", &[("data-cluster", &c.cluster)]);
        h.el("td", &[("class", "cluster")], &c.cluster);
        if divided {
            let scheduled = c
                .scheduled_replicas
                .map_or_else(|| "–".to_owned(), |n| n.to_string());
            h.el("td", &[("class", "scheduled")], &scheduled);
        }
        for (_, class, pointer) in columns {
            h.el("td", &[("class", class)], &number(status, pointer));
        }
        h.el(
            "td",
            &[("class", "applied")],
            match c.applied {
                Some(true) => "yes",
                Some(false) => "no",
                None => "–",
            },
        );
        h.raw("<td class=\"health\">");
        state_badge(h, c.health.as_deref().unwrap_or("Unknown"));
        h.raw("</td>");
        h.el("td", &[], c.message.as_deref().unwrap_or(""));
        h.raw("</tr>");
    }
    h.raw("</tbody></table>");
}

/// A kind's page: the live part, then `members` (pods and events), then the YAML.
pub fn kind_page(
    viewer: &Viewer<'_>,
    instance: &str,
    v: &KindView,
    can_write: bool,
    members: Html,
) -> String {
    let w = &v.workload;
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
        .text(v.kind.kind())
        .raw(" ")
        .text(&w.name)
        .close("h1");
    if v.kind == WorkloadKind::Jobs {
        let batch = format!(
            "/ui/instances/{}/namespaces/{}/batch",
            url_segment(instance),
            url_segment(&w.namespace)
        );
        h.raw("<p>").el(
            "a",
            &[("href", &batch)],
            "Jobs and CronJobs of the namespace",
        );
        if let Some(owner) = cronjob_owner(&w.deployment) {
            let href = page_url(instance, &w.namespace, WorkloadKind::Cronjobs, owner);
            h.raw(" · created by CronJob ")
                .el("a", &[("href", &href), ("id", "cronjob")], owner);
        }
        h.raw("</p>");
    }
    h.append(kind_live(instance, v, (can_write, viewer.csrf), None));
    h.append(members);
    h.raw("<h2>YAML</h2>");
    let yaml = serde_saphyr::to_string(&w.deployment)
        .unwrap_or_else(|e| format!("# cannot render as YAML: {e}"));
    h.el("pre", &[("id", "yaml"), ("class", "yaml")], &yaml);
    page(&w.name, Some(viewer), h)
}

/// The CronJob that made a Job (its controller owner reference), if any.
pub fn cronjob_owner(job: &Value) -> Option<&str> {
    job.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|o| o["kind"] == "CronJob" && o["controller"] == true)
        .and_then(|o| o["name"].as_str())
}

/// The Jobs a CronJob made (`jobs` of its namespace whose controller it is), newest first, as
/// a table linking to their pages; it reloads itself from the CronJob's page every 5 s.
pub fn cronjob_jobs_section(
    instance: &str,
    (namespace, cronjob): (&str, &str),
    jobs: &[Value],
) -> Html {
    let mut owned: Vec<&Value> = jobs
        .iter()
        .filter(|j| cronjob_owner(j) == Some(cronjob))
        .collect();
    owned.sort_by(|a, b| {
        text(b, "/metadata/creationTimestamp").cmp(text(a, "/metadata/creationTimestamp"))
    });
    let mut h = Html::new();
    let refresh = page_url(instance, namespace, WorkloadKind::Cronjobs, cronjob);
    h.open(
        "section",
        &[
            ("id", "cronjob-jobs-live"),
            ("hx-get", &refresh),
            ("hx-trigger", "every 5s"),
            ("hx-select", "#cronjob-jobs-live"),
            ("hx-swap", "outerHTML"),
        ],
    );
    h.raw("<h2>Its Jobs</h2><table id=\"cronjob-jobs\" class=\"list\"><thead><tr><th>Name</th><th>Active</th><th>Succeeded</th><th>Failed</th><th>Created</th></tr></thead><tbody>");
    if owned.is_empty() {
        h.raw("<tr><td colspan=\"5\" class=\"muted\">No Jobs of this CronJob now.</td></tr>");
    }
    for job in owned {
        let name = text(job, "/metadata/name");
        let href = page_url(
            instance,
            text(job, "/metadata/namespace"),
            WorkloadKind::Jobs,
            name,
        );
        h.raw("<tr><td>")
            .el("a", &[("href", &href)], name)
            .raw("</td><td>")
            .num(i(job, "/status/active"))
            .raw("</td><td>")
            .num(i(job, "/status/succeeded"))
            .raw("</td><td>")
            .num(i(job, "/status/failed"))
            .raw("</td>")
            .el("td", &[], text(job, "/metadata/creationTimestamp"))
            .raw("</tr>");
    }
    h.raw("</tbody></table></section>");
    h
}

/// Whether the caller may use the page's verbs: patch inside the instance (restart, scale);
/// for a Job's re-run, delete and create.
async fn may_write(
    console: &Console,
    signed: &SignedIn,
    instance: &str,
    kind: WorkloadKind,
) -> bool {
    let may = |verb| {
        allowed(
            console,
            &signed.caller,
            verb,
            InstanceResource::Proxy,
            instance,
        )
    };
    if kind == WorkloadKind::Jobs {
        may(Verb::Delete).await && may(Verb::Create).await
    } else {
        may(Verb::Patch).await
    }
}

async fn page_answer(
    console: &Shared,
    headers: &HeaderMap,
    kind: WorkloadKind,
    (instance, namespace, name): (String, String, String),
    signed: SignedIn,
) -> Response {
    let at = (instance.as_str(), namespace.as_str(), name.as_str());
    let v = match load(console, &signed.caller, at, kind).await {
        Ok(v) => v,
        Err(err) => return error_answer(&signed, &name, &err),
    };
    let can_write = may_write(console, &signed, &instance, kind).await;
    if is_htmx(headers) {
        let live = kind_live(&instance, &v, (can_write, &signed.session.csrf), None);
        return html(StatusCode::OK, live.finish());
    }
    let api = console.api.as_ref();
    let about = Some((kind.group(), "v1", kind.plural(), name.as_str()));
    let (pods, events) = futures::join!(
        load_pods(api, &signed.caller, at, kind),
        load_events(api, &signed.caller, &instance, Some(&namespace), about),
    );
    let refresh = format!("{}/pods", page_url(&instance, &namespace, kind, &name));
    let mut members = pods_section(&instance, &refresh, &pods);
    members.append(events_section(&events));
    html(
        StatusCode::OK,
        kind_page(&signed.viewer(), &instance, &v, can_write, members),
    )
}

async fn pods_answer(
    console: &Shared,
    kind: WorkloadKind,
    (instance, namespace, name): (String, String, String),
    signed: SignedIn,
) -> Response {
    let at = (instance.as_str(), namespace.as_str(), name.as_str());
    let pods = load_pods(console.api.as_ref(), &signed.caller, at, kind).await;
    let refresh = format!("{}/pods", page_url(&instance, &namespace, kind, &name));
    html(
        StatusCode::OK,
        pods_section(&instance, &refresh, &pods).finish(),
    )
}

async fn action_answer(
    console: &Shared,
    headers: &HeaderMap,
    kind: WorkloadKind,
    (instance, namespace, name, action): (String, String, String, String),
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    let at = (instance.as_str(), namespace.as_str(), name.as_str());
    let result = match action.as_str() {
        "scale" if actions(kind).iter().any(|(a, _)| *a == "scale") => {
            let replicas = fields.get("replicas").map(String::as_str).unwrap_or("");
            scale(console, &signed.caller, at, kind, replicas)
                .await
                .map(|()| format!("Scaled to {} replicas.", replicas.trim()))
        }
        "restart" if actions(kind).iter().any(|(a, _)| *a == "restart") => console
            .api
            .deployment_action(
                &signed.caller,
                DeploymentActionRequest {
                    instance: instance.clone(),
                    namespace: namespace.clone(),
                    name: name.clone(),
                    action: DeploymentAction::Restart,
                    kind: Some(kind),
                },
            )
            .await
            .map(|_| "Restart requested: the pods are replaced.".to_owned()),
        other => Err(ApiError::not_found(format!(
            "{kind} have no action {other}"
        ))),
    };
    if !is_htmx(headers) {
        return match result {
            Ok(_) => see_other(headers, &page_url(&instance, &namespace, kind, &name)),
            Err(err) => error_answer(&signed, &name, &err),
        };
    }
    let status = result.as_ref().err().map_or(StatusCode::OK, status_of);
    let can_write = may_write(console, &signed, &instance, kind).await;
    match load(console, &signed.caller, at, kind).await {
        Ok(v) => {
            let shown = result.as_ref().map(String::as_str);
            let live = kind_live(
                &instance,
                &v,
                (can_write, &signed.session.csrf),
                Some(shown),
            );
            html(status, live.finish())
        }
        Err(err) => {
            let mut h = Html::new();
            error_box(&mut h, result.as_ref().err().unwrap_or(&err));
            html(status_of(&err), h.finish())
        }
    }
}

/// The pages of [`KINDS`], their pods and their verbs (a Job's re-run is served with the
/// Jobs page's other buttons, `…/jobs/{name}/restart`).
pub(super) fn routes() -> Router<Shared> {
    let mut router = Router::new();
    for kind in KINDS {
        let base = format!(
            "/ui/instances/{{instance}}/namespaces/{{namespace}}/{}/{{name}}",
            kind.plural()
        );
        router = router
            .route(
                &base,
                get(
                    move |State(console): State<Shared>,
                          headers: HeaderMap,
                          Path(at): Path<(String, String, String)>,
                          signed: SignedIn| async move {
                        page_answer(&console, &headers, kind, at, signed).await
                    },
                ),
            )
            .route(
                &format!("{base}/pods"),
                get(
                    move |State(console): State<Shared>,
                          Path(at): Path<(String, String, String)>,
                          signed: SignedIn| async move {
                        pods_answer(&console, kind, at, signed).await
                    },
                ),
            );
        if !actions(kind).is_empty() {
            router = router.route(
                &format!("{base}/{{action}}"),
                post(
                    move |State(console): State<Shared>,
                          headers: HeaderMap,
                          Path(at): Path<(String, String, String, String)>,
                          form: SignedForm| async move {
                        action_answer(&console, &headers, kind, at, form).await
                    },
                ),
            );
        }
    }
    router
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ClusterWorkloadStatus;
    use serde_json::json;

    const EVIL: &str = "<script>alert(1)</script>";

    fn viewer() -> Viewer<'static> {
        Viewer {
            user: "alice",
            csrf: "c0ffee",
        }
    }

    fn view(kind: WorkloadKind, object: Value, status: Value) -> KindView {
        KindView {
            kind,
            workload: Workload {
                name: "db".into(),
                namespace: "demo".into(),
                policy: Some(EVIL.into()),
                clusters: vec![ClusterWorkloadStatus {
                    cluster: "a-east".into(),
                    scheduled_replicas: Some(2),
                    replicas: Some(2),
                    ready_replicas: Some(1),
                    health: Some("Healthy".into()),
                    applied: Some(true),
                    message: Some(EVIL.into()),
                    ..Default::default()
                }],
                deployment: object,
                ..Default::default()
            },
            member_status: vec![("a-east".into(), status)],
            unplaced: vec!["a-west".into()],
        }
    }

    #[test]
    fn each_kind_shows_its_own_counts_per_cluster() {
        let statefulset = view(
            WorkloadKind::Statefulsets,
            json!({"kind": "StatefulSet", "metadata": {"name": "db", "labels": {"x": EVIL}},
                "spec": {"replicas": 3, "updateStrategy": {"rollingUpdate": {"partition": 1}}},
                "status": {"readyReplicas": 2, "currentReplicas": 3, "updatedReplicas": 1}}),
            json!({"replicas": 2, "readyReplicas": 1, "currentReplicas": 2, "updatedReplicas": 2}),
        );
        let out = kind_page(&viewer(), "i", &statefulset, true, Html::new());
        for want in [
            "<h1>StatefulSet db</h1>",
            "<dd id=\"ready\" class=\"ready\">2/3</dd>",
            "<dd id=\"current\" class=\"current\">3</dd>",
            "<dd id=\"updated\" class=\"updated\">1</dd>",
            "<dd id=\"partition\" class=\"partition\">1</dd>",
            "<td class=\"scheduled\">2</td><td class=\"replicas\">2</td><td class=\"ready\">1</td><td class=\"current\">2</td>",
            "id=\"action-restart\"",
            "id=\"action-scale\"",
            "hx-trigger=\"every 5s\"",
            "hx-post=\"/ui/instances/i/namespaces/demo/statefulsets/db/scale\"",
            "data-cluster=\"a-west\" data-scheduled=\"\" data-ready=\"\" data-placed=\"false\"",
        ] {
            assert!(out.contains(want), "{want} in {out}");
        }
        assert!(!out.contains(EVIL), "{out}");
        let reader = kind_page(&viewer(), "i", &statefulset, false, Html::new());
        assert!(!reader.contains("action-"), "{reader}");

        let daemonset = view(
            WorkloadKind::Daemonsets,
            json!({"kind": "DaemonSet", "metadata": {"name": "agent"},
                "status": {"desiredNumberScheduled": 5, "currentNumberScheduled": 5,
                    "numberReady": 4, "updatedNumberScheduled": 5, "numberAvailable": 4}}),
            json!({"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                "updatedNumberScheduled": 3, "numberAvailable": 2}),
        );
        let out = kind_page(&viewer(), "i", &daemonset, true, Html::new());
        for want in [
            "<dd id=\"desired\" class=\"desired\">5</dd>",
            "<dd id=\"available\" class=\"available\">4</dd>",
            "<td class=\"desired\">3</td><td class=\"current\">3</td><td class=\"ready\">2</td><td class=\"updated\">3</td><td class=\"available\">2</td>",
            "id=\"action-restart\"",
        ] {
            assert!(out.contains(want), "{want} in {out}");
        }
        assert!(!out.contains("action-scale") && !out.contains("class=\"scheduled\""));

        let job = view(
            WorkloadKind::Jobs,
            json!({"kind": "Job", "metadata": {"name": "pi", "ownerReferences": [
                    {"kind": "CronJob", "name": "tick", "controller": true}]},
                "spec": {"completions": 4, "parallelism": 2},
                "status": {"active": 1, "succeeded": 2}}),
            json!({"active": 1, "succeeded": 2}),
        );
        let out = kind_page(&viewer(), "i", &job, true, Html::new());
        for want in [
            "<dd id=\"active\" class=\"active\">1</dd>",
            "<dd id=\"succeeded\" class=\"succeeded\">2</dd>",
            "<dd id=\"failed\" class=\"failed\">0</dd>",
            "<dd id=\"completions\" class=\"completions\">4</dd>",
            "<td class=\"active\">1</td><td class=\"succeeded\">2</td><td class=\"failed\">–</td>",
            "href=\"/ui/instances/i/namespaces/demo/cronjobs/tick\"",
        ] {
            assert!(out.contains(want), "{want} in {out}");
        }
        assert!(!out.contains("id=\"action-"), "{out}");
        assert!(out.contains("id=\"job-restart\""), "{out}");
        assert!(
            out.contains("<dd id=\"active\" class=\"active\">1</dd>"),
            "{out}"
        );
        let reader = kind_page(&viewer(), "i", &job, false, Html::new());
        assert!(!reader.contains("job-restart"), "{reader}");
    }

    #[test]
    fn a_cronjob_lists_the_jobs_it_made_newest_first() {
        let job = |name: &str, owner: &str, created: &str| {
            json!({"metadata": {"name": name, "namespace": "demo", "creationTimestamp": created,
                "ownerReferences": [{"kind": "CronJob", "name": owner, "controller": true}]},
                "status": {"succeeded": 1}})
        };
        let jobs = [
            job("tick-1", "tick", "2026-01-01T00:00:00Z"),
            job("other-1", "other", "2026-01-01T00:00:00Z"),
            job("tick-2", "tick", "2026-01-01T00:05:00Z"),
        ];
        let out = cronjob_jobs_section("i", ("demo", "tick"), &jobs).finish();
        let (first, second) = (out.find("tick-2").unwrap(), out.find("tick-1").unwrap());
        assert!(first < second, "{out}");
        assert!(!out.contains("other-1"), "{out}");
        assert!(out.contains("/ui/instances/i/namespaces/demo/jobs/tick-2"));
        assert!(
            out.contains("hx-get=\"/ui/instances/i/namespaces/demo/cronjobs/tick\""),
            "{out}"
        );
        assert!(
            cronjob_jobs_section("i", ("demo", "none"), &jobs)
                .finish()
                .contains("No Jobs")
        );
    }
}
