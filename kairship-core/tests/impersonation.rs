//! Writes inside an instance carry the caller's identity (`WriteIdentity::Impersonate`): the
//! instance's credentials may only read and impersonate, so the instance's own RBAC decides
//! each write and its audit trail names the caller. Over REST and through the native proxy,
//! against a sandbox instance served over HTTP.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use async_trait::async_trait;
use kairship_core::access::{
    AccessError, Authenticator, Authorizer, Caller, InstanceResource, Verb, WriteIdentity,
};
use kairship_core::api::{KairshipApi, KairshipService, ServiceConfig};
use kairship_core::proxy::{ProxyState, proxy_routes};
use kairship_core::router::{
    DirectBackend, EmbeddedCacheBackend, InstanceWriter, ReadWriteRouter, SplitRouter,
    StaticInstanceClients,
};
use kairship_core::server::{AppParts, app};
use kube_sandbox::UserInfo;
use kube_sandbox::apiserver::audit::AuditEvent;
use serde_json::{Value, json};

const INSTANCE: &str = "i1";
const NS: &str = "team";
/// What the instance knows Kairship by: it may read everything and impersonate, nothing else.
const GATEWAY: &str = "gateway-token";

/// Kairship's own checks let everyone with a token through: here the instance decides.
struct Everyone;

#[async_trait]
impl Authenticator for Everyone {
    async fn authenticate(&self, token: &str) -> Result<Caller, AccessError> {
        match token {
            "alice" => Ok(Caller::new("alice", vec!["developers".into()])),
            "erin" => Ok(Caller::new("erin", vec!["auditors".into()])),
            _ => Err(AccessError::Unauthenticated("unknown token".into())),
        }
    }
}

#[async_trait]
impl Authorizer for Everyone {
    async fn allowed(
        &self,
        _caller: &Caller,
        _verb: Verb,
        _resource: InstanceResource,
        _instance: Option<&str>,
    ) -> Result<bool, AccessError> {
        Ok(true)
    }
}

async fn post(client: &kube::Client, path: &str, body: Value) {
    let request = http::Request::builder()
        .method("POST")
        .uri(path)
        .header("content-type", "application/json")
        .body(body.to_string().into_bytes())
        .unwrap();
    client.request_text(request).await.unwrap();
}

/// The instance: `developers` may edit ConfigMaps in `team`, `auditors` only read them, the
/// gateway reads everything and impersonates users and groups.
async fn instance() -> kube_sandbox::Cluster {
    let instance = kube_sandbox::Cluster::new(INSTANCE);
    instance
        .auth()
        .add_token(GATEWAY, UserInfo::new("kairship-gateway", &[]));
    let admin = instance.client();
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    post(
        &admin,
        "/api/v1/namespaces",
        json!({"metadata": {"name": NS}}),
    )
    .await;
    post(
        &admin,
        &format!("{rbac}/clusterroles"),
        json!({
            "metadata": {"name": "kairship-gateway"},
            "rules": [
                {"apiGroups": [""], "resources": ["users", "groups"], "verbs": ["impersonate"]},
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}
            ]
        }),
    )
    .await;
    post(&admin, &format!("{rbac}/clusterrolebindings"), json!({
        "metadata": {"name": "kairship-gateway"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kairship-gateway"},
        "subjects": [{"kind": "User", "name": "kairship-gateway"}]
    })).await;
    for (role, verbs, group) in [
        (
            "edit-configmaps",
            json!([
                "get", "list", "watch", "create", "update", "patch", "delete"
            ]),
            "developers",
        ),
        (
            "read-configmaps",
            json!(["get", "list", "watch"]),
            "auditors",
        ),
    ] {
        post(
            &admin,
            &format!("{rbac}/namespaces/{NS}/roles"),
            json!({
                "metadata": {"name": role},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}]
            }),
        )
        .await;
        post(
            &admin,
            &format!("{rbac}/namespaces/{NS}/rolebindings"),
            json!({
                "metadata": {"name": role},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
                "subjects": [{"kind": "Group", "name": group}]
            }),
        )
        .await;
    }
    instance
}

