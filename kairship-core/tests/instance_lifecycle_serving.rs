//! Serving ends with the Instance: deleting an Instance, rotating its kubeconfig Secret or
//! re-creating it for another Karmada switches every path (REST reads from the cache, REST
//! writes, the native proxy's reads, writes and watches, gRPC) within [`BOUND`] of the host
//! watch reporting it (rotation: of `REFRESH` passing), and the former Karmada receives no
//! request from Kairship afterwards. Everything runs against sandbox API servers over real
//! HTTP with real watches.

#![allow(clippy::unwrap_used)]

#[path = "common/api.rs"]
mod api_fixture;
mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use api_fixture::{ADMIN as TOKEN, AdminToken, Bearer, Everything, GrpcClient, P};
use async_trait::async_trait;
use common::{KAIRSHIP_NS, KarmadaInstance, ensure_namespace, eventually, register_adopted};
use futures::StreamExt;
use http::StatusCode;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kairship_core::api::{HostInstanceClients, KairshipApi, KairshipService, ServiceConfig};
use kairship_core::grpc::{convert as grpc_convert, pb};
use kairship_core::instance::Instance;
use kairship_core::proxy::{ProxyState, proxy_routes};
use kairship_core::router::{
    DirectBackend, DiscoveryCache, EmbeddedCacheBackend, EventStream, InstanceClients,
    InstanceWriter, ListQuery, ObjectPage, Pagination, ReadBackend, ReadWriteRouter,
    ResourceTarget, RouterConfig, RouterError, SplitRouter, StaticInstanceClients, WatchQuery,
    WriteBackend,
};
use kairship_core::server::{AppParts, app, serve};
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::core::{ApiResource, WatchEvent};
use kube_kit::client::ClientOptions;
use kube_sandbox::RequestKind;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const INSTANCE: &str = "prod";
const NS: &str = "demo";
/// How long after the host reports a change (deletion, re-creation) or after the kubeconfig
/// refresh period (rotation) every path must have switched over.
const BOUND: Duration = Duration::from_secs(5);
/// `--instance-client-refresh` of the test server: how often kubeconfig Secrets are re-read.
const REFRESH: Duration = Duration::from_secs(1);

fn configmaps() -> ApiResource {
    ApiResource::erase::<ConfigMap>(&())
}

