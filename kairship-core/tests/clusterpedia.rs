//! The Clusterpedia read backend against a stand-in for Clusterpedia's aggregated API: an HTTP
//! server that answers `/apis/clusterpedia.io/v1beta1/resources/clusters/kairship-i1/...` from
//! a sandbox instance (applying Clusterpedia's fuzzy-name search label, `orderby`, `limit`,
//! offset `continue` and `withRemainingCount`) and everything else from a sandbox host cluster.
//! Reads through the backend must answer exactly like reads straight from the instance.

#![allow(clippy::unwrap_used)]

mod common;

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, Request, State};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::StatusCode;
use kairship_core::models::pedia::{PediaCluster, PediaClusterSpec};
use kairship_core::router::{
    ClusterpediaBackend, ClusterpediaConfig, DirectBackend, FUZZY_NAME_LABEL, FallbackReason,
    InstanceWriter, ListQuery, ObjectPage, ReadBackend, ReadWriteRouter, ResourceTarget,
    RouterConfig, RouterError, SortBy, SortDir, SplitRouter, StaticInstanceClients, WatchQuery,
    WriteBackend,
};
use kube::api::{Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind, WatchEvent};
use kube::{Api, Client};
use serde_json::{Value, json};
use tower::ServiceExt;

const INSTANCE: &str = "i1";
const CLUSTER: &str = "kairship-i1";
const PREFIX: &str = "/apis/clusterpedia.io/v1beta1/resources/clusters/";

fn deployments() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps", "v1", "Deployment"),
        "deployments",
    )
}

#[derive(Clone)]
struct Fake {
    host: kube_sandbox::Cluster,
    instance: Client,
}

/// Splits a label selector at top-level commas (not those inside `in (a,b)`).
fn requirements(selector: &str) -> Vec<String> {
    let (mut out, mut current, mut depth) = (Vec::new(), String::new(), 0);
    for c in selector.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current);
    out.into_iter()
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty())
        .collect()
}

fn field<'a>(item: &'a Value, pointer: &str) -> &'a str {
    item.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn compare_by(key: &str, a: &Value, b: &Value) -> Ordering {
    match key {
        "name" => field(a, "/metadata/name").cmp(field(b, "/metadata/name")),
        "namespace" => field(a, "/metadata/namespace").cmp(field(b, "/metadata/namespace")),
        "created_at" => {
            field(a, "/metadata/creationTimestamp").cmp(field(b, "/metadata/creationTimestamp"))
        }
        "resource_version" => {
            let rv = |v: &Value| {
                field(v, "/metadata/resourceVersion")
                    .parse::<u64>()
                    .unwrap_or(0)
            };
            rv(a).cmp(&rv(b))
        }
        other => panic!("unsupported orderby field {other}"),
    }
}

