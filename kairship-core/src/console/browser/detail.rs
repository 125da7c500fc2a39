//! An object's page in the browser: its YAML (managed fields left out, as `kubectl get -o yaml`
//! does by default), the Events about it, its owners (linked), and where Karmada propagated
//! it: its ResourceBinding's (or ClusterResourceBinding's) clusters and each cluster's
//! aggregated status, for any kind. A Secret's values are replaced by their sizes until
//! "reveal" is posted for it.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use base64::Engine as _;
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use super::list::secret_keys;
use super::{NamespaceQuery, ObjectPath, ResourcePath};
use crate::access::{Caller, InstanceResource, Verb};
use crate::api::{ApiError, Code, GetObjectRequest, KairshipApi, ObjectList};
use crate::console::html::{Html, url_segment};
use crate::console::page::{Viewer, csrf_field, error_box, live_error, live_open, page};
use crate::console::request::{
    Shared, SignedForm, SignedIn, allowed, error_answer, html, is_htmx, status_of,
};
use crate::console::workloads::load_events;
use crate::console::workloads::view::events_section;

/// The annotation `kubectl apply` keeps the last applied object in (a Secret's values too).
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Where an object was propagated.
#[derive(Clone, Debug)]
pub enum Propagation {
    /// Its binding (ResourceBinding or ClusterResourceBinding), and the clusters its policy
    /// could use that got nothing.
    Bound(Value, Vec<String>),
    /// No binding of this object: not propagated (yet).
    None,
    /// The binding could not be read.
    Failed(ApiError),
}

/// Everything an object's page shows.
#[derive(Debug)]
pub struct Detail {
    /// The object as the API returned it.
    pub object: Value,
    /// Events about it.
    pub events: Result<ObjectList, ApiError>,
    /// Its binding.
    pub propagation: Propagation,
    /// Whether the caller may change it (apply).
    pub can_write: bool,
    /// Whether the caller may delete it.
    pub can_delete: bool,
}

/// `(group, version)` of an `apiVersion` (`core` for the core group).
pub fn group_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => (crate::api::CORE_GROUP, api_version),
    }
}

/// The plural of a kind when discovery is not at hand (owner references carry kinds only):
/// lower case, `-s` → `-ses`, `-y` → `-ies`, else `-s`, as Kubernetes guesses it
/// (k8s.io/apimachinery pkg/api/meta/restmapper.go `UnsafeGuessKindToResource`).
pub fn guess_plural(kind: &str) -> String {
    let singular = kind.to_lowercase();
    if singular == "endpoints" {
        return singular;
    }
    if singular.ends_with('s') {
        format!("{singular}es")
    } else if let Some(stem) = singular.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{singular}s")
    }
}

/// The object as the page shows it: without `metadata.managedFields`; for a Secret, every
/// value (`data`, `stringData`, the last-applied annotation) replaced by what it is, never
/// what it holds.
pub fn shown_object(object: &Value, secret: bool) -> Value {
    let mut shown = object.clone();
    if let Some(meta) = shown.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    if !secret {
        return shown;
    }
    if let Some(data) = shown.get_mut("data").and_then(Value::as_object_mut) {
        let sizes: std::collections::HashMap<String, usize> =
            secret_keys(object).into_iter().collect();
        for (key, value) in data.iter_mut() {
            let size = sizes.get(key).copied().unwrap_or(0);
            *value = Value::from(format!("<hidden: {size} bytes>"));
        }
    }
    if let Some(data) = shown.get_mut("stringData").and_then(Value::as_object_mut) {
        for value in data.values_mut() {
            *value = Value::from("<hidden>");
        }
    }
    if let Some(annotations) = shown
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
        && let Some(value) = annotations.get_mut(LAST_APPLIED)
    {
        *value = Value::from("<hidden>");
    }
    shown
}

