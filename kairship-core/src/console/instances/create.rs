//! "Create from YAML": one or more documents (separated by `---`) of any kind the instance
//! serves. Each document's `apiVersion` and `kind` are resolved through the instance's
//! discovery (the API's `ListApiResources`) to a group, version, plural and scope, and the
//! object is created with the generic `CreateObject`, which covers the typed kinds as well
//! (their policies' `{"data": ...}` bodies and checks included); a `cluster.karmada.io`
//! `Cluster` goes through `JoinCluster` ([`MembersApi::create_cluster`]), so the API's rules
//! for members apply. Every document is parsed and resolved before anything is created; the
//! documents are then created in order, stopping at the first refusal.
//!
//! [`MembersApi::create_cluster`]: crate::api::MembersApi::create_cluster

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::routing::get;
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use crate::access::{InstanceResource, Verb};
use crate::api::{
    ApiError, ApiResourceInfo, CORE_GROUP, CreateObjectRequest, JoinClusterRequest,
    ListApiResourcesRequest,
};
use crate::console::browser::ResourcePath;
use crate::console::html::{Html, url_segment};
use crate::console::page::{Viewer, csrf_field, error_box, notice_box, page, s};
use crate::console::request::{
    Shared, SignedForm, SignedIn, allowed, forbidden, html, see_other, status_of,
};

/// Karmada's member clusters, created with `JoinCluster` rather than `CreateObject`.
const CLUSTER_GROUP: &str = "cluster.karmada.io";
const CLUSTER_RESOURCE: &str = "clusters";

/// How many near kinds an unknown kind's message suggests.
const SUGGESTIONS: usize = 3;

/// The create page's query: the namespace for documents naming none, and optionally the
/// resource whose skeleton prefills the form (the resource browser's **Create** link).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub(in crate::console) struct CreateQuery {
    ns: Option<String>,
    group: Option<String>,
    version: Option<String>,
    resource: Option<String>,
}

/// The form as sent (or prefilled): the namespace for documents naming none, and the YAML.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CreateForm {
    /// Namespace of the namespaced documents that name none.
    pub namespace: String,
    /// The documents.
    pub yaml: String,
}

/// One object created, for the page's list: what it is and where its page is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    /// `apiVersion` of the object.
    pub api_version: String,
    /// Kind of the object.
    pub kind: String,
    /// Namespace (none for cluster-scoped objects).
    pub namespace: Option<String>,
    /// Name (as the API answered: `generateName` resolved).
    pub name: String,
    /// The console page of the object.
    pub link: String,
}

/// What the page shows below the form: the objects created and the refusal that stopped the
/// documents, with which document it was (`document 2 of 3, Service demo/web`).
#[derive(Debug, Default)]
pub struct Outcome {
    /// Objects created, in order.
    pub created: Vec<Created>,
    /// The refused document (described) and the API's (or the form's) refusal.
    pub refused: Option<(String, ApiError)>,
}

/// The call that creates one document.
#[derive(Clone, Debug, PartialEq)]
pub enum CreateCall {
    /// A `cluster.karmada.io` Cluster: `JoinCluster`.
    Cluster(JoinClusterRequest),
    /// Anything else: `CreateObject`.
    Object(CreateObjectRequest),
}

/// One document, resolved: the call creating it and what the page says about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    /// How the document is named in messages (`document 2 of 3, Service demo/web`).
    pub describe: String,
    /// The resource the document's kind resolved to.
    pub resource: ApiResourceInfo,
    /// The call.
    pub call: CreateCall,
}

