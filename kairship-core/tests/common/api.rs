//! The Kairship API server in front of a sandbox host and one sandbox Karmada instance, as the
//! REST and gRPC tests use it: token callers, the service with its router, and helpers to call
//! the server with a bearer token. Test files include it beside `mod common;` with
//! `#[path = "common/api.rs"] mod api_fixture;` (not from `common/mod.rs`, which other crates'
//! tests include without the HTTP and gRPC dependencies).
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use http::StatusCode;
use kairship_core::access::{
    AccessError, Authenticator, Authorizer, Caller, InstanceResource, Verb, WriteIdentity,
};
use kairship_core::api::{HostInstanceClients, KairshipApi, KairshipService, ServiceConfig};
use kairship_core::audit::log::HostAuditLog;
use kairship_core::audit::{AuditedWriter, Retention};
use kairship_core::router::{
    DirectBackend, DiscoveryCache, EmbeddedCacheBackend, InstanceClients, InstanceWriter,
    ReadWriteRouter, RouterConfig, SplitRouter, WriteBackend,
};
use kairship_core::server::{AppParts, app, serve};
use kube_kit::client::ClientOptions;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::common::{KarmadaInstance, fast_config, register_adopted_with, start_manager};

pub const P: &str = "/apis/kairship.io/v1alpha1";
pub const ADMIN: &str = "admin-token";
pub const VIEWER: &str = "viewer-token";

/// Bearer tokens: `admin-token` is the user `admin`, `viewer-token` the user `viewer`.
pub struct Tokens;

#[async_trait]
impl Authenticator for Tokens {
    async fn authenticate(&self, token: &str) -> Result<Caller, AccessError> {
        match token {
            ADMIN => Ok(Caller::new("admin", vec![])),
            VIEWER => Ok(Caller::new("viewer", vec![])),
            _ => Err(AccessError::Unauthenticated("unknown token".into())),
        }
    }
}

/// Only `admin-token`, the user `admin`.
pub struct AdminToken;

#[async_trait]
impl Authenticator for AdminToken {
    async fn authenticate(&self, token: &str) -> Result<Caller, AccessError> {
        if token == ADMIN {
            Ok(Caller::new("admin", vec![]))
        } else {
            Err(AccessError::Unauthenticated("unknown token".into()))
        }
    }
}

/// admin: everything; everyone else: reads only.
pub struct AdminWritesOthersRead;

#[async_trait]
impl Authorizer for AdminWritesOthersRead {
    async fn allowed(
        &self,
        caller: &Caller,
        verb: Verb,
        _: InstanceResource,
        _: Option<&str>,
    ) -> Result<bool, AccessError> {
        Ok(caller.user == "admin" || !verb.is_write())
    }
}

/// Every caller may do everything.
pub struct Everything;

#[async_trait]
impl Authorizer for Everything {
    async fn allowed(
        &self,
        _: &Caller,
        _: Verb,
        _: InstanceResource,
        _: Option<&str>,
    ) -> Result<bool, AccessError> {
        Ok(true)
    }
}

/// Sends `authorization: Bearer <token>` with every gRPC call.
#[derive(Clone)]
pub struct Bearer(pub &'static str);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        req.metadata_mut().insert(
            "authorization",
            format!("Bearer {}", self.0).parse().unwrap(),
        );
        Ok(req)
    }
}

pub type GrpcClient = kairship_core::grpc::pb::kairship_service_client::KairshipServiceClient<
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, Bearer>,
>;

/// What differs between the API tests' setups; [`ApiEnv::builder`] starts from the common one.
/// Wraps the writer that forwards writes to the instance (to count or fail them).
pub type WrapWriter = Box<dyn FnOnce(InstanceWriter) -> Arc<dyn WriteBackend> + Send>;

pub struct ApiEnvBuilder {
    name: String,
    host: Option<kube_sandbox::Cluster>,
    wrap_writer: Option<WrapWriter>,
    tls: Option<rustls::ServerConfig>,
    user_agent: String,
    instance: Option<KarmadaInstance>,
    register: bool,
    authenticator: Arc<dyn Authenticator>,
    authorizer: Arc<dyn Authorizer>,
    config: ServiceConfig,
    router: RouterConfig,
    client_timeout: Duration,
    client_refresh: Duration,
    write_identity: WriteIdentity,
    kubeconfig: Option<String>,
    proxy: bool,
    grpc: bool,
    discovery: bool,
    manager: bool,
    watch_instances: bool,
    per_caller_limit: Option<kairship_core::limit::Limit>,
    audit: Option<Retention>,
    console: bool,
}

impl ApiEnvBuilder {
    /// Keeps an audit trail in the host's `default` namespace, as the API server's wiring
    /// does: the writer, the proxy and the service record into it.
    pub fn with_audit(mut self, retention: Retention) -> Self {
        self.audit = Some(retention);
        self
    }

    /// Serves the console beside the API (sessions kept in memory).
    pub fn with_console(mut self) -> Self {
        self.console = true;
        self
    }

