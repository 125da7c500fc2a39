//! The console's member-cluster pages: the members of an instance with their mode and
//! readiness, the Push join form (choose the member's kubeconfig file or paste it), the Pull form (shows the
//! manifests to apply in the member), and the unjoin confirmation, which shows the API's
//! refusal and offers `force`. Viewers see the list without any of these controls, and the
//! API refuses their writes anyway. One member's page ([`detail`]), its edit form ([`edit`])
//! and its nodes ([`nodes`]) have their own modules.

pub mod detail;
pub mod edit;
pub mod nodes;

use std::collections::{BTreeMap, HashMap};

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use super::html::{Html, url_segment};
use super::page::{Viewer, cancel_form, error_box, notice_box, page, post_form};
use super::request::{Shared, SignedForm, SignedIn, allowed, html, see_other, status_of};
use crate::access::{InstanceResource, Verb};
use crate::api::members::types::{
    JoinMemberRequest, RegisterMemberRequest, RegisterMemberResponse,
};
use crate::api::{ApiError, ListClustersRequest, ListOptions, RemoveClusterRequest};

/// The script of the join page that reads a chosen kubeconfig file into the text area.
pub const KUBECONFIG_FILE_JS: &str = include_str!("assets/kubeconfig-file.js");

/// The member-cluster routes (under `/ui/instances/{instance}`).
pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/ui/instances/{instance}/members", get(members))
        .route("/ui/instances/{instance}/join", get(join_form).post(join))
        .route(
            "/ui/instances/{instance}/register",
            get(register_form).post(register),
        )
        .route(
            "/ui/instances/{instance}/members/{cluster}/unjoin",
            get(unjoin_form).post(unjoin),
        )
        .route(
            "/ui/instances/{instance}/members/{cluster}",
            get(detail::member),
        )
        .route(
            "/ui/instances/{instance}/members/{cluster}/edit",
            get(edit::edit_form).post(edit::edit),
        )
        .route(
            "/ui/instances/{instance}/members/{cluster}/nodes",
            get(nodes::nodes),
        )
}

/// The fields of the join forms (Push and Pull), as posted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JoinForm {
    /// Member cluster name.
    pub name: String,
    /// `key=value` labels, separated by commas or new lines.
    pub labels: String,
    /// Provider.
    pub provider: String,
    /// Region.
    pub region: String,
    /// Zone.
    pub zone: String,
    /// The member's kubeconfig (Push): never written back into a page.
    pub kubeconfig: String,
    /// Kubeconfig context (Push, optional).
    pub context: String,
}

fn optional(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

impl JoinForm {
    /// The form from posted fields.
    pub fn from_fields(fields: &HashMap<String, String>) -> JoinForm {
        let field = |k: &str| {
            fields
                .get(k)
                .map(|v| v.trim().to_owned())
                .unwrap_or_default()
        };
        JoinForm {
            name: field("name"),
            labels: field("labels"),
            provider: field("provider"),
            region: field("region"),
            zone: field("zone"),
            kubeconfig: fields.get("kubeconfig").cloned().unwrap_or_default(),
            context: field("context"),
        }
    }

    /// The labels as a map; a part without `=` is refused.
    pub fn label_map(&self) -> Result<BTreeMap<String, String>, ApiError> {
        let mut labels = BTreeMap::new();
        for part in self.labels.split([',', '\n']) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let Some((k, v)) = part.split_once('=') else {
                return Err(ApiError::invalid_field(
                    "labels",
                    format!("{part:?} is not key=value"),
                ));
            };
            labels.insert(k.trim().to_owned(), v.trim().to_owned());
        }
        Ok(labels)
    }

    /// The Push join request of `instance`.
    pub fn join_request(&self, instance: &str) -> Result<JoinMemberRequest, ApiError> {
        Ok(JoinMemberRequest {
            instance: instance.to_owned(),
            name: self.name.clone(),
            kubeconfig: self.kubeconfig.clone(),
            context: optional(&self.context),
            api_endpoint: None,
            labels: self.label_map()?,
            taints: Vec::new(),
            provider: optional(&self.provider),
            region: optional(&self.region),
            zone: optional(&self.zone),
        })
    }

    /// The Pull registration request of `instance`.
    pub fn register_request(&self, instance: &str) -> Result<RegisterMemberRequest, ApiError> {
        Ok(RegisterMemberRequest {
            instance: instance.to_owned(),
            name: self.name.clone(),
            labels: self.label_map()?,
            provider: optional(&self.provider),
            region: optional(&self.region),
            zone: optional(&self.zone),
            ..RegisterMemberRequest::default()
        })
    }
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("–")
}