/// The documents of `yaml` (separated by `---`; empty documents skipped), each a mapping
/// with `apiVersion` and `kind`; the first problem otherwise, naming the document.
pub fn parse_documents(yaml: &str) -> Result<Vec<Value>, ApiError> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(yaml)
        .map_err(|e| ApiError::invalid(format!("the YAML does not parse: {e}")))?;
    if docs.is_empty() {
        return Err(ApiError::invalid(
            "there is nothing to create: paste one object, or several separated by `---`",
        ));
    }
    let count = docs.len();
    for (index, doc) in docs.iter().enumerate() {
        let which = document_name(index, count);
        if !doc.is_object() {
            return Err(ApiError::invalid(format!(
                "{which} is not an object: give a mapping with apiVersion, kind and metadata"
            )));
        }
        for (field, example) in [
            ("apiVersion", "v1, apps/v1, ..."),
            ("kind", "Deployment, ConfigMap, ..."),
        ] {
            let given = doc
                .get(field)
                .and_then(Value::as_str)
                .is_some_and(|v| !v.trim().is_empty());
            if !given {
                return Err(ApiError::invalid(format!(
                    "{which} has no {field}: give `{field}` ({example})"
                )));
            }
        }
    }
    Ok(docs)
}

/// "the document" when there is one, else "document 2 of 3".
fn document_name(index: usize, count: usize) -> String {
    if count == 1 {
        "the document".to_owned()
    } else {
        format!("document {} of {count}", index + 1)
    }
}

/// The group (`core` for the core group) and version of an `apiVersion`.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => (CORE_GROUP, api_version),
    }
}

/// How an `apiVersion` is written for a served resource (`v1` for the core group).
fn api_version_of(r: &ApiResourceInfo) -> String {
    if r.group == CORE_GROUP {
        r.version.clone()
    } else {
        format!("{}/{}", r.group, r.version)
    }
}

/// The edit distance of two short strings (Levenshtein, by characters).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Served kinds near `kind` (case aside, a few letters off, or one containing the other),
/// nearest first, each with an `apiVersion` serving it (the group's preferred one first).
fn near_kinds(served: &[ApiResourceInfo], kind: &str) -> Vec<String> {
    let wanted = kind.to_lowercase();
    // (distance, kind, "Kind (apiVersion)"): one entry per kind, the first version discovery
    // lists (the group's preferred one).
    let mut near: Vec<(usize, &str, String)> = Vec::new();
    for r in served {
        let candidate = r.kind.to_lowercase();
        let d = distance(&wanted, &candidate);
        let close = d <= 2.max(wanted.len() / 4)
            || (wanted.len() >= 4 && candidate.contains(&wanted))
            || (candidate.len() >= 4 && wanted.contains(&candidate));
        if close && !near.iter().any(|(_, k, _)| *k == r.kind) {
            near.push((d, &r.kind, format!("{} ({})", r.kind, api_version_of(r))));
        }
    }
    near.sort_by_key(|(d, _, _)| *d);
    near.into_iter()
        .take(SUGGESTIONS)
        .map(|(_, _, named)| named)
        .collect()
}

/// The resource `instance` serves for `api_version` and `kind`, from its discovery
/// (`served`); else why not, naming what it serves nearby: the versions serving the kind, a
/// near kind, or the kinds of the group version.
pub fn resolve_kind<'a>(
    served: &'a [ApiResourceInfo],
    instance: &str,
    api_version: &str,
    kind: &str,
) -> Result<&'a ApiResourceInfo, String> {
    let (group, version) = split_api_version(api_version);
    if let Some(found) = served
        .iter()
        .find(|r| r.group == group && r.version == version && r.kind == kind)
    {
        return Ok(found);
    }
    let elsewhere: Vec<String> = served
        .iter()
        .filter(|r| r.kind == kind)
        .map(api_version_of)
        .collect();
    if !elsewhere.is_empty() {
        return Err(format!(
            "kind {kind} is not served as {api_version} by {instance}; it is served as {}",
            elsewhere.join(", ")
        ));
    }
    let in_version: Vec<&str> = served
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .map(|r| r.kind.as_str())
        .collect();
    let mut message = if in_version.is_empty() {
        let versions: Vec<&str> = served
            .iter()
            .filter(|r| r.group == group)
            .map(|r| r.version.as_str())
            .fold(Vec::new(), |mut v, x| {
                if !v.contains(&x) {
                    v.push(x);
                }
                v
            });
        if versions.is_empty() {
            format!("apiVersion {api_version} is not served by {instance} (no group {group})")
        } else {
            format!(
                "apiVersion {api_version} is not served by {instance}; group {group} serves {}",
                versions.join(", ")
            )
        }
    } else {
        format!("kind {kind} is not served by {instance} in {api_version}")
    };
    let near = near_kinds(served, kind);
    if !near.is_empty() {
        message.push_str(&format!("; did you mean {}?", near.join(", ")));
    } else if !in_version.is_empty() {
        let mut kinds = in_version;
        kinds.sort_unstable();
        kinds.dedup();
        message.push_str(&format!("; {api_version} serves {}", kinds.join(", ")));
    }
    Err(message)
}

