//! Kairship's REST API as a caller with a bearer token reaches it.

use reqwest::StatusCode;
use serde_json::Value;

use super::P;

/// `GET {base}{P}{path}` as the bearer of `token`: the answer's status and body (null where
/// the body is not JSON).
pub async fn rest_get(base: &str, token: &str, path: &str) -> (StatusCode, Value) {
    let resp = reqwest::Client::new()
        .get(format!("{base}{P}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// `POST {base}{P}{path}` of `body` as the bearer of `token`, which must succeed: the
/// answer's status.
pub async fn rest_create(base: &str, token: &str, path: &str, body: Value) -> StatusCode {
    let resp = reqwest::Client::new()
        .post(format!("{base}{P}{path}"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    assert!(
        status.is_success(),
        "{path}: {status} {}",
        resp.text().await.unwrap()
    );
    status
}

/// `GET {base}{P}{path}` as the bearer of `token`: the answer's JSON body, whatever its status.
pub async fn rest_json(base: &str, token: &str, path: &str) -> Value {
    reqwest::Client::new()
        .get(format!("{base}{P}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A server-side apply (`PATCH {base}{P}{path}` of the `yaml` manifest, `path` naming the
/// field manager) as the bearer of `token`, which must succeed: the object applied.
pub async fn rest_apply(base: &str, token: &str, path: &str, yaml: &str) -> Value {
    let resp = reqwest::Client::new()
        .patch(format!("{base}{P}{path}"))
        .bearer_auth(token)
        .header("content-type", "application/apply-patch+yaml")
        .body(yaml.to_owned())
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    assert!(status.is_success(), "{path}: {status} {text}");
    serde_json::from_str(&text).unwrap()
}
