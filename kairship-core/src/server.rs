//! The API server: REST, OpenAPI and Swagger UI, the native proxy and gRPC composed
//! into one router, served on one port with HTTP/1.1 and HTTP/2 (h2c, or h2 over TLS).

use crate::audit::Door;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use utoipa_swagger_ui::SwaggerUi;

use crate::access::Authenticator;
use crate::api::KairshipApi;
use crate::api::{ApiError, Code};
use crate::rest;
use crate::transport::ServedOverTls;

/// Where the OpenAPI document is served.
pub const OPENAPI_PATH: &str = "/openapi.json";
/// Where Swagger UI is served.
pub const SWAGGER_UI_PATH: &str = "/swagger-ui";
/// How long a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long open connections may finish their requests after shutdown began.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What the API server serves.
pub struct AppParts {
    /// The service behind REST (and gRPC).
    pub api: Arc<dyn KairshipApi>,
    /// Turns bearer tokens into callers.
    pub authenticator: Arc<dyn Authenticator>,
    /// The native proxy (`crate::proxy::proxy_routes(...)`), serving
    /// [`rest::PROXY_PATH`]; it authenticates and authorizes on its own.
    pub proxy: Option<Router>,
    /// gRPC services (tonic's routes as an axum router), sharing the port over HTTP/2.
    pub grpc: Option<Router>,
    /// The web console (`crate::console::routes(...)`) under `/ui`; it signs users in with
    /// the same tokens.
    pub console: Option<Router>,
}

impl std::fmt::Debug for AppParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppParts")
            .field("proxy", &self.proxy.is_some())
            .field("grpc", &self.grpc.is_some())
            .field("console", &self.console.is_some())
            .finish_non_exhaustive()
    }
}

async fn no_route(req: Request) -> Response {
    ApiError::new(
        Code::NotFound,
        format!("no route for {} {}", req.method(), req.uri().path()),
    )
    .into_response()
}

async fn method_not_allowed(req: Request) -> Response {
    let mut response = ApiError::new(
        Code::Unimplemented,
        format!("{} is not served on {}", req.method(), req.uri().path()),
    )
    .into_response();
    *response.status_mut() = http::StatusCode::METHOD_NOT_ALLOWED;
    response
}

/// The whole API as one router: `/openapi.json` and `/swagger-ui` (no authentication), the
/// REST operations (bearer authentication), and the proxy and gRPC routers when given.
/// Unknown paths answer 404 and unserved methods 405, both as `{code, message}`.
pub fn app(parts: AppParts) -> Router {
    let mut app = Router::new()
        .merge(SwaggerUi::new(SWAGGER_UI_PATH).url(OPENAPI_PATH, rest::openapi()))
        .merge(through_door(
            rest::router(parts.api, parts.authenticator),
            Door::Rest,
        ));
    if let Some(proxy) = parts.proxy {
        app = app.merge(through_door(proxy, Door::Proxy));
    }
    if let Some(grpc) = parts.grpc {
        app = app.merge(through_door(grpc, Door::Grpc));
    }
    if let Some(console) = parts.console {
        app = app.merge(through_door(console, Door::Console));
    }
    app.fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn(crate::proxy::gzip_large_answers))
}

/// Requests of `router` are handled as coming through `door`, so the writes they make are
/// audited with it.
fn through_door(router: Router, door: Door) -> Router {
    router.layer(axum::middleware::from_fn(
        move |request: Request, next: axum::middleware::Next| {
            crate::audit::through(door, next.run(request))
        },
    ))
}

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listener's address could not be read.
    #[error("the API server's listener is unusable: {0}")]
    Listener(#[source] std::io::Error),
}

/// Serves `app` on `listener` until `shutdown`: HTTPS when `tls` is given (HTTP/2 offered
/// by ALPN), else plain HTTP/1.1 and HTTP/2 without TLS (h2c), with upgrades (watch and exec
/// streams of the proxy) allowed. After `shutdown`, open connections get a short grace period.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<rustls::ServerConfig>,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let addr = listener.local_addr().map_err(ServeError::Listener)?;
    let acceptor = tls.map(|mut config| {
        if config.alpn_protocols.is_empty() {
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        }
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    });
    let app = app.layer(axum::Extension(ServedOverTls(acceptor.is_some())));
    tracing::info!(%addr, tls = acceptor.is_some(), "serving the Kairship API");
    let connections = tokio_util::task::TaskTracker::new();
    loop {
        let (stream, peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(err) => {
                    tracing::warn!(%addr, error = %err, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        connections.spawn(serve_connection(
            stream,
            peer,
            app.clone(),
            acceptor.clone(),
            shutdown.clone(),
        ));
    }
    connections.close();
    connections.wait().await;
    Ok(())
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    app: Router,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    shutdown: CancellationToken,
) {
    match acceptor {
        None => drive(TokioIo::new(stream), peer, app, shutdown).await,
        Some(acceptor) => {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => drive(TokioIo::new(tls), peer, app, shutdown).await,
                Ok(Err(err)) => tracing::debug!(%peer, error = %err, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        }
    }
}

async fn drive<I>(io: I, peer: SocketAddr, app: Router, shutdown: CancellationToken)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let builder = crate::proxy::connection_builder();
    let connection = builder.serve_connection_with_upgrades(io, TowerToHyperService::new(app));
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(err) = result {
                tracing::debug!(%peer, error = %err, "connection ended with an error");
            }
        }
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, connection).await;
        }
    }
}