fn ready_of(c: &Value) -> &'static str {
    let ready = c
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .and_then(|c| c["status"].as_str());
    match ready {
        Some("True") => "Ready",
        Some("False") => "NotReady",
        _ => "Unknown",
    }
}

/// The members page; its table refreshes itself (a refusal to list shows in its place).
pub fn members_page(
    viewer: &Viewer<'_>,
    instance: &str,
    clusters: Result<&[Value], ApiError>,
    can_write: bool,
) -> String {
    let base = format!("/ui/instances/{}", url_segment(instance));
    let mut h = Html::new();
    h.open("h1", &[])
        .raw("Member clusters of ")
        .text(instance)
        .close("h1");
    h.open("p", &[]);
    h.el("a", &[("href", &base)], "← Overview");
    if can_write {
        h.raw(" ");
        h.el(
            "a",
            &[
                ("href", &format!("{base}/join")),
                ("class", "button"),
                ("id", "join-push"),
            ],
            "Join (Push)",
        );
        h.raw(" ");
        h.el(
            "a",
            &[
                ("href", &format!("{base}/register")),
                ("class", "button"),
                ("id", "join-pull"),
            ],
            "Join (Pull)",
        );
        h.raw(" ").el(
            "a",
            &[
                (
                    "href",
                    &format!(
                        "{base}/create?group=cluster.karmada.io&version=v1alpha1&resource=clusters"
                    ),
                ),
                ("id", "create-cluster"),
            ],
            "Create a Cluster object",
        );
    }
    h.close("p");
    let refresh = format!("{base}/members");
    let table = clusters.map(|clusters| members_table(&base, clusters, can_write));
    crate::console::page::live_page(
        viewer,
        &format!("Members of {instance}"),
        h,
        ("members-live", &refresh),
        table,
    )
}

fn members_table(base: &str, clusters: &[Value], can_write: bool) -> Html {
    let mut h = Html::new();
    h.raw("<table id=\"members\" class=\"list\"><thead><tr><th>Name</th><th>Mode</th><th>Ready</th><th>Kubernetes</th><th>Region</th><th>Endpoint</th><th>Workloads</th>");
    if can_write {
        h.raw("<th></th>");
    }
    h.raw("</tr></thead><tbody>");
    if clusters.is_empty() {
        h.raw("<tr><td colspan=\"8\" class=\"muted\">No member clusters.</td></tr>");
    }
    for c in clusters {
        let name = s(c, "/metadata/name");
        h.open("tr", &[("data-cluster", name)]);
        let link = format!("{base}/members/{}", url_segment(name));
        h.raw("<td>")
            .el("a", &[("href", &link), ("class", "member")], name)
            .raw("</td>")
            .el("td", &[], s(c, "/spec/syncMode"))
            .el("td", &[("class", "ready")], ready_of(c))
            .el("td", &[], s(c, "/status/kubernetesVersion"))
            .el("td", &[], s(c, "/spec/region"))
            .el("td", &[], s(c, "/spec/apiEndpoint"));
        let workloads = format!("{base}/members/{}/workloads", url_segment(name));
        h.raw("<td>");
        h.el(
            "a",
            &[("href", &workloads), ("class", "member-workloads")],
            "Workloads",
        );
        h.raw("</td>");
        if can_write {
            let unjoin = format!("{base}/members/{}/unjoin", url_segment(name));
            h.raw("<td>");
            h.el("a", &[("href", &unjoin), ("class", "unjoin")], "Unjoin");
            h.raw("</td>");
        }
        h.raw("</tr>");
    }
    h.raw("</tbody></table>");
    h
}

fn input(h: &mut Html, label: &str, name: &'static str, value: &str, required: bool) {
    h.raw("<label>").text(label).raw(" ");
    let mut attrs = vec![("name", name), ("id", name), ("value", value)];
    if required {
        attrs.push(("required", ""));
    }
    h.open("input", &attrs).raw("</label>");
}

fn placement_inputs(h: &mut Html, form: &JoinForm) {
    input(h, "Name", "name", &form.name, true);
    input(
        h,
        "Labels (key=value, comma-separated)",
        "labels",
        &form.labels,
        false,
    );
    input(h, "Provider", "provider", &form.provider, false);
    input(h, "Region", "region", &form.region, false);
    input(h, "Zone", "zone", &form.zone, false);
}