/// The host, two Karmadas (`old`, `new`) and the API server as `kairship apiserver` wires it.
struct Env {
    host: kube_sandbox::Cluster,
    old: KarmadaInstance,
    new: KarmadaInstance,
    cache: Arc<EmbeddedCacheBackend>,
    base: String,
    http: reqwest::Client,
    stop: CancellationToken,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Env {
    async fn start() -> Env {
        Self::start_on(common::host().await).await
    }

    async fn start_on(host: kube_sandbox::Cluster) -> Env {
        kube_kit::client::install_crypto_provider();
        let old = KarmadaInstance::start("karmada-old").await;
        let new = KarmadaInstance::start("karmada-new").await;
        ensure_namespace(&old.client(), NS).await;
        ensure_namespace(&new.client(), NS).await;
        let stop = CancellationToken::new();
        let host_clients = Arc::new(HostInstanceClients::new(
            host.client(),
            ClientOptions::new("kairship-lifecycle-test"),
            Duration::from_secs(5),
            REFRESH,
        ));
        tokio::spawn(host_clients.clone().watch_instances(stop.clone()));
        let clients: Arc<dyn InstanceClients> = host_clients;
        let cache = Arc::new(EmbeddedCacheBackend::new(clients.clone()));
        let router: Arc<dyn ReadWriteRouter> = Arc::new(SplitRouter::with_config(
            cache.clone(),
            Arc::new(DirectBackend::new(clients.clone())),
            Arc::new(InstanceWriter::new(clients.clone())),
            RouterConfig::default(),
        ));
        let api: Arc<dyn KairshipApi> = Arc::new(
            KairshipService::new(
                host.client(),
                router.clone(),
                Arc::new(Everything),
                ServiceConfig::default(),
            )
            .with_discovery(clients.clone(), Arc::new(DiscoveryCache::default())),
        );
        let proxy = proxy_routes(ProxyState::new(
            router,
            clients,
            Arc::new(AdminToken),
            Arc::new(Everything),
        ));
        let grpc = kairship_core::grpc::routes(api.clone(), Arc::new(AdminToken))
            .await
            .unwrap();
        let app = app(AppParts {
            api,
            authenticator: Arc::new(AdminToken),
            proxy: Some(proxy),
            grpc: Some(grpc),
            console: None,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, app, None, stop.clone()));
        Env {
            host,
            old,
            new,
            cache,
            base: format!("http://{addr}"),
            http: reqwest::Client::new(),
            stop,
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut req = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .bearer_auth(TOKEN);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    fn rest_configmaps(&self) -> String {
        format!("{P}/instances/{INSTANCE}/namespaces/{NS}/configmaps")
    }

    fn proxy_configmaps(&self) -> String {
        format!("{P}/instances/{INSTANCE}/proxy/api/v1/namespaces/{NS}/configmaps")
    }

    /// Names of the configmaps a REST list answers, `None` unless it answered 200.
    async fn rest_names(&self) -> Option<Vec<String>> {
        let (status, body) = self.call("GET", &self.rest_configmaps(), None).await;
        (status == StatusCode::OK).then(|| names(&body))
    }

    async fn proxy_names(&self) -> Option<Vec<String>> {
        let (status, body) = self.call("GET", &self.proxy_configmaps(), None).await;
        (status == StatusCode::OK).then(|| names(&body))
    }

    async fn grpc(&self) -> GrpcClient {
        let channel = tonic::transport::Endpoint::from_shared(self.base.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        pb::kairship_service_client::KairshipServiceClient::with_interceptor(channel, Bearer(TOKEN))
    }

    async fn grpc_list(&self) -> Result<Vec<String>, tonic::Status> {
        let list = self
            .grpc()
            .await
            .list_resources(pb::ListResourcesRequest {
                instance: INSTANCE.into(),
                kind: pb::ResourceKind::Configmaps as i32,
                namespace: Some(NS.into()),
                options: None,
            })
            .await?
            .into_inner();
        Ok(names(
            &serde_json::to_value(grpc_convert::object_list_from_pb(list)).unwrap(),
        ))
    }

    async fn grpc_create(&self, name: &str) -> Result<(), tonic::Status> {
        self.grpc()
            .await
            .create_resource(pb::CreateResourceRequest {
                instance: INSTANCE.into(),
                kind: pb::ResourceKind::Configmaps as i32,
                namespace: Some(NS.into()),
                body: Some(
                    grpc_convert::json_to_struct(json!({"metadata": {"name": name}})).unwrap(),
                ),
            })
            .await
            .map(|_| ())
    }

    /// Registers the Instance for `old` and waits until its configmaps are served from a synced
    /// cache, with a watch open through the native proxy.
    async fn serve_old(&self) -> reqwest::Response {
        create_configmap(&self.old, "in-old").await;
        register_adopted(&self.host.client(), INSTANCE, &self.old).await;
        eventually("the old instance served from the cache", BOUND, || async {
            let names = self.rest_names().await?;
            let synced = self.cache.synced(INSTANCE, &configmaps()).await;
            (synced && names.contains(&"in-old".to_owned())).then_some(())
        })
        .await;
        let watch = self
            .http
            .get(format!(
                "{}{}?watch=true",
                self.base,
                self.proxy_configmaps()
            ))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(watch.status(), StatusCode::OK);
        watch
    }

    /// Every path once, reads and writes, for `instance`'s configmaps (answers ignored).
    async fn touch_every_path(&self, tag: &str) {
        let _ = self.rest_names().await;
        let _ = self.proxy_names().await;
        let _ = self
            .call(
                "POST",
                &self.rest_configmaps(),
                Some(json!({"metadata": {"name": format!("rest-{tag}")}})),
            )
            .await;
        let _ = self
            .call(
                "POST",
                &self.proxy_configmaps(),
                Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("proxy-{tag}")}})),
            )
            .await;
        let _ = self
            .call(
                "GET",
                &format!("{}?watch=true&timeoutSeconds=1", self.proxy_configmaps()),
                None,
            )
            .await;
        let _ = self.grpc_list().await;
        let _ = self.grpc_create(&format!("grpc-{tag}")).await;
        let _ = self
            .call(
                "GET",
                &format!("{P}/instances/{INSTANCE}/proxy/api/v1"),
                None,
            )
            .await;
    }
}

