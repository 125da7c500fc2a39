//! The proxier end to end over real TLS: a computing sandbox cluster holds the binding, a
//! hand-made virtual node and virtual pods; a worker sandbox cluster, served over HTTPS and
//! reached through the binding's kubeconfig Secret, runs the physical pod on a simulated
//! node. Clients are kube-rs clients pointed at the proxier, presenting client certificates
//! from a test CA or bearer tokens.

#![allow(clippy::unwrap_used)]

mod common;

use common::{eventually, from_json};

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Secret};
use kube::ResourceExt;
use kube::api::{LogParams, PostParams};
use kube::{Api, Client};
use kube_kit::admin::Metrics;
use kube_sandbox::testing::Sandboxes;
use kube_sandbox::testing::wait::eventually_some;
use kube_sandbox::{Cluster, ServeOptions, Served, SimNode, UserInfo};
use kubeocean_core::crd::ClusterBinding;
use kubeocean_core::labels;
use kubeocean_core::proxier::{Proxier, ProxierConfig, ProxierMetrics, self_signed_serving_cert};
use kubeocean_core::syncer::config::ProxierPods;
use kubeocean_core::syncer::{ProxierEndpoint, Syncer, SyncerConfig};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

const BINDING: &str = "b1";
const SECRET_NS: &str = "kubeocean-system";
const MOUNT_NS: &str = "kubeocean-worker";
const PHYSICAL_NODE: &str = "w1";
const VIRTUAL_NODE: &str = "vnode-w1-w1";
const PHYSICAL_POD: &str = "web-0123456789abcdef";

/// A certificate authority for client certificates.
struct TestCa {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl TestCa {
    fn new(name: &str) -> TestCa {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).unwrap();
        TestCa {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A client certificate and key (PEM) for user `cn` in group `org`.
    fn client(&self, cn: &str, org: &str) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// How a test client presents itself to the proxier.
enum Identity {
    Certificate(String, String),
    Token(String),
    Anonymous,
}

/// The computing cluster, the proxier of [`BINDING`] and what tests need to reach it.
struct Env {
    /// Stops the proxier and shuts the clusters down first on drop.
    _sandboxes: Sandboxes,
    computing: Cluster,
    workers: Vec<Cluster>,
    _served: Vec<Served>,
    c: Client,
    proxier: SocketAddr,
    serving_cert: String,
    ca: TestCa,
    metrics: Metrics,
}

impl Env {
    /// A kube-rs client whose "API server" is the proxier.
    async fn client(&self, identity: Identity) -> Client {
        let user = match identity {
            Identity::Certificate(cert, key) => json!({
                "client-certificate-data": STANDARD.encode(cert),
                "client-key-data": STANDARD.encode(key),
            }),
            Identity::Token(token) => json!({ "token": token }),
            Identity::Anonymous => json!({}),
        };
        let kubeconfig = json!({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "proxier", "cluster": {
                "server": format!("https://{}", self.proxier),
                "certificate-authority-data": STANDARD.encode(&self.serving_cert)}}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "proxier", "context": {"cluster": "proxier", "user": "u"}}],
            "current-context": "proxier",
        });
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&kubeconfig.to_string()).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        let mut config = config;
        // Answers such as 503 must reach the test as they are, not be retried.
        config.default_retry = false;
        kube_kit::client::install_crypto_provider();
        Client::try_from(config).unwrap()
    }

    /// Asserts that the proxier counted `count` requests to `endpoint` answered with `code`.
    fn assert_requests(&self, endpoint: &str, code: &str, count: u32) {
        let text = self.metrics.encode().unwrap();
        let series = format!(
            "kubeocean_proxier_requests_total{{binding=\"{BINDING}\",endpoint=\"{endpoint}\",code=\"{code}\"}} {count}"
        );
        assert!(text.contains(&series), "{text}");
    }

    /// The client kube-apiserver would be: a certificate signed by the cluster CA.
    async fn apiserver(&self) -> Client {
        let (cert, key) = self
            .ca
            .client("kube-apiserver-kubelet-client", "system:masters");
        self.client(Identity::Certificate(cert, key)).await
    }
}

/// GET `path` on the proxier; the status and the whole body, or the transport error.
async fn get(client: &Client, path: &str) -> Result<(StatusCode, String), kube::Error> {
    let response = client
        .send(
            Request::get(path)
                .body(kube::client::Body::empty())
                .unwrap(),
        )
        .await?;
    let status = response.status();
    let body = response.into_body().collect_bytes().await?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// Creates a cluster-scoped object.
async fn create<K>(client: &Client, value: Value) -> K
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    Api::<K>::all(client.clone())
        .create(&PostParams::default(), &from_json(value))
        .await
        .unwrap()
}

/// Creates a namespaced object.
async fn create_in<K>(client: &Client, namespace: &str, value: Value) -> K
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    Api::<K>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &from_json(value))
        .await
        .unwrap()
}

/// A binding named `binding` whose Secret holds `kubeconfig`.
async fn add_binding(c: &Client, binding: &str, kubeconfig: &str) {
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{binding}-kubeconfig")),
            namespace: Some(SECRET_NS.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "kubeconfig".to_owned(),
            ByteString(kubeconfig.as_bytes().to_vec()),
        )])),
        ..Default::default()
    };
    Api::<Secret>::namespaced(c.clone(), SECRET_NS)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let _: ClusterBinding = create(
        c,
        json!({
            "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ClusterBinding",
            "metadata": { "name": binding },
            "spec": { "clusterID": binding, "mountNamespace": MOUNT_NS,
                      "secretRef": { "name": format!("{binding}-kubeconfig"), "namespace": SECRET_NS } },
        }),
    )
    .await;
}

