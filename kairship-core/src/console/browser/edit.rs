//! Editing an object as YAML with server-side apply (field manager [`FIELD_MANAGER`]): a
//! conflict with other managers is shown field by field, and "force" applies again taking
//! those fields over. Deleting an object after a page naming it (kind, namespace/name,
//! instance) where its name is typed to confirm. Both forms carry the session's CSRF token
//! and are refused (403) to a caller the API would refuse.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use super::detail::{LAST_APPLIED, get_object};
use super::{NamespaceQuery, ObjectPath, ResourcePath};
use crate::access::{InstanceResource, Verb};
use crate::api::{ApiError, DeleteObjectRequest, PatchObjectRequest, PatchType};
use crate::console::html::{Html, url_segment};
use crate::console::page::{Viewer, csrf_field, error_box, page};
use crate::console::request::{
    Shared, SignedForm, SignedIn, allowed, error_answer, forbidden, html, see_other, status_of,
};

/// The field manager of the console's applies.
pub const FIELD_MANAGER: &str = "kairship-console";

/// One field another manager owns that an apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The manager, as the API server names it (`"kubectl" using apps/v1`).
    pub manager: String,
    /// The field path (`.spec.replicas`).
    pub field: String,
}

/// The conflicts of an apply refused for conflicts, read from the API server's message:
/// `Apply failed with 1 conflict: conflict with "m" using v1: .data.k`, or for several
/// `Apply failed with N conflicts: conflicts with "m":\n- .a\n- .b` per manager
/// (k8s.io/apimachinery pkg/util/managedfields/internal/conflict.go `NewConflictError`, and
/// sigs.k8s.io/structured-merge-diff merge/conflict.go `Conflicts.Error`). Empty for any
/// other message.
pub fn apply_conflicts(message: &str) -> Vec<Conflict> {
    let Some((_, rest)) = message.split_once("Apply failed with ") else {
        return Vec::new();
    };
    let Some((_, rest)) = rest.split_once(": ") else {
        return Vec::new();
    };
    if let Some(one) = rest.strip_prefix("conflict with ") {
        // The manager is quoted; the field follows the first ": " after it.
        let Some(end) = closing_quote(one) else {
            return Vec::new();
        };
        let (manager_part, after) = one.split_at(end + 1);
        return match after.split_once(": ") {
            Some((using, field)) => vec![Conflict {
                manager: format!("{manager_part}{using}"),
                field: field.trim().to_owned(),
            }],
            None => Vec::new(),
        };
    }
    let mut conflicts = Vec::new();
    let mut manager: Option<String> = None;
    for line in rest.lines() {
        if let Some(m) = line.strip_prefix("conflicts with ") {
            manager = Some(m.trim_end_matches(':').to_owned());
        } else if let (Some(field), Some(m)) = (line.strip_prefix("- "), &manager) {
            conflicts.push(Conflict {
                manager: m.clone(),
                field: field.trim().to_owned(),
            });
        }
    }
    conflicts
}

