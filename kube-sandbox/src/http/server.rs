//! The HTTP surface: URL parsing, authentication and authorization, injected faults, and the
//! verbs of every resource, answering as kube-apiserver answers.

use crate::apiserver::api::{DeleteOptions, PatchType, WriteContext};
use crate::apiserver::audit::{AuditEvent, AuditLog};
use crate::apiserver::auth::{self, Attributes, UserInfo};
use crate::apiserver::discovery;
use crate::apiserver::error::ApiError;
use crate::apiserver::faults::FaultAction;
use crate::apiserver::field_validation::{self, FieldValidation, Write};
use crate::apiserver::impersonation;
use crate::apiserver::pki::PeerCertificate;
use crate::apiserver::resources::ResourceType;
use crate::apiserver::state::ClusterState;
use crate::apiserver::store::Stored;
use crate::apiserver::watch::{self, WatchRequest, encode_object};
use crate::apiserver::{bootstrap_token, certificates};
use crate::http::negotiate;
use crate::sim::Simulator;
use crate::validation::selectors::{self, FieldSelector, LabelSelector};
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The router serving one cluster's API.
pub fn router(sim: Arc<Simulator>) -> Router {
    Router::new().fallback(handle).with_state(sim)
}

/// A parsed resource URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    /// API group, empty for core.
    pub group: String,
    /// Version.
    pub version: String,
    /// Namespace from the URL.
    pub namespace: Option<String>,
    /// Plural resource.
    pub resource: String,
    /// Object name.
    pub name: Option<String>,
    /// Subresource.
    pub subresource: Option<String>,
    /// The legacy `/watch/` prefix was used.
    pub watch_prefix: bool,
}

/// What a URL addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `/version`
    Version,
    /// `/healthz`, `/readyz`, `/livez` (the check's name)
    Health(String),
    /// `/api`
    CoreVersions,
    /// `/apis`
    Groups,
    /// `/apis/{group}`
    Group(String),
    /// `/api/v1`, `/apis/{group}/{version}`
    Resources(String, String),
    /// Anything under a group version.
    Resource(ResourcePath),
    /// `/openapi/v2`, `/openapi/v3`, `/openapi/v3/{group version}`: the path after `/openapi/`.
    OpenApi(String),
    /// `/.well-known/openid-configuration`: the service-account issuer's discovery document.
    OpenIdConfiguration,
    /// `/openid/v1/jwks`: the service-account issuer's public keys.
    Jwks,
}

/// Parses a request path into what it addresses.
pub fn parse_path(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["version"] => return Some(Target::Version),
        [".well-known", "openid-configuration"] => return Some(Target::OpenIdConfiguration),
        ["openid", "v1", "jwks"] => return Some(Target::Jwks),
        [check @ ("healthz" | "readyz" | "livez"), ..] => {
            return Some(Target::Health(check.to_string()));
        }
        ["api"] => return Some(Target::CoreVersions),
        ["openapi", rest @ ..] => return Some(Target::OpenApi(rest.join("/"))),
        ["apis"] => return Some(Target::Groups),
        ["apis", g] => return Some(Target::Group(g.to_string())),
        ["api", v] => return Some(Target::Resources(String::new(), v.to_string())),
        ["apis", g, v] => return Some(Target::Resources(g.to_string(), v.to_string())),
        _ => {}
    }
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let (watch_prefix, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, rest),
    };
    if rest.iter().any(|s| s.is_empty()) {
        return None;
    }
    let (namespace, rest) = match rest {
        ["namespaces", ns, resource, tail @ ..] if !matches!(*resource, "status" | "finalize") => {
            (Some(ns.to_string()), {
                let mut v = vec![*resource];
                v.extend_from_slice(tail);
                v
            })
        }
        other => (None, other.to_vec()),
    };
    let (resource, name, subresource) = match rest.as_slice() {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(n.to_string()), None),
        [r, n, s] => (*r, Some(n.to_string()), Some(s.to_string())),
        // The proxy subresource carries a path of its own.
        [r, n, "proxy", ..] => (*r, Some(n.to_string()), Some("proxy".to_string())),
        _ => return None,
    };
    Some(Target::Resource(ResourcePath {
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        resource: resource.to_string(),
        name,
        subresource,
        watch_prefix,
    }))
}

/// The 404 of a path no route matches: the API's NotFound Status under a served group
/// version's root (go-restful's service error handler there), Go's plain `404 page not found`
/// elsewhere (kubernetes `staging/src/k8s.io/apiserver/pkg/server/handler.go`, `director`).
fn not_served(state: &ClusterState, path: &str) -> ApiError {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let served = match segs.as_slice() {
        ["api", version, ..] => state.serves_group_version("", version),
        ["apis", group, version, ..] => state.serves_group_version(group, version),
        _ => false,
    };
    if served {
        ApiError::no_route()
    } else {
        ApiError::page_not_found()
    }
}

fn json_response(code: StatusCode, body: Bytes) -> Response {
    let mut response = (code, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The issuer's documents, with the type and caching kube-apiserver gives them (kubernetes
/// `pkg/routes/openidmetadata.go`: `mimeJWKS`, `cacheControl`).
fn issuer_document(content_type: &'static str, value: &Value) -> Response {
    let mut response = value_response(StatusCode::OK, value);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    response
}

fn value_response(code: StatusCode, value: &Value) -> Response {
    json_response(code, Bytes::from(value.to_string()))
}

fn object_response(
    code: StatusCode,
    stored: &Stored,
    rt: &ResourceType,
    version: &str,
) -> Response {
    json_response(code, encode_object(stored, rt, version))
}

fn bearer(req: &Request) -> Option<String> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))?;
    Some(token.trim().to_string())
}

fn verb_of(method: &Method, path: &ResourcePath, query: &HashMap<String, String>) -> &'static str {
    let watch = path.watch_prefix || query.get("watch").is_some_and(|w| w == "true" || w == "1");
    match (method.as_str(), path.name.is_some()) {
        ("GET", false) if watch => "watch",
        ("GET", true) if watch => "watch",
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", false) => "deletecollection",
        ("DELETE", true) => "delete",
        _ => "unknown",
    }
}

