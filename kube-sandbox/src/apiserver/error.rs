//! Errors as kube-apiserver reports them: a `kind: Status` body with reason, code and details.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

/// One cause of an error, as in `Status.details.causes`.
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    /// Machine-readable reason (`FieldValueInvalid`).
    pub reason: String,
    /// Human-readable detail.
    pub message: String,
    /// The field concerned (`spec.replicas`).
    pub field: String,
}

/// An API error that becomes a `kind: Status` response.
#[derive(Clone, Debug)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `StatusReason` (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, ...).
    pub reason: &'static str,
    /// Human-readable message, phrased as kube-apiserver phrases it.
    pub message: String,
    /// `details.name`, `details.group`, `details.kind`.
    pub details: Option<Box<(String, String, String)>>,
    /// `details.causes`.
    pub causes: Vec<Cause>,
    /// Seconds a client should wait before retrying (`Retry-After`).
    pub retry_after: Option<u64>,
    /// Answered as Go's `http.NotFound` does (`404 page not found`, `text/plain`), not as a
    /// `kind: Status`: what kube-apiserver's handler chain answers for paths no API group serves.
    pub plain_text: bool,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            causes: Vec::new(),
            retry_after: None,
            plain_text: false,
        }
    }

    fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        self.details = Some(Box::new((
            name.to_string(),
            group.to_string(),
            kind.to_string(),
        )));
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403 Forbidden, as apimachinery's `NewForbidden` (`pkg/api/errors/errors.go`) words it:
    /// `resource.group "name" is forbidden: why` (without the name when there is none), with
    /// `details` naming the group, the resource (as `kind`) and the name.
    pub fn forbidden(group: &str, resource: &str, name: &str, why: impl std::fmt::Display) -> Self {
        let qualified = qualified(group, resource);
        let message = if name.is_empty() {
            format!("{qualified} is forbidden: {why}")
        } else {
            format!("{qualified} \"{name}\" is forbidden: {why}")
        };
        Self::new(403, "Forbidden", message).with_details(group, resource, name)
    }

    /// The 403 of a request the authorizer denied (kubernetes
    /// `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go`,
    /// `Forbidden` and `forbiddenMessage`): the resource in the message's subject is the
    /// resource alone; the subresource appears in the `cannot` part.
    #[allow(clippy::too_many_arguments)]
    pub fn denied(
        user: &str,
        verb: &str,
        group: &str,
        resource: &str,
        subresource: &str,
        namespace: &str,
        name: &str,
    ) -> Self {
        let requested = if subresource.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}/{subresource}")
        };
        let scope = if namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace \"{namespace}\"")
        };
        Self::forbidden(
            group,
            resource,
            name,
            format!(
                "User \"{user}\" cannot {verb} resource \"{requested}\" in API group \"{group}\" {scope}"
            ),
        )
    }

    /// 404 NotFound for an object (`pods "x" not found`).
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let qualified = qualified(group, resource);
        Self::new(404, "NotFound", format!("{qualified} \"{name}\" not found"))
            .with_details(group, resource, name)
    }

    /// 404 for a path under no served group and version (`/apis/nope.io/v1/foos`,
    /// `/apis/apps/v9`): kube-apiserver's handler chain ends in Go's `http.NotFound` there
    /// (the `NotFoundHandler` of `staging/src/k8s.io/apiserver/pkg/server/handler.go`), which
    /// writes `404 page not found` as plain text.
    pub fn page_not_found() -> Self {
        let mut err = Self::new(404, "NotFound", "404 page not found");
        err.plain_text = true;
        err
    }

    /// 404 NotFound for a resource path of a served group and version that does not exist:
    /// go-restful's service error, as apimachinery's `NewGenericServerResponse` words a 404
    /// (with empty `details`).
    pub fn no_route() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details("", "", "")
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_supported(verb: &str, group: &str, resource: &str) -> Self {
        let qualified = qualified(group, resource);
        Self::new(
            405,
            "MethodNotAllowed",
            format!("{verb} is not supported on resources of kind \"{qualified}\""),
        )
    }

    /// 405 for a verb a resource does not serve (no route for the method): go-restful's
    /// service error, as apimachinery's `NewGenericServerResponse` words a 405.
    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .with_details("", "", "")
    }

    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let qualified = qualified(group, resource);
        Self::new(
            409,
            "AlreadyExists",
            format!("{qualified} \"{name}\" already exists"),
        )
        .with_details(group, resource, name)
    }

    /// 409 Conflict for a stale resourceVersion or failed precondition.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let qualified = qualified(group, resource);
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {qualified} \"{name}\": {why}"),
        )
        .with_details(group, resource, name)
    }

    /// The 409 a stale update gets.
    pub fn stale(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 410 Gone for a resourceVersion older than the event history.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {content_type:?})"
            ),
        )
    }

    /// 415 UnsupportedMediaType for a create or update body, listing what the resource reads.
    pub fn unsupported_body(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 406 NotAcceptable: no media type the client accepts can carry the answer.
    pub fn not_acceptable(accepted: &[&str]) -> Self {
        Self::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 422 Invalid with field causes: `Kind.group "name" is invalid: field: detail, ...`.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let qualified_kind = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        // Cause messages leave out the field; the summary names it, as kube-apiserver does.
        // The summary lists each distinct error once (apimachinery `ErrorList.ToAggregate`),
        // bracketed when there are several; the causes keep every one.
        let mut distinct: Vec<String> = Vec::new();
        for c in &causes {
            let line = if c.field.is_empty() || c.message.starts_with(&c.field) {
                c.message.clone()
            } else {
                format!("{}: {}", c.field, c.message)
            };
            if !distinct.contains(&line) {
                distinct.push(line);
            }
        }
        let summary = distinct.join(", ");
        let message = if distinct.len() > 1 {
            format!("{qualified_kind} \"{name}\" is invalid: [{summary}]")
        } else {
            format!("{qualified_kind} \"{name}\" is invalid: {summary}")
        };
        let mut err = Self::new(422, "Invalid", message).with_details(group, kind, name);
        err.causes = causes;
        err
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
        )
    }

    /// 503 ServiceUnavailable.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// An error with any code, its reason derived from the code as kube-apiserver derives it
    /// for answers relayed from elsewhere (a kubelet).
    pub fn with_code(code: u16, message: impl Into<String>) -> Self {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            406 => "NotAcceptable",
            409 => "Conflict",
            410 => "Expired",
            413 => "RequestEntityTooLarge",
            415 => "UnsupportedMediaType",
            422 => "Invalid",
            429 => "TooManyRequests",
            500 => "InternalError",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "",
        };
        Self::new(code, reason, message)
    }

    /// 504 Timeout.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(504, "Timeout", message)
    }

    /// The `kind: Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if self.details.is_some() || !self.causes.is_empty() || self.retry_after.is_some() {
            let mut details = serde_json::Map::new();
            if let Some(found) = &self.details {
                let (name, group, kind) = found.as_ref();
                // `StatusDetails` fields are `omitempty`.
                if !name.is_empty() {
                    details.insert("name".into(), json!(name));
                }
                if !group.is_empty() {
                    details.insert("group".into(), json!(group));
                }
                if !kind.is_empty() {
                    details.insert("kind".into(), json!(kind));
                }
            }
            if !self.causes.is_empty() {
                let causes: Vec<Value> = self
                    .causes
                    .iter()
                    .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                    .collect();
                details.insert("causes".into(), Value::Array(causes));
            }
            if let Some(secs) = self.retry_after {
                details.insert("retryAfterSeconds".into(), json!(secs));
            }
            status["details"] = Value::Object(details);
        }
        status
    }
}

fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if self.plain_text {
            let mut response = (code, format!("{}\n", self.message)).into_response();
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            headers.insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            return response;
        }
        let body = self.to_status().to_string();
        let mut response = (code, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(secs) = self.retry_after
            && let Ok(value) = HeaderValue::from_str(&secs.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_bodies_match_the_apiserver() {
        let cases = [
            (
                ApiError::not_found("", "pods", "web"),
                404,
                "NotFound",
                "pods \"web\" not found",
            ),
            (
                ApiError::already_exists("apps", "deployments", "d"),
                409,
                "AlreadyExists",
                "deployments.apps \"d\" already exists",
            ),
            (
                ApiError::stale("", "configmaps", "c"),
                409,
                "Conflict",
                "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again",
            ),
            (
                ApiError::gone("too old resource version: 1 (5)"),
                410,
                "Expired",
                "too old resource version: 1 (5)",
            ),
        ];
        for (err, code, reason, message) in cases {
            let status = err.to_status();
            assert_eq!(status["kind"], "Status");
            assert_eq!(status["code"], code);
            assert_eq!(status["reason"], reason);
            assert_eq!(status["message"], message);
        }
    }

    #[test]
    fn forbidden_answers_name_group_and_resource_as_kube_apiserver_does() {
        // A list has no name: `nodes is forbidden`, `details: {kind: nodes}`.
        let list = ApiError::denied("u", "list", "", "nodes", "", "", "").to_status();
        assert_eq!(
            list["message"],
            "nodes is forbidden: User \"u\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"
        );
        assert_eq!(list["details"], json!({"kind": "nodes"}));
        assert_eq!(list["reason"], "Forbidden");
        // A subresource is named in the `cannot` part only.
        let log = ApiError::denied("u", "get", "", "pods", "log", "ns", "web").to_status();
        assert_eq!(
            log["message"],
            "pods \"web\" is forbidden: User \"u\" cannot get resource \"pods/log\" in API group \"\" in the namespace \"ns\""
        );
        assert_eq!(log["details"], json!({"name": "web", "kind": "pods"}));
        let scale =
            ApiError::denied("u", "update", "apps", "deployments", "scale", "ns", "d").to_status();
        assert_eq!(
            scale["message"],
            "deployments.apps \"d\" is forbidden: User \"u\" cannot update resource \"deployments/scale\" in API group \"apps\" in the namespace \"ns\""
        );
        assert_eq!(
            scale["details"],
            json!({"name": "d", "group": "apps", "kind": "deployments"})
        );
    }

    #[test]
    fn a_path_no_group_serves_is_a_plain_page_not_found() {
        let response = ApiError::page_not_found().into_response();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/plain; charset=utf-8"
        );
    }

    #[test]
    fn invalid_lists_each_distinct_error_once_and_keeps_every_cause() {
        let cause = || Cause {
            reason: "FieldValueInvalid".into(),
            message: "Invalid value: \"-x\": bad".into(),
            field: "spec.template.labels".into(),
        };
        let err = ApiError::invalid("apps", "StatefulSet", "db", vec![cause(), cause()]);
        let status = err.to_status();
        assert_eq!(
            status["message"],
            "StatefulSet.apps \"db\" is invalid: spec.template.labels: Invalid value: \"-x\": bad"
        );
        assert_eq!(
            status["details"]["causes"].as_array().map(Vec::len),
            Some(2)
        );
    }

    #[test]
    fn invalid_lists_causes() {
        let err = ApiError::invalid(
            "example.com",
            "Widget",
            "w",
            vec![
                Cause {
                    reason: "FieldValueRequired".into(),
                    message: "spec.size: Required value".into(),
                    field: "spec.size".into(),
                },
                Cause {
                    reason: "FieldValueInvalid".into(),
                    message: "spec.x: Invalid value".into(),
                    field: "spec.x".into(),
                },
            ],
        );
        let status = err.to_status();
        assert_eq!(status["code"], 422);
        assert_eq!(
            status["message"],
            "Widget.example.com \"w\" is invalid: [spec.size: Required value, spec.x: Invalid value]"
        );
        assert_eq!(status["details"]["causes"][0]["field"], "spec.size");
    }
}
