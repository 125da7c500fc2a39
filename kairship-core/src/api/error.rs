//! API errors: `{code, message, details}` as grpc-gateway emits them, with the gRPC status code
//! number in `code` and grpc-gateway's HTTP status mapping.

use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use crate::access::AccessError;
use crate::router::RouterError;

/// gRPC status codes (`google.rpc.Code`); serialized as their number. The gRPC adapter maps
/// them to `tonic::Code` one to one ([`Code::number`] equals `tonic::Code as i32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Code {
    /// Not an error.
    Ok = 0,
    /// The operation was cancelled by the caller.
    Cancelled = 1,
    /// An unknown error.
    Unknown = 2,
    /// The request is malformed (HTTP 400).
    InvalidArgument = 3,
    /// The deadline passed before the operation completed (HTTP 504).
    DeadlineExceeded = 4,
    /// The object does not exist (HTTP 404).
    NotFound = 5,
    /// The object already exists (HTTP 409).
    AlreadyExists = 6,
    /// The caller may not do this (HTTP 403).
    PermissionDenied = 7,
    /// A quota or rate limit was hit (HTTP 429).
    ResourceExhausted = 8,
    /// The system is not in the state the operation needs (HTTP 400; 412 when a
    /// precondition such as a resourceVersion failed).
    FailedPrecondition = 9,
    /// The operation was aborted, e.g. by a concurrency conflict (HTTP 409).
    Aborted = 10,
    /// Out of the valid range (HTTP 400).
    OutOfRange = 11,
    /// Not implemented (HTTP 501).
    Unimplemented = 12,
    /// An internal error (HTTP 500).
    Internal = 13,
    /// The service or the instance cannot be reached right now (HTTP 503).
    Unavailable = 14,
    /// Unrecoverable data loss (HTTP 500).
    DataLoss = 15,
    /// The request has no valid credentials (HTTP 401).
    Unauthenticated = 16,
}

impl Code {
    /// Every code, in number order.
    pub const ALL: [Code; 17] = [
        Code::Ok,
        Code::Cancelled,
        Code::Unknown,
        Code::InvalidArgument,
        Code::DeadlineExceeded,
        Code::NotFound,
        Code::AlreadyExists,
        Code::PermissionDenied,
        Code::ResourceExhausted,
        Code::FailedPrecondition,
        Code::Aborted,
        Code::OutOfRange,
        Code::Unimplemented,
        Code::Internal,
        Code::Unavailable,
        Code::DataLoss,
        Code::Unauthenticated,
    ];

    /// The gRPC code number.
    pub fn number(self) -> i32 {
        self as i32
    }

    /// The code with this number.
    pub fn from_number(number: i32) -> Option<Code> {
        Code::ALL.into_iter().find(|c| c.number() == number)
    }

    /// grpc-gateway's HTTP status for the code.
    pub fn http_status(self) -> u16 {
        match self {
            Code::Ok => 200,
            Code::Cancelled => 499,
            Code::Unknown | Code::Internal | Code::DataLoss => 500,
            Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => 400,
            Code::DeadlineExceeded => 504,
            Code::NotFound => 404,
            Code::AlreadyExists | Code::Aborted => 409,
            Code::PermissionDenied => 403,
            Code::ResourceExhausted => 429,
            Code::Unimplemented => 501,
            Code::Unavailable => 503,
            Code::Unauthenticated => 401,
        }
    }
}

impl utoipa::PartialSchema for Code {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                utoipa::openapi::KnownFormat::Int32,
            )))
            .description(Some(
                "gRPC status code number (google.rpc.Code): 3 InvalidArgument, 5 NotFound, \
                 6 AlreadyExists, 7 PermissionDenied, 9 FailedPrecondition, 13 Internal, \
                 14 Unavailable, 16 Unauthenticated, ...",
            ))
            .enum_values(Some(Code::ALL.map(Code::number)))
            .into()
    }
}

impl ToSchema for Code {}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i32(self.number())
    }
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let number = i32::deserialize(deserializer)?;
        Code::from_number(number)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown gRPC code {number}")))
    }
}