fn names(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

async fn create_configmap(karmada: &KarmadaInstance, name: &str) {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(karmada.client(), NS)
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
}

async fn karmada_names(karmada: &KarmadaInstance) -> Vec<String> {
    Api::<ConfigMap>::namespaced(karmada.client(), NS)
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect()
}

/// Reads what is left of a watch response; it must end within `BOUND`.
async fn watch_ends(mut watch: reqwest::Response) -> String {
    let mut rest = Vec::new();
    tokio::time::timeout(BOUND, async {
        while let Ok(Some(bytes)) = watch.chunk().await {
            rest.extend_from_slice(&bytes);
        }
    })
    .await
    .expect("the open watch did not end");
    String::from_utf8_lossy(&rest).into_owned()
}

/// Asserts that `karmada` receives no request while every path is used for a while (longer
/// than the refresh period, so background re-reads would show too).
async fn assert_left_alone(env: &Env, karmada: &KarmadaInstance, what: &str) {
    let before = karmada.cluster.requests().snapshot();
    env.touch_every_path("after").await;
    tokio::time::sleep(REFRESH * 2).await;
    env.touch_every_path("later").await;
    let after = karmada.cluster.requests().snapshot();
    let new: BTreeMap<RequestKind, u64> = kube_sandbox::requests::difference(&before, &after);
    assert!(new.is_empty(), "{what} still received requests: {new:?}");
}

#[tokio::test]
async fn a_deleted_instance_is_not_found_on_every_path() {
    let env = Env::start().await;
    let watch = env.serve_old().await;

    Api::<Instance>::all(env.host.client())
        .delete(INSTANCE, &DeleteParams::default())
        .await
        .unwrap();
    // Made in the Karmada itself after the deletion: no watch may show it.
    create_configmap(&env.old, "made-after-delete").await;

    // The REST read of the cached (and watched) kind turns 404 within the bound...
    eventually("REST reads to answer 404", BOUND, || async {
        let (status, _) = env.call("GET", &env.rest_configmaps(), None).await;
        (status == StatusCode::NOT_FOUND).then_some(())
    })
    .await;
    // ...and from then on every other path does too, at once.
    let (status, body) = env.call("GET", &env.rest_configmaps(), None).await;
    // `code` is the gRPC code, as grpc-gateway writes it: 5 is NOT_FOUND.
    assert_eq!(
        (status, body["code"].as_i64()),
        (StatusCode::NOT_FOUND, Some(5)),
        "{body}"
    );
    assert!(
        body["message"].as_str().unwrap().contains(INSTANCE),
        "{body}"
    );
    let (status, body) = env
        .call(
            "POST",
            &env.rest_configmaps(),
            Some(json!({"metadata": {"name": "rest-late"}})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "REST write: {body}");
    for (method, path, body) in [
        ("GET", env.proxy_configmaps(), None),
        ("GET", format!("{}/in-old", env.proxy_configmaps()), None),
        (
            "GET",
            format!("{}?watch=true", env.proxy_configmaps()),
            None,
        ),
        (
            "GET",
            format!("{P}/instances/{INSTANCE}/proxy/api/v1"),
            None,
        ),
        (
            "POST",
            env.proxy_configmaps(),
            Some(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "proxy-late"}}),
            ),
        ),
    ] {
        let (status, answer) = env.call(method, &path, body).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "proxy {method} {path}: {answer}"
        );
        assert_eq!(
            (answer["kind"].as_str(), answer["reason"].as_str()),
            (Some("Status"), Some("NotFound")),
            "proxy {method} {path}: {answer}"
        );
    }
    assert_eq!(
        env.grpc_list().await.unwrap_err().code(),
        tonic::Code::NotFound
    );
    assert_eq!(
        env.grpc_create("grpc-late").await.unwrap_err().code(),
        tonic::Code::NotFound
    );

    // The watch opened before the deletion ends (after an ERROR event) instead of following
    // the deleted instance.
    let rest = watch_ends(watch).await;
    assert!(!rest.contains("made-after-delete"), "{rest}");
    let last = rest.lines().last().unwrap_or_default();
    assert!(last.contains("\"ERROR\"") && last.contains("410"), "{rest}");
    assert!(env.cache.cached_resources().is_empty());

    let mut on_old = karmada_names(&env.old).await;
    on_old.sort();
    assert_eq!(
        on_old,
        ["in-old", "made-after-delete"],
        "no write got through"
    );
    assert_left_alone(&env, &env.old, "the deleted instance's Karmada").await;
}

