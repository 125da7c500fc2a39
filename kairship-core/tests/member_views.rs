//! Member clusters through Karmada's cluster proxy, against kube-sandbox API servers over HTTP:
//! an instance serving the proxy (`karmada_sim::cluster_proxy`) and two members running the
//! workload controllers on simulated nodes. The proxy forwards with the impersonator's token
//! and impersonates the caller, so the member decides; pods per cluster and nodes equal what
//! the members hold, over REST and gRPC; `:promote` copies a member's workload and its
//! ConfigMap with a policy, leaves nothing on failure and creates nothing in a dry run.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use kairship_core::access::{
    AccessError, Authenticator, Authorizer, Caller, InstanceResource, Verb,
};
use kairship_core::api::{CLUSTER_ANNOTATION, KairshipApi, KairshipService, ServiceConfig};
use kairship_core::grpc::pb;
use kairship_core::karmada_sim::cluster_proxy::with_cluster_proxy;
use kairship_core::router::{
    DirectBackend, DiscoveryCache, EmbeddedCacheBackend, InstanceWriter, ReadWriteRouter,
    SplitRouter, StaticInstanceClients,
};
use kairship_core::server::{AppParts, app};
use kube_sandbox::testing::eventually_some as eventually;
use kube_sandbox::{ClusterOptions, FaultAction, FaultRule, ServeOptions, SimNode, UserInfo};
use serde_json::{Value, json};

const INSTANCE: &str = "i1";
const NS: &str = "demo";

/// Everyone but `outsider` may use the instance (Kairship's own check).
struct Tokens;

#[async_trait]
impl Authenticator for Tokens {
    async fn authenticate(&self, token: &str) -> Result<Caller, AccessError> {
        match token {
            "admin" | "outsider" => Ok(Caller::new(token, vec![])),
            _ => Err(AccessError::Unauthenticated("unknown token".into())),
        }
    }
}

#[async_trait]
impl Authorizer for Tokens {
    async fn allowed(
        &self,
        caller: &Caller,
        _: Verb,
        _: InstanceResource,
        _: Option<&str>,
    ) -> Result<bool, AccessError> {
        Ok(caller.user != "outsider")
    }
}

async fn send(client: &kube::Client, method: &str, path: &str, body: Option<Value>) -> Value {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body.map(|b| b.to_string().into_bytes()).unwrap_or_default())
        .unwrap();
    let text = client.request_text(request).await.unwrap();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

fn open_crd(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [{"name": version, "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    })
}

fn deployment(name: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": name, "image": "nginx:1.27"}]}}}
    })
}