/// `@type` of the detail that marks a failed precondition (answered with HTTP 412).
pub const PRECONDITION_FAILURE_TYPE: &str = "type.googleapis.com/google.rpc.PreconditionFailure";
/// `@type` of the detail that names the field of a bad request.
pub const BAD_REQUEST_TYPE: &str = "type.googleapis.com/google.rpc.BadRequest";

/// An API error, as JSON `{code, message, details}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema, thiserror::Error)]
#[error("{message}")]
#[serde(deny_unknown_fields)]
pub struct ApiError {
    /// The gRPC status code number.
    pub code: Code,
    /// What failed, on which object, readable by people.
    pub message: String,
    /// Structured details (`google.protobuf.Any` as JSON: objects with an `@type`).
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub details: Vec<serde_json::Value>,
}

impl ApiError {
    /// An error with `code` and `message` and no details.
    pub fn new(code: Code, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            details: Vec::new(),
        }
    }

    /// `InvalidArgument`.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(Code::InvalidArgument, message)
    }

    /// `InvalidArgument` about one field, with a `BadRequest` detail naming it.
    pub fn invalid_field(field: &str, message: impl Into<String>) -> ApiError {
        let message = message.into();
        ApiError::invalid(format!("{field}: {message}")).with_detail(json!({
            "@type": BAD_REQUEST_TYPE,
            "fieldViolations": [{"field": field, "description": message}],
        }))
    }

    /// `NotFound`.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(Code::NotFound, message)
    }

    /// `PermissionDenied`.
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(Code::PermissionDenied, message)
    }

    /// `FailedPrecondition` (HTTP 400).
    pub fn failed_precondition(message: impl Into<String>) -> ApiError {
        ApiError::new(Code::FailedPrecondition, message)
    }

    /// `FailedPrecondition` with a `PreconditionFailure` detail (HTTP 412): `subject` failed
    /// the precondition `kind` (e.g. `resourceVersion`).
    pub fn precondition_failed(kind: &str, subject: &str, message: impl Into<String>) -> ApiError {
        let message = message.into();
        ApiError::failed_precondition(message.clone()).with_detail(json!({
            "@type": PRECONDITION_FAILURE_TYPE,
            "violations": [{"type": kind, "subject": subject, "description": message}],
        }))
    }

    /// `Internal`.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(Code::Internal, message)
    }

    /// `Unavailable`.
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError::new(Code::Unavailable, message)
    }

    /// Adds a detail.
    pub fn with_detail(mut self, detail: serde_json::Value) -> ApiError {
        self.details.push(detail);
        self
    }

    /// Whether a detail of type `type_url` is present.
    pub fn has_detail(&self, type_url: &str) -> bool {
        self.details
            .iter()
            .any(|d| d.get("@type").and_then(serde_json::Value::as_str) == Some(type_url))
    }

    /// The HTTP status: grpc-gateway's mapping of the code, except 412 for a failed
    /// precondition that carries a `PreconditionFailure` detail.
    pub fn http_status(&self) -> u16 {
        if self.code == Code::FailedPrecondition && self.has_detail(PRECONDITION_FAILURE_TYPE) {
            412
        } else {
            self.code.http_status()
        }
    }

    /// Maps a Kubernetes `kind: Status` error (HTTP code and reason) to an API error.
    pub fn from_kube_status(status: &kube::core::Status, context: &str) -> ApiError {
        let message = if status.message.is_empty() {
            format!("{context}: {}", status.reason)
        } else {
            format!("{context}: {}", status.message)
        };
        let err = match (status.code, status.reason.as_str()) {
            (409, "AlreadyExists") => ApiError::new(Code::AlreadyExists, message),
            (409, _) => ApiError::precondition_failed("resourceVersion", context, message),
            (code, _) => ApiError::new(code_of_http_status(code), message),
        };
        // An invalid object's causes name its fields (kube-apiserver's `Invalid` Status, from
        // `apierrors.NewInvalid` in k8s.io/apimachinery/pkg/api/errors/errors.go): kept as
        // the field violations of a `BadRequest`, so that a client can point at each field.
        let violations: Vec<serde_json::Value> = status
            .details
            .iter()
            .flat_map(|d| &d.causes)
            .filter(|c| !c.field.is_empty())
            .map(|c| json!({"field": c.field, "description": c.message}))
            .collect();
        if err.code == Code::InvalidArgument && !violations.is_empty() {
            err.with_detail(json!({"@type": BAD_REQUEST_TYPE, "fieldViolations": violations}))
        } else {
            err
        }
    }
}

