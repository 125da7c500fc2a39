//! Helpers shared by the sandbox end-to-end tests of this crate.
#![allow(dead_code, clippy::unwrap_used)]

use kube::Client;
use kube_sandbox::Served;
use serde_json::Value;

/// Bounded waits: every 25 ms for up to 30 s, or with a suite's own limit and interval.
#[allow(unused_imports)]
pub use kube_sandbox::testing::{eventually, eventually_every};

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