/// A Secret's values, decoded: text as it is, other bytes as base64.
pub fn secret_values(secret: &Value) -> Vec<(String, String)> {
    let Some(data) = secret.get("data").and_then(Value::as_object) else {
        return Vec::new();
    };
    data.iter()
        .map(|(k, v)| {
            let encoded = v.as_str().unwrap_or_default();
            let shown = match base64::engine::general_purpose::STANDARD.decode(encoded) {
                Ok(bytes) => String::from_utf8(bytes).unwrap_or_else(|_| encoded.to_owned()),
                Err(_) => encoded.to_owned(),
            };
            (k.clone(), shown)
        })
        .collect()
}

/// Reads the object at `path` in `namespace`.
pub(in crate::console) async fn get_object(
    api: &dyn KairshipApi,
    caller: &Caller,
    path: &ObjectPath,
    namespace: Option<&str>,
) -> Result<Value, ApiError> {
    api.get_object(
        caller,
        GetObjectRequest {
            instance: path.instance.clone(),
            group: path.group.clone(),
            version: path.version.clone(),
            resource: path.resource.clone(),
            namespace: namespace.map(str::to_owned),
            name: path.name.clone(),
        },
    )
    .await
}

/// The binding Karmada made for `object` (named `<name>-<kind>`, checked to point at it).
async fn load_propagation(
    api: &dyn KairshipApi,
    caller: &Caller,
    instance: &str,
    object: &Value,
) -> Propagation {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
    let (kind, name, namespace) = (
        text("/kind"),
        text("/metadata/name"),
        Some(text("/metadata/namespace")).filter(|ns| !ns.is_empty()),
    );
    if kind.is_empty() || name.is_empty() {
        return Propagation::None;
    }
    let resource = if namespace.is_some() {
        crate::api::resource_bindings_resource()
    } else {
        crate::api::cluster_resource_bindings_resource()
    };
    let got = api
        .get_object(
            caller,
            GetObjectRequest {
                instance: instance.to_owned(),
                group: resource.group,
                version: resource.version,
                resource: resource.plural,
                namespace: namespace.map(str::to_owned),
                name: crate::models::work::binding_name(kind, name),
            },
        )
        .await;
    match got {
        Ok(binding) => {
            let points_here = binding
                .pointer("/spec/resource/kind")
                .and_then(Value::as_str)
                == Some(kind)
                && binding
                    .pointer("/spec/resource/name")
                    .and_then(Value::as_str)
                    == Some(name);
            if points_here {
                let unplaced = unplaced_of_binding(api, caller, instance, object, &binding).await;
                Propagation::Bound(binding, unplaced)
            } else {
                Propagation::None
            }
        }
        Err(err) if err.code == Code::NotFound => Propagation::None,
        Err(err) => Propagation::Failed(err),
    }
}

/// The clusters the policy that placed `object` (by `binding`) could use but gave nothing.
async fn unplaced_of_binding(
    api: &dyn KairshipApi,
    caller: &Caller,
    instance: &str,
    object: &Value,
    binding: &Value,
) -> Vec<String> {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
    let policy = serde_json::from_value::<crate::models::work::ResourceBinding>(binding.clone())
        .ok()
        .and_then(|b| crate::api::workloads::view::policy_of(&b));
    let (group, version) = group_version(text("/apiVersion"));
    let placed: Vec<String> = crate::console::pictures::binding_bars(binding, &[])
        .into_iter()
        .map(|b| b.cluster)
        .collect();
    let reference = crate::api::placement::WorkloadReference {
        group: group.to_owned(),
        version: version.to_owned(),
        resource: guess_plural(text("/kind")),
        namespace: Some(text("/metadata/namespace"))
            .filter(|ns| !ns.is_empty())
            .map(str::to_owned),
        name: text("/metadata/name").to_owned(),
    };
    crate::console::workloads::unplaced_clusters(
        api,
        caller,
        instance,
        policy.as_deref(),
        reference,
        &placed,
    )
    .await
}

