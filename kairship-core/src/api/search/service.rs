//! [`SearchApi`](super::SearchApi) as [`KairshipService`] implements it, and the plain steps
//! it is made of: what is searched ([`search_target`]), the filter ([`search_query`]) and the
//! order and page of the hits ([`search_page`]).

use std::cmp::Ordering;
use std::sync::Arc;

use async_trait::async_trait;
use kube::api::ListParams;
use kube::core::ApiResource;

use super::{
    InstanceTotal, SearchApi, SearchHit, SearchRequest, SearchResult, UnavailableInstance,
};
use crate::access::Caller;
use crate::api::audit::Readable;
use crate::api::kairship::{KairshipService, gvr};
use crate::api::kinds::ResourceKind;
use crate::api::{ApiError, Code, Pagination, SortBy, SortDir};
use crate::router::{
    self, CacheContent, CachedItem, CompiledQuery, EmbeddedCacheBackend, ListFields, ListQuery,
    page_bounds,
};

/// What a search looks for: a kind the API serves by name, or any resource the instances'
/// discovery finds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SearchTarget {
    /// A typed kind (`kind=Deployment`).
    Kind(ResourceKind),
    /// `group`, `version` and `resource`.
    Resource {
        group: String,
        version: String,
        resource: String,
    },
}

/// The target `req` names: `kind` (a kind or its plural, ignoring case), or all three of
/// `group`, `version` and `resource`; anything else is `InvalidArgument` naming the field.
pub fn search_target(req: &SearchRequest) -> Result<SearchTarget, ApiError> {
    let gvr = (&req.group, &req.version, &req.resource);
    match (&req.kind, gvr) {
        (Some(kind), (None, None, None)) => ResourceKind::ALL
            .into_iter()
            .find(|k| k.kind().eq_ignore_ascii_case(kind) || k.plural().eq_ignore_ascii_case(kind))
            .map(SearchTarget::Kind)
            .ok_or_else(|| {
                let known: Vec<&str> = ResourceKind::ALL.iter().map(|k| k.kind()).collect();
                ApiError::invalid_field(
                    "kind",
                    format!(
                        "{kind:?} is not a kind the search knows: use one of {} or group, \
                         version and resource",
                        known.join(", ")
                    ),
                )
            }),
        (Some(_), _) => Err(ApiError::invalid_field(
            "kind",
            "give either kind or group, version and resource, not both",
        )),
        (None, (Some(group), Some(version), Some(resource))) => {
            for (field, value) in [("version", version), ("resource", resource)] {
                if value.is_empty() {
                    return Err(ApiError::invalid_field(field, "must not be empty"));
                }
            }
            Ok(SearchTarget::Resource {
                group: group.clone(),
                version: version.clone(),
                resource: resource.clone(),
            })
        }
        (None, (None, None, None)) => Err(ApiError::invalid_field(
            "kind",
            "say what to search: kind (Deployment) or group, version and resource",
        )),
        (None, _) => Err(ApiError::invalid_field(
            "resource",
            "group, version and resource go together: give all three",
        )),
    }
}

/// The filter, order and paging of `req`, validated: the label selector parses (else
/// `InvalidArgument` naming `labelSelector`), the namespace is a name, paging as the other
/// lists, and no member cluster (member views are not cached).
pub fn search_query(req: &SearchRequest) -> Result<CompiledQuery, ApiError> {
    if req.cluster.is_some() {
        return Err(ApiError::invalid_field(
            "cluster",
            "member views are not cached, so they cannot be searched: search the instances' \
             own objects, or list the member's objects under instances/{i}/clusters/{c}",
        ));
    }
    let namespaces = match req.namespace.as_deref() {
        Some(ns) => {
            crate::api::body::check_name("namespace", ns)?;
            vec![ns.to_owned()]
        }
        None => Vec::new(),
    };
    let sort_by = match req.sort_by.unwrap_or_default() {
        SortBy::Name => router::SortBy::Name,
        SortBy::Namespace => router::SortBy::Namespace,
        SortBy::CreationTimestamp => router::SortBy::CreationTimestamp,
        SortBy::State => {
            return Err(ApiError::invalid_field(
                "sortBy",
                "state is only known for instances; use name, namespace or creationTimestamp",
            ));
        }
    };
    let query = ListQuery {
        label_selector: req.label_selector.clone(),
        field_selector: None,
        name: req.name.clone(),
        namespaces,
        sort_by,
        sort_field: None,
        sort_dir: match req.sort_dir.unwrap_or_default() {
            SortDir::Asc => router::SortDir::Asc,
            SortDir::Desc => router::SortDir::Desc,
        },
        page: req.page,
        page_size: Some(req.page_size.unwrap_or(router::MAX_PAGE_SIZE)),
    };
    Ok(query.compile()?)
}

