//! The admin endpoints every controller process serves: `/metrics` on the metrics address;
//! `/healthz`, `/readyz` and `/debug/log-level` on the probe address.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::leader::state::LeaderState;
use crate::telemetry::LogHandle;

/// Content type of the Prometheus text exposition written by prometheus-client.
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The process-wide metrics registry that components register into; cheap to clone.
#[derive(Clone, Default)]
pub struct Metrics {
    registry: Arc<Mutex<Registry>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` with the registry, e.g. to register metrics.
    pub fn with_registry<R>(&self, f: impl FnOnce(&mut Registry) -> R) -> R {
        // A panic while registering leaves the registry usable; keep serving it.
        let mut registry = self.registry.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut registry)
    }

    /// The registry in the Prometheus/OpenMetrics text format.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        self.with_registry(|registry| {
            prometheus_client::encoding::text::encode(&mut out, registry)
        })?;
        Ok(out)
    }
}

type CheckFn = Arc<dyn Fn() -> bool + Send + Sync>;

/// Readiness checks registered by components; the process is ready when all pass.
#[derive(Clone, Default)]
pub struct Readiness {
    checks: Arc<Mutex<Vec<(String, CheckFn)>>>,
}

impl std::fmt::Debug for Readiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readiness")
            .field("checks", &self.names())
            .finish()
    }
}

/// A readiness flag a component sets, e.g. once its caches have synced.
#[derive(Clone, Debug)]
pub struct ReadyFlag(Arc<AtomicBool>);

impl ReadyFlag {
    /// Marks the component ready or not ready.
    pub fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::SeqCst);
    }

    /// Whether the component is ready.
    pub fn get(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The result of running all readiness checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadinessReport {
    /// Each check's name and whether it passed, in registration order.
    pub checks: Vec<(String, bool)>,
}

impl ReadinessReport {
    /// Whether every check passed.
    pub fn ready(&self) -> bool {
        self.checks.iter().all(|(_, ok)| *ok)
    }

    /// kube-apiserver style body: one `[+]name ok` / `[-]name failed` line per check.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, ok) in &self.checks {
            if *ok {
                out.push_str(&format!("[+]{name} ok\n"));
            } else {
                out.push_str(&format!("[-]{name} failed\n"));
            }
        }
        out.push_str(if self.ready() {
            "readyz check passed\n"
        } else {
            "readyz check failed\n"
        });
        out
    }
}

impl Readiness {
    /// No checks: ready.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a flag named `name`, initially not ready.
    pub fn flag(&self, name: impl Into<String>) -> ReadyFlag {
        let flag = ReadyFlag(Arc::new(AtomicBool::new(false)));
        let inner = flag.clone();
        self.add_check(name, move || inner.get());
        flag
    }

    /// Registers a check function.
    pub fn add_check(
        &self,
        name: impl Into<String>,
        check: impl Fn() -> bool + Send + Sync + 'static,
    ) {
        self.checks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((name.into(), Arc::new(check)));
    }

    /// Registers a leader-elected component: ready when leading or standing by, not while
    /// starting or after losing the lease to API errors.
    pub fn add_leader_check(&self, name: impl Into<String>, state: watch::Receiver<LeaderState>) {
        self.add_check(name, move || state.borrow().is_ready());
    }

    /// Names of the registered checks.
    pub fn names(&self) -> Vec<String> {
        self.checks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Runs every check.
    pub fn report(&self) -> ReadinessReport {
        let checks: Vec<(String, CheckFn)> = self
            .checks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        ReadinessReport {
            checks: checks
                .into_iter()
                .map(|(name, check)| (name, check()))
                .collect(),
        }
    }
}

/// What the admin endpoints serve.
#[derive(Clone, Debug, Default)]
pub struct AdminState {
    /// Served on `/metrics`.
    pub metrics: Metrics,
    /// Checked on `/readyz`.
    pub readiness: Readiness,
    /// Read and changed on `/debug/log-level`; the endpoint answers 404 without it.
    pub log: Option<LogHandle>,
}

/// Why the admin server failed. The I/O error is part of the message and deliberately not a
/// `source`: callers print error chains (`{:#}`, anyhow's `Caused by`), which would repeat it.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// An address could not be bound.
    #[error("cannot listen on {addr} ({what}): {cause}")]
    Bind {
        /// The address from the flags.
        addr: SocketAddr,
        /// "metrics", "probes", or "metrics and probes" when both share the address.
        what: &'static str,
        /// The OS error.
        cause: std::io::Error,
    },
    /// Serving stopped with an I/O error.
    #[error("the {what} server on {addr} failed: {cause}")]
    Serve {
        /// The bound address.
        addr: SocketAddr,
        /// "metrics", "probes", or "metrics and probes".
        what: &'static str,
        /// The I/O error.
        cause: std::io::Error,
    },
}

/// The `/metrics` router.
pub fn metrics_router(state: AdminState) -> Router {
    Router::new()
        .route("/metrics", get(metrics_handler))
        .with_state(state)
}

/// The `/healthz`, `/readyz` and `/debug/log-level` router.
pub fn probes_router(state: AdminState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz_handler))
        .route(
            "/debug/log-level",
            get(get_log_level).put(set_log_level).post(set_log_level),
        )
        .with_state(state)
}

