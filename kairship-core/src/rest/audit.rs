//! REST handler of the audit feature: `GET audit`, as JSON or exported as JSON lines.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, header};
use serde::Deserialize;
use utoipa::IntoParams;

use super::extract::{ApiQuery, Authenticated};
use super::handler::{ReadErrorResponses, RestState};
use crate::api::{ApiError, AuditRecordList, ListAuditRequest};

/// Media type of the JSON-lines export: one record per line.
pub const JSONL: &str = "application/jsonl";

/// The query of `GET audit`: [`ListAuditRequest`] and the answer's format.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditParams {
    /// Only writes to this instance.
    pub instance: Option<String>,
    /// Only writes by this user.
    pub user: Option<String>,
    /// Only this verb (`create`, `update`, `patch`, `delete`, `deletecollection`, ...).
    pub verb: Option<String>,
    /// Only writes through this door: `rest`, `grpc`, `console` or `proxy`.
    pub door: Option<String>,
    /// Only writes answered at or after this time (RFC 3339).
    pub since: Option<String>,
    /// Only writes answered before this time (RFC 3339).
    pub until: Option<String>,
    /// 1-based page number (default 1).
    #[param(minimum = 1)]
    pub page: Option<u32>,
    /// Records per page, 1 to 10000 (default: all).
    #[param(minimum = 1, maximum = 10000)]
    pub page_size: Option<u32>,
    /// `json` (the default) or `jsonl`: the page's records as JSON lines (as
    /// `Accept: application/jsonl` asks too).
    pub format: Option<String>,
}

/// Whether the answer is JSON lines: `format=jsonl`, or no format and an `Accept` naming
/// [`JSONL`].
fn wants_jsonl(format: Option<&str>, headers: &HeaderMap) -> Result<bool, ApiError> {
    match format {
        Some("jsonl") => Ok(true),
        Some("json") => Ok(false),
        Some(other) => Err(ApiError::invalid_field(
            "format",
            format!("{other:?} is not a format: use json or jsonl"),
        )),
        None => Ok(headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|media| media.split(';').next().map(str::trim) == Some(JSONL))),
    }
}

/// The records of a page as JSON lines.
fn json_lines(list: &AuditRecordList) -> Result<String, ApiError> {
    let mut out = String::new();
    for record in &list.items {
        let line = serde_json::to_string(record)
            .map_err(|e| ApiError::internal(format!("cannot encode an audit record: {e}")))?;
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// Audit records of writes made through Kairship (REST, gRPC, the console and the native
/// proxy), newest first. Admins of Kairship (who may list every instance) read every record;
/// others read the records of the instances they may read. `format=jsonl` (or
/// `Accept: application/jsonl`) exports the page as JSON lines.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/audit", tag = "audit",
    operation_id = "ListAudit", params(AuditParams),
    responses(
        (status = 200, description = "A page of audit records, newest first",
            content((AuditRecordList = "application/json"), (String = "application/jsonl"))),
        ReadErrorResponses))]
pub async fn list_audit(
    State(s): State<RestState>,
    auth: Authenticated,
    headers: HeaderMap,
    ApiQuery(params): ApiQuery<AuditParams>,
) -> Response {
    let jsonl = match wants_jsonl(params.format.as_deref(), &headers) {
        Ok(jsonl) => jsonl,
        Err(err) => return err.into_response(),
    };
    let req = ListAuditRequest {
        instance: params.instance,
        user: params.user,
        verb: params.verb,
        door: params.door,
        since: params.since,
        until: params.until,
        page: params.page,
        page_size: params.page_size,
    };
    let list = match s.api.list_audit(&auth.caller, req).await {
        Ok(list) => list,
        Err(err) => return err.into_response(),
    };
    if !jsonl {
        return Json(list).into_response();
    }
    match json_lines(&list) {
        Ok(lines) => ([(header::CONTENT_TYPE, JSONL)], lines).into_response(),
        Err(err) => err.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_comes_from_the_query_then_accept() {
        let accept = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT, v.parse().unwrap());
            h
        };
        let none = HeaderMap::new();
        assert!(!wants_jsonl(None, &none).unwrap());
        assert!(wants_jsonl(Some("jsonl"), &none).unwrap());
        assert!(!wants_jsonl(Some("json"), &accept(JSONL)).unwrap());
        assert!(wants_jsonl(None, &accept("application/json;q=0.5, application/jsonl")).unwrap());
        assert!(!wants_jsonl(None, &accept("application/json")).unwrap());
        let err = wants_jsonl(Some("csv"), &none).unwrap_err();
        assert!(err.message.contains("format"), "{}", err.message);
    }
}