fn parse_query(query: Option<&str>) -> HashMap<String, String> {
    query
        .map(|q| {
            form_urlencoded_pairs(q)
                .into_iter()
                .collect::<HashMap<String, String>>()
        })
        .unwrap_or_default()
}

fn form_urlencoded_pairs(q: &str) -> Vec<(String, String)> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(q).unwrap_or_default()
}

async fn handle(State(sim): State<Arc<Simulator>>, req: Request) -> Response {
    let answer = negotiate::answer(req.headers());
    let gzip = crate::http::gzip::accepts_gzip(req.headers());
    let response = match serve(sim, req).await {
        Ok(response) => response,
        Err(err) => err.into_response(),
    };
    let response = match answer {
        crate::protobuf::Answer::Json => response,
        crate::protobuf::Answer::Protobuf => negotiate::into_protobuf(response).await,
    };
    if gzip {
        crate::http::gzip::compress(response).await
    } else {
        response
    }
}

async fn serve(sim: Arc<Simulator>, req: Request) -> Result<Response, ApiError> {
    let state = sim.state.clone();
    let path = req.uri().path().to_string();
    let query = parse_query(req.uri().query());
    let target = parse_path(&path).ok_or_else(|| not_served(&state, &path))?;

    // A client certificate signed by the cluster CA authenticates first, as x509 does in
    // kube-apiserver's authenticator chain; then bearer tokens.
    let certificate_user = match req.extensions().get::<PeerCertificate>() {
        Some(PeerCertificate::Verified(user)) => Some(user.clone()),
        _ => None,
    };
    let user = match (certificate_user, bearer(&req)) {
        (Some(user), _) => user,
        (None, Some(token)) => state
            .auth
            .authenticate(&token)
            .or_else(|| bootstrap_token::authenticate(&state.store, &token))
            .ok_or_else(ApiError::unauthorized)?,
        (None, None) => return Err(ApiError::unauthorized()),
    };
    let (user, impersonated_by) = impersonation::acting_user(&state.store, user, req.headers())?;

    let (resource, verb) = match &target {
        Target::Resource(p) => {
            let verb = verb_of(req.method(), p, &query);
            state
                .requests
                .record(verb, &p.resource, p.subresource.as_deref());
            (Some(p.resource.clone()), verb)
        }
        _ => (None, "get"),
    };
    if let Some(action) = state.faults.find(resource.as_deref(), verb) {
        match action {
            FaultAction::Status(code) => {
                let mut err = ApiError::internal("injected fault");
                err.code = code;
                err.reason = match code {
                    429 => "TooManyRequests",
                    503 => "ServiceUnavailable",
                    504 => "Timeout",
                    _ => "InternalError",
                };
                return Err(err);
            }
            FaultAction::Delay(d) => tokio::time::sleep(d).await,
            FaultAction::Hang => {
                state.shutdown.cancelled().await;
                return Err(ApiError::unavailable("the server is shutting down"));
            }
        }
    }

    if matches!(target, Target::CoreVersions | Target::Groups)
        && let Some(form) = req
            .headers()
            .get(header::ACCEPT)
            .and_then(|a| a.to_str().ok())
            .and_then(discovery::Aggregated::negotiate)
    {
        let body = discovery::aggregated(
            &state.types_snapshot(),
            target == Target::CoreVersions,
            form,
        );
        let rendered = crate::apiserver::openapi::Rendered::of(&body);
        let etag = format!("\"{}\"", rendered.etag);
        let unchanged = req
            .headers()
            .get(header::IF_NONE_MATCH)
            .is_some_and(|v| v.as_bytes() == etag.as_bytes());
        let mut response = if unchanged {
            (StatusCode::NOT_MODIFIED, Bytes::new()).into_response()
        } else {
            json_response(StatusCode::OK, rendered.body)
        };
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(form.content_type()),
        );
        if let Ok(value) = HeaderValue::from_str(&etag) {
            response.headers_mut().insert(header::ETAG, value);
        }
        response
            .headers_mut()
            .insert(header::VARY, HeaderValue::from_static("Accept"));
        return Ok(response);
    }

    match target {
        Target::Version => Ok(value_response(
            StatusCode::OK,
            &discovery::version(&state.options.git_version),
        )),
        Target::Health(check) => Ok(health(&check, state.faults.storage_unhealthy())),
        Target::OpenIdConfiguration => Ok(issuer_document(
            "application/json",
            &crate::apiserver::service_account_key::openid_configuration(),
        )),
        Target::Jwks => {
            let jwks = state
                .auth
                .jwks()
                .map_err(|e| ApiError::internal(e.to_string()))?;
            Ok(issuer_document("application/jwk-set+json", &jwks))
        }
        Target::CoreVersions => {
            let host = req
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("127.0.0.1")
                .to_string();
            Ok(value_response(
                StatusCode::OK,
                &discovery::core_versions(&host),
            ))
        }
        Target::Groups => Ok(value_response(
            StatusCode::OK,
            &discovery::group_list(&state.types_snapshot()),
        )),
        Target::Group(g) => discovery::group(&state.types_snapshot(), &g)
            .map(|v| value_response(StatusCode::OK, &v))
            .ok_or_else(ApiError::page_not_found),
        Target::Resources(g, v) => discovery::resource_list(&state.types_snapshot(), &g, &v)
            .map(|v| value_response(StatusCode::OK, &v))
            .ok_or_else(ApiError::page_not_found),
        Target::OpenApi(rest) => {
            let headers = req.headers();
            let header_text = |name: header::HeaderName| {
                headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            let accept = header_text(header::ACCEPT);
            let if_none_match = header_text(header::IF_NONE_MATCH);
            drop(req);
            let hash = query.get("hash").cloned();
            let types = state.types_snapshot();
            // Building the documents the first time takes a while: off the async threads.
            let response = tokio::task::spawn_blocking(move || {
                crate::apiserver::openapi::serve(
                    types,
                    &crate::apiserver::openapi::OpenApiRequest {
                        path: &rest,
                        hash: hash.as_deref(),
                        accept: accept.as_deref(),
                        if_none_match: if_none_match.as_deref(),
                    },
                )
            })
            .await
            .map_err(|e| ApiError::internal(format!("building the OpenAPI documents: {e}")))?;
            Ok(response.map(Body::from))
        }
        Target::Resource(p) => {
            let audit = AuditLog::records(verb, state.options.audit_reads).then(|| AuditEvent {
                user: user.username.clone(),
                groups: user.groups.clone(),
                impersonated_by,
                verb: verb.to_owned(),
                group: p.group.clone(),
                resource: p.resource.clone(),
                subresource: p.subresource.clone().unwrap_or_default(),
                namespace: p.namespace.clone().unwrap_or_default(),
                name: p.name.clone().unwrap_or_default(),
                code: 0,
                user_agent: req
                    .headers()
                    .get(header::USER_AGENT)
                    .and_then(|u| u.to_str().ok())
                    .unwrap_or_default()
                    .to_owned(),
            });
            let served = serve_resource(sim, req, p, query, user, verb).await;
            if let Some(mut event) = audit {
                event.code = match &served {
                    Ok(response) => response.status().as_u16(),
                    Err(err) => err.code,
                };
                state.audit.record(event);
            }
            served
        }
    }
}

