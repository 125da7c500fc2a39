//! The console's application pages: the create-application form (workload, Service,
//! placement, per-cluster overrides) with its dry-run preview, and the Job and CronJob pages
//! with their restart and pause/resume buttons. Everything goes through [`KairshipApi`](crate::api::KairshipApi)
//! (`create_application`, `restart_job`, `cronjob_action`), so the API's rules and messages
//! apply; the buttons are only shown to callers the authorizer lets write.

use std::collections::{BTreeMap, HashMap};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::routing::{get, post};
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::html::{Html, url_segment};
use super::page::{Viewer, csrf_field, error_box, live_page, notice_box, page};
use super::request::{
    Shared, SignedForm, SignedIn, allowed, error_answer, html, see_other, status_of,
};
use crate::access::{InstanceResource, Verb};
use crate::api::{
    ApiError, ApplicationPort, ApplicationResult, ApplicationService, ApplicationSpec,
    ClusterOverride, CreateApplicationRequest, CronJobAction, CronJobActionRequest,
    GetResourceRequest, ListOptions, ListResourcesRequest, Placement, ResourceKind,
    RestartJobRequest,
};

/// Rows of per-cluster overrides the form offers.
pub const OVERRIDE_ROWS: usize = 3;

/// The workload kinds the form offers.
pub const FORM_KINDS: [&str; 5] = ["Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"];

/// The console routes of this module (merged into [`super::routes`]).
pub(super) fn routes() -> Router<Shared> {
    let ns = "/ui/instances/{instance}/namespaces/{namespace}";
    Router::new()
        .route(
            "/ui/instances/{instance}/applications/new",
            get(application_form).post(application_submit),
        )
        .route(&format!("{ns}/batch"), get(batch_list))
        .route(&format!("{ns}/jobs/{{name}}/restart"), post(job_restart))
        .route(&format!("{ns}/cronjobs/{{name}}"), get(cronjob_page))
        .route(
            &format!("{ns}/cronjobs/{{name}}/{{action}}"),
            post(cronjob_post),
        )
}

/// The create-application form as sent (every field as typed, so a refused form comes back
/// as it was).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppForm {
    /// Workload kind.
    pub kind: String,
    /// Name of the workload (and of the Service and policies).
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// Container image.
    pub image: String,
    /// Replicas (Deployment, StatefulSet), or parallelism of a Job: empty for the default.
    pub replicas: String,
    /// CronJob schedule.
    pub schedule: String,
    /// Service port: empty for no Service.
    pub port: String,
    /// Container port the Service targets (default: the port).
    pub target_port: String,
    /// Cluster names, comma separated.
    pub clusters: String,
    /// Cluster labels, `key=value` comma separated.
    pub labels: String,
    /// Regions, comma separated.
    pub regions: String,
    /// Zones, comma separated.
    pub zones: String,
    /// Weights, `cluster=weight` comma separated.
    pub weights: String,
    /// Per-cluster overrides: `(cluster, image, replicas)`.
    pub overrides: Vec<(String, String, String)>,
}

fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn pairs(field: &str, text: &str) -> Result<BTreeMap<String, String>, ApiError> {
    list(text)
        .into_iter()
        .map(|pair| {
            pair.split_once('=')
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                .ok_or_else(|| ApiError::invalid_field(field, format!("{pair:?} is not key=value")))
        })
        .collect()
}

fn number<T: std::str::FromStr>(field: &str, text: &str) -> Result<Option<T>, ApiError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .map_err(|_| ApiError::invalid_field(field, format!("{text:?} is not a whole number")))
}

impl AppForm {
    /// The form of a POST body.
    pub fn from_fields(fields: &HashMap<String, String>) -> AppForm {
        let get = |k: &str| {
            fields
                .get(k)
                .map(|v| v.trim().to_owned())
                .unwrap_or_default()
        };
        AppForm {
            kind: get("kind"),
            name: get("name"),
            namespace: get("namespace"),
            image: get("image"),
            replicas: get("replicas"),
            schedule: get("schedule"),
            port: get("port"),
            target_port: get("target_port"),
            clusters: get("clusters"),
            labels: get("labels"),
            regions: get("regions"),
            zones: get("zones"),
            weights: get("weights"),
            overrides: (1..=OVERRIDE_ROWS)
                .map(|i| {
                    (
                        get(&format!("override_cluster_{i}")),
                        get(&format!("override_image_{i}")),
                        get(&format!("override_replicas_{i}")),
                    )
                })
                .collect(),
        }
    }