/// `namespace/name` or `name` (or `generateName…`) of a document, for messages.
fn object_name(doc: &Value, namespace: Option<&str>) -> String {
    let name = s(doc, "/metadata/name")
        .map(str::to_owned)
        .or_else(|| s(doc, "/metadata/generateName").map(|g| format!("{g}…")))
        .unwrap_or_else(|| "(no name)".to_owned());
    match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name,
    }
}

/// The calls creating `docs` in `instance`, resolved against its discovery (`served`):
/// namespaced objects in their own namespace, else `default_namespace`. The first document
/// that does not resolve stops it all (nothing is created).
pub fn plan(
    instance: &str,
    docs: Vec<Value>,
    served: &[ApiResourceInfo],
    default_namespace: &str,
) -> Result<Vec<Planned>, ApiError> {
    let count = docs.len();
    docs.into_iter()
        .enumerate()
        .map(|(index, body)| {
            let api_version = s(&body, "/apiVersion").unwrap_or_default().trim();
            let kind = s(&body, "/kind").unwrap_or_default().trim();
            let which = document_name(index, count);
            let resource = resolve_kind(served, instance, api_version, kind)
                .map_err(|m| ApiError::invalid(format!("{which}: {m}")))?
                .clone();
            let namespace = resource.namespaced.then(|| {
                s(&body, "/metadata/namespace")
                    .filter(|n| !n.is_empty())
                    .unwrap_or(default_namespace)
                    .to_owned()
            });
            let describe = format!(
                "{which}, {kind} {}",
                object_name(&body, namespace.as_deref())
            );
            let call = if resource.group == CLUSTER_GROUP && resource.resource == CLUSTER_RESOURCE {
                CreateCall::Cluster(JoinClusterRequest {
                    instance: instance.to_owned(),
                    body,
                })
            } else {
                CreateCall::Object(CreateObjectRequest {
                    instance: instance.to_owned(),
                    group: resource.group.clone(),
                    version: resource.version.clone(),
                    resource: resource.resource.clone(),
                    namespace,
                    body,
                })
            };
            Ok(Planned {
                describe,
                resource,
                call,
            })
        })
        .collect()
}

/// The console page of an object created from `resource`: a member's page for a Cluster, the
/// workload page for a Deployment, else its page in the resource browser.
pub fn object_link(
    instance: &str,
    resource: &ApiResourceInfo,
    namespace: Option<&str>,
    name: &str,
) -> String {
    let base = format!("/ui/instances/{}", url_segment(instance));
    match (
        resource.group.as_str(),
        resource.resource.as_str(),
        namespace,
    ) {
        (CLUSTER_GROUP, CLUSTER_RESOURCE, _) => {
            format!("{base}/members/{}", url_segment(name))
        }
        ("apps", "deployments", Some(ns)) => format!(
            "{base}/namespaces/{}/workloads/{}",
            url_segment(ns),
            url_segment(name)
        ),
        _ => ResourcePath {
            instance: instance.to_owned(),
            group: resource.group.clone(),
            version: resource.version.clone(),
            resource: resource.resource.clone(),
        }
        .object_url(namespace, name, ""),
    }
}

