//! Helpers shared by the sandbox end-to-end tests of this crate.
#![allow(dead_code, clippy::unwrap_used)]

use std::future::Future;
use std::time::Duration;

use kube::Client;
use kube_sandbox::Served;
use serde_json::Value;

/// Polls `check` every `interval` for up to `timeout`; panics naming `what` if it never holds.
pub async fn eventually_every<F, Fut>(
    what: &str,
    timeout: Duration,
    interval: Duration,
    mut check: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check().await {
            return;
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(interval).await;
    }
}

/// Polls `check` every 25 ms for up to 30 s; panics naming `what` if it never holds.
pub async fn eventually<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    eventually_every(
        what,
        Duration::from_secs(30),
        Duration::from_millis(25),
        check,
    )
    .await;
}

/// Deserializes a JSON literal into a typed object.
pub fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

/// A client of a served sandbox through its kubeconfig, without client-side rate limiting.
pub async fn http_client(served: &Served, user_agent: &str, name: &str) -> Client {
    let options = kube_kit::client::ClientOptions::new(user_agent).with_rate_limit(0.0, 0);
    kube_kit::client::client_from_kubeconfig_yaml(&served.kubeconfig_yaml, None, &options, name)
        .await
        .unwrap()
}
