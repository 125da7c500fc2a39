//! The native proxy served over HTTP in front of a sandbox instance, with access decided by a
//! sandbox host cluster (TokenReview + SubjectAccessReview): kube-rs clients built from a
//! kubeconfig that points at the proxy work unchanged, reads come from the cache, writes reach
//! the instance only when allowed.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kairship_core::auth::{SubjectAccessReviewAuthorizer, TokenReviewAuthenticator};
use kairship_core::proxy::{ProxyState, proxy_routes};
use kairship_core::router::{
    ContinueToken, DirectBackend, EmbeddedCacheBackend, InstanceWriter, SplitRouter,
    StaticInstanceClients,
};
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::{Api, Client};
use kube_sandbox::UserInfo;
use serde_json::json;

const INSTANCE: &str = "i1";
const ALICE: &str = "alice-token";
const VIC: &str = "vic-token";
const NOBODY: &str = "nobody-token";

struct Setup {
    host: kube_sandbox::Cluster,
    instance: kube_sandbox::Cluster,
    _served: kube_sandbox::Served,
    router: Arc<SplitRouter>,
    base: String,
}

/// Host RBAC: alice administers `i1`, vic (group viewers) reads it, nobody has no role.
async fn host() -> kube_sandbox::Cluster {
    let host = kube_sandbox::Cluster::new("host");
    host.auth()
        .add_token(ALICE, UserInfo::new("alice", &["dev"]));
    host.auth()
        .add_token(VIC, UserInfo::new("vic", &["viewers"]));
    host.auth().add_token(NOBODY, UserInfo::new("nobody", &[]));
    let roles: Api<ClusterRole> = Api::all(host.client());
    let bindings: Api<ClusterRoleBinding> = Api::all(host.client());
    for (role, verbs, kind, subject) in [
        ("kairship:instance:i1:admin", json!(["*"]), "User", "alice"),
        (
            "kairship:instance:i1:view",
            json!(["get", "list", "watch"]),
            "Group",
            "viewers",
        ),
    ] {
        let cr = serde_json::from_value(json!({
            "metadata": {"name": role},
            "rules": [{"apiGroups": ["kairship.io"], "resources": ["instances", "instances/proxy"],
                       "resourceNames": [INSTANCE], "verbs": verbs}],
        }))
        .unwrap();
        roles.create(&PostParams::default(), &cr).await.unwrap();
        let crb = serde_json::from_value(json!({
            "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": kind, "name": subject, "apiGroup": "rbac.authorization.k8s.io"}],
        }))
        .unwrap();
        bindings.create(&PostParams::default(), &crb).await.unwrap();
    }
    host
}

async fn setup() -> Setup {
    let host = host().await;
    let instance = kube_sandbox::Cluster::new(INSTANCE);
    let served = instance
        .serve(kube_sandbox::ServeOptions::default())
        .await
        .unwrap();
    let clients =
        Arc::new(StaticInstanceClients::new().with(INSTANCE, served.client().await.unwrap()));
    let router = Arc::new(SplitRouter::new(
        Arc::new(EmbeddedCacheBackend::new(clients.clone())),
        Arc::new(DirectBackend::new(clients.clone())),
        Arc::new(InstanceWriter::new(clients.clone())),
    ));
    let state = ProxyState::new(
        router.clone(),
        clients,
        Arc::new(TokenReviewAuthenticator::new(host.client())),
        Arc::new(SubjectAccessReviewAuthorizer::new(host.client())),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, proxy_routes(state)).await });
    Setup {
        host,
        instance,
        _served: served,
        router,
        base: format!("http://{addr}/apis/kairship.io/v1alpha1/instances/{INSTANCE}/proxy"),
    }
}

impl Setup {
    /// A kube client from a kubeconfig whose server is the proxy, as Kairship issues it.
    async fn client(&self, token: &str) -> Client {
        let yaml = kube_sandbox::serve::kubeconfig_yaml(INSTANCE, &self.base, None, token);
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        Client::try_from(config).unwrap()
    }
}

fn deployment(name: &str, tier: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"tier": tier}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}
            }
        }
    }))
    .unwrap()
}

fn names(list: &[Deployment]) -> Vec<String> {
    list.iter()
        .map(|d| d.metadata.name.clone().unwrap())
        .collect()
}