/// All admin endpoints on one router (for a single `--metrics-addr` = `--probe-addr`).
pub fn admin_router(state: AdminState) -> Router {
    metrics_router(state.clone()).merge(probes_router(state))
}

async fn metrics_handler(State(state): State<AdminState>) -> Response {
    match state.metrics.encode() {
        Ok(body) => ([(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)], body).into_response(),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "could not encode metrics\n",
        )
            .into_response(),
    }
}

async fn readyz_handler(State(state): State<AdminState>) -> Response {
    let report = state.readiness.report();
    let status = if report.ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, report.render()).into_response()
}

async fn get_log_level(State(state): State<AdminState>) -> Response {
    match state.log {
        Some(log) => format!("{}\n", log.current()).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            "log level is not adjustable in this process\n",
        )
            .into_response(),
    }
}

async fn set_log_level(State(state): State<AdminState>, body: String) -> Response {
    let Some(log) = state.log else {
        return (
            StatusCode::NOT_FOUND,
            "log level is not adjustable in this process\n",
        )
            .into_response();
    };
    match log.set(body.trim()) {
        Ok(()) => {
            tracing::info!(filter = %log.current(), "log filter changed");
            format!("{}\n", log.current()).into_response()
        }
        Err(err) => (StatusCode::BAD_REQUEST, format!("{err}\n")).into_response(),
    }
}

/// The admin listeners, bound before anything else starts so that a busy port stops the
/// process at start instead of leaving it running without metrics and probes.
#[derive(Debug)]
pub struct AdminServer {
    listeners: Listeners,
}

#[derive(Debug)]
enum Listeners {
    /// `--metrics-addr` = `--probe-addr`: every endpoint on one listener.
    One(TcpListener),
    /// Metrics and probes apart.
    Two {
        metrics: TcpListener,
        probes: TcpListener,
    },
}

impl AdminServer {
    /// Binds the metrics and the probe address (one listener when they are the same); the
    /// error names the address that could not be bound and why.
    pub async fn bind(
        metrics_addr: SocketAddr,
        probe_addr: SocketAddr,
    ) -> Result<AdminServer, AdminError> {
        let listeners = if metrics_addr == probe_addr {
            Listeners::One(bind(metrics_addr, "metrics and probes").await?)
        } else {
            Listeners::Two {
                metrics: bind(metrics_addr, "metrics").await?,
                probes: bind(probe_addr, "probes").await?,
            }
        };
        Ok(AdminServer { listeners })
    }

    /// The bound metrics address (with the port the OS chose for port 0).
    pub fn metrics_addr(&self) -> Result<SocketAddr, AdminError> {
        match &self.listeners {
            Listeners::One(listener) => local_addr(listener, "metrics and probes"),
            Listeners::Two { metrics, .. } => local_addr(metrics, "metrics"),
        }
    }

    /// The bound probe address (with the port the OS chose for port 0).
    pub fn probe_addr(&self) -> Result<SocketAddr, AdminError> {
        match &self.listeners {
            Listeners::One(listener) => local_addr(listener, "metrics and probes"),
            Listeners::Two { probes, .. } => local_addr(probes, "probes"),
        }
    }