async fn read_body(state: &ClusterState, req: Request) -> Result<Bytes, ApiError> {
    let limit = state.options.max_body_bytes;
    axum::body::to_bytes(req.into_body(), limit)
        .await
        .map_err(|_| ApiError::too_large(limit))
}

fn write_context(req: &Request, query: &HashMap<String, String>) -> WriteContext {
    let manager = query.get("fieldManager").cloned().unwrap_or_else(|| {
        // kube-apiserver derives the manager from the user agent's first segment.
        req.headers()
            .get(header::USER_AGENT)
            .and_then(|u| u.to_str().ok())
            .map(|u| u.split('/').next().unwrap_or(u).to_string())
            .unwrap_or_else(|| "unknown".into())
    });
    WriteContext {
        field_manager: manager,
        dry_run: query.get("dryRun").is_some_and(|d| d == "All"),
    }
}

/// A `proxy` subresource the embedder serves: authorized for the verb of the HTTP method on
/// `{resource}/proxy`, then handed over.
async fn serve_proxy_hook(
    state: Arc<ClusterState>,
    handler: Arc<dyn crate::apiserver::proxy_hooks::ProxyHandler<ClusterState>>,
    req: Request,
    rt: &ResourceType,
    p: &ResourcePath,
    name: String,
    user: UserInfo,
) -> Result<Response, ApiError> {
    use crate::apiserver::proxy_hooks::{ProxyRequest, proxied_path, verb};
    let verb = verb(req.method());
    let namespace = p.namespace.clone().unwrap_or_default();
    let attrs = Attributes {
        verb: verb.to_string(),
        group: rt.group.clone(),
        resource: rt.plural.clone(),
        subresource: "proxy".into(),
        namespace: namespace.clone(),
        name: name.clone(),
        path: None,
    };
    if !auth::authorize(&state.store, &user, &attrs).0 {
        return Err(ApiError::denied(
            &user.username,
            verb,
            &rt.group,
            &rt.plural,
            "proxy",
            &namespace,
            &name,
        ));
    }
    let path = proxied_path(req.uri().path(), &name);
    handler
        .serve(ProxyRequest {
            state,
            user,
            name,
            path,
            request: req,
        })
        .await
}

