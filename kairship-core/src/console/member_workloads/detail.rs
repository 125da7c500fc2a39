//! A member workload's page and its promotion: status, containers and YAML read through
//! Karmada's cluster proxy, and **Promote** (the API's dry run first, then the real call).

use axum::extract::{Path, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use crate::access::{Caller, InstanceResource, Verb};
use crate::api::{
    ApiError, GetMemberObjectRequest, PromoteWorkloadRequest, PromoteWorkloadResponse, WorkloadKind,
};
use crate::console::html::Html;
use crate::console::page::{Viewer, csrf_field, error_box, notice_box, page};
use crate::console::request::{
    Console, Shared, SignedForm, SignedIn, allowed, forbidden, html, is_htmx, status_of,
};

use super::*;

/// The path of a member workload's page.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct WorkloadPath {
    /// Instance name.
    pub instance: String,
    /// Member cluster name.
    pub cluster: String,
    /// Namespace.
    pub namespace: String,
    /// Kind, as its plural.
    pub kind: String,
    /// Name.
    pub name: String,
}

impl WorkloadPath {
    fn kind(&self) -> Result<WorkloadKind, ApiError> {
        WorkloadKind::parse(&self.kind)
            .ok_or_else(|| ApiError::not_found(format!("{:?} is not a workload kind", self.kind)))
    }

    fn url(&self, kind: WorkloadKind) -> String {
        workload_url(
            &self.instance,
            &self.cluster,
            &self.namespace,
            kind,
            &self.name,
        )
    }
}

/// Facts of a workload's status, per kind, as `kubectl describe` leads with them.
pub fn status_facts(object: &Value, kind: WorkloadKind) -> Vec<(&'static str, String)> {
    let n = |p: &str| int(object, p).unwrap_or(0).to_string();
    let t = |p: &str| {
        object
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("–")
            .to_owned()
    };
    match kind {
        WorkloadKind::Deployments => vec![
            (
                "Replicas",
                int(object, "/spec/replicas").unwrap_or(1).to_string(),
            ),
            ("Ready", n("/status/readyReplicas")),
            ("Available", n("/status/availableReplicas")),
            ("Updated", n("/status/updatedReplicas")),
        ],
        WorkloadKind::Statefulsets => vec![
            (
                "Replicas",
                int(object, "/spec/replicas").unwrap_or(1).to_string(),
            ),
            ("Ready", n("/status/readyReplicas")),
            ("Current", n("/status/currentReplicas")),
            ("Updated", n("/status/updatedReplicas")),
        ],
        WorkloadKind::Daemonsets => vec![
            ("Desired", n("/status/desiredNumberScheduled")),
            ("Current", n("/status/currentNumberScheduled")),
            ("Ready", n("/status/numberReady")),
            ("Available", n("/status/numberAvailable")),
        ],
        WorkloadKind::Jobs => vec![
            (
                "Completions",
                int(object, "/spec/completions").unwrap_or(1).to_string(),
            ),
            ("Active", n("/status/active")),
            ("Succeeded", n("/status/succeeded")),
            ("Failed", n("/status/failed")),
        ],
        WorkloadKind::Cronjobs => vec![
            ("Schedule", t("/spec/schedule")),
            (
                "Suspended",
                (object.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true))
                    .to_string(),
            ),
            ("Active", ready(object, kind)),
            ("Last schedule", t("/status/lastScheduleTime")),
        ],
    }
}

/// The object without `metadata.managedFields`, as `kubectl get -o yaml` shows it.
fn shown(object: &Value) -> Value {
    let mut out = object.clone();
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    out
}

fn yaml_of(object: &Value) -> String {
    serde_saphyr::to_string(object).unwrap_or_else(|e| format!("# cannot render as YAML: {e}"))
}

