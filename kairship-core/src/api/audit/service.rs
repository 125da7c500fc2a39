//! [`AuditApi`](super::AuditApi) as [`KairshipService`] implements it.

use async_trait::async_trait;
use jiff::Timestamp;
use kube::api::ListParams;

use super::{AuditApi, AuditRecordList, ListAuditRequest};
use crate::access::{Caller, InstanceResource, Verb};
use crate::api::kairship::KairshipService;
use crate::api::{ApiError, Pagination};
use crate::audit::{AuditQuery, AuditRecordSpec, Door, log};
use crate::router::page_bounds;

/// The largest page, as the other lists allow.
const MAX_PAGE_SIZE: u32 = 10_000;

/// Which instances' records a caller may read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readable {
    /// Every record (Kairship's admins).
    Everything,
    /// The records of these instances only.
    Instances(Vec<String>),
}

/// The query `req` asks for, limited to what `readable` lets the caller see; a bad filter is
/// `InvalidArgument` naming it.
pub fn audit_query(req: &ListAuditRequest, readable: &Readable) -> Result<AuditQuery, ApiError> {
    let time = |field: &str, text: &Option<String>| -> Result<Option<Timestamp>, ApiError> {
        text.as_deref()
            .map(|t| {
                t.parse::<Timestamp>().map_err(|e| {
                    ApiError::invalid_field(field, format!("{t:?} is not an RFC 3339 time: {e}"))
                })
            })
            .transpose()
    };
    if let Some(door) = &req.door
        && Door::parse(door).is_none()
    {
        return Err(ApiError::invalid_field(
            "door",
            format!("{door:?} is not a door: use rest, grpc, console or proxy"),
        ));
    }
    if let Some(size) = req.page_size
        && !(1..=MAX_PAGE_SIZE).contains(&size)
    {
        return Err(ApiError::invalid_field(
            "pageSize",
            format!("{size} is outside 1 to {MAX_PAGE_SIZE}"),
        ));
    }
    if req.page == Some(0) {
        return Err(ApiError::invalid_field("page", "pages start at 1"));
    }
    let instances = match (readable, &req.instance) {
        (Readable::Everything, None) => None,
        (Readable::Everything, Some(one)) => Some(vec![one.clone()]),
        (Readable::Instances(all), None) => Some(all.clone()),
        (Readable::Instances(all), Some(one)) => {
            Some(all.iter().filter(|i| *i == one).cloned().collect())
        }
    };
    Ok(AuditQuery {
        instances,
        user: req.user.clone(),
        verb: req.verb.clone(),
        door: req.door.clone(),
        since: time("since", &req.since)?,
        until: time("until", &req.until)?,
    })
}

/// One page of `records` (newest first), as `req` asks.
pub fn audit_page(records: Vec<AuditRecordSpec>, req: &ListAuditRequest) -> AuditRecordList {
    let page = req.page.unwrap_or(1);
    let total = records.len();
    let (start, end, size, pages) = page_bounds(total, page, req.page_size);
    let items = if start < end {
        records.into_iter().skip(start).take(end - start).collect()
    } else {
        Vec::new()
    };
    AuditRecordList {
        items,
        pagination: Pagination {
            total: u64::try_from(total).unwrap_or(u64::MAX),
            page,
            page_size: size,
            pages,
        },
    }
}

impl KairshipService {
    /// Which records `caller` may read: all of them with `list` on every instance, else the
    /// records of each instance it may `get` (one asked for by name is checked alone).
    pub(in crate::api) async fn readable(
        &self,
        caller: &Caller,
        one: Option<&str>,
    ) -> Result<Readable, ApiError> {
        if self
            .authorizer
            .allowed(caller, Verb::List, InstanceResource::Instances, None)
            .await?
        {
            return Ok(Readable::Everything);
        }
        if let Some(instance) = one {
            self.authorize(
                caller,
                Verb::Get,
                InstanceResource::Instances,
                Some(instance),
                "read the audit of the instance",
            )
            .await?;
            return Ok(Readable::Instances(vec![instance.to_string()]));
        }
        let list = self
            .host_call(
                "list instances",
                self.instances().list(&ListParams::default()),
            )
            .await?;
        let names = list.items.into_iter().filter_map(|i| i.metadata.name);
        let checks = names.map(|name| async move {
            let allowed = self
                .authorizer
                .allowed(caller, Verb::Get, InstanceResource::Instances, Some(&name))
                .await;
            (name, allowed)
        });
        let mut readable = Vec::new();
        for (name, allowed) in futures::future::join_all(checks).await {
            if allowed? {
                readable.push(name);
            }
        }
        Ok(Readable::Instances(readable))
    }
}