/// The Push join page. The kubeconfig is never written back into the page.
pub fn join_page(
    viewer: &Viewer<'_>,
    instance: &str,
    form: &JoinForm,
    err: Option<&ApiError>,
) -> String {
    let base = format!("/ui/instances/{}", url_segment(instance));
    let mut h = Html::new();
    h.open("h1", &[])
        .raw("Join a member cluster to ")
        .text(instance)
        .close("h1");
    h.raw("<p>Push mode: paste the member's kubeconfig (it needs rights to create namespaces, ServiceAccounts, Secrets and RBAC objects). Kairship creates a ServiceAccount with its ClusterRole, ClusterRoleBinding and token in the member, and the credential Secrets and the Cluster in the instance. The kubeconfig is used for this call only.</p>");
    post_form(&mut h, err, &format!("{base}/join"), viewer.csrf);
    placement_inputs(&mut h, form);
    h.raw("<label>Kubeconfig file <input type=\"file\" id=\"kubeconfig-file\"></label>")
        .raw("<script src=\"/ui/assets/kubeconfig-file.js\" defer></script>");
    h.raw("<label>Kubeconfig (or paste it) <textarea id=\"kubeconfig\" name=\"kubeconfig\" rows=\"12\" required autocomplete=\"off\" spellcheck=\"false\"></textarea></label>");
    input(
        &mut h,
        "Context (optional)",
        "context",
        &form.context,
        false,
    );
    h.raw("<button id=\"join\" type=\"submit\">Join</button> ");
    cancel_form(&mut h, &format!("{base}/members"));
    page("Join a member cluster", Some(viewer), h)
}

/// The Pull page: the form, or the manifests once registered.
pub fn register_page(
    viewer: &Viewer<'_>,
    instance: &str,
    form: &JoinForm,
    err: Option<&ApiError>,
    done: Option<&RegisterMemberResponse>,
) -> String {
    let base = format!("/ui/instances/{}", url_segment(instance));
    let mut h = Html::new();
    h.open("h1", &[])
        .raw("Join a member cluster to ")
        .text(instance)
        .raw(" (Pull)")
        .close("h1");
    if let Some(done) = done {
        notice_box(
            &mut h,
            &format!(
                "Apply these manifests in member cluster {} (kubectl apply -f manifests.yaml). They hold the agent's client certificate, which expires at {}; the agent reaches the instance at {}.",
                done.cluster, done.expiration, done.karmada_endpoint
            ),
        );
        h.el("pre", &[("id", "manifests")], &done.yaml);
        h.el(
            "a",
            &[("href", &format!("{base}/members"))],
            "Back to members",
        );
        return page("Join a member cluster (Pull)", Some(viewer), h);
    }
    h.raw("<p>Pull mode: Kairship creates the agent's RBAC and the Cluster in the instance, obtains the agent's client certificate, and shows the karmada-agent's manifests to apply in the member.</p>");
    post_form(&mut h, err, &format!("{base}/register"), viewer.csrf);
    placement_inputs(&mut h, form);
    h.raw("<button id=\"register\" type=\"submit\">Create the manifests</button> ");
    cancel_form(&mut h, &format!("{base}/members"));
    page("Join a member cluster (Pull)", Some(viewer), h)
}

/// The unjoin confirmation, with the API's refusal when there was one.
pub fn unjoin_page(
    viewer: &Viewer<'_>,
    instance: &str,
    cluster: &str,
    err: Option<&ApiError>,
) -> String {
    let base = format!("/ui/instances/{}", url_segment(instance));
    let mut h = Html::new();
    h.open("h1", &[])
        .raw("Unjoin ")
        .text(cluster)
        .raw(" from ")
        .text(instance)
        .close("h1");
    if let Some(err) = err {
        error_box(&mut h, err);
    }
    h.raw("<p>Kairship refuses to unjoin a member that ResourceBindings still schedule to; force unjoins it anyway. The Cluster, its credential Secrets and what the join created in the member are removed.</p>");
    let action = format!("{base}/members/{}/unjoin", url_segment(cluster));
    post_form(&mut h, None, &action, viewer.csrf);
    h.raw("<label class=\"inline\"><input type=\"checkbox\" id=\"force\" name=\"force\" value=\"true\" autofocus> Force</label> ");
    h.raw("<button id=\"confirm-unjoin\" class=\"danger\" type=\"submit\">Unjoin</button> ");
    cancel_form(&mut h, &format!("{base}/members"));
    page("Unjoin a member cluster", Some(viewer), h)
}

async fn can_write(
    console: &super::request::Console,
    caller: &crate::access::Caller,
    instance: &str,
) -> bool {
    allowed(
        console,
        caller,
        Verb::Create,
        InstanceResource::Proxy,
        instance,
    )
    .await
}

async fn members(
    State(console): State<Shared>,
    Path(instance): Path<String>,
    signed: SignedIn,
) -> Response {
    let req = ListClustersRequest {
        instance: instance.clone(),
        options: ListOptions::default(),
    };
    let (list, write) = futures::join!(
        console.api.list_clusters(&signed.caller, req),
        can_write(&console, &signed.caller, &instance)
    );
    let status = list.as_ref().err().map_or(StatusCode::OK, status_of);
    let clusters = list
        .as_ref()
        .map(|l| l.items.as_slice())
        .map_err(Clone::clone);
    html(
        status,
        members_page(&signed.viewer(), &instance, clusters, write),
    )
}

