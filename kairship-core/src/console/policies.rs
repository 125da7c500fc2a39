//! Karmada policies with a guided form: `/ui/instances/{i}/policies/new?kind=` creates a
//! (Cluster)PropagationPolicy or (Cluster)OverridePolicy from a form, and
//! `/ui/instances/{i}/policies/{kind}/{name}/edit?ns=` edits a stored one with the same form.
//!
//! The form's buttons post it back (CSRF-checked): **Preview YAML** shows the object the form
//! would create (or, editing, store) and creates nothing, **Preview placement** asks the API's
//! placement preview where the policy would put a workload, **More rows** adds blank rows, and
//! **Create** / **Save** write it through the generic resource calls. An edit is a three-way
//! merge ([`crate::console::merge`]) of what the user changed in the form into the stored
//! object, sent as an update carrying the resourceVersion the form was filled from: fields the
//! form does not show are kept, and a change made meanwhile is refused rather than
//! overwritten. A caller who may not write gets a notice instead of the form, and their POST
//! is answered 403.
//!
//! The pure parts: [`selector`] (label selector text), [`fields`] (kinds, rows, problems),
//! [`propagation`] and [`overrides`] (form <-> policy), [`form`] (either form, the edit, the
//! preview's request) and [`view`] (the page).

pub mod fields;
pub mod form;
pub mod overrides;
pub mod propagation;
pub mod selector;
pub mod view;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::routing::get;
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::Value;

use self::fields::{POLICY_API_VERSION, PolicyKind, Posted};
use self::form::{PolicyForm, edited_policy, not_shown, preview_request};
use self::view::{Mode, Outcome, edit_url, policy_page};
use super::request::{
    Console, Shared, SignedForm, SignedIn, allowed, error_answer, html, see_other, status_of,
};
use crate::access::{InstanceResource, Verb};
use crate::api::{
    ApiError, CreateObjectRequest, GetObjectRequest, PreviewPlacementRequest, UpdateObjectRequest,
};

pub use self::view::{edit_link, kind_of_resource, list_link, overview_link};