    /// The Karmada instance to serve, instead of a fresh `KarmadaInstance::start(name)`.
    pub fn instance(mut self, instance: KarmadaInstance) -> Self {
        self.instance = Some(instance);
        self
    }

    /// The host to use, instead of a fresh `common::host()`.
    pub fn host(mut self, host: kube_sandbox::Cluster) -> Self {
        self.host = Some(host);
        self
    }

    /// Writes reach the instance through `wrap(writer)`.
    pub fn wrap_writer(
        mut self,
        wrap: impl FnOnce(InstanceWriter) -> Arc<dyn WriteBackend> + Send + 'static,
    ) -> Self {
        self.wrap_writer = Some(Box::new(wrap));
        self
    }

    /// Serves HTTPS with `config`.
    pub fn tls(mut self, config: Option<rustls::ServerConfig>) -> Self {
        self.tls = config;
        self
    }

    /// Leaves the instance unregistered on the host (the test adopts it itself).
    pub fn unregistered(mut self) -> Self {
        self.register = false;
        self
    }

    /// The user agent of the clients Kairship uses to reach the instance.
    pub fn user_agent(mut self, user_agent: &str) -> Self {
        self.user_agent = user_agent.into();
        self
    }

    pub fn callers(
        mut self,
        authenticator: Arc<dyn Authenticator>,
        authorizer: Arc<dyn Authorizer>,
    ) -> Self {
        self.authenticator = authenticator;
        self.authorizer = authorizer;
        self
    }

    pub fn config(mut self, config: ServiceConfig) -> Self {
        self.config = config;
        self
    }

    pub fn router(mut self, router: RouterConfig) -> Self {
        self.router = router;
        self
    }

    /// Timeout and refresh period of the instance clients.
    pub fn client_timings(mut self, timeout: Duration, refresh: Duration) -> Self {
        self.client_timeout = timeout;
        self.client_refresh = refresh;
        self
    }

    /// Whose identity writes inside the instance carry (through the API and the proxy).
    pub fn write_identity(mut self, identity: WriteIdentity) -> Self {
        self.write_identity = identity;
        self
    }

    /// Registers the instance with `kubeconfig` instead of the instance's own admin one.
    pub fn kubeconfig(mut self, kubeconfig: String) -> Self {
        self.kubeconfig = Some(kubeconfig);
        self
    }

    /// Serves the Kubernetes proxy routes beside the API.
    pub fn with_proxy(mut self) -> Self {
        self.proxy = true;
        self
    }

    /// Serves REST only, without the gRPC routes.
    pub fn without_grpc(mut self) -> Self {
        self.grpc = false;
        self
    }

    /// Serves without the discovery cache (typed reads of the instance's own kinds only).
    pub fn without_discovery(mut self) -> Self {
        self.discovery = false;
        self
    }

    /// Runs the controllers on the host, and the instance clients follow the Instances.
    /// Limits each caller's proxy requests and REST writes, as `--per-caller-qps` does.
    pub fn per_caller_limit(mut self, limit: kairship_core::limit::Limit) -> Self {
        self.per_caller_limit = Some(limit);
        self
    }

    pub fn with_manager(mut self) -> Self {
        self.manager = true;
        self.watch_instances = true;
        self
    }

