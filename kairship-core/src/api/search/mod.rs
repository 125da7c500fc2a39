//! The fleet search: one query over every instance the caller may read, answered from the
//! embedded caches the router reads (never a list sent to each instance per query): a kind
//! (or group, version and resource), a fuzzy name, a label selector, a namespace and an
//! instance filter, sorted and paged as the other lists, with the instance of each hit and
//! the number of hits per instance.
//!
//! Who reads what: the audit's rule ([`crate::api::audit`]): callers who may list every
//! instance search them all; anyone else searches the instances they may `get`. An instance
//! whose cache has not synced yet (the first search of a kind starts it) is named in
//! `unavailable` instead of failing the search.

mod service;
pub mod types;

use async_trait::async_trait;

use crate::access::Caller;
use crate::api::{ApiError, Code};

pub use service::{SearchHits, search_page, search_query, search_target};
pub use types::{InstanceTotal, SearchHit, SearchRequest, SearchResult, UnavailableInstance};

/// The search part of [`KairshipApi`](crate::api::KairshipApi), which
/// [`KairshipService`](crate::api::KairshipService) implements.
#[async_trait]
pub trait SearchApi: Send + Sync {
    /// Objects of one kind across the instances the caller may read, filtered, sorted and
    /// paged.
    async fn search(&self, caller: &Caller, req: SearchRequest) -> Result<SearchResult, ApiError> {
        let _ = (caller, req);
        Err(ApiError::new(
            Code::Unimplemented,
            "the fleet search is not served by this implementation",
        ))
    }
}
