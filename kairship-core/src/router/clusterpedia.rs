//! A read backend answering from Clusterpedia: each instance is registered as a `PediaCluster`
//! named `kairship-<instance>`, and reads go to Clusterpedia's aggregated API on the host,
//! `/apis/clusterpedia.io/v1beta1/resources/clusters/{cluster}/apis/{group}/{version}/...`.
//!
//! What stock Clusterpedia (clusterpedia-io/clusterpedia) stores is not what Karmada stores:
//! - clustersynchro-manager's beta gates `PruneManagedFields` and `PruneLastAppliedConfiguration`
//!   (on by default, `pkg/synchromanager/features/features.go`; `pruneObject` in
//!   `pkg/synchromanager/clustersynchro/default_resource_synchro.go`) drop `managedFields` and
//!   `kubectl.kubernetes.io/last-applied-configuration`;
//! - `utils.InjectClusterName` (`pkg/utils/clustername.go`) adds the annotation
//!   `shadow.clusterpedia.io/cluster-name`;
//! - lists carry no `resourceVersion`;
//! - the fuzzy-name search label becomes `name LIKE '%<value>%'` unescaped
//!   (`pkg/storage/internalstorage/util.go`), so `_` matches any character.
//!
//! So single objects (read to be edited and written back) are read from the instance
//! ([`ReadBackend::objects_as_stored`] is false), list items lose Clusterpedia's annotation,
//! lists get the resourceVersion a watch can continue from, and fuzzy names with `_` are
//! narrowed by Clusterpedia and matched exactly here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use kube::Api;
use kube::core::{ApiResource, DynamicObject, ObjectList};

use super::backend::{EventStream, ReadBackend, WatchQuery, poll_for_version};
use super::decision::version_of;
use super::direct::typed;
use super::error::RouterError;
use super::query::{CompiledQuery, ListQuery, ObjectPage, Pagination, SortBy, SortDir};
use super::target::{ResourceKey, ResourceTarget, collection_path};
use crate::models::find_condition;
use crate::models::pedia::{ClusterGroupResources, PediaCluster};
use crate::naming::pedia_cluster_name;

/// The prefix of Clusterpedia's per-cluster resource API.
pub const CLUSTERPEDIA_RESOURCES_PATH: &str = "/apis/clusterpedia.io/v1beta1/resources/clusters";

/// Clusterpedia's search label for a fuzzy (substring) match on `metadata.name`, passed inside
/// `labelSelector` (it has no URL query of its own).
pub const FUZZY_NAME_LABEL: &str = "internalstorage.clusterpedia.io/fuzzy-name";

/// The annotation Clusterpedia adds to every object it stores (`ShadowAnnotationClusterName`
/// in `staging/src/github.com/clusterpedia-io/api/clusterpedia/types.go`).
pub const SHADOW_CLUSTER_ANNOTATION: &str = "shadow.clusterpedia.io/cluster-name";

/// Tuning of [`ClusterpediaBackend`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterpediaConfig {
    /// How long the readiness of a `PediaCluster` is reused before it is read again.
    pub readiness_ttl: Duration,
    /// How often Clusterpedia is polled while waiting for it to store a write.
    pub probe_interval: Duration,
}

impl Default for ClusterpediaConfig {
    fn default() -> Self {
        ClusterpediaConfig {
            readiness_ttl: Duration::from_secs(5),
            probe_interval: Duration::from_millis(50),
        }
    }
}

/// The URL path of `resource` (in `namespace`, or all of them) of `cluster` in Clusterpedia,
/// optionally of one object `name`.
pub fn clusterpedia_path(
    cluster: &str,
    resource: &ApiResource,
    namespace: Option<&str>,
    name: Option<&str>,
) -> String {
    // Names and namespaces come from callers: escaped so that they stay one path segment.
    let namespace = namespace.map(encode_component);
    let mut path = format!(
        "{CLUSTERPEDIA_RESOURCES_PATH}/{}{}",
        encode_component(cluster),
        collection_path(resource, namespace.as_deref())
    );
    if let Some(name) = name {
        path.push('/');
        path.push_str(&encode_component(name));
    }
    path
}

