//! The aggregated cluster proxy of Karmada
//! (`/apis/cluster.karmada.io/v1alpha1/clusters/{name}/proxy/{path}`) for a kube-sandbox
//! cluster, as karmada-aggregated-apiserver serves it (`pkg/registry/cluster/storage/proxy.go`,
//! `pkg/util/proxy`):
//!
//! - the caller needs `clusters/proxy` with the verb of the HTTP method (checked by the sandbox
//!   before the handler runs);
//! - the Cluster must exist (`404 clusters.cluster.karmada.io "x" not found`);
//! - the request goes to `spec.apiEndpoint` + `{path}` with the query, trusting the `caBundle`
//!   of the `spec.secretRef` Secret;
//! - it carries the `token` of the `spec.impersonatorSecretRef` Secret and impersonates the
//!   caller (`Impersonate-User`, `Impersonate-Group` without `system:authenticated`), so the
//!   member's own RBAC decides and its audit trail names the caller. The caller is the user
//!   the request acts as, after kube-apiserver's impersonation filter: a gateway (Kairship)
//!   that impersonates its own callers at the instance gets each of them impersonated in the
//!   member, never itself;
//! - connection upgrades (`exec`, `attach`, `portforward` of member pods) are spliced through
//!   (the upgrade module);
//! - a missing Secret is `404 secrets "x" not found`; a Cluster without endpoint, impersonator
//!   or CA bundle, and a member that cannot be reached, are `500` with Karmada's message.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::Body;
use axum::response::Response;
use http::{HeaderName, HeaderValue, StatusCode};
use kube_sandbox::resources::GroupResource;
use kube_sandbox::state::ClusterState;
use kube_sandbox::{ApiError, ClusterOptions, ProxyFuture, ProxyHandlers, ProxyRequest};
use serde_json::Value;

/// Group of Karmada's Cluster resource.
pub const CLUSTER_GROUP: &str = "cluster.karmada.io";

pub use super::cluster_connection::{
    CA_BUNDLE_KEY, Connection, TOKEN_KEY, connection, impersonation,
};
/// Request headers passed on to the member; credentials and impersonation are set anew.
const FORWARDED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "user-agent",
    "if-none-match",
    "accept-encoding",
];

/// `options` with the cluster proxy served for `clusters/proxy`.
pub fn with_cluster_proxy(options: ClusterOptions) -> ClusterOptions {
    ClusterOptions {
        proxy_handlers: options.proxy_handlers.clone().with(
            CLUSTER_GROUP,
            "clusters",
            Arc::new(|request: ProxyRequest| -> ProxyFuture { Box::pin(serve(request)) }),
        ),
        ..options
    }
}

/// The proxy handlers alone (the `clusters/proxy` one).
pub fn handlers() -> ProxyHandlers {
    with_cluster_proxy(ClusterOptions::default()).proxy_handlers
}

/// Clients by endpoint and CA bundle.
type Clients = Mutex<HashMap<(String, Option<String>), reqwest::Client>>;

/// One HTTP client per endpoint and CA bundle.
fn client(connection: &Connection) -> Result<reqwest::Client, ApiError> {
    static CLIENTS: OnceLock<Clients> = OnceLock::new();
    let key = (connection.endpoint.clone(), connection.ca_pem.clone());
    let mut clients = CLIENTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(client) = clients.get(&key) {
        return Ok(client.clone());
    }
    let mut builder = reqwest::Client::builder();
    if let Some(ca) = &connection.ca_pem {
        let certificate = reqwest::Certificate::from_pem(ca.as_bytes())
            .map_err(|e| ApiError::internal(format!("the CA bundle is not PEM: {e}")))?;
        builder = builder.tls_certs_only([certificate]);
    }
    let client = builder
        .build()
        .map_err(|e| ApiError::internal(format!("building the member client: {e}")))?;
    clients.insert(key, client.clone());
    Ok(client)
}

fn read_object(
    state: &ClusterState,
    group: &str,
    plural: &str,
    ns: &str,
    name: &str,
) -> Option<Value> {
    state
        .store
        .get(&GroupResource::new(group, plural), ns, name)
        .map(|stored| stored.value.clone())
}