#[tokio::test]
async fn kube_clients_list_create_get_and_watch_through_the_proxy() {
    let s = setup().await;
    let client = s.client(ALICE).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();
    deployments
        .create(&pp, &deployment("web", "front"))
        .await
        .unwrap();
    deployments
        .create(&pp, &deployment("db", "back"))
        .await
        .unwrap();

    // Read-your-writes through the cache: the list shows both at once.
    let list = deployments.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&list.items), ["db", "web"]);
    let version = list.metadata.resource_version.clone().unwrap();
    assert!(version.parse::<u64>().unwrap() > 0, "{version}");
    let fronts = deployments
        .list(&ListParams::default().labels("tier=front"))
        .await
        .unwrap();
    assert_eq!(names(&fronts.items), ["web"]);
    let by_name = deployments
        .list(&ListParams::default().fields("metadata.name=db"))
        .await
        .unwrap();
    assert_eq!(names(&by_name.items), ["db"]);
    assert_eq!(
        deployments
            .get("web")
            .await
            .unwrap()
            .metadata
            .name
            .as_deref(),
        Some("web")
    );
    let missing = deployments.get("nope").await.unwrap_err();
    assert!(
        matches!(missing, kube::Error::Api(ref s) if s.code == 404),
        "{missing}"
    );

    // Chunked lists: limit and continue.
    let first = deployments
        .list(&ListParams::default().limit(1))
        .await
        .unwrap();
    assert_eq!(names(&first.items), ["db"]);
    assert_eq!(first.metadata.remaining_item_count, Some(1));
    let token = first.metadata.continue_.clone().unwrap();
    let second = deployments
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names(&second.items), ["web"]);
    assert_eq!(second.metadata.continue_, None);

    // A list across namespaces.
    let all: Api<Deployment> = Api::all(client.clone());
    assert_eq!(
        names(&all.list(&ListParams::default()).await.unwrap().items),
        ["db", "web"]
    );

    // Watch from the list's version: only what happens afterwards arrives.
    let mut events = deployments
        .watch(&WatchParams::default().timeout(10), &version)
        .await
        .unwrap()
        .boxed();
    deployments
        .create(&pp, &deployment("cache", "back"))
        .await
        .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(5), events.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match event {
        WatchEvent::Added(d) => assert_eq!(d.metadata.name.as_deref(), Some("cache")),
        other => panic!("unexpected {other:?}"),
    }

    // The reads above came from the cache.
    let m = s.router.metrics().snapshot();
    assert!(m.cache_hits >= 6, "{m:?}");
    assert!(m.writes >= 3, "{m:?}");
}

#[tokio::test]
async fn kubectl_style_watch_streams_events_as_json_lines() {
    let s = setup().await;
    let direct: Api<Deployment> = Api::namespaced(s.instance.client(), "default");
    direct
        .create(&PostParams::default(), &deployment("existing", "a"))
        .await
        .unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder().build().unwrap();
    let mut response = http
        .get(format!(
            "{}/apis/apps/v1/namespaces/default/deployments?watch=true",
            s.base
        ))
        .bearer_auth(VIC)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut buffered = Vec::new();
    let mut lines: Vec<serde_json::Value> = Vec::new();
    let mut created = false;
    while lines.len() < 2 {
        let chunk = tokio::time::timeout(Duration::from_secs(5), response.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        buffered.extend_from_slice(&chunk);
        while let Some(end) = buffered.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffered.drain(..=end).collect();
            lines.push(serde_json::from_slice(&line).unwrap());
        }
        if !lines.is_empty() && !created {
            direct
                .create(&PostParams::default(), &deployment("later", "b"))
                .await
                .unwrap();
            created = true;
        }
    }
    assert_eq!(lines[0]["type"], "ADDED");
    assert_eq!(lines[0]["object"]["metadata"]["name"], "existing");
    assert_eq!(lines[0]["object"]["kind"], "Deployment");
    assert_eq!(lines[1]["type"], "ADDED");
    assert_eq!(lines[1]["object"]["metadata"]["name"], "later");
}

#[tokio::test]
async fn watches_end_after_timeout_seconds() {
    let s = setup().await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let started = std::time::Instant::now();
    let body = reqwest::Client::new()
        .get(format!(
            "{}/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1",
            s.base
        ))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    // The sandbox's default namespace holds the root CA config map or nothing at all.
    for line in body.lines() {
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(event["type"], "ADDED");
    }
}

#[tokio::test]
async fn callers_need_a_token_and_a_role_and_forbidden_writes_never_reach_the_instance() {
    let s = setup().await;
    let direct: Api<Deployment> = Api::namespaced(s.instance.client(), "default");
    direct
        .create(&PostParams::default(), &deployment("seen", "a"))
        .await
        .unwrap();

    // vic reads but cannot write.
    let vic: Api<Deployment> = Api::namespaced(s.client(VIC).await, "default");
    assert_eq!(
        names(&vic.list(&ListParams::default()).await.unwrap().items),
        ["seen"]
    );
    let writes_before = s.router.metrics().snapshot().writes;
    let denied = vic
        .create(&PostParams::default(), &deployment("sneaky", "x"))
        .await
        .unwrap_err();
    assert!(
        matches!(denied, kube::Error::Api(ref st) if st.code == 403 && st.reason == "Forbidden"),
        "{denied}"
    );
    let denied = vic
        .patch(
            "seen",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(denied, kube::Error::Api(ref st) if st.code == 403),
        "{denied}"
    );
    let denied = vic
        .delete("seen", &DeleteParams::default())
        .await
        .unwrap_err();
    assert!(
        matches!(denied, kube::Error::Api(ref st) if st.code == 403),
        "{denied}"
    );
    assert!(direct.get_opt("sneaky").await.unwrap().is_none());
    let seen = direct.get("seen").await.unwrap();
    assert!(!seen.metadata.labels.unwrap_or_default().contains_key("x"));
    assert_eq!(s.router.metrics().snapshot().writes, writes_before);

    // nobody cannot even read; bad or missing tokens are not authenticated.
    let nobody: Api<Deployment> = Api::namespaced(s.client(NOBODY).await, "default");
    let err = nobody.list(&ListParams::default()).await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref st) if st.code == 403),
        "{err}"
    );
    let stranger: Api<Deployment> = Api::namespaced(s.client("forged").await, "default");
    let err = stranger.list(&ListParams::default()).await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref st) if st.code == 401),
        "{err}"
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let anonymous = reqwest::Client::new()
        .get(format!("{}/api/v1/namespaces", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let status: serde_json::Value = anonymous.json().await.unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "Unauthorized");

    // alice's role is for i1 only: another instance's proxy is forbidden to her.
    let other = s.base.replace("/instances/i1/", "/instances/i2/");
    let response = reqwest::Client::new()
        .get(format!("{other}/api/v1/namespaces"))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    drop(s.host);
}

