//! Kairship reading an instance through Clusterpedia, against the emulation in
//! `common/clusterpedia.rs` (stock Clusterpedia: it prunes `managedFields` and
//! `last-applied-configuration`, adds `shadow.clusterpedia.io/cluster-name`, lists without a
//! resourceVersion, matches fuzzy names with an unescaped `LIKE`, and refuses
//! `authenticationFrom` without the `ClusterAuthenticationFromSecret` gate). The instance is
//! registered by the real controller manager; reads go through the router, the REST API and
//! the native proxy of one or two API server replicas.

#![allow(clippy::unwrap_used)]

#[path = "common/api.rs"]
mod api_fixture;
mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use api_fixture::{ADMIN, AdminWritesOthersRead, P, Tokens};
use common::clusterpedia::{Clusterpedia, GATE_MESSAGE, PediaOptions, SHADOW_ANNOTATION};
use common::{KarmadaInstance, eventually, fast_config, get_instance, register_adopted};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kairship_core::api::{HostInstanceClients, KairshipApi, KairshipService, ServiceConfig};
use kairship_core::controllers::ReadBackend as Backend;
use kairship_core::controllers::virtual_cluster_sync::READ_BACKEND_READY;
use kairship_core::controllers::virtual_cluster_sync::pedia_cluster::SYNC_SECRETS_ANNOTATION;
use kairship_core::models::pedia::PediaCluster;
use kairship_core::router::{
    ClusterpediaBackend, ClusterpediaConfig, DirectBackend, DiscoveryCache, FallbackReason,
    InstanceClients, InstanceWriter, ListQuery, ObjectPage, ReadBackend, ReadWriteRouter,
    ResourceTarget, RouterConfig, RouterError, SortBy, SortDir, SplitRouter, WatchQuery,
    WriteBackend,
};
use kairship_core::server::{AppParts, app, serve};
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind, WatchEvent};
use kube::{Api, Client};
use kube_kit::client::ClientOptions;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const INSTANCE: &str = "i1";
const CLUSTER: &str = "kairship-i1";
const PEDIA_NS: &str = "clusterpedia-system";
const LIMIT: Duration = Duration::from_secs(20);

fn deployments() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps", "v1", "Deployment"),
        "deployments",
    )
}

fn deployment(name: &str, labels: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap()
}

/// A host, a Karmada instance adopted on it and registered with Clusterpedia by the controller
/// manager, and the Clusterpedia emulation.
struct Env {
    host: kube_sandbox::Cluster,
    karmada: KarmadaInstance,
    pedia: Clusterpedia,
    /// The replicas serve HTTPS with this certificate (kubectl sends no token over HTTP).
    certificate: kairship_core::api::tls::DevCertificate,
    stop: CancellationToken,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// One API server replica: REST and the native proxy, reading through Clusterpedia.
struct Replica {
    base: String,
    router: Arc<SplitRouter>,
    backend: Arc<ClusterpediaBackend>,
    direct: Arc<DirectBackend>,
}

impl Env {
    /// An HTTP client trusting the replicas.
    fn http(&self) -> reqwest::Client {
        let ca = reqwest::Certificate::from_pem(self.certificate.cert_pem.as_bytes()).unwrap();
        reqwest::Client::builder()
            .tls_certs_only([ca])
            .build()
            .unwrap()
    }

    async fn start(options: PediaOptions) -> Env {
        Self::start_with(options, kube_sandbox::ClusterOptions::default()).await
    }

    async fn start_with(options: PediaOptions, instance: kube_sandbox::ClusterOptions) -> Env {
        kube_kit::client::install_crypto_provider();
        let host = common::host().await;
        let hc = host.client();
        common::ensure_namespace(&hc, PEDIA_NS).await;
        let karmada = KarmadaInstance::start_with(INSTANCE, instance).await;
        common::install_karmada_crds(
            &karmada.client(),
            &[
                "work.karmada.io_resourcebindings.yaml",
                "work.karmada.io_clusterresourcebindings.yaml",
            ],
        )
        .await;
        seed(&karmada.client()).await;
        let members = HashMap::from([(CLUSTER.to_owned(), karmada.client())]);
        let pedia = Clusterpedia::start(&host, members, options).await;
        register_adopted(&hc, INSTANCE, &karmada).await;
        let mut config = fast_config();
        config.read_backend = Backend::Clusterpedia {
            namespace: PEDIA_NS.into(),
        };
        let (_, stop) = common::start_manager(&hc, config);
        let certificate =
            kairship_core::api::tls::generate_dev_certificate(&["127.0.0.1".to_owned()]).unwrap();
        Env {
            host,
            karmada,
            pedia,
            certificate,
            stop,
        }
    }