/// Everything the page of `object` shows, read as `caller`.
pub(in crate::console) async fn load_detail(
    console: &crate::console::request::Console,
    caller: &Caller,
    path: &ObjectPath,
    object: Value,
) -> Detail {
    let api = console.api.as_ref();
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty());
    let about = Some((
        path.group.as_str(),
        path.version.as_str(),
        path.resource.as_str(),
        path.name.as_str(),
    ));
    let instance = path.instance.as_str();
    let (events, propagation, can_write, can_delete) = futures::join!(
        load_events(api, caller, instance, namespace, about),
        load_propagation(api, caller, instance, &object),
        allowed(
            console,
            caller,
            Verb::Patch,
            InstanceResource::Proxy,
            instance
        ),
        allowed(
            console,
            caller,
            Verb::Delete,
            InstanceResource::Proxy,
            instance
        ),
    );
    Detail {
        object,
        events,
        propagation,
        can_write,
        can_delete,
    }
}

/// Whether the API refused a namespace because the resource is cluster-scoped (its
/// `BadRequest` detail names the field `namespace`).
pub fn refused_as_cluster_scoped(err: &ApiError) -> bool {
    err.code == Code::InvalidArgument
        && err.message.contains("cluster-scoped")
        && err.details.iter().any(|d| {
            d.get("fieldViolations")
                .and_then(Value::as_array)
                .is_some_and(|v| v.iter().any(|f| f["field"] == "namespace"))
        })
}

/// Where the live part of an object's page refreshes from.
fn refresh_url(path: &ObjectPath, namespace: Option<&str>) -> String {
    path.resource().object_url(namespace, &path.name, "")
}

/// The id of an object page's live part.
const LIVE_ID: &str = "object-live";

async fn respond(
    console: &crate::console::request::Console,
    path: &ObjectPath,
    query: &NamespaceQuery,
    (reveal, refreshing): (bool, bool),
    signed: SignedIn,
) -> Response {
    let api = console.api.as_ref();
    let mut got = get_object(api, &signed.caller, path, query.namespace()).await;
    // An owner reference names no scope: a namespaced object's link to a cluster-scoped
    // owner carries the object's namespace, which the API refuses; the owner is read
    // without it.
    if let Err(err) = &got
        && query.namespace().is_some()
        && refused_as_cluster_scoped(err)
    {
        got = get_object(api, &signed.caller, path, None).await;
    }
    let object = match got {
        Ok(o) => o,
        Err(err) if refreshing => {
            let refresh = refresh_url(path, query.namespace());
            return html(status_of(&err), live_error(LIVE_ID, &refresh, &err));
        }
        Err(err) => return error_answer(&signed, &path.name, &err),
    };
    let detail = load_detail(console, &signed.caller, path, object).await;
    html(
        StatusCode::OK,
        detail_page(&signed.viewer(), &path.resource(), &detail, reveal),
    )
}

/// `GET …/resources/{g}/{v}/{r}/{name}[?ns=]`: the object's page (also its live part's
/// refresh, answered whole: htmx picks the part out).
pub(in crate::console) async fn detail(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(path): Path<ObjectPath>,
    Query(query): Query<NamespaceQuery>,
    signed: SignedIn,
) -> Response {
    respond(&console, &path, &query, (false, is_htmx(&headers)), signed).await
}

/// `POST …/secrets/{name}/reveal[?ns=]`: the Secret's page with its values, for this one
/// answer (a read: whoever may read the Secret through the API may reveal it).
pub(in crate::console) async fn reveal(
    State(console): State<Shared>,
    Path(path): Path<ObjectPath>,
    Query(query): Query<NamespaceQuery>,
    SignedForm { signed, .. }: SignedForm,
) -> Response {
    if !path.resource().is_secret() {
        let err = ApiError::not_found("only a Secret's values are revealed");
        return error_answer(&signed, &path.name, &err);
    }
    respond(&console, &path, &query, (true, false), signed).await
}

