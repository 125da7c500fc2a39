//! The API server reaches node kubelet endpoints: pods/log, exec, attach and portforward through
//! the simulated kubelet API of a served cluster, and through an external kubelet-like server.

#![allow(clippy::unwrap_used)]

mod common;

use common::eventually;
use futures::{AsyncBufReadExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams, LogParams, Patch, PatchParams, PostParams};
use kube_sandbox::{Cluster, ClusterOptions, ServeOptions, Served, SimNode, UserInfo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn fast() -> ClusterOptions {
    ClusterOptions {
        pod_start_delay: Duration::from_millis(20),
        ..Default::default()
    }
}

fn pod(name: &str, spec: serde_json::Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

/// A TLS-served cluster with one simulated node running pod `app-1` (container `app`).
async fn running_cluster(name: &str) -> (Cluster, Served, kube::Client) {
    let cluster = Cluster::with_options(name, fast());
    cluster.add_node(&SimNode::new("n1", "4", "8Gi")).unwrap();
    let served = cluster
        .serve(ServeOptions {
            tls: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let client = served.client().await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let spec = json!({"containers": [{"name": "app", "image": "busybox:1",
        "command": ["sh", "-c", "echo first; echo second; sleep 3600"],
        "env": [{"name": "MODE", "value": "demo"},
                {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]});
    pods.create(&PostParams::default(), &pod("app-1", spec))
        .await
        .unwrap();
    let p = pods.clone();
    eventually("app-1 running", || {
        let p = p.clone();
        async move {
            p.get("app-1")
                .await
                .unwrap()
                .status
                .and_then(|s| s.phase)
                .as_deref()
                == Some("Running")
        }
    })
    .await;
    (cluster, served, client)
}

async fn exec(pods: &Api<Pod>, command: &[&str]) -> (String, String, Status) {
    let mut attached = pods
        .exec(
            "app-1",
            command.to_vec(),
            &AttachParams::default().stdout(true).stderr(true),
        )
        .await
        .unwrap();
    let status = attached.take_status().unwrap();
    let mut stdout = attached.stdout().unwrap();
    let mut stderr = attached.stderr().unwrap();
    let (mut out, mut err) = (String::new(), String::new());
    let (a, b) = tokio::join!(
        stdout.read_to_string(&mut out),
        stderr.read_to_string(&mut err)
    );
    a.unwrap();
    b.unwrap();
    let status = status.await.unwrap();
    attached.join().await.unwrap();
    (out, err, status)
}

#[tokio::test]
async fn sim_nodes_advertise_the_kubelet_listener_and_logs_flow_through_it() {
    let (cluster, served, client) = running_cluster("kubelet-logs").await;
    let node: Node = Api::all(client.clone()).get("n1").await.unwrap();
    let status = node.status.unwrap();
    let internal = status
        .addresses
        .unwrap()
        .into_iter()
        .find(|a| a.type_ == "InternalIP")
        .unwrap();
    assert_eq!(internal.address, served.kubelet_addr.ip().to_string());
    assert_eq!(
        status
            .daemon_endpoints
            .unwrap()
            .kubelet_endpoint
            .unwrap()
            .port,
        i32::from(served.kubelet_addr.port())
    );

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let all = pods.logs("app-1", &LogParams::default()).await.unwrap();
    assert!(all.ends_with("first\nsecond\n"), "{all}");
    let tail = pods
        .logs(
            "app-1",
            &LogParams {
                tail_lines: Some(1),
                container: Some("app".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(tail, "second\n");
    // The in-process client reaches the same kubelet listener while the cluster is served.
    let in_process: Api<Pod> = Api::namespaced(cluster.client(), "default");
    assert_eq!(
        in_process
            .logs(
                "app-1",
                &LogParams {
                    tail_lines: Some(1),
                    ..Default::default()
                }
            )
            .await
            .unwrap(),
        "second\n"
    );

    let stream = pods
        .log_stream(
            "app-1",
            &LogParams {
                follow: true,
                tail_lines: Some(1),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let mut lines = stream.lines();
    assert_eq!(lines.try_next().await.unwrap().as_deref(), Some("second"));
    cluster
        .kubelet()
        .append_log("default", "app-1", "app", "third");
    let next = tokio::time::timeout(Duration::from_secs(5), lines.try_next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(next.as_deref(), Some("third"));

    let previous = pods
        .logs(
            "app-1",
            &LogParams {
                previous: true,
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    match previous {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 400);
            assert!(s.message.contains("previous terminated container"), "{s:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn exec_and_attach_run_over_websocket() {
    let (_cluster, _served, client) = running_cluster("kubelet-exec").await;
    let pods: Api<Pod> = Api::namespaced(client, "default");

    let (out, err, status) = exec(&pods, &["echo", "hello"]).await;
    assert_eq!((out.as_str(), err.as_str()), ("hello\n", ""));
    assert_eq!(status.status, Some("Success".to_string()));

    let (out, _, _) = exec(&pods, &["hostname"]).await;
    assert_eq!(out, "app-1\n");

    let (out, _, _) = exec(&pods, &["env"]).await;
    assert_eq!(out, "HOSTNAME=app-1\nMODE=demo\n");

    let (out, err, status) = exec(&pods, &["frobnicate", "--now"]).await;
    assert_eq!(out, "");
    assert!(
        err.contains("\"frobnicate\": executable file not found"),
        "{err}"
    );
    assert_eq!(status.status, Some("Failure".to_string()));
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    let causes = status.details.unwrap().causes.unwrap();
    assert_eq!(
        (causes[0].reason.as_deref(), causes[0].message.as_deref()),
        (Some("ExitCode"), Some("127"))
    );

    let mut attached = pods
        .attach("app-1", &AttachParams::default().stdout(true).stderr(false))
        .await
        .unwrap();
    let mut out = String::new();
    attached
        .stdout()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    assert!(out.ends_with("first\nsecond\n"), "{out}");
    attached.join().await.unwrap();
}

#[tokio::test]
async fn port_forward_echoes_bytes_both_ways() {
    let (_cluster, _served, client) = running_cluster("kubelet-pf").await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let mut forwarder = pods.portforward("app-1", &[8080, 9090]).await.unwrap();
    for (port, payload) in [(8080u16, &b"ping over 8080"[..]), (9090, b"and 9090")] {
        let mut stream = forwarder.take_stream(port).unwrap();
        stream.write_all(payload).await.unwrap();
        let mut back = vec![0u8; payload.len()];
        tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut back))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(back, payload);
        drop(stream);
    }
    tokio::time::timeout(Duration::from_secs(5), forwarder.join())
        .await
        .unwrap()
        .unwrap();
}

/// A kubelet-like HTTPS server that requires a client certificate signed by `ca_pem` and
/// answers every request with its path and the user the certificate names.
async fn external_kubelet(served: &Served) -> std::net::SocketAddr {
    let pki = served.pki().clone();
    let serving = pki
        .issue_serving_certificate("external-kubelet", &["127.0.0.1"])
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(served.cluster_ca_pem().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![serving.cert_der().clone()],
            PrivateKeyDer::from_pem_slice(serving.key_pem.as_bytes()).unwrap(),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let pki = pki.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let user = tls
                    .get_ref()
                    .1
                    .peer_certificates()
                    .map(|chain| pki.authenticate_certificate(chain))
                    .map(|u| u.map(|u| format!("{} {:?}", u.username, u.groups)));
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head);
                let target = head.split(' ').nth(1).unwrap_or("").to_string();
                let body = format!("external kubelet: {target} as {user:?}\n");
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(response.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    addr
}

async fn node_at(client: &kube::Client, name: &str, ip: &str, port: u16) {
    let nodes: Api<Node> = Api::all(client.clone());
    let node: Node = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    nodes.create(&PostParams::default(), &node).await.unwrap();
    nodes
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "addresses": [{"type": "InternalIP", "address": ip}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}
            }})),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn pods_on_external_nodes_are_answered_by_their_kubelet_endpoint() {
    let (_cluster, served, client) = running_cluster("kubelet-external").await;
    let addr = external_kubelet(&served).await;
    node_at(&client, "virtual-1", "127.0.0.1", addr.port()).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.create(
        &PostParams::default(),
        &pod(
            "remote",
            json!({"nodeName": "virtual-1", "containers": [{"name": "web", "image": "nginx:1"}]}),
        ),
    )
    .await
    .unwrap();
    let text = pods
        .logs(
            "remote",
            &LogParams {
                tail_lines: Some(3),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(
        text.contains("/containerLogs/default/remote/web?tailLines=3"),
        "{text}"
    );
    // The API server presented its kubelet-client certificate, signed by the cluster CA.
    assert!(
        text.contains("Ok(\"kube-apiserver-kubelet-client [\\\"system:masters\\\""),
        "{text}"
    );

    // A node whose kubelet does not listen: the cause comes back as a 500 Status.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    node_at(&client, "gone-1", "127.0.0.1", closed_port).await;
    pods.create(
        &PostParams::default(),
        &pod(
            "orphan",
            json!({"nodeName": "gone-1", "containers": [{"name": "web", "image": "nginx:1"}]}),
        ),
    )
    .await
    .unwrap();
    match pods
        .logs("orphan", &LogParams::default())
        .await
        .unwrap_err()
    {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 500);
            assert!(s.message.contains("error dialing backend"), "{s:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn errors_are_statuses() {
    let (_cluster, _served, client) = running_cluster("kubelet-errors").await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    // Not scheduled by the simulated scheduler: no node.
    pods.create(
        &PostParams::default(),
        &pod(
            "unplaced",
            json!({"schedulerName": "elsewhere", "containers": [{"name": "c", "image": "x:1"}]}),
        ),
    )
    .await
    .unwrap();
    let api_error = |e: kube::Error| match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("{other:?}"),
    };
    let (code, message) = api_error(
        pods.logs("unplaced", &LogParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 400);
    assert_eq!(message, "pod unplaced does not have a host assigned");
    let (code, _) = api_error(failure(
        pods.exec("unplaced", ["echo"], &AttachParams::default())
            .await,
    ));
    assert_eq!(code, 400);
    let (code, message) = api_error(
        pods.logs("missing", &LogParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (code, message.as_str()),
        (404, "pods \"missing\" not found")
    );
    let (code, _) = api_error(failure(
        pods.exec("missing", ["echo"], &AttachParams::default())
            .await,
    ));
    assert_eq!(code, 404);
    let (code, message) = api_error(failure(
        pods.exec(
            "app-1",
            ["echo"],
            &AttachParams::default().container("nope"),
        )
        .await,
    ));
    assert_eq!(
        (code, message.as_str()),
        (400, "container nope is not valid for pod app-1")
    );
}

#[tokio::test]
async fn streaming_subresources_follow_rbac() {
    let (cluster, served, admin) = running_cluster("kubelet-rbac").await;
    cluster
        .auth()
        .add_token("reader-token", UserInfo::new("reader", &[]));
    cluster
        .auth()
        .add_token("operator-token", UserInfo::new("operator", &[]));
    let apply = |kind: &str, body: serde_json::Value| {
        let admin = admin.clone();
        let kind = kind.to_string();
        async move {
            let api: Api<kube::api::DynamicObject> = Api::namespaced_with(
                admin,
                "default",
                &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
                    "rbac.authorization.k8s.io",
                    "v1",
                    &kind,
                )),
            );
            api.create(
                &PostParams::default(),
                &serde_json::from_value(body).unwrap(),
            )
            .await
            .unwrap();
        }
    };
    for (user, verbs) in [
        ("reader", json!(["get"])),
        ("operator", json!(["get", "create"])),
    ] {
        apply(
            "Role",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": user},
                "rules": [{"apiGroups": [""], "resources": ["pods/log", "pods/exec"], "verbs": verbs}]}),
        )
        .await;
        apply(
            "RoleBinding",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": user},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
                "subjects": [{"kind": "User", "name": user}]}),
        )
        .await;
    }
    let as_user = |token: &str| {
        let mut kubeconfig = served.kubeconfig().unwrap();
        kubeconfig.auth_infos[0].auth_info.as_mut().unwrap().token = Some(token.to_string().into());
        async move {
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .unwrap();
            Api::<Pod>::namespaced(kube::Client::try_from(config).unwrap(), "default")
        }
    };
    let reader = as_user("reader-token").await;
    let operator = as_user("operator-token").await;
    assert!(reader.logs("app-1", &LogParams::default()).await.is_ok());
    match failure(
        reader
            .exec("app-1", ["echo", "x"], &AttachParams::default())
            .await,
    ) {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 403);
            assert!(
                s.message.contains("cannot create resource \"pods/exec\""),
                "{s:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    let (out, _, _) = exec(&operator, &["echo", "allowed"]).await;
    assert_eq!(out, "allowed\n");
}

#[tokio::test]
async fn the_served_api_authenticates_client_certificates() {
    let (cluster, served, _) = running_cluster("kubelet-x509").await;
    let pki = cluster.pki().unwrap();
    assert_eq!(pki.ca_pem(), served.cluster_ca_pem());
    assert_eq!(served.ca_pem.as_deref(), Some(pki.ca_pem()));

    let master = pki
        .issue_client_certificate("ops", Some("system:masters"))
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(
        served.client_with_certificate(&master).await.unwrap(),
        "default",
    );
    assert_eq!(pods.list(&Default::default()).await.unwrap().items.len(), 1);

    let alice = pki.issue_client_certificate("alice", None).unwrap();
    let pods: Api<Pod> = Api::namespaced(
        served.client_with_certificate(&alice).await.unwrap(),
        "default",
    );
    match pods.list(&Default::default()).await.unwrap_err() {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 403);
            assert!(s.message.contains("User \"alice\""), "{s:?}");
        }
        other => panic!("{other:?}"),
    }

    let stranger = kube_sandbox::ClusterPki::new("elsewhere")
        .unwrap()
        .issue_client_certificate("mallory", Some("system:masters"))
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(
        served.client_with_certificate(&stranger).await.unwrap(),
        "default",
    );
    match pods.list(&Default::default()).await.unwrap_err() {
        kube::Error::Api(s) => assert_eq!(s.code, 401),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_simulated_kubelet_requires_a_trusted_caller() {
    let (cluster, served, _) = running_cluster("kubelet-direct").await;
    let pki = cluster.pki().unwrap();
    let call = |identity: Option<kube_sandbox::IssuedCertificate>| {
        let ca = served.cluster_ca_pem().to_string();
        let base = format!("https://{}", served.kubelet_addr);
        async move {
            let mut config = kube::Config::new(base.parse().unwrap());
            config.root_cert = Some(vec![
                CertificateDer::from_pem_slice(ca.as_bytes())
                    .unwrap()
                    .to_vec(),
            ]);
            config.default_retry = false;
            if let Some(identity) = identity {
                config.auth_info = serde_json::from_value(json!({
                    "client-certificate-data": base64_encode(&identity.cert_pem),
                    "client-key-data": base64_encode(&identity.key_pem),
                }))
                .unwrap();
            }
            let client = kube::Client::try_from(config).unwrap();
            let request = http::Request::get("/containerLogs/default/app-1/app")
                .body(kube::client::Body::empty())
                .unwrap();
            let response = client.send(request).await.unwrap();
            let status = response.status().as_u16();
            let body = http_body_util::BodyExt::collect(response.into_body())
                .await
                .unwrap()
                .to_bytes();
            (status, String::from_utf8_lossy(&body).into_owned())
        }
    };
    let (status, body) = call(Some(pki.kubelet_client_certificate().clone())).await;
    assert_eq!(status, 200);
    assert!(body.ends_with("first\nsecond\n"), "{body}");
    let (status, _) = call(None).await;
    assert_eq!(status, 401);
    let nobody = pki.issue_client_certificate("nobody", None).unwrap();
    let (status, body) = call(Some(nobody)).await;
    assert_eq!(status, 403);
    assert!(body.contains("user=nobody"), "{body}");
    let stranger = kube_sandbox::ClusterPki::new("elsewhere")
        .unwrap()
        .issue_client_certificate("kube-apiserver-kubelet-client", Some("system:masters"))
        .unwrap();
    let (status, _) = call(Some(stranger)).await;
    assert_eq!(status, 401);
}

/// The error of a call expected to fail.
fn failure<T>(result: Result<T, kube::Error>) -> kube::Error {
    match result {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

fn base64_encode(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}