/// The gRPC code of an HTTP status a Kubernetes apiserver answered (409 is told apart by
/// reason in [`ApiError::from_kube_status`]).
pub fn code_of_http_status(status: u16) -> Code {
    match status {
        200..=299 => Code::Ok,
        400 | 413 | 415 | 422 => Code::InvalidArgument,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::NotFound,
        405 | 501 => Code::Unimplemented,
        409 => Code::Aborted,
        410 | 412 => Code::FailedPrecondition,
        429 => Code::ResourceExhausted,
        499 => Code::Cancelled,
        503 => Code::Unavailable,
        504 => Code::DeadlineExceeded,
        _ => Code::Internal,
    }
}

impl From<RouterError> for ApiError {
    fn from(err: RouterError) -> ApiError {
        match &err {
            RouterError::InvalidQuery { parameter, reason } => {
                ApiError::invalid_field(parameter, reason.clone())
            }
            RouterError::UnknownInstance { instance } => {
                ApiError::not_found(format!("instance {instance} not found"))
            }
            RouterError::Api { target, status } => ApiError::from_kube_status(status, target),
            RouterError::Instance { .. } | RouterError::CacheUnavailable { .. } => {
                ApiError::unavailable(err.to_string())
            }
            RouterError::Decode { .. } | RouterError::WrongOperation { .. } => {
                ApiError::internal(err.to_string())
            }
        }
    }
}

impl From<AccessError> for ApiError {
    fn from(err: AccessError) -> ApiError {
        let code = match &err {
            AccessError::Unauthenticated(_) => Code::Unauthenticated,
            AccessError::Forbidden(_) => Code::PermissionDenied,
            AccessError::Unavailable(_) => Code::Unavailable,
        };
        ApiError::new(code, err.to_string())
    }
}