/// The index of the quote closing the quoted string `s` starts with (`\"` escapes skipped).
fn closing_quote(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    if bytes.first() != Some(&b'"') {
        return None;
    }
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The object as an apply configuration to start editing from: what the server fills in
/// (status, uid, resourceVersion, timestamps, managed fields) left out, and for a Secret its
/// values too (they are not put into the page; keys given are applied).
pub fn apply_configuration(object: &Value, secret: bool) -> Value {
    let mut config = object.clone();
    if let Some(o) = config.as_object_mut() {
        o.remove("status");
        if secret {
            o.remove("data");
            o.remove("stringData");
        }
    }
    if let Some(meta) = config.get_mut("metadata").and_then(Value::as_object_mut) {
        for server_set in [
            "managedFields",
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "generation",
            "selfLink",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            meta.remove(server_set);
        }
        if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            annotations.remove(LAST_APPLIED);
            if annotations.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    config
}

/// The edit page: the YAML in a form, with the API's refusal and the conflicts when an apply
/// was refused (then "force" is offered).
pub fn edit_page(
    viewer: &Viewer<'_>,
    resource: &ResourcePath,
    namespace: Option<&str>,
    name: &str,
    yaml: &str,
    refused: Option<&ApiError>,
) -> String {
    let mut h = Html::with_capacity(yaml.len() + 4096);
    let back = resource.object_url(namespace, name, "");
    h.open("p", &[])
        .el("a", &[("href", &back)], name)
        .close("p");
    h.open("h1", &[])
        .raw("Edit ")
        .text(&resource.resource)
        .raw(" ")
        .text(name)
        .close("h1");
    let conflicts = refused
        .map(|e| apply_conflicts(&e.message))
        .unwrap_or_default();
    if let Some(err) = refused {
        error_box(&mut h, err);
    }
    if !conflicts.is_empty() {
        h.raw("<p>These fields are managed by someone else; applying takes them over only with force.</p>")
            .raw("<table id=\"conflicts\" class=\"list\"><thead><tr><th>Manager</th><th>Field</th></tr></thead><tbody>");
        for c in &conflicts {
            h.raw("<tr>")
                .el("td", &[("class", "manager")], &c.manager)
                .el("td", &[("class", "field")], &c.field)
                .raw("</tr>");
        }
        h.raw("</tbody></table>");
    }
    if resource.is_secret() {
        h.raw("<p class=\"muted\">A Secret's values are not put into this page: give under <code>data</code> (base64) or <code>stringData</code> the keys to set; keys left out stay as they are unless this console set them before.</p>");
    }
    let action = resource.object_url(namespace, name, "/apply");
    h.open(
        "form",
        &[
            ("method", "post"),
            ("action", &action),
            ("id", "apply-form"),
        ],
    );
    csrf_field(&mut h, viewer.csrf);
    h.raw("<label>YAML (server-side apply as <code>kairship-console</code>) <textarea id=\"yaml\" name=\"yaml\" rows=\"28\" spellcheck=\"false\">")
        .text(yaml)
        .raw("</textarea></label>");
    h.raw("<button id=\"apply\" type=\"submit\">Apply</button> ");
    if !conflicts.is_empty() {
        h.raw("<button id=\"force\" class=\"danger\" type=\"submit\" name=\"force\" value=\"true\">Force apply (take the fields over)</button> ");
    }
    h.el("a", &[("href", &back)], "Cancel");
    h.raw("</form>");
    page(&format!("Edit {name}"), Some(viewer), h)
}

/// Whether the caller may `verb` objects inside the instance; a 403 page otherwise.
async fn may(
    console: &crate::console::request::Console,
    signed: &SignedIn,
    verb: Verb,
    instance: &str,
) -> Result<(), Response> {
    if allowed(
        console,
        &signed.caller,
        verb,
        InstanceResource::Proxy,
        instance,
    )
    .await
    {
        Ok(())
    } else {
        Err(forbidden(&format!(
            "user {:?} may not {} objects of instance {instance}",
            signed.caller.user,
            verb.as_str()
        )))
    }
}

/// The object an edit or delete page is about, for a caller who may `verb` it; else the
/// answer: 403 before the API is asked, or the API's error.
async fn object_for(
    console: &crate::console::request::Console,
    signed: &SignedIn,
    verb: Verb,
    path: &ObjectPath,
    namespace: Option<&str>,
) -> Result<Value, Response> {
    may(console, signed, verb, &path.instance).await?;
    get_object(console.api.as_ref(), &signed.caller, path, namespace)
        .await
        .map_err(|err| error_answer(signed, &path.name, &err))
}

/// `GET …/{name}/edit[?ns=]`: the edit page.
pub(in crate::console) async fn edit_form(
    State(console): State<Shared>,
    Path(path): Path<ObjectPath>,
    Query(query): Query<NamespaceQuery>,
    signed: SignedIn,
) -> Response {
    let namespace = query.namespace();
    let object = match object_for(&console, &signed, Verb::Patch, &path, namespace).await {
        Ok(object) => object,
        Err(answer) => return answer,
    };
    let resource = path.resource();
    let yaml = serde_saphyr::to_string(&apply_configuration(&object, resource.is_secret()))
        .unwrap_or_else(|e| format!("# cannot render as YAML: {e}"));
    html(
        StatusCode::OK,
        edit_page(
            &signed.viewer(),
            &resource,
            namespace,
            &path.name,
            &yaml,
            None,
        ),
    )
}

/// The apply patch the edit form's YAML holds: one object (a YAML mapping).
pub fn apply_patch(yaml: &str) -> Result<Value, ApiError> {
    let value = serde_saphyr::from_str::<Value>(yaml)
        .map_err(|e| ApiError::invalid_field("yaml", format!("not YAML: {e}")))?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(ApiError::invalid_field(
            "yaml",
            "must be one object (a YAML mapping)",
        ))
    }
}

/// `POST …/{name}/apply[?ns=]` (`yaml`, `force`): applies the YAML; back to the object's
/// page, or the edit page with the refusal.
pub(in crate::console) async fn apply(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(path): Path<ObjectPath>,
    Query(query): Query<NamespaceQuery>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    if let Err(r) = may(&console, &signed, Verb::Patch, &path.instance).await {
        return r;
    }
    let resource = path.resource();
    let namespace = query.namespace();
    let yaml = fields.get("yaml").map(String::as_str).unwrap_or_default();
    let force = fields.get("force").is_some_and(|f| f == "true");
    let result = match apply_patch(yaml) {
        Ok(patch) => {
            console
                .api
                .patch_object(
                    &signed.caller,
                    PatchObjectRequest {
                        instance: path.instance.clone(),
                        group: path.group.clone(),
                        version: path.version.clone(),
                        resource: path.resource.clone(),
                        namespace: namespace.map(str::to_owned),
                        name: path.name.clone(),
                        patch_type: PatchType::Apply,
                        patch,
                        field_manager: Some(FIELD_MANAGER.to_owned()),
                        force: Some(force),
                    },
                )
                .await
        }
        Err(err) => Err(err),
    };
    match result {
        Ok(_) => see_other(&headers, &resource.object_url(namespace, &path.name, "")),
        Err(err) => html(
            status_of(&err),
            edit_page(
                &signed.viewer(),
                &resource,
                namespace,
                &path.name,
                yaml,
                Some(&err),
            ),
        ),
    }
}

/// The delete confirmation page, naming the object; `refused`: why the last try failed.
pub fn delete_page(
    viewer: &Viewer<'_>,
    resource: &ResourcePath,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
    refused: Option<&ApiError>,
) -> String {
    let mut h = Html::new();
    let qualified = match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
    };
    h.open("h1", &[])
        .raw("Delete ")
        .text(kind)
        .raw(" ")
        .text(&qualified)
        .close("h1");
    if let Some(err) = refused {
        error_box(&mut h, err);
    }
    h.open("p", &[("id", "delete-what")])
        .raw("This deletes ")
        .text(kind)
        .raw(" <strong>")
        .text(&qualified)
        .raw("</strong> from instance <strong>")
        .text(&resource.instance)
        .raw("</strong>; Karmada then removes it from every member cluster it was propagated to.</p>");
    let action = resource.object_url(namespace, name, "/delete");
    h.open("form", &[("method", "post"), ("action", &action)]);
    csrf_field(&mut h, viewer.csrf);
    h.raw("<label>Type the name <code>")
        .text(name)
        .raw("</code> to confirm <input type=\"text\" id=\"confirm\" name=\"confirm\" autocomplete=\"off\" required autofocus></label>")
        .raw("<button id=\"confirm-delete\" class=\"danger\" type=\"submit\">Delete</button> ");
    let back = resource.object_url(namespace, name, "");
    h.el("a", &[("href", &back)], "Cancel");
    h.raw("</form>");
    page(&format!("Delete {name}"), Some(viewer), h)
}