#[allow(clippy::too_many_lines)]
async fn serve_resource(
    sim: Arc<Simulator>,
    req: Request,
    p: ResourcePath,
    query: HashMap<String, String>,
    user: UserInfo,
    verb: &'static str,
) -> Result<Response, ApiError> {
    let state = sim.state.clone();
    // A group and version nobody serves ends in Go's plain `404 page not found`; an unknown
    // resource of a served group version is the API's own NotFound Status.
    let rt = state
        .lookup(&p.group, &p.version, &p.resource)
        .ok_or_else(|| {
            if state.serves_group_version(&p.group, &p.version) {
                ApiError::no_route()
            } else {
                ApiError::page_not_found()
            }
        })?;
    if !rt.namespaced && p.namespace.is_some() {
        return Err(ApiError::no_route());
    }
    if p.subresource.as_deref() == Some("proxy")
        && let (Some(handler), Some(name)) = (
            state.options.proxy_handlers.find(&rt.group, &rt.plural),
            p.name.clone(),
        )
    {
        return serve_proxy_hook(state, handler, req, &rt, &p, name, user).await;
    }
    if let Some(sub) = &p.subresource
        && !rt.subresources.contains(&sub.as_str())
    {
        return Err(ApiError::no_route());
    }
    if matches!(p.subresource.as_deref(), None | Some("status")) {
        negotiate::check_acceptable(req.headers(), &rt)?;
    }
    let namespace = p.namespace.clone().unwrap_or_default();
    let attrs = Attributes {
        verb: verb.to_string(),
        group: rt.group.clone(),
        resource: rt.plural.clone(),
        subresource: p.subresource.clone().unwrap_or_default(),
        namespace: namespace.clone(),
        name: p.name.clone().unwrap_or_default(),
        path: None,
    };
    let (mut allowed, _) = auth::authorize(&state.store, &user, &attrs);
    let mut verb = verb;
    // A WebSocket exec/attach/portforward arrives as GET but also needs `create`, as with
    // kube-apiserver's AuthorizePodWebsocketUpgradeCreatePermission (on since 1.30).
    if allowed
        && verb == "get"
        && rt.group.is_empty()
        && rt.plural == "pods"
        && matches!(
            p.subresource.as_deref(),
            Some("exec" | "attach" | "portforward")
        )
    {
        let create = Attributes {
            verb: "create".into(),
            ..attrs.clone()
        };
        allowed = auth::authorize(&state.store, &user, &create).0;
        if !allowed {
            verb = "create";
        }
    }
    if !allowed {
        return Err(ApiError::denied(
            &user.username,
            verb,
            &rt.group,
            &rt.plural,
            &attrs.subresource,
            &namespace,
            &attrs.name,
        ));
    }
    // A verb the resource does not serve is refused as go-restful refuses a method with no
    // route (kubernetes `staging/src/k8s.io/apiserver/pkg/server/handler.go`,
    // `serviceErrorHandler`).
    if p.subresource.is_none() && !rt.verbs.contains(&verb) {
        return Err(ApiError::method_not_allowed());
    }
    let version = p.version.clone();
    let name = p.name.clone();
    let as_table = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(crate::apiserver::table::wants_table);
    let sub = p.subresource.clone();
    if rt.group == crate::apiserver::resources::METRICS_GROUP {
        let table = if as_table {
            Some(table_include(&query)?)
        } else {
            None
        };
        let text = |key: &str| query.get(key).map(String::as_str).unwrap_or_default();
        let request = crate::sim::metrics_api::MetricsRequest {
            resource: &rt.plural,
            namespace: p.namespace.as_deref(),
            name: name.as_deref(),
            label_selector: text("labelSelector"),
            field_selector: text("fieldSelector"),
            table,
        };
        return crate::sim::metrics_api::answer(&sim, &request)
            .map(|v| value_response(StatusCode::OK, &v));
    }
    match (verb, name, sub.as_deref()) {
        (
            "get",
            Some(name),
            None | Some("status") | Some("approval") | Some("ephemeralcontainers") | Some("resize"),
        ) => {
            let obj = state
                .store
                .get(&rt.group_resource(), &namespace, &name)
                .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, &name))?;
            if as_table {
                let table = crate::apiserver::table::table(
                    &rt,
                    &[&obj.value],
                    &version,
                    json!({"resourceVersion": obj.rv.to_string()}),
                    table_include(&query)?,
                );
                return Ok(value_response(StatusCode::OK, &table));
            }
            Ok(object_response(StatusCode::OK, &obj, &rt, &version))
        }
        ("get", Some(name), Some("proxy")) if rt.group.is_empty() && rt.plural == "nodes" => {
            crate::sim::node_proxy::serve_node(sim, req, &name).await
        }
        ("get" | "create", Some(name), Some(sub))
            if rt.group.is_empty()
                && rt.plural == "pods"
                && crate::sim::node_proxy::KUBELET_SUBRESOURCES.contains(&sub)
                && (verb == "get" || sub != "log") =>
        {
            crate::sim::node_proxy::serve(sim, req, &namespace, &name, sub).await
        }
        ("get" | "update" | "patch", Some(name), Some("scale"))
            if crate::apiserver::scale::serves(&rt) =>
        {
            use crate::apiserver::scale;
            let ctx = write_context(&req, &query);
            let content_type = req
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|c| c.to_str().ok())
                .unwrap_or("")
                .to_string();
            let body = read_body(&state, req).await?;
            let out = match verb {
                "get" => scale::get(&state, &rt, &namespace, &name)?,
                "update" => scale::update(
                    &state,
                    &rt,
                    &namespace,
                    &name,
                    &negotiate::parse_json(&body)?,
                    &ctx,
                )?,
                _ => scale::patch(
                    &state,
                    &rt,
                    &namespace,
                    &name,
                    scale::patch_type(&content_type)?,
                    &body,
                    &ctx,
                )?,
            };
            Ok(value_response(StatusCode::OK, &out))
        }
        ("list", None, None) => list(
            &state,
            &rt,
            &version,
            p.namespace.as_deref(),
            &query,
            as_table,
        ),
        ("watch", _, None) => {
            let mut query = query;
            if let Some(name) = &p.name {
                let existing = query.get("fieldSelector").cloned().unwrap_or_default();
                let joined = if existing.is_empty() {
                    format!("metadata.name={name}")
                } else {
                    format!("{existing},metadata.name={name}")
                };
                query.insert("fieldSelector".into(), joined);
            }
            let table = if as_table {
                Some(table_include(&query)?)
            } else {
                None
            };
            watch_response(state, rt, version, p.namespace, &query, table)
        }
        ("create", None, None) => {
            let ctx = write_context(&req, &query);
            let media = negotiate::content_type(req.headers());
            let mode = FieldValidation::from_query(&query)?;
            let body = read_body(&state, req).await?;
            let mut value = negotiate::decode_body(&media, &body, &rt)?;
            let duplicates = json_duplicates(&media, &body, mode);
            let unknown = field_validation::enforce(
                &rt,
                &version,
                &mut value,
                mode,
                Write::Object,
                duplicates,
            )?;
            let response = create(&state, &rt, &version, &namespace, value, &ctx, &user)?;
            Ok(negotiate::with_warnings(
                response,
                &field_validation::warnings(mode, &unknown),
            ))
        }
        ("create", Some(name), Some(sub)) => {
            let ctx = write_context(&req, &query);
            let media = negotiate::content_type(req.headers());
            let body = read_body(&state, req).await?;
            let body = negotiate::decode_subresource_body(&media, body)?;
            crate::apiserver::subresources::create(&state, &rt, &namespace, &name, sub, &body, &ctx)
        }
        ("update", Some(name), None | Some("status") | Some("approval"))
            if rt.group == certificates::GROUP && rt.plural == certificates::RESOURCE =>
        {
            let ctx = write_context(&req, &query);
            let media = negotiate::content_type(req.headers());
            let body = read_body(&state, req).await?;
            let value = negotiate::decode_body(&media, &body, &rt)?;
            let obj = update_csr(
                &state,
                &rt,
                &version,
                &name,
                value,
                sub.as_deref(),
                &ctx,
                &user,
            )?;
            Ok(object_response(StatusCode::OK, &obj, &rt, &version))
        }
        (
            "update",
            Some(name),
            None | Some("status") | Some("finalize") | Some("ephemeralcontainers") | Some("resize"),
        ) => {
            let ctx = write_context(&req, &query);
            let media = negotiate::content_type(req.headers());
            let mode = FieldValidation::from_query(&query)?;
            let body = read_body(&state, req).await?;
            let mut value = negotiate::decode_body(&media, &body, &rt)?;
            let duplicates = json_duplicates(&media, &body, mode);
            let unknown = field_validation::enforce(
                &rt,
                &version,
                &mut value,
                mode,
                Write::Object,
                duplicates,
            )?;
            let sub = match sub.as_deref() {
                Some("finalize") => None,
                other => other,
            };
            let obj = state.update(&rt, &version, &namespace, &name, value, sub, &ctx)?;
            Ok(negotiate::with_warnings(
                object_response(StatusCode::OK, &obj, &rt, &version),
                &field_validation::warnings(mode, &unknown),
            ))
        }
        ("patch", Some(name), None | Some("status") | Some("approval"))
            if rt.group == certificates::GROUP && rt.plural == certificates::RESOURCE =>
        {
            let content_type = req
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|c| c.to_str().ok())
                .unwrap_or("")
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            let ctx = write_context(&req, &query);
            let body = read_body(&state, req).await?;
            let parsed: Value = serde_json::from_slice(&body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            let current = state
                .store
                .get(&rt.group_resource(), "", &name)
                .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, &name))?;
            // The patched object then follows the rules of a PUT of the same subresource.
            let failed = |e| crate::apiserver::api::patch_error(&rt, &name, e);
            let patched = match content_type.as_str() {
                "application/merge-patch+json" => {
                    let mut new = current.value.clone();
                    crate::patch::merge_patch(&mut new, &parsed);
                    new
                }
                "application/json-patch+json" => {
                    crate::patch::json_patch(&current.value, &parsed).map_err(failed)?
                }
                "application/strategic-merge-patch+json" => {
                    crate::patch::strategic_merge_patch(&current.value, &parsed, &rt.kind)
                        .map_err(failed)?
                }
                other => return Err(ApiError::unsupported_media_type(other)),
            };
            let obj = update_csr(
                &state,
                &rt,
                &version,
                &name,
                patched,
                sub.as_deref(),
                &ctx,
                &user,
            )?;
            Ok(object_response(StatusCode::OK, &obj, &rt, &version))
        }
        (
            "patch",
            Some(name),
            None | Some("status") | Some("ephemeralcontainers") | Some("resize"),
        ) => {
            let content_type = req
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|c| c.to_str().ok())
                .unwrap_or("")
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            let patch_type = match content_type.as_str() {
                "application/json-patch+json" => PatchType::Json,
                "application/merge-patch+json" => PatchType::Merge,
                "application/strategic-merge-patch+json" => PatchType::StrategicMerge,
                "application/apply-patch+yaml" | "application/apply-patch+json" => {
                    PatchType::Apply {
                        force: query.get("force").is_some_and(|f| f == "true"),
                    }
                }
                other => return Err(ApiError::unsupported_media_type(other)),
            };
            let ctx = write_context(&req, &query);
            if matches!(patch_type, PatchType::Apply { .. }) && !query.contains_key("fieldManager")
            {
                return Err(ApiError::bad_request(
                    "PATCH, application/apply-patch+yaml requests require fieldManager to be set",
                ));
            }
            let mode = FieldValidation::from_query(&query)?;
            let body = read_body(&state, req).await?;
            let (body, unknown) = validate_patch(&rt, &version, patch_type, body, mode)?;
            let created_before = state
                .store
                .get(&rt.group_resource(), &namespace, &name)
                .is_some();
            let obj = state.patch(
                &rt,
                &version,
                &namespace,
                &name,
                patch_type,
                &body,
                sub.as_deref(),
                &ctx,
            )?;
            let code = if created_before {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            Ok(negotiate::with_warnings(
                object_response(code, &obj, &rt, &version),
                &field_validation::warnings(mode, &unknown),
            ))
        }
        ("delete", Some(name), None) => {
            let media = negotiate::content_type(req.headers());
            let body = read_body(&state, req).await?;
            let body = negotiate::delete_options_body(&media, body)?;
            let mut opts = DeleteOptions::from_body(&body)?;
            apply_delete_query(&mut opts, &query)?;
            let deleted = state.delete(&rt, &namespace, &name, &opts)?;
            // 202 only for an object that stays while `orphanDependents: false` was asked;
            // a graceful pod or a terminating namespace is a 200 (kubernetes
            // `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/delete.go`, `DeleteResource`).
            let code = if !deleted.removed && opts.orphan_dependents == Some(false) {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            Ok(object_response(code, &deleted.object, &rt, &version))
        }
        ("deletecollection", None, None) => {
            let media = negotiate::content_type(req.headers());
            let body = read_body(&state, req).await?;
            let body = negotiate::delete_options_body(&media, body)?;
            let mut opts = DeleteOptions::from_body(&body)?;
            apply_delete_query(&mut opts, &query)?;
            let (labels, fields) = selectors_from(&rt, &query)?;
            let page = state.store.list(
                &rt.group_resource(),
                p.namespace.as_deref(),
                None,
                0,
                &|s| {
                    labels.matches(s.labels())
                        && fields.matches(|f| selectors::field_value(&rt.plural, &s.value, f))
                },
            );
            for item in &page.items {
                let meta = &item.value["metadata"];
                let ns = meta["namespace"].as_str().unwrap_or("");
                let name = meta["name"].as_str().unwrap_or("");
                match state.delete(&rt, ns, name, &opts) {
                    Ok(_) => {}
                    Err(e) if e.code == 404 => {}
                    Err(e) => return Err(e),
                }
            }
            let list =
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"});
            Ok(value_response(StatusCode::OK, &list))
        }
        (verb, _, sub) => Err(ApiError::method_not_supported(
            &format!("{verb}{}", sub.map(|s| format!(" {s}")).unwrap_or_default()),
            &rt.group,
            &rt.plural,
        )),
    }
}