/// The YAML the form is prefilled with for `resource`: its apiVersion and kind, a name to
/// replace and, when namespaced, `namespace`; a Cluster also its required `syncMode`.
pub fn skeleton(resource: &ApiResourceInfo, namespace: &str) -> String {
    let name = if resource.singular.is_empty() {
        resource.kind.to_lowercase()
    } else {
        resource.singular.clone()
    };
    let mut yaml = format!(
        "apiVersion: {}\nkind: {}\nmetadata:\n  name: new-{name}\n",
        api_version_of(resource),
        resource.kind
    );
    if resource.namespaced {
        yaml.push_str(&format!("  namespace: {namespace}\n"));
    }
    if resource.group == CLUSTER_GROUP && resource.resource == CLUSTER_RESOURCE {
        // Karmada requires a member's sync mode (cluster.karmada.io ClusterSpec.SyncMode).
        yaml.push_str("spec:\n  syncMode: Push\n");
    }
    yaml
}

/// Whether the caller may create inside the instance (the form and its POST).
async fn may_create(console: &Shared, signed: &SignedIn, instance: &str) -> bool {
    allowed(
        console,
        &signed.caller,
        Verb::Create,
        InstanceResource::Proxy,
        instance,
    )
    .await
}

/// `GET /ui/instances/{i}/create[?ns=&group=&version=&resource=]`: the form, prefilled with a
/// skeleton of the resource named (resolved through the instance's discovery).
pub(in crate::console) async fn create_form(
    State(console): State<Shared>,
    Path(instance): Path<String>,
    Query(query): Query<CreateQuery>,
    signed: SignedIn,
) -> Response {
    let namespace = query
        .ns
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| "default".to_owned());
    let mut form = CreateForm {
        namespace,
        yaml: String::new(),
    };
    let mut outcome = Outcome::default();
    let may = may_create(&console, &signed, &instance).await;
    if let (true, Some(group), Some(version), Some(resource)) =
        (may, query.group, query.version, query.resource)
    {
        let served = console
            .api
            .list_api_resources(
                &signed.caller,
                ListApiResourcesRequest {
                    instance: instance.clone(),
                },
            )
            .await;
        match served {
            Ok(list) => match list
                .items
                .iter()
                .find(|r| r.group == group && r.version == version && r.resource == resource)
            {
                Some(r) => form.yaml = skeleton(r, &form.namespace),
                None => {
                    let err = ApiError::not_found(format!(
                        "{instance} does not serve {resource} in {group}/{version}"
                    ));
                    outcome.refused = Some(("prefilling the form".to_owned(), err));
                }
            },
            Err(err) => outcome.refused = Some(("prefilling the form".to_owned(), err)),
        }
    }
    html(
        StatusCode::OK,
        create_page(&signed.viewer(), &instance, &form, &outcome, may),
    )
}

