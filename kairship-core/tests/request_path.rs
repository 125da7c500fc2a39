//! The native proxy's list answers against the instance's own, over real HTTP in front of a
//! kube-sandbox instance: the same JSON (fields, items, list metadata) once both are sorted,
//! whether the cache or the instance answers; list resourceVersions that never go back across
//! kinds; gzip for large answers to kube-rs and kubectl; the instance's 429 passed through.

#![allow(clippy::unwrap_used)]

#[path = "common/api.rs"]
mod api_fixture;
mod common;

use std::collections::BTreeSet;
use std::io::Read as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kairship_core::access::{AccessError, AllowAll, Authenticator, Caller};
use kairship_core::proxy::{ProxyState, proxy_routes};
use kairship_core::router::{
    DirectBackend, EmbeddedCacheBackend, InstanceWriter, ReadBackend, SplitRouter,
    StaticInstanceClients,
};
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::{Value, json};

const INSTANCE: &str = "i1";
const TOKEN: &str = "user-token";

/// Every bearer token is the user `user`.
struct AnyToken;

#[async_trait]
impl Authenticator for AnyToken {
    async fn authenticate(&self, _: &str) -> Result<Caller, AccessError> {
        Ok(Caller::new("user", vec![]))
    }
}

/// Which backend answers the proxy's reads.
#[derive(Clone, Copy, Debug)]
enum Reads {
    /// The embedded cache (the instance only while it syncs).
    Cache,
    /// The instance, every time (as before the cache synced).
    Instance,
}

/// (path and query, `Content-Encoding`) of every answer the proxy gave.
type Answers = Arc<Mutex<Vec<(String, Option<String>)>>>;

struct Setup {
    instance: kube_sandbox::Cluster,
    served: kube_sandbox::Served,
    /// The proxy's base URL for the instance.
    base: String,
    /// The CA of the proxy's certificate, when it serves HTTPS.
    ca_pem: Option<String>,
    answers: Answers,
    http: reqwest::Client,
}

async fn setup(reads: Reads) -> Setup {
    setup_with(reads, false).await
}

/// A client of `served` as Kairship's API server builds the instance clients (kube-kit's
/// options for clients relaying users' requests).
async fn relaying_client(served: &kube_sandbox::Served) -> kube::Client {
    let config =
        kube::Config::from_custom_kubeconfig(served.kubeconfig().unwrap(), &Default::default())
            .await
            .unwrap();
    let options = kube_kit::client::ClientOptions::new("kairship-test").relaying_users();
    kube_kit::client::client_from_config(config, &options, "the instance").unwrap()
}

/// The proxy in front of a fresh instance; over HTTPS (HTTP/2 by ALPN, as the API server
/// serves) with `tls`.
async fn setup_with(reads: Reads, tls: bool) -> Setup {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let instance = kube_sandbox::Cluster::new(INSTANCE);
    let served = instance
        .serve(kube_sandbox::ServeOptions::default())
        .await
        .unwrap();
    let clients =
        Arc::new(StaticInstanceClients::new().with(INSTANCE, relaying_client(&served).await));
    let read: Arc<dyn ReadBackend> = match reads {
        Reads::Cache => Arc::new(EmbeddedCacheBackend::new(clients.clone())),
        Reads::Instance => Arc::new(DirectBackend::new(clients.clone())),
    };
    let router = Arc::new(SplitRouter::new(
        read,
        Arc::new(DirectBackend::new(clients.clone())),
        Arc::new(InstanceWriter::new(clients.clone())),
    ));
    let state = ProxyState::new(router, clients, Arc::new(AnyToken), Arc::new(AllowAll));
    let answers: Answers = Arc::default();
    let recorded = answers.clone();
    let record = move |request: Request, next: Next| {
        let recorded = recorded.clone();
        async move {
            let path = request
                .uri()
                .path_and_query()
                .map(ToString::to_string)
                .unwrap_or_default();
            let response: Response = next.run(request).await;
            let encoding = response
                .headers()
                .get(http::header::CONTENT_ENCODING)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            recorded.lock().unwrap().push((path, encoding));
            response
        }
    };
    let app = proxy_routes(state).layer(axum::middleware::from_fn(record));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (scheme, ca_pem) = if tls {
        let dev = kairship_core::api::tls::generate_dev_certificate(&["127.0.0.1".into()]).unwrap();
        let config =
            kairship_core::api::tls::server_config(dev.cert_pem.as_bytes(), dev.key_pem.as_bytes())
                .unwrap();
        let shutdown = tokio_util::sync::CancellationToken::new();
        tokio::spawn(kairship_core::server::serve(
            listener,
            app,
            Some(config),
            shutdown,
        ));
        ("https", Some(dev.cert_pem))
    } else {
        tokio::spawn(async move { axum::serve(listener, app).await });
        ("http", None)
    };
    Setup {
        instance,
        served,
        base: format!("{scheme}://{addr}/apis/kairship.io/v1alpha1/instances/{INSTANCE}/proxy"),
        ca_pem,
        answers,
        http: reqwest::Client::new(),
    }
}

