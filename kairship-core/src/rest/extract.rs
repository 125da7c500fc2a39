//! Extractors whose rejections are [`ApiError`]s (`{code, message}` with HTTP 400/401), so that
//! every bad request gets a readable JSON answer.

use axum::Json;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::de::DeserializeOwned;

use crate::access::Caller;
use crate::api::ApiError;
use crate::api::BearerToken;

pub use crate::transport::MAX_BODY_BYTES;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, Json(self)).into_response()
    }
}

/// Reads the body (at most [`MAX_BODY_BYTES`]); an oversized body is a 400 with a message.
async fn body_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    let declared = req
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            too_large()
        } else {
            ApiError::invalid(format!(
                "cannot read the request body: {}",
                rejection.body_text()
            ))
        }
    })
}

fn too_large() -> ApiError {
    ApiError::invalid(format!(
        "the request body is larger than {} MiB",
        MAX_BODY_BYTES / (1024 * 1024)
    ))
}

fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid(
            "the request body is empty; a JSON body is required",
        ));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::invalid(format!("malformed JSON body: {e}")))
}

/// A JSON body; malformed JSON, unknown fields (for types that deny them), empty and
/// oversized bodies are rejected with 400.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = body_bytes(req, state).await?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// An optional JSON body: an empty body is `T::default()`.
#[derive(Debug, Clone)]
pub struct OptionalJson<T>(pub T);

impl<T, S> FromRequest<S> for OptionalJson<T>
where
    T: DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = body_bytes(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(T::default()));
        }
        parse_json(&bytes).map(OptionalJson)
    }
}

/// Query parameters; unknown parameters (for types that deny them) and malformed values are
/// rejected with 400.
#[derive(Debug, Clone)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(q)| ApiQuery(q))
            .map_err(|rejection| {
                let text = rejection.body_text();
                let detail = text
                    .strip_prefix("Failed to deserialize query string: ")
                    .unwrap_or(&text);
                ApiError::invalid(format!("invalid query parameters: {detail}"))
            })
    }
}

/// Path parameters; undecodable ones are rejected with 400.
#[derive(Debug, Clone)]
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(p)| ApiPath(p))
            .map_err(|rejection| {
                ApiError::invalid(format!("invalid path: {}", rejection.body_text()))
            })
    }
}

/// The caller the authentication middleware put on the request, and its token.
#[derive(Debug, Clone)]
pub struct Authenticated {
    /// Who is calling.
    pub caller: Caller,
    /// The bearer token the caller presented.
    pub token: BearerToken,
}

impl<S: Send + Sync> FromRequestParts<S> for Authenticated {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Authenticated>()
            .cloned()
            .ok_or_else(|| {
                ApiError::new(
                    crate::api::Code::Unauthenticated,
                    "the request carries no authenticated caller",
                )
            })
    }
}

/// The body of a PATCH: its type from the `Content-Type` header (merge, JSON, strategic merge
/// or apply patch) and the patch (JSON; YAML or JSON for apply).
#[derive(Debug, Clone)]
pub struct PatchBody(pub crate::api::PatchType, pub serde_json::Value);

impl<S: Send + Sync> FromRequest<S> for PatchBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        use crate::api::PatchType;
        let content_type = req
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let patch_type = PatchType::from_content_type(&content_type).ok_or_else(|| {
            let accepted: Vec<&str> = PatchType::ALL.iter().map(|t| t.content_type()).collect();
            ApiError::invalid(format!(
                "a PATCH body must be one of {} (got Content-Type {content_type:?})",
                accepted.join(", ")
            ))
        })?;
        let bytes = body_bytes(req, state).await?;
        let patch = if patch_type == PatchType::Apply {
            let text = std::str::from_utf8(&bytes)
                .map_err(|_| ApiError::invalid("the apply patch is not UTF-8 text"))?;
            if text.trim().is_empty() {
                return Err(ApiError::invalid(
                    "the request body is empty; a patch is required",
                ));
            }
            serde_saphyr::from_str(text).map_err(|e| {
                ApiError::invalid(format!("malformed apply patch (YAML or JSON): {e}"))
            })?
        } else {
            parse_json(&bytes)?
        };
        Ok(PatchBody(patch_type, patch))
    }
}