/// A virtual node of `binding` standing for `physical`.
async fn add_virtual_node(c: &Client, name: &str, binding: &str, physical: &str) {
    let _: Node = create(
        c,
        json!({"metadata": {"name": name, "labels": {
            labels::CLUSTER_BINDING: binding,
            labels::PHYSICAL_NODE_NAME: physical,
            labels::NODE_TYPE: labels::NODE_TYPE_VIRTUAL_KUBELET,
        }}}),
    )
    .await;
}

/// A virtual pod in `default` on `node`, mapped to `mount/physical` when given.
async fn add_virtual_pod(c: &Client, name: &str, node: &str, physical: Option<&str>) -> Pod {
    let annotations = match physical {
        Some(physical) => json!({
            labels::PHYSICAL_POD_NAMESPACE: MOUNT_NS,
            labels::PHYSICAL_POD_NAME: physical,
            labels::PHYSICAL_POD_UID: "physical-uid",
        }),
        None => json!({}),
    };
    create_in(
        c,
        "default",
        json!({
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"nodeName": node, "containers": [{"name": "app", "image": "busybox"}]},
        }),
    )
    .await
}

/// Starts the proxier of [`BINDING`] on the computing cluster.
/// The proxier runs until `token` is cancelled.
async fn start_proxier(
    computing: &Cluster,
    ca: &TestCa,
    token: &CancellationToken,
) -> (SocketAddr, String, Metrics) {
    let (serving_cert, serving_key) = self_signed_serving_cert(&[]).unwrap();
    let metrics = Metrics::new();
    let mut config = ProxierConfig::new(
        BINDING,
        "127.0.0.1:0".parse().unwrap(),
        serving_cert.clone(),
        serving_key,
    );
    config.client_ca_pem = Some(ca.pem.clone());
    config.secret_namespace = SECRET_NS.to_owned();
    config.token_review = true;
    // The kube client retries a worker's 503 with a long backoff; stats must not wait for it.
    config.stats_timeout = Duration::from_secs(1);
    config.metrics = Some(ProxierMetrics::register(&metrics));
    let bound = Proxier::new(computing.client(), config)
        .bind()
        .await
        .unwrap();
    let addr = bound.local_addr();
    tokio::spawn(bound.run(token.clone()));
    (addr, serving_cert, metrics)
}

/// The computing cluster with CRDs and the Secret namespace, in the test's sandboxes.
async fn computing_cluster() -> (Sandboxes, Cluster, Client) {
    let mut sandboxes = Sandboxes::new();
    let computing = sandboxes.cluster("computing");
    let c = computing.client();
    kubeocean_core::setup::install_crds(&c).await.unwrap();
    let _: Namespace = create(&c, json!({"metadata": {"name": SECRET_NS}})).await;
    (sandboxes, computing, c)
}

/// A worker sandbox served over HTTPS running [`PHYSICAL_POD`] on [`PHYSICAL_NODE`], the
/// binding [`BINDING`] to it, its virtual node, the virtual pod `web` mapped to the physical
/// pod, and the proxier.
async fn env() -> Env {
    let (mut sandboxes, computing, c) = computing_cluster().await;
    let worker = sandboxes.cluster("worker");
    let served = worker
        .serve(ServeOptions {
            tls: true,
            ..ServeOptions::default()
        })
        .await
        .unwrap();
    worker
        .add_node(&SimNode::new(PHYSICAL_NODE, "4", "8Gi"))
        .unwrap();
    let w = worker.client();
    let _: Namespace = create(&w, json!({"metadata": {"name": MOUNT_NS}})).await;
    let _: Pod = create_in(
        &w,
        MOUNT_NS,
        json!({
            "metadata": {"name": PHYSICAL_POD},
            "spec": {"nodeName": PHYSICAL_NODE, "containers": [{"name": "app", "image": "busybox",
                "command": ["sh", "-c", "echo hello; echo world; sleep 3600"],
                "ports": [{"containerPort": 8080}]}]},
        }),
    )
    .await;
    let physical: Api<Pod> = Api::namespaced(w.clone(), MOUNT_NS);
    eventually("the physical pod prints its logs", || {
        let physical = physical.clone();
        async move {
            physical
                .logs(PHYSICAL_POD, &LogParams::default())
                .await
                .is_ok_and(|logs| logs.contains("world"))
        }
    })
    .await;

    add_binding(&c, BINDING, &served.kubeconfig_yaml).await;
    add_virtual_node(&c, VIRTUAL_NODE, BINDING, PHYSICAL_NODE).await;
    add_virtual_pod(&c, "web", VIRTUAL_NODE, Some(PHYSICAL_POD)).await;
    let ca = TestCa::new("computing-ca");
    let (proxier, serving_cert, metrics) = start_proxier(&computing, &ca, sandboxes.token()).await;
    Env {
        _sandboxes: sandboxes,
        computing,
        workers: vec![worker],
        _served: vec![served],
        c,
        proxier,
        serving_cert,
        ca,
        metrics,
    }
}

