//! The per-caller limit (`kairship apiserver --per-caller-qps`) over real HTTP: a caller past
//! its burst is answered 429 with `Retry-After` (a Kubernetes `Status` on the native proxy,
//! `{code, message}` on REST) and nothing reaches the instance, while another caller is not
//! held back.

#![allow(clippy::unwrap_used)]

#[path = "common/api.rs"]
mod api_fixture;
mod common;

use std::sync::Arc;

use api_fixture::{ADMIN, ApiEnv, Everything, P, Tokens, VIEWER};
use http::StatusCode;
use k8s_openapi::api::core::v1::ConfigMap;
use kairship_core::limit::Limit;
use kube::Api;
use kube::api::ListParams;
use serde_json::{Value, json};

const INSTANCE: &str = "limited";

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
        "data": {"k": "v"}})
}

/// `Retry-After` of a response as seconds.
fn retry_after(response: &reqwest::Response) -> u64 {
    response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_caller_is_limited_and_another_is_not() {
    // Two requests at once, then one per 1,000 s: no token comes back while the test runs.
    let env = ApiEnv::builder(INSTANCE)
        .callers(Arc::new(Tokens), Arc::new(Everything))
        .with_proxy()
        .per_caller_limit(Limit::new(0.001, 2).unwrap())
        .start()
        .await;
    let proxy = format!(
        "{}{P}/instances/{INSTANCE}/proxy/api/v1/namespaces/default/configmaps",
        env.base
    );
    let post = |token: &'static str, name: &str| {
        env.http
            .post(&proxy)
            .bearer_auth(token)
            .json(&config_map(name))
            .send()
    };

    // The admin's burst goes through the proxy; the next request is refused.
    for name in ["a-1", "a-2"] {
        let response = post(ADMIN, name).await.unwrap();
        assert_eq!(response.status(), StatusCode::CREATED, "{name}");
    }
    let refused = post(ADMIN, "a-3").await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait = retry_after(&refused);
    assert!(wait >= 1, "{wait}");
    assert_eq!(
        refused.headers()["content-type"],
        "application/json",
        "a Status, as kube-apiserver's errors"
    );
    let status: kube::core::Status = refused.json().await.unwrap();
    assert_eq!(
        (status.code, status.reason.as_str(), status.status),
        (
            429,
            "TooManyRequests",
            Some(kube::core::response::StatusSummary::Failure)
        )
    );
    assert_eq!(
        status.details.unwrap().retry_after_seconds,
        u32::try_from(wait).unwrap()
    );
    // Reads through the proxy count too.
    let read = env
        .http
        .get(&proxy)
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), StatusCode::TOO_MANY_REQUESTS);

    // Another caller has a bucket of its own.
    let other = post(VIEWER, "v-1").await.unwrap();
    assert_eq!(other.status(), StatusCode::CREATED);

    // REST: the admin's writes share the admin's bucket and are refused as {code, message};
    // reads are not limited.
    let rest = format!("{P}/instances/{INSTANCE}/namespaces/default/configmaps");
    let (code, body) = env
        .call_as("POST", &rest, ADMIN, Some(config_map("a-rest")))
        .await;
    assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(body["code"], 8, "RESOURCE_EXHAUSTED: {body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("Too many requests"),
        "{body}"
    );
    let (code, _) = env.call_as("GET", &rest, ADMIN, None).await;
    assert_eq!(code, StatusCode::OK);
    // The viewer's last token goes to a REST write, and then it is limited as well.
    let (code, body) = env
        .call_as("POST", &rest, VIEWER, Some(config_map("v-rest")))
        .await;
    assert!(code.is_success(), "{code}: {body}");
    let response = env
        .http
        .post(format!("{}{rest}", env.base))
        .bearer_auth(VIEWER)
        .json(&config_map("v-rest-2"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(retry_after(&response) >= 1);

    // Refused writes never reached the instance; the others are stored once.
    let mut stored: Vec<String> = Api::<ConfigMap>::namespaced(env.instance.client(), "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|name| name.starts_with("a-") || name.starts_with("v-"))
        .collect();
    stored.sort();
    assert_eq!(stored, ["a-1", "a-2", "v-1", "v-rest"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_limit_nobody_is_limited() {
    let env = ApiEnv::builder(INSTANCE)
        .callers(Arc::new(Tokens), Arc::new(Everything))
        .with_proxy()
        .start()
        .await;
    let rest = format!("{P}/instances/{INSTANCE}/namespaces/default/configmaps");
    for i in 0..5 {
        let (code, body) = env
            .call_as("POST", &rest, ADMIN, Some(config_map(&format!("c-{i}"))))
            .await;
        assert!(code.is_success(), "{i}: {code} {body}");
    }
}