fn owners_section(h: &mut Html, instance: &str, object: &Value) {
    let owners = object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    h.raw("<section><h2>Owners</h2>");
    if owners.is_empty() {
        h.raw("<p id=\"owners\" class=\"muted\">No owner references.</p></section>");
        return;
    }
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str);
    h.raw("<table id=\"owners\" class=\"list\"><thead><tr><th>Kind</th><th>Name</th><th>Controller</th></tr></thead><tbody>");
    for owner in &owners {
        let text = |k: &str| owner.get(k).and_then(Value::as_str).unwrap_or("");
        let (group, version) = group_version(text("apiVersion"));
        let href = ResourcePath {
            instance: instance.to_owned(),
            group: group.to_owned(),
            version: version.to_owned(),
            resource: guess_plural(text("kind")),
        }
        .object_url(namespace, text("name"), "");
        let controller = owner.get("controller").and_then(Value::as_bool) == Some(true);
        h.raw("<tr>")
            .el("td", &[], text("kind"))
            .open("td", &[])
            .el("a", &[("href", &href)], text("name"))
            .close("td")
            .el("td", &[], if controller { "yes" } else { "no" })
            .raw("</tr>");
    }
    h.raw("</tbody></table></section>");
}

/// At most this many characters of one cluster's status are shown.
const STATUS_CHARS: usize = 300;

fn propagation_section(h: &mut Html, instance: &str, propagation: &Propagation) {
    h.raw("<section id=\"propagation\"><h2>Propagation</h2>");
    let binding = match propagation {
        Propagation::None => {
            h.raw("<p class=\"muted\">Not propagated: no ResourceBinding or ClusterResourceBinding points at this object (no policy selects it yet).</p></section>");
            return;
        }
        Propagation::Failed(err) => {
            error_box(h, err);
            h.raw("</section>");
            return;
        }
        Propagation::Bound(b, unplaced) => (b, unplaced),
    };
    let (binding, unplaced) = binding;
    let text = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let (kind, name, namespace) = (
        text(binding, "/kind"),
        text(binding, "/metadata/name"),
        text(binding, "/metadata/namespace"),
    );
    let (group, version) = group_version(
        binding["apiVersion"]
            .as_str()
            .unwrap_or("work.karmada.io/v1alpha2"),
    );
    let href = ResourcePath {
        instance: instance.to_owned(),
        group: group.to_owned(),
        version: version.to_owned(),
        resource: guess_plural(&kind),
    }
    .object_url(Some(&namespace), &name, "");
    h.open("p", &[])
        .text(&kind)
        .raw(" ")
        .el("a", &[("href", &href), ("id", "binding")], &name)
        .close("p");
    let mut clusters: Vec<String> = Vec::new();
    let scheduled = binding
        .pointer("/spec/clusters")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let aggregated = binding
        .pointer("/status/aggregatedStatus")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for c in scheduled
        .iter()
        .filter_map(|c| c.get("name"))
        .chain(aggregated.iter().filter_map(|a| a.get("clusterName")))
        .filter_map(Value::as_str)
    {
        if !clusters.iter().any(|x| x == c) {
            clusters.push(c.to_owned());
        }
    }
    h.raw("<table id=\"placement\" class=\"list\"><thead><tr><th>Cluster</th><th>Replicas</th><th>Applied</th><th>Health</th><th>Status</th></tr></thead><tbody>");
    if clusters.is_empty() {
        h.raw("<tr><td colspan=\"5\" class=\"muted\">Not scheduled to any cluster yet.</td></tr>");
    }
    for cluster in &clusters {
        let spec = scheduled
            .iter()
            .find(|c| c.get("name").and_then(Value::as_str) == Some(cluster));
        let status = aggregated
            .iter()
            .find(|a| a.get("clusterName").and_then(Value::as_str) == Some(cluster));
        let replicas = spec
            .and_then(|c| c.get("replicas"))
            .and_then(Value::as_i64)
            .map_or_else(|| "–".to_owned(), |r| r.to_string());
        let applied = match status
            .and_then(|s| s.get("applied"))
            .and_then(Value::as_bool)
        {
            Some(true) => "yes",
            Some(false) => "no",
            None => "–",
        };
        let health = status
            .and_then(|s| s.get("health"))
            .and_then(Value::as_str)
            .unwrap_or("–");
        let mut detail = status
            .and_then(|s| s.get("status"))
            .map(Value::to_string)
            .unwrap_or_default();
        if let Some(message) = status
            .and_then(|s| s.get("appliedMessage"))
            .and_then(Value::as_str)
        {
            detail = format!("{message} {detail}");
        }
        if detail.chars().count() > STATUS_CHARS {
            detail = detail.chars().take(STATUS_CHARS).collect::<String>() + "…";
        }
        h.open("tr", &[("data-cluster", cluster)])
            .el("td", &[("class", "cluster")], cluster)
            .el("td", &[("class", "replicas")], &replicas)
            .el("td", &[("class", "applied")], applied)
            .el("td", &[("class", "health")], health)
            .el("td", &[("class", "status")], detail.trim())
            .raw("</tr>");
    }
    h.raw("</tbody></table>");
    h.append(crate::console::pictures::placement_picture(
        "placement-picture",
        &crate::console::pictures::binding_bars(binding, unplaced),
    ));
    h.raw("</section>");
}