/// The admin token of the served sandbox, from its kubeconfig.
fn admin_token(served: &kube_sandbox::Served) -> String {
    served
        .kubeconfig_yaml
        .lines()
        .find_map(|line| line.trim().strip_prefix("token:"))
        .unwrap()
        .trim()
        .trim_matches('"')
        .to_owned()
}

/// A GET's status, `Content-Encoding` and body (gunzipped when it was gzipped).
async fn get(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    gzip: bool,
) -> (u16, Option<String>, Vec<u8>) {
    let mut request = http.get(url).bearer_auth(token);
    if gzip {
        request = request.header("Accept-Encoding", "gzip");
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let encoding = response
        .headers()
        .get("content-encoding")
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = response.bytes().await.unwrap().to_vec();
    let body = if encoding.as_deref() == Some("gzip") {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    } else {
        bytes
    };
    (status, encoding, body)
}

/// A list answer with its items in kube-apiserver's order (namespace, name), as canonical JSON
/// text: object members sorted, no whitespace.
fn sorted(body: &[u8]) -> String {
    let mut list: Value = serde_json::from_slice(body).unwrap();
    if let Some(items) = list.get_mut("items").and_then(Value::as_array_mut) {
        items.sort_by_key(|item| {
            (
                item["metadata"]["namespace"].as_str().map(str::to_owned),
                item["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        });
    }
    // serde_json's maps keep their keys sorted.
    list.to_string()
}

fn config_map(namespace: &str, name: &str, size: usize) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "data": {"payload": "x".repeat(size)},
    }))
    .unwrap()
}

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"tier": "front"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx", "args": ["x".repeat(2000)]}]}
            }
        }
    }))
    .unwrap()
}

async fn create_config_maps(instance: &kube_sandbox::Cluster, per_namespace: usize, size: usize) {
    for namespace in ["default", "team-a", "team-b"] {
        if namespace != "default" {
            let namespaces: Api<k8s_openapi::api::core::v1::Namespace> =
                Api::all(instance.client());
            let ns = serde_json::from_value(json!({"metadata": {"name": namespace}})).unwrap();
            let _ = namespaces.create(&PostParams::default(), &ns).await;
        }
        let api: Api<ConfigMap> = Api::namespaced(instance.client(), namespace);
        for i in 0..per_namespace {
            api.create(
                &PostParams::default(),
                &config_map(namespace, &format!("cm-{i:03}"), size),
            )
            .await
            .unwrap();
        }
    }
}

