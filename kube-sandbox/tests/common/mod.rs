//! Shared setup: every behaviour is checked both in-process and over loopback HTTP.

#![allow(dead_code)]

use kube_sandbox::{Cluster, ServeOptions, Served};

/// A cluster and a client reaching it one way or the other.
pub struct Target {
    pub how: &'static str,
    pub cluster: Cluster,
    pub client: kube::Client,
    pub served: Option<Served>,
}

/// The same fresh cluster reached in-process and a second one over HTTP.
pub async fn targets() -> Vec<Target> {
    let in_process = Cluster::new("in-process");
    let over_http = Cluster::new("over-http");
    let served = over_http
        .serve(ServeOptions::default())
        .await
        .expect("serve on loopback");
    let http_client = served.client().await.expect("client from kubeconfig");
    vec![
        Target {
            how: "in-process",
            client: in_process.client(),
            cluster: in_process,
            served: None,
        },
        Target {
            how: "http",
            client: http_client,
            cluster: over_http,
            served: Some(served),
        },
    ]
}

/// Sends a raw request and returns (status, JSON body).
pub async fn raw(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, serde_json::Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(body)
        .expect("request");
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("send");
    let status = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::String(
        String::from_utf8_lossy(&bytes).into_owned(),
    ));
    (status, value)
}

/// Waits (bounded, 10 s) until `check` holds, polling every 20 ms.
pub async fn eventually<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    kube_sandbox::testing::eventually_every(
        what,
        std::time::Duration::from_secs(10),
        std::time::Duration::from_millis(20),
        check,
    )
    .await;
}
