//! `kairship apiserver`: flags, then the library's API server (REST, OpenAPI, Swagger UI and
//! the native proxy on one port) with the admin endpoints (metrics, probes).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use kairship_core::access::{Authorizer, WriteIdentity};
use kairship_core::api::tls;
use kairship_core::auth::{
    StaticAuthorizer, StaticTokenAuthenticator, SubjectAccessReviewAuthorizer,
};
use kairship_core::console::session_store::{
    DEFAULT_REVOCATIONS_NAME, DEFAULT_SECRET_NAME, HostSessionConfig,
};
use kairship_core::limit::Limit;
use kairship_core::server::serve;
use kube_kit::admin::{AdminServer, AdminState, Metrics, Readiness};
use kube_kit::args::parse_duration;
use kube_kit::client::{ClientOptions, client_from_kubeconfig, client_in_cluster, user_agent};
use kube_kit::telemetry::{LogFormat, LogOptions, resolve_filter};

use crate::wiring::{self, ApiOptions, AuditOptions, ReadBackendFlag};
use kairship_core::audit::Retention;

/// Name the API server reports as (user agent).
const COMPONENT: &str = "kairship-apiserver";

/// Flags of `kairship apiserver`.
#[derive(clap::Args, Debug)]
pub struct ApiserverArgs {
    /// Address of the API (REST, gRPC and the native proxy on one port).
    #[arg(long, env = "KAIRSHIP_LISTEN", default_value = "0.0.0.0:8443")]
    listen: SocketAddr,