#[tokio::test]
async fn logs_of_a_virtual_pod_come_from_the_physical_pod() {
    let env = env().await;
    let client = env.apiserver().await;
    let physical: Api<Pod> = Api::namespaced(env.workers[0].client(), MOUNT_NS);
    let all = physical
        .logs(PHYSICAL_POD, &LogParams::default())
        .await
        .unwrap();
    assert!(all.ends_with("hello\nworld\n"), "{all}");
    let (status, body) = get(&client, "/containerLogs/default/web/app")
        .await
        .unwrap();
    assert_eq!((status, body), (StatusCode::OK, all));
    let (status, body) = get(&client, "/containerLogs/default/web/app?tailLines=1")
        .await
        .unwrap();
    assert_eq!((status, body.as_str()), (StatusCode::OK, "world\n"));
    let (status, body) = get(
        &client,
        "/containerLogs/default/web/app?tailLines=1&timestamps=true",
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert!(
        body.ends_with("Z world\n") && body.len() > "world\n".len() + 20,
        "{body}"
    );
    let (status, _) = get(&client, "/containerLogs/default/web/app?tailLines=-1")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // A container the pod does not have: the worker's own answer comes through.
    let (status, body) = get(&client, "/containerLogs/default/web/sidecar")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    env.assert_requests("containerLogs", "200", 3);
}

#[tokio::test]
async fn followed_logs_stream_new_lines() {
    let env = env().await;
    let client = env.apiserver().await;
    let response = client
        .send(
            Request::get("/containerLogs/default/web/app?follow=true&tailLines=1")
                .body(kube::client::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut seen = String::new();
    let mut appended = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !seen.contains("later\n") {
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .expect("the followed stream delivers new lines")
            .expect("the stream stays open")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            seen.push_str(&String::from_utf8_lossy(&data));
        }
        if seen.contains("world\n") && !appended {
            env.workers[0]
                .kubelet()
                .append_log(MOUNT_NS, PHYSICAL_POD, "app", "later");
            appended = true;
        }
    }
    assert_eq!(seen, "world\nlater\n");
}

#[tokio::test]
async fn clients_must_authenticate() {
    let env = env().await;
    let path = "/containerLogs/default/web/app";

    let anonymous = env.client(Identity::Anonymous).await;
    assert_eq!(
        get(&anonymous, path).await.unwrap().0,
        StatusCode::UNAUTHORIZED
    );
    // Health needs no credentials.
    assert_eq!(
        get(&anonymous, "/healthz").await.unwrap(),
        (StatusCode::OK, "ok\n".to_owned())
    );

    // A certificate from another CA: the handshake fails (or, at worst, the request is refused).
    let stranger = TestCa::new("stranger-ca");
    let (cert, key) = stranger.client("kube-apiserver-kubelet-client", "system:masters");
    let forged = env.client(Identity::Certificate(cert, key)).await;
    match get(&forged, path).await {
        Err(_) => {}
        Ok((status, _)) => assert_eq!(status, StatusCode::UNAUTHORIZED),
    }

    let bogus = env.client(Identity::Token("not-a-token".into())).await;
    assert_eq!(get(&bogus, path).await.unwrap().0, StatusCode::UNAUTHORIZED);

    // Tokens are reviewed and their users authorized against RBAC on nodes/proxy.
    env.computing
        .auth()
        .add_token("alice-token", UserInfo::new("alice", &[]));
    env.computing
        .auth()
        .add_token("bob-token", UserInfo::new("bob", &[]));
    let _: k8s_openapi::api::rbac::v1::ClusterRole = create(
        &env.c,
        json!({"metadata": {"name": "kubelet-api"},
               "rules": [{"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get", "create"]}]}),
    )
    .await;
    let _: k8s_openapi::api::rbac::v1::ClusterRoleBinding = create(
        &env.c,
        json!({"metadata": {"name": "bob-kubelet-api"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kubelet-api"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]}),
    )
    .await;
    let alice = env.client(Identity::Token("alice-token".into())).await;
    let (status, body) = get(&alice, path).await.unwrap();
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body.contains("user=alice") && body.contains("subresource=proxy"),
        "{body}"
    );
    let bob = env.client(Identity::Token("bob-token".into())).await;
    let (status, body) = get(&bob, path).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert!(body.ends_with("hello\nworld\n"), "{body}");
    // bob may not read stats (nodes/stats).
    assert_eq!(
        get(&bob, "/stats/summary").await.unwrap().0,
        StatusCode::FORBIDDEN
    );
    let admin = env
        .client(Identity::Token(env.computing.admin_token().to_owned()))
        .await;
    assert_eq!(get(&admin, path).await.unwrap().0, StatusCode::OK);
}

#[tokio::test]
async fn pods_not_served_by_this_binding_are_not_found() {
    let env = env().await;
    add_virtual_node(&env.c, "vnode-other", "b2", PHYSICAL_NODE).await;
    // Same physical pod, but on a virtual node of another binding.
    add_virtual_pod(&env.c, "stranger", "vnode-other", Some(PHYSICAL_POD)).await;
    // On our node, but not mapped yet.
    add_virtual_pod(&env.c, "pending", VIRTUAL_NODE, None).await;
    let client = env.apiserver().await;
    for path in [
        "/containerLogs/default/stranger/app",
        "/containerLogs/default/pending/app",
        "/containerLogs/default/missing/app",
        "/containerLogs/other-namespace/web/app",
        "/exec/default/stranger/app?command=ls&output=1",
        "/exec/default/web/wrong-uid/app?command=ls&output=1",
        "/portForward/default/stranger?port=8080",
        "/configz",
    ] {
        let (status, body) = get(&client, path).await.unwrap();
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
    }
    // The right UID in the path is accepted (the request then needs an upgrade).
    let uid = Api::<Pod>::namespaced(env.c.clone(), "default")
        .get("web")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let (status, body) = get(
        &client,
        &format!("/exec/default/web/{uid}/app?command=ls&output=1"),
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("Upgrade request required"), "{body}");
}

/// Reads WebSocket frames until the stream closes: bytes per channel.
async fn read_channels(
    stream: &mut (
             impl futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin
         ),
) -> BTreeMap<u8, Vec<u8>> {
    let mut channels: BTreeMap<u8, Vec<u8>> = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while let Ok(Some(message)) = tokio::time::timeout_at(deadline, stream.next()).await {
        match message {
            Ok(Message::Binary(data)) if !data.is_empty() => {
                channels
                    .entry(data[0])
                    .or_default()
                    .extend_from_slice(&data[1..]);
            }
            Ok(Message::Close(_)) | Err(_) => break,
            Ok(_) => {}
        }
    }
    channels
}

#[tokio::test]
async fn exec_runs_in_the_physical_pod() {
    let env = env().await;
    let client = env.apiserver().await;
    // As kube-apiserver calls a kubelet: kubelet-style query, WebSocket channel protocol.
    let connection = client
        .connect(
            Request::get("/exec/default/web/app?command=echo&command=hello&output=1&error=1")
                .body(vec![])
                .unwrap(),
        )
        .await
        .unwrap();
    let mut stream = connection.into_stream();
    let channels = read_channels(&mut stream).await;
    assert_eq!(
        channels.get(&1).map(Vec::as_slice),
        Some(&b"hello\n"[..]),
        "{channels:?}"
    );
    let status: Value = serde_json::from_slice(channels.get(&3).unwrap()).unwrap();
    assert_eq!(status["status"], "Success", "{status}");

    env.assert_requests("exec", "101", 1);
}

#[tokio::test]
async fn port_forward_carries_bytes_both_ways() {
    let env = env().await;
    let client = env.apiserver().await;
    let connection = client
        .connect(
            Request::get("/portForward/default/web?port=8080")
                .body(vec![])
                .unwrap(),
        )
        .await
        .unwrap();
    let mut stream = connection.into_stream();
    let payload = b"ping through the proxier".to_vec();
    let mut frame = vec![0u8];
    frame.extend_from_slice(&payload);
    stream.send(Message::Binary(frame.into())).await.unwrap();
    // Data channel 0 starts with the port (little endian), then carries the echo.
    let mut data = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while data.len() < 2 + payload.len() {
        let message = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("echo within 20 s")
            .expect("stream open")
            .unwrap();
        if let Message::Binary(bytes) = message
            && bytes.first() == Some(&0)
        {
            data.extend_from_slice(&bytes[1..]);
        }
    }
    assert_eq!(&data[..2], &8080u16.to_le_bytes());
    assert_eq!(&data[2..], &payload[..]);
}

/// The answer of the stand-in worker to `request`.
fn fake_worker_answer(request: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path();
    let (status, body) = match path {
        "/version" => (StatusCode::OK, json!({
            "major": "1", "minor": "33", "gitVersion": "v1.33.0", "gitCommit": "",
            "gitTreeState": "", "buildDate": "", "goVersion": "", "compiler": "", "platform": ""
        }).to_string()),
        "/api/v1/nodes/fw1/proxy/stats/summary" => (StatusCode::OK, json!({
            "node": {"nodeName": "fw1", "cpu": {"usageNanoCores": 1000}},
            "pods": [
                {"podRef": {"name": "api-xyz", "namespace": MOUNT_NS, "uid": "p1"}, "cpu": {"usageNanoCores": 10}},
                {"podRef": {"name": "foreign", "namespace": "prod", "uid": "p2"}, "cpu": {"usageNanoCores": 20}},
            ]}).to_string()),
        "/api/v1/nodes/fw1/proxy/metrics/resource" => (StatusCode::OK, format!(
            "# TYPE node_cpu_usage_seconds_total counter\nnode_cpu_usage_seconds_total 4 1\n\
             # TYPE pod_cpu_usage_seconds_total counter\n\
             pod_cpu_usage_seconds_total{{namespace=\"{MOUNT_NS}\",pod=\"api-xyz\"}} 1 1\n\
             pod_cpu_usage_seconds_total{{namespace=\"prod\",pod=\"foreign\"}} 2 1\n")),
        _ if path == format!("/api/v1/namespaces/{MOUNT_NS}/pods/api-xyz/exec") => {
            return fake_exec(request);
        }
        _ => (StatusCode::SERVICE_UNAVAILABLE, json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": "node unreachable", "reason": "ServiceUnavailable", "code": 503
        }).to_string()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
}

/// A stand-in `pods/exec` over WebSocket (`v4.channel.k8s.io`): prints the query it got on
/// stdout, echoes one stdin frame on stdout, reports success and closes.
fn fake_exec(mut request: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
    use hyper_util::rt::TokioIo;
    use tokio_tungstenite::WebSocketStream;
    use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
    use tokio_tungstenite::tungstenite::protocol::Role;

    let key = request
        .headers()
        .get("sec-websocket-key")
        .unwrap()
        .as_bytes()
        .to_vec();
    let query = request.uri().query().unwrap_or("").to_owned();
    let upgrade = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let upgraded = upgrade.await.unwrap();
        let mut ws =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        ws.send(Message::Binary(
            [&[1u8][..], query.as_bytes()].concat().into(),
        ))
        .await
        .unwrap();
        while let Some(Ok(message)) = ws.next().await {
            if let Message::Binary(data) = message
                && data.first() == Some(&0)
            {
                ws.send(Message::Binary([&[1u8][..], &data[1..]].concat().into()))
                    .await
                    .unwrap();
                break;
            }
        }
        ws.send(Message::Binary(
            [&[3u8][..], br#"{"status":"Success"}"#].concat().into(),
        ))
        .await
        .unwrap();
        let _ = ws.close(None).await;
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-accept", derive_accept_key(&key))
        .header("sec-websocket-protocol", "v4.channel.k8s.io")
        .body(Full::new(Bytes::new()))
        .unwrap()
}

/// A stand-in worker API server (plain HTTP): the probe, the node proxy's stats paths for
/// node `fw1` (any other node answers 503, which the kube client keeps retrying), and exec
/// in pod `api-xyz`.
async fn fake_worker() -> (SocketAddr, CancellationToken) {
    use hyper::server::conn::http1;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let loop_stop = stop.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                () = loop_stop.cancelled() => return,
                accepted = listener.accept() => accepted.unwrap(),
            };
            let service =
                service_fn(
                    |request| async move { Ok::<_, Infallible>(fake_worker_answer(request)) },
                );
            tokio::spawn(
                http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades(),
            );
        }
    });
    (addr, stop)
}

