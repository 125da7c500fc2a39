//! Messages of the audit feature.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::Pagination;
use crate::audit::AuditRecordSpec;

/// Which audit records to list (query parameters in REST). Every filter is optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListAuditRequest {
    /// Only writes to this instance.
    pub instance: Option<String>,
    /// Only writes by this user (the authenticated caller's name).
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
    #[schema(minimum = 1)]
    pub page: Option<u32>,
    /// Records per page, 1 to 10000 (default 10000).
    #[param(minimum = 1, maximum = 10000)]
    #[schema(minimum = 1, maximum = 10000)]
    pub page_size: Option<u32>,
}

/// A page of audit records, newest first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditRecordList {
    /// The records of this page.
    pub items: Vec<AuditRecordSpec>,
    /// Paging facts.
    pub pagination: Pagination,
}
