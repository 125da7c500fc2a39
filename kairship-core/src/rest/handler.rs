//! What every REST handler shares: the state, the answer types, the documented error
//! responses, the write warnings, and the route table's entries.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use axum::Json;
use http::HeaderMap;
use utoipa::openapi::path::HttpMethod;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};

use crate::api::WorkloadKind;
use crate::api::fields::{WriteOptions, with_field_validation};
use crate::api::{ApiError, CORE_GROUP, KairshipApi, Object};
use crate::router::{written_cookie, written_target, written_version};

/// What every REST handler shares.
#[derive(Clone)]
pub struct RestState {
    /// The service.
    pub api: Arc<dyn KairshipApi>,
}

impl std::fmt::Debug for RestState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestState").finish_non_exhaustive()
    }
}

pub(super) type Answer<T> = Result<Json<T>, ApiError>;

/// The answer of a write that carries an object: the object, and a `Warning` header per
/// dropped unknown field (`?fieldValidation=Warn`).
pub(super) type Written = Result<(HeaderMap, Json<Object>), ApiError>;

/// Most `Warning` headers one answer carries; more unknown fields are summed up in one more.
const MAX_WARNINGS: usize = 100;

/// Runs one write under the request's `fieldValidation` and answers its warnings as headers.
pub(super) async fn written<F>(options: WriteOptions, call: F) -> Written
where
    F: Future<Output = Result<Object, ApiError>>,
{
    let mode = options.field_validation.unwrap_or_default();
    let (result, warnings) = with_field_validation(mode, call).await;
    Ok((warning_headers(&warnings), Json(result?)))
}

/// `Warning: 299 - "<text>"` headers (RFC 7234, as kube-apiserver sends them), at most
/// `MAX_WARNINGS` and a summary of the rest.
pub fn warning_headers(warnings: &[String]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let mut texts: Vec<String> = warnings.iter().take(MAX_WARNINGS).cloned().collect();
    if warnings.len() > MAX_WARNINGS {
        texts.push(format!("{} more warnings", warnings.len() - MAX_WARNINGS));
    }
    for text in texts {
        // A quoted-string of visible ASCII: field names from the body may hold anything.
        let mut quoted = String::with_capacity(text.len() + 10);
        for c in text.chars() {
            match c {
                '"' | '\\' => {
                    quoted.push('\\');
                    quoted.push(c);
                }
                ' '..='~' => quoted.push(c),
                _ => quoted.push('?'),
            }
        }
        if let Ok(value) = http::HeaderValue::from_str(&format!("299 - \"{quoted}\"")) {
            headers.append(http::header::WARNING, value);
        }
    }
    headers
}

/// The error answers every operation may give, documented once.
pub struct ErrorResponses;

impl utoipa::IntoResponses for ErrorResponses {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        [
            ("400", "Bad request: malformed body or parameters, unknown fields, bad paging, oversized body, or a failed precondition"),
            ("401", "No valid bearer token"),
            ("403", "The caller may not do this on the instance"),
            ("404", "No such instance or object"),
            ("409", "The object already exists"),
            ("412", "A precondition (resourceVersion) failed"),
            ("500", "Internal error"),
            ("503", "The host cluster or the instance cannot be reached"),
        ]
        .into_iter()
        .map(|(status, description)| {
            let response = ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ApiError")))
                        .build(),
                )
                .build();
            (status.to_owned(), RefOr::T(response))
        })
        .collect()
    }
}

/// The error answers of reads: those of [`ErrorResponses`] but 409 and 412, which only
/// writes give.
pub struct ReadErrorResponses;

impl utoipa::IntoResponses for ReadErrorResponses {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut responses = ErrorResponses::responses();
        responses.retain(|status, _| status != "409" && status != "412");
        responses
    }
}

pub(super) fn workload_kind(text: &str) -> Result<WorkloadKind, ApiError> {
    WorkloadKind::parse(text).ok_or_else(|| {
        let kinds: Vec<&str> = WorkloadKind::ALL.iter().map(|k| k.plural()).collect();
        ApiError::not_found(format!(
            "unknown workload kind {text:?}; one of: {}",
            kinds.join(", ")
        ))
    })
}

