//! The proxy's request handler: authenticate, authorize, then read from the router's read side
//! or forward to the instance apiserver.

use std::collections::HashMap;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, Request, State};
use axum::response::Response;
use futures::StreamExt;
use http::{HeaderMap, Method, StatusCode, header};
use kube::core::WatchEvent;

use super::ProxyState;
use super::compress::{self, GZIP_THRESHOLD_BYTES, ListKey, accepts_gzip};
use super::path::{KubePath, ResourcePath, parse_kube_path};
use super::request::{Handling, ReadParams, plan, verb_of};
use super::status::{
    access_error_response, json_response, router_error_response, status_json, status_response,
    status_value,
};
use super::upstream::{
    HOP_BY_HOP, acts_as_caller, connect, forwarded_request_header, is_member_proxy,
};
use crate::access::{AccessError, Caller, InstanceResource, Verb, impersonation_headers};
use crate::audit::{AuditObject, AuditRecordSpec, Door};
use crate::limit::{CallerLimiter, proxy_too_many_requests};
use crate::router::{
    EventStream, ListChunks, ListQuery, ObjectPage, ResourceTarget, RouterError, SortBy,
    identity_lost, render_list, rendered_len, written_cookie, written_version,
};

/// The proxy reads the bearer token as the REST API does.
pub use crate::transport::bearer_token;

/// The Kubernetes path after `/instances/{instance}/proxy` in `full_path`, `/` when empty;
/// `None` when the marker is missing.
pub fn kube_path_of<'a>(full_path: &'a str, instance: &str) -> Option<&'a str> {
    let marker = format!("/instances/{instance}/proxy");
    let at = full_path.find(&marker)?;
    let rest = &full_path[at + marker.len()..];
    match rest {
        "" => Some("/"),
        rest if rest.starts_with('/') => Some(rest),
        _ => None,
    }
}

pub(super) async fn handle(
    State(state): State<ProxyState>,
    Path(params): Path<HashMap<String, String>>,
    request: Request,
) -> Response {
    let Some(instance) = params.get("instance").cloned() else {
        return status_response(404, "no instance in the path");
    };
    let Some(raw_path) = kube_path_of(request.uri().path(), &instance).map(str::to_owned) else {
        return status_response(404, "not a proxy path");
    };
    let kube_path = parse_kube_path(&raw_path);
    let query: HashMap<String, String> = Query::try_from_uri(request.uri())
        .map(|Query(q)| q)
        .unwrap_or_default();
    let read_params = ReadParams::from_query(&query);

    let caller = match authenticate(&state, request.headers()).await {
        Ok(caller) => caller,
        Err(err) => return access_error_response(&err),
    };
    // Every request counts against the caller's limit, when the server has one.
    if let Some(limiter) = request.extensions().get::<std::sync::Arc<CallerLimiter>>()
        && let Err(retry) = limiter.admit(&caller.user)
    {
        return proxy_too_many_requests(retry);
    }
    let Some(verb) = verb_of(request.method(), &kube_path, read_params.watch) else {
        return status_response(
            405,
            &format!("method {} is not supported", request.method()),
        );
    };
    let verb = super::upgrade::verb_with_upgrade(verb, &raw_path, request.headers());
    if let Err(err) = authorize(&state, &caller, verb, &instance).await {
        return access_error_response(&err);
    }

    // A create names its object in the body: read it (as forwarding would) for the record.
    let (request, created) = match &kube_path {
        KubePath::Resource(r)
            if verb.is_write() && r.name.is_none() && request.method() == Method::POST =>
        {
            let (parts, body) = request.into_parts();
            match axum::body::to_bytes(body, state.max_body_bytes).await {
                Ok(bytes) => {
                    let name = created_name(&bytes);
                    (Request::from_parts(parts, Body::from(bytes)), name)
                }
                Err(err) => {
                    return status_response(413, &format!("cannot read the request body: {err}"));
                }
            }
        }
        _ => (request, None),
    };
    let accept = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok());
    let handling = plan(request.method(), &kube_path, &read_params, accept);
    let resource = match &kube_path {
        KubePath::Resource(resource) => Some(resource),
        _ => None,
    };
    let upgrade = super::upgrade::is_upgrade(request.headers());
    let response = match (handling, resource) {
        _ if upgrade => {
            super::upgrade::forward_upgrade(
                &state, &instance, &raw_path, resource, &caller, request,
            )
            .await
        }
        (Handling::Forward, _) | (_, None) => {
            forward(&state, &instance, &raw_path, resource, &caller, request).await
        }
        (handling, Some(resource)) => {
            let cookies = request.headers().get(header::COOKIE);
            let cookies = cookies.and_then(|c| c.to_str().ok()).map(str::to_owned);
            let gzip = accepts_gzip(request.headers());
            let read = read(
                &state,
                &instance,
                resource,
                &read_params,
                handling,
                cookies,
                gzip,
            );
            match read.await {
                Ok(Some(response)) => response,
                // The instance does not serve the resource as the path says: let it answer.
                Ok(None) => {
                    forward(
                        &state,
                        &instance,
                        &raw_path,
                        Some(resource),
                        &caller,
                        request,
                    )
                    .await
                }
                Err(err) => router_error_response(&err),
            }
        }
    };
    if verb.is_write() {
        record_write(
            &state,
            &caller,
            &instance,
            (&kube_path, created.as_deref()),
            verb,
            response.status(),
        );
    }
    response
}

