//! REST handler of the fleet search: `GET search`.

use axum::Json;
use axum::extract::State;

use super::extract::{ApiQuery, Authenticated};
use super::handler::{Answer, ReadErrorResponses, RestState};
use crate::api::{SearchRequest, SearchResult};

/// Search objects of one kind across every instance the caller may read, answered from the
/// instances' caches: a fuzzy name, a label selector, a namespace and an instance filter,
/// sorted and paged as the other lists, with each hit's instance and the hits per instance.
/// An instance whose cache has not synced yet is named in `unavailable` (the first search of
/// a kind starts its caches). An unknown kind or a malformed selector is a 400 naming it.
#[utoipa::path(get, path = "/apis/kairship.io/v1alpha1/search", tag = "search",
    operation_id = "Search", params(SearchRequest),
    responses((status = 200, body = SearchResult, description = "A page of hits across the instances searched"),
        ReadErrorResponses))]
pub async fn search(
    State(s): State<RestState>,
    auth: Authenticated,
    ApiQuery(req): ApiQuery<SearchRequest>,
) -> Answer<SearchResult> {
    s.api.search(&auth.caller, req).await.map(Json)
}