fn apply_delete_query(
    opts: &mut DeleteOptions,
    query: &HashMap<String, String>,
) -> Result<(), ApiError> {
    if let Some(g) = query.get("gracePeriodSeconds") {
        opts.grace_period_seconds = Some(
            g.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid gracePeriodSeconds {g:?}")))?,
        );
    }
    if let Some(p) = query.get("propagationPolicy") {
        opts.propagation_policy = Some(p.clone());
    }
    if let Some(orphan) = query.get("orphanDependents") {
        opts.orphan_dependents = Some(orphan == "true");
    }
    if query.get("orphanDependents").is_some_and(|o| o == "true")
        && opts.propagation_policy.is_none()
    {
        opts.propagation_policy = Some("Orphan".into());
    }
    if query.get("dryRun").is_some_and(|d| d == "All") {
        opts.dry_run = true;
    }
    Ok(())
}

/// Duplicate fields of a JSON create or update body (YAML and protobuf bodies have none to
/// report: their decoders keep the last or reject).
fn json_duplicates(media: &str, body: &[u8], mode: FieldValidation) -> Vec<String> {
    match media {
        "" | "application/json" | "*/*" => field_validation::duplicate_fields(mode, body),
        _ => Vec::new(),
    }
}

/// Checks the fields of a merge, strategic merge or apply patch body as `fieldValidation`
/// says, returning the body without unknown fields and their paths. JSON patches (a list of
/// operations) pass unchanged.
fn validate_patch(
    rt: &ResourceType,
    version: &str,
    patch_type: PatchType,
    body: Bytes,
    mode: FieldValidation,
) -> Result<(Bytes, field_validation::Findings), ApiError> {
    let duplicates = match patch_type {
        PatchType::Merge | PatchType::StrategicMerge => {
            field_validation::duplicate_fields(mode, &body)
        }
        _ => Vec::new(),
    };
    let (mut value, write): (Value, _) = match patch_type {
        PatchType::Json => return Ok((body, Default::default())),
        // Malformed bodies are left for the patch itself to report.
        PatchType::Apply { .. } => match serde_saphyr::from_slice(&body) {
            Ok(v) => (v, Write::Apply),
            Err(_) => return Ok((body, Default::default())),
        },
        PatchType::Merge | PatchType::StrategicMerge => match serde_json::from_slice(&body) {
            Ok(v) => (v, Write::Patch),
            Err(_) => return Ok((body, Default::default())),
        },
    };
    let unknown = field_validation::enforce(rt, version, &mut value, mode, write, duplicates)?;
    if unknown.unknown.is_empty() {
        return Ok((body, unknown));
    }
    Ok((Bytes::from(value.to_string()), unknown))
}