/// The live part of a workload's page: status, conditions, containers, YAML.
fn workload_live(p: &WorkloadPath, kind: WorkloadKind, object: &Value) -> Html {
    let mut h = Html::with_capacity(4096);
    h.open(
        "div",
        &[
            ("id", "member-workload-live"),
            ("hx-get", &p.url(kind)),
            ("hx-trigger", "every 5s"),
            ("hx-swap", "outerHTML"),
        ],
    );
    h.raw("<section><h2>Status</h2><p class=\"facts\">");
    management_badge(&mut h, &management(object, kind));
    h.raw("</p><dl class=\"facts\" id=\"member-workload-status\">");
    for (label, value) in status_facts(object, kind) {
        h.el("dt", &[], label).el("dd", &[], &value);
    }
    h.raw("</dl>");
    let conditions = object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !conditions.is_empty() {
        h.raw("<table class=\"list\" id=\"member-workload-conditions\"><thead><tr><th>Condition</th><th>Status</th><th>Reason</th><th>Message</th></tr></thead><tbody>");
        for c in &conditions {
            let t = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
            h.raw("<tr>")
                .el("td", &[], t("type"))
                .el("td", &[], t("status"))
                .el("td", &[], t("reason"))
                .el("td", &[], t("message"))
                .raw("</tr>");
        }
        h.raw("</tbody></table>");
    }
    h.raw("</section><section><h2>Containers</h2><table id=\"member-workload-containers\" class=\"list\"><thead><tr><th>Name</th><th>Image</th></tr></thead><tbody>");
    for (name, image) in containers(object, kind) {
        h.raw("<tr>")
            .el("td", &[], &name)
            .el("td", &[], &image)
            .raw("</tr>");
    }
    h.raw("</tbody></table></section><section><h2>YAML</h2>");
    h.el(
        "pre",
        &[("id", "yaml"), ("class", "yaml")],
        &yaml_of(&shown(object)),
    );
    h.raw("</section></div>");
    h
}

fn workload_heading(h: &mut Html, p: &WorkloadPath, kind: WorkloadKind) {
    h.open("h1", &[])
        .text(kind.kind())
        .raw(" ")
        .text(&p.name)
        .close("h1");
    crumbs(h, &p.instance, &p.cluster);
    h.raw("<p class=\"facts muted\">member cluster ")
        .el("strong", &[("id", "workload-cluster")], &p.cluster)
        .raw(" · namespace ")
        .el("strong", &[], &p.namespace)
        .raw("</p>");
}

/// The promote button: a POST of the dry run.
fn promote_button(h: &mut Html, action: &str, csrf: &str) {
    h.open(
        "form",
        &[("method", "post"), ("action", action), ("class", "inline")],
    );
    csrf_field(h, csrf);
    h.raw("<input type=\"hidden\" name=\"op\" value=\"preview\">")
        .raw("<button id=\"promote\" type=\"submit\">Promote</button></form>");
}

/// A member workload's page (`fragment`: only the live part, for htmx). `can_promote`: the
/// caller may create in the instance.
pub fn workload_page(
    viewer: &Viewer<'_>,
    p: &WorkloadPath,
    kind: WorkloadKind,
    object: &Value,
    can_promote: bool,
    fragment: bool,
) -> String {
    let live = workload_live(p, kind, object);
    if fragment {
        return live.finish();
    }
    let mut h = Html::new();
    workload_heading(&mut h, p, kind);
    let m = management(object, kind);
    if m.managed() {
        h.open("p", &[]);
        h.el(
            "a",
            &[
                (
                    "href",
                    &karmada_url(&p.instance, &p.namespace, kind, &p.name),
                ),
                ("id", "karmada-page"),
            ],
            "Its page in the instance",
        );
        h.close("p");
    }
    if can_promote {
        h.raw("<p>Promote takes this workload into the instance with the ConfigMaps and Secrets its pods refer to, and a PropagationPolicy keeping it on this member (taking over the member's copies). The first step only shows what would be created.</p>");
        promote_button(&mut h, &format!("{}/promote", p.url(kind)), viewer.csrf);
    }
    h.append(live);
    page(&format!("{} {}", kind.kind(), p.name), Some(viewer), h)
}

