//! The Kairship console: server-rendered HTML under `/ui/` on the API server's port, made
//! live with htmx (embedded, like the stylesheet: no page needs the internet).
//!
//! Every page is built from [`KairshipApi`] answers, so the console applies exactly the
//! API's rules: a refused call shows the API's message. The [`Authorizer`] the service uses
//! is asked only to decide which write controls to show (a viewer sees none); the service
//! still checks every call.
//!
//! Sign-in takes a bearer token the API accepts and keeps it in memory behind a random
//! session id ([`session`]); every POST carries the session's CSRF token.

pub mod applications;
pub mod form;
pub mod html;
pub mod instance_forms;
pub mod members;
pub mod members_view;
pub mod session;
pub mod view;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{Html as HtmlBody, IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::Value;

use self::session::{Session, Sessions};
use self::view::{InstanceRow, InstancesQuery, Overview, Viewer};
use crate::access::{Authenticator, Authorizer, Caller, InstanceResource, Verb};
use crate::api::rest::handlers::ServedOverTls;
use crate::api::{
    ApiError, BearerToken, CreateResourceRequest, DeleteInstanceRequest, DeploymentAction,
    DeploymentActionRequest, GetInstanceRequest, GetResourceRequest, GetWorkloadRequest,
    KairshipApi, ListClustersRequest, ListInstancesRequest, ListOptions, ListResourcesRequest,
    ListWorkloadsRequest, ResourceKind, SortBy, SortDir, UpdateResourceRequest,
};

/// The htmx build served at `/ui/assets/htmx.min.js` (htmx.org 2.0.11 from the npm registry,
/// 0BSD: `assets/htmx.LICENSE`).
pub const HTMX_JS: &str = include_str!("assets/htmx.min.js");
/// htmx's license.
pub const HTMX_LICENSE: &str = include_str!("assets/htmx.LICENSE");
/// The console's stylesheet.
pub const CONSOLE_CSS: &str = include_str!("assets/console.css");
/// Workloads per page of the overview.
pub const WORKLOADS_PAGE_SIZE: u32 = 50;
/// Deployments the overview reads to suggest namespaces (any namespace can be typed in).
pub const NAMESPACE_SAMPLE: u32 = 200;

/// The Content-Security-Policy of every console answer: only this origin, no inline script,
/// no eval, no framing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'";

/// What the console is built on.
pub struct ConsoleParts {
    /// The service (the same one REST and gRPC call).
    pub api: Arc<dyn KairshipApi>,
    /// Checks the tokens users sign in with, and each request's session token.
    pub authenticator: Arc<dyn Authenticator>,
    /// The service's authorizer, asked only which write controls to show.
    pub authorizer: Arc<dyn Authorizer>,
    /// How long a session lasts.
    pub session_ttl: Duration,
}

impl std::fmt::Debug for ConsoleParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleParts")
            .field("session_ttl", &self.session_ttl)
            .finish_non_exhaustive()
    }
}

struct Console {
    api: Arc<dyn KairshipApi>,
    authenticator: Arc<dyn Authenticator>,
    authorizer: Arc<dyn Authorizer>,
    sessions: Sessions,
    ttl: Duration,
}

type Shared = Arc<Console>;

/// The console's routes, all under `/ui`.
pub fn routes(parts: ConsoleParts) -> Router {
    let console = Arc::new(Console {
        api: parts.api,
        authenticator: parts.authenticator,
        authorizer: parts.authorizer,
        sessions: Sessions::new(parts.session_ttl),
        ttl: parts.session_ttl,
    });
    let w = "/ui/instances/{instance}/namespaces/{namespace}/workloads/{name}";
    Router::new()
        .route("/ui", get(root))
        .route("/ui/", get(root))
        .route("/ui/signin", get(signin_form).post(signin))
        .route("/ui/signout", post(signout))
        .route("/ui/assets/{file}", get(asset))
        .route("/ui/instances", get(instances))
        .route("/ui/instances/{instance}", get(overview))
        .route(
            "/ui/instances/{instance}/delete",
            get(delete_confirm).post(delete_instance),
        )
        .route(
            "/ui/instances/{instance}/create",
            get(create_form).post(create),
        )
        .route(w, get(workload))
        .route(&format!("{w}/pods"), get(members_view::workload_pods))
        .route(&format!("{w}/{{action}}"), post(workload_action))
        .merge(applications::routes())
        .merge(members::routes())
        .merge(instance_forms::routes())
        .layer(axum::middleware::map_response(security_headers))
        .with_state(console)
}