    /// Serves the admin endpoints until `shutdown`: `/metrics` on the metrics listener,
    /// `/healthz`, `/readyz` and `/debug/log-level` on the probe listener.
    pub async fn serve(
        self,
        state: AdminState,
        shutdown: CancellationToken,
    ) -> Result<(), AdminError> {
        match self.listeners {
            Listeners::One(listener) => {
                serve_on(
                    listener,
                    admin_router(state),
                    "metrics and probes",
                    shutdown,
                )
                .await
            }
            Listeners::Two { metrics, probes } => {
                // The first failure ends both: half an admin server is no better than none.
                tokio::try_join!(
                    serve_on(
                        metrics,
                        metrics_router(state.clone()),
                        "metrics",
                        shutdown.clone()
                    ),
                    serve_on(probes, probes_router(state), "probes", shutdown),
                )
                .map(|_| ())
            }
        }
    }

    /// Serves on a task of its own. However the task ends (an error, a panic, or `shutdown`),
    /// it cancels `shutdown`: a process without metrics and probes stops, so that it exits
    /// and is restarted rather than running on unobserved with failing probes. Await the
    /// handle after the process's work has stopped to get the admin server's error.
    pub fn spawn(
        self,
        state: AdminState,
        shutdown: CancellationToken,
    ) -> JoinHandle<Result<(), AdminError>> {
        // Made outside the task so that it is dropped even if the task never runs.
        let stop_process = shutdown.clone().drop_guard();
        tokio::spawn(async move {
            let _stop_process = stop_process;
            let result = self.serve(state, shutdown).await;
            if let Err(err) = &result {
                tracing::error!(error = %err, "the admin server failed; stopping");
            }
            result
        })
    }
}

async fn bind(addr: SocketAddr, what: &'static str) -> Result<TcpListener, AdminError> {
    TcpListener::bind(addr)
        .await
        .map_err(|cause| AdminError::Bind { addr, what, cause })
}

fn local_addr(listener: &TcpListener, what: &'static str) -> Result<SocketAddr, AdminError> {
    listener.local_addr().map_err(|cause| AdminError::Serve {
        addr: SocketAddr::from(([0, 0, 0, 0], 0)),
        what,
        cause,
    })
}

