//! The role-binding webhook: an HTTP(S) endpoint an external IAM calls to bind or unbind a
//! user or group to an instance role. Every call is authenticated by an HMAC-SHA256 over
//! `"{timestamp}.{body}"` with a shared secret, inside a replay window, and each signed
//! request is accepted once. Bind and unbind are idempotent.
//!
//! A signature is spent once it has been verified, whatever happens next: a caller retrying
//! after a 5xx signs again with a fresh timestamp.
//!
//! Answers: 200 with `{"action", "binding", "changed"}`; 401 for a missing, stale, replayed or
//! bad signature; 400 for a malformed body; 404 for an unknown instance; 500 when the host
//! cluster fails; 503 (with `Retry-After`) from a replica that is not the leader, before the
//! signature is checked, so the same signed call can go to the leader.

pub mod request;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Client, Resource};
use kube_kit::client::is_not_found;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::MANAGER_NAME;
use crate::instance::Instance;
use request::{BindingAction, ReplayCache, RoleBindingRequest, SIGNATURE_HEADER, TIMESTAMP_HEADER};

/// Path of the endpoint.
pub const PATH: &str = "/v1/role-bindings";
/// Largest accepted body.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Signed requests remembered at once for replay detection.
pub const REPLAY_CACHE_CAPACITY: usize = 100_000;

/// Why the webhook server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The certificate or key is unusable.
    #[error("webhook TLS settings: {0}")]
    Tls(String),
    /// Serving failed.
    #[error("webhook server on {addr}: {source}")]
    Serve {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// What the handler needs.
#[derive(Clone)]
pub struct WebhookState {
    host: Client,
    secret: Arc<[u8]>,
    window: Duration,
    replay: Arc<Mutex<ReplayCache>>,
    /// Only the leader carries out calls, so one replay cache sees every accepted call.
    leading: Arc<AtomicBool>,
}

impl std::fmt::Debug for WebhookState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookState")
            .field("window", &self.window)
            .field("leading", &self.is_leading())
            .finish_non_exhaustive()
    }
}

impl WebhookState {
    /// State for a webhook writing bindings with `host`, verifying with `secret`; it carries
    /// out calls until [`WebhookState::set_leading`] says otherwise.
    pub fn new(host: Client, secret: &[u8], window: Duration) -> Self {
        Self {
            host,
            secret: Arc::from(secret),
            window,
            replay: Arc::new(Mutex::new(ReplayCache::new(REPLAY_CACHE_CAPACITY))),
            leading: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Whether this replica carries out calls (it leads) or answers 503 (it does not).
    pub fn set_leading(&self, leading: bool) {
        self.leading.store(leading, Ordering::SeqCst);
    }

    /// Whether this replica carries out calls.
    pub fn is_leading(&self) -> bool {
        self.leading.load(Ordering::SeqCst)
    }
}

/// The webhook's router.
pub fn router(state: WebhookState) -> Router {
    Router::new()
        .route(PATH, post(handle))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

fn answer(status: StatusCode, body: serde_json::Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn error(status: StatusCode, message: impl std::fmt::Display) -> Response {
    answer(
        status,
        json!({"code": status.as_u16(), "message": message.to_string()}),
    )
}

/// Seconds a caller answered by a replica that does not lead waits before it tries again.
const NOT_LEADING_RETRY_AFTER: &str = "1";

async fn handle(State(state): State<WebhookState>, headers: HeaderMap, body: Bytes) -> Response {
    if !state.is_leading() {
        let mut response = error(
            StatusCode::SERVICE_UNAVAILABLE,
            "this controller-manager replica is not the leader; retry (the leader serves the webhook)",
        );
        response.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            axum::http::HeaderValue::from_static(NOT_LEADING_RETRY_AFTER),
        );
        return response;
    }
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let verified = state
        .replay
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .verify_and_record(
            &state.secret,
            &header(TIMESTAMP_HEADER),
            &header(SIGNATURE_HEADER),
            &body,
            jiff::Timestamp::now(),
            state.window,
        );
    if let Err(err) = verified {
        tracing::info!(error = %err, "role-binding webhook call refused");
        return error(StatusCode::UNAUTHORIZED, err);
    }
    let request = match RoleBindingRequest::from_json(&body) {
        Ok(r) => r,
        Err(err) => return error(StatusCode::BAD_REQUEST, err),
    };
    match apply(&state.host, &request).await {
        Ok(changed) => answer(
            StatusCode::OK,
            json!({
                "action": request.action,
                "binding": request.binding_name(),
                "changed": changed,
            }),
        ),
        Err(response) => response,
    }
}

/// Carries out a verified request; returns whether anything changed.
async fn apply(host: &Client, request: &RoleBindingRequest) -> Result<bool, Response> {
    let bindings: Api<ClusterRoleBinding> = Api::all(host.clone());
    let name = request.binding_name();
    let internal = |action: &str, err: kube::Error| {
        tracing::warn!(binding = %name, error = %err, "{action} failed");
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{action} ClusterRoleBinding {name} failed"),
        )
    };
    match request.action {
        BindingAction::Bind => {
            let instances: Api<Instance> = Api::all(host.clone());
            let instance = instances
                .get_opt(&request.instance)
                .await
                .map_err(|e| internal("reading the instance for", e))?
                .ok_or_else(|| {
                    error(
                        StatusCode::NOT_FOUND,
                        format!("instance {} does not exist", request.instance),
                    )
                })?;
            let mut desired = request.desired_binding();
            desired.metadata.owner_references = instance.controller_owner_ref(&()).map(|o| vec![o]);
            let existing = bindings
                .get_opt(&name)
                .await
                .map_err(|e| internal("reading", e))?;
            if existing
                .is_some_and(|e| e.subjects == desired.subjects && e.role_ref == desired.role_ref)
            {
                return Ok(false);
            }
            bindings
                .patch(
                    &name,
                    &PatchParams::apply(MANAGER_NAME).force(),
                    &Patch::Apply(&desired),
                )
                .await
                .map_err(|e| internal("applying", e))?;
            Ok(true)
        }
        BindingAction::Unbind => match bindings.delete(&name, &DeleteParams::default()).await {
            Ok(_) => Ok(true),
            Err(err) if is_not_found(&err) => Ok(false),
            Err(e) => Err(internal("deleting", e)),
        },
    }
}

/// A TLS acceptor from PEM certificate chain and private key.
pub fn tls_acceptor(
    cert_pem: &[u8],
    key_pem: &[u8],
) -> Result<tokio_rustls::TlsAcceptor, WebhookError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| WebhookError::Tls(format!("certificate: {e}")))?;
    if certs.is_empty() {
        return Err(WebhookError::Tls("no certificate in the PEM file".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| WebhookError::Tls(format!("private key: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| WebhookError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| WebhookError::Tls(e.to_string()))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Serves `router` on `listener` (HTTPS with `tls`, else plain HTTP) until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: CancellationToken,
) -> Result<(), WebhookError> {
    let addr = listener
        .local_addr()
        .map_err(|source| WebhookError::Serve {
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            source,
        })?;
    let Some(acceptor) = tls else {
        return axum::serve(listener, router)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await
            .map_err(|source| WebhookError::Serve { addr, source });
    };
    loop {
        let (stream, _) = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(err) => {
                    tracing::warn!(error = %err, "webhook accept failed");
                    continue;
                }
            },
        };
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(router.clone());
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let Ok(Ok(tls)) =
                tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)).await
            else {
                return;
            };
            let builder = auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection(TokioIo::new(tls), service);
            tokio::select! {
                _ = conn => {}
                () = stop.cancelled() => {}
            }
        });
    }
}