/// The console routes of this module (merged into [`super::routes`]).
pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route(
            "/ui/instances/{instance}/policies/new",
            get(new_form).post(new_submit),
        )
        .route(
            "/ui/instances/{instance}/policies/{kind}/{name}/edit",
            get(edit_form).post(edit_submit),
        )
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NewQuery {
    kind: Option<String>,
    ns: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct EditQuery {
    ns: Option<String>,
    done: Option<String>,
}

fn unknown_kind(signed: &SignedIn, kind: &str) -> Response {
    error_answer(
        signed,
        "Unknown policy kind",
        &ApiError::not_found(format!(
            "{kind:?} is not a policy kind: PropagationPolicy, ClusterPropagationPolicy, OverridePolicy or ClusterOverridePolicy"
        )),
    )
}

async fn may(console: &Console, signed: &SignedIn, verb: Verb, instance: &str) -> bool {
    allowed(
        console,
        &signed.caller,
        verb,
        InstanceResource::Proxy,
        instance,
    )
    .await
}

fn group_version() -> (String, String) {
    let (group, version) = POLICY_API_VERSION
        .split_once('/')
        .unwrap_or((POLICY_API_VERSION, ""));
    (group.to_owned(), version.to_owned())
}

fn namespace_of(kind: PolicyKind, namespace: &str) -> Option<String> {
    (kind.namespaced() && !namespace.is_empty()).then(|| namespace.to_owned())
}

async fn new_form(
    State(console): State<Shared>,
    Path(instance): Path<String>,
    Query(query): Query<NewQuery>,
    signed: SignedIn,
) -> Response {
    let kind_text = query.kind.unwrap_or_else(|| "PropagationPolicy".into());
    let Some(kind) = PolicyKind::parse(&kind_text) else {
        return unknown_kind(&signed, &kind_text);
    };
    let can_write = may(&console, &signed, Verb::Create, &instance).await;
    let ns = query.ns.unwrap_or_else(|| "default".into());
    let form = PolicyForm::blank(kind, &ns);
    html(
        StatusCode::OK,
        policy_page(
            &signed.viewer(),
            &instance,
            &form,
            &Mode::New,
            can_write,
            None,
            None,
        ),
    )
}

/// The placement preview of a propagation form.
async fn placement_outcome(
    console: &Console,
    signed: &SignedIn,
    instance: &str,
    form: &PolicyForm,
) -> Result<crate::api::PlacementPreview, ApiError> {
    let PolicyForm::Propagation(f) = form else {
        return Err(ApiError::invalid(
            "override policies place nothing: the placement preview is for propagation policies",
        ));
    };
    let preview = preview_request(f)?;
    console
        .api
        .preview_placement(
            &signed.caller,
            PreviewPlacementRequest {
                instance: instance.to_owned(),
                preview,
            },
        )
        .await
}

async fn new_submit(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(instance): Path<String>,
    Query(query): Query<NewQuery>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    let kind_text = query.kind.unwrap_or_else(|| "PropagationPolicy".into());
    let Some(kind) = PolicyKind::parse(&kind_text) else {
        return unknown_kind(&signed, &kind_text);
    };
    let viewer = signed.viewer();
    let mut form = PolicyForm::posted(kind, Posted(&fields));
    if !may(&console, &signed, Verb::Create, &instance).await {
        let err = ApiError::forbidden(format!(
            "{} may not create objects in instance {instance:?}",
            signed.caller.user
        ));
        return html(
            StatusCode::FORBIDDEN,
            policy_page(
                &viewer,
                &instance,
                &form,
                &Mode::New,
                false,
                Some(&err),
                None,
            ),
        );
    }
    let page = |form: &PolicyForm, status, refused: Option<&ApiError>, outcome| {
        html(
            status,
            policy_page(&viewer, &instance, form, &Mode::New, true, refused, outcome),
        )
    };
    match fields.get("op").map(String::as_str) {
        Some("rows") => {
            form.add_rows();
            page(&form, StatusCode::OK, None, None)
        }
        Some("yaml") => match form.to_policy() {
            Ok(policy) => page(&form, StatusCode::OK, None, Some(Outcome::Yaml(&policy))),
            Err(err) => page(&form, status_of(&err), Some(&err), None),
        },
        Some("placement") => {
            let preview = placement_outcome(&console, &signed, &instance, &form).await;
            let status = preview.as_ref().err().map_or(StatusCode::OK, status_of);
            page(&form, status, None, Some(Outcome::Placement(&preview)))
        }
        _ => {
            let created = match form.to_policy() {
                Ok(body) => {
                    let (group, version) = group_version();
                    let (name, namespace) = form.name_and_namespace();
                    let req = CreateObjectRequest {
                        instance: instance.clone(),
                        group,
                        version,
                        resource: kind.resource().to_owned(),
                        namespace: namespace_of(kind, namespace),
                        body,
                    };
                    let name = name.to_owned();
                    console
                        .api
                        .create_object(&signed.caller, req)
                        .await
                        .map(|_| name)
                }
                Err(err) => Err(err),
            };
            match created {
                Ok(name) => {
                    let (_, namespace) = form.name_and_namespace();
                    see_other(
                        &headers,
                        &done_url(&instance, kind, namespace, &name, "created"),
                    )
                }
                Err(err) => page(&form, status_of(&err), Some(&err), None),
            }
        }
    }
}

/// The edit page of a policy after `done` (`created`, `saved`).
fn done_url(instance: &str, kind: PolicyKind, namespace: &str, name: &str, done: &str) -> String {
    let url = edit_url(instance, kind, namespace, name);
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}done={done}")
}

async fn read_policy(
    console: &Console,
    signed: &SignedIn,
    instance: &str,
    kind: PolicyKind,
    namespace: &str,
    name: &str,
) -> Result<Value, ApiError> {
    let (group, version) = group_version();
    console
        .api
        .get_object(
            &signed.caller,
            GetObjectRequest {
                instance: instance.to_owned(),
                group,
                version,
                resource: kind.resource().to_owned(),
                namespace: namespace_of(kind, namespace),
                name: name.to_owned(),
            },
        )
        .await
}