    /// Waits until Clusterpedia stores `names` of Deployments.
    async fn stored(&self, names: &[&str]) {
        eventually("Clusterpedia to store the Deployments", LIMIT, || async {
            let stored = self.pedia.stored(CLUSTER, "apps", "v1", "deployments");
            names
                .iter()
                .all(|n| stored.iter().any(|s| s == n))
                .then_some(())
        })
        .await;
    }

    async fn replica(&self, router_config: RouterConfig) -> Replica {
        self.replica_reading(router_config, false).await
    }

    /// A replica reading through Clusterpedia, or through the embedded cache when `embedded`.
    async fn replica_reading(&self, router_config: RouterConfig, embedded: bool) -> Replica {
        self.replica_serving(router_config, embedded, true).await
    }

    /// A replica as [`Env::replica_reading`], serving HTTPS when `tls` and plain HTTP (for
    /// the gRPC client, which speaks no TLS here) otherwise; both with the gRPC API.
    async fn replica_serving(
        &self,
        router_config: RouterConfig,
        embedded: bool,
        tls: bool,
    ) -> Replica {
        let clients = Arc::new(HostInstanceClients::new(
            self.host.client(),
            ClientOptions::new("kairship-test"),
            Duration::from_secs(5),
            Duration::from_secs(30),
        ));
        let clients: Arc<dyn InstanceClients> = clients;
        let backend = Arc::new(ClusterpediaBackend::with_config(
            self.pedia.client.clone(),
            ClusterpediaConfig {
                readiness_ttl: Duration::from_millis(50),
                probe_interval: Duration::from_millis(10),
            },
        ));
        let direct = Arc::new(DirectBackend::new(clients.clone()));
        let read: Arc<dyn ReadBackend> = if embedded {
            Arc::new(kairship_core::router::EmbeddedCacheBackend::new(
                clients.clone(),
            ))
        } else {
            backend.clone()
        };
        let router = Arc::new(
            SplitRouter::with_config(
                read,
                direct.clone(),
                Arc::new(InstanceWriter::new(clients.clone())),
                router_config,
            )
            .with_instance_check(clients.clone()),
        );
        let dyn_router: Arc<dyn ReadWriteRouter> = router.clone();
        let proxy = kairship_core::proxy::proxy_routes(kairship_core::proxy::ProxyState::new(
            dyn_router.clone(),
            clients.clone(),
            Arc::new(Tokens),
            Arc::new(AdminWritesOthersRead),
        ));
        let service = KairshipService::new(
            self.host.client(),
            dyn_router,
            Arc::new(AdminWritesOthersRead),
            ServiceConfig::default(),
        )
        .with_discovery(clients, Arc::new(DiscoveryCache::default()));
        let api: Arc<dyn KairshipApi> = Arc::new(service);
        let grpc = kairship_core::grpc::routes(api.clone(), Arc::new(Tokens))
            .await
            .unwrap();
        let app = app(AppParts {
            api,
            authenticator: Arc::new(Tokens),
            proxy: Some(proxy),
            grpc: Some(grpc),
            console: None,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server_tls = kairship_core::api::tls::server_config(
            self.certificate.cert_pem.as_bytes(),
            self.certificate.key_pem.as_bytes(),
        )
        .unwrap();
        let scheme = if tls { "https" } else { "http" };
        tokio::spawn(serve(
            listener,
            app,
            tls.then_some(server_tls),
            self.stop.clone(),
        ));
        Replica {
            base: format!("{scheme}://{addr}"),
            router,
            backend,
            direct,
        }
    }
}

const SEEDED: [(&str, &str); 9] = [
    ("web-1", "front"),
    ("web-2", "front"),
    ("webhook", "back"),
    ("db", "back"),
    ("cache", "back"),
    ("api", "front"),
    ("worker", "batch"),
    ("svc-001", "batch"),
    ("svc-0-1", "batch"),
];

/// Deployments in `team-a` (all) and `team-b` (every other one).
async fn seed(instance: &Client) {
    for ns in ["team-a", "team-b"] {
        common::ensure_namespace(instance, ns).await;
    }
    let a: Api<DynamicObject> = Api::namespaced_with(instance.clone(), "team-a", &deployments());
    let b: Api<DynamicObject> = Api::namespaced_with(instance.clone(), "team-b", &deployments());
    for (i, (name, tier)) in SEEDED.iter().enumerate() {
        let body = deployment(name, json!({"tier": tier, "n": i.to_string()}));
        a.create(&PostParams::default(), &body).await.unwrap();
        if i % 2 == 0 {
            b.create(&PostParams::default(), &body).await.unwrap();
        }
    }
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

fn stock_with_gate() -> PediaOptions {
    PediaOptions {
        authentication_from_secret: true,
        ..PediaOptions::default()
    }
}

async fn ready_condition(
    host: &Client,
) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    let instance = get_instance(host, INSTANCE).await?;
    let status = instance.status?;
    status
        .conditions
        .iter()
        .find(|c| c.type_ == READ_BACKEND_READY)
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_through_clusterpedia_answer_like_the_instance() {
    let env = Env::start(stock_with_gate()).await;
    let names: Vec<&str> = SEEDED.iter().map(|(n, _)| *n).collect();
    env.stored(&names).await;
    let r = env.replica(RouterConfig::default()).await;
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
        // `_` is a wildcard to Clusterpedia's LIKE, a character to everyone else.
        q(|q| q.name = Some("0_1".into())),
        q(|q| q.name = Some("0-1".into())),
        q(|q| q.name = Some("svc_0".into())),
        q(|q| q.name = Some("%".into())),
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
            let via_pedia = r.backend.list(&target, query).await.unwrap();
            let direct = r.direct.list(&target, query).await.unwrap();
            assert_eq!(
                summary(&via_pedia),
                summary(&direct),
                "{namespace:?} {query:?}"
            );
            // List items carry no Clusterpedia annotation.
            assert!(
                via_pedia.items.iter().all(|o| !o
                    .metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key(SHADOW_ANNOTATION))),
                "{query:?}"
            );
        }
    }
    let zero = r
        .backend
        .list(
            &ResourceTarget::all(INSTANCE, deployments()),
            &q(|q| q.name = Some("0_1".into())),
        )
        .await
        .unwrap();
    assert_eq!(zero.pagination.total, 0);