/// What a promote POST came to.
#[derive(Debug)]
pub enum PromoteOutcome<'a> {
    /// The dry run's objects, to confirm.
    Preview(&'a PromoteWorkloadResponse),
    /// What the promotion created.
    Promoted(&'a PromoteWorkloadResponse),
    /// The API's refusal.
    Refused(&'a ApiError),
}

fn objects_table(h: &mut Html, objects: &[Value]) {
    h.raw("<table id=\"promote-objects\" class=\"list\"><thead><tr><th>Kind</th><th>Namespace</th><th>Name</th></tr></thead><tbody>");
    for o in objects {
        let t = |ptr: &str| o.pointer(ptr).and_then(Value::as_str).unwrap_or_default();
        h.open(
            "tr",
            &[
                ("data-kind", t("/kind")),
                ("data-name", t("/metadata/name")),
            ],
        )
        .el("td", &[], t("/kind"))
        .el("td", &[], t("/metadata/namespace"))
        .el("td", &[], t("/metadata/name"))
        .raw("</tr>");
    }
    h.raw("</tbody></table>");
    for o in objects {
        let t = |ptr: &str| o.pointer(ptr).and_then(Value::as_str).unwrap_or_default();
        h.raw("<section class=\"promote-object\"><h3>")
            .text(t("/kind"))
            .raw(" ")
            .text(t("/metadata/name"))
            .raw("</h3>");
        h.el("pre", &[("class", "yaml")], &yaml_of(&shown(o)));
        h.raw("</section>");
    }
}

/// The answer to a promote POST: the preview with **Promote** and Cancel, what was created
/// with a link to the workload's page in the instance, or the API's refusal.
pub fn promote_page(
    viewer: &Viewer<'_>,
    p: &WorkloadPath,
    kind: WorkloadKind,
    outcome: &PromoteOutcome<'_>,
) -> String {
    let back = p.url(kind);
    let mut h = Html::new();
    h.open("h1", &[])
        .raw("Promote ")
        .text(kind.kind())
        .raw(" ")
        .text(&p.name)
        .close("h1");
    crumbs(&mut h, &p.instance, &p.cluster);
    match outcome {
        PromoteOutcome::Preview(r) => {
            notice_box(
                &mut h,
                &format!(
                    "Nothing was created yet. Promote creates these {} objects in instance {}, all or none:",
                    r.objects.len(),
                    p.instance
                ),
            );
            h.open(
                "form",
                &[("method", "post"), ("action", &format!("{back}/promote"))],
            );
            csrf_field(&mut h, viewer.csrf);
            h.raw("<input type=\"hidden\" name=\"op\" value=\"promote\">")
                .raw("<button id=\"promote-confirm\" type=\"submit\">Promote</button> ");
            h.el("a", &[("href", &back), ("id", "promote-cancel")], "Cancel");
            h.close("form");
            objects_table(&mut h, &r.objects);
        }
        PromoteOutcome::Promoted(r) => {
            notice_box(
                &mut h,
                &format!(
                    "Promoted: {} objects created in instance {}. Karmada now manages the workload on member {}.",
                    r.objects.len(),
                    p.instance,
                    p.cluster
                ),
            );
            h.open("p", &[]);
            h.el(
                "a",
                &[
                    (
                        "href",
                        &karmada_url(&p.instance, &p.namespace, kind, &p.name),
                    ),
                    ("id", "karmada-page"),
                ],
                "The workload in the instance",
            );
            h.raw(" · ");
            h.el("a", &[("href", &back)], "Back to the member's copy");
            h.close("p");
            objects_table(&mut h, &r.objects);
        }
        PromoteOutcome::Refused(err) => {
            h.raw("<p>The API refused the promotion:</p>");
            error_box(&mut h, err);
            h.open("p", &[]);
            h.el(
                "a",
                &[("href", &back), ("id", "promote-back")],
                "Back to the workload",
            );
            h.close("p");
        }
    }
    page(&format!("Promote {}", p.name), Some(viewer), h)
}

async fn may_promote(console: &Console, caller: &Caller, instance: &str) -> bool {
    allowed(
        console,
        caller,
        Verb::Create,
        InstanceResource::Proxy,
        instance,
    )
    .await
}

fn refused_page(signed: &SignedIn, title: &str, err: &ApiError) -> Response {
    html(
        status_of(err),
        crate::console::page::error_page(Some(&signed.viewer()), title, err),
    )
}

pub(super) async fn show(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(p): Path<WorkloadPath>,
    signed: SignedIn,
) -> Response {
    let kind = match p.kind() {
        Ok(k) => k,
        Err(err) => return refused_page(&signed, &p.name, &err),
    };
    let read = console
        .api
        .get_member_object(
            &signed.caller,
            GetMemberObjectRequest {
                instance: p.instance.clone(),
                cluster: p.cluster.clone(),
                group: kind.group().to_owned(),
                version: "v1".to_owned(),
                resource: kind.plural().to_owned(),
                namespace: Some(p.namespace.clone()),
                name: p.name.clone(),
            },
        )
        .await;
    match read {
        Ok(object) => {
            let can_promote = may_promote(&console, &signed.caller, &p.instance).await;
            html(
                StatusCode::OK,
                workload_page(
                    &signed.viewer(),
                    &p,
                    kind,
                    &object,
                    can_promote,
                    is_htmx(&headers),
                ),
            )
        }
        Err(err) if is_htmx(&headers) => {
            // The live part says what happened and keeps refreshing.
            let mut h = Html::new();
            h.open(
                "div",
                &[
                    ("id", "member-workload-live"),
                    ("hx-get", &p.url(kind)),
                    ("hx-trigger", "every 5s"),
                    ("hx-swap", "outerHTML"),
                ],
            );
            error_box(&mut h, &err);
            h.close("div");
            html(StatusCode::OK, h.finish())
        }
        Err(err) => refused_page(&signed, &p.name, &err),
    }
}

/// `POST …/promote`: `op=preview` (the default) runs the API's dry run, `op=promote` the
/// promotion. Refused with 403 before the API is asked when the caller may not create in
/// the instance (the API checks again).
pub(super) async fn promote(
    State(console): State<Shared>,
    Path(p): Path<WorkloadPath>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    let kind = match p.kind() {
        Ok(k) => k,
        Err(err) => return refused_page(&signed, &p.name, &err),
    };
    if !may_promote(&console, &signed.caller, &p.instance).await {
        return forbidden("you may not create objects in this instance, so you may not promote");
    }
    let dry_run = fields.get("op").map(String::as_str) != Some("promote");
    let result = console
        .api
        .promote_workload(
            &signed.caller,
            PromoteWorkloadRequest {
                instance: p.instance.clone(),
                cluster: p.cluster.clone(),
                namespace: p.namespace.clone(),
                kind,
                name: p.name.clone(),
                dry_run,
            },
        )
        .await;
    let (status, outcome) = match &result {
        Ok(r) if r.dry_run => (StatusCode::OK, PromoteOutcome::Preview(r)),
        Ok(r) => (StatusCode::OK, PromoteOutcome::Promoted(r)),
        Err(err) => (status_of(err), PromoteOutcome::Refused(err)),
    };
    html(status, promote_page(&signed.viewer(), &p, kind, &outcome))
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

    fn path() -> WorkloadPath {
        WorkloadPath {
            instance: "karmada-a".into(),
            cluster: "a-east".into(),
            namespace: "demo".into(),
            kind: "deployments".into(),
            name: "orders<b>".into(),
        }
    }

    #[test]
    fn only_creators_see_promote_and_every_form_carries_the_csrf_token() {
        let object = json!({"metadata": {"name": "orders<b>", "namespace": "demo",
            "managedFields": [{"manager": "kubectl"}]},
            "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "shop:1"}]}}}});
        let kind = WorkloadKind::Deployments;
        let with = workload_page(&viewer(), &path(), kind, &object, true, false);
        assert!(with.contains("id=\"promote\""), "{with}");
        assert!(with.contains("value=\"csrf-token\""), "{with}");
        assert!(
            with.contains("/workloads/deployments/orders%3Cb%3E/promote"),
            "{with}"
        );
        assert!(!with.contains("managedFields"), "{with}");
        assert!(!with.contains("orders<b>"), "{with}");
        let without = workload_page(&viewer(), &path(), kind, &object, false, false);
        assert!(!without.contains("promote"), "{without}");

        let preview = PromoteWorkloadResponse {
            dry_run: true,
            objects: vec![
                json!({"kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "demo"}}),
                json!({"kind": "Deployment", "metadata": {"name": "orders<b>", "namespace": "demo"}}),
            ],
        };
        let page = promote_page(&viewer(), &path(), kind, &PromoteOutcome::Preview(&preview));
        assert!(page.contains("id=\"promote-confirm\"") && page.contains("id=\"promote-cancel\""));
        assert!(
            page.contains("name=\"op\" value=\"promote\"") && page.contains("value=\"csrf-token\"")
        );
        assert!(page.contains("data-kind=\"ConfigMap\"") && !page.contains("karmada-page"));
        let done = PromoteWorkloadResponse {
            dry_run: false,
            ..preview
        };
        let page = promote_page(&viewer(), &path(), kind, &PromoteOutcome::Promoted(&done));
        assert!(
            page.contains(
                "href=\"/ui/instances/karmada-a/namespaces/demo/workloads/orders%3Cb%3E\""
            ),
            "{page}"
        );
        let err = ApiError::new(
            crate::api::Code::AlreadyExists,
            "Deployment <x> already exists",
        );
        let page = promote_page(&viewer(), &path(), kind, &PromoteOutcome::Refused(&err));
        assert!(page.contains("AlreadyExists") && page.contains("Deployment &lt;x&gt;"));
        assert!(!page.contains("promote-confirm"));
    }

    #[test]
    fn status_facts_per_kind() {
        let d = json!({"spec": {"replicas": 2}, "status": {"readyReplicas": 1, "availableReplicas": 1}});
        assert_eq!(
            status_facts(&d, WorkloadKind::Deployments),
            [
                ("Replicas", "2".to_owned()),
                ("Ready", "1".to_owned()),
                ("Available", "1".to_owned()),
                ("Updated", "0".to_owned())
            ]
        );
        let c = json!({"spec": {"schedule": "*/5 * * * *"}});
        let facts = status_facts(&c, WorkloadKind::Cronjobs);
        assert_eq!(facts[0], ("Schedule", "*/5 * * * *".to_owned()));
        assert_eq!(facts[1], ("Suspended", "false".to_owned()));
    }
}