/// Kairship's REST API and native proxy over HTTP, writing with `identity`.
async fn kairship(instance: &kube_sandbox::Served, identity: WriteIdentity) -> String {
    let mut config =
        kube::Config::from_custom_kubeconfig(instance.kubeconfig().unwrap(), &Default::default())
            .await
            .unwrap();
    config.auth_info.token = Some(GATEWAY.to_owned().into());
    let gateway = kube::Client::try_from(config).unwrap();
    let clients = Arc::new(StaticInstanceClients::new().with(INSTANCE, gateway));
    let router: Arc<dyn ReadWriteRouter> = Arc::new(SplitRouter::new(
        Arc::new(EmbeddedCacheBackend::new(clients.clone())),
        Arc::new(DirectBackend::new(clients.clone())),
        Arc::new(InstanceWriter::new(clients.clone()).with_identity(identity)),
    ));
    let host = kube_sandbox::Cluster::new("host");
    let api: Arc<dyn KairshipApi> = Arc::new(KairshipService::new(
        host.client(),
        router.clone(),
        Arc::new(Everyone),
        ServiceConfig::default(),
    ));
    let proxy = proxy_routes(
        ProxyState::new(router, clients, Arc::new(Everyone), Arc::new(Everyone))
            .with_write_identity(identity),
    );
    let app = app(AppParts {
        api,
        authenticator: Arc::new(Everyone),
        proxy: Some(proxy),
        grpc: None,
        console: None,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    std::mem::forget(host);
    format!("http://{addr}/apis/kairship.io/v1alpha1/instances/{INSTANCE}")
}

async fn create(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    name: &str,
    extra: &[(&str, &str)],
) -> (u16, Value) {
    let mut request = http
        .post(url)
        .bearer_auth(token)
        .json(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}}));
    for (header, value) in extra {
        request = request.header(*header, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn write_of(events: &[AuditEvent], code: u16, user: &str) -> Option<AuditEvent> {
    events
        .iter()
        .rfind(|e| {
            e.verb == "create" && e.resource == "configmaps" && e.user == user && e.code == code
        })
        .cloned()
}

#[tokio::test]
async fn writes_act_as_the_caller_and_the_instance_decides() {
    let instance = instance().await;
    let served = instance
        .serve(kube_sandbox::ServeOptions::default())
        .await
        .unwrap();
    let base = kairship(&served, WriteIdentity::Impersonate).await;
    let http = reqwest::Client::new();
    let proxy = format!("{base}/proxy/api/v1/namespaces/{NS}/configmaps");
    let rest = format!("{base}/namespaces/{NS}/configmaps");

    // Through the proxy: alice (developers) writes, the instance records alice.
    let (code, body) = create(&http, &proxy, "alice", "from-proxy", &[]).await;
    assert_eq!(code, 201, "{body}");
    let event = write_of(&instance.audit_events(), 201, "alice").unwrap();
    assert_eq!(event.impersonated_by.as_deref(), Some("kairship-gateway"));
    assert!(event.groups.contains(&"developers".to_owned()), "{event:?}");

    // erin (auditors) is refused by the instance itself, in the instance's words.
    let (code, body) = create(&http, &proxy, "erin", "erin-proxy", &[]).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["kind"], "Status");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("User \"erin\" cannot create resource \"configmaps\""),
        "{message}"
    );
    assert!(write_of(&instance.audit_events(), 403, "erin").is_some());

    // A caller cannot pick who the gateway acts as: its own impersonation headers are dropped.
    let (code, body) = create(
        &http,
        &proxy,
        "erin",
        "erin-as-alice",
        &[
            ("Impersonate-User", "alice"),
            ("Impersonate-Group", "developers"),
        ],
    )
    .await;
    assert_eq!(code, 403, "{body}");

    // Over REST the same: alice's write is recorded as alice, erin's refused by the instance.
    let (code, body) = create(&http, &rest, "alice", "from-rest", &[]).await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = create(&http, &rest, "erin", "erin-rest", &[]).await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("User \"erin\" cannot create resource \"configmaps\""),
        "{body}"
    );
    let creates: Vec<(String, u16)> = instance
        .audit_events()
        .into_iter()
        .filter(|e| e.verb == "create" && e.resource == "configmaps")
        .map(|e| (e.user, e.code))
        .collect();
    assert_eq!(
        creates,
        [
            ("alice".to_owned(), 201),
            ("erin".to_owned(), 403),
            ("erin".to_owned(), 403),
            ("alice".to_owned(), 201),
            ("erin".to_owned(), 403),
        ]
    );
}

#[tokio::test]
async fn the_instance_identity_writes_as_itself_when_asked() {
    let instance = instance().await;
    let served = instance
        .serve(kube_sandbox::ServeOptions::default())
        .await
        .unwrap();
    let base = kairship(&served, WriteIdentity::Instance).await;
    let http = reqwest::Client::new();
    let proxy = format!("{base}/proxy/api/v1/namespaces/{NS}/configmaps");
    // The gateway may not write by itself: without impersonation the write is its own.
    let (code, body) = create(&http, &proxy, "alice", "plain", &[]).await;
    assert_eq!(code, 403, "{body}");
    let event = write_of(&instance.audit_events(), 403, "kairship-gateway").unwrap();
    assert_eq!(event.impersonated_by, None);
}