/// `POST /ui/instances/{i}/create`: creates the documents in order; one created goes to its
/// page, several are listed; a refusal shows the API's message, what was created before it
/// and the form as sent.
pub(in crate::console) async fn create(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(instance): Path<String>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    if !may_create(&console, &signed, &instance).await {
        return forbidden("you may not create objects in this instance");
    }
    let form = CreateForm {
        namespace: fields
            .get("namespace")
            .map(|n| n.trim())
            .filter(|n| !n.is_empty())
            .unwrap_or("default")
            .to_owned(),
        yaml: fields.get("yaml").cloned().unwrap_or_default(),
    };
    let refused = |outcome: Outcome| {
        let status = outcome
            .refused
            .as_ref()
            .map_or(StatusCode::OK, |(_, e)| status_of(e));
        html(
            status,
            create_page(&signed.viewer(), &instance, &form, &outcome, true),
        )
    };
    let planned = match parse_documents(&form.yaml) {
        Ok(docs) => {
            let served = console
                .api
                .list_api_resources(
                    &signed.caller,
                    ListApiResourcesRequest {
                        instance: instance.clone(),
                    },
                )
                .await;
            served.and_then(|list| plan(&instance, docs, &list.items, &form.namespace))
        }
        Err(err) => Err(err),
    };
    let planned = match planned {
        Ok(p) => p,
        Err(err) => {
            return refused(Outcome {
                created: Vec::new(),
                refused: Some(("the paste (nothing was created)".to_owned(), err)),
            });
        }
    };
    let mut outcome = Outcome::default();
    for p in planned {
        let (namespace, answer) = match p.call {
            CreateCall::Cluster(req) => {
                (None, console.api.create_cluster(&signed.caller, req).await)
            }
            CreateCall::Object(req) => (
                req.namespace.clone(),
                console.api.create_object(&signed.caller, req).await,
            ),
        };
        match answer {
            Ok(object) => {
                let name = s(&object, "/metadata/name").unwrap_or_default().to_owned();
                outcome.created.push(Created {
                    api_version: api_version_of(&p.resource),
                    kind: p.resource.kind.clone(),
                    link: object_link(&instance, &p.resource, namespace.as_deref(), &name),
                    namespace,
                    name,
                });
            }
            Err(err) => {
                outcome.refused = Some((p.describe, err));
                return refused(outcome);
            }
        }
    }
    match outcome.created.as_slice() {
        [one] => see_other(&headers, &one.link),
        _ => refused(outcome),
    }
}

/// The "create from YAML" page: the form (a notice instead for who may not create), then
/// the objects created and the refusal that stopped the documents.
pub fn create_page(
    viewer: &Viewer<'_>,
    instance: &str,
    form: &CreateForm,
    outcome: &Outcome,
    may_create: bool,
) -> String {
    let mut h = Html::new();
    h.open("h1", &[])
        .raw("Create in ")
        .text(instance)
        .close("h1");
    if !may_create {
        notice_box(
            &mut h,
            "You may not create objects in this instance: ask for the edit role.",
        );
        return page("Create from YAML", Some(viewer), h);
    }
    let resources = format!("/ui/instances/{}/resources", url_segment(instance));
    h.raw("<p>Any object the instance serves (see its ")
        .el("a", &[("href", &resources)], "resources")
        .raw("), or several separated by <code>---</code>, created in order; a <code>cluster.karmada.io</code> Cluster is created as a member's Cluster object (it joins nothing). The API checks each as it checks any create, and the first refusal stops the rest.</p>");
    let action = format!("/ui/instances/{}/create", url_segment(instance));
    h.open(
        "form",
        &[
            ("method", "post"),
            ("action", &action),
            ("hx-post", &action),
            ("hx-target", "#create-result"),
            ("hx-select", "#create-result"),
            ("hx-swap", "outerHTML"),
        ],
    );
    csrf_field(&mut h, viewer.csrf);
    h.raw("<label>Namespace (when the YAML names none) ")
        .open(
            "input",
            &[
                ("name", "namespace"),
                ("id", "namespace"),
                ("value", &form.namespace),
            ],
        )
        .raw("</label><label>YAML ")
        .open(
            "textarea",
            &[
                ("name", "yaml"),
                ("id", "yaml"),
                ("rows", "18"),
                ("spellcheck", "false"),
            ],
        )
        .text(&form.yaml)
        .raw("</textarea></label><button id=\"create\" type=\"submit\">Create</button></form>");
    h.raw("<div id=\"create-result\" aria-live=\"polite\">");
    if !outcome.created.is_empty() {
        h.open("section", &[("id", "created")])
            .raw("<h2>Created</h2><ul>");
        for c in &outcome.created {
            let label = match &c.namespace {
                Some(ns) => format!("{} {ns}/{}", c.kind, c.name),
                None => format!("{} {}", c.kind, c.name),
            };
            let data = format!("{}/{}", c.kind, c.name);
            h.open("li", &[("data-created", &data)])
                .el("a", &[("href", &c.link)], &label)
                .raw(" <span class=\"muted\">")
                .text(&c.api_version)
                .raw("</span></li>");
        }
        h.raw("</ul></section>");
    }
    if let Some((which, err)) = &outcome.refused {
        h.open("p", &[("id", "refused-document")])
            .raw("Refused: ")
            .text(which)
            .close("p");
        error_box(&mut h, err);
        for d in &err.details {
            if let Some(violations) = d.get("fieldViolations").and_then(Value::as_array) {
                h.raw("<ul class=\"violations\">");
                for v in violations {
                    h.raw("<li>")
                        .el("code", &[], s(v, "/field").unwrap_or_default())
                        .raw(": ")
                        .text(s(v, "/description").unwrap_or_default())
                        .raw("</li>");
                }
                h.raw("</ul>");
            }
        }
    }
    h.raw("</div>");
    page("Create from YAML", Some(viewer), h)
}