/// One route of the REST router: method, axum path, and the documented paths it serves
/// (`{name}:pause` style paths are served by one route whose last segment carries the verb).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RestRoute {
    /// Upper-case HTTP method.
    pub method: String,
    /// The path as registered with axum.
    pub path: String,
    /// The OpenAPI paths this route serves.
    pub documented_as: Vec<String>,
}

pub(super) fn verb_doc<P>() -> (String, HttpMethod, utoipa::openapi::path::Operation)
where
    P: utoipa::Path + utoipa::__dev::Tags<'static>,
{
    // `Path::operation` leaves out the `tag = ...` of the attribute; `routes!` adds it from
    // `Tags` the same way. Untagged, generated clients would file these under a default API.
    let mut operation = P::operation();
    operation
        .tags
        .get_or_insert_with(Vec::new)
        .extend(P::tags().into_iter().map(str::to_owned));
    (P::path(), HttpMethod::Post, operation)
}

/// Declares one operation on the objects of any resource as two handlers, one for
/// cluster-scoped objects (`…/instances/{instance}/resources/{group}/{version}/{resource}`) and
/// one for objects in a namespace (`…/instances/{instance}/namespaces/{namespace}/resources/…`):
/// the same arguments, body and documented answers, each with its own doc comment, path and
/// operation id. The path parameters (`instance`, `namespace`, `group`, `version`, `resource`
/// and, for `object` operations, `name`) are documented here once.
macro_rules! object_operation {
    (
        $method:ident $target:ident
        $(#[doc = $cluster_doc:tt])* cluster $cluster_fn:ident $cluster_id:tt $cluster_path:tt,
        $(#[doc = $ns_doc:tt])* namespaced $ns_fn:ident $ns_id:tt $ns_path:tt,
        query [$($query:tt)*], doc [$($doc:tt)*],
        fn ($($args:tt)*) -> $ret:ty $body:block
    ) => {
        $crate::rest::handler::object_operation!(@target $target
            [$(#[doc = $cluster_doc])*] $cluster_fn $cluster_id $cluster_path $method
            [("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),]
            [$($query)*] [$($doc)*] ($($args)*) -> $ret $body);
        $crate::rest::handler::object_operation!(@target $target
            [$(#[doc = $ns_doc])*] $ns_fn $ns_id $ns_path $method
            [("instance" = String, Path, description = "Instance name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
             ("namespace" = String, Path, description = "Namespace", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),]
            [$($query)*] [$($doc)*] ($($args)*) -> $ret $body);
    };
    (@target $target:ident $docs:tt $fn:ident $id:tt $path:tt $method:ident [$($params:tt)*] $($rest:tt)*) => {
        $crate::rest::handler::object_operation!(@name $target $docs $fn $id $path $method
            [$($params)*
             ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
             ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
             ("resource" = String, Path, description = "Resource plural, as discovery lists it", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),]
            $($rest)*);
    };
    (@name collection $docs:tt $fn:ident $id:tt $path:tt $method:ident $params:tt $($rest:tt)*) => {
        $crate::rest::handler::object_operation!(@emit $docs $fn $id $path $method $params $($rest)*);
    };
    (@name object $docs:tt $fn:ident $id:tt $path:tt $method:ident [$($params:tt)*] $($rest:tt)*) => {
        $crate::rest::handler::object_operation!(@emit $docs $fn $id $path $method
            [$($params)* ("name" = String, Path, description = "Object name", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),]
            $($rest)*);
    };
    (@emit $docs:tt $fn:ident $id:tt $path:tt $method:ident $($rest:tt)*) => {
        $crate::rest::handler::object_operation!(@emit_tagged "resources" $docs $fn $id $path
            $method $($rest)*);
    };
    (@emit_tagged $tag:tt [$($docs:tt)*] $fn:ident $id:tt $path:tt $method:ident [$($params:tt)*]
        [$($query:tt)*] [$($doc:tt)*] ($($args:tt)*) -> $ret:ty $body:block) => {
        $($docs)*
        #[utoipa::path($method, path = $path, tag = $tag, operation_id = $id,
            params($($params)* $($query)*), $($doc)*)]
        pub async fn $fn($($args)*) -> $ret $body
    };
}
pub(crate) use object_operation;

/// Declares one operation on objects of a typed kind as two handlers, one for the
/// instance-wide or cluster-scoped path (`…/instances/{instance}/{kind}`) and one for the
/// namespaced path (`…/instances/{instance}/namespaces/{namespace}/{kind}`): the same arguments
/// and body, each with its own doc comment, path, operation id, `kind` description and
/// documented body and answers. The path parameters are documented here once.
macro_rules! kind_operation {
    (
        $method:ident $target:ident
        $(#[doc = $cluster_doc:tt])* cluster $cluster_fn:ident $cluster_id:tt $cluster_path:tt
            kind $cluster_kind:tt doc [$($cluster_more:tt)*],
        $(#[doc = $ns_doc:tt])* namespaced $ns_fn:ident $ns_id:tt $ns_path:tt
            kind $ns_kind:tt doc [$($ns_more:tt)*],
        query [$($query:tt)*],
        fn ($($args:tt)*) -> $ret:ty $body:block
    ) => {
        $crate::rest::handler::kind_operation!(@name $target
            [$(#[doc = $cluster_doc])*] $cluster_fn $cluster_id $cluster_path $method
            [("instance" = String, Path, description = "Instance name"),
             ("kind" = ResourceKind, Path, description = $cluster_kind),]
            [$($query)*] [$($cluster_more)*] ($($args)*) -> $ret $body);
        $crate::rest::handler::kind_operation!(@name $target
            [$(#[doc = $ns_doc])*] $ns_fn $ns_id $ns_path $method
            [("instance" = String, Path, description = "Instance name"),
             ("namespace" = String, Path, description = "Namespace"),
             ("kind" = ResourceKind, Path, description = $ns_kind),]
            [$($query)*] [$($ns_more)*] ($($args)*) -> $ret $body);
    };
    (@name collection $docs:tt $fn:ident $id:tt $path:tt $method:ident $params:tt $($rest:tt)*) => {
        $crate::rest::handler::object_operation!(@emit $docs $fn $id $path $method $params $($rest)*);
    };
    (@name object $docs:tt $fn:ident $id:tt $path:tt $method:ident [$($params:tt)*] $($rest:tt)*) => {
        $crate::rest::handler::object_operation!(@emit $docs $fn $id $path $method
            [$($params)* ("name" = String, Path, description = "Object name"),] $($rest)*);
    };
}
pub(crate) use kind_operation;

/// Declares one read of a member cluster's objects as two handlers, one for cluster-scoped
/// objects (`…/clusters/{cluster}/resources/{group}/{version}/{resource}`) and one for objects
/// in a namespace (`…/clusters/{cluster}/namespaces/{namespace}/resources/…`), documented
/// under `members` with the path parameters written here once.
macro_rules! member_object_operation {
    (
        $method:ident $target:ident
        $(#[doc = $cluster_doc:tt])* cluster $cluster_fn:ident $cluster_id:tt $cluster_path:tt,
        $(#[doc = $ns_doc:tt])* namespaced $ns_fn:ident $ns_id:tt $ns_path:tt,
        query [$($query:tt)*], doc [$($doc:tt)*],
        fn ($($args:tt)*) -> $ret:ty $body:block
    ) => {
        $crate::rest::handler::member_object_operation!(@resource $target
            [$(#[doc = $cluster_doc])*] $cluster_fn $cluster_id $cluster_path $method
            [("instance" = String, Path, description = "Instance name"),
             ("cluster" = String, Path, description = "Member cluster name"),]
            [$($query)*] [$($doc)*] ($($args)*) -> $ret $body);
        $crate::rest::handler::member_object_operation!(@resource $target
            [$(#[doc = $ns_doc])*] $ns_fn $ns_id $ns_path $method
            [("instance" = String, Path, description = "Instance name"),
             ("cluster" = String, Path, description = "Member cluster name"),
             ("namespace" = String, Path, description = "Namespace"),]
            [$($query)*] [$($doc)*] ($($args)*) -> $ret $body);
    };
    (@resource $target:ident $docs:tt $fn:ident $id:tt $path:tt $method:ident [$($params:tt)*] $($rest:tt)*) => {
        $crate::rest::handler::member_object_operation!(@name $target $docs $fn $id $path $method
            [$($params)*
             ("group" = String, Path, description = "API group; `core` for the core group", pattern = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length = 253),
             ("version" = String, Path, description = "API version (v1, v1beta1)", pattern = "^v[a-z0-9]*$", max_length = 63),
             ("resource" = String, Path, description = "Resource plural", pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length = 63),]
            $($rest)*);
    };
    (@name collection $docs:tt $fn:ident $id:tt $path:tt $method:ident $params:tt $($rest:tt)*) => {
        $crate::rest::handler::object_operation!(@emit_tagged "members" $docs $fn $id $path
            $method $params $($rest)*);
    };
    (@name object $docs:tt $fn:ident $id:tt $path:tt $method:ident [$($params:tt)*] $($rest:tt)*) => {
        $crate::rest::handler::object_operation!(@emit_tagged "members" $docs $fn $id $path
            $method [$($params)* ("name" = String, Path, description = "Object name"),] $($rest)*);
    };
}
pub(crate) use member_object_operation;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warning_headers_table() {
        let values = |warnings: &[String]| -> Vec<String> {
            warning_headers(warnings)
                .get_all(http::header::WARNING)
                .iter()
                .map(|v| v.to_str().unwrap().to_owned())
                .collect()
        };
        assert!(values(&[]).is_empty());
        assert_eq!(
            values(&[
                r#"unknown field "spec.bogus""#.to_owned(),
                "a\\b é\n".to_owned()
            ]),
            [
                r#"299 - "unknown field \"spec.bogus\"""#,
                r#"299 - "a\\b ??""#
            ]
        );
        let many: Vec<String> = (0..MAX_WARNINGS + 5).map(|i| format!("w{i}")).collect();
        let got = values(&many);
        assert_eq!(got.len(), MAX_WARNINGS + 1);
        assert_eq!(got[MAX_WARNINGS], r#"299 - "5 more warnings""#);
    }
}

/// Read-your-writes across API server replicas for a REST call on one resource of an instance:
/// the `kairship-written` cookie the native proxy uses, set after a write and honoured on reads.
#[derive(Debug)]
pub(super) struct WrittenCookie {
    /// `instance`, `group` (as the API spells it, `core` for the core group), `version` and
    /// plural of the call's resource.
    resource: [String; 4],
    /// The request's `Cookie` headers, joined.
    cookies: Option<String>,
    /// The path prefix of the instance's calls (`…/instances/{instance}`), which the cookie is
    /// scoped to.
    scope: Option<String>,
}

impl WrittenCookie {
    /// The cookie state of a request on `group`/`version`/`plural` of `instance`.
    pub(super) fn of(
        parts: &http::request::Parts,
        instance: &str,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Self {
        let cookies: Vec<&str> = parts
            .headers
            .get_all(http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let path = parts.uri.path();
        let instance_path = format!("/instances/{instance}");
        let scope = path
            .find(&instance_path)
            .and_then(|at| path.get(..at + instance_path.len()))
            .map(str::to_owned);
        WrittenCookie {
            resource: [instance, group, version, plural].map(str::to_owned),
            cookies: (!cookies.is_empty()).then(|| cookies.join("; ")),
            scope,
        }
    }

    fn target(&self) -> crate::router::ResourceTarget {
        let [instance, group, version, plural] = &self.resource;
        let group = if group == CORE_GROUP { "" } else { group };
        written_target(instance, group, version, plural)
    }

    /// A write through another replica whose version the caller brings back makes this
    /// read wait (bounded) for it.
    pub(super) fn await_carried(&self, api: &dyn KairshipApi) {
        let target = self.target();
        if let Some(version) = self
            .cookies
            .as_deref()
            .and_then(|c| written_version(c, &target))
        {
            let [instance, group, version_, plural] = &self.resource;
            api.await_written(instance, group, version_, plural, version);
        }
    }

    /// [`written`], with the cookie carrying the written object's resourceVersion.
    pub(super) async fn written<F>(self, options: WriteOptions, call: F) -> Written
    where
        F: Future<Output = Result<Object, ApiError>>,
    {
        let (mut headers, Json(object)) = written(options, call).await?;
        let version = object
            .pointer("/metadata/resourceVersion")
            .and_then(serde_json::Value::as_str);
        if let (Some(scope), Some(version)) = (&self.scope, version)
            && let Some(cookie) = written_cookie(&self.target(), version, scope)
            && let Ok(value) = http::HeaderValue::from_str(&cookie)
        {
            headers.append(http::header::SET_COOKIE, value);
        }
        Ok((headers, Json(object)))
    }
}