#[tokio::test]
async fn writes_of_every_kind_and_other_paths_are_forwarded_verbatim() {
    let s = setup().await;
    let client = s.client(ALICE).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let direct: Api<Deployment> = Api::namespaced(s.instance.client(), "default");
    deployments
        .create(&PostParams::default(), &deployment("web", "front"))
        .await
        .unwrap();

    // Each patch type keeps its content type on the way to the instance.
    let pp = PatchParams::default();
    deployments
        .patch(
            "web",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"merge": "1"}}})),
        )
        .await
        .unwrap();
    let json_patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "add", "path": "/metadata/labels/json", "value": "1"}
    ]))
    .unwrap();
    deployments
        .patch("web", &pp, &Patch::<()>::Json(json_patch))
        .await
        .unwrap();
    deployments
        .patch(
            "web",
            &pp,
            &Patch::Strategic(json!({"metadata": {"labels": {"strategic": "1"}}})),
        )
        .await
        .unwrap();
    deployments
        .patch(
            "web",
            &PatchParams::apply("tester").force(),
            &Patch::Apply(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "labels": {"applied": "1"}},
            })),
        )
        .await
        .unwrap();
    let labels = direct.get("web").await.unwrap().metadata.labels.unwrap();
    for key in ["merge", "json", "strategic", "applied"] {
        assert_eq!(
            labels.get(key).map(String::as_str),
            Some("1"),
            "{key}: {labels:?}"
        );
    }
    // Read-your-writes after forwarded patches: the cached read shows the last one.
    let read = deployments
        .get("web")
        .await
        .unwrap()
        .metadata
        .labels
        .unwrap();
    assert_eq!(read.get("applied").map(String::as_str), Some("1"));

    // Replace, a subresource and a delete.
    let mut current = deployments.get("web").await.unwrap();
    current.spec.as_mut().unwrap().replicas = Some(3);
    deployments
        .replace("web", &PostParams::default(), &current)
        .await
        .unwrap();
    let status = deployments.get_status("web").await.unwrap();
    assert_eq!(status.spec.unwrap().replicas, Some(3));
    deployments
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    assert!(direct.get_opt("web").await.unwrap().is_none());
    assert!(
        deployments.get_opt("web").await.unwrap().is_none(),
        "read your delete"
    );

    // Discovery passes through.
    let version = client.apiserver_version().await.unwrap();
    assert!(!version.git_version.is_empty());
    let groups = client.list_api_groups().await.unwrap();
    assert!(groups.groups.iter().any(|g| g.name == "apps"));
    let core = client.list_core_api_resources("v1").await.unwrap();
    assert!(core.resources.iter().any(|r| r.name == "configmaps"));

    // Core resources and cluster-scoped reads work the same way.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm =
        serde_json::from_value(json!({"metadata": {"name": "c1"}, "data": {"k": "v"}})).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    assert_eq!(cms.get("c1").await.unwrap().data.unwrap()["k"], "v");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let listed = namespaces.list(&ListParams::default()).await.unwrap();
    assert!(
        listed
            .items
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some("default"))
    );
    assert_eq!(
        namespaces
            .get("default")
            .await
            .unwrap()
            .metadata
            .name
            .as_deref(),
        Some("default")
    );

    // Unknown resources are the instance's to answer.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let response = reqwest::Client::new()
        .get(format!("{}/apis/nope.example.com/v1/things", s.base))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);

    // A continue token the proxy did not issue goes to the instance, which rejects it.
    let err = deployments
        .list(&ListParams::default().limit(1).continue_token("bm90LW91cnM"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref st) if st.code == 400 || st.code == 410),
        "{err}"
    );
    let ours = ContinueToken {
        namespace: Some("default".into()),
        name: "a".into(),
    }
    .encode();
    deployments
        .list(&ListParams::default().limit(1).continue_token(&ours))
        .await
        .unwrap();
}
