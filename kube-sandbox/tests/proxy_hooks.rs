//! An embedder's handler of a `proxy` subresource, over loopback HTTP: the API server
//! authenticates, impersonates and authorizes `{resource}/proxy` with the verb of the method
//! before the handler runs; the handler gets the acting user, the object's name and the path
//! after `proxy`, and its answer is the response.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use axum::response::IntoResponse;
use kube_sandbox::{Cluster, ClusterOptions, ProxyFuture, ProxyRequest, ServeOptions, UserInfo};
use serde_json::{Value, json};

/// `(status, body)` of a request with `token` over HTTP.
async fn call(
    config: &kube::Config,
    token: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let mut config = config.clone();
    config.auth_info.token = Some(token.to_owned().into());
    let client = kube::Client::try_from(config).unwrap();
    let mut request = http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Vec::new()).unwrap();
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn post(client: &kube::Client, path: &str, object: Value) {
    let request = http::Request::post(path)
        .header("content-type", "application/json")
        .body(object.to_string().into_bytes())
        .unwrap();
    client.request_text(request).await.unwrap();
}

/// Answers what it was handed.
fn echo(request: ProxyRequest) -> ProxyFuture {
    Box::pin(async move {
        let body = json!({
            "user": request.user.username,
            "name": request.name,
            "path": request.path,
            "query": request.request.uri().query(),
            "method": request.request.method().as_str(),
        });
        Ok(axum::Json(body).into_response())
    })
}

#[tokio::test]
async fn proxy_handlers_run_after_the_api_server_authorized_the_request() {
    let options = ClusterOptions {
        proxy_handlers: kube_sandbox::ProxyHandlers::default().with(
            "",
            "configmaps",
            Arc::new(echo),
        ),
        ..ClusterOptions::default()
    };
    let cluster = Cluster::with_options("hooks", options);
    let admin = cluster.client();
    for (user, verbs) in [("reader", json!(["get"])), ("boss", json!(["impersonate"]))] {
        cluster
            .auth()
            .add_token(&format!("{user}-token"), UserInfo::new(user, &[]));
        let rules = if user == "reader" {
            json!([{"apiGroups": [""], "resources": ["configmaps/proxy"], "verbs": verbs}])
        } else {
            json!([{"apiGroups": [""], "resources": ["users"], "verbs": verbs}])
        };
        post(
            &admin,
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            json!({"metadata": {"name": user}, "rules": rules}),
        )
        .await;
        post(&admin, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json!({
            "metadata": {"name": user},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]
        }))
        .await;
    }
    let served = cluster.serve(ServeOptions::default()).await.unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(served.kubeconfig().unwrap(), &Default::default())
            .await
            .unwrap();
    let path = "/api/v1/namespaces/default/configmaps/cfg/proxy/some/where?x=1";

    // Allowed to `get` configmaps/proxy: the handler answers, with the path after `proxy`.
    let (code, body) = call(&config, "reader-token", "GET", path, &[]).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body,
        json!({"user": "reader", "name": "cfg", "path": "/some/where", "query": "x=1", "method": "GET"})
    );
    // A POST needs `create`: refused in kube-apiserver's words, the handler never runs.
    let (code, body) = call(&config, "reader-token", "POST", path, &[]).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["kind"], "Status");
    assert_eq!(
        body["message"],
        "configmaps \"cfg\" is forbidden: User \"reader\" cannot create resource \"configmaps/proxy\" in API group \"\" in the namespace \"default\""
    );
    // Impersonation applies first: the handler sees the impersonated user.
    let (code, body) = call(
        &config,
        "boss-token",
        "GET",
        path,
        &[("Impersonate-User", "reader")],
    )
    .await;
    assert_eq!(
        (code, body["user"].as_str()),
        (200, Some("reader")),
        "{body}"
    );
    // Without a handler, the subresource is not served.
    let (code, body) = call(
        &config,
        cluster.admin_token(),
        "GET",
        "/api/v1/namespaces/default/secrets/s/proxy/x",
        &[],
    )
    .await;
    assert_eq!(code, 404, "{body}");
}
