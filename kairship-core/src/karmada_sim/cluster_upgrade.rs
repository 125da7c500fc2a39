//! Connection upgrades through the emulated cluster proxy (`kubectl exec`, `attach`,
//! `port-forward` of a member pod through `clusters/{name}/proxy`). Karmada's proxy passes
//! them on with k8s.io/apimachinery's `UpgradeAwareHandler` (karmada `pkg/util/proxy/proxy.go`,
//! `ConnectCluster` -> `newProxyHandler`): the upgrade request goes to the member with the
//! impersonator's token and the caller impersonated, the member's answer comes back, and a
//! `101` splices both connections.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::StatusCode;
use kube_sandbox::ApiError;
use kube_sandbox::UserInfo;

use super::cluster_connection::{Connection, impersonation};
use crate::proxy::upgrade::{UPGRADE_HEADERS, splice};

/// Request headers passed on besides the upgrade's own.
const PASSED: [&str; 2] = ["user-agent", "accept"];

/// Clients by endpoint, CA bundle and token.
type Clients = Mutex<HashMap<(String, Option<String>, String), kube::Client>>;

/// A kube client of the member (upgrades need hyper's connection, which reqwest keeps).
async fn client(connection: &Connection) -> Result<kube::Client, ApiError> {
    static CLIENTS: OnceLock<Clients> = OnceLock::new();
    let key = (
        connection.endpoint.clone(),
        connection.ca_pem.clone(),
        connection.token.clone(),
    );
    let clients = CLIENTS.get_or_init(Default::default);
    if let Some(client) = clients.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(client.clone());
    }
    let mut cluster = serde_json::json!({"server": connection.endpoint});
    if let Some(ca) = &connection.ca_pem {
        cluster["certificate-authority-data"] = STANDARD.encode(ca).into();
    }
    let kubeconfig: kube::config::Kubeconfig = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "member", "cluster": cluster}],
        "users": [{"name": "impersonator", "user": {"token": connection.token}}],
        "contexts": [{"name": "member", "context": {"cluster": "member", "user": "impersonator"}}],
        "current-context": "member",
    }))
    .map_err(|e| ApiError::internal(format!("the member's client: {e}")))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .map_err(|e| ApiError::internal(format!("the member's client: {e}")))?;
    let client = kube::Client::try_from(config)
        .map_err(|e| ApiError::internal(format!("the member's client: {e}")))?;
    clients
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, client.clone());
    Ok(client)
}

/// Serves an upgrade request for member `name` at `path` as `user`.
pub(super) async fn serve_upgrade(
    name: &str,
    connection: &Connection,
    user: &UserInfo,
    path: &str,
    mut request: Request,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<Response, ApiError> {
    let client_side = hyper::upgrade::on(&mut request);
    let target = match request.uri().query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    };
    let mut builder = http::Request::builder()
        .method(request.method().clone())
        .uri(target);
    for header in UPGRADE_HEADERS.iter().chain(PASSED.iter()) {
        for value in request.headers().get_all(*header) {
            builder = builder.header(*header, value);
        }
    }
    for (header, value) in impersonation(&user.username, &user.groups) {
        builder = builder.header(header, value);
    }
    let outgoing = builder
        .body(kube::client::Body::empty())
        .map_err(|e| ApiError::internal(format!("the upgrade request: {e}")))?;
    let mut answer = client(connection)
        .await?
        .send(outgoing)
        .await
        .map_err(|e| {
            ApiError::internal(format!(
                "error trying to reach cluster {name} at {}: {}",
                connection.endpoint,
                kube_kit::client::describe_kube_error(&e)
            ))
        })?;
    let status = answer.status();
    let mut response = Response::builder().status(status);
    for (header, value) in answer.headers() {
        let keep = status == StatusCode::SWITCHING_PROTOCOLS
            || !matches!(
                header.as_str(),
                "connection" | "transfer-encoding" | "content-length"
            );
        if keep {
            response = response.header(header, value);
        }
    }
    if status != StatusCode::SWITCHING_PROTOCOLS {
        return response.body(Body::new(answer.into_body())).map_err(|e| {
            ApiError::internal(format!("relaying the answer of cluster {name}: {e}"))
        });
    }
    let backend_side = hyper::upgrade::on(&mut answer);
    tokio::spawn(splice(client_side, backend_side, async move {
        shutdown.cancelled().await;
    }));
    response
        .body(Body::empty())
        .map_err(|e| ApiError::internal(format!("relaying the answer of cluster {name}: {e}")))
}