    // Clusterpedia's own copy is pruned and annotated; the router reads single objects from
    // the instance, as it stores them.
    let target = ResourceTarget::namespaced(INSTANCE, deployments(), "team-a");
    let stored = r.backend.get(&target, "db").await.unwrap();
    assert_eq!(
        stored.metadata.annotations.as_ref().unwrap()[SHADOW_ANNOTATION],
        CLUSTER
    );
    assert!(stored.metadata.managed_fields.is_none());
    let via_router = r.router.get(&target, "db").await.unwrap();
    let direct = r.direct.get(&target, "db").await.unwrap();
    assert_eq!(via_router, direct);
    assert!(direct.metadata.managed_fields.is_some());

    let missing = r.router.get(&target, "nope").await.unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    // An instance Clusterpedia does not know is a cache failure, not an empty answer.
    let unknown = ResourceTarget::all("i9", deployments());
    let err = r
        .backend
        .list(&unknown, &ListQuery::default())
        .await
        .unwrap_err();
    assert!(err.is_cache_failure(), "{err}");
    // Watches are not Clusterpedia's.
    assert!(matches!(
        r.backend.watch(&target, &WatchQuery::default()).await,
        Err(RouterError::CacheUnavailable { .. })
    ));
    // One version per resource, and no Secrets.
    let stored = env.pedia.stored_resources(CLUSTER);
    assert!(
        stored
            .iter()
            .any(|r| r == "work.karmada.io/v1alpha2/resourcebindings"),
        "{stored:?}"
    );
    assert!(
        !stored
            .iter()
            .any(|r| r.ends_with("/resourcebindings") && r.contains("v1alpha1")),
        "{stored:?}"
    );
    assert!(
        !stored.iter().any(|r| r.ends_with("/secrets")),
        "{stored:?}"
    );
    // A resource Clusterpedia does not sync is read from the instance.
    let secrets =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Secret"), "secrets");
    assert!(!r.backend.synced(INSTANCE, &secrets).await);
    assert!(r.backend.synced(INSTANCE, &deployments()).await);