/// The instances named by an `instance` filter (`a,b`), each once, in order.
fn named_instances(filter: Option<&str>) -> Result<Option<Vec<String>>, ApiError> {
    let Some(list) = filter else {
        return Ok(None);
    };
    let mut names: Vec<String> = Vec::new();
    for name in list.split(',').map(str::trim) {
        crate::api::body::check_name("instance", name)?;
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    Ok(Some(names))
}

/// Hits of several instances, each an instance's name and an object read through
/// [`ListFields`].
pub type SearchHits<T> = Vec<(Arc<str>, T)>;

/// Compares two hits as `query` sorts: by its key, ties by instance, namespace and name.
fn compare_hits<T: ListFields>(
    query: &CompiledQuery,
    a: &(Arc<str>, T),
    b: &(Arc<str>, T),
) -> Ordering {
    let (ia, oa) = (&a.0, &a.1);
    let (ib, ob) = (&b.0, &b.1);
    let identity = |i: &Arc<str>, o: &T| {
        (
            i.clone(),
            o.namespace().map(str::to_owned),
            o.name().map(str::to_owned),
        )
    };
    let key = match query.sort_by {
        router::SortBy::Name => oa.name().cmp(&ob.name()),
        router::SortBy::Namespace => (oa.namespace(), oa.name()).cmp(&(ob.namespace(), ob.name())),
        router::SortBy::CreationTimestamp => oa.creation_timestamp().cmp(&ob.creation_timestamp()),
    };
    let ord = key.then_with(|| identity(ia, oa).cmp(&identity(ib, ob)));
    match query.sort_dir {
        router::SortDir::Asc => ord,
        router::SortDir::Desc => ord.reverse(),
    }
}

/// Sorts the (already matching) `hits` as `query` asks and keeps its page.
pub fn search_page<T: ListFields>(
    mut hits: SearchHits<T>,
    query: &CompiledQuery,
) -> (SearchHits<T>, Pagination) {
    hits.sort_by(|a, b| compare_hits(query, a, b));
    let total = hits.len();
    let (start, end, size, pages) = page_bounds(total, query.page, query.page_size);
    let items = if start < end {
        hits.drain(start..end).collect()
    } else {
        Vec::new()
    };
    let pagination = Pagination {
        total: u64::try_from(total).unwrap_or(u64::MAX),
        page: query.page,
        page_size: size,
        pages,
    };
    (items, pagination)
}

/// The hit of a cached object of `instance`.
fn hit(instance: &str, resource: &ApiResource, item: &CachedItem) -> SearchHit {
    SearchHit {
        instance: instance.to_owned(),
        cluster: None,
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
        namespace: item.namespace().map(str::to_owned),
        name: item.name().to_owned(),
        labels: item.labels(),
        creation_timestamp: item.creation_timestamp().map(|t| t.to_string()),
    }
}

/// What one instance answered.
enum Searched {
    /// The resource, and the objects of its synced cache the query selects.
    Found(ApiResource, Vec<CachedItem>),
    /// Why the instance was not searched.
    Unavailable(String),
    /// The instance does not serve the resource.
    NotServed(String),
}

impl KairshipService {
    /// Searches instances through `cache`, the embedded cache the router reads.
    pub fn with_search_cache(mut self, cache: Arc<EmbeddedCacheBackend>) -> Self {
        self.search_cache = Some(cache);
        self
    }

    /// The instances `caller` may read, limited to those `named` (a named instance it may
    /// not read is `PermissionDenied`), sorted.
    async fn searchable(
        &self,
        caller: &Caller,
        named: Option<Vec<String>>,
    ) -> Result<Vec<String>, ApiError> {
        let readable = match self.readable(caller, None).await? {
            Readable::Instances(names) => names,
            Readable::Everything => {
                let list = self
                    .host_call(
                        "list instances",
                        self.instances().list(&ListParams::default()),
                    )
                    .await?;
                list.items
                    .into_iter()
                    .filter_map(|i| i.metadata.name)
                    .collect()
            }
        };
        let mut names = match named {
            None => readable,
            Some(named) => {
                if let Some(other) = named.iter().find(|n| !readable.contains(n)) {
                    return Err(ApiError::forbidden(format!(
                        "{} may not search the instance {other:?} (no such instance, or not \
                         one it may read)",
                        caller.user
                    )));
                }
                named
            }
        };
        names.sort();
        Ok(names)
    }

    /// The objects `query` selects in the synced cache of `target` in `instance`, or why
    /// there is none. The scan runs on a blocking thread, so the instances are scanned side by
    /// side.
    async fn searched(
        &self,
        cache: &EmbeddedCacheBackend,
        instance: &str,
        target: &SearchTarget,
        query: &Arc<CompiledQuery>,
    ) -> Searched {
        let resource = match target {
            SearchTarget::Kind(kind) => kind.api_resource(),
            SearchTarget::Resource {
                group,
                version,
                resource,
            } => match self.discover(instance, gvr(group, version, resource)).await {
                Ok(resolved) => resolved.resource,
                Err(err) if err.code == Code::NotFound => return Searched::NotServed(err.message),
                Err(err) => return Searched::Unavailable(err.message),
            },
        };
        match cache
            .resource(instance, &resource, CacheContent::Objects)
            .await
        {
            Ok(cached) if cached.has_listed() => {
                let query = query.clone();
                match tokio::task::spawn_blocking(move || cached.matching(&query)).await {
                    Ok(items) => Searched::Found(resource, items),
                    Err(err) => {
                        Searched::Unavailable(format!("the search of its cache failed: {err}"))
                    }
                }
            }
            Ok(_) => Searched::Unavailable(format!(
                "the cache of {} is still syncing: search again shortly",
                resource.plural
            )),
            Err(err) => Searched::Unavailable(err.to_string()),
        }
    }
}

#[async_trait]
impl SearchApi for KairshipService {
    async fn search(&self, caller: &Caller, req: SearchRequest) -> Result<SearchResult, ApiError> {
        // Refuse bad input before any call.
        let target = search_target(&req)?;
        let query = search_query(&req)?;
        let named = named_instances(req.instance.as_deref())?;
        let Some(cache) = &self.search_cache else {
            return Err(ApiError::failed_precondition(
                "this API server keeps no instance caches to search",
            ));
        };
        let instances = self.searchable(caller, named).await?;
        let shared_query = Arc::new(query.clone());
        let answers = futures::future::join_all(
            instances
                .iter()
                .map(|instance| self.searched(cache, instance, &target, &shared_query)),
        )
        .await;
        let mut unavailable = Vec::new();
        let mut not_served = Vec::new();
        let mut totals = Vec::new();
        let mut hits: SearchHits<CachedItem> = Vec::new();
        let mut resources = Vec::new();
        for (instance, answer) in instances.iter().zip(answers) {
            match answer {
                Searched::Found(resource, items) => {
                    let name: Arc<str> = Arc::from(instance.as_str());
                    let before = hits.len();
                    hits.extend(items.into_iter().map(|item| (name.clone(), item)));
                    totals.push(InstanceTotal {
                        instance: instance.clone(),
                        total: u64::try_from(hits.len() - before).unwrap_or(u64::MAX),
                    });
                    resources.push((name, resource));
                }
                Searched::Unavailable(reason) => unavailable.push(UnavailableInstance {
                    instance: instance.clone(),
                    reason,
                }),
                Searched::NotServed(reason) => not_served.push(UnavailableInstance {
                    instance: instance.clone(),
                    reason,
                }),
            }
        }
        if let SearchTarget::Resource { resource, .. } = &target
            && !not_served.is_empty()
            && totals.is_empty()
            && unavailable.is_empty()
        {
            return Err(ApiError::invalid_field(
                "resource",
                format!("no instance searched serves {resource:?}"),
            ));
        }
        unavailable.extend(not_served);
        unavailable.sort_by(|a, b| a.instance.cmp(&b.instance));
        let (page, pagination) = search_page(hits, &query);
        let items = page
            .iter()
            .filter_map(|(instance, item)| {
                let (_, resource) = resources.iter().find(|(name, _)| name == instance)?;
                Some(hit(instance, resource, item))
            })
            .collect();
        Ok(SearchResult {
            items,
            totals,
            unavailable,
            pagination,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::DynamicObject;
    use serde_json::json;

    fn req(f: impl FnOnce(&mut SearchRequest)) -> SearchRequest {
        let mut r = SearchRequest {
            kind: Some("Deployment".into()),
            ..SearchRequest::default()
        };
        f(&mut r);
        r
    }

    #[test]
    fn targets_are_a_kind_or_a_whole_gvr() {
        let ok = [
            (req(|_| {}), SearchTarget::Kind(ResourceKind::Deployments)),
            (
                req(|r| r.kind = Some("configmaps".into())),
                SearchTarget::Kind(ResourceKind::Configmaps),
            ),
            (
                req(|r| {
                    r.kind = None;
                    r.group = Some("apps".into());
                    r.version = Some("v1".into());
                    r.resource = Some("statefulsets".into());
                }),
                SearchTarget::Resource {
                    group: "apps".into(),
                    version: "v1".into(),
                    resource: "statefulsets".into(),
                },
            ),
        ];
        for (r, want) in ok {
            assert_eq!(search_target(&r).unwrap(), want, "{r:?}");
        }
        let bad = [
            (
                req(|r| r.kind = Some("Deploymnet".into())),
                "kind",
                "Deploymnet",
            ),
            (req(|r| r.kind = None), "kind", "kind"),
            (req(|r| r.group = Some("apps".into())), "kind", "not both"),
            (
                req(|r| {
                    r.kind = None;
                    r.group = Some("apps".into());
                }),
                "resource",
                "all three",
            ),
        ];
        for (r, field, text) in bad {
            let err = search_target(&r).unwrap_err();
            assert_eq!(err.code, Code::InvalidArgument, "{r:?}");
            assert!(err.message.starts_with(field), "{field}: {}", err.message);
            assert!(err.message.contains(text), "{text}: {}", err.message);
        }
    }

    #[test]
    fn bad_filters_name_the_parameter() {
        let cases = [
            (
                req(|r| r.label_selector = Some("app in (".into())),
                "labelSelector",
            ),
            (
                req(|r| r.namespace = Some("Not_A_Name".into())),
                "namespace",
            ),
            (req(|r| r.cluster = Some("member1".into())), "cluster"),
            (req(|r| r.page = Some(0)), "page"),
            (req(|r| r.page_size = Some(10_001)), "pageSize"),
            (req(|r| r.sort_by = Some(SortBy::State)), "sortBy"),
        ];
        for (r, field) in cases {
            let err = search_query(&r).unwrap_err();
            assert_eq!(err.code, Code::InvalidArgument, "{field}");
            assert!(err.message.starts_with(field), "{field}: {}", err.message);
        }
        let err = named_instances(Some("a,,b")).unwrap_err();
        assert!(err.message.starts_with("instance"), "{}", err.message);
        assert_eq!(
            named_instances(Some("b, a,b")).unwrap(),
            Some(vec!["b".to_owned(), "a".to_owned()])
        );
    }

    fn object(ns: &str, name: &str, created: &str, app: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": created,
                         "labels": {"app": app}},
        }))
        .unwrap()
    }

    fn fleet() -> SearchHits<DynamicObject> {
        vec![
            (
                Arc::from("k2"),
                object("default", "web", "2026-01-03T00:00:00Z", "web"),
            ),
            (
                Arc::from("k1"),
                object("default", "web", "2026-01-02T00:00:00Z", "web"),
            ),
            (
                Arc::from("k1"),
                object("apps", "web-api", "2026-01-01T00:00:00Z", "api"),
            ),
            (
                Arc::from("k3"),
                object("apps", "db", "2026-01-04T00:00:00Z", "db"),
            ),
        ]
    }

    #[test]
    fn hits_are_filtered_sorted_and_paged_across_instances() {
        let names = |hits: &SearchHits<DynamicObject>| -> Vec<String> {
            hits.iter()
                .map(|(i, o)| format!("{i}/{}", o.metadata.name.as_deref().unwrap()))
                .collect()
        };
        let cases: Vec<(SearchRequest, Vec<&str>, u64)> = vec![
            (
                req(|_| {}),
                vec!["k3/db", "k1/web", "k2/web", "k1/web-api"],
                4,
            ),
            (
                req(|r| r.name = Some("WEB".into())),
                vec!["k1/web", "k2/web", "k1/web-api"],
                3,
            ),
            (
                req(|r| r.label_selector = Some("app=web".into())),
                vec!["k1/web", "k2/web"],
                2,
            ),
            (
                req(|r| r.namespace = Some("apps".into())),
                vec!["k3/db", "k1/web-api"],
                2,
            ),
            (
                req(|r| {
                    r.sort_by = Some(SortBy::CreationTimestamp);
                    r.sort_dir = Some(SortDir::Desc);
                }),
                vec!["k3/db", "k2/web", "k1/web", "k1/web-api"],
                4,
            ),
            (
                req(|r| r.sort_by = Some(SortBy::Namespace)),
                vec!["k3/db", "k1/web-api", "k1/web", "k2/web"],
                4,
            ),
            (
                req(|r| {
                    r.page = Some(2);
                    r.page_size = Some(3);
                }),
                vec!["k1/web-api"],
                4,
            ),
        ];
        for (r, want, total) in cases {
            let query = search_query(&r).unwrap();
            let matching: SearchHits<DynamicObject> = fleet()
                .into_iter()
                .filter(|(_, o)| query.matches(None, o))
                .collect();
            let (page, pagination) = search_page(matching, &query);
            assert_eq!(names(&page), want, "{r:?}");
            assert_eq!(pagination.total, total, "{r:?}");
        }
    }
}
