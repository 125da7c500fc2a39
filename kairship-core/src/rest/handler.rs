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
use crate::api::{ApiError, KairshipApi, Object};

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
/// [`MAX_WARNINGS`] and a summary of the rest.
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