    // Asked for, Secrets are synced too.
    let instances: Api<kairship_core::instance::Instance> = Api::all(env.host.client());
    let ask = json!({"metadata": {"annotations": {SYNC_SECRETS_ANNOTATION: "true"}}});
    instances
        .patch(INSTANCE, &PatchParams::default(), &Patch::Merge(ask))
        .await
        .unwrap();
    eventually("Clusterpedia to sync Secrets", LIMIT, || async {
        let stored = env.pedia.stored_resources(CLUSTER);
        stored.iter().any(|r| r == "/v1/secrets").then_some(())
    })
    .await;
    eventually("Secrets to read through Clusterpedia", LIMIT, || async {
        r.backend.synced(INSTANCE, &secrets).await.then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_pedia_cluster_shows_on_the_instance_and_reads_go_to_karmada() {
    // Stock Clusterpedia: no ClusterAuthenticationFromSecret.
    let env = Env::start(PediaOptions::default()).await;
    let hc = env.host.client();
    let refused = eventually("the Instance to show the refusal", LIMIT, || async {
        ready_condition(&hc)
            .await
            .filter(|c| c.status == "False" && c.reason == "InvalidConfig")
    })
    .await;
    let message = refused.message;
    assert!(message.contains(GATE_MESSAGE), "{message}");
    assert!(
        message.contains("PediaCluster kairship-i1 Validated=False"),
        "{message}"
    );
    let pedia: PediaCluster = Api::all(hc.clone()).get(CLUSTER).await.unwrap();
    assert!(pedia.spec.authentication_from.is_some());

    let r = env.replica(RouterConfig::default()).await;
    let target = ResourceTarget::namespaced(INSTANCE, deployments(), "team-a");
    let page = r.router.list(&target, &ListQuery::default()).await.unwrap();
    assert_eq!(page.items.len(), SEEDED.len());
    let m = r.router.metrics().snapshot();
    assert_eq!(
        (m.cache_hits, m.fallbacks_for(FallbackReason::Unsynced)),
        (0, 1)
    );

    // With the gate, Clusterpedia takes it; the Instance says so and lists come from it.
    env.pedia.set_authentication_from_secret(true);
    let ready = eventually(
        "the Instance to show the PediaCluster Ready",
        LIMIT,
        || async { ready_condition(&hc).await.filter(|c| c.status == "True") },
    )
    .await;
    assert_eq!(ready.reason, "PediaClusterReady");
    env.stored(&["db"]).await;
    eventually("reads to go through Clusterpedia", LIMIT, || async {
        r.router.list(&target, &ListQuery::default()).await.unwrap();
        (r.router.metrics().snapshot().cache_hits > 0).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_router_reads_its_writes_through_clusterpedia_and_watches_karmada() {
    let env = Env::start(PediaOptions {
        sync_delay: Duration::from_millis(20),
        ..stock_with_gate()
    })
    .await;
    env.stored(&["db"]).await;
    let r = env
        .replica(RouterConfig {
            read_your_writes_timeout: Duration::from_secs(5),
        })
        .await;
    let target = ResourceTarget::namespaced(INSTANCE, deployments(), "team-a");
    let all = ListQuery::default();
    eventually("the backend to be synced", LIMIT, || async {
        r.backend
            .synced(INSTANCE, &deployments())
            .await
            .then_some(())
    })
    .await;
    let before = r.router.list(&target, &all).await.unwrap();
    assert_eq!(before.items.len(), SEEDED.len());
    assert_eq!(r.router.metrics().snapshot().cache_hits, 1);
    // The list says where a watch continues: the newest of its objects.
    let newest = before
        .items
        .iter()
        .map(|o| {
            o.metadata
                .resource_version
                .clone()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .max()
        .unwrap();
    assert_eq!(before.resource_version, Some(newest.to_string()));

    // A write through the router is read back at once from Clusterpedia, which is probed
    // until it has stored the write's resourceVersion.
    let body = serde_json::to_value(deployment("fresh", json!({"tier": "new"}))).unwrap();
    r.router
        .create(&target, &body, &PostParams::default())
        .await
        .unwrap();
    let page = r.router.list(&target, &all).await.unwrap();
    assert!(
        page.items
            .iter()
            .any(|o| o.metadata.name.as_deref() == Some("fresh"))
    );
    let m = r.router.metrics().snapshot();
    assert_eq!(
        (m.cache_hits, m.ryw_waits, m.ryw_wait_timeouts),
        (2, 1, 0),
        "{m:?}"
    );

    // A watch from the list's version brings what happened after it, nothing listed again.
    let mut events = r
        .router
        .watch(
            &target,
            &WatchQuery {
                resource_version: page.resource_version.clone(),
                ..WatchQuery::default()
            },
        )
        .await
        .unwrap();
    let api: Api<DynamicObject> =
        Api::namespaced_with(env.karmada.client(), "team-a", &deployments());
    api.create(&PostParams::default(), &deployment("later", json!({})))
        .await
        .unwrap();
    match events.next().await {
        Some(Ok(WatchEvent::Added(o))) => assert_eq!(o.metadata.name.as_deref(), Some("later")),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        r.router
            .metrics()
            .snapshot()
            .fallbacks_for(FallbackReason::WatchFromVersion),
        1
    );
}

/// Writes `manifest` to a file and runs `kubectl apply -f` with it.
fn apply(
    kubectl: &kube_sandbox::testing::kubectl::Kubectl,
    dir: &std::path::Path,
    manifest: &Value,
) {
    let file = dir.join("manifest.json");
    std::fs::write(&file, manifest.to_string()).unwrap();
    kubectl.ok(&["apply", "-f", file.to_str().unwrap()]);
}

fn kubectl_for(
    env: &Env,
    replica: &Replica,
    dir: &std::path::Path,
) -> Option<kube_sandbox::testing::kubectl::Kubectl> {
    let binary = kube_sandbox::testing::kubectl::kubectl_or_skip("clusterpedia")?;
    let server = format!("{}{P}/instances/{INSTANCE}/proxy", replica.base);
    let ca = Some(env.certificate.cert_pem.as_str());
    let yaml = kube_sandbox::serve::kubeconfig_yaml("kairship", &server, ca, ADMIN);
    let path = dir.join("kubeconfig");
    std::fs::write(&path, yaml).unwrap();
    Some(kube_sandbox::testing::kubectl::Kubectl::new(binary, path))
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("kairship-pedia-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubectl_apply_through_the_proxy_removes_fields() {
    let env = Env::start(stock_with_gate()).await;
    env.stored(&["db"]).await;
    let r = env.replica(RouterConfig::default()).await;
    let dir = temp_dir("apply");
    let Some(kubectl) = kubectl_for(&env, &r, &dir) else {
        return;
    };
    let first = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "team-a", "labels": {"keep": "1", "drop": "1"}},
        "data": {"keep": "1", "drop": "1"}});
    apply(&kubectl, &dir, &first);
    // Clusterpedia has the object (without last-applied-configuration) before the second apply.
    eventually("Clusterpedia to store the ConfigMap", LIMIT, || async {
        env.pedia
            .stored(CLUSTER, "", "v1", "configmaps")
            .contains(&"settings".to_owned())
            .then_some(())
    })
    .await;
    let second = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "team-a", "labels": {"keep": "1"}},
        "data": {"keep": "1"}});
    apply(&kubectl, &dir, &second);
    let stored: ConfigMap = Api::namespaced(env.karmada.client(), "team-a")
        .get("settings")
        .await
        .unwrap();
    let labels = stored.metadata.labels.unwrap();
    assert!(!labels.contains_key("drop"), "{labels:?}");
    let data = stored.data.unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), ["keep"], "{data:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn get_modify_put_through_rest_keeps_what_karmada_stores() {
    let env = Env::start(stock_with_gate()).await;
    let api: Api<DynamicObject> =
        Api::namespaced_with(env.karmada.client(), "team-a", &deployments());
    let mut applied = deployment("edited", json!({"tier": "x"}));
    applied.metadata.namespace = Some("team-a".into());
    let last_applied = serde_json::to_string(&applied).unwrap();
    applied.metadata.annotations = Some(
        [(
            "kubectl.kubernetes.io/last-applied-configuration".to_owned(),
            last_applied.clone(),
        )]
        .into(),
    );
    api.create(&PostParams::default(), &applied).await.unwrap();
    env.stored(&["edited"]).await;
    let r = env.replica(RouterConfig::default()).await;
    let http = env.http();
    let url = format!(
        "{}{P}/instances/{INSTANCE}/namespaces/team-a/resources/apps/v1/deployments/edited",
        r.base
    );
    let mut object: Value = http
        .get(&url)
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    object["spec"]["replicas"] = json!(3);
    let put = http
        .put(&url)
        .bearer_auth(ADMIN)
        .json(&object)
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success(), "{:?}", put.text().await);
    let stored = api.get("edited").await.unwrap();
    let annotations = stored.metadata.annotations.unwrap_or_default();
    assert!(
        !annotations.contains_key(SHADOW_ANNOTATION),
        "{annotations:?}"
    );
    assert_eq!(
        annotations.get("kubectl.kubernetes.io/last-applied-configuration"),
        Some(&last_applied)
    );
    assert_eq!(stored.data["spec"]["replicas"], 3);
    assert!(
        stored.data["spec"]["template"]["metadata"]
            .get("creationTimestamp")
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubectl_get_watch_through_the_proxy_prints_each_object_once() {
    // Bookmarks every 100 ms: one passed through would print `<unknown>`.
    let env = Env::start_with(
        stock_with_gate(),
        kube_sandbox::ClusterOptions {
            bookmark_interval: Duration::from_millis(100),
            ..kube_sandbox::ClusterOptions::default()
        },
    )
    .await;
    let names: Vec<&str> = SEEDED.iter().map(|(n, _)| *n).collect();
    env.stored(&names).await;
    let r = env.replica(RouterConfig::default()).await;
    eventually("the backend to be synced", LIMIT, || async {
        r.backend
            .synced(INSTANCE, &deployments())
            .await
            .then_some(())
    })
    .await;
    let dir = temp_dir("watch");
    let Some(kubectl) = kubectl_for(&env, &r, &dir) else {
        return;
    };
    let mut command = std::process::Command::new(&kubectl.binary);
    command.args([
        "--kubeconfig",
        kubectl.kubeconfig.to_str().unwrap(),
        "get",
        "deployments",
        "-n",
        "team-a",
        "-w",
        "--no-headers",
        "-o",
        "name",
    ]);
    let mut watch = kube_sandbox::testing::process::Background::spawn(command);
    watch.wait_for_line(LIMIT, |line| {
        line.ends_with("/worker") || line.ends_with("/svc-0-1")
    });
    // Past several bookmark intervals, then one change.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let api: Api<DynamicObject> =
        Api::namespaced_with(env.karmada.client(), "team-a", &deployments());
    api.create(
        &PostParams::default(),
        &deployment("added-later", json!({})),
    )
    .await
    .unwrap();
    api.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await
    .unwrap();
    watch.wait_for_line(LIMIT, |line| line.ends_with("/db"));
    let printed = watch.printed.clone();
    drop(watch);
    assert!(!printed.contains("<unknown>"), "{printed}");
    for (name, _) in SEEDED.iter().filter(|(n, _)| *n != "db") {
        let count = printed
            .lines()
            .filter(|l| *l == format!("deployment.apps/{name}"))
            .count();
        assert_eq!(count, 1, "{name}: {printed}");
    }
    // db: listed once, then its change.
    let db = printed
        .lines()
        .filter(|l| *l == "deployment.apps/db")
        .count();
    assert_eq!(db, 2, "{printed}");
    assert!(printed.contains("deployment.apps/added-later"), "{printed}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_a_patch_through_one_a_get_through_the_other() {
    // A sync lag long enough that the second replica's Clusterpedia is behind.
    let env = Env::start(PediaOptions {
        sync_delay: Duration::from_millis(300),
        ..stock_with_gate()
    })
    .await;
    env.stored(&["db"]).await;
    let one = env.replica(RouterConfig::default()).await;
    let two = env.replica(RouterConfig::default()).await;
    let http = env.http();
    let path =
        format!("{P}/instances/{INSTANCE}/proxy/apis/apps/v1/namespaces/team-a/deployments/db");
    let patched = http
        .patch(format!("{}{path}", one.base))
        .bearer_auth(ADMIN)
        .header("content-type", "application/merge-patch+json")
        .body(json!({"spec": {"replicas": 4}}).to_string())
        .send()
        .await
        .unwrap();
    assert!(patched.status().is_success());
    // The write's version, for the client to bring to any replica.
    let cookie = patched
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        cookie.starts_with("kairship-written.v1.deployments.apps=")
            && cookie.contains(&format!("Path={P}/instances/{INSTANCE};")),
        "{cookie}"
    );
    let carried = cookie.split(';').next().unwrap().to_owned();
    let read: Value = http
        .get(format!("{}{path}", two.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(read["spec"]["replicas"], 4, "{read}");
    // Through REST as well.
    let rest: Value = http
        .get(format!(
            "{}{P}/instances/{INSTANCE}/namespaces/team-a/resources/apps/v1/deployments/db",
            two.base
        ))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rest["spec"]["replicas"], 4, "{rest}");
    // A list through the other replica, whose Clusterpedia is behind, waits for the version
    // the cookie carries.
    let list: Value = http
        .get(format!(
            "{}{P}/instances/{INSTANCE}/proxy/apis/apps/v1/namespaces/team-a/deployments",
            two.base
        ))
        .bearer_auth(ADMIN)
        .header("cookie", &carried)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let db = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["metadata"]["name"] == "db")
        .unwrap();
    assert_eq!(db["spec"]["replicas"], 4, "{db}");
    let m = two.router.metrics().snapshot();
    assert_eq!(
        (m.cache_hits, m.ryw_waits, m.ryw_wait_timeouts),
        (1, 1, 0),
        "{m:?}"
    );
}

/// A REST list on the embedded cache is written from the cache's JSON (list items of built-in
/// kinds come without `apiVersion` and `kind`): every item, through the generic path and the
/// typed alias, is the object a REST GET of it answers, with its type, and the page says how
/// many there are.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rest_lists_from_the_embedded_cache_hold_what_gets_hold() {
    let env = Env::start(stock_with_gate()).await;
    let r = env.replica_reading(RouterConfig::default(), true).await;
    let http = env.http();
    let get_json = |url: String| {
        let http = http.clone();
        async move {
            let response = http.get(&url).bearer_auth(ADMIN).send().await.unwrap();
            assert!(response.status().is_success(), "{url}");
            response.json::<Value>().await.unwrap()
        }
    };
    let generic = format!(
        "{}{P}/instances/{INSTANCE}/namespaces/team-a/resources/apps/v1/deployments",
        r.base
    );
    let typed = format!(
        "{}{P}/instances/{INSTANCE}/namespaces/team-a/deployments",
        r.base
    );
    for url in [generic, typed] {
        let list = eventually("the cache to answer the list", LIMIT, || async {
            let list = get_json(url.clone()).await;
            (list["items"].as_array().map(Vec::len) == Some(SEEDED.len())).then_some(list)
        })
        .await;
        assert_eq!(list["pagination"]["total"], SEEDED.len(), "{list}");
        let keys: Vec<&str> = list
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(keys, ["items", "pagination"], "{list}");
        for item in list["items"].as_array().unwrap() {
            assert_eq!(
                (&item["apiVersion"], &item["kind"]),
                (&json!("apps/v1"), &json!("Deployment")),
                "{item}"
            );
            let name = item["metadata"]["name"].as_str().unwrap();
            let got = get_json(format!(
                "{}{P}/instances/{INSTANCE}/namespaces/team-a/resources/apps/v1/deployments/{name}",
                r.base
            ))
            .await;
            assert_eq!(item, &got);
        }
    }
    assert!(r.router.metrics().snapshot().cache_hits >= 2);
}

/// Read-your-writes across replicas through REST: a PUT through one replica sets the
/// `kairship-written` cookie the native proxy sets, and a list through the other replica,
/// whose Clusterpedia is behind, that carries it returns the new object.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_a_rest_put_through_one_a_rest_list_through_the_other() {
    let env = Env::start(PediaOptions {
        sync_delay: Duration::from_millis(300),
        ..stock_with_gate()
    })
    .await;
    env.stored(&["db"]).await;
    let one = env.replica(RouterConfig::default()).await;
    let two = env.replica(RouterConfig::default()).await;
    let http = env.http();
    let generic =
        format!("{P}/instances/{INSTANCE}/namespaces/team-a/resources/apps/v1/deployments");
    let typed = format!("{P}/instances/{INSTANCE}/namespaces/team-a/deployments");
    // The written version of a write's answer, as the cookie the client brings back.
    let carried = |response: &reqwest::Response| {
        let cookie = response
            .headers()
            .get("set-cookie")
            .expect("a REST write sets the written cookie")
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            cookie.starts_with("kairship-written.v1.deployments.apps=")
                && cookie.contains(&format!("Path={P}/instances/{INSTANCE};")),
            "{cookie}"
        );
        cookie.split(';').next().unwrap().to_owned()
    };
    let replicas_listed = |collection: String, cookie: String| {
        let http = http.clone();
        async move {
            let list: Value = http
                .get(collection)
                .bearer_auth(ADMIN)
                .header("cookie", format!("other=1; {cookie}"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let db = list["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["metadata"]["name"] == "db")
                .unwrap()
                .clone();
            db["spec"]["replicas"].clone()
        }
    };
    // GET-modify-PUT through the typed alias on one, a generic list on the other.
    let url = format!("{}{typed}/db", one.base);
    let mut object: Value = http
        .get(&url)
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    object["spec"]["replicas"] = json!(5);
    let put = http
        .put(&url)
        .bearer_auth(ADMIN)
        .json(&object)
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success());
    let cookie = carried(&put);
    let written: Value = put.json().await.unwrap();
    assert_eq!(
        cookie.split_once('=').unwrap().1,
        written["metadata"]["resourceVersion"].as_str().unwrap()
    );
    let listed = replicas_listed(format!("{}{generic}", two.base), cookie).await;
    assert_eq!(listed, 5);
    // A generic PATCH on one, a list through the typed alias on the other.
    let patched = http
        .patch(format!("{}{generic}/db", one.base))
        .bearer_auth(ADMIN)
        .header("content-type", "application/merge-patch+json")
        .body(json!({"spec": {"replicas": 6}}).to_string())
        .send()
        .await
        .unwrap();
    assert!(patched.status().is_success());
    let cookie = carried(&patched);
    let listed = replicas_listed(format!("{}{typed}", two.base), cookie).await;
    assert_eq!(listed, 6);
    let m = two.router.metrics().snapshot();
    assert_eq!(m.ryw_waits, 2, "{m:?}");
}

/// Read-your-writes across replicas through gRPC: an `UpdateObject` through one replica
/// answers the write's resourceVersion in `kairship-written` metadata, and a `ListObjects`
/// through the other, whose Clusterpedia is behind, that sends it back returns the new object.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_a_grpc_update_through_one_a_grpc_list_through_the_other() {
    use kairship_core::grpc::{convert as grpc_convert, pb};
    let env = Env::start(PediaOptions {
        sync_delay: Duration::from_millis(300),
        ..stock_with_gate()
    })
    .await;
    env.stored(&["db"]).await;
    let one = env
        .replica_serving(RouterConfig::default(), false, false)
        .await;
    let two = env
        .replica_serving(RouterConfig::default(), false, false)
        .await;
    let client = |base: String| async move {
        let channel = tonic::transport::Endpoint::from_shared(base)
            .unwrap()
            .connect()
            .await
            .unwrap();
        pb::kairship_service_client::KairshipServiceClient::new(channel)
    };
    fn authorized<T>(message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        request
            .metadata_mut()
            .insert("authorization", format!("Bearer {ADMIN}").parse().unwrap());
        request
    }
    let (mut first, mut second) = (
        client(one.base.clone()).await,
        client(two.base.clone()).await,
    );
    let at = |name: &str| pb::GetObjectRequest {
        instance: INSTANCE.into(),
        group: "apps".into(),
        version: "v1".into(),
        resource: "deployments".into(),
        namespace: Some("team-a".into()),
        name: name.into(),
    };
    let object = first.get_object(authorized(at("db"))).await.unwrap();
    let mut object = grpc_convert::struct_to_json(object.into_inner());
    object["spec"]["replicas"] = json!(7);
    let updated = first
        .update_object(authorized(pb::UpdateObjectRequest {
            instance: INSTANCE.into(),
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
            namespace: Some("team-a".into()),
            name: "db".into(),
            body: Some(grpc_convert::json_to_struct(object).unwrap()),
        }))
        .await
        .unwrap();
    let written = updated
        .metadata()
        .get("kairship-written")
        .expect("a gRPC write answers its resourceVersion")
        .clone();
    let updated = grpc_convert::struct_to_json(updated.into_inner());
    assert_eq!(
        written.to_str().unwrap(),
        updated["metadata"]["resourceVersion"].as_str().unwrap()
    );
    let mut list = authorized(pb::ListObjectsRequest {
        instance: INSTANCE.into(),
        group: "apps".into(),
        version: "v1".into(),
        resource: "deployments".into(),
        namespace: Some("team-a".into()),
        options: None,
    });
    list.metadata_mut().insert("kairship-written", written);
    let list = second.list_objects(list).await.unwrap().into_inner();
    let db = list
        .items
        .into_iter()
        .map(grpc_convert::struct_to_json)
        .find(|o| o["metadata"]["name"] == "db")
        .unwrap();
    assert_eq!(db["spec"]["replicas"], 7, "{db}");
    let m = two.router.metrics().snapshot();
    assert_eq!(m.ryw_waits, 1, "{m:?}");
}

#[test]
fn clusterpedias_like_treats_underscore_and_percent_as_wildcards() {
    use common::clusterpedia::sql_like;
    for (text, pattern, want) in [
        ("svc-0-1", "%0_1%", true),
        ("svc-001", "%0_1%", true),
        ("svc-01", "%0_1%", false),
        ("abc", "%b%", true),
        ("abc", "%B%", false),
        ("abc", "%%", true),
    ] {
        assert_eq!(sql_like(text, pattern), want, "{text} {pattern}");
    }
}

/// p50 of `rounds` GETs of `url` in milliseconds, each answer read to the end.
async fn p50_ms(http: &reqwest::Client, url: &str, token: &str, rounds: usize) -> f64 {
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = std::time::Instant::now();
        let response = http.get(url).bearer_auth(token).send().await.unwrap();
        assert!(response.status().is_success(), "{url}");
        let body = response.bytes().await.unwrap();
        assert!(!body.is_empty());
        samples.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// The cost of a list of 200 Deployments through REST and through the native proxy, on
/// Clusterpedia and on the embedded cache, beside Karmada's own answer: prints `BENCH` lines
/// (docs/benchmarks.md). A measurement, not a check: `cargo test -p kairship-core --test
/// clusterpedia -- --ignored --nocapture list_costs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run on demand"]
async fn list_costs() {
    const COUNT: usize = 200;
    const ROUNDS: usize = 60;
    let env = Env::start(stock_with_gate()).await;
    let api: Api<DynamicObject> =
        Api::namespaced_with(env.karmada.client(), "team-a", &deployments());
    let mut names = Vec::new();
    for i in 0..COUNT {
        let name = format!("bench-{i:03}");
        api.create(
            &PostParams::default(),
            &deployment(&name, json!({"tier": "bench"})),
        )
        .await
        .unwrap();
        names.push(name);
    }
    let last = names.last().unwrap().clone();
    env.stored(&[last.as_str()]).await;
    let http = env.http();
    let direct = format!(
        "{}/apis/apps/v1/namespaces/team-a/deployments",
        env.karmada.served.url
    );
    let karmada_ms = p50_ms(&http, &direct, env.karmada.cluster.admin_token(), ROUNDS).await;
    println!("BENCH karmada_list_{COUNT}_p50_ms={karmada_ms:.2}");
    for (label, embedded) in [("clusterpedia", false), ("embedded", true)] {
        let r = env.replica_reading(RouterConfig::default(), embedded).await;
        let proxy = format!(
            "{}{P}/instances/{INSTANCE}/proxy/apis/apps/v1/namespaces/team-a/deployments",
            r.base
        );
        let rest = format!(
            "{}{P}/instances/{INSTANCE}/namespaces/team-a/resources/apps/v1/deployments",
            r.base
        );
        // Warm up: caches synced, clients connected.
        p50_ms(&http, &proxy, ADMIN, 5).await;
        p50_ms(&http, &rest, ADMIN, 5).await;
        let proxy_ms = p50_ms(&http, &proxy, ADMIN, ROUNDS).await;
        let rest_ms = p50_ms(&http, &rest, ADMIN, ROUNDS).await;
        println!("BENCH {label}_proxy_list_{COUNT}_p50_ms={proxy_ms:.2}");
        println!("BENCH {label}_rest_list_{COUNT}_p50_ms={rest_ms:.2}");
        println!("BENCH {label}_rest_over_proxy={:.2}", rest_ms / proxy_ms);
    }
}