/// The create page and its POST.
pub(super) fn routes() -> Router<Shared> {
    Router::new().route(
        "/ui/instances/{instance}/create",
        get(create_form).post(create),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ar(
        group: &str,
        version: &str,
        kind: &str,
        resource: &str,
        namespaced: bool,
    ) -> ApiResourceInfo {
        ApiResourceInfo {
            group: group.into(),
            version: version.into(),
            preferred: true,
            resource: resource.into(),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            namespaced,
            verbs: vec!["create".into(), "get".into(), "list".into()],
            ..ApiResourceInfo::default()
        }
    }

    fn served() -> Vec<ApiResourceInfo> {
        vec![
            ar(CORE_GROUP, "v1", "ConfigMap", "configmaps", true),
            ar(CORE_GROUP, "v1", "Namespace", "namespaces", false),
            ar(CORE_GROUP, "v1", "Service", "services", true),
            ar("apps", "v1", "Deployment", "deployments", true),
            ar("apps", "v1", "StatefulSet", "statefulsets", true),
            ar(
                "cluster.karmada.io",
                "v1alpha1",
                "Cluster",
                "clusters",
                false,
            ),
            ar("example.io", "v1", "Widget", "widgets", true),
            ar("example.io", "v1beta1", "Widget", "widgets", true),
            ar(
                "policy.karmada.io",
                "v1alpha1",
                "PropagationPolicy",
                "propagationpolicies",
                true,
            ),
        ]
    }

    #[test]
    fn documents_parse_or_say_what_is_wrong() {
        let docs = parse_documents(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: Service\nmetadata: {name: b}\n",
        )
        .unwrap();
        assert_eq!(docs.len(), 2, "the empty document is skipped");
        assert_eq!(docs[1]["kind"], "Service");
        for (yaml, want) in [
            ("kind: [", "the YAML does not parse"),
            ("", "nothing to create"),
            ("# only a comment\n", "nothing to create"),
            ("just text", "the document is not an object"),
            (
                "kind: ConfigMap\nmetadata: {name: x}",
                "the document has no apiVersion",
            ),
            (
                "apiVersion: v1\nmetadata: {name: x}",
                "the document has no kind",
            ),
            ("apiVersion: v1\nkind: ''\n", "the document has no kind"),
            (
                "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\n",
                "document 2 of 2 has no kind",
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\n---\n- a\n",
                "document 2 of 2 is not an object",
            ),
        ] {
            let err = parse_documents(yaml).unwrap_err();
            assert!(err.message.contains(want), "{yaml:?}: {}", err.message);
        }
    }

    #[test]
    fn api_versions_split_into_group_and_version() {
        assert_eq!(split_api_version("v1"), (CORE_GROUP, "v1"));
        assert_eq!(split_api_version("apps/v1"), ("apps", "v1"));
        assert_eq!(
            split_api_version("policy.karmada.io/v1alpha1"),
            ("policy.karmada.io", "v1alpha1")
        );
    }

    #[test]
    fn kinds_resolve_through_discovery_or_name_what_is_near() {
        let served = served();
        for (api_version, kind, want) in [
            ("v1", "ConfigMap", Ok("configmaps")),
            ("apps/v1", "Deployment", Ok("deployments")),
            ("example.io/v1beta1", "Widget", Ok("widgets")),
            ("cluster.karmada.io/v1alpha1", "Cluster", Ok("clusters")),
            (
                "apps/v1",
                "Deploymnt",
                Err(
                    "kind Deploymnt is not served by karmada-a in apps/v1; did you mean Deployment (apps/v1)?",
                ),
            ),
            ("v1", "configmap", Err("did you mean ConfigMap (v1)?")),
            (
                "v1",
                "Foo",
                Err(
                    "kind Foo is not served by karmada-a in v1; v1 serves ConfigMap, Namespace, Service",
                ),
            ),
            (
                "apps/v2",
                "Deployment",
                Err(
                    "kind Deployment is not served as apps/v2 by karmada-a; it is served as apps/v1",
                ),
            ),
            (
                "v1",
                "Widget",
                Err("it is served as example.io/v1, example.io/v1beta1"),
            ),
            (
                "example.io/v2",
                "Gizmo",
                Err(
                    "apiVersion example.io/v2 is not served by karmada-a; group example.io serves v1, v1beta1",
                ),
            ),
            (
                "foo.io/v1",
                "Foo",
                Err("apiVersion foo.io/v1 is not served by karmada-a (no group foo.io)"),
            ),
            (
                "foo.io/v1",
                "Propagationpolicy",
                Err("did you mean PropagationPolicy (policy.karmada.io/v1alpha1)?"),
            ),
        ] {
            let got =
                resolve_kind(&served, "karmada-a", api_version, kind).map(|r| r.resource.as_str());
            match want {
                Ok(plural) => assert_eq!(got, Ok(plural), "{api_version} {kind}"),
                Err(part) => {
                    let message = got.unwrap_err();
                    assert!(message.contains(part), "{api_version} {kind}: {message}");
                }
            }
        }
    }

    #[test]
    fn edit_distance_table() {
        for (a, b, d) in [
            ("", "", 0),
            ("abc", "abc", 0),
            ("deploymnt", "deployment", 1),
            ("kitten", "sitting", 3),
            ("", "abc", 3),
        ] {
            assert_eq!(distance(a, b), d, "{a} {b}");
        }
    }

    #[test]
    fn plans_choose_the_call_and_the_namespace() {
        let docs = parse_documents(concat!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n",
            "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: other}\n---\n",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\n",
            "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: m}\nspec: {syncMode: Push}\n---\n",
            "apiVersion: example.io/v1\nkind: Widget\nmetadata: {generateName: w-}\n",
        ))
        .unwrap();
        let planned = plan("karmada-a", docs, &served(), "demo").unwrap();
        let calls: Vec<(String, Option<String>, &str)> = planned
            .iter()
            .map(|p| match &p.call {
                CreateCall::Object(r) => (
                    format!("{}/{}/{}", r.group, r.version, r.resource),
                    r.namespace.clone(),
                    p.describe.as_str(),
                ),
                CreateCall::Cluster(r) => {
                    assert_eq!(r.instance, "karmada-a");
                    assert_eq!(r.body["metadata"]["name"], "m");
                    ("cluster".to_owned(), None, p.describe.as_str())
                }
            })
            .collect();
        assert_eq!(
            calls,
            [
                (
                    "core/v1/configmaps".to_owned(),
                    Some("demo".to_owned()),
                    "document 1 of 5, ConfigMap demo/c"
                ),
                (
                    "core/v1/services".to_owned(),
                    Some("other".to_owned()),
                    "document 2 of 5, Service other/s"
                ),
                (
                    "core/v1/namespaces".to_owned(),
                    None,
                    "document 3 of 5, Namespace team"
                ),
                ("cluster".to_owned(), None, "document 4 of 5, Cluster m"),
                (
                    "example.io/v1/widgets".to_owned(),
                    Some("demo".to_owned()),
                    "document 5 of 5, Widget demo/w-…"
                ),
            ]
        );
        // One unknown kind refuses the whole paste.
        let docs = parse_documents(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\napiVersion: v1\nkind: Foo\n",
        )
        .unwrap();
        let err = plan("karmada-a", docs, &served(), "demo").unwrap_err();
        assert!(
            err.message
                .starts_with("document 2 of 2: kind Foo is not served by karmada-a"),
            "{}",
            err.message
        );
    }

    #[test]
    fn links_and_skeletons_per_resource() {
        let served = served();
        let by = |plural: &str| served.iter().find(|r| r.resource == plural).unwrap();
        for (plural, ns, name, want) in [
            (
                "configmaps",
                Some("demo"),
                "c",
                "/ui/instances/karmada-a/resources/core/v1/configmaps/c?ns=demo",
            ),
            (
                "namespaces",
                None,
                "n",
                "/ui/instances/karmada-a/resources/core/v1/namespaces/n",
            ),
            (
                "deployments",
                Some("demo"),
                "web",
                "/ui/instances/karmada-a/namespaces/demo/workloads/web",
            ),
            (
                "clusters",
                None,
                "m 1",
                "/ui/instances/karmada-a/members/m%201",
            ),
            (
                "widgets",
                Some("demo"),
                "w",
                "/ui/instances/karmada-a/resources/example.io/v1/widgets/w?ns=demo",
            ),
        ] {
            assert_eq!(object_link("karmada-a", by(plural), ns, name), want);
        }
        assert_eq!(
            skeleton(by("configmaps"), "demo"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new-configmap\n  namespace: demo\n"
        );
        assert_eq!(
            skeleton(by("clusters"), "demo"),
            "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: new-cluster\nspec:\n  syncMode: Push\n"
        );
        // Every skeleton is a document the form accepts and resolves back to its resource.
        for r in &served {
            let docs = parse_documents(&skeleton(r, "demo")).unwrap();
            let planned = plan("karmada-a", docs, &served, "x").unwrap();
            assert_eq!(&planned[0].resource, r);
        }
    }

    const EVIL: &str = "<script>alert(1)</script>\"'&";

    #[test]
    fn the_page_escapes_everything_and_hides_the_form_from_viewers() {
        let viewer = Viewer {
            user: EVIL,
            csrf: EVIL,
        };
        let err = ApiError::invalid(EVIL)
            .with_detail(json!({"fieldViolations": [{"field": EVIL, "description": EVIL}]}));
        let outcome = Outcome {
            created: vec![Created {
                api_version: EVIL.into(),
                kind: EVIL.into(),
                namespace: Some(EVIL.into()),
                name: EVIL.into(),
                link: EVIL.into(),
            }],
            refused: Some((EVIL.into(), err)),
        };
        let form = CreateForm {
            namespace: EVIL.into(),
            yaml: EVIL.into(),
        };
        let html = create_page(&viewer, EVIL, &form, &outcome, true);
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(html.contains("InvalidArgument"));
        assert!(html.contains("id=\"created\"") && html.contains("refused-document"));
        let hidden = create_page(&viewer, "a", &form, &Outcome::default(), false);
        assert!(hidden.contains("class=\"notice\""));
        assert!(!hidden.contains("<form") || !hidden.contains("id=\"yaml\""));
    }
}