async fn serve(request: ProxyRequest) -> Result<Response, ApiError> {
    let ProxyRequest {
        state,
        user,
        name,
        path,
        request,
    } = request;
    let cluster = read_object(&state, CLUSTER_GROUP, "clusters", "", &name)
        .ok_or_else(|| ApiError::not_found(CLUSTER_GROUP, "clusters", &name))?;
    let connection = connection(&name, &cluster, |ns, secret| {
        read_object(&state, "", "secrets", ns, secret)
    })?;
    if crate::proxy::upgrade::is_upgrade(request.headers()) {
        let shutdown = state.shutdown.clone();
        return super::cluster_upgrade::serve_upgrade(
            &name,
            &connection,
            &user,
            &path,
            request,
            shutdown,
        )
        .await;
    }
    let mut url = format!("{}{path}", connection.endpoint.trim_end_matches('/'));
    if let Some(query) = request.uri().query() {
        url.push('?');
        url.push_str(query);
    }
    let method = request.method().clone();
    let mut headers = http::HeaderMap::new();
    for name in FORWARDED_HEADERS {
        for value in request.headers().get_all(*name) {
            headers.append(HeaderName::from_static(name), value.clone());
        }
    }
    let bearer = HeaderValue::from_str(&format!("Bearer {}", connection.token)).map_err(|_| {
        ApiError::internal(format!(
            "the impersonate token of cluster {name} is not a header value"
        ))
    })?;
    headers.insert(http::header::AUTHORIZATION, bearer);
    for (header, value) in impersonation(&user.username, &user.groups) {
        headers.append(header, value);
    }
    let limit = state.options.max_body_bytes;
    let body = axum::body::to_bytes(request.into_body(), limit)
        .await
        .map_err(|_| ApiError::too_large(limit))?;
    let answer = client(&connection)?
        .request(method, &url)
        .headers(headers)
        .body(body)
        .send()
        .await
        .map_err(|e| {
            ApiError::internal(format!(
                "error trying to reach cluster {name} at {}: {}",
                connection.endpoint,
                describe(&e)
            ))
        })?;
    let status =
        StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = Response::builder().status(status);
    for (header, value) in answer.headers() {
        if matches!(
            header.as_str(),
            "content-type" | "content-encoding" | "etag" | "cache-control" | "warning" | "audit-id"
        ) {
            response = response.header(header.as_str(), value.as_bytes());
        }
    }
    // Streamed, so that watches through the proxy keep flowing.
    let chunks = futures::stream::unfold(Some(answer), |answer| async move {
        let mut answer = answer?;
        match answer.chunk().await {
            Ok(Some(bytes)) => Some((Ok::<_, std::io::Error>(bytes), Some(answer))),
            Ok(None) => None,
            Err(e) => Some((Err(std::io::Error::other(e)), None)),
        }
    });
    response
        .body(Body::from_stream(chunks))
        .map_err(|e| ApiError::internal(format!("relaying the answer of cluster {name}: {e}")))
}

/// An error with its causes (reqwest's own message says only "error sending request").
fn describe(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde_json::json;

    fn secret(data: &[(&str, &str)]) -> Value {
        let data: serde_json::Map<String, Value> = data
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Value::String(STANDARD.encode(v))))
            .collect();
        json!({"data": data})
    }

    #[test]
    fn connections_read_the_secrets_as_karmada_does() {
        let full = json!({"spec": {
            "apiEndpoint": "https://127.0.0.1:1",
            "secretRef": {"namespace": "karmada-cluster", "name": "m1"},
            "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": "m1-impersonator"}
        }});
        let secrets = |ns: &str, name: &str| -> Option<Value> {
            assert_eq!(ns, "karmada-cluster");
            match name {
                "m1" => Some(secret(&[("caBundle", "PEM"), ("token", "admin")])),
                "m1-impersonator" => Some(secret(&[("token", "imp")])),
                _ => None,
            }
        };
        assert_eq!(
            connection("m1", &full, secrets).unwrap(),
            Connection {
                endpoint: "https://127.0.0.1:1".into(),
                ca_pem: Some("PEM".into()),
                token: "imp".into()
            }
        );
        let cases: [(Value, u16, &str); 4] = [
            (
                json!({"spec": {}}),
                500,
                "API endpoint of cluster m1 should not be empty",
            ),
            (
                json!({"spec": {"apiEndpoint": "http://x", "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": "gone"}}}),
                404,
                "secrets \"gone\" not found",
            ),
            (
                json!({"spec": {"apiEndpoint": "http://x"}}),
                500,
                "the impersonatorSecretRef of cluster m1 is nil",
            ),
            (
                json!({"spec": {"apiEndpoint": "http://x", "secretRef": {"namespace": "karmada-cluster", "name": "m1-impersonator"}, "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": "m1-impersonator"}}}),
                500,
                "the CA bundle of cluster m1 is empty",
            ),
        ];
        for (cluster, code, message) in cases {
            let err = connection("m1", &cluster, secrets).unwrap_err();
            assert_eq!(err.code, code, "{cluster}");
            assert!(err.message.contains(message), "{}", err.message);
        }
    }

    #[test]
    fn impersonation_names_the_caller_without_the_implicit_groups() {
        let headers = impersonation(
            "alice",
            &["dev".into(), "system:authenticated".into(), "ops".into()],
        );
        let pairs: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("impersonate-user".to_owned(), "alice".to_owned()),
                ("impersonate-group".to_owned(), "dev".to_owned()),
                ("impersonate-group".to_owned(), "ops".to_owned()),
            ]
        );
    }
}
