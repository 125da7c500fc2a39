//! The role-binding webhook over HTTP against a sandbox host, and the HTTP global registry.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method};
use common::*;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kairship_core::controllers::role_binding_webhook::{PATH, WebhookState, router, serve};
use kairship_core::controllers::{GlobalRegistry, HttpRegistry, RegistryEntry};
use kairship_core::instance::Instance;
use kairship_core::webhook::{SIGNATURE_HEADER, TIMESTAMP_HEADER, sign};
use kube::Api;
use kube::api::{ListParams, PostParams};
use tokio_util::sync::CancellationToken;

const SECRET: &[u8] = b"shared-webhook-secret";

struct Call {
    body: String,
    timestamp: i64,
    signature: String,
}

fn signed(body: &str, timestamp: i64) -> Call {
    Call {
        body: body.to_owned(),
        timestamp,
        signature: sign(SECRET, timestamp, body.as_bytes()),
    }
}

async fn post(http: &reqwest::Client, url: &str, call: &Call) -> (u16, serde_json::Value) {
    let response = http
        .post(url)
        .header(TIMESTAMP_HEADER, call.timestamp.to_string())
        .header(SIGNATURE_HEADER, &call.signature)
        .header("content-type", "application/json")
        .body(call.body.clone())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

async fn bindings(host: &kube::Client) -> Vec<ClusterRoleBinding> {
    Api::<ClusterRoleBinding>::all(host.clone())
        .list(&ListParams::default().labels("kairship.io/instance=prod"))
        .await
        .unwrap()
        .items
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_calls_bind_and_unbind_others_are_refused() {
    let host = host().await;
    let hc = host.client();
    Api::<Instance>::all(hc.clone())
        .create(&PostParams::default(), &adopt_instance("prod"))
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}{PATH}", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let state = WebhookState::new(hc.clone(), SECRET, Duration::from_secs(300));
    tokio::spawn(serve(listener, router(state), None, stop.clone()));
    let http = reqwest::Client::new();

    let bind = r#"{"action":"bind","instance":"prod","role":"edit","subject":{"kind":"User","name":"alice@example.com"}}"#;
    let call = signed(bind, now());
    let (status, body) = post(&http, &url, &call).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["changed"], true);
    let created = bindings(&hc).await;
    assert_eq!(created.len(), 1);
    let binding = &created[0];
    assert_eq!(binding.role_ref.name, "kairship:instance:prod:edit");
    let subject = &binding.subjects.as_ref().unwrap()[0];
    assert_eq!(
        (subject.kind.as_str(), subject.name.as_str()),
        ("User", "alice@example.com")
    );
    let version = binding.metadata.resource_version.clone();

    // The same signed request again: a replay.
    let (status, body) = post(&http, &url, &call).await;
    assert_eq!(status, 401, "{body}");
    // Stale: signed correctly, but outside the window.
    let (status, _) = post(&http, &url, &signed(bind, now() - 3_600)).await;
    assert_eq!(status, 401);
    // Badly signed: another body under the first signature.
    let unbind = r#"{"action":"unbind","instance":"prod","role":"edit","subject":{"kind":"User","name":"alice@example.com"}}"#;
    let forged = Call {
        body: unbind.to_owned(),
        timestamp: call.timestamp,
        signature: call.signature.clone(),
    };
    let (status, _) = post(&http, &url, &forged).await;
    assert_eq!(status, 401);
    let wrong_key = Call {
        body: unbind.to_owned(),
        timestamp: now(),
        signature: sign(b"another-secret", now(), unbind.as_bytes()),
    };
    let (status, _) = post(&http, &url, &wrong_key).await;
    assert_eq!(status, 401);
    let after = bindings(&hc).await;
    assert_eq!(after.len(), 1, "refused calls change nothing");
    assert_eq!(after[0].metadata.resource_version, version);

    // A fresh signed bind of the same binding is idempotent.
    let (status, body) = post(&http, &url, &signed(bind, now() + 1)).await;
    assert_eq!(
        (status, body["changed"].clone()),
        (200, serde_json::json!(false))
    );
    // Unknown instance and malformed bodies.
    let other = r#"{"action":"bind","instance":"nope","role":"view","subject":{"kind":"Group","name":"ops"}}"#;
    assert_eq!(post(&http, &url, &signed(other, now())).await.0, 404);
    assert_eq!(post(&http, &url, &signed("{}", now())).await.0, 400);

    // Unbind, twice.
    let (status, body) = post(&http, &url, &signed(unbind, now())).await;
    assert_eq!(
        (status, body["changed"].clone()),
        (200, serde_json::json!(true))
    );
    assert!(bindings(&hc).await.is_empty());
    let (status, body) = post(&http, &url, &signed(unbind, now() + 2)).await;
    assert_eq!(
        (status, body["changed"].clone()),
        (200, serde_json::json!(false))
    );
    stop.cancel();
}