fn kind_of(object: &Value) -> &str {
    object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("object")
}

/// `GET …/{name}/delete[?ns=]`: the confirmation page.
pub(in crate::console) async fn delete_form(
    State(console): State<Shared>,
    Path(path): Path<ObjectPath>,
    Query(query): Query<NamespaceQuery>,
    signed: SignedIn,
) -> Response {
    let namespace = query.namespace();
    match object_for(&console, &signed, Verb::Delete, &path, namespace).await {
        Ok(object) => html(
            StatusCode::OK,
            delete_page(
                &signed.viewer(),
                &path.resource(),
                kind_of(&object),
                namespace,
                &path.name,
                None,
            ),
        ),
        Err(answer) => answer,
    }
}

/// `POST …/{name}/delete[?ns=]` (`confirm` = the name): deletes; to the resource's list.
pub(in crate::console) async fn delete(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(path): Path<ObjectPath>,
    Query(query): Query<NamespaceQuery>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    if let Err(r) = may(&console, &signed, Verb::Delete, &path.instance).await {
        return r;
    }
    let resource = path.resource();
    let namespace = query.namespace();
    let confirmed = fields.get("confirm").is_some_and(|c| c.trim() == path.name);
    let result = if confirmed {
        console
            .api
            .delete_object(
                &signed.caller,
                DeleteObjectRequest {
                    instance: path.instance.clone(),
                    group: path.group.clone(),
                    version: path.version.clone(),
                    resource: path.resource.clone(),
                    namespace: namespace.map(str::to_owned),
                    name: path.name.clone(),
                },
            )
            .await
            .map(|_| ())
    } else {
        Err(ApiError::invalid_field(
            "confirm",
            format!("type the name {:?} to confirm the deletion", path.name),
        ))
    };
    match result {
        Ok(()) => {
            let mut to = resource.list_url();
            if let Some(ns) = namespace {
                to = format!("{to}?ns={}", url_segment(ns));
            }
            see_other(&headers, &to)
        }
        Err(err) => {
            // Name the object as the confirmation page did (its kind read again).
            let kind = get_object(console.api.as_ref(), &signed.caller, &path, namespace)
                .await
                .map(|o| kind_of(&o).to_owned())
                .unwrap_or_else(|_| path.resource.clone());
            html(
                status_of(&err),
                delete_page(
                    &signed.viewer(),
                    &resource,
                    &kind,
                    namespace,
                    &path.name,
                    Some(&err),
                ),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conflicts_are_read_from_the_api_servers_message() {
        let cases = [
            (
                "karmada-a/core/v1/configmaps: settings: Apply failed with 1 conflict: conflict with \"ops\" using v1: .data.mode",
                vec![("\"ops\" using v1", ".data.mode")],
            ),
            (
                "Apply failed with 1 conflict: conflict with \"ctrl\" with subresource \"status\": .status.ready",
                vec![("\"ctrl\" with subresource \"status\"", ".status.ready")],
            ),
            (
                "x: Apply failed with 3 conflicts: conflicts with \"a\":\n- .spec.replicas\n- .spec.template.spec.containers[name=\"app\"].image\nconflicts with \"b\" using apps/v1:\n- .metadata.labels.tier",
                vec![
                    ("\"a\"", ".spec.replicas"),
                    (
                        "\"a\"",
                        ".spec.template.spec.containers[name=\"app\"].image",
                    ),
                    ("\"b\" using apps/v1", ".metadata.labels.tier"),
                ],
            ),
            (
                "Apply failed with 1 conflict: conflict with \"we\\\"ird\": .data.k",
                vec![("\"we\\\"ird\"", ".data.k")],
            ),
            ("the object has been modified", vec![]),
            ("Apply failed with 1 conflict", vec![]),
        ];
        for (message, want) in cases {
            let got: Vec<(String, String)> = apply_conflicts(message)
                .into_iter()
                .map(|c| (c.manager, c.field))
                .collect();
            let want: Vec<(String, String)> = want
                .into_iter()
                .map(|(m, f)| (m.to_owned(), f.to_owned()))
                .collect();
            assert_eq!(got, want, "{message}");
        }
    }

    #[test]
    fn apply_configuration_drops_what_the_server_sets() {
        let object = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db", "namespace": "demo", "uid": "u", "resourceVersion": "7",
                "creationTimestamp": "t", "managedFields": [], "labels": {"a": "b"},
                "annotations": {LAST_APPLIED: "{}"}},
            "data": {"password": "aHVudGVyMg=="}, "status": {"x": 1}});
        let config = apply_configuration(&object, true);
        assert_eq!(
            config,
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "db", "namespace": "demo", "labels": {"a": "b"}}})
        );
        let cm = apply_configuration(&json!({"kind": "ConfigMap", "data": {"k": "v"}}), false);
        assert_eq!(cm["data"]["k"], "v");
    }

    #[test]
    fn the_edit_page_offers_force_only_after_a_conflict() {
        let viewer = Viewer {
            user: "alice",
            csrf: "c0ffee",
        };
        let resource = ResourcePath {
            instance: "i".into(),
            group: "core".into(),
            version: "v1".into(),
            resource: "configmaps".into(),
        };
        let first = edit_page(
            &viewer,
            &resource,
            Some("demo"),
            "s",
            "data: {k: '</textarea>'}",
            None,
        );
        assert!(!first.contains("id=\"force\""));
        assert!(!first.contains("'</textarea>'"), "{first}");
        let err = ApiError::precondition_failed(
            "resourceVersion",
            "x",
            "x: Apply failed with 1 conflict: conflict with \"ops\" using v1: .data.mode",
        );
        let second = edit_page(
            &viewer,
            &resource,
            Some("demo"),
            "s",
            "data: {}",
            Some(&err),
        );
        assert!(second.contains("id=\"force\""), "{second}");
        assert!(
            second.contains("<td class=\"field\">.data.mode</td>"),
            "{second}"
        );
        assert!(second.contains("&quot;ops&quot; using v1"), "{second}");
    }

    #[test]
    fn the_delete_page_names_the_object() {
        let viewer = Viewer {
            user: "alice",
            csrf: "c0ffee",
        };
        let resource = ResourcePath {
            instance: "karmada-a".into(),
            group: "core".into(),
            version: "v1".into(),
            resource: "configmaps".into(),
        };
        let out = delete_page(
            &viewer,
            &resource,
            "ConfigMap",
            Some("demo"),
            "settings",
            None,
        );
        assert!(
            out.contains(
                "ConfigMap <strong>demo/settings</strong> from instance <strong>karmada-a</strong>"
            ),
            "{out}"
        );
        assert!(out.contains("name=\"_csrf\" value=\"c0ffee\""), "{out}");
    }
}
