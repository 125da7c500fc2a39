//! Conversions of the fleet search's messages between proto and the API types.

use super::convert::{enum_value, pagination, sort_by, sort_dir};
use super::pb;
use crate::api::{ApiError, SearchHit, SearchRequest, SearchResult};

/// `Search`.
pub fn search_request(m: pb::SearchRequest) -> Result<SearchRequest, ApiError> {
    Ok(SearchRequest {
        kind: m.kind,
        group: m.group,
        version: m.version,
        resource: m.resource,
        name: m.name,
        label_selector: m.label_selector,
        namespace: m.namespace,
        instance: m.instance,
        cluster: m.cluster,
        page: m.page,
        page_size: m.page_size,
        sort_by: sort_by(enum_value("sortBy", m.sort_by)?),
        sort_dir: sort_dir(enum_value("sortDir", m.sort_dir)?),
    })
}

fn hit(h: SearchHit) -> pb::SearchHit {
    pb::SearchHit {
        instance: h.instance,
        cluster: h.cluster,
        api_version: h.api_version,
        kind: h.kind,
        namespace: h.namespace,
        name: h.name,
        labels: h.labels.into_iter().collect(),
        creation_timestamp: h.creation_timestamp,
    }
}

/// A page of hits.
pub fn search_result(r: SearchResult) -> pb::SearchResult {
    pb::SearchResult {
        items: r.items.into_iter().map(hit).collect(),
        totals: r
            .totals
            .into_iter()
            .map(|t| pb::InstanceTotal {
                instance: t.instance,
                total: t.total,
            })
            .collect(),
        unavailable: r
            .unavailable
            .into_iter()
            .map(|u| pb::UnavailableInstance {
                instance: u.instance,
                reason: u.reason,
            })
            .collect(),
        pagination: Some(pagination(r.pagination)),
    }
}