    pub async fn start(self) -> ApiEnv {
        kube_kit::client::install_crypto_provider();
        let host = match self.host {
            Some(host) => host,
            None => crate::common::host().await,
        };
        let instance = match self.instance {
            Some(instance) => instance,
            None => KarmadaInstance::start(&self.name).await,
        };
        if self.register {
            let kubeconfig = self
                .kubeconfig
                .as_deref()
                .unwrap_or(&instance.served.kubeconfig_yaml);
            register_adopted_with(&host.client(), &self.name, kubeconfig).await;
        }
        let manager_stop = self
            .manager
            .then(|| start_manager(&host.client(), fast_config()).1);
        let stop = CancellationToken::new();
        let host_clients = Arc::new(HostInstanceClients::new(
            host.client(),
            ClientOptions::new(&self.user_agent),
            self.client_timeout,
            self.client_refresh,
        ));
        if self.watch_instances {
            tokio::spawn(host_clients.clone().watch_instances(stop.clone()));
        }
        let clients: Arc<dyn InstanceClients> = host_clients;
        let audit = self.audit.map(|retention| {
            HostAuditLog::start(host.client(), "default", retention, stop.clone())
        });
        let writer = InstanceWriter::new(clients.clone()).with_identity(self.write_identity);
        let writer: Arc<dyn WriteBackend> = match self.wrap_writer {
            Some(wrap) => wrap(writer),
            None => Arc::new(writer),
        };
        let writer: Arc<dyn WriteBackend> = match &audit {
            Some(trail) => Arc::new(AuditedWriter::new(
                writer,
                Arc::new(trail.clone()),
                self.write_identity,
            )),
            None => writer,
        };
        let cache = Arc::new(EmbeddedCacheBackend::new(clients.clone()));
        let split = Arc::new(SplitRouter::with_config(
            cache.clone(),
            Arc::new(DirectBackend::new(clients.clone())),
            writer,
            self.router,
        ));
        let router: Arc<dyn ReadWriteRouter> = split.clone();
        let proxy = self.proxy.then(|| {
            let mut state = kairship_core::proxy::ProxyState::new(
                router.clone(),
                clients.clone(),
                self.authenticator.clone(),
                self.authorizer.clone(),
            )
            .with_write_identity(self.write_identity);
            if let Some(trail) = &audit {
                state = state.with_audit(Arc::new(trail.clone()));
            }
            kairship_core::proxy::proxy_routes(state)
        });
        let authorizer = self.authorizer.clone();
        let mut service = KairshipService::new(host.client(), router, self.authorizer, self.config)
            .with_search_cache(cache);
        if self.discovery {
            service = service.with_discovery(clients, Arc::new(DiscoveryCache::default()));
        }
        if let Some(trail) = &audit {
            service = service.with_audit(trail.clone());
        }
        let api: Arc<dyn KairshipApi> = Arc::new(service);
        let grpc = if self.grpc {
            Some(
                kairship_core::grpc::routes(api.clone(), self.authenticator.clone())
                    .await
                    .unwrap(),
            )
        } else {
            None
        };
        let console = self.console.then(|| {
            kairship_core::console::routes(kairship_core::console::ConsoleParts {
                api: api.clone(),
                authenticator: self.authenticator.clone(),
                authorizer,
                session_ttl: Duration::from_secs(3600),
                session_store: Arc::new(
                    kairship_core::console::session::LocalSessionStore::new().unwrap(),
                ),
                oidc: None,
            })
        });
        let app = app(AppParts {
            api,
            authenticator: self.authenticator,
            proxy,
            grpc,
            console,
        });
        let app = match self.per_caller_limit {
            Some(limit) => app.layer(axum::Extension(Arc::new(
                kairship_core::limit::CallerLimiter::new(limit),
            ))),
            None => app,
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        tokio::spawn(serve(listener, app, self.tls, stop.clone()));
        ApiEnv {
            host,
            instance,
            router: split,
            base: format!("{scheme}://{addr}"),
            http: reqwest::Client::new(),
            stop,
            manager_stop,
            audit,
        }
    }
}

/// A host sandbox, one Karmada instance registered on it, and the API server (REST and gRPC)
/// listening on loopback; all stop when it is dropped.
pub struct ApiEnv {
    pub host: kube_sandbox::Cluster,
    pub instance: KarmadaInstance,
    pub router: Arc<SplitRouter>,
    pub base: String,
    pub http: reqwest::Client,
    pub stop: CancellationToken,
    manager_stop: Option<CancellationToken>,
    /// The audit trail, when the builder asked for one.
    pub audit: Option<HostAuditLog>,
}

impl Drop for ApiEnv {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(stop) = &self.manager_stop {
            stop.cancel();
        }
    }
}

impl ApiEnv {
    /// The instance `name` adopted on the host; callers `admin` (everything) and `viewer`
    /// (reads); the default service and router settings.
    pub fn builder(name: &str) -> ApiEnvBuilder {
        ApiEnvBuilder {
            name: name.into(),
            host: None,
            wrap_writer: None,
            tls: None,
            user_agent: "kairship-test".into(),
            instance: None,
            register: true,
            authenticator: Arc::new(Tokens),
            authorizer: Arc::new(AdminWritesOthersRead),
            config: ServiceConfig::default(),
            router: RouterConfig::default(),
            client_timeout: Duration::from_secs(5),
            client_refresh: Duration::from_secs(30),
            write_identity: WriteIdentity::default(),
            kubeconfig: None,
            proxy: false,
            grpc: true,
            discovery: true,
            manager: false,
            watch_instances: false,
            per_caller_limit: None,
            audit: None,
            console: false,
        }
    }

    /// `method path` as `token`, with `body` as JSON: the status and the body text.
    pub async fn send_as(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (StatusCode, String) {
        let mut req = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        (resp.status(), resp.text().await.unwrap())
    }

    /// As [`Self::send_as`], the body parsed as JSON (a JSON string where it is not JSON).
    pub async fn call_as(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let (status, text) = self.send_as(method, path, token, body).await;
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// As [`Self::call_as`] for the admin; asserts 200 OK and returns the answer.
    pub async fn ok_as_admin(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, value) = self.call_as(method, path, ADMIN, body).await;
        assert_eq!(status, StatusCode::OK, "{method} {path}: {value}");
        value
    }

    /// A gRPC client sending `token`.
    pub async fn grpc_as(&self, token: &'static str) -> GrpcClient {
        let channel = tonic::transport::Endpoint::from_shared(self.base.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        kairship_core::grpc::pb::kairship_service_client::KairshipServiceClient::with_interceptor(
            channel,
            Bearer(token),
        )
    }
}