/// Asks the instance and the proxy for `path` until both give the same answer while the
/// instance's stays put (its resourceVersion is the whole store's, which the instance's own
/// controllers may still move); returns the last (instance, proxy) answers, sorted.
async fn settled(s: &Setup, path: &str, gzip: bool) -> (String, String) {
    let token = admin_token(&s.served);
    let mut last = (String::new(), String::new());
    for _ in 0..200 {
        let direct = get(&s.http, &format!("{}{path}", s.served.url), &token, gzip).await;
        let proxied = get(&s.http, &format!("{}{path}", s.base), TOKEN, gzip).await;
        let again = get(&s.http, &format!("{}{path}", s.served.url), &token, gzip).await;
        assert_eq!(direct.0, 200, "{}", String::from_utf8_lossy(&direct.2));
        assert_eq!(proxied.0, 200, "{}", String::from_utf8_lossy(&proxied.2));
        last = (sorted(&direct.2), sorted(&proxied.2));
        if last.0 == last.1 && sorted(&again.2) == last.0 {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    last
}

async fn lists_equal_the_instances(reads: Reads) {
    let s = setup(reads).await;
    create_config_maps(&s.instance, 20, 100).await;
    for path in [
        "/api/v1/configmaps",
        "/api/v1/namespaces/team-a/configmaps",
        "/api/v1/configmaps?labelSelector=app%3Dcm-003",
        "/api/v1/namespaces",
    ] {
        let (direct, proxied) = settled(&s, path, false).await;
        assert_eq!(proxied, direct, "{reads:?} {path}");
        let list: Value = serde_json::from_str(&proxied).unwrap();
        assert!(
            !list["items"].as_array().unwrap().is_empty(),
            "{reads:?} {path}: {list}"
        );
    }
    // Chunks: the same items, count of the rest and a continue token, in the instance's order.
    let token = admin_token(&s.served);
    let (_, _, direct) = get(
        &s.http,
        &format!("{}/api/v1/configmaps?limit=25", s.served.url),
        &token,
        false,
    )
    .await;
    let (_, _, first) = get(
        &s.http,
        &format!("{}/api/v1/configmaps?limit=25", s.base),
        TOKEN,
        false,
    )
    .await;
    let (direct, first): (Value, Value) = (
        serde_json::from_slice(&direct).unwrap(),
        serde_json::from_slice(&first).unwrap(),
    );
    assert_eq!(first["items"], direct["items"], "{reads:?}");
    assert_eq!(
        first["metadata"]["remainingItemCount"], direct["metadata"]["remainingItemCount"],
        "{reads:?}"
    );
    let next = first["metadata"]["continue"].as_str().unwrap();
    let (_, _, rest) = get(
        &s.http,
        &format!("{}/api/v1/configmaps?limit=1000&continue={next}", s.base),
        TOKEN,
        false,
    )
    .await;
    let rest: Value = serde_json::from_slice(&rest).unwrap();
    let total = first["items"].as_array().unwrap().len() + rest["items"].as_array().unwrap().len();
    assert_eq!(
        total,
        25 + direct["metadata"]["remainingItemCount"].as_u64().unwrap() as usize
    );
    assert!(rest["metadata"].get("continue").is_none(), "{reads:?}");
}

#[tokio::test]
async fn cached_lists_equal_the_instances_after_sorting() {
    lists_equal_the_instances(Reads::Cache).await;
}

#[tokio::test]
async fn lists_read_from_the_instance_equal_its_own_after_sorting() {
    lists_equal_the_instances(Reads::Instance).await;
}

#[tokio::test]
async fn large_lists_are_gzipped_as_the_instance_gzips_them() {
    let s = setup(Reads::Cache).await;
    // About 300 KB of JSON: over kube-apiserver's 128 KiB threshold.
    create_config_maps(&s.instance, 30, 3000).await;
    let (direct, proxied) = settled(&s, "/api/v1/configmaps", true).await;
    assert_eq!(proxied, direct);
    let token = admin_token(&s.served);
    let (_, direct_encoding, _) = get(
        &s.http,
        &format!("{}/api/v1/configmaps", s.served.url),
        &token,
        true,
    )
    .await;
    let (_, proxied_encoding, _) = get(
        &s.http,
        &format!("{}/api/v1/configmaps", s.base),
        TOKEN,
        true,
    )
    .await;
    assert_eq!(direct_encoding.as_deref(), Some("gzip"));
    assert_eq!(proxied_encoding.as_deref(), Some("gzip"));
    // Without the header, or small: as it is.
    let (_, plain, _) = get(
        &s.http,
        &format!("{}/api/v1/configmaps", s.base),
        TOKEN,
        false,
    )
    .await;
    assert_eq!(plain, None);
    let (_, small, _) = get(
        &s.http,
        &format!("{}/api/v1/namespaces", s.base),
        TOKEN,
        true,
    )
    .await;
    assert_eq!(small, None);
    // A chunk over the threshold is compressed while it is written.
    let (_, chunk, body) = get(
        &s.http,
        &format!("{}/api/v1/configmaps?limit=60", s.base),
        TOKEN,
        true,
    )
    .await;
    assert_eq!(chunk.as_deref(), Some("gzip"));
    let chunk: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(chunk["items"].as_array().unwrap().len(), 60);
}

#[tokio::test]
async fn a_kube_client_with_gzip_reads_compressed_lists() {
    let s = setup(Reads::Cache).await;
    let direct: Api<Deployment> = Api::namespaced(s.instance.client(), "default");
    for i in 0..80 {
        direct
            .create(&PostParams::default(), &deployment(&format!("web-{i:02}")))
            .await
            .unwrap();
    }
    let yaml = kube_sandbox::serve::kubeconfig_yaml(INSTANCE, &s.base, None, TOKEN);
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    assert!(!config.disable_compression, "kube-rs asks for gzip");
    let client = kube::Client::try_from(config).unwrap();
    let all: Api<Deployment> = Api::all(client);
    let list = all.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 80);
    let names: BTreeSet<String> = list
        .items
        .iter()
        .map(|d| d.metadata.name.clone().unwrap())
        .collect();
    assert!(names.contains("web-00") && names.contains("web-79"));
    let answers = s.answers.lock().unwrap().clone();
    assert!(
        answers.iter().any(
            |(path, encoding)| path.contains("/apis/apps/v1/deployments?")
                && encoding.as_deref() == Some("gzip")
        ),
        "{answers:?}"
    );
}

#[tokio::test]
async fn kubectl_get_deploy_all_namespaces_reads_a_compressed_list() {
    let Some(kubectl) = kube_sandbox::testing::kubectl::kubectl_or_skip(
        "kubectl_get_deploy_all_namespaces_reads_a_compressed_list",
    ) else {
        return;
    };
    // kubectl sends its token over HTTPS only.
    let s = setup_with(Reads::Cache, true).await;
    let direct: Api<Deployment> = Api::namespaced(s.instance.client(), "default");
    for i in 0..80 {
        direct
            .create(&PostParams::default(), &deployment(&format!("web-{i:02}")))
            .await
            .unwrap();
    }
    let dir = std::env::temp_dir().join(format!("kairship-request-path-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        kube_sandbox::serve::kubeconfig_yaml(INSTANCE, &s.base, s.ca_pem.as_deref(), TOKEN),
    )
    .unwrap();
    let kubectl = kube_sandbox::testing::kubectl::Kubectl::new(kubectl, &kubeconfig);
    let kubectl_clone = kubectl.clone();
    // kubectl blocks: run it off the runtime that serves the proxy.
    let out = tokio::task::spawn_blocking(move || {
        kubectl_clone.ok(&["get", "deploy", "-A", "-o", "name", "--chunk-size=0"])
    })
    .await
    .unwrap();
    let names: Vec<&str> = out.lines().collect();
    assert_eq!(names.len(), 80, "{out}");
    assert!(names.contains(&"deployment.apps/web-42"), "{out}");
    let answers = s.answers.lock().unwrap().clone();
    assert!(
        answers.iter().any(
            |(path, encoding)| path.contains("/apis/apps/v1/deployments")
                && encoding.as_deref() == Some("gzip")
        ),
        "{answers:?}"
    );
    drop(kubectl);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The resourceVersion of a list through the proxy.
async fn list_version(s: &Setup, path: &str) -> u64 {
    let (status, _, body) = get(&s.http, &format!("{}{path}", s.base), TOKEN, false).await;
    assert_eq!(status, 200);
    let list: Value = serde_json::from_slice(&body).unwrap();
    list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn list_resource_versions_never_go_back_across_kinds() {
    let s = setup(Reads::Cache).await;
    create_config_maps(&s.instance, 2, 10).await;
    let mut highest = 0;
    let mut check = |version: u64, what: &str| {
        assert!(version >= highest, "{what}: {version} after {highest}");
        highest = version;
    };
    check(list_version(&s, "/api/v1/configmaps").await, "configmaps");
    check(
        list_version(&s, "/apis/apps/v1/deployments").await,
        "deployments",
    );
    for i in 0..3 {
        // A write of one kind through the proxy...
        let created = s
            .http
            .post(format!(
                "{}/apis/apps/v1/namespaces/default/deployments",
                s.base
            ))
            .bearer_auth(TOKEN)
            .json(&deployment(&format!("d{i}")))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201);
        let created: Value = created.json().await.unwrap();
        let written: u64 = created["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        // ...is seen by its own list (read-your-writes)...
        let deployments = list_version(&s, "/apis/apps/v1/deployments").await;
        assert!(deployments >= written, "{deployments} < {written}");
        check(deployments, "deployments after the write");
        // ...and lists of other kinds do not go back behind it.
        check(list_version(&s, "/api/v1/configmaps").await, "configmaps");
        check(
            list_version(&s, "/api/v1/namespaces/team-a/configmaps").await,
            "configmaps of a namespace",
        );
    }
}

#[tokio::test]
async fn the_instances_429_is_passed_through() {
    let s = setup(Reads::Cache).await;
    s.instance.faults().add(kube_sandbox::FaultRule {
        resource: Some("configmaps".into()),
        verbs: vec!["create".into()],
        action: kube_sandbox::FaultAction::Status(429),
    });
    let answer = s
        .http
        .post(format!("{}/api/v1/namespaces/default/configmaps", s.base))
        .bearer_auth(TOKEN)
        .json(&config_map("default", "c", 1))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 429);
    let status: Value = answer.json().await.unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(status["code"], 429);
    // Passed back at once: the instance saw the create once, not again after a backoff.
    let creates = s
        .instance
        .requests()
        .snapshot()
        .get(&kube_sandbox::RequestKind::new("create", "configmaps", ""))
        .copied();
    assert_eq!(creates, Some(1));
}

#[tokio::test]
async fn the_rest_api_and_its_pages_gzip_large_answers() {
    let env = api_fixture::ApiEnv::builder("gz").start().await;
    // The Swagger UI's script (about 1 MB) and the OpenAPI document: whole answers.
    for path in ["/swagger-ui/swagger-ui-bundle.js", "/openapi.json"] {
        let url = format!("{}{path}", env.base);
        let (status, plain_encoding, plain) = get(&env.http, &url, "none", false).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(plain_encoding, None, "{path}");
        let (_, encoding, unpacked) = get(&env.http, &url, "none", true).await;
        assert_eq!(unpacked, plain, "{path}");
        let large = plain.len() > kairship_core::proxy::GZIP_THRESHOLD_BYTES;
        assert_eq!(
            encoding.as_deref(),
            large.then_some("gzip"),
            "{path}: {} bytes",
            plain.len()
        );
        if path.ends_with(".js") {
            assert!(large, "the bundle is large");
        }
    }
}