#[tokio::test]
async fn a_rotated_kubeconfig_switches_every_path_to_the_new_karmada() {
    let env = Env::start().await;
    let watch = env.serve_old().await;
    create_configmap(&env.new, "in-new").await;

    // The Secret now points at the other Karmada.
    let secrets: Api<Secret> = Api::namespaced(env.host.client(), KAIRSHIP_NS);
    let mut secret = secrets
        .get(&format!("{INSTANCE}-kubeconfig"))
        .await
        .unwrap();
    secret.data = Some(BTreeMap::from([(
        "kubeconfig".to_owned(),
        ByteString(env.new.served.kubeconfig_yaml.as_bytes().to_vec()),
    )]));
    secrets
        .replace(
            &format!("{INSTANCE}-kubeconfig"),
            &PostParams::default(),
            &secret,
        )
        .await
        .unwrap();

    eventually(
        "REST reads to come from the new Karmada",
        REFRESH + BOUND,
        || async {
            let names = env.rest_names().await?;
            (names == ["in-new"]).then_some(())
        },
    )
    .await;
    // Served from a cache of the new Karmada, not read directly.
    eventually("the new cache to sync", BOUND, || async {
        env.cache
            .synced(INSTANCE, &configmaps())
            .await
            .then_some(())
    })
    .await;
    assert_eq!(env.rest_names().await.unwrap(), ["in-new"]);
    assert_eq!(env.proxy_names().await.unwrap(), ["in-new"]);
    assert_eq!(env.grpc_list().await.unwrap(), ["in-new"]);

    let (status, body) = env
        .call(
            "POST",
            &env.rest_configmaps(),
            Some(json!({"metadata": {"name": "rest-made"}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = env
        .call(
            "POST",
            &env.proxy_configmaps(),
            Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "proxy-made"}})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let mut on_new = karmada_names(&env.new).await;
    on_new.sort();
    assert_eq!(on_new, ["in-new", "proxy-made", "rest-made"]);
    assert_eq!(karmada_names(&env.old).await, ["in-old"]);

    // The watch that followed the old Karmada has ended.
    let rest = watch_ends(watch).await;
    assert!(!rest.contains("in-new"), "{rest}");
    assert_left_alone(&env, &env.old, "the former Karmada").await;
}

#[tokio::test]
async fn a_recreated_instance_serves_its_new_karmada_never_the_old_cache() {
    let env = Env::start().await;
    let _watch = env.serve_old().await;
    create_configmap(&env.new, "in-new").await;

    Api::<Instance>::all(env.host.client())
        .delete(INSTANCE, &DeleteParams::default())
        .await
        .unwrap();
    Api::<Secret>::namespaced(env.host.client(), KAIRSHIP_NS)
        .delete(&format!("{INSTANCE}-kubeconfig"), &DeleteParams::default())
        .await
        .unwrap();
    register_adopted(&env.host.client(), INSTANCE, &env.new).await;

    eventually("the re-created instance to be served", BOUND, || async {
        let names = env.rest_names().await?;
        (names == ["in-new"]).then_some(())
    })
    .await;
    eventually("its cache to sync", BOUND, || async {
        env.cache
            .synced(INSTANCE, &configmaps())
            .await
            .then_some(())
    })
    .await;
    for _ in 0..5 {
        assert_eq!(env.rest_names().await.unwrap(), ["in-new"]);
        assert_eq!(env.proxy_names().await.unwrap(), ["in-new"]);
        assert_eq!(env.grpc_list().await.unwrap(), ["in-new"]);
    }
    assert_left_alone(&env, &env.old, "the former instance's Karmada").await;
}

async fn listed(cache: &EmbeddedCacheBackend, target: &ResourceTarget) -> Option<Vec<String>> {
    let page = cache.list(target, &Default::default()).await.ok()?;
    Some(
        page.items
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect(),
    )
}

/// With [`StaticInstanceClients`], removing or replacing an instance drops its caches the same
/// way: reads fail with an unknown instance, open cache watches end with `410`.
#[tokio::test]
async fn static_clients_removal_and_replacement_drop_the_cache() {
    let old = KarmadaInstance::start("karmada-old").await;
    let new = KarmadaInstance::start("karmada-new").await;
    ensure_namespace(&old.client(), NS).await;
    ensure_namespace(&new.client(), NS).await;
    create_configmap(&old, "in-old").await;
    create_configmap(&new, "in-new").await;
    let clients = Arc::new(StaticInstanceClients::new().with(INSTANCE, old.client()));
    let cache = EmbeddedCacheBackend::new(clients.clone());
    let target = ResourceTarget::namespaced(INSTANCE, configmaps(), NS);
    eventually("the cache of the old instance", BOUND, || {
        listed(&cache, &target)
    })
    .await;
    assert_eq!(listed(&cache, &target).await.unwrap(), ["in-old"]);
    let mut events = cache.watch(&target, &WatchQuery::default()).await.unwrap();
    assert!(matches!(
        events.next().await,
        Some(Ok(WatchEvent::Added(_)))
    ));

    // Replaced: the old cache is dropped and its watch ends; reads come from the new instance.
    clients.insert(INSTANCE, new.client());
    let ended = tokio::time::timeout(BOUND, events.next()).await.unwrap();
    match ended {
        Some(Ok(WatchEvent::Error(status))) => assert_eq!(status.code, 410),
        other => panic!("expected a 410 error event, got {other:?}"),
    }
    let names = eventually("the cache of the new instance", BOUND, || {
        listed(&cache, &target)
    })
    .await;
    assert_eq!(names, ["in-new"]);

    // Removed: unknown, and nothing cached any more.
    clients.remove(INSTANCE);
    assert!(matches!(
        cache.list(&target, &Default::default()).await,
        Err(RouterError::UnknownInstance { .. })
    ));
    assert!(cache.cached_resources().is_empty());
    assert!(
        !cache
            .wait_for_version(INSTANCE, &configmaps(), 1, BOUND)
            .await
    );
}

/// A read backend that knows nothing of instances and keeps answering (as Clusterpedia may for
/// a while after an instance is deleted): one object, and a watch that never ends.
struct Stale;

fn stale_object() -> Arc<kube::core::DynamicObject> {
    Arc::new(
        kube::core::DynamicObject::new("stale", &configmaps())
            .within(NS)
            .data(json!({})),
    )
}

#[async_trait]
impl ReadBackend for Stale {
    async fn get(
        &self,
        _: &ResourceTarget,
        _: &str,
    ) -> Result<Arc<kube::core::DynamicObject>, RouterError> {
        Ok(stale_object())
    }

    async fn list(&self, _: &ResourceTarget, _: &ListQuery) -> Result<ObjectPage, RouterError> {
        Ok(ObjectPage {
            items: vec![stale_object()],
            pagination: Pagination {
                total: 1,
                page: 1,
                page_size: 1,
                pages: 1,
            },
            resource_version: None,
            rendered: None,
        })
    }

    async fn watch(&self, _: &ResourceTarget, _: &WatchQuery) -> Result<EventStream, RouterError> {
        let first = futures::stream::iter([Ok(WatchEvent::Added((*stale_object()).clone()))]);
        Ok(first.chain(futures::stream::pending()).boxed())
    }

    async fn synced(&self, _: &str, _: &ApiResource) -> bool {
        true
    }

    fn seen_version(&self, _: &str, _: &ApiResource) -> Option<u64> {
        Some(u64::MAX)
    }
}

/// With the instance check on, the router refuses reads and writes of a removed instance even
/// when its read backend still answers, and ends that backend's open watches.
#[tokio::test]
async fn the_router_checks_the_instance_before_any_backend_answers() {
    let karmada = KarmadaInstance::start("karmada-old").await;
    ensure_namespace(&karmada.client(), NS).await;
    let clients = Arc::new(StaticInstanceClients::new().with(INSTANCE, karmada.client()));
    let dyn_clients: Arc<dyn InstanceClients> = clients.clone();
    let router = SplitRouter::new(
        Arc::new(Stale),
        Arc::new(Stale),
        Arc::new(InstanceWriter::new(dyn_clients.clone())),
    )
    .with_instance_check(dyn_clients);
    let target = ResourceTarget::namespaced(INSTANCE, configmaps(), NS);
    assert_eq!(
        router
            .list(&target, &ListQuery::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let mut events = router.watch(&target, &WatchQuery::default()).await.unwrap();
    assert!(matches!(
        events.next().await,
        Some(Ok(WatchEvent::Added(_)))
    ));

    clients.remove(INSTANCE);
    let unknown =
        |r: Result<(), RouterError>| matches!(r, Err(RouterError::UnknownInstance { .. }));
    assert!(unknown(
        router
            .list(&target, &ListQuery::default())
            .await
            .map(|_| ())
    ));
    assert!(unknown(router.get(&target, "stale").await.map(|_| ())));
    assert!(unknown(
        router
            .watch(&target, &WatchQuery::default())
            .await
            .map(|_| ())
    ));
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}});
    assert!(unknown(
        router
            .create(&target, &body, &PostParams::default())
            .await
            .map(|_| ())
    ));
    match tokio::time::timeout(BOUND, events.next()).await.unwrap() {
        Some(Ok(WatchEvent::Error(status))) => assert_eq!(status.code, 410),
        other => panic!("expected a 410 error event, got {other:?}"),
    }
    assert!(events.next().await.is_none());
    assert!(karmada_names(&karmada).await.is_empty());
}

/// How many times the host was asked for one Instance.
fn instance_gets(host: &kube_sandbox::Cluster) -> u64 {
    host.requests()
        .snapshot()
        .get(&RequestKind::new("get", "instances", ""))
        .copied()
        .unwrap_or(0)
}

/// While the host watch of Instances fails, Instances are read from the host on use (so a
/// deletion is still seen within the refresh period); once it recovers, they come from the
/// watch again and a deletion is seen through it.
#[tokio::test]
async fn a_failing_host_watch_falls_back_to_reading_instances_and_recovers() {
    let host = common::host().await;
    let fault = host.faults().add(kube_sandbox::FaultRule {
        resource: Some("instances".into()),
        verbs: vec!["list".into(), "watch".into()],
        action: kube_sandbox::FaultAction::Status(500),
    });
    let env = Env::start_on(host).await;
    let _watch = env.serve_old().await;
    // Served by reading the Instance from the host.
    let before = instance_gets(&env.host);
    tokio::time::sleep(REFRESH * 2).await;
    assert!(env.rest_names().await.is_some());
    assert!(
        instance_gets(&env.host) > before,
        "the Instance was not read"
    );

    env.host.faults().remove(fault);
    // Recovered (after the watch's backoff): reads no longer ask the host for the Instance.
    eventually(
        "the host watch to recover",
        Duration::from_secs(30),
        || async {
            let before = instance_gets(&env.host);
            tokio::time::sleep(REFRESH * 2).await;
            env.rest_names().await?;
            (instance_gets(&env.host) == before).then_some(())
        },
    )
    .await;

    Api::<Instance>::all(env.host.client())
        .delete(INSTANCE, &DeleteParams::default())
        .await
        .unwrap();
    eventually("REST reads to answer 404", BOUND, || async {
        let (status, _) = env.call("GET", &env.rest_configmaps(), None).await;
        (status == StatusCode::NOT_FOUND).then_some(())
    })
    .await;
    assert_left_alone(&env, &env.old, "the deleted instance's Karmada").await;
}
