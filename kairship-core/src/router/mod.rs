//! The read-write split router of the Kairship apiserver.
//!
//! Reads (GET, LIST, WATCH) of a resource of an instance are answered by a [`ReadBackend`] —
//! by default the [`EmbeddedCacheBackend`], one kube-runtime watcher per instance and
//! resource, started on first use — and writes (POST, PUT, PATCH, DELETE) go to the instance's
//! apiserver through a [`WriteBackend`]. While a cache has not synced, or its watch fails, or
//! it errs, reads go to a [`DirectBackend`] instead. After a write returns resourceVersion R,
//! reads of that resource wait (bounded by [`RouterConfig::read_your_writes_timeout`]) until
//! the cache has seen R, else read directly, so nobody reads older data than they wrote.
//!
//! [`ClusterpediaBackend`] is the other read backend: Clusterpedia's aggregated API on the host.
//!
//! The decision itself is the pure [`decide`]; list filtering, sorting and paging is the pure
//! [`CompiledQuery::select`], shared by the cache and the direct backend.

mod backend;
mod cache;
mod cached;
mod clients;
mod clusterpedia;
mod decision;
mod direct;
mod discovery;
mod error;
mod forward;
mod metrics;
mod query;
mod raw;
mod render;
mod selector;
mod split;
mod target;
mod written;

pub use backend::{EventStream, ReadBackend, WatchQuery, WriteBackend, WriteOutcome};
pub use cache::{
    CACHE_LIST_PAGE_SIZE, CacheContent, CachedItem, CachedResource, EmbeddedCacheBackend,
};
pub use clients::{
    InstanceClients, InstanceConnection, InstanceIdentity, StaticInstanceClients, end_when_lost,
    identity_lost, still_current,
};
pub use clusterpedia::{
    CLUSTERPEDIA_RESOURCES_PATH, ClusterpediaBackend, ClusterpediaConfig, ClusterpediaListRequest,
    FUZZY_NAME_LABEL, FuzzySearch, SHADOW_CLUSTER_ANNOTATION, clusterpedia_list_request,
    clusterpedia_pagination, clusterpedia_path, encode_component, encode_query, fuzzy_search,
    is_label_value, list_continuation, syncs, without_clusterpedia_marks,
};
pub use decision::{
    CacheState, FallbackReason, Freshness, Operation, Route, decide, freshness, parse_version,
};
pub use direct::DirectBackend;
pub use discovery::{DiscoveredResource, DiscoveryCache, resources_of};
pub use error::RouterError;
pub use forward::InstanceWriter;
pub use metrics::{RouterMetrics, RouterMetricsSnapshot};
pub use query::{
    CompiledQuery, ContinueToken, ListFields, ListQuery, MAX_PAGE_SIZE, ObjectPage, Pagination,
    SortBy, SortDir, page_bounds,
};
pub use render::{LIST_CHUNK_BYTES, ListChunks, list_meta, render_list, rendered_len};
pub use selector::{
    FieldRequirement, FieldSelector, expressions_match, field_value, labels_match,
    parse_label_selector,
};
pub use split::{ReadWriteRouter, RouterConfig, SplitRouter};
pub use target::{ResourceKey, ResourceTarget, collection_path};
pub use written::{
    WRITTEN_COOKIE_MAX_AGE_SECONDS, WRITTEN_COOKIE_PREFIX, carried_version, written_cookie,
    written_cookie_name, written_target, written_version,
};