fn json_response(code: StatusCode, value: &Value) -> Response {
    (
        code,
        [(http::header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// Clusterpedia's resource API, answered from the instance.
async fn clusterpedia(fake: &Fake, rest: &str, query: HashMap<String, String>) -> Response {
    let Some((cluster, kube_path)) = rest.split_once('/') else {
        return json_response(
            StatusCode::NOT_FOUND,
            &json!({"kind": "Status", "code": 404}),
        );
    };
    if cluster != CLUSTER {
        let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "reason": "NotFound", "code": 404, "message": format!("cluster {cluster} not found")});
        return json_response(StatusCode::NOT_FOUND, &status);
    }
    let mut fuzzy = Vec::new();
    let mut labels = Vec::new();
    for requirement in requirements(query.get("labelSelector").map_or("", String::as_str)) {
        match requirement.strip_prefix(&format!("{FUZZY_NAME_LABEL}=")) {
            Some(value) => fuzzy.push(value.to_owned()),
            None => labels.push(requirement),
        }
    }
    let mut forwarded = vec![("labelSelector".to_owned(), labels.join(","))];
    if let Some(fields) = query.get("fieldSelector") {
        forwarded.push(("fieldSelector".to_owned(), fields.clone()));
    }
    let uri = format!(
        "/{kube_path}?{}",
        kairship_core::router::encode_query(&forwarded)
    );
    let request = http::Request::get(uri).body(Vec::new()).unwrap();
    let mut answer: Value = match fake.instance.request(request).await {
        Ok(answer) => answer,
        Err(kube::Error::Api(status)) => {
            let code = StatusCode::from_u16(status.code).unwrap();
            return json_response(code, &serde_json::to_value(&*status).unwrap());
        }
        Err(other) => panic!("{other}"),
    };
    let Some(items) = answer.get_mut("items").and_then(Value::as_array_mut) else {
        return json_response(StatusCode::OK, &answer);
    };
    // SQL `name LIKE %value%` for each fuzzy value.
    items.retain(|item| {
        fuzzy
            .iter()
            .all(|f| field(item, "/metadata/name").contains(f.as_str()))
    });
    if let Some(orderby) = query.get("orderby") {
        let keys: Vec<(String, bool)> = orderby
            .split(',')
            .map(|k| match k.trim().split_once(' ') {
                Some((key, "desc")) => (key.to_owned(), true),
                _ => (k.trim().to_owned(), false),
            })
            .collect();
        items.sort_by(|a, b| {
            keys.iter().fold(Ordering::Equal, |acc, (key, desc)| {
                acc.then_with(|| {
                    let ord = compare_by(key, a, b);
                    if *desc { ord.reverse() } else { ord }
                })
            })
        });
    }
    let total = items.len() as i64;
    let offset: usize = query.get("continue").map_or(0, |c| c.parse().unwrap());
    let limit: Option<usize> = query.get("limit").map(|l| l.parse().unwrap());
    let page: Vec<Value> = items
        .iter()
        .skip(offset)
        .take(limit.unwrap_or(usize::MAX))
        .cloned()
        .collect();
    let returned = page.len() as i64;
    *items = page;
    if query.contains_key("withRemainingCount") {
        answer["metadata"]["remainingItemCount"] = json!(total - offset as i64 - returned);
    }
    json_response(StatusCode::OK, &answer)
}

async fn serve_fake(State(fake): State<Fake>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    if let Some(rest) = path.strip_prefix(PREFIX) {
        let Query(query) = Query::<HashMap<String, String>>::try_from_uri(request.uri()).unwrap();
        return clusterpedia(&fake, rest, query).await;
    }
    fake.host
        .router()
        .oneshot(request)
        .await
        .unwrap_or_else(|e| match e {})
}

struct Setup {
    host: kube_sandbox::Cluster,
    _instance: kube_sandbox::Cluster,
    host_client: Client,
    instance_client: Client,
    pedia: Arc<ClusterpediaBackend>,
    direct: Arc<DirectBackend>,
    clients: Arc<StaticInstanceClients>,
}

async fn setup() -> Setup {
    let host = common::host().await;
    let instance = kube_sandbox::Cluster::new(INSTANCE);
    let instance_client = instance.client();
    for ns in ["team-a", "team-b"] {
        common::ensure_namespace(&instance_client, ns).await;
    }
    let api: Api<kube::core::DynamicObject> =
        Api::namespaced_with(instance_client.clone(), "team-a", &deployments());
    let api_b: Api<kube::core::DynamicObject> =
        Api::namespaced_with(instance_client.clone(), "team-b", &deployments());
    for (i, (name, tier)) in [
        ("web-1", "front"),
        ("web-2", "front"),
        ("webhook", "back"),
        ("db", "back"),
        ("cache", "back"),
        ("api", "front"),
        ("worker", "batch"),
    ]
    .iter()
    .enumerate()
    {
        let body = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": {"tier": tier, "n": i.to_string()}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
        }))
        .unwrap();
        api.create(&PostParams::default(), &body).await.unwrap();
        if i % 2 == 0 {
            api_b.create(&PostParams::default(), &body).await.unwrap();
        }
    }

    let fake = Fake {
        host: host.clone(),
        instance: instance_client.clone(),
    };
    let app = axum::Router::new().fallback(serve_fake).with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let yaml = kube_sandbox::serve::kubeconfig_yaml(
        "host",
        &format!("http://{addr}"),
        None,
        host.admin_token(),
    );
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&yaml).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let host_client = Client::try_from(config).unwrap();
    let pedia = Arc::new(ClusterpediaBackend::with_config(
        host_client.clone(),
        ClusterpediaConfig {
            readiness_ttl: Duration::from_millis(50),
            probe_interval: Duration::from_millis(10),
        },
    ));
    let clients = Arc::new(StaticInstanceClients::new().with(INSTANCE, instance_client.clone()));
    Setup {
        host,
        _instance: instance,
        host_client,
        instance_client,
        pedia,
        direct: Arc::new(DirectBackend::new(clients.clone())),
        clients,
    }
}

/// Registers the instance with "Clusterpedia" and reports it Ready.
async fn register(host: &Client) {
    let api: Api<PediaCluster> = Api::all(host.clone());
    api.create(
        &PostParams::default(),
        &PediaCluster::new(CLUSTER, PediaClusterSpec::default()),
    )
    .await
    .unwrap();
    let status = json!({"conditions": [{
        "type": "Ready", "status": "True", "reason": "Healthy", "message": "synced",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }]});
    api.patch_status(
        CLUSTER,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await
    .unwrap();
}

fn summary(page: &ObjectPage) -> (Vec<String>, usize, u32, u32) {
    let names = page
        .items
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o.metadata.namespace.clone().unwrap_or_default(),
                o.metadata.name.clone().unwrap_or_default()
            )
        })
        .collect();
    let p = page.pagination;
    (names, p.total, p.page_size, p.pages)
}