fn create(
    state: &Arc<ClusterState>,
    rt: &ResourceType,
    version: &str,
    namespace: &str,
    value: Value,
    ctx: &WriteContext,
    user: &UserInfo,
) -> Result<Response, ApiError> {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("authentication.k8s.io", "tokenreviews") => Ok(value_response(
            StatusCode::CREATED,
            &state.auth.token_review(&value, &state.store),
        )),
        // pkg/registry/authentication/selfsubjectreview/rest.go, `Create`.
        ("authentication.k8s.io", "selfsubjectreviews") => {
            let mut user_info = json!({"username": user.username, "groups": user.groups});
            if !user.uid.is_empty() {
                user_info["uid"] = json!(user.uid);
            }
            Ok(value_response(
                StatusCode::CREATED,
                &json!({"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
                    "metadata": value.get("metadata").cloned().unwrap_or(json!({})),
                    "status": {"userInfo": user_info}}),
            ))
        }
        // pkg/registry/authorization/selfsubjectrulesreview/rest.go, `Create`.
        ("authorization.k8s.io", "selfsubjectrulesreviews") => {
            let namespace = value
                .pointer("/spec/namespace")
                .and_then(Value::as_str)
                .unwrap_or("");
            let (resource_rules, non_resource_rules) =
                auth::rules_for(&state.store, user, namespace);
            let mut out = value.clone();
            out["apiVersion"] = json!("authorization.k8s.io/v1");
            out["kind"] = json!(rt.kind);
            if !out.get("metadata").is_some_and(Value::is_object) {
                out["metadata"] = json!({});
            }
            out["status"] = json!({"resourceRules": resource_rules,
                "nonResourceRules": non_resource_rules, "incomplete": false});
            Ok(value_response(StatusCode::CREATED, &out))
        }
        // The `bindings` resource binds the pod its body names, as `pods/binding` does.
        ("", "bindings") => {
            let pod = value
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let pods = state
                .resource_type("", "pods")
                .ok_or_else(|| ApiError::internal("pods are not served"))?;
            crate::apiserver::subresources::create(
                state,
                &pods,
                namespace,
                &pod,
                "binding",
                value.to_string().as_bytes(),
                ctx,
            )
        }
        (
            "authorization.k8s.io",
            "subjectaccessreviews" | "selfsubjectaccessreviews" | "localsubjectaccessreviews",
        ) => {
            let spec = value.get("spec").cloned().unwrap_or_default();
            let mut attrs = auth::review_attributes(&spec);
            if rt.plural == "localsubjectaccessreviews" {
                attrs.namespace = namespace.to_string();
            }
            let subject = if rt.plural == "selfsubjectaccessreviews" {
                user.clone()
            } else {
                let username = spec.get("user").and_then(Value::as_str).unwrap_or("");
                let groups: Vec<&str> = spec
                    .get("groups")
                    .and_then(Value::as_array)
                    .map(|g| g.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                UserInfo {
                    username: username.to_string(),
                    uid: spec
                        .get("uid")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    groups: groups.iter().map(|g| g.to_string()).collect(),
                }
            };
            let (allowed, reason) = auth::authorize(&state.store, &subject, &attrs);
            // The review comes back with the request's metadata and spec; `reason` is
            // `omitempty` (kubernetes `pkg/registry/authorization/*subjectaccessreview/rest.go`,
            // `Create`; `staging/src/k8s.io/api/authorization/v1/types.go`).
            let mut out = value.clone();
            out["apiVersion"] = json!("authorization.k8s.io/v1");
            out["kind"] = json!(rt.kind);
            if !out.get("metadata").is_some_and(Value::is_object) {
                out["metadata"] = json!({});
            }
            let mut status = json!({"allowed": allowed});
            if !reason.is_empty() {
                status["reason"] = json!(reason);
            }
            out["status"] = status;
            Ok(value_response(StatusCode::CREATED, &out))
        }
        (certificates::GROUP, certificates::RESOURCE) => {
            let mut value = value;
            certificates::prepare_create(&mut value, user)?;
            let obj = state.create(rt, version, namespace, value, ctx)?;
            Ok(object_response(StatusCode::CREATED, &obj, rt, version))
        }
        _ => {
            let obj = state.create(rt, version, namespace, value, ctx)?;
            Ok(object_response(StatusCode::CREATED, &obj, rt, version))
        }
    }
}