/// `metadata.name` of a create body, JSON or Kubernetes protobuf (as kubectl sends); none
/// for other encodings or generated names.
fn created_name(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Meta {
        name: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Created {
        metadata: Option<Meta>,
    }
    if let Some(envelope) = body.strip_prefix(PROTOBUF_MAGIC) {
        return protobuf_name(envelope);
    }
    serde_json::from_slice::<Created>(body).ok()?.metadata?.name
}

/// The prefix of Kubernetes protobuf bodies (k8s.io/apimachinery runtime/serializer/protobuf
/// `protoEncodingPrefix`).
const PROTOBUF_MAGIC: &[u8] = b"k8s\0";

/// `metadata.name` of a protobuf body after its prefix: a `runtime.Unknown` whose field 2
/// (`raw`) is the object, whose field 1 is its ObjectMeta, whose field 1 is the name
/// (k8s.io/apimachinery runtime/generated.proto, meta/v1/generated.proto).
fn protobuf_name(unknown: &[u8]) -> Option<String> {
    let object = protobuf_field(unknown, 2)?;
    let meta = protobuf_field(object, 1)?;
    let name = std::str::from_utf8(protobuf_field(meta, 1)?).ok()?;
    (!name.is_empty()).then(|| name.to_owned())
}

/// The first length-delimited field `number` of a protobuf message, skipping the others.
fn protobuf_field(mut message: &[u8], number: u64) -> Option<&[u8]> {
    fn varint(bytes: &mut &[u8]) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = bytes.split_first()?;
            *bytes = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
    while !message.is_empty() {
        let key = varint(&mut message)?;
        let skip = match key & 7 {
            0 => {
                varint(&mut message)?;
                0
            }
            1 => 8,
            2 => {
                let len = usize::try_from(varint(&mut message)?).ok()?;
                if key >> 3 == number {
                    return message.get(..len);
                }
                len
            }
            5 => 4,
            _ => return None,
        };
        message = message.get(skip..)?;
    }
    None
}

/// Records a write through the proxy: who, what (the path, and the name a create gives its
/// object), and the instance's answer.
fn record_write(
    state: &ProxyState,
    caller: &Caller,
    instance: &str,
    (path, created): (&KubePath, Option<&str>),
    verb: Verb,
    status: StatusCode,
) {
    let KubePath::Resource(resource) = path else {
        return;
    };
    let verb = match verb {
        Verb::Delete if resource.is_collection() => "deletecollection",
        other => other.as_str(),
    };
    let acting_as = if acts_as_caller(&Method::POST, Some(resource), state.write_identity) {
        caller.user.clone()
    } else {
        "kairship".to_string()
    };
    let object = AuditObject {
        group: resource.group.clone(),
        version: resource.version.clone(),
        resource: resource.resource.clone(),
        subresource: resource.subresource.clone().unwrap_or_default(),
        namespace: resource.namespace.clone().unwrap_or_default(),
        name: resource
            .name
            .as_deref()
            .or(created)
            .unwrap_or_default()
            .to_string(),
    };
    // An exec or attach that switched protocols was accepted.
    let accepted = status.is_success() || status == StatusCode::SWITCHING_PROTOCOLS;
    let message = (!accepted).then(|| {
        status
            .canonical_reason()
            .unwrap_or("the instance refused the write")
            .to_string()
    });
    state.audit.record(AuditRecordSpec::new(
        caller,
        acting_as,
        instance,
        Door::Proxy,
        verb,
        object,
        status.as_u16(),
        message,
    ));
}

async fn authenticate(state: &ProxyState, headers: &HeaderMap) -> Result<Caller, AccessError> {
    let token = bearer_token(headers)
        .ok_or_else(|| AccessError::Unauthenticated("no bearer token".into()))?;
    state.authenticator.authenticate(token).await
}

async fn authorize(
    state: &ProxyState,
    caller: &Caller,
    verb: Verb,
    instance: &str,
) -> Result<(), AccessError> {
    if state
        .authorizer
        .allowed(caller, verb, InstanceResource::Proxy, Some(instance))
        .await?
    {
        Ok(())
    } else {
        Err(AccessError::Forbidden(format!(
            "instances.kairship.io \"{instance}\" is forbidden: user \"{}\" cannot {} resource \"instances/proxy\" in API group \"kairship.io\"",
            caller.user,
            verb.as_str()
        )))
    }
}

/// The router target of a resource path, from discovery; `None` when the instance does not
/// serve the resource or the path's namespace does not fit its scope.
async fn target_of(
    state: &ProxyState,
    instance: &str,
    resource: &ResourcePath,
) -> Result<Option<ResourceTarget>, RouterError> {
    let connection = connect(state, instance).await?;
    let Some(found) = state
        .discovery
        .resolve(
            &connection,
            instance,
            &resource.group,
            &resource.version,
            &resource.resource,
        )
        .await?
    else {
        return Ok(None);
    };
    Ok(match (&resource.namespace, found.namespaced) {
        (Some(ns), true) => Some(ResourceTarget::namespaced(instance, found.resource, ns)),
        (None, _) => Some(ResourceTarget::all(instance, found.resource)),
        (Some(_), false) => None,
    })
}

/// Answers a read from the router's read side; `Ok(None)` when it cannot be (unknown resource).
async fn read(
    state: &ProxyState,
    instance: &str,
    resource: &ResourcePath,
    params: &ReadParams,
    handling: Handling,
    cookies: Option<String>,
    gzip: bool,
) -> Result<Option<Response>, RouterError> {
    let Some(target) = target_of(state, instance, resource).await? else {
        return Ok(None);
    };
    // A write through another replica: wait for it as for one through this replica.
    if let Some(version) = cookies.as_deref().and_then(|c| written_version(c, &target)) {
        state.router.await_version(&target, version);
    }
    let decode = |source| RouterError::Decode {
        target: target.describe(),
        source,
    };
    let response = match handling {
        Handling::Get { name } => {
            let object = state.router.get(&target, &name).await?;
            json_response(
                StatusCode::OK,
                serde_json::to_vec(object.as_ref()).map_err(decode)?,
            )
        }
        Handling::List { limit, after } => {
            // In kube-apiserver's order (namespace, then name), which `continue` follows.
            let query = ListQuery {
                label_selector: params.label_selector.clone(),
                field_selector: params.field_selector.clone(),
                sort_by: SortBy::Namespace,
                ..ListQuery::default()
            };
            let whole = query.label_selector.is_none()
                && query.field_selector.is_none()
                && limit.is_none()
                && after.is_none();
            // Written out from the cache's JSON as it is, with no object decoded.
            let page = state
                .router
                .list_rendered(&target, &query)
                .await?
                .chunk(after.as_ref(), limit);
            let whole = whole.then(|| ListKey {
                identity: state.clients.current(instance),
                instance: instance.to_owned(),
                resource: format!("{}/{}", target.resource.api_version, target.resource.plural),
                namespace: target.namespace.clone(),
            });
            list_response(state, &target, page, gzip, whole)
                .await
                .map_err(decode)?
        }
        Handling::Watch { query, timeout } => {
            let events = state.router.watch(&target, &query).await?;
            watch_response(events, timeout)
        }
        Handling::Forward => return Ok(None),
    };
    Ok(Some(response))
}

/// A list answer: streamed as it is written, gzipped when the client accepts it and the answer
/// is larger than [`GZIP_THRESHOLD_BYTES`]. A whole list (`whole`: no selector, no chunk) is
/// compressed once per resourceVersion and kept for the next callers.
async fn list_response(
    state: &ProxyState,
    target: &ResourceTarget,
    page: ObjectPage,
    gzip: bool,
    whole: Option<ListKey>,
) -> Result<Response, serde_json::Error> {
    let kind = format!("{}List", target.resource.kind);
    let api_version = target.resource.api_version.as_str();
    let Some(size) = rendered_len(&page) else {
        // Items decoded by the backend are in memory already: write them out at once.
        let body = render_list(&page, api_version, &kind)?;
        return Ok(if gzip && body.len() > GZIP_THRESHOLD_BYTES {
            gzipped_response(Body::from(compress::gzip(&body)))
        } else {
            json_response(StatusCode::OK, body)
        });
    };
    let version = page.resource_version.clone();
    let chunks = ListChunks::new(page, api_version, &kind)?;
    if !gzip || size <= GZIP_THRESHOLD_BYTES {
        return Ok(json_response(
            StatusCode::OK,
            Body::from_stream(futures::stream::iter(chunks)),
        ));
    }
    let Some((key, version)) = whole.zip(version) else {
        let stream = compress::gzip_stream(futures::stream::iter(chunks));
        return Ok(gzipped_response(Body::from_stream(stream)));
    };
    if let Some(kept) = state.compressed.get(&key, &version) {
        return Ok(gzipped_response(Body::from(kept)));
    }
    // Compressing a large list takes a while: off the request threads.
    let compressed = tokio::task::spawn_blocking(move || {
        let mut encoder = flate2::write::GzEncoder::new(
            Vec::with_capacity(size / 8 + 256),
            flate2::Compression::new(1),
        );
        for chunk in chunks {
            std::io::Write::write_all(&mut encoder, &chunk?).map_err(serde_json::Error::io)?;
        }
        encoder.finish().map_err(serde_json::Error::io)
    })
    .await
    .map_err(|e| serde_json::Error::io(std::io::Error::other(e)))??;
    let compressed = Bytes::from(compressed);
    state.compressed.put(key, &version, compressed.clone());
    Ok(gzipped_response(Body::from(compressed)))
}

fn gzipped_response(body: Body) -> Response {
    let mut response = json_response(StatusCode::OK, body);
    compress::mark_gzipped(response.headers_mut());
    response
}

/// One line of a watch stream, as kube-apiserver writes them.
fn event_line(event: &WatchEvent<kube::core::DynamicObject>) -> Bytes {
    let mut line = serde_json::to_vec(event).unwrap_or_else(|e| {
        let status = status_json(500, "InternalError", &format!("cannot encode event: {e}"));
        serde_json::json!({"type": "ERROR", "object": status})
            .to_string()
            .into_bytes()
    });
    line.push(b'\n');
    Bytes::from(line)
}

fn error_line(err: &RouterError) -> Bytes {
    let object = match err {
        RouterError::Api { status, .. } => status_value(status),
        other => status_json(other.http_status(), "InternalError", &other.to_string()),
    };
    let mut line = serde_json::json!({"type": "ERROR", "object": object})
        .to_string()
        .into_bytes();
    line.push(b'\n');
    Bytes::from(line)
}

/// Streams watch events as newline-delimited JSON until the source ends, fails (after an
/// `ERROR` event) or `timeout` passes.
fn watch_response(events: EventStream, timeout: Option<Duration>) -> Response {
    let lines = futures::stream::unfold(Some(events), |events| async move {
        let mut events = events?;
        match events.next().await? {
            Ok(event) => Some((event_line(&event), Some(events))),
            Err(err) => Some((error_line(&err), None)),
        }
    })
    .map(Ok::<Bytes, std::convert::Infallible>);
    let body = match timeout {
        Some(timeout) => Body::from_stream(lines.take_until(tokio::time::sleep(timeout))),
        None => Body::from_stream(lines),
    };
    json_response(StatusCode::OK, body)
}

/// Sends the request to the instance apiserver as it came (method, path, query, headers but
/// credentials, body) and returns its answer. A successful write on a resource is reported to
/// the router so that later reads wait for the cache to see it. The client is taken at each
/// request, and a streamed answer (a watch, logs) ends once the instance is deleted or its
/// credentials change.
async fn forward(
    state: &ProxyState,
    instance: &str,
    kube_path: &str,
    resource: Option<&ResourcePath>,
    caller: &Caller,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let connection = match connect(state, instance).await {
        Ok(connection) => connection,
        Err(err) => return router_error_response(&err),
    };
    let client = connection.client.clone();
    let body = match axum::body::to_bytes(body, state.max_body_bytes).await {
        Ok(body) => body,
        Err(err) => {
            return status_response(413, &format!("cannot read the request body: {err}"));
        }
    };
    let path_and_query = match parts.uri.query() {
        Some(q) => format!("{kube_path}?{q}"),
        None => kube_path.to_owned(),
    };
    let mut builder = http::Request::builder()
        .method(parts.method.clone())
        .uri(path_and_query);
    for (name, value) in parts.headers.iter() {
        if forwarded_request_header(name) {
            builder = builder.header(name, value);
        }
    }
    if acts_as_caller(&parts.method, resource, state.write_identity) {
        // Through Karmada's cluster proxy, name and groups only: it passes no uid on.
        let caller = if resource.is_some_and(is_member_proxy) {
            Caller {
                uid: None,
                ..caller.clone()
            }
        } else {
            caller.clone()
        };
        for (name, value) in impersonation_headers(&caller) {
            builder = builder.header(name, value);
        }
    }
    let outgoing = match builder.body(kube::client::Body::from(body.to_vec())) {
        Ok(outgoing) => outgoing,
        Err(err) => return status_response(400, &format!("cannot forward the request: {err}")),
    };
    let answer = match client.send(outgoing).await {
        Ok(answer) => answer,
        Err(err) => {
            tracing::debug!(instance, error = %err, "forwarding to the instance failed");
            return status_response(
                503,
                &format!("the apiserver of instance {instance} cannot be reached: {err}"),
            );
        }
    };
    let (answer_parts, answer_body) = answer.into_parts();
    let mut response = Response::new(Body::empty());
    *response.status_mut() = answer_parts.status;
    for (name, value) in answer_parts.headers.iter() {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            response.headers_mut().append(name, value.clone());
        }
    }
    let observe = parts.method != Method::GET
        && parts.method != Method::HEAD
        && answer_parts.status.is_success();
    match (observe, resource) {
        (true, Some(resource)) => {
            let bytes = match answer_body.collect_bytes().await {
                Ok(bytes) => bytes,
                Err(err) => {
                    return status_response(
                        503,
                        &format!("reading the answer of instance {instance} failed: {err}"),
                    );
                }
            };
            if let Some(cookie) = note_write(state, instance, resource, &bytes).await {
                let scope = parts
                    .uri
                    .path()
                    .find(&format!("/instances/{instance}/proxy"));
                let scope = scope.map(|at| &parts.uri.path()[..at]).unwrap_or_default();
                let scope = format!("{scope}/instances/{instance}");
                if let Some(value) = written_cookie(&cookie.0, &cookie.1, &scope)
                    .and_then(|c| http::HeaderValue::from_str(&c).ok())
                {
                    response.headers_mut().append(header::SET_COOKIE, value);
                }
            }
            *response.body_mut() = Body::from(bytes);
        }
        // Everything else streams through (watches, logs), for as long as the instance stays.
        _ => {
            let lost = identity_lost(&state.clients, instance, &connection.identity);
            let stream = Body::new(answer_body).into_data_stream().take_until(lost);
            *response.body_mut() = Body::from_stream(stream);
        }
    }
    response
}

