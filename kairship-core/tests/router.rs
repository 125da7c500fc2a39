//! The read-write split router against a sandbox instance: where reads and writes go,
//! read-your-writes, fallback while the cache is down, and list queries.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kairship_core::router::{
    DirectBackend, EmbeddedCacheBackend, EventStream, FallbackReason, InstanceWriter, ListQuery,
    ObjectPage, ReadBackend, ReadWriteRouter, ResourceTarget, RouterConfig, RouterError, SortBy,
    SortDir, SplitRouter, StaticInstanceClients, WatchQuery, WriteBackend, WriteOutcome,
    render_list,
};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind, WatchEvent};
use serde_json::json;

const INSTANCE: &str = "inst-1";

fn deployments() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps", "v1", "Deployment"),
        "deployments",
    )
}

fn deployment(name: &str, labels: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}
            }
        }
    })
}

/// Counts the reads (get/list/watch) a backend answers.
struct CountingRead {
    inner: Arc<dyn ReadBackend>,
    reads: AtomicUsize,
    /// When set, reads fail as a broken cache would while it still claims to be synced.
    broken: AtomicBool,
    /// When set, the backend never reports having seen any resourceVersion (a stuck watch).
    blind: AtomicBool,
}

impl CountingRead {
    fn new(inner: Arc<dyn ReadBackend>) -> Arc<Self> {
        Arc::new(CountingRead {
            inner,
            reads: AtomicUsize::new(0),
            broken: AtomicBool::new(false),
            blind: AtomicBool::new(false),
        })
    }

    fn count(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }

    fn touch(&self, target: &ResourceTarget) -> Result<(), RouterError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        if self.broken.load(Ordering::SeqCst) {
            return Err(RouterError::CacheUnavailable {
                target: target.describe(),
                reason: "broken on purpose".into(),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl ReadBackend for CountingRead {
    async fn get(
        &self,
        target: &ResourceTarget,
        name: &str,
    ) -> Result<Arc<DynamicObject>, RouterError> {
        self.touch(target)?;
        self.inner.get(target, name).await
    }
    async fn list(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError> {
        self.touch(target)?;
        self.inner.list(target, query).await
    }
    async fn list_rendered(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError> {
        self.touch(target)?;
        self.inner.list_rendered(target, query).await
    }
    async fn watch(
        &self,
        target: &ResourceTarget,
        query: &WatchQuery,
    ) -> Result<EventStream, RouterError> {
        self.touch(target)?;
        self.inner.watch(target, query).await
    }
    async fn synced(&self, instance: &str, resource: &ApiResource) -> bool {
        self.inner.synced(instance, resource).await
    }
    fn seen_version(&self, instance: &str, resource: &ApiResource) -> Option<u64> {
        if self.blind.load(Ordering::SeqCst) {
            return None;
        }
        self.inner.seen_version(instance, resource)
    }
    async fn wait_for_version(
        &self,
        instance: &str,
        resource: &ApiResource,
        version: u64,
        timeout: Duration,
    ) -> bool {
        if self.blind.load(Ordering::SeqCst) {
            tokio::time::sleep(timeout).await;
            return false;
        }
        self.inner
            .wait_for_version(instance, resource, version, timeout)
            .await
    }
}

/// Counts the writes a backend carries.
struct CountingWrite {
    inner: InstanceWriter,
    writes: AtomicUsize,
}

impl CountingWrite {
    fn count(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl WriteBackend for CountingWrite {
    async fn create(
        &self,
        target: &ResourceTarget,
        body: &serde_json::Value,
        params: &PostParams,
    ) -> Result<WriteOutcome, RouterError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.create(target, body, params).await
    }
    async fn replace(
        &self,
        target: &ResourceTarget,
        name: &str,
        body: &serde_json::Value,
        params: &PostParams,
    ) -> Result<WriteOutcome, RouterError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.replace(target, name, body, params).await
    }
    async fn patch(
        &self,
        target: &ResourceTarget,
        name: &str,
        patch: &Patch<serde_json::Value>,
        params: &PatchParams,
    ) -> Result<WriteOutcome, RouterError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.patch(target, name, patch, params).await
    }
    async fn delete(
        &self,
        target: &ResourceTarget,
        name: &str,
        params: &DeleteParams,
    ) -> Result<WriteOutcome, RouterError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.delete(target, name, params).await
    }
}

struct Setup {
    _cluster: kube_sandbox::Cluster,
    client: kube::Client,
    cache: Arc<CountingRead>,
    direct: Arc<CountingRead>,
    write: Arc<CountingWrite>,
    router: SplitRouter,
}

/// A sandbox instance with namespaces `team-a` and `team-b`; the cache reaches the instance
/// through `cache_client` when given (to simulate a cache that cannot reach it).
async fn setup(cache_client: Option<kube::Client>) -> Setup {
    setup_with(cache_client, Duration::from_secs(1)).await
}

async fn setup_with(cache_client: Option<kube::Client>, ryw_timeout: Duration) -> Setup {
    let cluster = kube_sandbox::Cluster::new(INSTANCE);
    let client = cluster.client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for ns in ["team-a", "team-b"] {
        let body = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        namespaces
            .create(&PostParams::default(), &body)
            .await
            .unwrap();
    }
    let clients = Arc::new(StaticInstanceClients::new().with(INSTANCE, client.clone()));
    let cache_clients = match cache_client {
        Some(c) => Arc::new(StaticInstanceClients::new().with(INSTANCE, c)),
        None => clients.clone(),
    };
    let cache = CountingRead::new(Arc::new(EmbeddedCacheBackend::new(cache_clients)));
    let direct = CountingRead::new(Arc::new(DirectBackend::new(clients.clone())));
    let write = Arc::new(CountingWrite {
        inner: InstanceWriter::new(clients),
        writes: AtomicUsize::new(0),
    });
    let router = SplitRouter::with_config(
        cache.clone(),
        direct.clone(),
        write.clone(),
        RouterConfig {
            read_your_writes_timeout: ryw_timeout,
        },
    );
    Setup {
        _cluster: cluster,
        client,
        cache,
        direct,
        write,
        router,
    }
}

async fn wait_synced(read: &dyn ReadBackend) {
    for _ in 0..500 {
        if read.synced(INSTANCE, &deployments()).await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the cache never synced");
}

fn names(page: &ObjectPage) -> Vec<String> {
    page.items
        .iter()
        .map(|o| o.metadata.name.clone().unwrap())
        .collect()
}

#[tokio::test]
async fn reads_touch_only_the_read_backend_and_writes_only_the_instance() {
    let s = setup(None).await;
    let target = ResourceTarget::namespaced(INSTANCE, deployments(), "team-a");
    s.router
        .create(
            &target,
            &deployment("seed", json!({})),
            &PostParams::default(),
        )
        .await
        .unwrap();
    wait_synced(s.cache.as_ref()).await;
    // Let the cache catch up with the seed write so no read needs a fallback.
    s.router.list(&target, &ListQuery::default()).await.unwrap();

    let (cache0, direct0, write0) = (s.cache.count(), s.direct.count(), s.write.count());
    assert_eq!(write0, 1);
    let got = s.router.get(&target, "seed").await.unwrap();
    assert_eq!(got.metadata.name.as_deref(), Some("seed"));
    let page = s.router.list(&target, &ListQuery::default()).await.unwrap();
    assert_eq!(names(&page), ["seed"]);
    let mut events = s
        .router
        .watch(&target, &WatchQuery::default())
        .await
        .unwrap();
    assert!(matches!(
        events.next().await,
        Some(Ok(WatchEvent::Added(_)))
    ));
    assert_eq!(
        s.cache.count(),
        cache0 + 3,
        "every read went to the read backend"
    );
    assert_eq!(
        s.direct.count(),
        direct0,
        "no read went directly to the instance"
    );
    assert_eq!(s.write.count(), write0, "no read reached the write backend");

    let (cache1, direct1) = (s.cache.count(), s.direct.count());
    let params = PostParams::default();
    s.router
        .create(
            &target,
            &deployment("web", json!({"tier": "front"})),
            &params,
        )
        .await
        .unwrap();
    let mut current = s.router.get(&target, "web").await.unwrap().as_ref().clone();
    current.metadata.labels = Some([("tier".to_owned(), "edge".to_owned())].into());
    let (cache2, direct2) = (s.cache.count(), s.direct.count());
    s.router
        .replace(
            &target,
            "web",
            &serde_json::to_value(&current).unwrap(),
            &params,
        )
        .await
        .unwrap();
    s.router
        .patch(
            &target,
            "web",
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
            &PatchParams::default(),
        )
        .await
        .unwrap();
    s.router
        .delete(&target, "seed", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        s.write.count(),
        write0 + 4,
        "every write went to the write backend"
    );
    assert_eq!(s.cache.count(), cache2, "no write touched the read backend");
    assert_eq!(
        s.direct.count(),
        direct2,
        "no write touched the direct reader"
    );
    assert_eq!(cache2, cache1 + 1);
    assert_eq!(direct1, direct2);

    // The writes reached the instance itself.
    let on_instance: Api<DynamicObject> =
        Api::namespaced_with(s.client.clone(), "team-a", &deployments());
    let web = on_instance.get("web").await.unwrap();
    assert_eq!(web.data["spec"]["replicas"], 3);
    assert_eq!(web.metadata.labels.unwrap()["tier"], "edge");
    assert!(on_instance.get_opt("seed").await.unwrap().is_none());
    let m = s.router.metrics().snapshot();
    assert_eq!(m.writes, 5);
    assert!(m.cache_hits >= 5, "{m:?}");
}

#[tokio::test]
async fn create_then_read_always_shows_your_own_write() {
    let s = setup(None).await;
    let target = ResourceTarget::namespaced(INSTANCE, deployments(), "team-b");
    wait_synced(s.cache.as_ref()).await;
    let mut alive = BTreeSet::new();
    for i in 0..50 {
        let name = format!("app-{i:02}");
        let created = s
            .router
            .create(
                &target,
                &deployment(&name, json!({})),
                &PostParams::default(),
            )
            .await
            .unwrap();
        assert!(created.resource_version().is_some());
        alive.insert(name.clone());
        let page = s.router.list(&target, &ListQuery::default()).await.unwrap();
        let listed: BTreeSet<String> = names(&page).into_iter().collect();
        assert_eq!(listed, alive, "list after creating {name}");
        let got = s.router.get(&target, &name).await.unwrap();
        assert_eq!(
            got.metadata.resource_version.as_deref(),
            created.resource_version()
        );
        if i % 5 == 4 {
            s.router
                .delete(&target, &name, &DeleteParams::default())
                .await
                .unwrap();
            alive.remove(&name);
            let err = s.router.get(&target, &name).await.unwrap_err();
            assert!(err.is_not_found(), "get after deleting {name}: {err}");
            let page = s.router.list(&target, &ListQuery::default()).await.unwrap();
            assert!(!names(&page).contains(&name), "list after deleting {name}");
        }
    }
    let m = s.router.metrics().snapshot();
    assert_eq!(m.fallbacks_total(), 0, "the cache kept up: {m:?}");
    assert_eq!(m.cache_hits, 50 * 2 + 10 * 2, "{m:?}");
    assert!(
        m.ryw_waits > 0,
        "reads right after writes waited for the cache: {m:?}"
    );
    assert_eq!(s.direct.count(), 0);
}

#[tokio::test]
async fn reads_fall_back_to_the_instance_while_the_cache_is_down() {
    // The cache's client points at a port nobody listens on: the cache never syncs.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().unwrap());
    let unreachable = kube::Client::try_from(config).unwrap();
    let s = setup(Some(unreachable)).await;
    let target = ResourceTarget::namespaced(INSTANCE, deployments(), "team-a");
    for name in ["one", "two"] {
        s.router
            .create(
                &target,
                &deployment(name, json!({})),
                &PostParams::default(),
            )
            .await
            .unwrap();
    }
    let page = s.router.list(&target, &ListQuery::default()).await.unwrap();
    assert_eq!(names(&page), ["one", "two"]);
    let got = s.router.get(&target, "two").await.unwrap();
    assert_eq!(got.metadata.name.as_deref(), Some("two"));
    let mut events = s
        .router
        .watch(&target, &WatchQuery::default())
        .await
        .unwrap();
    assert!(matches!(
        events.next().await,
        Some(Ok(WatchEvent::Added(_)))
    ));
    let m = s.router.metrics().snapshot();
    assert_eq!(m.cache_hits, 0);
    assert_eq!(m.fallbacks_for(FallbackReason::Unsynced), 3, "{m:?}");
    assert_eq!(s.cache.count(), 0, "an unsynced cache is not asked");
    assert_eq!(s.direct.count(), 3);
}

#[tokio::test]
async fn a_failing_cache_read_is_answered_directly() {
    let s = setup(None).await;
    let target = ResourceTarget::namespaced(INSTANCE, deployments(), "team-a");
    s.router
        .create(&target, &deployment("x", json!({})), &PostParams::default())
        .await
        .unwrap();
    wait_synced(s.cache.as_ref()).await;
    s.cache.broken.store(true, Ordering::SeqCst);
    let page = s.router.list(&target, &ListQuery::default()).await.unwrap();
    assert_eq!(names(&page), ["x"]);
    let m = s.router.metrics().snapshot();
    assert_eq!(m.fallbacks_for(FallbackReason::CacheError), 1, "{m:?}");
    assert_eq!((s.cache.count(), s.direct.count()), (1, 1));
    // Errors that are answers (a bad selector) are not retried directly.
    let bad = ListQuery {
        label_selector: Some("app in (".into()),
        ..ListQuery::default()
    };
    s.cache.broken.store(false, Ordering::SeqCst);
    let err = s.router.list(&target, &bad).await.unwrap_err();
    assert_eq!(err.http_status(), 400, "{err}");
    assert_eq!(s.direct.count(), 1);
}

#[tokio::test]
async fn selectors_sorting_fuzzy_name_and_pages() {
    let s = setup(None).await;
    let params = PostParams::default();
    // 12 deployments: team-a holds web-00..web-05 (tier=front, even ones env=prod),
    // team-b holds db-00..db-05 (tier=back).
    for i in 0..6 {
        let env = if i % 2 == 0 { "prod" } else { "dev" };
        let a = ResourceTarget::namespaced(INSTANCE, deployments(), "team-a");
        let b = ResourceTarget::namespaced(INSTANCE, deployments(), "team-b");
        s.router
            .create(
                &a,
                &deployment(&format!("web-{i:02}"), json!({"tier": "front", "env": env})),
                &params,
            )
            .await
            .unwrap();
        s.router
            .create(
                &b,
                &deployment(&format!("db-{i:02}"), json!({"tier": "back"})),
                &params,
            )
            .await
            .unwrap();
    }
    wait_synced(s.cache.as_ref()).await;
    let all = ResourceTarget::all(INSTANCE, deployments());
    let team_a = ResourceTarget::namespaced(INSTANCE, deployments(), "team-a");
    let q = |f: &dyn Fn(&mut ListQuery)| {
        let mut q = ListQuery::default();
        f(&mut q);
        q
    };
    let cases: Vec<(&ResourceTarget, ListQuery, Vec<&str>, usize)> = vec![
        (
            &team_a,
            q(&|_| {}),
            vec!["web-00", "web-01", "web-02", "web-03", "web-04", "web-05"],
            6,
        ),
        (
            &all,
            q(&|q| q.label_selector = Some("env=prod".into())),
            vec!["web-00", "web-02", "web-04"],
            3,
        ),
        (
            &all,
            q(&|q| q.label_selector = Some("tier in (back),!env".into())),
            vec!["db-00", "db-01", "db-02", "db-03", "db-04", "db-05"],
            6,
        ),
        (
            &all,
            q(&|q| q.label_selector = Some("env!=prod,tier=front".into())),
            vec!["web-01", "web-03", "web-05"],
            3,
        ),
        (
            &all,
            q(&|q| {
                q.field_selector = Some("metadata.namespace=team-b,metadata.name!=db-00".into())
            }),
            vec!["db-01", "db-02", "db-03", "db-04", "db-05"],
            5,
        ),
        (
            &all,
            q(&|q| q.name = Some("DB-0".into())),
            vec!["db-00", "db-01", "db-02", "db-03", "db-04", "db-05"],
            6,
        ),
        (
            &all,
            q(&|q| q.name = Some("eb-03".into())),
            vec!["web-03"],
            1,
        ),
        (
            &all,
            q(&|q| {
                q.page_size = Some(5);
                q.page = Some(2);
            }),
            vec!["db-05", "web-00", "web-01", "web-02", "web-03"],
            12,
        ),
        (
            &all,
            q(&|q| {
                q.page_size = Some(5);
                q.page = Some(3);
            }),
            vec!["web-04", "web-05"],
            12,
        ),
        (
            &all,
            q(&|q| {
                q.page_size = Some(5);
                q.page = Some(4);
            }),
            vec![],
            12,
        ),
        (
            &all,
            q(&|q| {
                q.sort_dir = SortDir::Desc;
                q.page_size = Some(3);
            }),
            vec!["web-05", "web-04", "web-03"],
            12,
        ),
        (
            &all,
            q(&|q| {
                q.name = Some("web".into());
                q.sort_dir = SortDir::Desc;
                q.page_size = Some(4);
                q.page = Some(2);
            }),
            vec!["web-01", "web-00"],
            6,
        ),
        // Queries the cache answers by decoding objects (fields beyond its list metadata).
        (
            &all,
            q(&|q| q.field_selector = Some("spec.replicas=1,metadata.namespace=team-a".into())),
            vec!["web-00", "web-01", "web-02", "web-03", "web-04", "web-05"],
            6,
        ),
        (
            &all,
            q(&|q| q.field_selector = Some("spec.replicas!=1".into())),
            vec![],
            0,
        ),
        (
            &all,
            q(&|q| {
                q.sort_field = Some(".spec.replicas".into());
                q.page_size = Some(3);
            }),
            vec!["db-00", "db-01", "db-02"],
            12,
        ),
        (
            &all,
            q(&|q| {
                q.sort_field = Some(".metadata.labels.env".into());
                q.sort_dir = SortDir::Desc;
                q.page_size = Some(4);
            }),
            vec!["web-04", "web-02", "web-00", "web-05"],
            12,
        ),
    ];
    for (target, query, want, total) in cases {
        let page = s.router.list(target, &query).await.unwrap();
        assert_eq!(names(&page), want, "{query:?}");
        // A page for a JSON answer (the native proxy's) holds the same objects, written out
        // byte for byte as the decoded objects serialize.
        let rendered = s.router.list_rendered(target, &query).await.unwrap();
        assert_eq!(names(&rendered), want, "rendered {query:?}");
        assert_eq!(rendered.pagination, page.pagination, "{query:?}");
        // Unless the query reads beyond the cache's list metadata, nothing was decoded.
        if !query.compile().unwrap().reads_beyond_metadata() {
            assert!(rendered.items.iter().all(|o| o.data.is_null()), "{query:?}");
        }
        let mut serialized = page.clone();
        serialized.rendered = None;
        assert_eq!(
            String::from_utf8(render_list(&rendered, "apps/v1", "DeploymentList").unwrap()),
            String::from_utf8(render_list(&serialized, "apps/v1", "DeploymentList").unwrap()),
            "{query:?}"
        );
        assert_eq!(page.pagination.total, total, "{query:?}");
        assert_eq!(
            page.pagination.pages as usize,
            total.div_ceil(query.page_size.map_or(total.max(1), |p| p as usize)),
            "{query:?}"
        );
        // The direct backend answers the same query alike (the fallback gives the same pages);
        // the instance, like kube-apiserver, serves no field selector on a Deployment's spec.
        if query
            .field_selector
            .as_deref()
            .is_some_and(|f| f.contains("spec."))
        {
            continue;
        }
        let direct = s.direct.list(target, &query).await.unwrap();
        assert_eq!(names(&direct), want, "direct {query:?}");
    }

    // Creation-time order: timestamps never decrease, and desc is the exact reverse of asc.
    let by_time = |dir| ListQuery {
        sort_by: SortBy::CreationTimestamp,
        sort_dir: dir,
        ..ListQuery::default()
    };
    let asc = s.router.list(&all, &by_time(SortDir::Asc)).await.unwrap();
    let stamps: Vec<_> = asc
        .items
        .iter()
        .map(|o| o.metadata.creation_timestamp.clone().unwrap().0)
        .collect();
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "{stamps:?}");
    let mut desc = names(&s.router.list(&all, &by_time(SortDir::Desc)).await.unwrap());
    desc.reverse();
    assert_eq!(desc, names(&asc));

    for bad in [
        q(&|q| q.page = Some(0)),
        q(&|q| q.page_size = Some(0)),
        q(&|q| q.label_selector = Some("a b c".into())),
    ] {
        let err = s.router.list(&all, &bad).await.unwrap_err();
        assert_eq!(err.http_status(), 400, "{bad:?}: {err}");
    }
    assert_eq!(s.router.metrics().snapshot().fallbacks_total(), 0);
}

#[tokio::test]
async fn cache_watch_streams_current_objects_then_changes() {
    let s = setup(None).await;
    let target = ResourceTarget::namespaced(INSTANCE, deployments(), "team-a");
    let params = PostParams::default();
    s.router
        .create(&target, &deployment("before", json!({"w": "yes"})), &params)
        .await
        .unwrap();
    wait_synced(s.cache.as_ref()).await;
    s.router.get(&target, "before").await.unwrap();
    let query = WatchQuery {
        label_selector: Some("w=yes".into()),
        ..WatchQuery::default()
    };
    let mut events = s.router.watch(&target, &query).await.unwrap();
    s.router
        .create(&target, &deployment("ignored", json!({"w": "no"})), &params)
        .await
        .unwrap();
    s.router
        .create(&target, &deployment("after", json!({"w": "yes"})), &params)
        .await
        .unwrap();
    s.router
        .delete(&target, "after", &DeleteParams::default())
        .await
        .unwrap();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("a watch event")
            .unwrap()
            .unwrap();
        seen.push(match event {
            WatchEvent::Added(o) => format!("ADDED {}", o.metadata.name.unwrap()),
            WatchEvent::Modified(o) => format!("MODIFIED {}", o.metadata.name.unwrap()),
            WatchEvent::Deleted(o) => format!("DELETED {}", o.metadata.name.unwrap()),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(seen, ["ADDED before", "ADDED after", "DELETED after"]);
    assert_eq!(s.direct.count(), 0);
}

#[tokio::test]
async fn a_cache_that_never_sees_the_write_is_waited_for_only_up_to_the_bound() {
    let bound = Duration::from_millis(200);
    let s = setup_with(None, bound).await;
    let target = ResourceTarget::namespaced(INSTANCE, deployments(), "team-a");
    wait_synced(s.cache.as_ref()).await;
    s.cache.blind.store(true, Ordering::SeqCst);
    s.router
        .create(
            &target,
            &deployment("fresh", json!({})),
            &PostParams::default(),
        )
        .await
        .unwrap();
    let start = std::time::Instant::now();
    let page = s.router.list(&target, &ListQuery::default()).await.unwrap();
    let took = start.elapsed();
    assert_eq!(names(&page), ["fresh"], "the direct read shows the write");
    assert!(
        took >= bound && took < bound * 5,
        "waited {took:?} for a {bound:?} bound"
    );
    let m = s.router.metrics().snapshot();
    assert_eq!(m.fallbacks_for(FallbackReason::StaleAfterWrite), 1, "{m:?}");
    assert_eq!((m.ryw_waits, m.ryw_wait_timeouts), (1, 1), "{m:?}");
    assert_eq!((s.cache.count(), s.direct.count()), (0, 1));

    // The next read does not wait again for the same write: it reads directly at once.
    let start = std::time::Instant::now();
    s.router.get(&target, "fresh").await.unwrap();
    assert!(
        start.elapsed() < bound,
        "waited {:?} again",
        start.elapsed()
    );
    let m = s.router.metrics().snapshot();
    assert_eq!(m.fallbacks_for(FallbackReason::StaleAfterWrite), 2, "{m:?}");
    assert_eq!(m.ryw_waits, 1, "{m:?}");
    assert_eq!((s.cache.count(), s.direct.count()), (0, 2));

    // Once the cache reports the write, reads go back to it.
    s.cache.blind.store(false, Ordering::SeqCst);
    let page = s.router.list(&target, &ListQuery::default()).await.unwrap();
    assert_eq!(names(&page), ["fresh"]);
    assert_eq!((s.cache.count(), s.direct.count()), (1, 2));

    // A newer write is waited for afresh.
    s.cache.blind.store(true, Ordering::SeqCst);
    s.router
        .create(
            &target,
            &deployment("fresher", json!({})),
            &PostParams::default(),
        )
        .await
        .unwrap();
    let start = std::time::Instant::now();
    s.router.get(&target, "fresher").await.unwrap();
    assert!(start.elapsed() >= bound, "did not wait for the new write");
    assert_eq!(s.router.metrics().snapshot().ryw_waits, 2);
}

#[tokio::test]
async fn cached_lists_carry_each_objects_json_and_follow_changes() {
    let s = setup(None).await;
    let target = ResourceTarget::namespaced(INSTANCE, deployments(), "team-a");
    let params = PostParams::default();
    for name in ["a", "b"] {
        s.router
            .create(&target, &deployment(name, json!({"v": "1"})), &params)
            .await
            .unwrap();
    }
    wait_synced(s.cache.as_ref()).await;
    let page = s.router.list(&target, &ListQuery::default()).await.unwrap();
    let rendered = page
        .rendered
        .as_ref()
        .expect("the cache pre-renders objects");
    assert_eq!(rendered.len(), 2);
    for (object, json) in page.items.iter().zip(rendered) {
        let value: serde_json::Value = serde_json::from_slice(json).unwrap();
        assert_eq!(value["apiVersion"], "apps/v1");
        assert_eq!(value["kind"], "Deployment");
        assert_eq!(value, serde_json::to_value(object.as_ref()).unwrap());
    }

    // A change re-renders the object: the next list carries the new JSON.
    s.router
        .patch(
            &target,
            "b",
            &Patch::Merge(json!({"metadata": {"labels": {"v": "2"}}})),
            &PatchParams::default(),
        )
        .await
        .unwrap();
    let page = s.router.list(&target, &ListQuery::default()).await.unwrap();
    let rendered = page.rendered.as_ref().unwrap();
    let b: serde_json::Value = serde_json::from_slice(&rendered[1]).unwrap();
    assert_eq!(b["metadata"]["labels"]["v"], "2");

    // A chunk of the list keeps object and JSON aligned.
    let chunk = page.clone().chunk(None, Some(1));
    assert_eq!(names(&chunk), ["a"]);
    let token = chunk.continue_token().unwrap();
    let rest = page.chunk(Some(&token), Some(1));
    assert_eq!(names(&rest), ["b"]);
    let b: serde_json::Value = serde_json::from_slice(&rest.rendered.unwrap()[0]).unwrap();
    assert_eq!(b["metadata"]["name"], "b");

    // Direct reads have no pre-rendered JSON.
    let direct = s.direct.list(&target, &ListQuery::default()).await.unwrap();
    assert!(direct.rendered.is_none());
}