    /// Kubeconfig of the host cluster (where Instances live); default: in-cluster, else
    /// $KUBECONFIG or ~/.kube/config.
    #[arg(
        long,
        visible_alias = "kubeconfig",
        env = "KAIRSHIP_HOST_KUBECONFIG",
        conflicts_with = "in_cluster"
    )]
    host_kubeconfig: Option<PathBuf>,

    /// Context of --host-kubeconfig; default: its current context.
    #[arg(long, env = "KAIRSHIP_HOST_CONTEXT", requires = "host_kubeconfig")]
    host_context: Option<String>,

    /// Reach the host cluster with the pod's service account.
    #[arg(long, env = "KAIRSHIP_IN_CLUSTER")]
    in_cluster: bool,

    /// PEM certificate chain for HTTPS.
    #[arg(
        long,
        env = "KAIRSHIP_TLS_CERT_FILE",
        requires = "tls_private_key_file"
    )]
    tls_cert_file: Option<PathBuf>,

    /// PEM private key for HTTPS.
    #[arg(
        long,
        env = "KAIRSHIP_TLS_PRIVATE_KEY_FILE",
        requires = "tls_cert_file"
    )]
    tls_private_key_file: Option<PathBuf>,

    /// Serve HTTPS with a generated self-signed certificate (development only); its PEM is
    /// written to --tls-dev-cert-out when given and embedded in issued kubeconfigs.
    #[arg(long, conflicts_with_all = ["tls_cert_file", "tls_private_key_file"])]
    tls_generate_dev: bool,

    /// Names (DNS or IP) of the generated development certificate.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "localhost,127.0.0.1",
        requires = "tls_generate_dev"
    )]
    tls_dev_names: Vec<String>,

    /// Where to write the generated development certificate (PEM).
    #[arg(long, requires = "tls_generate_dev")]
    tls_dev_cert_out: Option<PathBuf>,

    /// Static bearer tokens (kube-apiserver --token-auth-file CSV), checked before TokenReview.
    #[arg(long, env = "KAIRSHIP_TOKEN_FILE")]
    token_file: Option<PathBuf>,

    /// A static authorization policy file (development); default: SubjectAccessReview on the
    /// host cluster.
    #[arg(long, env = "KAIRSHIP_AUTHORIZATION_POLICY_FILE")]
    authorization_policy_file: Option<PathBuf>,

    /// Where reads of instance resources are answered.
    #[arg(long, env = "KAIRSHIP_READ_BACKEND", value_enum, default_value_t = ReadBackendFlag::Cache)]
    read_backend: ReadBackendFlag,

    /// How long a read waits for the cache to see the caller's own write before reading the
    /// instance directly.
    #[arg(long, env = "KAIRSHIP_READ_YOUR_WRITES_TIMEOUT", default_value = "1s", value_parser = parse_duration)]
    read_your_writes_timeout: Duration,

    /// Whose identity writes inside an instance carry: `impersonate` sends them with the
    /// instance's credentials and `Impersonate-User`/`Impersonate-Group` of the caller (the
    /// instance's RBAC decides and its audit log names the caller); `instance` sends them as
    /// the instance's credentials alone, for instances whose RBAC is not set up for it.
    #[arg(long, env = "KAIRSHIP_WRITE_IDENTITY", default_value = "impersonate")]
    write_identity: WriteIdentity,

    /// Base URL clients reach this server at, written into issued kubeconfigs.
    #[arg(long, env = "KAIRSHIP_EXTERNAL_URL")]
    external_url: Option<String>,

    /// Time one call to the host cluster may take.
    #[arg(long, env = "KAIRSHIP_HOST_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    host_timeout: Duration,

    /// How long an instance client is reused before its kubeconfig Secret is checked again.
    #[arg(long, env = "KAIRSHIP_INSTANCE_CLIENT_REFRESH", default_value = "30s", value_parser = parse_duration)]
    instance_client_refresh: Duration,

    /// Namespace (in the host cluster) of the console's session key Secret and sign-out
    /// ConfigMap: the API server's own (the chart sets POD_NAMESPACE).
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    console_session_namespace: String,

    /// The Secret holding the console's session keys; the API server creates it when absent
    /// and rotates its keys.
    #[arg(long, env = "KAIRSHIP_CONSOLE_SESSION_SECRET", default_value = DEFAULT_SECRET_NAME)]
    console_session_secret: String,

    /// The ConfigMap listing signed-out console sessions until they expire.
    #[arg(long, env = "KAIRSHIP_CONSOLE_REVOCATIONS_CONFIGMAP", default_value = DEFAULT_REVOCATIONS_NAME)]
    console_revocations_configmap: String,

    /// How long a console session lasts after sign-in.
    #[arg(long, env = "KAIRSHIP_CONSOLE_SESSION_TTL", default_value = "8h", value_parser = parse_duration)]
    console_session_ttl: Duration,

    /// How old the newest session key gets before a new one seals new sessions (older keys
    /// keep opening sessions until those expire).
    #[arg(long, env = "KAIRSHIP_CONSOLE_SESSION_KEY_ROTATION", default_value = "24h", value_parser = parse_duration)]
    console_session_key_rotation: Duration,

    #[command(flatten)]
    oidc: crate::oidc_flags::OidcArgs,

    /// Each caller's average rate of requests through the native proxy and REST writes, per
    /// second (a token bucket per authenticated user); beyond it the caller is answered 429
    /// with Retry-After. Off when absent.
    #[arg(long, env = "KAIRSHIP_PER_CALLER_QPS")]
    per_caller_qps: Option<f64>,

    /// How many such requests a caller may make at once; default: twice --per-caller-qps,
    /// rounded up.
    #[arg(long, env = "KAIRSHIP_PER_CALLER_BURST", requires = "per_caller_qps")]
    per_caller_burst: Option<u32>,

    /// Namespace (in the host cluster) of the audit trail's AuditRecords; default: the
    /// console's (the API server's own namespace).
    #[arg(long, env = "KAIRSHIP_AUDIT_NAMESPACE")]
    audit_namespace: Option<String>,

    /// Audit records older than this are deleted.
    #[arg(long, env = "KAIRSHIP_AUDIT_MAX_AGE", default_value = "168h", value_parser = parse_duration)]
    audit_max_age: Duration,

    /// Beyond this many audit records, the oldest are deleted.
    #[arg(long, env = "KAIRSHIP_AUDIT_MAX_RECORDS", default_value_t = 10_000)]
    audit_max_records: usize,

    /// Address of the `/metrics` endpoint.
    #[arg(long, env = "METRICS_ADDR", default_value = "0.0.0.0:8080")]
    metrics_addr: SocketAddr,

    /// Address of the `/healthz` and `/readyz` endpoints.
    #[arg(long, env = "PROBE_ADDR", default_value = "0.0.0.0:8081")]
    probe_addr: SocketAddr,

    /// Log filter (`EnvFilter` syntax); overrides RUST_LOG.
    #[arg(long, env = "LOG_LEVEL")]
    log_level: Option<String>,

    /// Log line format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// A flag combination or flag value that cannot work; the process exits with status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FlagError(String);