async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// A signed-in request: the session and who its token identifies now.
struct SignedIn {
    id: String,
    session: Session,
    caller: Caller,
}

impl SignedIn {
    fn viewer(&self) -> Viewer<'_> {
        Viewer {
            user: &self.caller.user,
            csrf: &self.session.csrf,
        }
    }
}

fn is_htmx(headers: &HeaderMap) -> bool {
    headers.contains_key("hx-request")
}

fn see_other(headers: &HeaderMap, to: &str) -> Response {
    if is_htmx(headers) {
        // htmx follows this header with a full page load.
        let mut r = StatusCode::OK.into_response();
        if let Ok(v) = HeaderValue::from_str(to) {
            r.headers_mut().insert("hx-redirect", v);
        }
        return r;
    }
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

fn html(status: StatusCode, body: String) -> Response {
    (status, HtmlBody(body)).into_response()
}

fn status_of(err: &ApiError) -> StatusCode {
    StatusCode::from_u16(err.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// The session of the request, with its token authenticated again (a revoked token ends the
/// session); else a redirect to the sign-in page.
async fn signed_in(console: &Console, headers: &HeaderMap) -> Result<SignedIn, Response> {
    let Some(id) = session::cookie_value(headers, session::COOKIE_NAME) else {
        return Err(see_other(headers, "/ui/signin"));
    };
    let Some(session) = console.sessions.get(id) else {
        return Err(see_other(headers, "/ui/signin"));
    };
    match console
        .authenticator
        .authenticate(session.token.expose())
        .await
    {
        Ok(caller) => Ok(SignedIn {
            id: id.to_owned(),
            session,
            caller,
        }),
        Err(crate::access::AccessError::Unavailable(m)) => Err(html(
            StatusCode::SERVICE_UNAVAILABLE,
            view::error_page(None, "Unavailable", &ApiError::unavailable(m)),
        )),
        Err(_) => {
            console.sessions.remove(id);
            Err(see_other(headers, "/ui/signin"))
        }
    }
}

/// Whether a POST comes from a page of this origin, as far as the browser tells: a cross-site
/// `Sec-Fetch-Site`, or an `Origin` naming another host, is refused even before the CSRF
/// token is looked at (this also guards the sign-in form, which has no session yet).
fn same_origin(headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        return matches!(site, "same-origin" | "none");
    }
    match (
        headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()),
        headers.get(header::HOST).and_then(|v| v.to_str().ok()),
    ) {
        (Some(origin), Some(host)) => origin
            .split_once("://")
            .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host)),
        (Some(_), None) => false,
        (None, _) => true,
    }
}

fn forbidden(message: &str) -> Response {
    html(
        StatusCode::FORBIDDEN,
        view::error_page(None, "Forbidden", &ApiError::forbidden(message)),
    )
}

/// The CSRF check of every POST made in a session: the session's token in the
/// `X-CSRF-Token` header (htmx) or the `_csrf` field (plain forms); the refusal's reason
/// otherwise (answered 403).
fn check_csrf(
    signed: &SignedIn,
    headers: &HeaderMap,
    fields: &HashMap<String, String>,
) -> Result<(), &'static str> {
    if !same_origin(headers) {
        return Err("cross-site request refused");
    }
    let sent = headers
        .get("x-csrf-token")
        .and_then(|v| v.to_str().ok())
        .or_else(|| fields.get("_csrf").map(String::as_str));
    match sent {
        Some(token) if session::secrets_equal(token, &signed.session.csrf) => Ok(()),
        Some(_) => Err("wrong CSRF token: reload the page and try again"),
        None => Err("missing CSRF token"),
    }
}