/// Serves `router` on an already bound listener until `shutdown`.
pub async fn serve_on(
    listener: TcpListener,
    router: Router,
    what: &'static str,
    shutdown: CancellationToken,
) -> Result<(), AdminError> {
    let addr = local_addr(&listener, what)?;
    tracing::info!(%addr, what, "serving admin endpoints");
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
        .map_err(|cause| AdminError::Serve { addr, what, cause })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leader::state::LeaderState;
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn call(router: &Router, method: &str, path: &str, body: &str) -> (StatusCode, String) {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .body(Body::from(body.to_owned()))
            .unwrap();
        let resp = router.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn readyz_follows_checks_and_leader_state() {
        let state = AdminState::default();
        let synced = state.readiness.flag("caches-synced");
        let (tx, rx) = watch::channel(LeaderState::Starting);
        state.readiness.add_leader_check("leader-election", rx);
        let router = probes_router(state);

        let (status, body) = call(&router, "GET", "/readyz", "").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(body.contains("[-]caches-synced failed"), "{body}");

        synced.set(true);
        tx.send_replace(LeaderState::Standby {
            holder: Some("other".into()),
        });
        let (status, body) = call(&router, "GET", "/readyz", "").await;
        assert_eq!(status, StatusCode::OK, "standby is ready: {body}");

        tx.send_replace(LeaderState::Lost);
        let (status, _) = call(&router, "GET", "/readyz", "").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);

        let (status, body) = call(&router, "GET", "/healthz", "").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "ok\n"));
    }

    #[tokio::test]
    async fn metrics_exposes_registered_metrics() {
        let state = AdminState::default();
        let gauge = prometheus_client::metrics::gauge::Gauge::<i64>::default();
        state.metrics.with_registry(|r| {
            r.register(
                "demo_gauge",
                "A gauge registered by a component",
                gauge.clone(),
            )
        });
        gauge.set(7);
        let (status, body) = call(&metrics_router(state), "GET", "/metrics", "").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("demo_gauge 7"), "{body}");
        assert!(body.ends_with("# EOF\n"), "{body}");
    }

    #[tokio::test]
    async fn log_level_endpoint_reads_and_reloads() {
        let (subscriber, handle) =
            crate::telemetry::build_subscriber(&crate::telemetry::LogOptions {
                filter: "info".into(),
                format: crate::telemetry::LogFormat::Text,
            })
            .unwrap();
        let _guard = tracing::subscriber::set_default(subscriber);
        let state = AdminState {
            log: Some(handle.clone()),
            ..AdminState::default()
        };
        let router = probes_router(state);
        let (status, body) = call(&router, "GET", "/debug/log-level", "").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "info\n"));

        let (status, body) =
            call(&router, "PUT", "/debug/log-level", "kube_kit=debug,warn\n").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(handle.current(), "kube_kit=debug,warn");
        assert!(tracing::enabled!(target: "kube_kit::x", tracing::Level::DEBUG));
        assert!(!tracing::enabled!(target: "other", tracing::Level::INFO));

        let (status, _) = call(&router, "POST", "/debug/log-level", "kube_kit=notalevel").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            handle.current(),
            "kube_kit=debug,warn",
            "a bad filter changes nothing"
        );
    }

    #[tokio::test]
    async fn log_level_without_handle_is_404() {
        let (status, _) = call(
            &probes_router(AdminState::default()),
            "GET",
            "/debug/log-level",
            "",
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    async fn get(addr: SocketAddr, path: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(
                format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes(),
            )
            .await
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response
    }

    #[tokio::test]
    async fn serve_binds_both_addresses_and_stops_on_shutdown() {
        let shutdown = CancellationToken::new();
        // Distinct addresses: metrics and probes on listeners of their own.
        let server =
            AdminServer::bind("0.0.0.0:0".parse().unwrap(), "127.0.0.1:0".parse().unwrap())
                .await
                .unwrap();
        let metrics = SocketAddr::from(([127, 0, 0, 1], server.metrics_addr().unwrap().port()));
        let probes = server.probe_addr().unwrap();
        assert_ne!(metrics.port(), probes.port());
        let task = server.spawn(AdminState::default(), shutdown.clone());

        assert!(get(probes, "/healthz").await.starts_with("HTTP/1.1 200"));
        assert!(get(probes, "/metrics").await.starts_with("HTTP/1.1 404"));
        assert!(get(metrics, "/metrics").await.starts_with("HTTP/1.1 200"));
        assert!(get(metrics, "/healthz").await.starts_with("HTTP/1.1 404"));
        shutdown.cancel();
        task.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn one_address_serves_every_endpoint() {
        let shutdown = CancellationToken::new();
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let server = AdminServer::bind(addr, addr).await.unwrap();
        let bound = server.metrics_addr().unwrap();
        assert_eq!(server.probe_addr().unwrap(), bound);
        let task = server.spawn(AdminState::default(), shutdown.clone());
        assert!(get(bound, "/healthz").await.starts_with("HTTP/1.1 200"));
        assert!(get(bound, "/metrics").await.starts_with("HTTP/1.1 200"));
        shutdown.cancel();
        task.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn an_admin_server_that_ends_early_stops_the_process() {
        let shutdown = CancellationToken::new();
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let server = AdminServer::bind(addr, addr).await.unwrap();
        let task = server.spawn(AdminState::default(), shutdown.clone());
        assert!(!shutdown.is_cancelled());
        // Aborting stands in for any early end (a failure or a panic): the token is cancelled.
        task.abort();
        tokio::time::timeout(std::time::Duration::from_secs(30), shutdown.cancelled())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn bind_errors_name_the_busy_address_and_listener() {
        let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let busy_addr = busy.local_addr().unwrap();
        let free: SocketAddr = "127.0.0.1:0".parse().unwrap();
        for (metrics, probes, what) in [
            (busy_addr, free, "metrics"),
            (free, busy_addr, "probes"),
            (busy_addr, busy_addr, "metrics and probes"),
        ] {
            let err = AdminServer::bind(metrics, probes).await.unwrap_err();
            let message = err.to_string();
            assert!(
                message.starts_with(&format!("cannot listen on {busy_addr} ({what}): ")),
                "{message}"
            );
            // The cause is in the message only, so that printed chains do not repeat it.
            assert!(std::error::Error::source(&err).is_none(), "{message}");
            match err {
                AdminError::Bind { addr, cause, .. } => {
                    assert_eq!(addr, busy_addr);
                    assert_eq!(cause.kind(), std::io::ErrorKind::AddrInUse, "{message}");
                }
                other => panic!("not a bind error: {other}"),
            }
        }
    }
}
