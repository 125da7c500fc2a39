//! Media types, as kube-apiserver negotiates them: the `Content-Type` of create and update
//! bodies (JSON, YAML, or Kubernetes protobuf for built-in kinds; anything else is 415) and
//! the `Accept` of answers (protobuf when that is all a client takes, else the usual JSON).

use crate::apiserver::error::ApiError;
use crate::apiserver::resources::ResourceType;
use crate::protobuf::{self, Answer};
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, header};
use serde_json::Value;

const JSON: &str = "application/json";
const YAML: &str = "application/yaml";

/// The media types a resource's objects can be read from and answered in.
fn media_types(rt: &ResourceType) -> &'static [&'static str] {
    if rt.custom.is_some() {
        &[JSON, YAML]
    } else {
        &[JSON, YAML, protobuf::MEDIA_TYPE]
    }
}

/// The media type of a request body, without parameters, lower-cased.
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// What the client's `Accept` lets the server answer in.
pub fn answer(headers: &HeaderMap) -> Answer {
    protobuf::negotiate(headers.get(header::ACCEPT).and_then(|a| a.to_str().ok()))
}

/// Reads a create or update body of `rt` into JSON. Custom resources have no protobuf form,
/// as in kube-apiserver.
pub fn decode_body(content_type: &str, body: &[u8], rt: &ResourceType) -> Result<Value, ApiError> {
    match content_type {
        // No type at all: the sandbox has always read such bodies as JSON.
        "" | JSON | "*/*" => parse_json(body),
        YAML => serde_saphyr::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}"))),
        protobuf::MEDIA_TYPE if rt.custom.is_none() => {
            protobuf::decode_object(body).map_err(|e| ApiError::bad_request(e.0))
        }
        _ => Err(ApiError::unsupported_body(media_types(rt))),
    }
}

/// [`decode_body`] as JSON bytes, for handlers that read bytes (subresources), whose bodies
/// are kinds of their own (Binding, Eviction, TokenRequest).
pub fn decode_subresource_body(content_type: &str, body: Bytes) -> Result<Bytes, ApiError> {
    match content_type {
        protobuf::MEDIA_TYPE => {
            let value = protobuf::decode_object(&body).map_err(|e| ApiError::bad_request(e.0))?;
            Ok(Bytes::from(value.to_string()))
        }
        YAML => {
            let value: Value = serde_saphyr::from_slice(&body)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
            Ok(Bytes::from(value.to_string()))
        }
        "" | JSON | "*/*" => Ok(body),
        _ => Err(ApiError::unsupported_body(&[
            JSON,
            YAML,
            protobuf::MEDIA_TYPE,
        ])),
    }
}

/// A DELETE body (DeleteOptions) as JSON bytes: client-go's typed clients send it in
/// protobuf; an empty body or any other type passes as it is (read as JSON).
pub fn delete_options_body(content_type: &str, body: Bytes) -> Result<Bytes, ApiError> {
    if content_type == protobuf::MEDIA_TYPE && !body.is_empty() {
        let value = protobuf::decode_object(&body).map_err(|e| ApiError::bad_request(e.0))?;
        return Ok(Bytes::from(value.to_string()));
    }
    Ok(body)
}

/// Parses a JSON body as kube-apiserver words the failure.
pub fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized or malformed JSON: {e}"
        ))
    })
}

/// 406 before doing anything when the client takes only protobuf and `rt`'s objects have
/// none (custom resources), as kube-apiserver negotiates before it acts.
pub fn check_acceptable(headers: &HeaderMap, rt: &ResourceType) -> Result<(), ApiError> {
    if answer(headers) == Answer::Protobuf && rt.custom.is_some() {
        return Err(ApiError::not_acceptable(media_types(rt)));
    }
    Ok(())
}

/// Adds one `Warning: 299 - "..."` header per text.
pub fn with_warnings(mut response: Response, warnings: &[String]) -> Response {
    for text in warnings {
        let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(value) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

/// Re-encodes a JSON answer (an object, a list, a `Status`, or a watch stream) as protobuf.
/// Answers that are not JSON (logs, exec streams) pass unchanged.
pub async fn into_protobuf(response: Response) -> Response {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .is_some_and(|c| c.starts_with(JSON));
    if !is_json {
        return response;
    }
    let streaming = response
        .headers()
        .get(header::TRANSFER_ENCODING)
        .is_some_and(|t| t == "chunked");
    let (mut parts, body) = response.into_parts();
    if streaming {
        parts.headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(protobuf::WATCH_MEDIA_TYPE),
        );
        let mut pending = BytesMut::new();
        let frames = body.into_data_stream().map(move |chunk| {
            pending.extend_from_slice(&chunk?);
            let mut out = BytesMut::new();
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line = pending.split_to(end + 1);
                let Ok(event) = serde_json::from_slice::<Value>(&line) else {
                    continue;
                };
                match protobuf::watch_frame(&event) {
                    Ok(Some(frame)) => out.extend_from_slice(&frame),
                    Ok(None) => {}
                    Err(e) => tracing::warn!("watch event not encodable as protobuf: {e}"),
                }
            }
            Ok::<_, axum::Error>(out.freeze())
        });
        return Response::from_parts(parts, Body::from_stream(frames));
    }
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return protobuf_status(ApiError::internal("the answer could not be read"));
    };
    // Documents that are no API object (`/version`) stay JSON, as kube-apiserver serves them.
    let value = match serde_json::from_slice::<Value>(&bytes) {
        Ok(value) if value.get("kind").is_some() => value,
        _ => return Response::from_parts(parts, Body::from(bytes)),
    };
    match protobuf::encode_object(&value) {
        Ok(Some(encoded)) => {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(protobuf::MEDIA_TYPE),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(encoded))
        }
        Ok(None) => protobuf_status(ApiError::not_acceptable(&[JSON, YAML])),
        Err(e) => protobuf_status(ApiError::internal(e.0)),
    }
}

/// An error's `Status` in protobuf (it always has a protobuf form).
fn protobuf_status(err: ApiError) -> Response {
    let status = err.to_status();
    let mut response = err.into_response();
    if let Ok(Some(encoded)) = protobuf::encode_object(&status) {
        let code = response.status();
        let headers = std::mem::take(response.headers_mut());
        response = (code, encoded).into_response();
        *response.headers_mut() = headers;
        response.headers_mut().remove(header::CONTENT_LENGTH);
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(protobuf::MEDIA_TYPE),
        );
    }
    response
}
