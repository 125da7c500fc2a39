//! The API server's pieces wired together: one read-write router, the service, the native
//! proxy and their authentication, composed into one axum app. Shared by `kairship apiserver`
//! and `kairship sandbox`, so the sandbox serves exactly what the real server does.

use std::sync::Arc;

use anyhow::Context as _;
use std::time::Duration;

use kairship_core::access::{Authenticator, Authorizer, WriteIdentity};
use kairship_core::api::{HostInstanceClients, KairshipApi, KairshipService, ServiceConfig};
use kairship_core::audit::log::HostAuditLog;
use kairship_core::audit::{AuditSink, AuditedWriter, Retention};
use kairship_core::auth::{
    ChainAuthenticator, OidcIssuer, StaticTokenAuthenticator, TokenReviewAuthenticator,
};
use kairship_core::console::session_store::{HostSessionConfig, HostSessionStore};
use kairship_core::limit::{CallerLimiter, Limit};
use kairship_core::proxy::{ProxyState, proxy_routes};
use kairship_core::router::{
    ClusterpediaBackend, DirectBackend, DiscoveryCache, EmbeddedCacheBackend, InstanceClients,
    InstanceWriter, ReadBackend, ReadWriteRouter, RouterConfig, SplitRouter, WriteBackend,
};
use kairship_core::server::{AppParts, app};
use kube_kit::client::ClientOptions;
use tokio_util::sync::CancellationToken;

/// Where reads of instance resources are answered.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadBackendFlag {
    /// The embedded reflector cache, one per instance and resource, falling back to the
    /// instance while it is not synced (also spelled `embedded`, as the controller-manager does).
    #[value(alias = "embedded")]
    Cache,
    /// Clusterpedia on the host cluster (instances registered as PediaClusters by the
    /// controller-manager's `--read-backend clusterpedia`).
    Clusterpedia,
}

/// What the API needs from its caller.
pub struct ApiOptions {
    /// The host cluster, where Instances and their kubeconfig Secrets live.
    pub host: kube::Client,
    /// Options of the clients built for instances.
    pub client_options: ClientOptions,
    /// Where reads of instance resources are answered.
    pub read_backend: ReadBackendFlag,
    /// How long a read waits for the cache to see the caller's own write.
    pub read_your_writes_timeout: Duration,
    /// Time one call to the host cluster may take.
    pub host_timeout: Duration,
    /// How long an instance client is reused before its kubeconfig Secret is checked again.
    pub instance_client_refresh: Duration,
    /// Stops the watch of the host's Instances.
    pub shutdown: CancellationToken,
    /// Turns bearer tokens into callers.
    pub authenticator: Arc<dyn Authenticator>,
    /// Decides what callers may do.
    pub authorizer: Arc<dyn Authorizer>,
    /// Base URL written into issued kubeconfigs.
    pub external_url: Option<String>,
    /// CA (PEM) embedded in issued kubeconfigs, for a generated certificate.
    pub ca_pem: Option<String>,
    /// Whose identity writes inside an instance carry.
    pub write_identity: WriteIdentity,
    /// Where the console's session keys and sign-outs are kept in the host cluster.
    pub console_sessions: HostSessionConfig,
    /// Console sign-in through an OpenID Connect issuer.
    pub oidc: Option<kairship_core::console::oidc::OidcSignIn>,
    /// Each caller's limit on native proxy requests and REST writes (none: not limited).
    pub per_caller_limit: Option<Limit>,
    /// Where the audit trail is kept in the host cluster, and for how long.
    pub audit: AuditOptions,
}

/// The audit trail's place and bounds.
pub struct AuditOptions {
    /// Namespace (in the host cluster) of the AuditRecords: the API server's own.
    pub namespace: String,
    /// How many records, and how old, are kept.
    pub retention: Retention,
}

/// The wired API: the app to serve, and the parts callers still need.
pub struct Api {
    /// REST, gRPC, OpenAPI, Swagger UI and the native proxy as one router.
    pub app: axum::Router,
    /// The service behind REST (the sandbox issues kubeconfigs with it).
    #[cfg_attr(not(feature = "sandbox"), allow(dead_code))]
    pub service: Arc<dyn KairshipApi>,
    /// The read-write router (its metrics are registered by the caller).
    pub router: Arc<SplitRouter>,
    /// The embedded instance cache the router reads (none with Clusterpedia): controllers
    /// running in the same process read it too instead of keeping their own.
    #[cfg_attr(not(feature = "sandbox"), allow(dead_code))]
    pub instance_cache: Option<Arc<EmbeddedCacheBackend>>,
    /// The audit trail (its metrics are registered by the caller).
    pub audit: HostAuditLog,
}