    /// A blank form for `namespace`.
    pub fn blank(namespace: &str) -> AppForm {
        AppForm {
            kind: "Deployment".into(),
            namespace: namespace.into(),
            schedule: "*/5 * * * *".into(),
            overrides: vec![Default::default(); OVERRIDE_ROWS],
            ..AppForm::default()
        }
    }

    /// The workload object the form describes (one container named after the workload).
    fn workload(&self) -> Result<Value, ApiError> {
        let replicas: Option<i32> = number("replicas", &self.replicas)?;
        let container = json!({"name": self.name, "image": self.image});
        let pod = |restart: Option<&str>| {
            let mut spec = json!({"containers": [container.clone()]});
            if let Some(r) = restart {
                spec["restartPolicy"] = json!(r);
            }
            json!({"spec": spec})
        };
        let mut workload = json!({"kind": self.kind, "metadata": {"name": self.name}});
        workload["spec"] = match self.kind.as_str() {
            "Job" => {
                let mut spec = json!({"template": pod(Some("Never"))});
                if let Some(r) = replicas {
                    spec["parallelism"] = json!(r);
                }
                spec
            }
            "CronJob" => json!({"schedule": self.schedule,
                "jobTemplate": {"spec": {"template": pod(Some("Never"))}}}),
            "DaemonSet" => json!({"template": pod(None)}),
            _ => {
                let mut spec = json!({"template": pod(None)});
                if let Some(r) = replicas {
                    spec["replicas"] = json!(r);
                }
                spec
            }
        };
        Ok(workload)
    }