/// The proxier of [`BINDING`] whose worker is [`fake_worker`]: virtual nodes `vnode-fw1`
/// and `vnode-fw2`, virtual pod `api` on `vnode-fw1` mapped to `api-xyz`.
async fn fake_env() -> (Env, CancellationToken) {
    let (sandboxes, computing, c) = computing_cluster().await;
    let (worker_addr, worker_stop) = fake_worker().await;
    let kubeconfig = kube_sandbox::serve::kubeconfig_yaml(
        "fake",
        &format!("http://{worker_addr}"),
        None,
        "fake-token",
    );
    add_binding(&c, BINDING, &kubeconfig).await;
    add_virtual_node(&c, "vnode-fw1", BINDING, "fw1").await;
    add_virtual_node(&c, "vnode-fw2", BINDING, "fw2").await;
    add_virtual_pod(&c, "api", "vnode-fw1", Some("api-xyz")).await;
    let ca = TestCa::new("computing-ca");
    let (proxier, serving_cert, metrics) = start_proxier(&computing, &ca, sandboxes.token()).await;
    let env = Env {
        _sandboxes: sandboxes,
        computing,
        workers: vec![],
        _served: vec![],
        c,
        proxier,
        serving_cert,
        ca,
        metrics,
    };
    (env, worker_stop)
}