type Seen = Arc<Mutex<Vec<(String, String, Option<String>, String)>>>;

#[tokio::test]
async fn http_registry_puts_and_deletes() {
    let seen: Seen = Arc::default();
    async fn record(
        State(seen): State<Seen>,
        method: Method,
        Path(name): Path<String>,
        headers: HeaderMap,
        body: String,
    ) -> axum::http::StatusCode {
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        seen.lock()
            .unwrap()
            .push((method.to_string(), name.clone(), auth, body));
        if method == Method::DELETE && name == "unknown" {
            axum::http::StatusCode::NOT_FOUND
        } else if name == "broken" {
            axum::http::StatusCode::INTERNAL_SERVER_ERROR
        } else {
            axum::http::StatusCode::NO_CONTENT
        }
    }
    let app = axum::Router::new()
        .route("/iam/instances/{name}", axum::routing::any(record))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/iam/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let registry = HttpRegistry::new(&base, Some("t0ken".into()), Duration::from_secs(5)).unwrap();
    let entry = RegistryEntry::of(&adopt_instance("prod"));
    registry.announce(&entry).await.unwrap();
    registry.withdraw("prod").await.unwrap();
    registry.withdraw("unknown").await.unwrap();
    let mut broken = entry.clone();
    broken.name = "broken".into();
    let err = registry.announce(&broken).await.unwrap_err();
    assert!(err.to_string().contains("500"), "{err}");

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    assert_eq!((seen[0].0.as_str(), seen[0].1.as_str()), ("PUT", "prod"));
    assert_eq!(seen[0].2.as_deref(), Some("Bearer t0ken"));
    let sent: RegistryEntry = serde_json::from_str(&seen[0].3).unwrap();
    assert_eq!(sent, entry);
    assert_eq!((seen[1].0.as_str(), seen[1].1.as_str()), ("DELETE", "prod"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_serves_https() {
    kube_kit::client::install_crypto_provider();
    let host = host().await;
    let hc = host.client();
    Api::<Instance>::all(hc.clone())
        .create(&PostParams::default(), &adopt_instance("prod"))
        .await
        .unwrap();
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    let cert_pem = certified.cert.pem();
    let acceptor = kairship_core::controllers::role_binding_webhook::tls_acceptor(
        cert_pem.as_bytes(),
        certified.signing_key.serialize_pem().as_bytes(),
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "https://localhost:{}{PATH}",
        listener.local_addr().unwrap().port()
    );
    let stop = CancellationToken::new();
    let state = WebhookState::new(hc.clone(), SECRET, Duration::from_secs(300));
    tokio::spawn(serve(listener, router(state), Some(acceptor), stop.clone()));
    let http = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(cert_pem.as_bytes()).unwrap()])
        .build()
        .unwrap();
    let bind = r#"{"action":"bind","instance":"prod","role":"view","subject":{"kind":"Group","name":"auditors"}}"#;
    let (status, body) = post(&http, &url, &signed(bind, now())).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(bindings(&hc).await.len(), 1);
    // Plain HTTP to the TLS port gets no answer.
    let plain = reqwest::Client::new()
        .post(url.replace("https://", "http://"))
        .body(bind)
        .send()
        .await;
    assert!(plain.is_err() || !plain.unwrap().status().is_success());
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_does_not_lead_answers_503_and_spends_no_signature() {
    let host = host().await;
    let hc = host.client();
    Api::<Instance>::all(hc.clone())
        .create(&PostParams::default(), &adopt_instance("prod"))
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}{PATH}", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let state = WebhookState::new(hc.clone(), SECRET, Duration::from_secs(300));
    state.set_leading(false);
    tokio::spawn(serve(listener, router(state.clone()), None, stop.clone()));
    let http = reqwest::Client::new();

    let bind = r#"{"action":"bind","instance":"prod","role":"view","subject":{"kind":"User","name":"bob"}}"#;
    let call = signed(bind, now());
    let response = http
        .post(&url)
        .header(TIMESTAMP_HEADER, call.timestamp.to_string())
        .header(SIGNATURE_HEADER, &call.signature)
        .body(call.body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(response.headers()["retry-after"], "1");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["code"], 503);
    assert!(
        body["message"].as_str().unwrap().contains("not the leader"),
        "{body}"
    );
    assert!(bindings(&hc).await.is_empty(), "nothing written");

    // Once this replica leads, the same signed call is carried out: it was not spent.
    state.set_leading(true);
    let (status, body) = post(&http, &url, &call).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(bindings(&hc).await.len(), 1);
    stop.cancel();
}