#[tokio::test]
async fn reads_through_clusterpedia_answer_like_the_instance() {
    let s = setup().await;
    let q = |f: fn(&mut ListQuery)| {
        let mut q = ListQuery::default();
        f(&mut q);
        q
    };
    let queries = [
        q(|_| {}),
        q(|q| q.label_selector = Some("tier=front".into())),
        q(|q| q.label_selector = Some("tier in (back,batch),n!=3".into())),
        q(|q| q.field_selector = Some("metadata.name=db".into())),
        q(|q| q.name = Some("WEB".into())),
        q(|q| q.name = Some("web hook".into())),
        q(|q| q.sort_dir = SortDir::Desc),
        q(|q| {
            q.sort_by = SortBy::CreationTimestamp;
            q.sort_dir = SortDir::Desc;
        }),
        q(|q| q.page_size = Some(3)),
        q(|q| {
            q.page_size = Some(3);
            q.page = Some(2);
        }),
        q(|q| {
            q.page_size = Some(3);
            q.page = Some(4);
        }),
        q(|q| {
            q.page_size = Some(3);
            q.page = Some(9);
        }),
        q(|q| {
            q.name = Some("web".into());
            q.sort_dir = SortDir::Desc;
            q.page_size = Some(2);
            q.page = Some(2);
        }),
    ];
    for namespace in [None, Some("team-a"), Some("team-b")] {
        let target = ResourceTarget {
            instance: INSTANCE.into(),
            resource: deployments(),
            namespace: namespace.map(str::to_owned),
            acting_as: None,
        };
        for query in &queries {
            let via_pedia = s.pedia.list(&target, query).await.unwrap();
            let direct = s.direct.list(&target, query).await.unwrap();
            assert_eq!(
                summary(&via_pedia),
                summary(&direct),
                "{namespace:?} {query:?}"
            );
        }
    }
    let target = ResourceTarget::namespaced(INSTANCE, deployments(), "team-a");
    let got = s.pedia.get(&target, "db").await.unwrap();
    let want = s.direct.get(&target, "db").await.unwrap();
    assert_eq!(got, want);
    let missing = s.pedia.get(&target, "nope").await.unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    let message = |e: RouterError| match e {
        RouterError::Api { status, .. } => (status.code, status.message),
        other => panic!("{other}"),
    };
    assert_eq!(
        message(missing),
        message(s.direct.get(&target, "nope").await.unwrap_err())
    );
    // An instance Clusterpedia does not know is a cache failure, not an empty answer.
    let unknown = ResourceTarget::all("i9", deployments());
    let err = s
        .pedia
        .list(&unknown, &ListQuery::default())
        .await
        .unwrap_err();
    assert!(err.is_cache_failure(), "{err}");
    // Watches are not Clusterpedia's.
    assert!(matches!(
        s.pedia.watch(&target, &WatchQuery::default()).await,
        Err(RouterError::CacheUnavailable { .. })
    ));
}

#[tokio::test]
async fn the_router_reads_through_clusterpedia_once_its_pedia_cluster_is_ready() {
    let s = setup().await;
    let router = SplitRouter::with_config(
        s.pedia.clone(),
        s.direct.clone(),
        Arc::new(InstanceWriter::new(s.clients.clone())),
        RouterConfig {
            read_your_writes_timeout: Duration::from_millis(300),
        },
    );
    let target = ResourceTarget::namespaced(INSTANCE, deployments(), "team-a");
    let all = ListQuery::default();

    // Not registered yet: reads go direct.
    assert!(!s.pedia.synced(INSTANCE, &deployments()).await);
    let before = router.list(&target, &all).await.unwrap();
    assert_eq!(before.items.len(), 7);
    let m = router.metrics().snapshot();
    assert_eq!(
        (m.cache_hits, m.fallbacks_for(FallbackReason::Unsynced)),
        (0, 1)
    );

    register(&s.host_client).await;
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert!(s.pedia.synced(INSTANCE, &deployments()).await);
    let page = router.list(&target, &all).await.unwrap();
    assert_eq!(summary(&page), summary(&before));
    assert_eq!(router.metrics().snapshot().cache_hits, 1);

    // A write through the router is read back at once from Clusterpedia, which is probed
    // until it has stored the write's resourceVersion.
    let body = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "fresh"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "fresh"}},
                 "template": {"metadata": {"labels": {"app": "fresh"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    });
    router
        .create(&target, &body, &PostParams::default())
        .await
        .unwrap();
    let page = router.list(&target, &all).await.unwrap();
    assert!(
        page.items
            .iter()
            .any(|o| o.metadata.name.as_deref() == Some("fresh"))
    );
    let m = router.metrics().snapshot();
    assert_eq!(
        (m.cache_hits, m.ryw_waits, m.ryw_wait_timeouts),
        (2, 1, 0),
        "{m:?}"
    );
    assert!(s.pedia.seen_version(INSTANCE, &deployments()).is_some());

    // Watches fall back to the instance and still work.
    let mut events = router.watch(&target, &WatchQuery::default()).await.unwrap();
    assert!(matches!(
        events.next().await,
        Some(Ok(WatchEvent::Added(_)))
    ));
    assert_eq!(
        router
            .metrics()
            .snapshot()
            .fallbacks_for(FallbackReason::CacheError),
        1
    );
    drop(s.host);
    drop(s.instance_client);
}