/// How a fuzzy name search is asked of Clusterpedia, whose `LIKE '%<value>%'` treats `_` (and
/// `%`) as wildcards and whose search label must be a label value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuzzySearch {
    /// The value of the fuzzy-name search label (`None`: none can narrow the search).
    pub label: Option<String>,
    /// Whether Clusterpedia's match is the exact answer; otherwise it only narrows the
    /// candidates and the name is matched locally.
    pub exact: bool,
}

/// The fuzzy search for `name` (lower-cased: Kubernetes names are lower-case and the local
/// match ignores case). A name with `_` is narrowed by its longest `_`-free part, trimmed to
/// a label value: every name containing `name` contains that part, so nothing is lost.
pub fn fuzzy_search(name: &str) -> FuzzySearch {
    let name = name.to_lowercase();
    if is_label_value(&name) && !name.contains(['_', '%']) {
        return FuzzySearch {
            label: Some(name),
            exact: true,
        };
    }
    let label = name
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '.'))
        .map(|part| part.trim_matches(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|part| !part.is_empty() && part.len() <= 63)
        .fold(None::<&str>, |best, part| match best {
            Some(best) if best.len() >= part.len() => Some(best),
            _ => Some(part),
        })
        .map(str::to_owned);
    FuzzySearch {
        label,
        exact: false,
    }
}

/// `object` without what Clusterpedia adds to what Karmada stores: its cluster-name annotation
/// and the `spec.template.metadata.creationTimestamp: null` its Go types write out.
pub fn without_clusterpedia_marks(mut object: DynamicObject) -> DynamicObject {
    if let Some(annotations) = object.metadata.annotations.as_mut() {
        annotations.remove(SHADOW_CLUSTER_ANNOTATION);
        if annotations.is_empty() {
            object.metadata.annotations = None;
        }
    }
    if let Some(template) = object
        .data
        .pointer_mut("/spec/template/metadata")
        .and_then(serde_json::Value::as_object_mut)
        && template
            .get("creationTimestamp")
            .is_some_and(serde_json::Value::is_null)
    {
        template.remove("creationTimestamp");
    }
    object
}

/// The resourceVersion a watch continues a Clusterpedia list from: the newest of its objects.
/// Every change newer than that is one the list does not show (only a delete Clusterpedia
/// already applied may come again), so nothing is missed and nothing listed is added twice.
pub fn list_continuation(objects: &[DynamicObject]) -> Option<u64> {
    objects.iter().map(version_of).max().filter(|v| *v > 0)
}

/// Whether Clusterpedia syncs `resource` as `sync` (a `PediaCluster`'s `spec.syncResources`)
/// asks: its group, its plural (or `*`) and its version (or every version, when none is named).
pub fn syncs(sync: &[ClusterGroupResources], resource: &ApiResource) -> bool {
    sync.iter().any(|g| {
        g.group == resource.group
            && g.resources
                .iter()
                .any(|r| r == "*" || r == &resource.plural)
            && (g.versions.is_empty() || g.versions.contains(&resource.version))
    })
}

/// Whether `value` may be a label value (Clusterpedia's search labels are label selector
/// requirements, so their values must be).
pub use kube_kit::labels::is_label_value;