/// A PUT of a CertificateSigningRequest, its `/approval` or its `/status`, with the rules of
/// the registry strategies and the approval and signing admission plugins.
#[allow(clippy::too_many_arguments)]
fn update_csr(
    state: &Arc<ClusterState>,
    rt: &ResourceType,
    version: &str,
    name: &str,
    body: Value,
    sub: Option<&str>,
    ctx: &WriteContext,
    user: &UserInfo,
) -> Result<Arc<Stored>, ApiError> {
    let expected_rv = body
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
        .map(str::to_owned);
    let store = &state.store;
    // The stored object decides the signer the admission plugins check.
    let current = store
        .get(&rt.group_resource(), "", name)
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    match sub {
        Some("approval") => {
            certificates::check_signer_permission(store, user, "approve", &current.value)?;
        }
        Some("status") if certificates::sets_certificate(&current.value, &body) => {
            certificates::check_signer_permission(store, user, "sign", &current.value)?;
        }
        _ => {}
    }
    let as_status = sub.map(|_| "status");
    state.update_with(
        rt,
        version,
        "",
        name,
        as_status,
        ctx,
        expected_rv,
        move |old| match sub {
            Some("approval") => certificates::approval_update(old, &body),
            Some("status") => certificates::status_update(old, &body),
            _ => Ok(certificates::object_update(old, &body)),
        },
    )
}

fn selectors_from(
    rt: &ResourceType,
    query: &HashMap<String, String>,
) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let labels = LabelSelector::parse(query.get("labelSelector").map(String::as_str).unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let fields = FieldSelector::parse(query.get("fieldSelector").map(String::as_str).unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    selectors::validate_fields(&rt.plural, &fields)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok((labels, fields))
}

fn parse_rv(value: Option<&String>) -> Result<Option<u64>, ApiError> {
    match value.map(String::as_str) {
        None | Some("") | Some("0") => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {v:?}"))),
    }
}

fn list(
    state: &Arc<ClusterState>,
    rt: &ResourceType,
    version: &str,
    namespace: Option<&str>,
    query: &HashMap<String, String>,
    as_table: bool,
) -> Result<Response, ApiError> {
    let (labels, fields) = selectors_from(rt, query)?;
    let limit: usize = match query.get("limit") {
        None => 0,
        Some(l) => l
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?
            .max(0) as usize,
    };
    let rv = parse_rv(query.get("resourceVersion"))?;
    let current = state.store.current_rv();
    if let Some(rv) = rv {
        match query.get("resourceVersionMatch").map(String::as_str) {
            Some("Exact") if rv != current => {
                return Err(ApiError::gone(format!(
                    "too old resource version: {rv} ({current})"
                )));
            }
            _ if rv > current => {
                let mut err = ApiError::timeout(format!(
                    "Too large resource version: {rv}, current: {current}"
                ));
                err.retry_after = Some(1);
                return Err(err);
            }
            _ => {}
        }
    }
    let after = match query.get("continue").filter(|c| !c.is_empty()) {
        None => None,
        Some(token) => Some(decode_continue(state, token)?),
    };
    let keep = |s: &Stored| {
        labels.matches(s.labels())
            && fields.matches(|f| selectors::field_value(&rt.plural, &s.value, f))
    };
    // Unfiltered pages are counted as kube-apiserver counts them (remainingItemCount).
    let filtered = !(labels.is_empty() && fields.is_empty());
    let page = state.store.list_page_after(
        &rt.group_resource(),
        namespace,
        after.as_ref().map(|(key, served)| (key, *served)),
        limit,
        filtered.then_some(&keep as &dyn Fn(&Stored) -> bool),
    );
    let served = after.as_ref().and_then(|(_, n)| *n).unwrap_or(0) + page.items.len();
    if as_table {
        let objects: Vec<&Value> = page.items.iter().map(|i| &i.value).collect();
        let mut meta = json!({"resourceVersion": page.rv.to_string()});
        if let Some(next) = &page.next {
            meta["continue"] = json!(encode_continue(page.rv, next, served));
            if let Some(remaining) = page.remaining {
                meta["remainingItemCount"] = json!(remaining);
            }
        }
        let table =
            crate::apiserver::table::table(rt, &objects, version, meta, table_include(query)?);
        return Ok(value_response(StatusCode::OK, &table));
    }
    let mut buf =
        BytesMut::with_capacity(page.items.iter().map(|i| i.json.len() + 1).sum::<usize>() + 256);
    let mut meta = json!({"resourceVersion": page.rv.to_string()});
    if let Some(next) = &page.next {
        meta["continue"] = json!(encode_continue(page.rv, next, served));
        if let Some(remaining) = page.remaining {
            meta["remainingItemCount"] = json!(remaining);
        }
    }
    buf.put_slice(
        format!(
            "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{},\"items\":[",
            rt.list_kind,
            rt.api_version(version),
            meta
        )
        .as_bytes(),
    );
    for (i, item) in page.items.iter().enumerate() {
        if i > 0 {
            buf.put_u8(b',');
        }
        buf.put_slice(&encode_object(item, rt, version));
    }
    buf.put_slice(b"]}");
    Ok(json_response(StatusCode::OK, buf.freeze()))
}

/// `includeObject` of a Table request; an unknown value is a 400.
fn table_include(
    query: &HashMap<String, String>,
) -> Result<crate::apiserver::table::IncludeObject, ApiError> {
    crate::apiserver::table::IncludeObject::from_query(
        query.get("includeObject").map(String::as_str),
    )
    .map_err(ApiError::bad_request)
}

/// A continue token: the list's version, the last key served and how many objects the pages
/// so far held (`remainingItemCount` of the next page is counted from it).
fn encode_continue(rv: u64, key: &(String, String), served: usize) -> String {
    let token =
        json!({"v": "meta.k8s.io/v1", "rv": rv, "ns": key.0, "name": key.1, "served": served});
    URL_SAFE_NO_PAD.encode(token.to_string())
}

/// The key to continue after, and how many objects were served before (absent from tokens
/// that do not say).
fn decode_continue(
    state: &ClusterState,
    token: &str,
) -> Result<((String, String), Option<usize>), ApiError> {
    let bad = || ApiError::bad_request(format!("continue key is not valid: {token:?}"));
    let raw = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    if rv < state.store.oldest_watchable() {
        return Err(ApiError::gone(
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
        ));
    }
    let key = (
        v.get("ns")
            .and_then(Value::as_str)
            .ok_or_else(bad)?
            .to_string(),
        v.get("name")
            .and_then(Value::as_str)
            .ok_or_else(bad)?
            .to_string(),
    );
    let served = v
        .get("served")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok());
    Ok((key, served))
}

