//! Conversions of the audit feature's messages between proto and the API types.

use super::convert::pagination;
use super::pb;
use crate::api::{ApiError, AuditRecordList, ListAuditRequest};
use crate::audit::{AuditObject, AuditRecordSpec};

/// `ListAudit`.
pub fn list_audit(m: pb::ListAuditRequest) -> Result<ListAuditRequest, ApiError> {
    Ok(ListAuditRequest {
        instance: m.instance,
        user: m.user,
        verb: m.verb,
        door: m.door,
        since: m.since,
        until: m.until,
        page: m.page,
        page_size: m.page_size,
    })
}

fn object(o: AuditObject) -> pb::AuditObject {
    pb::AuditObject {
        group: o.group,
        version: o.version,
        resource: o.resource,
        subresource: o.subresource,
        namespace: o.namespace,
        name: o.name,
    }
}

fn record(r: AuditRecordSpec) -> pb::AuditRecord {
    pb::AuditRecord {
        time: r.time,
        user: r.user,
        groups: r.groups,
        acting_as: r.acting_as,
        instance: r.instance,
        door: r.door,
        verb: r.verb,
        object: Some(object(r.object)),
        code: u32::from(r.code),
        message: r.message,
    }
}

/// A page of audit records.
pub fn audit_record_list(list: AuditRecordList) -> Result<pb::AuditRecordList, ApiError> {
    Ok(pb::AuditRecordList {
        items: list.items.into_iter().map(record).collect(),
        pagination: Some(pagination(list.pagination)),
    })
}