/// Percent-encodes a query component (everything but RFC 3986 unreserved characters).
pub fn encode_component(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A query string from parameter pairs.
pub fn encode_query(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// How a list query is asked of Clusterpedia.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterpediaListRequest {
    /// URL query parameters.
    pub params: Vec<(String, String)>,
    /// Objects skipped before the requested page (sent as `continue`).
    pub offset: usize,
    /// Clusterpedia filters, sorts and pages; otherwise (a fuzzy name that cannot be a label
    /// value) it only filters by selectors and the rest is done locally.
    pub server_side: bool,
}

/// Translates a list query into Clusterpedia's parameters: `labelSelector` (with the fuzzy
/// name search label), `fieldSelector`, `orderby` (name or `created_at`, then name and
/// namespace, matching the local order), `limit`, `continue` (Clusterpedia's offset) and
/// `withRemainingCount`. Fuzzy names go as [`fuzzy_search`] says.
pub fn clusterpedia_list_request(
    query: &CompiledQuery,
    raw: &ListQuery,
) -> ClusterpediaListRequest {
    let mut params = Vec::new();
    let mut labels: Vec<String> = raw
        .label_selector
        .iter()
        .filter(|s| !s.trim().is_empty())
        .cloned()
        .collect();
    let fuzzy = query.name.as_deref().map(fuzzy_search);
    // Clusterpedia sorts by name, namespace and creation time only.
    let server_side = fuzzy.as_ref().is_none_or(|f| f.exact) && query.sort_field.is_none();
    if let Some(label) = fuzzy.and_then(|f| f.label) {
        labels.push(format!("{FUZZY_NAME_LABEL}={label}"));
    }
    if !labels.is_empty() {
        params.push(("labelSelector".to_owned(), labels.join(",")));
    }
    if let Some(fields) = raw
        .field_selector
        .as_deref()
        .filter(|s| !s.trim().is_empty())
    {
        params.push(("fieldSelector".to_owned(), fields.to_owned()));
    }
    if !raw.namespaces.is_empty() {
        params.push(("namespaces".to_owned(), raw.namespaces.join(",")));
    }
    let mut offset = 0;
    if server_side {
        let dir = match query.sort_dir {
            SortDir::Asc => "",
            SortDir::Desc => " desc",
        };
        let keys: &[&str] = match query.sort_by {
            SortBy::Name => &["name", "namespace"],
            SortBy::CreationTimestamp => &["created_at", "name", "namespace"],
            SortBy::Namespace => &["namespace", "name"],
        };
        let orderby: Vec<String> = keys.iter().map(|k| format!("{k}{dir}")).collect();
        params.push(("orderby".to_owned(), orderby.join(",")));
        if let Some(size) = query.page_size {
            offset = (query.page as usize - 1).saturating_mul(size as usize);
            params.push(("limit".to_owned(), size.to_string()));
            params.push(("continue".to_owned(), offset.to_string()));
            params.push(("withRemainingCount".to_owned(), "true".to_owned()));
        }
    }
    ClusterpediaListRequest {
        params,
        offset,
        server_side,
    }
}

/// The pagination of a page Clusterpedia answered: `offset + items + remainingItemCount` is
/// the total (remaining may be negative past the end).
pub fn clusterpedia_pagination(
    query: &CompiledQuery,
    offset: usize,
    items: usize,
    remaining: Option<i64>,
) -> Pagination {
    let counted = i64::try_from(offset + items).unwrap_or(i64::MAX);
    let total = usize::try_from(counted.saturating_add(remaining.unwrap_or(0)).max(0))
        .unwrap_or(usize::MAX)
        .max(items);
    let (page_size, pages) = match query.page_size {
        Some(size) => (
            size,
            u32::try_from(total.div_ceil(size.max(1) as usize)).unwrap_or(u32::MAX),
        ),
        None => (
            u32::try_from(total).unwrap_or(u32::MAX),
            u32::from(total > 0),
        ),
    };
    Pagination {
        total,
        page: query.page,
        page_size,
        pages,
    }
}

/// An instance's `PediaCluster` as last read (`None`: absent or unreadable), and when.
type ReadCluster = (Instant, Option<Arc<PediaCluster>>);

/// A [`ReadBackend`] reading an instance's resources from Clusterpedia on the host cluster.
///
/// Clusterpedia filters, sorts and pages; it serves no watches, so watches fail with
/// [`RouterError::CacheUnavailable`] and the router serves them directly, and single objects
/// are read from the instance (see the module). A resource counts as synced while the
/// instance's `PediaCluster` is `Ready` and its `spec.syncResources` name the resource in
/// that version ([`syncs`]); other resources are read directly. Read-your-writes: it cannot
/// know what Clusterpedia has stored, so waiting for a write polls the resource's newest
/// stored resourceVersion (`orderby=resource_version desc&limit=1`); a delete leaves nothing
/// to find, so reads after one go direct until a later write is stored.
pub struct ClusterpediaBackend {
    host: kube::Client,
    config: ClusterpediaConfig,
    readiness: Mutex<HashMap<String, ReadCluster>>,
    seen: Mutex<HashMap<ResourceKey, u64>>,
}

impl std::fmt::Debug for ClusterpediaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterpediaBackend")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ClusterpediaBackend {
    /// Reads through `host`, a client of the host cluster where Clusterpedia's API is served.
    pub fn new(host: kube::Client) -> Self {
        Self::with_config(host, ClusterpediaConfig::default())
    }

    /// With the given tuning.
    pub fn with_config(host: kube::Client, config: ClusterpediaConfig) -> Self {
        ClusterpediaBackend {
            host,
            config,
            readiness: Mutex::new(HashMap::new()),
            seen: Mutex::new(HashMap::new()),
        }
    }

    fn note_seen(&self, target: &ResourceTarget, objects: &[DynamicObject]) {
        let newest = objects.iter().map(version_of).max().unwrap_or(0);
        if newest == 0 {
            return;
        }
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = seen.entry(target.key()).or_insert(0);
        *entry = (*entry).max(newest);
    }

    async fn fetch<T: serde::de::DeserializeOwned>(
        &self,
        what: String,
        path: String,
        params: &[(String, String)],
    ) -> Result<T, RouterError> {
        let uri = if params.is_empty() {
            path
        } else {
            format!("{path}?{}", encode_query(params))
        };
        let request =
            http::Request::get(uri)
                .body(Vec::new())
                .map_err(|e| RouterError::InvalidQuery {
                    parameter: "request",
                    reason: format!("{what}: {e}"),
                })?;
        self.host.request::<T>(request).await.map_err(|e| match e {
            kube::Error::Api(status) if status.code >= 500 => RouterError::CacheUnavailable {
                target: what,
                reason: format!("Clusterpedia answered {}: {}", status.code, status.message),
            },
            other => RouterError::from_kube(what, other),
        })
    }

    /// Reads the newest resourceVersion Clusterpedia stores for the resource.
    async fn probe(&self, instance: &str, resource: &ApiResource) -> Option<u64> {
        let target = ResourceTarget::all(instance, resource.clone());
        let path = clusterpedia_path(&pedia_cluster_name(instance), resource, None, None);
        let params = [
            ("orderby".to_owned(), "resource_version desc".to_owned()),
            ("limit".to_owned(), "1".to_owned()),
        ];
        let list: ObjectList<DynamicObject> =
            self.fetch(target.describe(), path, &params).await.ok()?;
        self.note_seen(&target, &list.items);
        self.seen_version(instance, resource)
    }

    /// The resourceVersion of an empty list: the resource's newest stored version, read before
    /// listing again; still empty, nothing the watch replays from there was listed.
    async fn empty_list_version(
        &self,
        target: &ResourceTarget,
        path: &str,
        params: &[(String, String)],
    ) -> Option<String> {
        let newest = self.probe(&target.instance, &target.resource).await?;
        let again: ObjectList<DynamicObject> = self
            .fetch(target.describe(), path.to_owned(), params)
            .await
            .ok()?;
        match list_continuation(&again.items) {
            None => Some(newest.to_string()),
            // Objects arrived meanwhile: this answer is older than they are, so no version.
            Some(_) => None,
        }
    }
}

