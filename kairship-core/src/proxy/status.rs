//! Errors answered the way kube-apiserver answers them: `kind: Status` bodies.

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use kube::core::Status;

use crate::access::AccessError;
use crate::router::RouterError;

/// The JSON of a failure `Status` with `code`, `reason` and `message`.
pub fn status_json(code: u16, reason: &str, message: &str) -> serde_json::Value {
    serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    })
}

/// kube-apiserver's `reason` for an HTTP status.
pub fn reason_of(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Expired",
        413 => "RequestEntityTooLarge",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    }
}

/// A JSON response.
pub fn json_response(code: StatusCode, body: impl Into<Body>) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A `kind: Status` error response.
pub fn status_response(code: u16, message: &str) -> Response {
    let body = status_json(code, reason_of(code), message).to_string();
    let code = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(code, body)
}

/// A failure `Status` as a JSON value (with `kind` and `apiVersion`, which kube's `Status`
/// type leaves out).
pub fn status_value(status: &Status) -> serde_json::Value {
    let mut value = serde_json::to_value(status).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("kind".into(), "Status".into());
        map.insert("apiVersion".into(), "v1".into());
        map.entry("metadata")
            .or_insert_with(|| serde_json::json!({}));
    }
    value
}

/// The response for a router error: the instance's own `Status` when it answered one.
pub fn router_error_response(err: &RouterError) -> Response {
    match err {
        RouterError::Api { status, .. } if status.code != 0 => {
            let code =
                StatusCode::from_u16(status.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            json_response(code, status_value(status).to_string())
        }
        other => status_response(other.http_status(), &other.to_string()),
    }
}

/// The response for an authentication or authorization failure.
pub fn access_error_response(err: &AccessError) -> Response {
    let code = match err {
        AccessError::Unauthenticated(_) => 401,
        AccessError::Forbidden(_) => 403,
        AccessError::Unavailable(_) => 503,
    };
    status_response(code, &err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_look_like_kube_apiservers() {
        for (err, code, reason) in [
            (
                AccessError::Unauthenticated("x".into()),
                401,
                "Unauthorized",
            ),
            (AccessError::Forbidden("x".into()), 403, "Forbidden"),
            (
                AccessError::Unavailable("x".into()),
                503,
                "ServiceUnavailable",
            ),
        ] {
            let response = access_error_response(&err);
            assert_eq!(response.status().as_u16(), code);
            assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
            assert_eq!(status_json(code, reason_of(code), "m")["reason"], reason);
        }
        let status = Status::failure("deployments.apps \"x\" not found", "NotFound").with_code(404);
        let value = status_value(&status);
        assert_eq!(value["kind"], "Status");
        assert_eq!(value["code"], 404);
        assert_eq!(value["reason"], "NotFound");
        let err = RouterError::Api {
            target: "t".into(),
            status: Box::new(status),
        };
        assert_eq!(router_error_response(&err).status().as_u16(), 404);
        let bad = RouterError::InvalidQuery {
            parameter: "continue",
            reason: "r".into(),
        };
        assert_eq!(router_error_response(&bad).status().as_u16(), 400);
    }
}