fn role_binding(user: &str, verbs: Value) -> (Value, Value) {
    (
        json!({"metadata": {"name": user}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": verbs}]}),
        json!({"metadata": {"name": user},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}),
    )
}

async fn grant(client: &kube::Client, user: &str, verbs: Value) {
    let (role, binding) = role_binding(user, verbs);
    send(
        client,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        Some(role),
    )
    .await;
    send(
        client,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        Some(binding),
    )
    .await;
}

struct Member {
    cluster: kube_sandbox::Cluster,
    served: kube_sandbox::Served,
    token: String,
}

/// A member with `nodes` nodes; `viewer` may read, `editor` may do anything, and Karmada's
/// impersonator may only impersonate.
async fn member(name: &str, nodes: usize) -> Member {
    let cluster = kube_sandbox::Cluster::with_options(
        name,
        ClusterOptions {
            workload_controllers: true,
            ..ClusterOptions::default()
        },
    );
    for i in 0..nodes {
        cluster
            .add_node(&SimNode::new(&format!("{name}-n{i}"), "4", "8Gi"))
            .unwrap();
    }
    let token = format!("{name}-impersonator-token");
    let impersonator = "system:serviceaccount:karmada-cluster:karmada-impersonator";
    cluster
        .auth()
        .add_token(&token, UserInfo::new(impersonator, &[]));
    let client = cluster.client();
    let (role, _) = role_binding("impersonator", json!(["impersonate"]));
    let mut role = role;
    role["rules"] =
        json!([{"apiGroups": [""], "resources": ["users", "groups"], "verbs": ["impersonate"]}]);
    send(
        &client,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        Some(role),
    )
    .await;
    send(&client, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", Some(json!({
        "metadata": {"name": "impersonator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonator"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": impersonator}]
    }))).await;
    grant(&client, "viewer", json!(["get", "list", "watch"])).await;
    grant(&client, "editor", json!(["*"])).await;
    // Kairship's caller `admin` reads members as itself (impersonated by Karmada's proxy).
    grant(&client, "admin", json!(["get", "list", "watch"])).await;
    send(
        &client,
        "POST",
        "/api/v1/namespaces",
        Some(json!({"metadata": {"name": NS}})),
    )
    .await;
    let served = cluster.serve(ServeOptions::default()).await.unwrap();
    Member {
        cluster,
        served,
        token,
    }
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

struct Env {
    instance: kube_sandbox::Cluster,
    instance_url: String,
    members: Vec<Member>,
    base: String,
    http: reqwest::Client,
}

impl Env {
    /// The instance with members `east` (2 nodes) and `west` (1 node), Deployment `web` (3
    /// replicas) placed on both (2 + 1), and Kairship serving REST and gRPC over it.
    async fn start() -> Env {
        kube_kit::client::install_crypto_provider();
        let members = vec![member("east", 2).await, member("west", 1).await];
        let instance = kube_sandbox::Cluster::with_options(
            INSTANCE,
            with_cluster_proxy(ClusterOptions::default()),
        );
        let admin = instance.client();
        kube_sandbox::testing::install_crds(
            &admin,
            vec![
                serde_json::from_value(open_crd(
                    "cluster.karmada.io",
                    "v1alpha1",
                    "Cluster",
                    "clusters",
                    false,
                ))
                .unwrap(),
                serde_json::from_value(open_crd(
                    "policy.karmada.io",
                    "v1alpha1",
                    "PropagationPolicy",
                    "propagationpolicies",
                    true,
                ))
                .unwrap(),
                serde_json::from_value(open_crd(
                    "work.karmada.io",
                    "v1alpha2",
                    "ResourceBinding",
                    "resourcebindings",
                    true,
                ))
                .unwrap(),
            ],
        )
        .await;
        for ns in ["karmada-cluster", NS] {
            send(
                &admin,
                "POST",
                "/api/v1/namespaces",
                Some(json!({"metadata": {"name": ns}})),
            )
            .await;
        }
        // Users may use the cluster proxy (as Karmada's docs grant it); the members decide.
        for user in ["viewer", "editor", "nobody"] {
            instance
                .auth()
                .add_token(&format!("{user}-token"), UserInfo::new(user, &[]));
        }
        send(&admin, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", Some(json!({
            "metadata": {"name": "cluster-proxy"},
            "rules": [{"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/proxy"], "verbs": ["*"]}]
        }))).await;
        send(&admin, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", Some(json!({
            "metadata": {"name": "cluster-proxy"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-proxy"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "viewer"},
                         {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "editor"},
                         {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "admin"}]
        }))).await;
        for m in &members {
            let name = m.cluster.name();
            for (secret, data) in [
                (
                    name.to_owned(),
                    json!({"token": b64(m.cluster.admin_token()), "caBundle": b64(m.served.cluster_ca_pem())}),
                ),
                (
                    format!("{name}-impersonator"),
                    json!({"token": b64(&m.token)}),
                ),
            ] {
                send(
                    &admin,
                    "POST",
                    "/api/v1/namespaces/karmada-cluster/secrets",
                    Some(json!({"metadata": {"name": secret}, "data": data})),
                )
                .await;
            }
            send(&admin, "POST", "/apis/cluster.karmada.io/v1alpha1/clusters", Some(json!({
                "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": name},
                "spec": {"syncMode": "Push", "apiEndpoint": m.served.url,
                    "secretRef": {"namespace": "karmada-cluster", "name": name},
                    "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": format!("{name}-impersonator")}}
            }))).await;
        }
        send(
            &admin,
            "POST",
            &format!("/apis/apps/v1/namespaces/{NS}/deployments"),
            Some(deployment("web", 3)),
        )
        .await;
        send(&admin, "POST", &format!("/apis/work.karmada.io/v1alpha2/namespaces/{NS}/resourcebindings"), Some(json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "web-deployment", "namespace": NS},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": NS},
                "replicas": 3, "clusters": [{"name": "east", "replicas": 2}, {"name": "west", "replicas": 1}]}
        }))).await;
        for (m, replicas) in members.iter().zip([2, 1]) {
            send(
                &m.cluster.client(),
                "POST",
                &format!("/apis/apps/v1/namespaces/{NS}/deployments"),
                Some(deployment("web", replicas)),
            )
            .await;
        }
        let instance_served = instance.serve(ServeOptions::default()).await.unwrap();
        let instance_client = kube::Client::try_from(
            kube::Config::from_custom_kubeconfig(
                instance_served.kubeconfig().unwrap(),
                &Default::default(),
            )
            .await
            .unwrap(),
        )
        .unwrap();
        let clients = Arc::new(StaticInstanceClients::new().with(INSTANCE, instance_client));
        let router: Arc<dyn ReadWriteRouter> = Arc::new(SplitRouter::new(
            Arc::new(EmbeddedCacheBackend::new(clients.clone())),
            Arc::new(DirectBackend::new(clients.clone())),
            Arc::new(InstanceWriter::new(clients.clone())),
        ));
        let host = kube_sandbox::Cluster::new("host");
        let api: Arc<dyn KairshipApi> = Arc::new(
            KairshipService::new(
                host.client(),
                router,
                Arc::new(Tokens),
                ServiceConfig::default(),
            )
            .with_discovery(clients, Arc::new(DiscoveryCache::default())),
        );
        let grpc = kairship_core::grpc::routes(api.clone(), Arc::new(Tokens))
            .await
            .unwrap();
        let app = app(AppParts {
            api,
            authenticator: Arc::new(Tokens),
            proxy: None,
            grpc: Some(grpc),
            console: None,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        std::mem::forget(host);
        let instance_url = instance_served.url.clone();
        std::mem::forget(instance_served);
        Env {
            instance,
            instance_url,
            members,
            base: format!("http://{addr}"),
            http: reqwest::Client::new(),
        }
    }

    async fn rest(&self, method: &str, path: &str, token: &str) -> (u16, Value) {
        let response = self
            .http
            .request(
                method.parse().unwrap(),
                format!(
                    "{}/apis/kairship.io/v1alpha1/instances/{INSTANCE}{path}",
                    self.base
                ),
            )
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// A raw request to the instance's cluster proxy as `token`.
    async fn through_proxy(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .request(
                method.parse().unwrap(),
                format!(
                    "{}/apis/cluster.karmada.io/v1alpha1/clusters{path}",
                    self.instance_url
                ),
            )
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn grpc(
        &self,
    ) -> pb::kairship_service_client::KairshipServiceClient<tonic::transport::Channel> {
        let channel = tonic::transport::Endpoint::from_shared(self.base.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        pb::kairship_service_client::KairshipServiceClient::new(channel)
    }
}

fn with_token<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", "Bearer admin".parse().unwrap());
    request
}

/// `(cluster, name)` of each listed pod or node.
fn placed(items: &Value) -> BTreeSet<(String, String)> {
    items["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["metadata"]["annotations"][CLUSTER_ANNOTATION]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                p["metadata"]["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// What the members themselves hold: `(cluster, name)` of every `path` item.
async fn held(members: &[Member], path: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for m in members {
        let list = send(&m.cluster.client(), "GET", path, None).await;
        for item in list["items"].as_array().unwrap() {
            out.insert((
                m.cluster.name().to_owned(),
                item["metadata"]["name"].as_str().unwrap().to_owned(),
            ));
        }
    }
    out
}

#[tokio::test]
async fn the_cluster_proxy_forwards_as_the_caller_and_the_member_decides() {
    let env = Env::start().await;
    // An unknown cluster: Karmada's NotFound Status.
    let (code, status) = env
        .through_proxy(
            "GET",
            "/nope/proxy/api/v1/pods",
            env.instance.admin_token(),
            None,
        )
        .await;
    assert_eq!(code, 404, "{status}");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(
        status["message"],
        "clusters.cluster.karmada.io \"nope\" not found"
    );
    // Without `clusters/proxy` in the instance, the instance itself refuses.
    let (code, status) = env
        .through_proxy("GET", "/east/proxy/api/v1/pods", "nobody-token", None)
        .await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "clusters.cluster.karmada.io \"east\" is forbidden: User \"nobody\" cannot get resource \"clusters/proxy\" in API group \"cluster.karmada.io\" at the cluster scope"
    );
    // A read is forwarded to the member.
    let (code, pods) = env
        .through_proxy(
            "GET",
            &format!("/east/proxy/api/v1/namespaces/{NS}/configmaps"),
            "viewer-token",
            None,
        )
        .await;
    assert_eq!(code, 200, "{pods}");
    assert_eq!(pods["kind"], "ConfigMapList");
    // The viewer's write is refused by the member itself, naming the viewer.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-viewer"}});
    let (code, status) = env
        .through_proxy(
            "POST",
            &format!("/east/proxy/api/v1/namespaces/{NS}/configmaps"),
            "viewer-token",
            Some(cm),
        )
        .await;
    assert_eq!(code, 403, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("User \"viewer\" cannot create resource \"configmaps\""),
        "{status}"
    );
    let east = &env.members[0].cluster;
    let refused = east
        .audit_events()
        .into_iter()
        .find(|e| e.resource == "configmaps" && e.verb == "create")
        .unwrap();
    assert_eq!((refused.user.as_str(), refused.code), ("viewer", 403));
    assert_eq!(
        refused.impersonated_by.as_deref(),
        Some("system:serviceaccount:karmada-cluster:karmada-impersonator")
    );
    // The editor's write is made, as the editor.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-editor"}});
    let (code, created) = env
        .through_proxy(
            "POST",
            &format!("/east/proxy/api/v1/namespaces/{NS}/configmaps"),
            "editor-token",
            Some(cm),
        )
        .await;
    assert_eq!(code, 201, "{created}");
    let made = east
        .audit_events()
        .into_iter()
        .find(|e| e.resource == "configmaps" && e.code == 201)
        .unwrap();
    assert_eq!(made.user, "editor");
    // Watches stream through the proxy.
    let mut watch = env
        .http
        .get(format!(
            "{}/apis/cluster.karmada.io/v1alpha1/clusters/east/proxy/api/v1/namespaces/{NS}/configmaps?watch=true",
            env.instance_url
        ))
        .bearer_auth("viewer-token")
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);
    let first = watch.chunk().await.unwrap().unwrap();
    let line = String::from_utf8_lossy(&first);
    let event: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    assert_eq!(event["type"], "ADDED", "{event}");
    assert_eq!(event["object"]["kind"], "ConfigMap", "{event}");
    // A Cluster whose impersonator Secret is missing, and one that cannot be reached.
    let admin = env.instance.client();
    for (name, endpoint, impersonator) in [
        ("no-secret", "http://127.0.0.1:9", "missing"),
        ("gone", "http://127.0.0.1:9", "east-impersonator"),
    ] {
        send(&admin, "POST", "/apis/cluster.karmada.io/v1alpha1/clusters", Some(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
            "spec": {"apiEndpoint": endpoint, "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": impersonator}}
        }))).await;
    }
    let (code, status) = env
        .through_proxy(
            "GET",
            "/no-secret/proxy/api/v1/pods",
            env.instance.admin_token(),
            None,
        )
        .await;
    assert_eq!(
        (code, status["message"].as_str()),
        (404, Some("secrets \"missing\" not found")),
        "{status}"
    );
    let (code, status) = env
        .through_proxy(
            "GET",
            "/gone/proxy/api/v1/pods",
            env.instance.admin_token(),
            None,
        )
        .await;
    assert_eq!(code, 500, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("error trying to reach cluster gone"),
        "{status}"
    );
}