/// Tells the router about a write the instance accepted, by the resourceVersion it returned;
/// the target and version, for the caller to carry to other replicas.
async fn note_write(
    state: &ProxyState,
    instance: &str,
    resource: &ResourcePath,
    body: &[u8],
) -> Option<(ResourceTarget, String)> {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return None;
    };
    let version = value
        .pointer("/metadata/resourceVersion")
        .and_then(serde_json::Value::as_str)
        .filter(|v| !v.is_empty())?;
    // Writes change objects of the path's resource, whatever the subresource.
    let collection = ResourcePath {
        subresource: None,
        ..resource.clone()
    };
    let target = target_of(state, instance, &collection).await.ok()??;
    state.router.observe_write(&target, version);
    Some((target, version.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::WriteIdentity;
    use http::HeaderName;

    #[test]
    fn a_create_names_its_object_in_json_or_protobuf() {
        // kubectl's ConfigMap "web": Unknown{typeMeta(1), raw(2): ConfigMap{metadata(1):
        // ObjectMeta{name(1): "web", namespace(3): "d"}}}, after the prefix.
        let meta = [&[0x0a, 3][..], b"web", &[0x1a, 1], b"d"].concat();
        let object = [&[0x0a, meta.len() as u8][..], &meta].concat();
        let type_meta = [&[0x0a, 2][..], b"v1", &[0x12, 9], b"ConfigMap"].concat();
        let unknown = [
            &b"k8s\0"[..],
            &[0x0a, type_meta.len() as u8],
            &type_meta,
            &[0x12, object.len() as u8],
            &object,
        ]
        .concat();
        assert_eq!(created_name(&unknown).as_deref(), Some("web"));
        // Cut short: no name rather than a wrong one.
        assert_eq!(created_name(&unknown[..unknown.len() - 4]), None);
        let cases: [(&[u8], Option<&str>); 5] = [
            (
                br#"{"metadata":{"name":"web","labels":{}},"data":{}}"#,
                Some("web"),
            ),
            (br#"{"metadata":{"generateName":"web-"}}"#, None),
            (br#"{"kind":"ConfigMap"}"#, None),
            (b"apiVersion: v1\nkind: ConfigMap\n", None),
            (b"\x6b\x38\x73\x00", None),
        ];
        for (body, want) in cases {
            assert_eq!(created_name(body).as_deref(), want, "{body:?}");
        }
    }

    #[test]
    fn member_reads_and_impersonated_writes_act_as_the_caller() {
        let member = "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/nodes";
        let cases = [
            (Method::GET, member, WriteIdentity::Instance, true),
            (Method::GET, member, WriteIdentity::Impersonate, true),
            (Method::POST, member, WriteIdentity::Instance, true),
            (
                Method::GET,
                "/api/v1/pods/p/log",
                WriteIdentity::Impersonate,
                false,
            ),
            (
                Method::POST,
                "/api/v1/namespaces/a/configmaps",
                WriteIdentity::Impersonate,
                true,
            ),
            (
                Method::POST,
                "/api/v1/namespaces/a/configmaps",
                WriteIdentity::Instance,
                false,
            ),
            (
                Method::GET,
                "/apis/cluster.karmada.io/v1alpha1/clusters/m1",
                WriteIdentity::Instance,
                false,
            ),
            (
                Method::GET,
                "/api/v1/nodes/n1/proxy/metrics",
                WriteIdentity::Instance,
                false,
            ),
        ];
        for (method, path, identity, want) in cases {
            let parsed = parse_kube_path(path);
            let resource = match &parsed {
                KubePath::Resource(r) => Some(r),
                _ => None,
            };
            assert_eq!(
                acts_as_caller(&method, resource, identity),
                want,
                "{method} {path}"
            );
        }
    }

    #[test]
    fn kube_paths_follow_the_proxy_marker() {
        let prefix = "/apis/kairship.io/v1alpha1/instances";
        for (path, want) in [
            (format!("{prefix}/i1/proxy"), Some("/")),
            (format!("{prefix}/i1/proxy/"), Some("/")),
            (
                format!("{prefix}/i1/proxy/apis/apps/v1/deployments"),
                Some("/apis/apps/v1/deployments"),
            ),
            (format!("/mounted{prefix}/i1/proxy/api"), Some("/api")),
            (format!("{prefix}/i1/proxyx"), None),
            (format!("{prefix}/i2/proxy/api"), None),
        ] {
            assert_eq!(kube_path_of(&path, "i1"), want, "{path}");
        }
    }

    #[test]
    fn credentials_and_hop_by_hop_headers_stay_behind() {
        for (name, want) in [
            ("authorization", false),
            ("host", false),
            ("connection", false),
            ("transfer-encoding", false),
            ("content-type", true),
            ("accept", true),
            ("user-agent", true),
            ("x-stream-protocol-version", true),
        ] {
            assert_eq!(
                forwarded_request_header(&HeaderName::from_static(name)),
                want,
                "{name}"
            );
        }
    }
}