async fn join_form(Path(instance): Path<String>, signed: SignedIn) -> Response {
    html(
        StatusCode::OK,
        join_page(&signed.viewer(), &instance, &JoinForm::default(), None),
    )
}

async fn join(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(instance): Path<String>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    let form = JoinForm::from_fields(&fields);
    let result = match form.join_request(&instance) {
        Ok(req) => console.api.join_member(&signed.caller, req).await,
        Err(err) => Err(err),
    };
    match result {
        Ok(_) => see_other(
            &headers,
            &format!("/ui/instances/{}/members", url_segment(&instance)),
        ),
        Err(err) => html(
            status_of(&err),
            join_page(&signed.viewer(), &instance, &form, Some(&err)),
        ),
    }
}

async fn register_form(Path(instance): Path<String>, signed: SignedIn) -> Response {
    html(
        StatusCode::OK,
        register_page(
            &signed.viewer(),
            &instance,
            &JoinForm::default(),
            None,
            None,
        ),
    )
}

async fn register(
    State(console): State<Shared>,
    Path(instance): Path<String>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    let form = JoinForm::from_fields(&fields);
    let result = match form.register_request(&instance) {
        Ok(req) => console.api.register_member(&signed.caller, req).await,
        Err(err) => Err(err),
    };
    match result {
        Ok(done) => html(
            StatusCode::OK,
            register_page(&signed.viewer(), &instance, &form, None, Some(&done)),
        ),
        Err(err) => html(
            status_of(&err),
            register_page(&signed.viewer(), &instance, &form, Some(&err), None),
        ),
    }
}

async fn unjoin_form(
    Path((instance, cluster)): Path<(String, String)>,
    signed: SignedIn,
) -> Response {
    html(
        StatusCode::OK,
        unjoin_page(&signed.viewer(), &instance, &cluster, None),
    )
}

async fn unjoin(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path((instance, cluster)): Path<(String, String)>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    let req = RemoveClusterRequest {
        instance: instance.clone(),
        cluster: cluster.clone(),
        force: Some(fields.get("force").is_some_and(|v| v == "true")),
    };
    match console.api.remove_cluster(&signed.caller, req).await {
        Ok(_) => see_other(
            &headers,
            &format!("/ui/instances/{}/members", url_segment(&instance)),
        ),
        Err(err) => html(
            status_of(&err),
            unjoin_page(&signed.viewer(), &instance, &cluster, Some(&err)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn viewer() -> Viewer<'static> {
        Viewer {
            user: "u",
            csrf: "c",
        }
    }

    #[test]
    fn labels_are_parsed_from_the_form() {
        for (text, want) in [
            ("", Some(vec![])),
            ("a=b", Some(vec![("a", "b")])),
            (
                "a=b, c = d\ne=",
                Some(vec![("a", "b"), ("c", "d"), ("e", "")]),
            ),
            ("a", None),
        ] {
            let form = JoinForm {
                labels: text.into(),
                ..JoinForm::default()
            };
            let got = form.label_map().ok();
            let want = want.map(|w| {
                w.into_iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect::<BTreeMap<_, _>>()
            });
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn pages_escape_and_hide_controls_from_viewers() {
        let cluster = serde_json::json!({"metadata": {"name": "<script>x</script>"}, "spec": {"syncMode": "Push"}});
        let page = members_page(&viewer(), "i", Ok(std::slice::from_ref(&cluster)), false);
        assert!(!page.contains("<script>x"));
        assert!(!page.contains("join-push") && !page.contains("Unjoin"));
        assert!(
            page.contains("hx-get=\"/ui/instances/i/members\""),
            "{page}"
        );
        let page = members_page(&viewer(), "i", Ok(&[cluster]), true);
        assert!(page.contains("join-push") && page.contains("Unjoin"));
        assert!(page.contains(
            "create?group=cluster.karmada.io&amp;version=v1alpha1&amp;resource=clusters"
        ));
        let refused = members_page(&viewer(), "i", Err(ApiError::forbidden("<b>no</b>")), true);
        assert!(refused.contains("&lt;b&gt;no") && refused.contains("hx-get"));
        // A refused join shows the message but never the kubeconfig it was given.
        let form = JoinForm {
            name: "m1".into(),
            kubeconfig: "secret-kubeconfig".into(),
            ..JoinForm::default()
        };
        let page = join_page(&viewer(), "i", &form, Some(&ApiError::invalid("bad <b>")));
        assert!(page.contains("bad &lt;b&gt;"));
        assert!(!page.contains("secret-kubeconfig"));
    }
}