#[tokio::test]
async fn pods_per_cluster_and_nodes_are_what_the_members_hold() {
    let env = Env::start().await;
    let pods_path = format!("/api/v1/namespaces/{NS}/pods");
    let listed = eventually(
        "the pods of web in both members",
        Duration::from_secs(30),
        || async {
            let held = held(&env.members, &pods_path).await;
            let (code, body) = env
                .rest(
                    "GET",
                    &format!("/namespaces/{NS}/deployments/web/pods"),
                    "admin",
                )
                .await;
            (code == 200 && held.len() == 3 && placed(&body) == held).then_some(body)
        },
    )
    .await;
    let by_cluster: Vec<String> = placed(&listed).into_iter().map(|(c, _)| c).collect();
    assert_eq!(by_cluster, ["east", "east", "west"]);
    assert_eq!(listed["pagination"]["total"], 3);
    // List options apply over all clusters: paging.
    let (_, page) = env
        .rest(
            "GET",
            &format!("/namespaces/{NS}/deployments/web/pods?pageSize=2&page=2"),
            "admin",
        )
        .await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    // gRPC answers the same.
    let mut grpc = env.grpc().await;
    let answer = grpc
        .list_workload_pods(with_token(pb::ListWorkloadPodsRequest {
            instance: INSTANCE.into(),
            namespace: NS.into(),
            kind: "deployments".into(),
            name: "web".into(),
            options: None,
        }))
        .await
        .unwrap()
        .into_inner();
    let names: BTreeSet<String> = answer
        .items
        .into_iter()
        .map(|s| {
            kairship_core::grpc::convert::struct_to_json(s)["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(names, placed(&listed).into_iter().map(|(_, n)| n).collect());
    // Nodes of a member.
    let (code, nodes) = env.rest("GET", "/clusters/east/nodes", "admin").await;
    assert_eq!(code, 200, "{nodes}");
    assert_eq!(
        placed(&nodes),
        held(&env.members[..1], "/api/v1/nodes").await
    );
    let grpc_nodes = grpc
        .list_member_nodes(with_token(pb::ListMemberNodesRequest {
            instance: INSTANCE.into(),
            cluster: "east".into(),
            options: None,
        }))
        .await
        .unwrap()
        .into_inner();
    let grpc_nodes: BTreeSet<String> = grpc_nodes
        .items
        .into_iter()
        .map(|s| {
            kairship_core::grpc::convert::struct_to_json(s)["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        grpc_nodes,
        placed(&nodes).into_iter().map(|(_, n)| n).collect()
    );
    assert_eq!(grpc_nodes.len(), 2);
    // Generic reads of a member.
    let (code, deployment) = env
        .rest(
            "GET",
            &format!("/clusters/west/namespaces/{NS}/resources/apps/v1/deployments/web"),
            "admin",
        )
        .await;
    assert_eq!(code, 200, "{deployment}");
    assert_eq!(deployment["spec"]["replicas"], 1);
    let (code, list) = env
        .rest(
            "GET",
            "/clusters/west/resources/core/v1/namespaces?name=dem",
            "admin",
        )
        .await;
    assert_eq!(
        (code, list["pagination"]["total"].as_u64()),
        (200, Some(1)),
        "{list}"
    );
    // Errors are {code, message}: an unknown member, a caller who may not read the instance.
    let (code, err) = env.rest("GET", "/clusters/nope/nodes", "admin").await;
    assert_eq!(code, 404, "{err}");
    assert!(
        err["message"].as_str().unwrap().contains("not found"),
        "{err}"
    );
    let (code, err) = env
        .rest(
            "GET",
            &format!("/namespaces/{NS}/deployments/web/pods"),
            "outsider",
        )
        .await;
    assert_eq!(code, 403, "{err}");
    assert!(err["code"].is_number() && err["message"].is_string());
}

#[tokio::test]
async fn promote_copies_the_workload_and_its_config_all_or_nothing() {
    let env = Env::start().await;
    let east = env.members[0].cluster.client();
    send(
        &east,
        "POST",
        &format!("/api/v1/namespaces/{NS}/configmaps"),
        Some(json!({
            "metadata": {"name": "legacy-config"}, "data": {"mode": "legacy"}
        })),
    )
    .await;
    let mut legacy = deployment("legacy", 1);
    legacy["spec"]["template"]["spec"]["volumes"] =
        json!([{"name": "c", "configMap": {"name": "legacy-config"}}]);
    send(
        &east,
        "POST",
        &format!("/apis/apps/v1/namespaces/{NS}/deployments"),
        Some(legacy),
    )
    .await;
    let instance = env.instance.client();
    let exists = |path: String| {
        let instance = instance.clone();
        async move {
            let request = http::Request::get(path).body(Vec::new()).unwrap();
            instance.request_text(request).await.is_ok()
        }
    };
    let cm_path = format!("/api/v1/namespaces/{NS}/configmaps/legacy-config");
    let deploy_path = format!("/apis/apps/v1/namespaces/{NS}/deployments/legacy");
    let policy_path = format!(
        "/apis/policy.karmada.io/v1alpha1/namespaces/{NS}/propagationpolicies/legacy-deployment-promoted"
    );
    let promote = format!("/clusters/east/namespaces/{NS}/deployments/legacy:promote");

    // Dry run: the plan, nothing created.
    let (code, plan) = env
        .rest("POST", &format!("{promote}?dryRun=true"), "admin")
        .await;
    assert_eq!(code, 200, "{plan}");
    let kinds: Vec<&str> = plan["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["ConfigMap", "Deployment", "PropagationPolicy"]);
    assert_eq!(plan["dryRun"], true);
    // gRPC plans the same.
    let grpc_plan = env
        .grpc()
        .await
        .promote_workload(with_token(pb::PromoteWorkloadRequest {
            instance: INSTANCE.into(),
            cluster: "east".into(),
            namespace: NS.into(),
            kind: "deployments".into(),
            name: "legacy".into(),
            dry_run: true,
        }))
        .await
        .unwrap()
        .into_inner();
    let grpc_plan = kairship_core::grpc::applications::promote_response_from_pb(grpc_plan);
    assert!(grpc_plan.dry_run);
    assert_eq!(
        serde_json::to_value(&grpc_plan.objects).unwrap(),
        plan["objects"]
    );
    assert!(!exists(cm_path.clone()).await && !exists(deploy_path.clone()).await);

    // The policy (third object) fails: nothing is kept.
    let fault = env.instance.faults().add(FaultRule {
        resource: Some("propagationpolicies".into()),
        verbs: vec!["create".into()],
        action: FaultAction::Status(500),
    });
    let (code, err) = env.rest("POST", &promote, "admin").await;
    assert_eq!(code, 500, "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("nothing was kept"),
        "{err}"
    );
    assert!(
        !exists(cm_path.clone()).await,
        "the ConfigMap was left behind"
    );
    assert!(
        !exists(deploy_path.clone()).await,
        "the Deployment was left behind"
    );
    env.instance.faults().remove(fault);

    // Promoted: the workload without what the member wrote, its ConfigMap, and the policy.
    let (code, done) = env.rest("POST", &promote, "admin").await;
    assert_eq!(code, 200, "{done}");
    assert_eq!(done["objects"].as_array().unwrap().len(), 3);
    let copied = send(&instance, "GET", &deploy_path, None).await;
    assert_eq!(
        copied["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"],
        "legacy-config"
    );
    let member_uid = send(&east, "GET", &deploy_path, None).await["metadata"]["uid"].clone();
    assert_ne!(copied["metadata"]["uid"], member_uid);
    assert!(copied.get("status").is_none() || copied["status"]["replicas"].is_null());
    let cm = send(&instance, "GET", &cm_path, None).await;
    assert_eq!(cm["data"]["mode"], "legacy");
    let policy = send(&instance, "GET", &policy_path, None).await;
    assert_eq!(
        policy["spec"]["placement"]["clusterAffinity"]["clusterNames"],
        json!(["east"])
    );
    assert_eq!(policy["spec"]["conflictResolution"], "Overwrite");
    // Again: everything exists already, so the dry run says so.
    let (code, err) = env
        .rest("POST", &format!("{promote}?dryRun=true"), "admin")
        .await;
    assert_eq!(code, 409, "{err}");
}