#[tokio::test]
async fn upgraded_streams_are_spliced_to_the_worker() {
    let (env, worker_stop) = fake_env().await;
    let client = env.apiserver().await;
    let connection = client
        .connect(
            Request::get("/exec/default/api/app?command=echo&command=hi+there&input=1&output=1")
                .body(vec![])
                .unwrap(),
        )
        .await
        .unwrap();
    let mut stream = connection.into_stream();
    let first = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    // The worker saw the API server's form of the query.
    assert_eq!(
        first,
        Message::Binary(
            [
                &[1u8][..],
                b"container=app&stdin=true&stdout=true&command=echo&command=hi%20there"
            ]
            .concat()
            .into()
        )
    );
    stream
        .send(Message::Binary([&[0u8][..], b"ping"].concat().into()))
        .await
        .unwrap();
    let channels = read_channels(&mut stream).await;
    assert_eq!(
        channels.get(&1).map(Vec::as_slice),
        Some(&b"ping"[..]),
        "{channels:?}"
    );
    let status: Value = serde_json::from_slice(channels.get(&3).unwrap()).unwrap();
    assert_eq!(status["status"], "Success");
    env.assert_requests("exec", "101", 1);
    worker_stop.cancel();
}

#[tokio::test]
async fn stats_show_only_virtual_pods_under_virtual_names() {
    let (env, worker_stop) = fake_env().await;
    let client = env.apiserver().await;

    // All virtual nodes of the binding: fw2 fails, so the answer is partial.
    let (status, body) = get(&client, "/stats/summary").await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    let summary: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(summary["node"]["nodeName"], BINDING);
    assert_eq!(summary["node"]["cpu"]["usageNanoCores"], 1000);
    assert_eq!(summary["pods"].as_array().unwrap().len(), 1, "{summary}");
    assert_eq!(summary["pods"][0]["podRef"]["name"], "api");
    assert_eq!(summary["pods"][0]["podRef"]["namespace"], "default");

    // A client that names the virtual node gets that node only.
    let response = client
        .send(
            Request::get("/stats/summary")
                .header(http::header::HOST, "vnode-fw1:10250")
                .body(kube::client::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let summary: Value =
        serde_json::from_slice(&response.into_body().collect_bytes().await.unwrap()).unwrap();
    assert_eq!(summary["node"]["nodeName"], "vnode-fw1");
    assert_eq!(summary["pods"][0]["podRef"]["name"], "api");

    let (status, text) = get(&client, "/metrics/resource").await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        text,
        "# TYPE node_cpu_usage_seconds_total counter\nnode_cpu_usage_seconds_total 4 1\n\
         # TYPE pod_cpu_usage_seconds_total counter\npod_cpu_usage_seconds_total{namespace=\"default\",pod=\"api\"} 1 1\n"
    );

    let exported = env.metrics.encode().unwrap();
    assert!(
        exported.contains(
            "kubeocean_proxier_upstream_errors_total{binding=\"b1\",endpoint=\"stats/summary\"} 1"
        ),
        "{exported}"
    );
    worker_stop.cancel();
}

#[tokio::test]
async fn an_unreachable_worker_gives_empty_stats_and_unavailable_logs() {
    let (sandboxes, computing, c) = computing_cluster().await;
    // Nothing listens there.
    let kubeconfig = kube_sandbox::serve::kubeconfig_yaml("gone", "http://127.0.0.1:9", None, "t");
    add_binding(&c, BINDING, &kubeconfig).await;
    add_virtual_node(&c, VIRTUAL_NODE, BINDING, PHYSICAL_NODE).await;
    add_virtual_pod(&c, "web", VIRTUAL_NODE, Some(PHYSICAL_POD)).await;
    let ca = TestCa::new("computing-ca");
    let (proxier, serving_cert, metrics) = start_proxier(&computing, &ca, sandboxes.token()).await;
    let env = Env {
        _sandboxes: sandboxes,
        computing,
        workers: vec![],
        _served: vec![],
        c,
        proxier,
        serving_cert,
        ca,
        metrics,
    };
    let client = env.apiserver().await;
    let (status, body) = get(&client, "/stats/summary").await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"node": {"nodeName": VIRTUAL_NODE, "systemContainers": []}, "pods": []})
    );
    let (status, body) = get(&client, "/containerLogs/default/web/app")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains("worker cluster unavailable"), "{body}");
}