impl From<serde_json::Error> for ApiError {
    fn from(err: serde_json::Error) -> ApiError {
        ApiError::invalid(format!("malformed JSON: {err}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    #[test]
    fn codes_round_trip_and_map_like_grpc_gateway() {
        let cases = [
            (Code::Ok, 0, 200),
            (Code::InvalidArgument, 3, 400),
            (Code::NotFound, 5, 404),
            (Code::AlreadyExists, 6, 409),
            (Code::PermissionDenied, 7, 403),
            (Code::FailedPrecondition, 9, 400),
            (Code::Aborted, 10, 409),
            (Code::Internal, 13, 500),
            (Code::Unavailable, 14, 503),
            (Code::Unauthenticated, 16, 401),
        ];
        for (code, number, http) in cases {
            assert_eq!(code.number(), number, "{code:?}");
            assert_eq!(code.http_status(), http, "{code:?}");
            assert_eq!(serde_json::to_value(code).unwrap(), json!(number));
            assert_eq!(Code::from_number(number), Some(code));
        }
        for (i, code) in Code::ALL.into_iter().enumerate() {
            assert_eq!(code.number() as usize, i);
        }
        assert_eq!(Code::from_number(17), None);
        assert!(serde_json::from_value::<Code>(json!(99)).is_err());
    }

    #[test]
    fn kubernetes_statuses_map_to_codes_and_http() {
        let status = |code: u16, reason: &str| {
            Status::failure(&format!("reason {reason}"), reason).with_code(code)
        };
        let cases = [
            (status(404, "NotFound"), Code::NotFound, 404),
            (status(409, "AlreadyExists"), Code::AlreadyExists, 409),
            (status(409, "Conflict"), Code::FailedPrecondition, 412),
            (status(422, "Invalid"), Code::InvalidArgument, 400),
            (status(400, "BadRequest"), Code::InvalidArgument, 400),
            (status(403, "Forbidden"), Code::PermissionDenied, 403),
            (status(401, "Unauthorized"), Code::Unauthenticated, 401),
            (status(410, "Expired"), Code::FailedPrecondition, 400),
            (status(429, "TooManyRequests"), Code::ResourceExhausted, 429),
            (status(500, "InternalError"), Code::Internal, 500),
            (status(503, "ServiceUnavailable"), Code::Unavailable, 503),
            (status(504, "Timeout"), Code::DeadlineExceeded, 504),
        ];
        for (status, code, http) in cases {
            let err = ApiError::from_kube_status(&status, "inst/apps/v1/deployments: web");
            assert_eq!(err.code, code, "{status:?}");
            assert_eq!(err.http_status(), http, "{status:?}");
            assert!(err.message.starts_with("inst/apps/v1/deployments: web: "));
            assert!(err.message.contains(&status.reason), "{}", err.message);
        }
    }

    #[test]
    fn an_invalid_object_s_causes_become_field_violations() {
        // As kube-apiserver answers an invalid Deployment (422, reason Invalid).
        let status: kube::core::Status = serde_json::from_value(json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 422,
            "reason": "Invalid",
            "message": "Deployment.apps \"web\" is invalid: [spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec.template.spec.containers: Required value]",
            "details": {"name": "web", "group": "apps", "kind": "Deployment", "causes": [
                {"reason": "FieldValueInvalid", "message": "Invalid value: -1: must be greater than or equal to 0", "field": "spec.replicas"},
                {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.template.spec.containers"},
                {"reason": "UnexpectedServerResponse", "message": "no field"}]}}))
        .unwrap();
        let err = ApiError::from_kube_status(&status, "inst/apps/v1/deployments");
        assert_eq!(err.code, Code::InvalidArgument);
        assert_eq!(
            err.details,
            [json!({"@type": BAD_REQUEST_TYPE, "fieldViolations": [
                {"field": "spec.replicas", "description": "Invalid value: -1: must be greater than or equal to 0"},
                {"field": "spec.template.spec.containers", "description": "Required value"}]})]
        );
        // Causes of other refusals are left in the message only.
        let mut conflict = status.clone();
        conflict.code = 409;
        conflict.reason = "Conflict".into();
        let err = ApiError::from_kube_status(&conflict, "inst");
        assert!(!err.has_detail(BAD_REQUEST_TYPE), "{err:?}");
    }

    #[test]
    fn router_and_access_errors_map_to_codes() {
        let cases: Vec<(ApiError, Code, u16)> = vec![
            (
                RouterError::InvalidQuery {
                    parameter: "labelSelector",
                    reason: "bad".into(),
                }
                .into(),
                Code::InvalidArgument,
                400,
            ),
            (
                RouterError::UnknownInstance {
                    instance: "x".into(),
                }
                .into(),
                Code::NotFound,
                404,
            ),
            (
                RouterError::CacheUnavailable {
                    target: "t".into(),
                    reason: "r".into(),
                }
                .into(),
                Code::Unavailable,
                503,
            ),
            (
                RouterError::WrongOperation {
                    operation: "get".into(),
                    expected: "read",
                }
                .into(),
                Code::Internal,
                500,
            ),
            (
                AccessError::Unauthenticated("no token".into()).into(),
                Code::Unauthenticated,
                401,
            ),
            (
                AccessError::Forbidden("no".into()).into(),
                Code::PermissionDenied,
                403,
            ),
            (
                AccessError::Unavailable("down".into()).into(),
                Code::Unavailable,
                503,
            ),
            (
                serde_json::from_str::<serde_json::Value>("{")
                    .unwrap_err()
                    .into(),
                Code::InvalidArgument,
                400,
            ),
        ];
        for (err, code, http) in cases {
            assert_eq!(err.code, code, "{err:?}");
            assert_eq!(err.http_status(), http, "{err:?}");
            assert!(!err.message.is_empty());
        }
    }

    #[test]
    fn error_json_has_code_message_details() {
        let err = ApiError::invalid_field("pageSize", "0 is not between 1 and 10000");
        let value = serde_json::to_value(&err).unwrap();
        assert_eq!(value["code"], 3);
        assert_eq!(value["message"], "pageSize: 0 is not between 1 and 10000");
        assert_eq!(value["details"][0]["@type"], BAD_REQUEST_TYPE);
        let back: ApiError = serde_json::from_value(value).unwrap();
        assert_eq!(back, err);
        let failed = ApiError::failed_precondition("instance has members");
        assert_eq!(failed.http_status(), 400);
    }
}