#[async_trait]
impl ReadBackend for ClusterpediaBackend {
    async fn get(
        &self,
        target: &ResourceTarget,
        name: &str,
    ) -> Result<Arc<DynamicObject>, RouterError> {
        let path = clusterpedia_path(
            &pedia_cluster_name(&target.instance),
            &target.resource,
            target.namespace.as_deref(),
            Some(name),
        );
        let object: DynamicObject = self
            .fetch(format!("{}: {name}", target.describe()), path, &[])
            .await
            .map_err(|e| {
                if e.is_not_found() {
                    RouterError::not_found(target, name)
                } else {
                    e
                }
            })?;
        Ok(Arc::new(object))
    }

    async fn list(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError> {
        let compiled = query.compile()?;
        let request = clusterpedia_list_request(&compiled, query);
        let path = clusterpedia_path(
            &pedia_cluster_name(&target.instance),
            &target.resource,
            target.namespace.as_deref(),
            None,
        );
        let list: ObjectList<DynamicObject> = self
            .fetch(target.describe(), path.clone(), &request.params)
            .await
            .map_err(|e| match e {
                // The cluster or the resource is not (yet) known to Clusterpedia.
                e if e.is_not_found() => RouterError::CacheUnavailable {
                    target: target.describe(),
                    reason: e.to_string(),
                },
                e => e,
            })?;
        self.note_seen(target, &list.items);
        // Clusterpedia's lists carry no resourceVersion; a watch must continue where the list
        // ended, or every object is added twice.
        let resource_version = match list.metadata.resource_version.filter(|v| !v.is_empty()) {
            Some(version) => Some(version),
            None => match list_continuation(&list.items) {
                Some(newest) => Some(newest.to_string()),
                None => {
                    self.empty_list_version(target, &path, &request.params)
                        .await
                }
            },
        };
        let items = list.items.into_iter().map(without_clusterpedia_marks);
        let mut page = if request.server_side {
            let items: Vec<_> = items
                .map(|o| Arc::new(typed(o, &target.resource)))
                .collect();
            let pagination = clusterpedia_pagination(
                &compiled,
                request.offset,
                items.len(),
                list.metadata.remaining_item_count,
            );
            ObjectPage {
                items,
                pagination,
                resource_version: None,
                rendered: None,
            }
        } else {
            compiled.select(
                target.namespace.as_deref(),
                items.map(|o| Arc::new(typed(o, &target.resource))),
            )
        };
        page.resource_version = resource_version;
        Ok(page)
    }

    async fn watch(
        &self,
        target: &ResourceTarget,
        _query: &WatchQuery,
    ) -> Result<EventStream, RouterError> {
        Err(RouterError::CacheUnavailable {
            target: target.describe(),
            reason: "Clusterpedia serves no watches".into(),
        })
    }

    /// Clusterpedia prunes and annotates what it stores: single objects are read from the
    /// instance.
    fn objects_as_stored(&self) -> bool {
        false
    }

    async fn synced(&self, instance: &str, resource: &ApiResource) -> bool {
        let cached = self
            .readiness
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(instance)
            .filter(|(checked, _)| checked.elapsed() < self.config.readiness_ttl)
            .map(|(_, cluster)| cluster.clone());
        let cluster = match cached {
            Some(cluster) => cluster,
            None => {
                let api: Api<PediaCluster> = Api::all(self.host.clone());
                let cluster = match api.get_opt(&pedia_cluster_name(instance)).await {
                    Ok(cluster) => cluster.map(Arc::new),
                    Err(err) => {
                        tracing::debug!(instance, error = %err, "cannot read the PediaCluster");
                        None
                    }
                };
                self.readiness
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(instance.to_owned(), (Instant::now(), cluster.clone()));
                cluster
            }
        };
        cluster.is_some_and(|cluster| {
            let ready = cluster
                .status
                .as_ref()
                .and_then(|s| find_condition(&s.conditions, "Ready"))
                .is_some_and(|c| c.is_true());
            ready && syncs(&cluster.spec.sync_resources, resource)
        })
    }

    fn seen_version(&self, instance: &str, resource: &ApiResource) -> Option<u64> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&ResourceKey::new(instance, resource))
            .copied()
    }

    async fn wait_for_version(
        &self,
        instance: &str,
        resource: &ApiResource,
        version: u64,
        timeout: Duration,
    ) -> bool {
        let seen = || self.probe(instance, resource);
        poll_for_version(version, timeout, self.config.probe_interval, seen).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::GroupVersionKind;

    fn deployments() -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apps", "v1", "Deployment"),
            "deployments",
        )
    }

    #[test]
    fn paths_follow_clusterpedias_api() {
        let cm = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("", "v1", "ConfigMap"),
            "configmaps",
        );
        for (resource, ns, name, want) in [
            (
                deployments(),
                Some("a"),
                None,
                "/apis/clusterpedia.io/v1beta1/resources/clusters/kairship-i1/apis/apps/v1/namespaces/a/deployments",
            ),
            (
                deployments(),
                None,
                None,
                "/apis/clusterpedia.io/v1beta1/resources/clusters/kairship-i1/apis/apps/v1/deployments",
            ),
            (
                cm,
                Some("a"),
                Some("x"),
                "/apis/clusterpedia.io/v1beta1/resources/clusters/kairship-i1/api/v1/namespaces/a/configmaps/x",
            ),
        ] {
            assert_eq!(clusterpedia_path("kairship-i1", &resource, ns, name), want);
        }
    }

    fn request(f: fn(&mut ListQuery)) -> ClusterpediaListRequest {
        let mut q = ListQuery::default();
        f(&mut q);
        clusterpedia_list_request(&q.compile().unwrap(), &q)
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn list_queries_become_clusterpedia_parameters() {
        // (request, parameters, offset, server side)
        type Case = (ClusterpediaListRequest, Vec<(String, String)>, usize, bool);
        let cases: Vec<Case> = vec![
            (
                request(|_| {}),
                pairs(&[("orderby", "name,namespace")]),
                0,
                true,
            ),
            (
                request(|q| {
                    q.label_selector = Some("app=web".into());
                    q.field_selector = Some("metadata.namespace=a".into());
                    q.name = Some("Web".into());
                    q.sort_by = SortBy::CreationTimestamp;
                    q.sort_dir = SortDir::Desc;
                    q.page = Some(3);
                    q.page_size = Some(10);
                }),
                pairs(&[
                    (
                        "labelSelector",
                        "app=web,internalstorage.clusterpedia.io/fuzzy-name=web",
                    ),
                    ("fieldSelector", "metadata.namespace=a"),
                    ("orderby", "created_at desc,name desc,namespace desc"),
                    ("limit", "10"),
                    ("continue", "20"),
                    ("withRemainingCount", "true"),
                ]),
                20,
                true,
            ),
            (
                // A fuzzy name that cannot be a label value is narrowed by its longest part
                // and matched locally, so nothing is paged or sorted by Clusterpedia.
                request(|q| {
                    q.name = Some("web app".into());
                    q.page_size = Some(5);
                }),
                pairs(&[(
                    "labelSelector",
                    "internalstorage.clusterpedia.io/fuzzy-name=web",
                )]),
                0,
                false,
            ),
            (
                // `_` would be a wildcard in Clusterpedia's LIKE.
                request(|q| q.name = Some("svc_01".into())),
                pairs(&[(
                    "labelSelector",
                    "internalstorage.clusterpedia.io/fuzzy-name=svc",
                )]),
                0,
                false,
            ),
        ];
        for (got, params, offset, server_side) in cases {
            assert_eq!(got.params, params);
            assert_eq!(got.offset, offset);
            assert_eq!(got.server_side, server_side);
        }
    }

    #[test]
    fn fuzzy_searches_escape_like_wildcards() {
        for (name, label, exact) in [
            ("Web", Some("web"), true),
            ("0_1", Some("0"), false),
            ("a-_b-", Some("a"), false),
            ("%", None, false),
            ("web_app%x", Some("web"), false),
            ("db.x_cache", Some("cache"), false),
        ] {
            let got = fuzzy_search(name);
            assert_eq!((got.label.as_deref(), got.exact), (label, exact), "{name}");
        }
    }

    #[test]
    fn names_are_escaped_in_paths() {
        assert_eq!(
            clusterpedia_path("kairship-i1", &deployments(), Some("a b"), Some("x?y/z")),
            "/apis/clusterpedia.io/v1beta1/resources/clusters/kairship-i1/apis/apps/v1/namespaces/a%20b/deployments/x%3Fy%2Fz"
        );
    }

    #[test]
    fn clusterpedias_marks_are_removed() {
        let object = |v: serde_json::Value| -> DynamicObject { serde_json::from_value(v).unwrap() };
        let stored = object(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "resourceVersion": "7",
                "annotations": {SHADOW_CLUSTER_ANNOTATION: "kairship-i1", "keep": "1"}},
            "spec": {"template": {"metadata": {"creationTimestamp": null, "labels": {"a": "b"}}}}
        }));
        let clean = without_clusterpedia_marks(stored);
        assert_eq!(
            clean
                .metadata
                .annotations
                .as_ref()
                .map(|a| a.keys().collect::<Vec<_>>()),
            Some(vec![&"keep".to_owned()])
        );
        assert_eq!(
            clean.data["spec"]["template"]["metadata"],
            serde_json::json!({"labels": {"a": "b"}})
        );
        let only_shadow = object(serde_json::json!({
            "metadata": {"name": "x", "annotations": {SHADOW_CLUSTER_ANNOTATION: "c"}},
            "spec": {"template": {"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}}}
        }));
        let clean = without_clusterpedia_marks(only_shadow);
        assert!(clean.metadata.annotations.is_none());
        assert_eq!(
            clean.data["spec"]["template"]["metadata"]["creationTimestamp"],
            "2026-01-01T00:00:00Z"
        );
    }

    #[test]
    fn lists_continue_from_their_newest_object() {
        let at = |rv: &str| -> DynamicObject {
            serde_json::from_value(
                serde_json::json!({"metadata": {"name": "x", "resourceVersion": rv}}),
            )
            .unwrap()
        };
        assert_eq!(list_continuation(&[at("5"), at("12"), at("9")]), Some(12));
        assert_eq!(list_continuation(&[]), None);
        assert_eq!(list_continuation(&[at("")]), None);
    }

    #[test]
    fn synced_resources_are_those_named_in_their_version() {
        let group = |group: &str, versions: &[&str], resources: &[&str]| ClusterGroupResources {
            group: group.into(),
            versions: versions.iter().map(|v| (*v).into()).collect(),
            resources: resources.iter().map(|r| (*r).into()).collect(),
            extra: Default::default(),
        };
        let bindings = |version: &str| {
            ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("work.karmada.io", version, "ResourceBinding"),
                "resourcebindings",
            )
        };
        let sync = vec![
            group("apps", &["v1"], &["deployments"]),
            group("work.karmada.io", &["v1alpha2"], &["resourcebindings"]),
            group("batch", &[], &["*"]),
        ];
        let job =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("batch", "v1", "Job"), "jobs");
        let secret = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("", "v1", "Secret"),
            "secrets",
        );
        for (resource, want) in [
            (deployments(), true),
            (bindings("v1alpha2"), true),
            (bindings("v1alpha1"), false),
            (job, true),
            (secret, false),
        ] {
            assert_eq!(syncs(&sync, &resource), want, "{resource:?}");
        }
    }

    #[test]
    fn totals_come_from_offset_items_and_remaining() {
        let query = |page, size| {
            ListQuery {
                page: Some(page),
                page_size: size,
                ..ListQuery::default()
            }
            .compile()
            .unwrap()
        };
        for (q, offset, items, remaining, total, pages) in [
            (query(1, Some(10)), 0, 10, Some(15), 25, 3),
            (query(3, Some(10)), 20, 5, Some(0), 25, 3),
            (query(5, Some(10)), 40, 0, Some(-15), 25, 3),
            (query(1, None), 0, 7, None, 7, 1),
            (query(1, Some(10)), 0, 0, Some(0), 0, 0),
        ] {
            let p = clusterpedia_pagination(&q, offset, items, remaining);
            assert_eq!(
                (p.total, p.pages),
                (total, pages),
                "{offset} {items} {remaining:?}"
            );
        }
    }

    #[test]
    fn label_values_and_encoding() {
        for (value, ok) in [
            ("web", true),
            ("web-1.a_b", true),
            ("", true),
            ("-web", false),
            ("web app", false),
            ("a/b", false),
            (&"x".repeat(64), false),
        ] {
            assert_eq!(is_label_value(value), ok, "{value}");
        }
        assert_eq!(
            encode_query(&pairs(&[("orderby", "name desc,namespace"), ("l", "a=b")])),
            "orderby=name%20desc%2Cnamespace&l=a%3Db"
        );
    }
}