/// TLS as the flags ask for it: the server configuration and the CA clients must trust.
fn tls_from_flags(
    args: &ApiserverArgs,
) -> Result<Option<(rustls::ServerConfig, Option<String>)>, FlagError> {
    let read = |path: &PathBuf, what: &str| {
        std::fs::read(path)
            .map_err(|e| FlagError(format!("cannot read the {what} {}: {e}", path.display())))
    };
    if let (Some(cert), Some(key)) = (&args.tls_cert_file, &args.tls_private_key_file) {
        let config = tls::server_config(&read(cert, "TLS certificate")?, &read(key, "TLS key")?)
            .map_err(|e| FlagError(format!("--tls-cert-file/--tls-private-key-file: {e}")))?;
        return Ok(Some((config, None)));
    }
    if !args.tls_generate_dev {
        return Ok(None);
    }
    let dev = tls::generate_dev_certificate(&args.tls_dev_names)
        .map_err(|e| FlagError(format!("--tls-generate-dev: {e}")))?;
    if let Some(out) = &args.tls_dev_cert_out {
        std::fs::write(out, &dev.cert_pem)
            .map_err(|e| FlagError(format!("cannot write {}: {e}", out.display())))?;
    }
    let config = tls::server_config(dev.cert_pem.as_bytes(), dev.key_pem.as_bytes())
        .map_err(|e| FlagError(format!("--tls-generate-dev: {e}")))?;
    Ok(Some((config, Some(dev.cert_pem))))
}

/// The per-caller limit the flags ask for (none without --per-caller-qps).
fn per_caller_limit(args: &ApiserverArgs) -> Result<Option<Limit>, FlagError> {
    let Some(qps) = args.per_caller_qps else {
        return Ok(None);
    };
    let burst = args
        .per_caller_burst
        .unwrap_or_else(|| Limit::default_burst(qps));
    Limit::new(qps, burst).map(Some).ok_or_else(|| {
        FlagError(format!(
            "--per-caller-qps {qps} --per-caller-burst {burst}: the rate must be a positive \
             number and the burst at least 1"
        ))
    })
}

fn check_flags(args: &ApiserverArgs) -> Result<(), FlagError> {
    if let Some(url) = &args.external_url {
        kairship_core::api::instances::kubeconfig::proxy_url(url, "check")
            .map_err(|e| FlagError(format!("--external-url: {}", e.message)))?;
    }
    Ok(())
}