/// A form POST made in a session: the session (else a redirect to sign in) and the form's
/// fields, once the CSRF check passed (else 403).
async fn signed_post(
    console: &Console,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(SignedIn, HashMap<String, String>), Response> {
    let signed = signed_in(console, headers).await?;
    let fields = form::parse(body);
    check_csrf(&signed, headers, &fields).map_err(forbidden)?;
    Ok((signed, fields))
}

async fn allowed(
    console: &Console,
    caller: &Caller,
    verb: Verb,
    resource: InstanceResource,
    instance: &str,
) -> bool {
    console
        .authorizer
        .allowed(caller, verb, resource, Some(instance))
        .await
        .unwrap_or(false)
}

async fn root(headers: HeaderMap) -> Response {
    see_other(&headers, "/ui/instances")
}

async fn signin_form() -> Response {
    html(StatusCode::OK, view::signin_page(None))
}

async fn signin(
    State(console): State<Shared>,
    tls: Option<axum::Extension<ServedOverTls>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !same_origin(&headers) {
        return forbidden("cross-site request refused");
    }
    let fields = form::parse(&body);
    let token = fields.get("token").map(|t| t.trim()).unwrap_or_default();
    if token.is_empty() {
        return html(
            StatusCode::BAD_REQUEST,
            view::signin_page(Some("Paste a token.")),
        );
    }
    if let Err(err) = console.authenticator.authenticate(token).await {
        let err = ApiError::from(err);
        return html(status_of(&err), view::signin_page(Some(&err.message)));
    }
    let id = match console.sessions.create(BearerToken::new(token)) {
        Ok((id, _)) => id,
        Err(err) => {
            return html(
                StatusCode::INTERNAL_SERVER_ERROR,
                view::signin_page(Some(&err.to_string())),
            );
        }
    };
    let tls = tls.is_some_and(|axum::Extension(t)| t.0);
    let mut r = see_other(&HeaderMap::new(), "/ui/instances");
    if let Ok(v) = HeaderValue::from_str(&session::session_cookie(&id, tls, console.ttl)) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

async fn signout(
    State(console): State<Shared>,
    tls: Option<axum::Extension<ServedOverTls>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let signed = match signed_in(&console, &headers).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if let Err(reason) = check_csrf(&signed, &headers, &form::parse(&body)) {
        return forbidden(reason);
    }
    console.sessions.remove(&signed.id);
    let tls = tls.is_some_and(|axum::Extension(t)| t.0);
    let mut r = see_other(&HeaderMap::new(), "/ui/signin");
    if let Ok(v) = HeaderValue::from_str(&session::cleared_cookie(tls)) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

async fn asset(Path(file): Path<String>) -> Response {
    let (body, content_type) = match file.as_str() {
        "htmx.min.js" => (HTMX_JS, "text/javascript; charset=utf-8"),
        "console.css" => (CONSOLE_CSS, "text/css; charset=utf-8"),
        "htmx.LICENSE" => (HTMX_LICENSE, "text/plain; charset=utf-8"),
        "kubeconfig-file.js" => (
            members::KUBECONFIG_FILE_JS,
            "text/javascript; charset=utf-8",
        ),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        body,
    )
        .into_response()
}

/// The API's list options for the instance query: search and sort always; paging only when no
/// state filter is applied (the state is filtered here, so the console pages what remains).
fn instance_list_options(query: &InstancesQuery) -> ListOptions {
    let filtered = !query.state.is_empty();
    ListOptions {
        page: (!filtered).then(|| query.page()),
        page_size: (!filtered).then(|| query.size()),
        sort_by: match query.sort.as_str() {
            "creationTimestamp" => Some(SortBy::CreationTimestamp),
            "state" => Some(SortBy::State),
            _ => None,
        },
        sort_dir: (query.dir == "desc").then_some(SortDir::Desc),
        name: (!query.q.is_empty()).then(|| query.q.clone()),
        ..ListOptions::default()
    }
}

/// Keeps the items in `state` and returns the page asked for, the total and the pages.
pub fn filter_state_and_page(
    items: Vec<Value>,
    state: &str,
    page: u32,
    size: u32,
) -> (Vec<Value>, u64, u32) {
    let matching: Vec<Value> = items
        .into_iter()
        .filter(|o| {
            o.pointer("/status/state")
                .and_then(Value::as_str)
                .unwrap_or("UNKNOWN")
                == state
        })
        .collect();
    let total = matching.len() as u64;
    let pages = total.div_ceil(u64::from(size.max(1))) as u32;
    let start = (page.max(1) as usize - 1).saturating_mul(size as usize);
    let page_items = matching
        .into_iter()
        .skip(start)
        .take(size as usize)
        .collect();
    (page_items, total, pages)
}

async fn instances(
    State(console): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<InstancesQuery>,
) -> Response {
    let signed = match signed_in(&console, &headers).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let list = match console
        .api
        .list_instances(
            &signed.caller,
            ListInstancesRequest {
                options: instance_list_options(&query),
            },
        )
        .await
    {
        Ok(l) => l,
        Err(err) => {
            return html(
                status_of(&err),
                view::error_page(Some(&signed.viewer()), "Instances", &err),
            );
        }
    };
    let (items, total, pages) = if query.state.is_empty() {
        (list.items, list.pagination.total, list.pagination.pages)
    } else {
        filter_state_and_page(list.items, &query.state, query.page(), query.size())
    };
    let rows = futures::future::join_all(items.iter().map(|o| {
        let name = o
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let console = &console;
        let caller = &signed.caller;
        async move {
            let can_delete = allowed(
                console,
                caller,
                Verb::Delete,
                InstanceResource::Instances,
                name,
            )
            .await;
            InstanceRow::from_object(o, can_delete)
        }
    }))
    .await;
    let can_create = console
        .authorizer
        .allowed(
            &signed.caller,
            Verb::Create,
            InstanceResource::Instances,
            None,
        )
        .await
        .unwrap_or(false);
    html(
        StatusCode::OK,
        view::instances_page(
            &signed.viewer(),
            &query,
            &rows,
            total,
            pages,
            can_create,
            is_htmx(&headers),
        ),
    )
}

/// The overview's query: the namespace of the workloads shown and their page.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct OverviewQuery {
    /// Namespace.
    pub ns: Option<String>,
    /// 1-based page of workloads.
    pub page: Option<u32>,
}

/// Everything the overview of `instance` shows, from the API as `caller`.
pub async fn load_overview(
    api: &dyn KairshipApi,
    caller: &Caller,
    instance: &str,
    query: &OverviewQuery,
) -> Result<Overview, ApiError> {
    let object = api
        .get_instance(
            caller,
            GetInstanceRequest {
                instance: instance.to_owned(),
            },
        )
        .await?;
    let list = |kind| ListResourcesRequest {
        instance: instance.to_owned(),
        kind,
        namespace: None,
        options: ListOptions::default(),
    };
    let (clusters, deployments, pp, cpp, op, cop) = futures::try_join!(
        api.list_clusters(
            caller,
            ListClustersRequest {
                instance: instance.to_owned(),
                options: ListOptions::default(),
            }
        ),
        // Only to suggest namespaces: a bounded sample, not every Deployment.
        api.list_resources(
            caller,
            ListResourcesRequest {
                options: ListOptions {
                    page_size: Some(NAMESPACE_SAMPLE),
                    ..ListOptions::default()
                },
                ..list(ResourceKind::Deployments)
            }
        ),
        api.list_resources(caller, list(ResourceKind::Propagationpolicies)),
        api.list_resources(caller, list(ResourceKind::Clusterpropagationpolicies)),
        api.list_resources(caller, list(ResourceKind::Overridepolicies)),
        api.list_resources(caller, list(ResourceKind::Clusteroverridepolicies)),
    )?;
    let namespaces: Vec<String> = deployments
        .items
        .iter()
        .chain(&pp.items)
        .chain(&op.items)
        .filter_map(|d| d.pointer("/metadata/namespace").and_then(Value::as_str))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let namespace = query
        .ns
        .clone()
        .filter(|n| !n.is_empty())
        .or_else(|| namespaces.first().cloned())
        .unwrap_or_else(|| "default".to_owned());
    let page = query.page.unwrap_or(1).max(1);
    let workloads = api
        .list_workloads(
            caller,
            ListWorkloadsRequest {
                instance: instance.to_owned(),
                namespace: namespace.clone(),
                options: ListOptions {
                    page: Some(page),
                    page_size: Some(WORKLOADS_PAGE_SIZE),
                    ..ListOptions::default()
                },
            },
        )
        .await?;
    let mut namespaces = namespaces;
    if !namespaces.contains(&namespace) {
        namespaces.push(namespace.clone());
    }
    Ok(Overview {
        instance: object,
        clusters: clusters.items,
        namespaces,
        namespace,
        workloads_total: workloads.pagination.total,
        workloads_page: (page, workloads.pagination.pages),
        workloads: workloads.items,
        propagation: pp.items.into_iter().chain(cpp.items).collect(),
        overrides: op.items.into_iter().chain(cop.items).collect(),
        can_write: false,
        recent_events: Some(members_view::load_events(api, caller, instance, None, None).await),
    })
}

async fn overview(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(instance): Path<String>,
    Query(query): Query<OverviewQuery>,
) -> Response {
    let signed = match signed_in(&console, &headers).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    match load_overview(console.api.as_ref(), &signed.caller, &instance, &query).await {
        Ok(mut o) => {
            o.can_write = allowed(
                &console,
                &signed.caller,
                Verb::Create,
                InstanceResource::Proxy,
                &instance,
            )
            .await;
            html(
                StatusCode::OK,
                view::overview_page(&signed.viewer(), &instance, &o, is_htmx(&headers)),
            )
        }
        Err(err) => html(
            status_of(&err),
            view::error_page(Some(&signed.viewer()), &instance, &err),
        ),
    }
}

async fn delete_confirm(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(instance): Path<String>,
) -> Response {
    let signed = match signed_in(&console, &headers).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    html(
        StatusCode::OK,
        view::delete_instance_page(&signed.viewer(), &instance, None),
    )
}

async fn delete_instance(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(instance): Path<String>,
    body: Bytes,
) -> Response {
    let signed = match signed_in(&console, &headers).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if let Err(reason) = check_csrf(&signed, &headers, &form::parse(&body)) {
        return forbidden(reason);
    }
    match console
        .api
        .delete_instance(
            &signed.caller,
            DeleteInstanceRequest {
                instance: instance.clone(),
                force: form::parse(&body).get("force").is_some_and(|v| v == "true"),
            },
        )
        .await
    {
        Ok(_) => see_other(&headers, "/ui/instances"),
        Err(err) => html(
            status_of(&err),
            view::delete_instance_page(&signed.viewer(), &instance, Some(&err)),
        ),
    }
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct CreateQuery {
    ns: Option<String>,
}

async fn create_form(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(instance): Path<String>,
    Query(query): Query<CreateQuery>,
) -> Response {
    let signed = match signed_in(&console, &headers).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let ns = query.ns.unwrap_or_else(|| "default".to_owned());
    html(
        StatusCode::OK,
        view::create_page(&signed.viewer(), &instance, &ns, "", None),
    )
}

/// The create call a YAML document asks for: its kind (by `kind`) and namespace (the
/// document's, else `default_namespace`, none for cluster-scoped kinds). Only the shape
/// needed to route it is read here; the API checks everything else.
pub fn create_request(
    instance: &str,
    yaml: &str,
    default_namespace: &str,
) -> Result<CreateResourceRequest, ApiError> {
    let body: Value = serde_saphyr::from_str(yaml)
        .map_err(|e| ApiError::invalid(format!("the YAML does not parse: {e}")))?;
    let Some(kind_name) = body.get("kind").and_then(Value::as_str) else {
        return Err(ApiError::invalid_field(
            "kind",
            "the object has no kind: give `kind` (Deployment, ConfigMap, ...)",
        ));
    };
    let Some(kind) = ResourceKind::ALL
        .into_iter()
        .find(|k| k.kind() == kind_name)
    else {
        let known: Vec<&str> = ResourceKind::ALL.iter().map(|k| k.kind()).collect();
        return Err(ApiError::invalid_field(
            "kind",
            format!(
                "kind {kind_name} is not served; one of: {}",
                known.join(", ")
            ),
        ));
    };
    let namespace = kind.namespaced().then(|| {
        body.pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or(default_namespace)
            .to_owned()
    });
    Ok(CreateResourceRequest {
        instance: instance.to_owned(),
        kind,
        namespace,
        body,
    })
}

async fn create(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(instance): Path<String>,
    body: Bytes,
) -> Response {
    let (signed, fields) = match signed_post(&console, &headers, &body).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let yaml = fields.get("yaml").map(String::as_str).unwrap_or_default();
    let ns = fields
        .get("namespace")
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    let result = match create_request(&instance, yaml, ns) {
        Ok(req) => {
            let kind = req.kind;
            let namespace = req.namespace.clone();
            console
                .api
                .create_resource(&signed.caller, req)
                .await
                .map(|o| (kind, namespace, o))
        }
        Err(err) => Err(err),
    };
    match result {
        Ok((ResourceKind::Deployments, Some(ns), object)) => {
            let name = object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let to = format!(
                "/ui/instances/{}/namespaces/{}/workloads/{}",
                html::url_segment(&instance),
                html::url_segment(&ns),
                html::url_segment(name)
            );
            see_other(&headers, &to)
        }
        Ok((_, ns, _)) => {
            let to = format!(
                "/ui/instances/{}?ns={}",
                html::url_segment(&instance),
                html::url_segment(ns.as_deref().unwrap_or_default())
            );
            see_other(&headers, &to)
        }
        Err(err) => html(
            status_of(&err),
            view::create_page(&signed.viewer(), &instance, ns, yaml, Some(&err)),
        ),
    }
}

async fn get_workload(
    console: &Console,
    caller: &Caller,
    instance: &str,
    namespace: &str,
    name: &str,
) -> Result<crate::api::Workload, ApiError> {
    console
        .api
        .get_workload(
            caller,
            GetWorkloadRequest {
                instance: instance.to_owned(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            },
        )
        .await
}

async fn workload(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path((instance, namespace, name)): Path<(String, String, String)>,
) -> Response {
    let signed = match signed_in(&console, &headers).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let w = match get_workload(&console, &signed.caller, &instance, &namespace, &name).await {
        Ok(w) => w,
        Err(err) => {
            return html(
                status_of(&err),
                view::error_page(Some(&signed.viewer()), &name, &err),
            );
        }
    };
    let can_write = allowed(
        &console,
        &signed.caller,
        Verb::Patch,
        InstanceResource::Proxy,
        &instance,
    )
    .await;
    let body = if is_htmx(&headers) {
        view::workload_live(&instance, &w, can_write, &signed.session.csrf, None).finish()
    } else {
        let api = console.api.as_ref();
        let object = Some(("apps", "v1", "deployments", name.as_str()));
        let (pods, events) = futures::join!(
            members_view::load_pods(api, &signed.caller, &instance, &namespace, &name),
            members_view::load_events(api, &signed.caller, &instance, Some(&namespace), object),
        );
        let refresh = members_view::pods_url(&instance, &namespace, &name);
        let mut members = members_view::pods_section(&refresh, &pods);
        members.append(members_view::events_section(&events));
        view::workload_page(&signed.viewer(), &instance, &w, can_write, members)
    };
    html(StatusCode::OK, body)
}

/// Scales a Deployment by replacing it with `spec.replicas` changed (the API has no scale
/// call; the replace carries the read `resourceVersion`, so a concurrent change is refused).
async fn scale(
    console: &Console,
    caller: &Caller,
    instance: &str,
    namespace: &str,
    name: &str,
    replicas: &str,
) -> Result<(), ApiError> {
    let replicas: i64 = replicas
        .trim()
        .parse()
        .ok()
        .filter(|r| *r >= 0)
        .ok_or_else(|| {
            ApiError::invalid_field("replicas", "replicas must be a whole number >= 0")
        })?;
    let mut object = console
        .api
        .get_resource(
            caller,
            GetResourceRequest {
                instance: instance.to_owned(),
                kind: ResourceKind::Deployments,
                namespace: Some(namespace.to_owned()),
                name: name.to_owned(),
            },
        )
        .await?;
    object["spec"]["replicas"] = Value::from(replicas);
    if let Some(o) = object.as_object_mut() {
        o.remove("status");
    }
    console
        .api
        .update_resource(
            caller,
            UpdateResourceRequest {
                instance: instance.to_owned(),
                kind: ResourceKind::Deployments,
                namespace: Some(namespace.to_owned()),
                name: name.to_owned(),
                body: object,
            },
        )
        .await
        .map(|_| ())
}

async fn workload_action(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path((instance, namespace, name, action)): Path<(String, String, String, String)>,
    body: Bytes,
) -> Response {
    let (signed, fields) = match signed_post(&console, &headers, &body).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let result = if action == "scale" {
        let replicas = fields.get("replicas").map(String::as_str).unwrap_or("");
        scale(
            &console,
            &signed.caller,
            &instance,
            &namespace,
            &name,
            replicas,
        )
        .await
        .map(|()| format!("Scaled to {} replicas.", replicas.trim()))
    } else if let Some(a) = DeploymentAction::parse(&action) {
        console
            .api
            .deployment_action(
                &signed.caller,
                DeploymentActionRequest {
                    instance: instance.clone(),
                    namespace: namespace.clone(),
                    name: name.clone(),
                    action: a,
                },
            )
            .await
            .map(|_| match a {
                DeploymentAction::Pause => "Paused.".to_owned(),
                DeploymentAction::Resume => "Resumed.".to_owned(),
                DeploymentAction::Restart => "Restart requested: a new rollout begins.".to_owned(),
            })
    } else {
        Err(ApiError::not_found(format!("no action {action}")))
    };
    if !is_htmx(&headers) {
        return match result {
            Ok(_) => {
                let to = format!(
                    "/ui/instances/{}/namespaces/{}/workloads/{}",
                    html::url_segment(&instance),
                    html::url_segment(&namespace),
                    html::url_segment(&name)
                );
                see_other(&headers, &to)
            }
            Err(err) => html(
                status_of(&err),
                view::error_page(Some(&signed.viewer()), &name, &err),
            ),
        };
    }
    let status = result.as_ref().err().map_or(StatusCode::OK, status_of);
    let can_write = allowed(
        &console,
        &signed.caller,
        Verb::Patch,
        InstanceResource::Proxy,
        &instance,
    )
    .await;
    match get_workload(&console, &signed.caller, &instance, &namespace, &name).await {
        Ok(w) => {
            let shown = result.as_ref().map(String::as_str);
            html(
                status,
                view::workload_live(&instance, &w, can_write, &signed.session.csrf, Some(shown))
                    .finish(),
            )
        }
        Err(err) => {
            let mut h = html::Html::new();
            view::error_box(&mut h, result.as_ref().err().unwrap_or(&err));
            html(status_of(&err), h.finish())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn same_origin_table() {
        for (site, origin, host, want) in [
            (None, None, Some("127.0.0.1:8443"), true),
            (Some("same-origin"), None, None, true),
            (Some("none"), None, None, true),
            (Some("cross-site"), None, None, false),
            (Some("same-site"), None, None, false),
            (
                None,
                Some("http://127.0.0.1:8443"),
                Some("127.0.0.1:8443"),
                true,
            ),
            (
                None,
                Some("https://evil.example"),
                Some("127.0.0.1:8443"),
                false,
            ),
            (None, Some("null"), Some("127.0.0.1:8443"), false),
        ] {
            let mut h = HeaderMap::new();
            if let Some(s) = site {
                h.insert("sec-fetch-site", s.parse().unwrap());
            }
            if let Some(o) = origin {
                h.insert(header::ORIGIN, o.parse().unwrap());
            }
            if let Some(o) = host {
                h.insert(header::HOST, o.parse().unwrap());
            }
            assert_eq!(same_origin(&h), want, "{site:?} {origin:?} {host:?}");
        }
    }

    #[test]
    fn create_request_table() {
        let r = create_request("a", "kind: Deployment\nmetadata: {name: web}\n", "demo").unwrap();
        assert_eq!(r.kind, ResourceKind::Deployments);
        assert_eq!(r.namespace.as_deref(), Some("demo"));
        let r = create_request(
            "a",
            "kind: ConfigMap\nmetadata: {name: c, namespace: other}\n",
            "demo",
        )
        .unwrap();
        assert_eq!(r.namespace.as_deref(), Some("other"));
        let r = create_request(
            "a",
            "kind: ClusterPropagationPolicy\nmetadata: {name: p}\n",
            "demo",
        )
        .unwrap();
        assert_eq!(r.namespace, None);
        for (yaml, want) in [
            ("kind: [", "the YAML does not parse"),
            ("metadata: {name: x}", "has no kind"),
            ("kind: Pod", "kind Pod is not served"),
        ] {
            let err = create_request("a", yaml, "demo").unwrap_err();
            assert!(err.message.contains(want), "{yaml}: {}", err.message);
        }
    }

    #[test]
    fn state_filter_pages_what_remains() {
        let items: Vec<Value> = (0..5)
            .map(|i| {
                json!({"metadata": {"name": format!("i{i}")},
                       "status": {"state": if i % 2 == 0 { "RUNNING" } else { "UNAVAILABLE" }}})
            })
            .chain([json!({"metadata": {"name": "none"}})])
            .collect();
        let (page, total, pages) = filter_state_and_page(items.clone(), "RUNNING", 2, 2);
        assert_eq!((total, pages), (3, 2));
        assert_eq!(page.len(), 1);
        assert_eq!(page[0]["metadata"]["name"], "i4");
        let (page, total, _) = filter_state_and_page(items, "UNKNOWN", 1, 20);
        assert_eq!((page.len(), total), (1, 1));
    }

    #[test]
    fn list_options_follow_the_query() {
        let q = InstancesQuery {
            q: "kar".into(),
            sort: "state".into(),
            dir: "desc".into(),
            page: Some(2),
            ..Default::default()
        };
        let o = instance_list_options(&q);
        assert_eq!(o.name.as_deref(), Some("kar"));
        assert_eq!(o.sort_by, Some(SortBy::State));
        assert_eq!(o.sort_dir, Some(SortDir::Desc));
        assert_eq!((o.page, o.page_size), (Some(2), Some(20)));
        let filtered = instance_list_options(&InstancesQuery {
            state: "RUNNING".into(),
            ..Default::default()
        });
        assert_eq!((filtered.page, filtered.page_size), (None, None));
    }
}