/// Ten ports in a row that were free a moment ago, a different run for each test.
fn free_port_range() -> std::ops::RangeInclusive<u16> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let seed = std::process::id() ^ NEXT.fetch_add(7919, std::sync::atomic::Ordering::Relaxed);
    kube_sandbox::ports::free_port_run(10, seed).unwrap()
}

/// Per-node endpoints end to end: a syncer and a proxier of binding `w1` with per-node
/// ports, the worker's nodes n1 and n2 lent, virtual pods mapped by the syncer.
struct PerNode {
    pair: common::ServedPair,
    range: std::ops::RangeInclusive<u16>,
    /// Stops the syncer (the sandboxes' token stops the rest).
    syncer: CancellationToken,
}

const PER_NODE_BINDING: &str = "w1";
/// How long a per-node wait may take at most (a guard against a hang).
const WAIT: Duration = Duration::from_secs(30);
const PER_NODE_MOUNT: &str = "kubeocean-worker";

fn per_node_syncer_config(range: &std::ops::RangeInclusive<u16>) -> SyncerConfig {
    let mut config = SyncerConfig::new(PER_NODE_BINDING);
    config.secret_namespace = SECRET_NS.into();
    config.client_options = config.client_options.with_rate_limit(0.0, 0);
    config.lease_renew_interval = Duration::from_millis(500);
    config.connect_retry_interval = Duration::from_millis(200);
    config.retry_interval = Duration::from_millis(100);
    config.max_retry_interval = Duration::from_secs(1);
    config.probe_timeout = Duration::from_secs(1);
    config.workers = 4;
    // The virtual nodes advertise the IP of a ready proxier pod, as in a Deployment.
    config.proxier = ProxierEndpoint {
        address: None,
        port: 10250,
        node_ports: Some(range.clone()),
        pods: Some(ProxierPods {
            namespace: SECRET_NS.into(),
            selector: "app=proxier".into(),
            interval: Duration::from_millis(100),
        }),
    };
    config
}

/// A proxier pod as the syncer finds it: Running and Ready at `ip` (on a node no kubelet
/// of the sandbox runs, so its status stays as written).
async fn add_proxier_pod(c: &Client, name: &str, ip: &str) {
    let api: Api<Pod> = Api::namespaced(c.clone(), SECRET_NS);
    let mut pod: Pod = create_in(
        c,
        SECRET_NS,
        json!({"metadata": {"name": name, "labels": {"app": "proxier"}},
            "spec": {"nodeName": "elsewhere", "containers": [{"name": "proxier", "image": "kubeocean"}]}}),
    )
    .await;
    pod.status = Some(from_json(json!({"phase": "Running", "podIP": ip,
        "conditions": [{"type": "Ready", "status": "True"}]})));
    api.replace_status(name, &PostParams::default(), &pod)
        .await
        .unwrap();
}

async fn per_node_env() -> PerNode {
    let pair = common::served_pair("per-node-test").await;
    for node in ["n1", "n2"] {
        pair.worker
            .add_node(&SimNode::new(node, "4", "8Gi"))
            .unwrap();
    }
    pair.bind_worker(PER_NODE_BINDING, PER_NODE_BINDING, PER_NODE_MOUNT)
        .await;
    let _: k8s_openapi::api::core::v1::ServiceAccount =
        create_in(&pair.c, "default", json!({"metadata": {"name": "default"}})).await;
    let range = free_port_range();

    // The proxier trusts the computing cluster's CA, as it does kube-apiserver's. It listens
    // on every loopback address: a replacement proxier pod "at" 127.0.0.2 answers there, and
    // the syncer publishes a node's port only once it answers.
    let (serving_cert, serving_key) = self_signed_serving_cert(&[]).unwrap();
    let mut config = ProxierConfig::new(
        PER_NODE_BINDING,
        "0.0.0.0:0".parse().unwrap(),
        serving_cert,
        serving_key,
    );
    config.client_ca_pem = Some(pair.computing.pki().unwrap().ca_pem().to_owned());
    config.secret_namespace = SECRET_NS.to_owned();
    config.node_ports = Some(range.clone());
    config.node_resync_interval = Duration::from_millis(100);
    config.stats_timeout = Duration::from_secs(5);
    let bound = Proxier::new(pair.c.clone(), config).bind().await.unwrap();
    tokio::spawn(bound.run(pair.sandboxes.token().clone()));

    add_proxier_pod(&pair.c, "proxier-a", "127.0.0.1").await;
    let syncer = pair.sandboxes.token().child_token();
    tokio::spawn(Syncer::new(pair.c.clone(), per_node_syncer_config(&range)).run(syncer.clone()));
    PerNode {
        pair,
        range,
        syncer,
    }
}

/// The virtual node's own port and InternalIP, once it has them.
async fn node_endpoint(c: &Client, name: &str) -> Option<(u16, String)> {
    let node = Api::<Node>::all(c.clone()).get_opt(name).await.unwrap()?;
    let label: u16 = node.labels().get(labels::PROXIER_PORT)?.parse().ok()?;
    let status = node.status?;
    let port = status.daemon_endpoints?.kubelet_endpoint?.port;
    let ip = status
        .addresses?
        .into_iter()
        .find(|a| a.type_ == "InternalIP")?
        .address;
    (i32::from(label) == port).then_some((label, ip))
}