/// Static tokens (when given), then ID tokens of the OIDC issuer (when given), then
/// TokenReview on the host.
pub fn authenticator(
    host: &kube::Client,
    static_tokens: Option<StaticTokenAuthenticator>,
    oidc: Option<Arc<OidcIssuer>>,
) -> Arc<dyn Authenticator> {
    let review: Arc<dyn Authenticator> = Arc::new(TokenReviewAuthenticator::new(host.clone()));
    let mut links: Vec<Arc<dyn Authenticator>> = Vec::new();
    if let Some(tokens) = static_tokens {
        links.push(Arc::new(tokens));
    }
    if let Some(issuer) = oidc {
        links.push(issuer);
    }
    if links.is_empty() {
        return review;
    }
    links.push(review);
    Arc::new(ChainAuthenticator::new(links))
}

/// Builds the API from `options`: REST, gRPC, OpenAPI, Swagger UI and the native proxy.
pub async fn build(options: ApiOptions) -> anyhow::Result<Api> {
    let host_clients = Arc::new(HostInstanceClients::new(
        options.host.clone(),
        // Users' requests: throttled by each instance, never by one shared client budget.
        options.client_options.relaying_users(),
        options.host_timeout,
        options.instance_client_refresh,
    ));
    // Deleted, re-created or re-credentialed instances stop being served as the watch sees it.
    tokio::spawn(
        host_clients
            .clone()
            .watch_instances(options.shutdown.clone()),
    );
    // One trail for every door: the service's writes, the proxy's and the host's.
    let audit = HostAuditLog::start(
        options.host.clone(),
        &options.audit.namespace,
        options.audit.retention,
        options.shutdown,
    );
    let audit_sink: Arc<dyn AuditSink> = Arc::new(audit.clone());
    let clients: Arc<dyn InstanceClients> = host_clients;
    let (cache, instance_cache): (Arc<dyn ReadBackend>, _) = match options.read_backend {
        ReadBackendFlag::Cache => {
            let embedded = Arc::new(EmbeddedCacheBackend::new(clients.clone()));
            (embedded.clone(), Some(embedded))
        }
        ReadBackendFlag::Clusterpedia => (
            Arc::new(ClusterpediaBackend::new(options.host.clone())),
            None,
        ),
    };
    let router = Arc::new(
        SplitRouter::with_config(
            cache,
            Arc::new(DirectBackend::new(clients.clone())),
            audited_writer(
                InstanceWriter::new(clients.clone()).with_identity(options.write_identity),
                audit_sink.clone(),
                options.write_identity,
            ),
            RouterConfig {
                read_your_writes_timeout: options.read_your_writes_timeout,
            },
        )
        // Clusterpedia does not know when an instance goes: the router checks for it.
        .with_instance_check(clients.clone()),
    );
    let router_dyn: Arc<dyn ReadWriteRouter> = router.clone();
    // One discovery cache: the proxy and the generic resource API ask the same questions.
    let discovery = Arc::new(DiscoveryCache::default());
    let service = KairshipService::new(
        options.host.clone(),
        router_dyn.clone(),
        options.authorizer.clone(),
        ServiceConfig {
            external_url: options.external_url,
            ca_pem: options.ca_pem,
            host_timeout: options.host_timeout,
            ..ServiceConfig::default()
        },
    )
    .with_discovery(clients.clone(), discovery.clone())
    .with_audit(audit.clone());
    // The fleet search answers from the embedded cache; with Clusterpedia there is none.
    let service: Arc<dyn KairshipApi> = Arc::new(match &instance_cache {
        Some(embedded) => service.with_search_cache(embedded.clone()),
        None => service,
    });
    let session_ttl = options.console_sessions.session_ttl;
    let console = kairship_core::console::routes(kairship_core::console::ConsoleParts {
        api: service.clone(),
        authenticator: options.authenticator.clone(),
        authorizer: options.authorizer.clone(),
        session_ttl,
        session_store: Arc::new(HostSessionStore::new(
            options.host.clone(),
            options.console_sessions,
        )),
        oidc: options.oidc,
    });
    let proxy = proxy_routes(
        ProxyState::new(
            router_dyn,
            clients,
            options.authenticator.clone(),
            options.authorizer,
        )
        .with_write_identity(options.write_identity)
        .with_shared_discovery(discovery)
        .with_audit(audit_sink),
    );
    let grpc = kairship_core::grpc::routes(service.clone(), options.authenticator.clone())
        .await
        .context("cannot build the gRPC services")?;
    let app = app(AppParts {
        api: service.clone(),
        authenticator: options.authenticator,
        proxy: Some(proxy),
        grpc: Some(grpc),
        console: Some(console),
    });
    // The proxy and REST find the limiter in each request.
    let app = match options.per_caller_limit {
        Some(limit) => app.layer(axum::Extension(Arc::new(CallerLimiter::new(limit)))),
        None => app,
    };
    Ok(Api {
        app,
        service,
        router,
        instance_cache,
        audit,
    })
}

/// `writer`, recording in `sink` each write it makes for a caller.
fn audited_writer(
    writer: InstanceWriter,
    sink: Arc<dyn AuditSink>,
    identity: WriteIdentity,
) -> Arc<dyn WriteBackend> {
    Arc::new(AuditedWriter::new(Arc::new(writer), sink, identity))
}