/// Runs the API server until SIGTERM/SIGINT. Bad flags print a message and exit with 2.
pub async fn run(args: ApiserverArgs) -> anyhow::Result<()> {
    let prepared = check_flags(&args).and_then(|()| {
        let tls = tls_from_flags(&args)?;
        let limit = per_caller_limit(&args)?;
        let authorizer: Option<Arc<dyn Authorizer>> = match &args.authorization_policy_file {
            Some(path) => Some(Arc::new(StaticAuthorizer::from_file(path).map_err(
                |e| {
                    FlagError(format!(
                        "--authorization-policy-file {}: {e}",
                        path.display()
                    ))
                },
            )?)),
            None => None,
        };
        let tokens = match &args.token_file {
            Some(path) => Some(
                StaticTokenAuthenticator::from_file(path)
                    .map_err(|e| FlagError(format!("--token-file {}: {e}", path.display())))?,
            ),
            None => None,
        };
        let oidc = args.oidc.prepare().map_err(FlagError)?;
        Ok((tls, authorizer, tokens, limit, oidc))
    });
    let (tls, static_authorizer, static_tokens, per_caller_limit, oidc) = match prepared {
        Ok(p) => p,
        Err(err) => {
            eprintln!("error: {err}");
            std::process::exit(2);
        }
    };

    let log = kube_kit::telemetry::init(&LogOptions {
        filter: resolve_filter(
            args.log_level.as_deref(),
            std::env::var("RUST_LOG").ok().as_deref(),
        ),
        format: args.log_format,
    })?;
    // Bound first: a busy port stops the process now, not after it ran without probes.
    let admin_server = AdminServer::bind(args.metrics_addr, args.probe_addr).await?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {} (--listen)", args.listen))?;
    let shutdown = kube_kit::shutdown::signal_token()?;
    let options = ClientOptions::new(user_agent(COMPONENT, env!("CARGO_PKG_VERSION")));
    let host = if args.in_cluster {
        client_in_cluster(&options)?
    } else {
        client_from_kubeconfig(
            args.host_kubeconfig.as_deref(),
            args.host_context.as_deref(),
            &options,
        )
        .await?
    };

    let authorizer: Arc<dyn Authorizer> = static_authorizer
        .unwrap_or_else(|| Arc::new(SubjectAccessReviewAuthorizer::new(host.clone())));
    let api = wiring::build(ApiOptions {
        host: host.clone(),
        client_options: options,
        read_backend: args.read_backend,
        read_your_writes_timeout: args.read_your_writes_timeout,
        host_timeout: args.host_timeout,
        instance_client_refresh: args.instance_client_refresh,
        shutdown: shutdown.clone(),
        authenticator: wiring::authenticator(
            &host,
            static_tokens,
            oidc.as_ref().map(|o| o.issuer.clone()),
        ),
        oidc,
        authorizer,
        external_url: args.external_url.clone(),
        ca_pem: tls.as_ref().and_then(|(_, ca)| ca.clone()),
        write_identity: args.write_identity,
        console_sessions: HostSessionConfig {
            secret_name: args.console_session_secret.clone(),
            revocations_name: args.console_revocations_configmap.clone(),
            rotate_every: args.console_session_key_rotation,
            ..HostSessionConfig::in_namespace(
                args.console_session_namespace.clone(),
                args.console_session_ttl,
            )
        },
        per_caller_limit,
        audit: AuditOptions {
            namespace: args
                .audit_namespace
                .clone()
                .unwrap_or_else(|| args.console_session_namespace.clone()),
            retention: Retention {
                max_age: args.audit_max_age,
                max_records: args.audit_max_records,
            },
        },
    })
    .await?;
    let metrics = Metrics::new();
    metrics.with_registry(|registry| {
        api.router.metrics().register(registry);
        api.audit.register(registry);
    });
    let app = api.app;

    let readiness = Readiness::new();
    readiness.flag("api").set(true);
    let admin = admin_server.spawn(
        AdminState {
            metrics,
            readiness,
            log: Some(log),
        },
        shutdown.clone(),
    );
    let served = serve(
        listener,
        app,
        tls.map(|(config, _)| config),
        shutdown.clone(),
    )
    .await;
    shutdown.cancel();
    served.context("the API server stopped")?;
    admin.await.context("admin server task")??;
    tracing::info!("apiserver stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        args: ApiserverArgs,
    }

    fn parse(flags: &[&str]) -> Result<ApiserverArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("apiserver").chain(flags.iter().copied()))
            .map(|c| c.args)
    }

    #[test]
    fn flag_combinations() {
        let ok = parse(&[]).unwrap();
        assert_eq!(ok.listen, "0.0.0.0:8443".parse().unwrap());
        assert_eq!(ok.read_backend, ReadBackendFlag::Cache);
        assert!(check_flags(&ok).is_ok());
        assert_eq!(ok.audit_max_records, 10_000);
        assert_eq!(ok.audit_max_age, Duration::from_secs(7 * 24 * 3600));
        let audit = parse(&["--audit-max-age", "1h", "--audit-max-records", "50"]).unwrap();
        assert_eq!(audit.audit_max_age, Duration::from_secs(3600));
        assert_eq!(audit.audit_max_records, 50);
        assert!(tls_from_flags(&ok).unwrap().is_none());

        for bad in [
            vec!["--tls-cert-file", "c.pem"],
            vec![
                "--tls-generate-dev",
                "--tls-cert-file",
                "c.pem",
                "--tls-private-key-file",
                "k.pem",
            ],
            vec!["--in-cluster", "--host-kubeconfig", "k"],
            vec!["--host-context", "x"],
            vec!["--read-backend", "etcd"],
            vec!["--listen", "nowhere"],
            vec!["--read-your-writes-timeout", "soon"],
            vec!["--audit-max-records", "many"],
            vec!["--audit-max-age", "forever"],
        ] {
            let err = parse(&bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}");
        }

        let bad_url = parse(&["--external-url", "kairship.example.com"]).unwrap();
        assert!(
            check_flags(&bad_url)
                .unwrap_err()
                .0
                .contains("--external-url")
        );
        let embedded = parse(&["--read-backend", "embedded", "--kubeconfig", "k"]).unwrap();
        assert_eq!(embedded.read_backend, ReadBackendFlag::Cache);
        assert_eq!(embedded.host_kubeconfig, Some(PathBuf::from("k")));
        // The per-caller limit: off by default, the burst twice the rate unless given.
        assert_eq!(per_caller_limit(&ok).unwrap(), None);
        for (flags, want) in [
            (vec!["--per-caller-qps", "5"], Some((5.0, 10))),
            (vec!["--per-caller-qps", "0.5"], Some((0.5, 1))),
            (
                vec!["--per-caller-qps", "20", "--per-caller-burst", "3"],
                Some((20.0, 3)),
            ),
        ] {
            let limit = per_caller_limit(&parse(&flags).unwrap()).unwrap();
            assert_eq!(
                limit.map(|l| (l.per_second(), l.burst())),
                want,
                "{flags:?}"
            );
        }
        for bad in [
            vec!["--per-caller-qps", "0"],
            vec!["--per-caller-qps=-1"],
            vec!["--per-caller-qps", "5", "--per-caller-burst", "0"],
        ] {
            let err = per_caller_limit(&parse(&bad).unwrap()).unwrap_err();
            assert!(err.0.contains("--per-caller-qps"), "{bad:?}: {err}");
        }
        for bad in [
            vec!["--per-caller-burst", "3"],
            vec!["--per-caller-qps", "fast"],
        ] {
            assert_eq!(parse(&bad).unwrap_err().exit_code(), 2, "{bad:?}");
        }
        let pedia = parse(&["--read-backend", "clusterpedia"]).unwrap();
        assert_eq!(pedia.read_backend, ReadBackendFlag::Clusterpedia);
        let missing = parse(&[
            "--tls-cert-file",
            "/nonexistent/c.pem",
            "--tls-private-key-file",
            "/nonexistent/k.pem",
        ])
        .unwrap();
        assert!(
            tls_from_flags(&missing)
                .unwrap_err()
                .0
                .contains("cannot read")
        );
        let dev = parse(&["--tls-generate-dev"]).unwrap();
        let (config, ca) = tls_from_flags(&dev).unwrap().unwrap();
        assert!(ca.is_some_and(|pem| pem.contains("BEGIN CERTIFICATE")));
        assert_eq!(config.alpn_protocols[0], b"h2");
    }
}