    /// The application the form asks for; `InvalidArgument` naming the field for what does
    /// not parse (the API judges the rest).
    pub fn spec(&self, dry_run: bool) -> Result<ApplicationSpec, ApiError> {
        let service = match number::<i32>("port", &self.port)? {
            None => None,
            Some(port) => Some(ApplicationService {
                type_: None,
                ports: vec![ApplicationPort {
                    name: None,
                    port,
                    target_port: number("target_port", &self.target_port)?,
                    protocol: None,
                }],
            }),
        };
        let weights = pairs("weights", &self.weights)?
            .into_iter()
            .map(|(cluster, w)| {
                w.parse::<i64>().map(|w| (cluster.clone(), w)).map_err(|_| {
                    ApiError::invalid_field(
                        "weights",
                        format!("the weight of {cluster:?} is not a number"),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        let mut overrides = Vec::new();
        for (cluster, image, replicas) in &self.overrides {
            if cluster.is_empty() && image.is_empty() && replicas.is_empty() {
                continue;
            }
            overrides.push(ClusterOverride {
                cluster: cluster.clone(),
                image: (!image.is_empty()).then(|| image.clone()),
                replicas: number("override replicas", replicas)?,
                ..ClusterOverride::default()
            });
        }
        Ok(ApplicationSpec {
            workload: self.workload()?,
            service,
            placement: Placement {
                cluster_names: list(&self.clusters),
                cluster_labels: pairs("labels", &self.labels)?,
                providers: Vec::new(),
                regions: list(&self.regions),
                zones: list(&self.zones),
                weights,
            },
            overrides,
            dry_run,
        })
    }
}

/// What the form page shows under the form.
#[derive(Debug)]
pub enum Outcome<'a> {
    /// A dry run's objects.
    Preview(&'a ApplicationResult),
    /// The objects created.
    Created(&'a ApplicationResult),
    /// The API's refusal.
    Refused(&'a ApiError),
}

fn input(h: &mut Html, label: &str, name: &'static str, value: &str, hint: &str) {
    h.open("label", &[]).text(label).raw(" ");
    h.open(
        "input",
        &[
            ("name", name),
            ("id", name),
            ("value", value),
            ("placeholder", hint),
        ],
    );
    h.close("label");
}

fn objects_table(h: &mut Html, instance: &str, result: &ApplicationResult) {
    h.raw("<table id=\"app-objects\" class=\"list\"><thead><tr><th>Kind</th><th>Namespace</th><th>Name</th></tr></thead><tbody>");
    for o in &result.objects {
        let kind = o["kind"].as_str().unwrap_or_default();
        let ns = o["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = o["metadata"]["name"].as_str().unwrap_or_default();
        h.open("tr", &[("data-kind", kind)])
            .el("td", &[], kind)
            .el("td", &[], ns)
            .raw("<td>");
        let link = match kind {
            "Deployment" if !result.dry_run => Some("workloads"),
            "StatefulSet" if !result.dry_run => Some("statefulsets"),
            "DaemonSet" if !result.dry_run => Some("daemonsets"),
            "Job" if !result.dry_run => Some("jobs"),
            "CronJob" if !result.dry_run => Some("cronjobs"),
            _ => None,
        };
        match link {
            Some(segment) => {
                let href = format!(
                    "/ui/instances/{}/namespaces/{}/{segment}/{}",
                    url_segment(instance),
                    url_segment(ns),
                    url_segment(name)
                );
                h.el("a", &[("href", &href)], name);
            }
            None => {
                h.text(name);
            }
        }
        h.raw("</td></tr>");
    }
    h.raw("</tbody></table>");
    for o in &result.objects {
        let yaml =
            serde_saphyr::to_string(o).unwrap_or_else(|e| format!("# cannot render as YAML: {e}"));
        h.raw("<details><summary>")
            .text(o["kind"].as_str().unwrap_or_default())
            .raw(" ")
            .text(o["metadata"]["name"].as_str().unwrap_or_default())
            .raw("</summary>");
        h.el("pre", &[("class", "yaml")], &yaml);
        h.raw("</details>");
    }
}

/// Where the form's "Preview placement" button posts (served by [`super::placement`]).
pub fn placement_preview_url(instance: &str) -> String {
    format!(
        "/ui/instances/{}/applications/placement",
        url_segment(instance)
    )
}

/// The create-application page: the form (only when `can_create`), then the outcome.
pub fn application_page(
    viewer: &Viewer<'_>,
    instance: &str,
    form: &AppForm,
    can_create: bool,
    outcome: Option<Outcome<'_>>,
) -> String {
    let mut h = Html::new();
    let back = format!(
        "/ui/instances/{}?ns={}",
        url_segment(instance),
        url_segment(&form.namespace)
    );
    h.open("p", &[("class", "crumbs")])
        .el("a", &[("href", &back)], instance)
        .close("p");
    h.open("h1", &[])
        .raw("New application in ")
        .text(instance)
        .close("h1");
    if !can_create {
        notice_box(
            &mut h,
            "You may not create objects in this instance: ask for the edit role.",
        );
        if let Some(Outcome::Refused(err)) = outcome {
            error_box(&mut h, err);
        }
        return page("New application", Some(viewer), h);
    }
    h.raw("<p>One call creates the workload, its Service, a PropagationPolicy placing them and an OverridePolicy per cluster override; if any object fails, none is kept. Preview first: the instance validates every object and nothing is created.</p>");
    let action = format!("/ui/instances/{}/applications/new", url_segment(instance));
    h.open(
        "form",
        &[("method", "post"), ("action", &action), ("id", "app-form")],
    );
    csrf_field(&mut h, viewer.csrf);
    h.raw("<fieldset><legend>Workload</legend><label>Kind <select name=\"kind\" id=\"kind\">");
    for kind in FORM_KINDS {
        let mut attrs = vec![("value", kind)];
        if form.kind == kind {
            attrs.push(("selected", "selected"));
        }
        h.open("option", &attrs).text(kind).close("option");
    }
    h.raw("</select></label>");
    input(&mut h, "Name", "name", &form.name, "web");
    input(&mut h, "Namespace", "namespace", &form.namespace, "default");
    input(&mut h, "Image", "image", &form.image, "nginx:1.27");
    input(
        &mut h,
        "Replicas",
        "replicas",
        &form.replicas,
        "Deployment, StatefulSet; Job parallelism",
    );
    input(
        &mut h,
        "Schedule (CronJob)",
        "schedule",
        &form.schedule,
        "*/5 * * * *",
    );
    h.raw("</fieldset><fieldset><legend>Service (optional)</legend>");
    input(&mut h, "Port", "port", &form.port, "80; empty: no Service");
    input(
        &mut h,
        "Target port",
        "target_port",
        &form.target_port,
        "default: the port",
    );
    h.raw("</fieldset><fieldset><legend>Placement (all given criteria hold)</legend>");
    input(&mut h, "Clusters", "clusters", &form.clusters, "east, west");
    input(&mut h, "Cluster labels", "labels", &form.labels, "env=prod");
    input(&mut h, "Regions", "regions", &form.regions, "eu-west");
    input(&mut h, "Zones", "zones", &form.zones, "eu-west-1a");
    input(
        &mut h,
        "Weights (divide replicas)",
        "weights",
        &form.weights,
        "east=2, west=1",
    );
    h.raw("</fieldset><fieldset><legend>Per-cluster overrides</legend><table class=\"list\"><thead><tr><th>Cluster</th><th>Image</th><th>Replicas</th></tr></thead><tbody>");
    const NAMES: [[&str; 3]; OVERRIDE_ROWS] = [
        [
            "override_cluster_1",
            "override_image_1",
            "override_replicas_1",
        ],
        [
            "override_cluster_2",
            "override_image_2",
            "override_replicas_2",
        ],
        [
            "override_cluster_3",
            "override_image_3",
            "override_replicas_3",
        ],
    ];
    for (row, names) in NAMES.iter().enumerate() {
        let values = form.overrides.get(row).cloned().unwrap_or_default();
        h.raw("<tr>");
        for (name, value) in names.iter().zip([&values.0, &values.1, &values.2]) {
            h.raw("<td>")
                .open("input", &[("name", name), ("id", name), ("value", value)])
                .raw("</td>");
        }
        h.raw("</tr>");
    }
    h.raw("</tbody></table></fieldset>");
    h.raw("<button id=\"app-preview\" type=\"submit\" name=\"op\" value=\"preview\">Preview (dry run)</button> ");
    // Where Karmada would place it: the same form, posted to the placement preview.
    let placement = placement_preview_url(instance);
    h.open(
        "button",
        &[
            ("id", "app-placement"),
            ("type", "submit"),
            ("formaction", &placement),
        ],
    )
    .raw("Preview placement")
    .close("button")
    .raw(" ");
    h.raw("<button id=\"app-create\" type=\"submit\" name=\"op\" value=\"create\">Create</button></form>");
    h.raw("<div id=\"app-result\">");
    match outcome {
        Some(Outcome::Preview(result)) => {
            notice_box(
                &mut h,
                "Preview: the instance accepted these objects; nothing was created.",
            );
            objects_table(&mut h, instance, result);
        }
        Some(Outcome::Created(result)) => {
            notice_box(&mut h, "Created.");
            objects_table(&mut h, instance, result);
        }
        Some(Outcome::Refused(err)) => error_box(&mut h, err),
        None => {}
    }
    h.raw("</div>");
    page("New application", Some(viewer), h)
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct NsQuery {
    ns: Option<String>,
}

async fn may_create(
    console: &super::request::Console,
    caller: &crate::access::Caller,
    i: &str,
) -> bool {
    allowed(console, caller, Verb::Create, InstanceResource::Proxy, i).await
}

async fn application_form(
    State(console): State<Shared>,
    Path(instance): Path<String>,
    Query(query): Query<NsQuery>,
    signed: SignedIn,
) -> Response {
    let ns = query.ns.unwrap_or_else(|| "default".to_owned());
    let can_create = may_create(&console, &signed.caller, &instance).await;
    html(
        StatusCode::OK,
        application_page(
            &signed.viewer(),
            &instance,
            &AppForm::blank(&ns),
            can_create,
            None,
        ),
    )
}

async fn application_submit(
    State(console): State<Shared>,
    Path(instance): Path<String>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    let form = AppForm::from_fields(&fields);
    let dry_run = fields.get("op").map(String::as_str) != Some("create");
    let result = match form.spec(dry_run) {
        Ok(application) => {
            console
                .api
                .create_application(
                    &signed.caller,
                    CreateApplicationRequest {
                        instance: instance.clone(),
                        namespace: form.namespace.clone(),
                        application,
                    },
                )
                .await
        }
        Err(err) => Err(err),
    };
    let can_create = may_create(&console, &signed.caller, &instance).await;
    let (status, outcome) = match &result {
        Ok(r) if r.dry_run => (StatusCode::OK, Outcome::Preview(r)),
        Ok(r) => (StatusCode::OK, Outcome::Created(r)),
        Err(err) => (status_of(err), Outcome::Refused(err)),
    };
    html(
        status,
        application_page(
            &signed.viewer(),
            &instance,
            &form,
            can_create,
            Some(outcome),
        ),
    )
}

fn crumbs(h: &mut Html, instance: &str, namespace: &str) {
    let back = format!(
        "/ui/instances/{}?ns={}",
        url_segment(instance),
        url_segment(namespace)
    );
    let batch = format!(
        "/ui/instances/{}/namespaces/{}/batch",
        url_segment(instance),
        url_segment(namespace)
    );
    h.open("p", &[("class", "crumbs")])
        .el("a", &[("href", &back)], instance)
        .raw(" / ")
        .el("a", &[("href", &batch)], namespace)
        .close("p");
}

fn text_at<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("–")
}

fn number_at(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn yaml_section(h: &mut Html, object: &Value) {
    h.raw("<h2>YAML</h2>");
    let yaml =
        serde_saphyr::to_string(object).unwrap_or_else(|e| format!("# cannot render as YAML: {e}"));
    h.el("pre", &[("id", "yaml"), ("class", "yaml")], &yaml);
}

/// A button posting to `action` with the CSRF field.
fn post_button(h: &mut Html, action: &str, id: &'static str, label: &str, csrf: &str) {
    h.open(
        "form",
        &[("method", "post"), ("action", action), ("class", "inline")],
    );
    csrf_field(h, csrf);
    h.el("button", &[("id", id), ("type", "submit")], label);
    h.close("form");
}

/// The page of a CronJob, with pause or resume when `can_write`.
pub fn cronjob_page_html(
    viewer: &Viewer<'_>,
    instance: &str,
    (cronjob, jobs): (&Value, &[Value]),
    can_write: bool,
    notice: Option<&str>,
) -> String {
    let ns = text_at(cronjob, "/metadata/namespace");
    let name = text_at(cronjob, "/metadata/name");
    let suspended = cronjob.pointer("/spec/suspend") == Some(&Value::Bool(true));
    let mut h = Html::new();
    crumbs(&mut h, instance, ns);
    h.open("h1", &[]).raw("CronJob ").text(name).close("h1");
    if let Some(n) = notice {
        notice_box(&mut h, n);
    }
    h.raw("<dl id=\"cronjob-facts\" class=\"facts\"><dt>Schedule</dt><dd>")
        .text(text_at(cronjob, "/spec/schedule"))
        .raw("</dd><dt>State</dt><dd id=\"cronjob-state\">")
        .text(if suspended { "Paused" } else { "Active" })
        .raw("</dd><dt>Last scheduled</dt><dd>")
        .text(text_at(cronjob, "/status/lastScheduleTime"))
        .raw("</dd></dl>");
    if can_write {
        let (verb, id, label) = if suspended {
            ("resume", "cronjob-resume", "Resume")
        } else {
            ("pause", "cronjob-pause", "Pause")
        };
        let action = format!(
            "/ui/instances/{}/namespaces/{}/cronjobs/{}/{verb}",
            url_segment(instance),
            url_segment(ns),
            url_segment(name)
        );
        h.raw("<div id=\"cronjob-actions\">");
        post_button(&mut h, &action, id, label, viewer.csrf);
        h.raw("</div>");
    }
    h.append(super::workloads::kinds::cronjob_jobs_section(
        instance,
        (ns, name),
        jobs,
    ));
    yaml_section(&mut h, cronjob);
    page(name, Some(viewer), h)
}

/// The Jobs and CronJobs of a namespace, linking to their pages; both tables refresh
/// themselves.
pub fn batch_page(
    viewer: &Viewer<'_>,
    instance: &str,
    namespace: &str,
    lists: Result<(&[Value], &[Value]), ApiError>,
) -> String {
    let mut head = Html::new();
    crumbs(&mut head, instance, namespace);
    head.open("h1", &[])
        .raw("Jobs and CronJobs in ")
        .text(namespace)
        .close("h1");
    let base = format!(
        "/ui/instances/{}/namespaces/{}",
        url_segment(instance),
        url_segment(namespace)
    );
    let refresh = format!("{base}/batch");
    let part = lists.map(|(jobs, cronjobs)| batch_tables(&base, jobs, cronjobs));
    live_page(viewer, "Jobs and CronJobs", head, ("batch", &refresh), part)
}

fn batch_tables(base: &str, jobs: &[Value], cronjobs: &[Value]) -> Html {
    let mut h = Html::new();
    h.raw("<section><h2>Jobs</h2><table id=\"jobs\" class=\"list\"><thead><tr><th>Name</th><th>Active</th><th>Succeeded</th><th>Failed</th><th>Completions</th></tr></thead><tbody>");
    if jobs.is_empty() {
        h.raw("<tr><td colspan=\"5\" class=\"muted\">No Jobs in this namespace.</td></tr>");
    }
    for j in jobs {
        let name = text_at(j, "/metadata/name");
        let href = format!("{base}/jobs/{}", url_segment(name));
        h.open("tr", &[("data-job", name)])
            .raw("<td>")
            .el("a", &[("href", &href)], name)
            .raw("</td><td class=\"active\">")
            .num(number_at(j, "/status/active"))
            .raw("</td><td class=\"succeeded\">")
            .num(number_at(j, "/status/succeeded"))
            .raw("</td><td class=\"failed\">")
            .num(number_at(j, "/status/failed"))
            .raw("</td><td>")
            .num(number_at(j, "/status/succeeded"))
            .raw("/")
            .num(
                j.pointer("/spec/completions")
                    .and_then(Value::as_i64)
                    .unwrap_or(1),
            )
            .raw("</td></tr>");
    }
    h.raw("</tbody></table></section>");
    h.raw("<section><h2>CronJobs</h2><table id=\"cronjobs\" class=\"list\"><thead><tr><th>Name</th><th>Schedule</th><th>State</th><th>Last scheduled</th></tr></thead><tbody>");
    if cronjobs.is_empty() {
        h.raw("<tr><td colspan=\"4\" class=\"muted\">No CronJobs in this namespace.</td></tr>");
    }
    for c in cronjobs {
        let name = text_at(c, "/metadata/name");
        let href = format!("{base}/cronjobs/{}", url_segment(name));
        let suspended = c.pointer("/spec/suspend") == Some(&Value::Bool(true));
        h.open("tr", &[("data-cronjob", name)])
            .raw("<td>")
            .el("a", &[("href", &href)], name)
            .raw("</td><td>")
            .text(text_at(c, "/spec/schedule"))
            .raw("</td><td class=\"state\">")
            .text(if suspended { "Paused" } else { "Active" })
            .raw("</td><td>")
            .text(text_at(c, "/status/lastScheduleTime"))
            .raw("</td></tr>");
    }
    h.raw("</tbody></table></section>");
    h
}

async fn batch_list(
    State(console): State<Shared>,
    Path((instance, namespace)): Path<(String, String)>,
    signed: SignedIn,
) -> Response {
    let list = |kind| ListResourcesRequest {
        instance: instance.clone(),
        kind,
        namespace: Some(namespace.clone()),
        options: ListOptions::default(),
    };
    let lists = futures::try_join!(
        console
            .api
            .list_resources(&signed.caller, list(ResourceKind::Jobs)),
        console
            .api
            .list_resources(&signed.caller, list(ResourceKind::Cronjobs)),
    );
    let status = lists.as_ref().err().map_or(StatusCode::OK, status_of);
    let lists = lists
        .as_ref()
        .map(|(jobs, cronjobs)| (jobs.items.as_slice(), cronjobs.items.as_slice()))
        .map_err(Clone::clone);
    html(
        status,
        batch_page(&signed.viewer(), &instance, &namespace, lists),
    )
}

async fn read(
    console: &super::request::Console,
    caller: &crate::access::Caller,
    (instance, namespace, name): (&str, &str, &str),
    kind: ResourceKind,
) -> Result<Value, ApiError> {
    console
        .api
        .get_resource(
            caller,
            GetResourceRequest {
                instance: instance.to_owned(),
                kind,
                namespace: Some(namespace.to_owned()),
                name: name.to_owned(),
            },
        )
        .await
}

async fn job_restart(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path((instance, namespace, name)): Path<(String, String, String)>,
    SignedForm { signed, .. }: SignedForm,
) -> Response {
    let req = RestartJobRequest {
        instance: instance.clone(),
        namespace: namespace.clone(),
        name: name.clone(),
    };
    match console.api.restart_job(&signed.caller, req).await {
        Ok(_) => see_other(
            &headers,
            &format!(
                "/ui/instances/{}/namespaces/{}/jobs/{}",
                url_segment(&instance),
                url_segment(&namespace),
                url_segment(&name)
            ),
        ),
        Err(err) => error_answer(&signed, &name, &err),
    }
}

async fn cronjob_page(
    State(console): State<Shared>,
    Path((instance, namespace, name)): Path<(String, String, String)>,
    signed: SignedIn,
) -> Response {
    let at = (instance.as_str(), namespace.as_str(), name.as_str());
    let jobs = ListResourcesRequest {
        instance: instance.clone(),
        kind: ResourceKind::Jobs,
        namespace: Some(namespace.clone()),
        options: ListOptions::default(),
    };
    let (cronjob, jobs) = futures::join!(
        read(&console, &signed.caller, at, ResourceKind::Cronjobs),
        console.api.list_resources(&signed.caller, jobs),
    );
    // The Jobs are a part of the page: a refusal to list them leaves the list empty.
    let jobs = jobs.map(|list| list.items).unwrap_or_default();
    match cronjob {
        Ok(cronjob) => {
            let can_write = allowed(
                &console,
                &signed.caller,
                Verb::Patch,
                InstanceResource::Proxy,
                &instance,
            )
            .await;
            html(
                StatusCode::OK,
                cronjob_page_html(
                    &signed.viewer(),
                    &instance,
                    (&cronjob, &jobs),
                    can_write,
                    None,
                ),
            )
        }
        Err(err) => error_answer(&signed, &name, &err),
    }
}

async fn cronjob_post(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path((instance, namespace, name, action)): Path<(String, String, String, String)>,
    SignedForm { signed, .. }: SignedForm,
) -> Response {
    let result = match CronJobAction::parse(&action) {
        Some(action) => {
            let req = CronJobActionRequest {
                instance: instance.clone(),
                namespace: namespace.clone(),
                name: name.clone(),
                action,
            };
            console.api.cronjob_action(&signed.caller, req).await
        }
        None => Err(ApiError::not_found(format!(
            "cronjobs have no action {action:?}: pause or resume"
        ))),
    };
    match result {
        Ok(_) => see_other(
            &headers,
            &format!(
                "/ui/instances/{}/namespaces/{}/cronjobs/{}",
                url_segment(&instance),
                url_segment(&namespace),
                url_segment(&name)
            ),
        ),
        Err(err) => error_answer(&signed, &name, &err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_form_becomes_an_application() {
        let form = AppForm::from_fields(&fields(&[
            ("kind", "Deployment"),
            ("name", "web"),
            ("namespace", "demo"),
            ("image", "nginx:1.27"),
            ("replicas", "4"),
            ("port", "80"),
            ("clusters", "a-east, a-west"),
            ("labels", "env=prod"),
            ("weights", "a-east=3,a-west=1"),
            ("override_cluster_1", "a-east"),
            ("override_image_1", "nginx:1.28"),
            ("override_replicas_2", ""),
        ]));
        let spec = form.spec(true).unwrap();
        assert!(spec.dry_run);
        assert_eq!(spec.workload["spec"]["replicas"], 4);
        assert_eq!(
            spec.workload["spec"]["template"]["spec"]["containers"][0],
            json!({"name": "web", "image": "nginx:1.27"})
        );
        assert_eq!(spec.service.unwrap().ports[0].port, 80);
        assert_eq!(spec.placement.cluster_names, ["a-east", "a-west"]);
        assert_eq!(spec.placement.cluster_labels["env"], "prod");
        assert_eq!(spec.placement.weights["a-east"], 3);
        assert_eq!(spec.overrides.len(), 1);
        assert_eq!(spec.overrides[0].image.as_deref(), Some("nginx:1.28"));
        // The whole request passes the API's own checks.
        crate::api::applications::create::plan("demo", &form.spec(false).unwrap()).unwrap();

        let cron = AppForm {
            kind: "CronJob".into(),
            name: "tick".into(),
            image: "busybox".into(),
            schedule: "0 * * * *".into(),
            clusters: "a".into(),
            ..AppForm::blank("demo")
        };
        let spec = cron.spec(false).unwrap();
        assert_eq!(spec.workload["spec"]["schedule"], "0 * * * *");
        assert!(spec.service.is_none());
        crate::api::applications::create::plan("demo", &spec).unwrap();

        for (field, value, want) in [
            ("replicas", "two", "replicas"),
            ("port", "http", "port"),
            ("labels", "env", "labels"),
            ("weights", "a=x", "weights"),
        ] {
            let mut form = AppForm::blank("demo");
            form.name = "x".into();
            match field {
                "replicas" => form.replicas = value.into(),
                "port" => form.port = value.into(),
                "labels" => form.labels = value.into(),
                _ => form.weights = value.into(),
            }
            let err = form.spec(false).unwrap_err();
            assert!(err.message.starts_with(want), "{field}: {}", err.message);
        }
    }

    #[test]
    fn pages_escape_every_field_and_hide_writes_from_viewers() {
        let viewer = Viewer {
            user: "<b>u</b>",
            csrf: "t",
        };
        let evil = "<script>x()</script>";
        let mut form = AppForm::blank("demo");
        form.name = evil.into();
        form.overrides[0].1 = evil.into();
        let page = application_page(&viewer, "inst", &form, true, None);
        assert!(!page.contains("<script>x()"), "{page}");
        assert!(page.contains("&lt;script&gt;x()"));
        assert!(page.contains("id=\"app-form\""));
        let hidden = application_page(&viewer, "inst", &form, false, None);
        assert!(!hidden.contains("app-form") && !hidden.contains("app-create"));

        let cron = json!({"metadata": {"name": "tick", "namespace": "demo"},
            "spec": {"schedule": evil, "suspend": true}});
        let page = cronjob_page_html(&viewer, "inst", (&cron, &[]), true, None);
        assert!(page.contains("id=\"cronjob-resume\"") && !page.contains("cronjob-pause"));
        assert!(!page.contains("<script>x()"));
        assert!(
            !cronjob_page_html(&viewer, "inst", (&cron, &[]), false, None)
                .contains("cronjob-actions")
        );

        let job = json!({"metadata": {"name": evil}, "spec": {"completions": 3},
            "status": {"succeeded": 2, "active": 1}});
        let page = batch_page(
            &viewer,
            evil,
            evil,
            Ok((&[job], std::slice::from_ref(&cron))),
        );
        assert!(!page.contains("<script>x()"), "{page}");
        assert!(page.contains("<td class=\"succeeded\">2</td>") && page.contains("2/3"));
        assert!(page.contains("hx-trigger"), "the tables refresh themselves");
        let refused = batch_page(&viewer, "inst", "demo", Err(ApiError::forbidden(evil)));
        assert!(refused.contains("PermissionDenied") && !refused.contains("<script>x()"));
        assert!(refused.contains("hx-get=\"/ui/instances/inst/namespaces/demo/batch\""));
    }

    #[test]
    fn outcomes_list_the_objects() {
        let viewer = Viewer {
            user: "u",
            csrf: "t",
        };
        let result = ApplicationResult {
            dry_run: true,
            objects: vec![
                json!({"kind": "Deployment", "metadata": {"name": "web", "namespace": "demo"}}),
                json!({"kind": "Service", "metadata": {"name": "web", "namespace": "demo"}}),
            ],
        };
        let page = application_page(
            &viewer,
            "inst",
            &AppForm::blank("demo"),
            true,
            Some(Outcome::Preview(&result)),
        );
        assert!(page.contains("nothing was created"));
        assert!(page.contains("data-kind=\"Service\""));
        // A preview links nowhere: the objects do not exist.
        assert!(!page.contains("/workloads/web"));
        let created = ApplicationResult {
            dry_run: false,
            ..result
        };
        let page = application_page(
            &viewer,
            "inst",
            &AppForm::blank("demo"),
            true,
            Some(Outcome::Created(&created)),
        );
        assert!(page.contains("/ui/instances/inst/namespaces/demo/workloads/web"));
    }
}