async fn edit_form(
    State(console): State<Shared>,
    Path((instance, kind_text, name)): Path<(String, String, String)>,
    Query(query): Query<EditQuery>,
    signed: SignedIn,
) -> Response {
    let Some(kind) = PolicyKind::parse(&kind_text) else {
        return unknown_kind(&signed, &kind_text);
    };
    let namespace = query.ns.unwrap_or_default();
    let stored = match read_policy(&console, &signed, &instance, kind, &namespace, &name).await {
        Ok(stored) => stored,
        Err(err) => return error_answer(&signed, &name, &err),
    };
    let can_write = may(&console, &signed, Verb::Update, &instance).await;
    let form = PolicyForm::of_policy(kind, &stored);
    let mode = Mode::Edit {
        resource_version: fields::text_at(&stored, "/metadata/resourceVersion"),
        kept: not_shown(&stored, &form),
    };
    let done = match query.done.as_deref() {
        Some("created") => Some(Outcome::Done("Created.")),
        Some("saved") => Some(Outcome::Done("Saved.")),
        _ => None,
    };
    html(
        StatusCode::OK,
        policy_page(
            &signed.viewer(),
            &instance,
            &form,
            &mode,
            can_write,
            None,
            done,
        ),
    )
}

async fn edit_submit(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path((instance, kind_text, name)): Path<(String, String, String)>,
    Query(query): Query<EditQuery>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    let Some(kind) = PolicyKind::parse(&kind_text) else {
        return unknown_kind(&signed, &kind_text);
    };
    let namespace = if kind.namespaced() {
        query.ns.unwrap_or_default()
    } else {
        String::new()
    };
    // The object edited is the one the URL names, whatever the form says.
    let mut posted = fields.clone();
    posted.insert("name".into(), name.clone());
    posted.insert("namespace".into(), namespace.clone());
    let mut form = PolicyForm::posted(kind, Posted(&posted));
    let resource_version = Posted(&fields).get("resource_version");
    let mode = Mode::Edit {
        resource_version: resource_version.clone(),
        kept: Vec::new(),
    };
    let viewer = signed.viewer();
    if !may(&console, &signed, Verb::Update, &instance).await {
        let err = ApiError::forbidden(format!(
            "{} may not change objects in instance {instance:?}",
            signed.caller.user
        ));
        return html(
            StatusCode::FORBIDDEN,
            policy_page(&viewer, &instance, &form, &mode, false, Some(&err), None),
        );
    }
    let page = |form: &PolicyForm, status, refused: Option<&ApiError>, outcome| {
        html(
            status,
            policy_page(&viewer, &instance, form, &mode, true, refused, outcome),
        )
    };
    let op = fields.get("op").map(String::as_str);
    match op {
        Some("rows") => {
            form.add_rows();
            page(&form, StatusCode::OK, None, None)
        }
        Some("placement") => {
            let preview = placement_outcome(&console, &signed, &instance, &form).await;
            let status = preview.as_ref().err().map_or(StatusCode::OK, status_of);
            page(&form, status, None, Some(Outcome::Placement(&preview)))
        }
        _ => {
            let merged =
                match read_policy(&console, &signed, &instance, kind, &namespace, &name).await {
                    Ok(stored) => edited_policy(&stored, &form, &resource_version),
                    Err(err) => Err(err),
                };
            let merged = match merged {
                Ok(merged) => merged,
                Err(err) => return page(&form, status_of(&err), Some(&err), None),
            };
            if op == Some("yaml") {
                return page(&form, StatusCode::OK, None, Some(Outcome::Yaml(&merged)));
            }
            let (group, version) = group_version();
            let req = UpdateObjectRequest {
                instance: instance.clone(),
                group,
                version,
                resource: kind.resource().to_owned(),
                namespace: namespace_of(kind, &namespace),
                name: name.clone(),
                body: merged,
            };
            match console.api.update_object(&signed.caller, req).await {
                Ok(_) => see_other(
                    &headers,
                    &done_url(&instance, kind, &namespace, &name, "saved"),
                ),
                Err(err) => page(&form, status_of(&err), Some(&err), None),
            }
        }
    }
}