async fn wait_endpoint(c: &Client, name: &str) -> u16 {
    wait_endpoint_at(c, name, "127.0.0.1").await
}

/// The virtual node's own port, once it advertises it at `ip`.
async fn wait_endpoint_at(c: &Client, name: &str, ip: &str) -> u16 {
    eventually_some(
        &format!("{name} has its own port at {ip}"),
        WAIT,
        || async {
            node_endpoint(c, name)
                .await
                .filter(|(_, at)| at == ip)
                .map(|(port, _)| port)
        },
    )
    .await
}

/// GET `path` through the computing cluster's node proxy of `node`.
async fn node_proxy(c: &Client, node: &str, path: &str) -> (StatusCode, String) {
    get(c, &format!("/api/v1/nodes/{node}/proxy{path}"))
        .await
        .unwrap()
}

#[tokio::test]
async fn each_virtual_node_reports_its_own_stats_on_its_own_port() {
    let env = per_node_env().await;
    let c = env.pair.c.clone();
    let (v1, v2) = ("vnode-w1-n1", "vnode-w1-n2");
    let p1 = wait_endpoint(&c, v1).await;
    let p2 = wait_endpoint(&c, v2).await;
    assert_ne!(p1, p2);
    assert!(env.range.contains(&p1) && env.range.contains(&p2));

    // Different pods on the two nodes: half a core on one, a tenth on the other.
    for (name, node, cpu, memory) in [("big", v1, "500m", "256Mi"), ("small", v2, "100m", "64Mi")] {
        let _: Pod = create_in(
            &c,
            "default",
            json!({"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{
                "name": "app", "image": "busybox",
                "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}}),
        )
        .await;
    }
    let summary_of = |node: &'static str| {
        let c = c.clone();
        async move {
            let (status, body) = node_proxy(&c, node, "/stats/summary").await;
            (status == StatusCode::OK)
                .then(|| serde_json::from_str::<Value>(&body).ok())
                .flatten()
        }
    };
    let pod_names = |summary: &Value| -> Vec<String> {
        summary["pods"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["podRef"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    let mut summaries = Vec::new();
    for (node, pod) in [(v1, "big"), (v2, "small")] {
        let got = eventually_some(&format!("{node} reports {pod}"), WAIT, || async {
            summary_of(node).await.filter(|s| pod_names(s) == [pod])
        })
        .await;
        summaries.push(got);
    }
    let (s1, s2) = (&summaries[0], &summaries[1]);
    assert_eq!(s1["node"]["nodeName"], v1);
    assert_eq!(s2["node"]["nodeName"], v2);
    assert_eq!(s1["pods"][0]["podRef"]["namespace"], "default");
    // The simulated kubelet: 20m for the node itself plus what its pods request.
    assert_eq!(s1["node"]["cpu"]["usageNanoCores"], 520_000_000u64);
    assert_eq!(s2["node"]["cpu"]["usageNanoCores"], 120_000_000u64);
    assert_ne!(
        s1["node"]["memory"]["workingSetBytes"],
        s2["node"]["memory"]["workingSetBytes"]
    );

    for (node, mine, theirs, bytes) in [
        (v1, "big", "small", 256u64 << 20),
        (v2, "small", "big", 64u64 << 20),
    ] {
        let (status, text) = node_proxy(&c, node, "/metrics/resource").await;
        assert_eq!(status, StatusCode::OK, "{text}");
        let series =
            format!("pod_memory_working_set_bytes{{namespace=\"default\",pod=\"{mine}\"}} {bytes}");
        assert!(
            text.lines().any(|l| l.starts_with(&series)),
            "{series} in\n{text}"
        );
        assert!(!text.contains(&format!("pod=\"{theirs}\"")), "{text}");
        assert!(text.contains("node_memory_working_set_bytes"), "{text}");
        let (status, text) = node_proxy(&c, node, "/metrics/cadvisor").await;
        assert_eq!(status, StatusCode::OK, "{text}");
        assert!(text.contains(&format!("pod=\"{mine}\"")), "{text}");
        assert!(!text.contains(&format!("pod=\"{theirs}\"")), "{text}");
    }

    // Logs through a node's port are for that node's pods only, as with a kubelet.
    let physical: Api<Pod> = Api::namespaced(env.pair.w.clone(), PER_NODE_MOUNT);
    eventually("the physical pods run", || async {
        physical
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count()
            == 2
    })
    .await;
    let (status, _) = node_proxy(&c, v1, "/containerLogs/default/big/app").await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = node_proxy(&c, v1, "/containerLogs/default/small/app").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}

#[tokio::test]
async fn ports_survive_a_syncer_restart() {
    let env = per_node_env().await;
    let c = env.pair.c.clone();
    let p1 = wait_endpoint(&c, "vnode-w1-n1").await;
    let p2 = wait_endpoint(&c, "vnode-w1-n2").await;
    env.syncer.cancel();

    // While the syncer is down: the nodes change (so the next syncer must rewrite both
    // virtual nodes) and a third node joins.
    let w = env.pair.w.clone();
    for node in ["n1", "n2"] {
        Api::<Node>::all(w.clone())
            .patch(
                node,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"metadata": {"labels": {"restarted": "yes"}}})),
            )
            .await
            .unwrap();
    }
    env.pair
        .worker
        .add_node(&SimNode::new("n3", "4", "8Gi"))
        .unwrap();
    let token = env.pair.sandboxes.token().child_token();
    tokio::spawn(Syncer::new(c.clone(), per_node_syncer_config(&env.range)).run(token));

    for node in ["vnode-w1-n1", "vnode-w1-n2"] {
        eventually(&format!("{node} is updated by the new syncer"), || async {
            Api::<Node>::all(c.clone())
                .get(node)
                .await
                .unwrap()
                .labels()
                .get("restarted")
                .is_some_and(|v| v == "yes")
        })
        .await;
    }
    assert_eq!(wait_endpoint(&c, "vnode-w1-n1").await, p1);
    assert_eq!(wait_endpoint(&c, "vnode-w1-n2").await, p2);
    let p3 = wait_endpoint(&c, "vnode-w1-n3").await;
    assert!(p3 != p1 && p3 != p2 && env.range.contains(&p3), "{p3}");
    // The proxier answers on the new node's port for it alone.
    let answered = eventually_some("the third node's stats", WAIT, || async {
        let (status, body) = node_proxy(&c, "vnode-w1-n3", "/stats/summary").await;
        (status == StatusCode::OK)
            .then(|| serde_json::from_str::<Value>(&body).ok())
            .flatten()
    })
    .await;
    assert_eq!(answered["node"]["nodeName"], "vnode-w1-n3");
}

#[tokio::test]
async fn virtual_nodes_follow_the_proxier_pod_and_keep_their_ports() {
    let env = per_node_env().await;
    let c = env.pair.c.clone();
    let p1 = wait_endpoint(&c, "vnode-w1-n1").await;
    let p2 = wait_endpoint(&c, "vnode-w1-n2").await;
    // The proxier pod is replaced by one with another IP.
    add_proxier_pod(&c, "proxier-b", "127.0.0.2").await;
    Api::<Pod>::namespaced(c.clone(), SECRET_NS)
        .delete("proxier-a", &Default::default())
        .await
        .unwrap();
    assert_eq!(wait_endpoint_at(&c, "vnode-w1-n1", "127.0.0.2").await, p1);
    assert_eq!(wait_endpoint_at(&c, "vnode-w1-n2", "127.0.0.2").await, p2);
}

/// Sends `GET path` over plain HTTP/1.1 to `addr`; the status and the body.
async fn plain_get(addr: SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn the_single_port_endpoint_answers_a_virtual_nodes_cadvisor_metrics() {
    let env = env().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (serving_cert, serving_key) = self_signed_serving_cert(&[]).unwrap();
    let mut config = ProxierConfig::new(
        BINDING,
        "127.0.0.1:0".parse().unwrap(),
        serving_cert,
        serving_key,
    );
    config.secret_namespace = SECRET_NS.to_owned();
    config.token_review = true;
    config.vnode_metrics_port = Some(port);
    let bound = Proxier::new(env.computing.client(), config)
        .bind()
        .await
        .unwrap();
    let metrics = bound.vnode_metrics_addr().unwrap();
    assert_eq!(metrics.port(), port);
    tokio::spawn(bound.run(env._sandboxes.token().clone()));

    // The worker's kubelet has series of the physical pod under its physical names.
    let (status, body) = plain_get(metrics, &format!("/{VIRTUAL_NODE}/metrics")).await;
    assert_eq!(status, 200, "{body}");
    let series: Vec<&str> = body.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(
        series
            .iter()
            .any(|l| l.starts_with("container_cpu_usage_seconds_total{")),
        "{body}"
    );
    for line in &series {
        assert!(line.contains("pod=\"web\""), "{line}");
        assert!(line.contains("namespace=\"default\""), "{line}");
        assert!(line.contains(&format!("node=\"{VIRTUAL_NODE}\"")), "{line}");
        assert!(!line.contains(PHYSICAL_POD), "{line}");
    }
    let (status, body) = plain_get(metrics, "/vnode-unknown/metrics").await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("vnode-unknown"), "{body}");
    let (status, _) = plain_get(metrics, "/nothing").await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn refusals_say_what_happened_in_words() {
    let env = env().await;
    let client = env.apiserver().await;

    // A pod that failed before it ran (its physical pod removed by the scheduling timeout).
    let failed = add_virtual_pod(&env.c, "never-ran", VIRTUAL_NODE, Some("never-ran-0123")).await;
    let mut failed = failed;
    failed.status = Some(from_json(
        json!({"phase": "Failed", "reason": "Unschedulable",
        "message": "the physical pod found no node in the worker within 5m0s"}),
    ));
    Api::<Pod>::namespaced(env.c.clone(), "default")
        .replace_status("never-ran", &PostParams::default(), &failed)
        .await
        .unwrap();
    let (status, body) = get(&client, "/containerLogs/default/never-ran/app")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(
        body.contains("pod default/never-ran failed before it could run")
            && body.contains("found no node in the worker"),
        "{body}"
    );

    // The worker cannot reach its kubelet: a sentence, not a Status in JSON.
    env.workers[0].stop_node(PHYSICAL_NODE);
    let (status, body) = get(&client, "/containerLogs/default/web/app")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(!body.trim_start().starts_with('{'), "{body}");
    assert!(
        body.contains(&format!("physical pod {MOUNT_NS}/{PHYSICAL_POD}"))
            && body.contains("error dialing backend"),
        "{body}"
    );

    // No credentials: the 401 says it is the virtual node's kubelet endpoint refusing.
    let anonymous = env.client(Identity::Anonymous).await;
    let (status, body) = get(&anonymous, "/containerLogs/default/web/app")
        .await
        .unwrap();
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        body.contains("kubelet endpoint of the virtual nodes of ClusterBinding b1"),
        "{body}"
    );
}