/// The object's page; `reveal`: a Secret's values are shown.
pub fn detail_page(
    viewer: &Viewer<'_>,
    resource: &ResourcePath,
    d: &Detail,
    reveal: bool,
) -> String {
    let object = &d.object;
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
    let (kind, name) = (text("/kind"), text("/metadata/name"));
    let namespace = Some(text("/metadata/namespace")).filter(|ns| !ns.is_empty());
    let secret = resource.is_secret();
    let mut h = Html::with_capacity(8192);
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
        .raw(" › ")
        .el("a", &[("href", &resource.list_url())], &resource.resource)
        .close("p");
    h.open("h1", &[]).text(kind).raw(" ").text(name).close("h1");
    h.raw("<p class=\"toolbar\">");
    if d.can_write {
        let edit = resource.object_url(namespace, name, "/edit");
        h.el(
            "a",
            &[("href", &edit), ("class", "button"), ("id", "edit")],
            "Edit YAML",
        );
        h.raw(" ");
        crate::console::policies::edit_link(
            &mut h,
            &resource.instance,
            &resource.group,
            &resource.resource,
            namespace,
            name,
        );
    }
    if d.can_delete {
        let delete = resource.object_url(namespace, name, "/delete");
        h.el(
            "a",
            &[
                ("href", &delete),
                ("class", "button danger"),
                ("id", "delete"),
            ],
            "Delete",
        );
    }
    h.raw("</p>");
    if secret {
        h.raw("<section id=\"secret\"><h2>Values</h2>");
        if reveal {
            h.raw("<table id=\"secret-values\" class=\"list\"><thead><tr><th>Key</th><th>Value</th></tr></thead><tbody>");
            for (key, value) in secret_values(object) {
                h.raw("<tr>")
                    .el("td", &[], &key)
                    .open("td", &[])
                    .el("pre", &[("class", "yaml")], &value)
                    .close("td")
                    .raw("</tr>");
            }
            h.raw("</tbody></table>");
        } else {
            h.raw("<table id=\"secret-keys\" class=\"list\"><thead><tr><th>Key</th><th>Size</th></tr></thead><tbody>");
            for (key, size) in secret_keys(object) {
                h.raw("<tr>")
                    .el("td", &[], &key)
                    .open("td", &[])
                    .num(size)
                    .raw(" bytes</td></tr>");
            }
            h.raw("</tbody></table>");
            let action = resource.object_url(namespace, name, "/reveal");
            h.open("form", &[("method", "post"), ("action", &action)]);
            csrf_field(&mut h, viewer.csrf);
            h.raw("<button id=\"reveal\" type=\"submit\">Reveal values</button></form>");
        }
        h.raw("</section>");
    }
    // Facts, owners, propagation, events and YAML refresh themselves; the controls above
    // and a revealed Secret's values do not.
    let refresh = resource.object_url(namespace, name, "");
    live_open(&mut h, "div", LIVE_ID, &refresh);
    h.raw("<dl class=\"facts\" id=\"facts\"><dt>Instance</dt>")
        .el("dd", &[], &resource.instance)
        .raw("<dt>Namespace</dt>")
        .el("dd", &[], namespace.unwrap_or("(cluster-scoped)"))
        .raw("<dt>API version</dt>")
        .el("dd", &[], text("/apiVersion"))
        .raw("<dt>Created</dt>")
        .el("dd", &[], text("/metadata/creationTimestamp"))
        .raw("<dt>Labels</dt><dd>");
    if let Some(labels) = object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
    {
        for (k, v) in labels {
            h.el(
                "span",
                &[("class", "chip")],
                &format!("{k}={}", v.as_str().unwrap_or_default()),
            );
        }
    }
    h.raw("</dd></dl>");
    owners_section(&mut h, &resource.instance, object);
    propagation_section(&mut h, &resource.instance, &d.propagation);
    h.append(events_section(&d.events));
    h.raw("<section><h2>YAML</h2>");
    let yaml = serde_saphyr::to_string(&shown_object(object, secret))
        .unwrap_or_else(|e| format!("# cannot render as YAML: {e}"));
    h.el("pre", &[("id", "yaml"), ("class", "yaml")], &yaml);
    h.raw("</section></div>");
    page(&format!("{kind} {name}"), Some(viewer), h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn viewer() -> Viewer<'static> {
        Viewer {
            user: "alice",
            csrf: "c0ffee",
        }
    }

    fn core_resource(plural: &str) -> ResourcePath {
        ResourcePath {
            instance: "i".into(),
            group: "core".into(),
            version: "v1".into(),
            resource: plural.into(),
        }
    }

    fn secret_resource() -> ResourcePath {
        core_resource("secrets")
    }

    fn secret() -> Value {
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db", "namespace": "demo",
                "annotations": {LAST_APPLIED: "{\"data\":{\"password\":\"aHVudGVyMg==\"}}"},
                "managedFields": [{"manager": "kubectl"}]},
            "data": {"password": "aHVudGVyMg=="}, "stringData": {"token": "plain-token"}})
    }

    fn detail(object: Value, can_write: bool) -> Detail {
        Detail {
            object,
            events: Ok(ObjectList::default()),
            propagation: Propagation::None,
            can_write,
            can_delete: can_write,
        }
    }

    #[test]
    fn plural_guess_table() {
        for (kind, want) in [
            ("Deployment", "deployments"),
            ("ReplicaSet", "replicasets"),
            ("Ingress", "ingresses"),
            ("NetworkPolicy", "networkpolicies"),
            ("PropagationPolicy", "propagationpolicies"),
            ("Endpoints", "endpoints"),
        ] {
            assert_eq!(guess_plural(kind), want, "{kind}");
        }
        assert_eq!(group_version("apps/v1"), ("apps", "v1"));
        assert_eq!(group_version("v1"), ("core", "v1"));
    }

    #[test]
    fn cluster_scoped_refusals_are_told_apart() {
        let scoped = ApiError::invalid_field(
            "namespace",
            "namespaces are cluster-scoped; \"demo\" cannot hold them",
        );
        assert!(refused_as_cluster_scoped(&scoped));
        let other = ApiError::invalid_field("namespace", "not a valid name");
        assert!(!refused_as_cluster_scoped(&other));
        let unrelated = ApiError::not_found("configmaps \"x\" not found (cluster-scoped)");
        assert!(!refused_as_cluster_scoped(&unrelated));
    }

    #[test]
    fn a_secret_page_holds_no_value_until_revealed() {
        let d = detail(secret(), true);
        let hidden = detail_page(&viewer(), &secret_resource(), &d, false);
        for value in ["aHVudGVyMg", "hunter2", "plain-token"] {
            assert!(!hidden.contains(value), "{value} in {hidden}");
        }
        assert!(
            hidden.contains(
                "<hidden: 7 bytes>"
                    .replace('<', "&lt;")
                    .replace('>', "&gt;")
                    .as_str()
            )
        );
        assert!(hidden.contains("id=\"reveal\""), "{hidden}");
        assert!(!hidden.contains("managedFields"), "{hidden}");
        let shown = detail_page(&viewer(), &secret_resource(), &d, true);
        assert!(shown.contains("hunter2"), "{shown}");
        assert!(!shown.contains("id=\"reveal\""), "{shown}");
    }

    #[test]
    fn the_object_refreshes_itself_but_not_its_controls() {
        let resource = core_resource("configmaps");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "web", "namespace": "demo"}, "data": {"k": "v"}});
        let out = detail_page(&viewer(), &resource, &detail(cm, true), false);
        let live = out
            .find("<div id=\"object-live\" class=\"live\" hx-get=\"/ui/instances/i/resources/core/v1/configmaps/web?ns=demo\"")
            .expect("a live part");
        assert!(out.find("id=\"edit\"").unwrap() < live, "{out}");
        for part in ["id=\"facts\"", "id=\"owners\"", "id=\"yaml\""] {
            assert!(out[live..].contains(part), "{part} in {out}");
        }
        let secret = detail_page(&viewer(), &secret_resource(), &detail(secret(), true), true);
        let live = secret.find("id=\"object-live\"").unwrap();
        assert!(
            secret.find("id=\"secret-values\"").unwrap() < live,
            "revealed values are not fetched again: {secret}"
        );
    }

    #[test]
    fn write_controls_only_for_writers() {
        let resource = core_resource("configmaps");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "<b>x</b>", "namespace": "demo"}, "data": {"k": "<script>"}});
        let writer = detail_page(&viewer(), &resource, &detail(cm.clone(), true), false);
        assert!(writer.contains("id=\"edit\"") && writer.contains("id=\"delete\""));
        let reader = detail_page(&viewer(), &resource, &detail(cm, false), false);
        assert!(!reader.contains("id=\"edit\"") && !reader.contains("id=\"delete\""));
        assert!(
            !reader.contains("<script>") && !reader.contains("<b>x"),
            "{reader}"
        );
    }

    #[test]
    fn propagation_lists_scheduled_and_reporting_clusters() {
        let binding = json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "web-config-configmap", "namespace": "demo"},
            "spec": {"resource": {"kind": "ConfigMap", "name": "web-config"},
                "clusters": [{"name": "a-east"}, {"name": "a-west", "replicas": 2}]},
            "status": {"aggregatedStatus": [
                {"clusterName": "a-east", "applied": true, "health": "Healthy"},
                {"clusterName": "a-west", "applied": false, "appliedMessage": "<oops>"}]}});
        let mut h = Html::new();
        propagation_section(
            &mut h,
            "i",
            &Propagation::Bound(binding, vec!["spare".into()]),
        );
        let out = h.finish();
        assert!(out.contains("data-cluster=\"a-east\""), "{out}");
        assert!(out.contains("<td class=\"replicas\">2</td>"), "{out}");
        assert!(out.contains("<td class=\"health\">Healthy</td>"), "{out}");
        // The picture: a-west's 2 replicas, and the spare cluster the policy could use, empty.
        assert!(
            out.contains("data-cluster=\"a-west\" data-scheduled=\"2\""),
            "{out}"
        );
        assert!(
            out.contains(
                "data-cluster=\"spare\" data-scheduled=\"\" data-ready=\"\" data-placed=\"false\""
            ),
            "{out}"
        );
        assert!(
            out.contains("&lt;oops&gt;") && !out.contains("<oops>"),
            "{out}"
        );
        assert!(
            out.contains(
                "/resources/work.karmada.io/v1alpha2/resourcebindings/web-config-configmap?ns=demo"
            ),
            "{out}"
        );
    }
}