fn watch_response(
    state: Arc<ClusterState>,
    rt: ResourceType,
    version: String,
    namespace: Option<String>,
    query: &HashMap<String, String>,
    table: Option<crate::apiserver::table::IncludeObject>,
) -> Result<Response, ApiError> {
    let (labels, fields) = selectors_from(&rt, query)?;
    let table_target = table.map(|include| (rt.clone(), version.clone(), include));
    let rv = parse_rv(query.get("resourceVersion"))?;
    let send_initial = query.get("sendInitialEvents").is_some_and(|s| s == "true");
    if send_initial && query.get("resourceVersionMatch").map(String::as_str) != Some("NotOlderThan")
    {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            vec![crate::apiserver::error::Cause {
                reason: "FieldValueForbidden".into(),
                message: "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan".into(),
                field: "resourceVersionMatch".into(),
            }],
        ));
    }
    let timeout = match query.get("timeoutSeconds") {
        None => None,
        Some(t) => Some(Duration::from_secs(t.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("invalid timeoutSeconds {t:?}"))
        })?)),
    };
    let request = WatchRequest {
        rt,
        version,
        namespace,
        labels,
        fields,
        resource_version: rv,
        initial_events: send_initial || rv.is_none(),
        initial_events_bookmark: send_initial,
        bookmarks: query
            .get("allowWatchBookmarks")
            .is_some_and(|b| b == "true"),
        timeout,
    };
    let rx = watch::start(state, request);
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), rx))
    });
    // `as=Table`: each event's object becomes a one-row Table.
    let stream = futures::StreamExt::map(stream, move |chunk| match (&table_target, chunk) {
        (Some((rt, version, include)), Ok(chunk)) => Ok(Bytes::from(
            crate::apiserver::table::watch_chunk_as_table(&chunk, rt, version, *include),
        )),
        (_, chunk) => chunk,
    });
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response.headers_mut().insert(
        header::TRANSFER_ENCODING,
        HeaderValue::from_static("chunked"),
    );
    Ok(response)
}

/// A health check's answer: `ok`, or kube-apiserver's failure report when the storage is
/// unhealthy (`/livez` does not check the storage).
fn health(check: &str, storage_unhealthy: bool) -> Response {
    if !storage_unhealthy || check == "livez" {
        return (StatusCode::OK, "ok").into_response();
    }
    let body =
        format!("[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n{check} check failed\n");
    (StatusCode::INTERNAL_SERVER_ERROR, body).into_response()
}

#[cfg(test)]
mod tests {
    #[test]
    fn health_checks_fail_like_kube_apiservers_when_the_storage_is_unhealthy() {
        for (check, unhealthy, status) in [
            ("readyz", false, StatusCode::OK),
            ("readyz", true, StatusCode::INTERNAL_SERVER_ERROR),
            ("healthz", true, StatusCode::INTERNAL_SERVER_ERROR),
            ("livez", true, StatusCode::OK),
        ] {
            assert_eq!(
                health(check, unhealthy).status(),
                status,
                "{check} {unhealthy}"
            );
        }
    }

    use super::*;

    fn rp(
        group: &str,
        ns: Option<&str>,
        resource: &str,
        name: Option<&str>,
        sub: Option<&str>,
    ) -> Target {
        Target::Resource(ResourcePath {
            group: group.into(),
            version: "v1".into(),
            namespace: ns.map(Into::into),
            resource: resource.into(),
            name: name.map(Into::into),
            subresource: sub.map(Into::into),
            watch_prefix: false,
        })
    }

    #[test]
    fn paths_parse_like_the_apiserver() {
        let cases = [
            ("/version", Some(Target::Version)),
            ("/api", Some(Target::CoreVersions)),
            ("/apis", Some(Target::Groups)),
            ("/apis/apps", Some(Target::Group("apps".into()))),
            (
                "/api/v1",
                Some(Target::Resources(String::new(), "v1".into())),
            ),
            ("/api/v1/pods", Some(rp("", None, "pods", None, None))),
            (
                "/api/v1/namespaces",
                Some(rp("", None, "namespaces", None, None)),
            ),
            (
                "/api/v1/namespaces/default",
                Some(rp("", None, "namespaces", Some("default"), None)),
            ),
            (
                "/api/v1/namespaces/default/status",
                Some(rp("", None, "namespaces", Some("default"), Some("status"))),
            ),
            (
                "/api/v1/namespaces/ns/pods",
                Some(rp("", Some("ns"), "pods", None, None)),
            ),
            (
                "/api/v1/namespaces/ns/pods/p",
                Some(rp("", Some("ns"), "pods", Some("p"), None)),
            ),
            (
                "/api/v1/namespaces/ns/pods/p/log",
                Some(rp("", Some("ns"), "pods", Some("p"), Some("log"))),
            ),
            (
                "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
                Some(rp(
                    "coordination.k8s.io",
                    Some("kube-node-lease"),
                    "leases",
                    Some("n1"),
                    None,
                )),
            ),
            (
                "/api/v1/nodes/n1/status",
                Some(rp("", None, "nodes", Some("n1"), Some("status"))),
            ),
            ("/api/v1/namespaces/ns/pods/p/x/y", None),
            ("/nope", None),
            ("/api/v1/namespaces//pods", None),
        ];
        for (path, want) in cases {
            assert_eq!(parse_path(path), want, "{path}");
        }
        match parse_path("/api/v1/watch/namespaces/ns/pods") {
            Some(Target::Resource(p)) => {
                assert!(p.watch_prefix && p.namespace.as_deref() == Some("ns"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn continue_tokens_round_trip() {
        let state = ClusterState::new("t", Default::default());
        let token = encode_continue(state.store.current_rv(), &("ns".into(), "p".into()), 7);
        assert_eq!(
            decode_continue(&state, &token).unwrap(),
            (("ns".into(), "p".into()), Some(7))
        );
        assert_eq!(decode_continue(&state, "!!").unwrap_err().code, 400);
    }
}