#[async_trait]
impl AuditApi for KairshipService {
    async fn list_audit(
        &self,
        caller: &Caller,
        req: ListAuditRequest,
    ) -> Result<AuditRecordList, ApiError> {
        // Refuse bad filters before any call.
        audit_query(&req, &Readable::Everything)?;
        let Some(trail) = &self.audit else {
            return Err(ApiError::failed_precondition(
                "this API server keeps no audit trail",
            ));
        };
        let readable = self.readable(caller, req.instance.as_deref()).await?;
        let query = audit_query(&req, &readable)?;
        let records = self
            .host_call("list audit records", log::matching(trail.records(), &query))
            .await?;
        Ok(audit_page(
            records.into_iter().map(|(_, spec)| spec).collect(),
            &req,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Code;

    fn req(f: impl FnOnce(&mut ListAuditRequest)) -> ListAuditRequest {
        let mut r = ListAuditRequest::default();
        f(&mut r);
        r
    }

    #[test]
    fn queries_keep_to_the_readable_instances() {
        let some = Readable::Instances(vec!["a".into(), "b".into()]);
        let cases = [
            ("admin, all", req(|_| {}), Readable::Everything, None),
            (
                "admin, one",
                req(|r| r.instance = Some("c".into())),
                Readable::Everything,
                Some(vec!["c"]),
            ),
            (
                "viewer, all",
                req(|_| {}),
                some.clone(),
                Some(vec!["a", "b"]),
            ),
            (
                "viewer, a readable one",
                req(|r| r.instance = Some("b".into())),
                some.clone(),
                Some(vec!["b"]),
            ),
            (
                "viewer, another",
                req(|r| r.instance = Some("c".into())),
                some,
                Some(vec![]),
            ),
        ];
        for (name, r, readable, expected) in cases {
            let query = audit_query(&r, &readable).unwrap();
            let expected: Option<Vec<String>> =
                expected.map(|v| v.into_iter().map(String::from).collect());
            assert_eq!(query.instances, expected, "{name}");
        }
    }

    #[test]
    fn bad_filters_name_the_field() {
        let cases = [
            ("since", req(|r| r.since = Some("yesterday".into()))),
            (
                "until",
                req(|r| r.until = Some("2026-13-01T00:00:00Z".into())),
            ),
            ("door", req(|r| r.door = Some("window".into()))),
            ("pageSize", req(|r| r.page_size = Some(0))),
            ("pageSize", req(|r| r.page_size = Some(10_001))),
            ("page", req(|r| r.page = Some(0))),
        ];
        for (field, r) in cases {
            let err = audit_query(&r, &Readable::Everything).unwrap_err();
            assert_eq!(err.code, Code::InvalidArgument, "{field}");
            assert!(err.message.contains(field), "{field}: {}", err.message);
        }
        let ok = audit_query(
            &req(|r| {
                r.since = Some("2026-11-29T00:00:00Z".into());
                r.door = Some("proxy".into());
            }),
            &Readable::Everything,
        )
        .unwrap();
        assert_eq!(ok.door.as_deref(), Some("proxy"));
        assert!(ok.since.is_some());
    }

    #[test]
    fn pages_count_from_one() {
        let record = |n: u16| AuditRecordSpec {
            time: String::new(),
            user: "u".into(),
            groups: vec![],
            acting_as: "u".into(),
            instance: "k".into(),
            door: "rest".into(),
            verb: "create".into(),
            object: Default::default(),
            code: n,
            message: None,
        };
        let records: Vec<_> = (1..=5).map(record).collect();
        let second = audit_page(
            records.clone(),
            &req(|r| {
                r.page = Some(2);
                r.page_size = Some(2);
            }),
        );
        assert_eq!(
            second.items.iter().map(|r| r.code).collect::<Vec<_>>(),
            [3, 4]
        );
        assert_eq!(second.pagination.total, 5);
        assert_eq!(second.pagination.pages, 3);
        let all = audit_page(records, &req(|_| {}));
        assert_eq!(all.items.len(), 5);
        assert_eq!(all.pagination.pages, 1);
    }
}
