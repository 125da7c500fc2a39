//! Clients from kubeconfig files, Secrets and TLS against a served kube-sandbox; the user
//! agent and the QPS limit in the built stack; errors that never show the token.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::HeaderMap;
use axum::routing::get;
use common::quiet_cluster;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kube_kit::client::{
    ClientError, ClientOptions, client_from_kubeconfig, client_from_kubeconfig_yaml,
    client_from_secret, user_agent,
};
use kube_sandbox::ServeOptions;

fn options() -> ClientOptions {
    ClientOptions::new(user_agent("kube-kit-test", "1.2.3"))
}

async fn namespaces(client: kube::Client) -> Vec<String> {
    Api::<Namespace>::all(client)
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|ns| ns.metadata.name)
        .collect()
}

#[tokio::test]
async fn kubeconfig_file_and_tls_reach_the_served_cluster() {
    let cluster = quiet_cluster("files");
    let dir = std::env::temp_dir().join(format!("kube-kit-clients-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for tls in [false, true] {
        let path = dir.join(format!("kubeconfig-{tls}"));
        let served = cluster
            .serve(ServeOptions {
                tls,
                kubeconfig_path: Some(path.clone()),
                ..ServeOptions::default()
            })
            .await
            .unwrap();
        let client = client_from_kubeconfig(Some(&path), Some("files"), &options())
            .await
            .unwrap();
        assert!(
            namespaces(client).await.contains(&"default".to_owned()),
            "tls {tls}"
        );
        served.stop();
    }
    std::fs::remove_dir_all(&dir).unwrap();
    cluster.shutdown();
}

#[tokio::test]
async fn secret_kubeconfig_builds_a_worker_client_and_failures_name_the_secret() {
    let manager = quiet_cluster("manager");
    let worker = quiet_cluster("worker");
    let served = worker.serve(ServeOptions::default()).await.unwrap();
    let token = worker.admin_token().to_owned();
    let secrets = Api::<Secret>::namespaced(manager.client(), "default");
    let secret = |name: &str, key: &str, value: &str| Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            key.to_owned(),
            ByteString(value.as_bytes().to_vec()),
        )])),
        ..Secret::default()
    };
    for s in [
        secret("worker-1", "kubeconfig", &served.kubeconfig_yaml),
        secret("wrong-key", "config", &served.kubeconfig_yaml),
    ] {
        secrets.create(&PostParams::default(), &s).await.unwrap();
    }

    let client = client_from_secret(&manager.client(), "default", "worker-1", None, &options())
        .await
        .unwrap();
    let api = Api::<Namespace>::all(client);
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some("only-on-worker".into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    api.create(&PostParams::default(), &ns).await.unwrap();
    assert!(
        namespaces(worker.client())
            .await
            .contains(&"only-on-worker".to_owned())
    );
    assert!(
        !namespaces(manager.client())
            .await
            .contains(&"only-on-worker".to_owned())
    );

    let cases = [
        ("missing", None, "secret default/missing: not found"),
        (
            "wrong-key",
            None,
            "secret default/wrong-key: has no \"kubeconfig\" key",
        ),
        (
            "worker-1",
            Some("nope"),
            "kubeconfig secret default/worker-1 (context \"nope\"): context \"nope\" not found",
        ),
    ];
    for (name, context, want) in cases {
        let err = client_from_secret(&manager.client(), "default", name, context, &options())
            .await
            .err()
            .unwrap();
        let text = format!("{err} / {err:?}");
        assert!(text.contains(want), "want {want:?} in {text}");
        assert!(!text.contains(&token), "token leaked: {text}");
    }
    served.stop();
    manager.shutdown();
    worker.shutdown();
}

#[tokio::test]
async fn requests_carry_the_user_agent_and_the_limit_holds_them() {
    let seen: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
    let recorder = seen.clone();
    let app = Router::new().route(
        "/version",
        get(move |headers: HeaderMap| {
            let recorder = recorder.clone();
            async move {
                let agent = headers
                    .get("user-agent")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                let authorized = headers.get("authorization").is_some_and(|v| v == "Bearer t0k3n");
                recorder.lock().unwrap().push((agent, authorized));
                axum::Json(serde_json::json!({
                    "major": "1", "minor": "33", "gitVersion": "v1.33.0", "gitCommit": "", "gitTreeState": "",
                    "buildDate": "", "goVersion": "", "compiler": "", "platform": "linux/amd64"
                }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let yaml = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: http://{addr}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: t0k3n\n"
    );
    // One request per thousand seconds: the second request must be held back.
    let limited = options().with_rate_limit(0.001, 1);
    let client = client_from_kubeconfig_yaml(&yaml, None, &limited, "inline")
        .await
        .unwrap();
    client.apiserver_version().await.unwrap();
    assert_eq!(
        seen.lock().unwrap().clone(),
        [("kube-kit-test/1.2.3 (kube-kit)".to_owned(), true)]
    );
    let held = tokio::time::timeout(Duration::from_millis(300), client.apiserver_version()).await;
    assert!(held.is_err(), "the second request was not rate limited");
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "the held request never reached the server"
    );

    let unlimited =
        client_from_kubeconfig_yaml(&yaml, None, &options().with_rate_limit(0.0, 0), "inline")
            .await
            .unwrap();
    for _ in 0..5 {
        unlimited.apiserver_version().await.unwrap();
    }
    assert_eq!(seen.lock().unwrap().len(), 6);
}

#[tokio::test]
async fn missing_kubeconfig_file_is_named() {
    let err = client_from_kubeconfig(
        Some(std::path::Path::new("/nonexistent/kubeconfig")),
        Some("ctx"),
        &options(),
    )
    .await
    .err()
    .unwrap();
    assert!(matches!(err, ClientError::Kubeconfig { .. }));
    let text = err.to_string();
    assert!(
        text.contains("/nonexistent/kubeconfig") && text.contains("ctx"),
        "{text}"
    );
}
