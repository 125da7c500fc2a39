//! Building `kube::Client`s: from a kubeconfig file and context, from the in-cluster service
//! account, or from a kubeconfig held in a Secret (a worker cluster's credentials), each with
//! a user agent, timeouts and a client-side QPS/burst limit.
//!
//! Error messages name the kubeconfig, context or Secret that failed and why, but never
//! include credential material: errors that could carry it (YAML excerpts, exec-plugin
//! output) are reduced to a description of what was wrong.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http::HeaderValue;
use http::header::USER_AGENT;
use k8s_openapi::api::core::v1::Secret;
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError, LoadDataError};
use kube::{Api, Client, Config};

use crate::ratelimit::RateLimitLayer;

/// The Secret key holding a kubeconfig.
pub const KUBECONFIG_SECRET_KEY: &str = "kubeconfig";

/// Default sustained client-side request rate.
pub const DEFAULT_QPS: f64 = 20.0;
/// Default client-side burst.
pub const DEFAULT_BURST: u32 = 30;
/// Default TCP/TLS connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default timeout for writing a request.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Options shared by every client a component builds.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// `User-Agent` header, e.g. from [`user_agent`].
    pub user_agent: String,
    /// The request limit; share one layer between clients to share one budget.
    pub rate_limit: RateLimitLayer,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Write timeout.
    pub write_timeout: Duration,
    /// Read timeout; `None` by default because watches are long-lived reads.
    pub read_timeout: Option<Duration>,
    /// Whether requests answered `429`, `503` or `504` are sent again (kube-rs's server retry
    /// policy, with backoff); on by default.
    pub server_retry: bool,
}

impl ClientOptions {
    /// Options with the default limits and timeouts for the given user agent.
    pub fn new(user_agent: impl Into<String>) -> Self {
        Self {
            user_agent: user_agent.into(),
            rate_limit: RateLimitLayer::new(DEFAULT_QPS, DEFAULT_BURST),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            read_timeout: None,
            server_retry: true,
        }
    }

    /// Replaces the request limit (`qps <= 0` disables it).
    #[must_use]
    pub fn with_rate_limit(mut self, qps: f64, burst: u32) -> Self {
        self.rate_limit = RateLimitLayer::new(qps, burst);
        self
    }

    /// Options for clients that relay many users' requests (a gateway or proxy in front of an
    /// apiserver): no client-side limit, whose one budget would make every user wait for the
    /// others, and no retries. The apiserver throttles them itself, as it throttles users
    /// calling it directly (API Priority and Fairness answers `429 Too Many Requests` with
    /// `Retry-After`), and the gateway passes that answer back at once for the user's client
    /// to wait and retry, instead of holding the request through a backoff of its own.
    /// Controllers keep their own limited, retrying clients.
    #[must_use]
    pub fn relaying_users(mut self) -> Self {
        self.server_retry = false;
        self.with_rate_limit(0.0, 0)
    }
}

/// The user agent of a component: `component/version (kube-kit)`.
pub fn user_agent(component: &str, version: &str) -> String {
    format!("{component}/{version} (kube-kit)")
}

/// Why a client could not be built; says which source failed, never with credentials.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// A kubeconfig (file, `$KUBECONFIG` list or Secret) could not be used.
    #[error("kubeconfig {source_name}{}: {reason}", context_suffix(.context))]
    Kubeconfig {
        /// The file path(s) or `secret <namespace>/<name>`.
        source_name: String,
        /// The requested context, if any.
        context: Option<String>,
        /// What was wrong.
        reason: String,
    },
    /// The in-cluster service-account configuration could not be read.
    #[error("in-cluster configuration: {reason}")]
    InCluster {
        /// What was wrong.
        reason: String,
    },
    /// The Secret holding a kubeconfig could not be read.
    #[error("secret {namespace}/{name}: {reason}")]
    Secret {
        /// Namespace of the Secret.
        namespace: String,
        /// Name of the Secret.
        name: String,
        /// What was wrong.
        reason: String,
    },
    /// The configuration was read but the client stack could not be built.
    #[error("building a client for {source_name}: {reason}")]
    Build {
        /// Where the configuration came from.
        source_name: String,
        /// What was wrong.
        reason: String,
    },
    /// The user agent is not a valid header value.
    #[error("user agent {0:?} is not a valid header value")]
    UserAgent(String),
}

fn context_suffix(context: &Option<String>) -> String {
    context
        .as_deref()
        .map(|c| format!(" (context {c:?})"))
        .unwrap_or_default()
}

/// Describes a kubeconfig error without anything that could be a credential.
pub fn describe_kubeconfig_error(err: &KubeconfigError) -> String {
    fn data(what: &str, err: &LoadDataError) -> String {
        match err {
            LoadDataError::DecodeBase64(_) => format!("{what} data is not valid base64"),
            LoadDataError::ReadFile(io, path) => {
                format!("cannot read {what} file {}: {io}", path.display())
            }
            LoadDataError::NoBase64DataOrFile => format!("{what} has neither data nor a file"),
        }
    }
    match err {
        KubeconfigError::CurrentContextNotSet => {
            "no context given and no current-context set".into()
        }
        KubeconfigError::LoadContext(name) => format!("context {name:?} not found"),
        KubeconfigError::LoadClusterOfContext(name) => {
            format!("cluster {name:?} of the context not found")
        }
        KubeconfigError::FindPath => {
            "no kubeconfig path found ($KUBECONFIG or ~/.kube/config)".into()
        }
        KubeconfigError::ReadConfig(io, path) => format!("cannot read {}: {io}", path.display()),
        // serde errors can quote the offending value, which may be a token or key.
        KubeconfigError::Parse(_) => "not a valid kubeconfig YAML document".into(),
        KubeconfigError::MissingClusterUrl => "the selected cluster has no server URL".into(),
        KubeconfigError::ParseClusterUrl(e) => format!("invalid cluster server URL: {e}"),
        KubeconfigError::ParseProxyUrl(e) => format!("invalid proxy URL: {e}"),
        KubeconfigError::LoadCertificateAuthority(e) => data("certificate authority", e),
        KubeconfigError::LoadClientCertificate(e) => data("client certificate", e),
        KubeconfigError::LoadClientKey(e) => data("client key", e),
        KubeconfigError::ParseCertificates(_) => "certificates are not valid PEM".into(),
        KubeconfigError::KindMismatch => "kubeconfigs of different kinds cannot be merged".into(),
        KubeconfigError::ApiVersionMismatch => {
            "kubeconfigs of different apiVersions cannot be merged".into()
        }
        #[allow(unreachable_patterns)]
        _ => "the kubeconfig could not be loaded".into(),
    }
}

/// Whether `err` is the API server's 404 Not Found.
pub fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 404)
}

/// A request's result with 404 Not Found as `Ok(None)`: for reads of objects that may be gone
/// and deletes of objects that may be gone already.
pub fn ignore_not_found<T>(result: Result<T, kube::Error>) -> Result<Option<T>, kube::Error> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(err) if is_not_found(&err) => Ok(None),
        Err(err) => Err(err),
    }
}

/// Describes a client-building error without anything that could be a credential.
pub fn describe_kube_error(err: &kube::Error) -> String {
    use kube::client::AuthError;
    match err {
        kube::Error::InferKubeconfig(e) => describe_kubeconfig_error(e),
        kube::Error::Auth(auth) => match auth {
            AuthError::InvalidBasicAuth(_) => {
                "basic-auth credentials are not a valid header".into()
            }
            AuthError::InvalidBearerToken(_) => "the bearer token is not a valid header".into(),
            AuthError::ReadTokenFile(io, path) => {
                format!("cannot read token file {}: {io}", path.display())
            }
            AuthError::AuthExecStart(io) => {
                format!("cannot start the exec credential plugin: {io}")
            }
            // The plugin's output is withheld: it is where a token would be.
            AuthError::AuthExecRun { cmd, out } => {
                format!("exec credential plugin {cmd:?} failed with {}", out.status)
            }
            _ => "the authentication settings are invalid (details withheld)".into(),
        },
        other => other.to_string(),
    }
}

/// Makes ring the process-wide rustls provider unless one is installed already, so TLS
/// clients work whichever other rustls backends the dependency graph enables.
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race with another installer is fine: some provider is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// Builds a client from a loaded [`Config`], adding the user agent, timeouts and limit.
pub fn client_from_config(
    mut config: Config,
    options: &ClientOptions,
    source_name: &str,
) -> Result<Client, ClientError> {
    let agent = HeaderValue::from_str(&options.user_agent)
        .map_err(|_| ClientError::UserAgent(options.user_agent.clone()))?;
    config.headers.retain(|(name, _)| name != USER_AGENT);
    config.headers.push((USER_AGENT, agent));
    config.connect_timeout = Some(options.connect_timeout);
    config.write_timeout = Some(options.write_timeout);
    config.read_timeout = options.read_timeout;
    config.default_retry = options.server_retry;
    install_crypto_provider();
    let builder =
        kube::client::ClientBuilder::try_from(config).map_err(|e| ClientError::Build {
            source_name: source_name.to_owned(),
            reason: describe_kube_error(&e),
        })?;
    Ok(builder.with_layer(&options.rate_limit).build())
}

/// Builds a client from a kubeconfig file (or a `:`-separated list, as `$KUBECONFIG`),
/// or from `$KUBECONFIG` / `~/.kube/config` when `path` is `None`, using `context` or the
/// current context.
pub async fn client_from_kubeconfig(
    path: Option<&Path>,
    context: Option<&str>,
    options: &ClientOptions,
) -> Result<Client, ClientError> {
    let kube_options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    let (config, source_name) = match path {
        Some(path) => {
            let source_name = path.display().to_string();
            let fail = |e: &KubeconfigError| ClientError::Kubeconfig {
                source_name: source_name.clone(),
                context: context.map(str::to_owned),
                reason: describe_kubeconfig_error(e),
            };
            let kubeconfig = read_kubeconfig_list(path).map_err(|e| fail(&e))?;
            let config = Config::from_custom_kubeconfig(kubeconfig, &kube_options)
                .await
                .map_err(|e| fail(&e))?;
            (config, source_name)
        }
        None => {
            let source_name =
                std::env::var("KUBECONFIG").unwrap_or_else(|_| "~/.kube/config".to_owned());
            let config = Config::from_kubeconfig(&kube_options).await.map_err(|e| {
                ClientError::Kubeconfig {
                    source_name: source_name.clone(),
                    context: context.map(str::to_owned),
                    reason: describe_kubeconfig_error(&e),
                }
            })?;
            (config, source_name)
        }
    };
    client_from_config(config, options, &source_name)
}

/// Reads one kubeconfig file, or merges a `:`-separated list the way kubectl does.
fn read_kubeconfig_list(path: &Path) -> Result<Kubeconfig, KubeconfigError> {
    let paths: Vec<PathBuf> = std::env::split_paths(path.as_os_str())
        .filter(|p| !p.as_os_str().is_empty())
        .collect();
    let mut merged: Option<Kubeconfig> = None;
    for path in paths {
        let next = Kubeconfig::read_from(&path)?;
        merged = Some(match merged {
            Some(acc) => acc.merge(next)?,
            None => next,
        });
    }
    merged.ok_or(KubeconfigError::FindPath)
}

/// Builds a client from the pod's service account (`KUBERNETES_SERVICE_HOST` and the
/// mounted token and CA).
pub fn client_in_cluster(options: &ClientOptions) -> Result<Client, ClientError> {
    let config = Config::incluster().map_err(|e| ClientError::InCluster {
        reason: e.to_string(),
    })?;
    client_from_config(config, options, "in-cluster service account")
}

/// Whether the process runs in a pod (the in-cluster environment variables are set).
pub fn in_cluster() -> bool {
    std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
}

/// Builds a client from kubeconfig YAML text; `source_name` says where it came from.
pub async fn client_from_kubeconfig_yaml(
    yaml: &str,
    context: Option<&str>,
    options: &ClientOptions,
    source_name: &str,
) -> Result<Client, ClientError> {
    let fail = |e: &KubeconfigError| ClientError::Kubeconfig {
        source_name: source_name.to_owned(),
        context: context.map(str::to_owned),
        reason: describe_kubeconfig_error(e),
    };
    let kubeconfig = Kubeconfig::from_yaml(yaml).map_err(|e| fail(&e))?;
    let kube_options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    let config = Config::from_custom_kubeconfig(kubeconfig, &kube_options)
        .await
        .map_err(|e| fail(&e))?;
    client_from_config(config, options, source_name)
}

/// Extracts the kubeconfig text from a Secret's `kubeconfig` key.
pub fn kubeconfig_from_secret(secret: &Secret) -> Result<String, String> {
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get(KUBECONFIG_SECRET_KEY))
        .map(|b| b.0.clone())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get(KUBECONFIG_SECRET_KEY))
                .map(|s| s.clone().into_bytes())
        })
        .ok_or_else(|| format!("has no {KUBECONFIG_SECRET_KEY:?} key"))?;
    String::from_utf8(bytes).map_err(|_| format!("key {KUBECONFIG_SECRET_KEY:?} is not UTF-8 text"))
}

/// Builds a client for another cluster from the kubeconfig in the Secret
/// `namespace/name` (key `kubeconfig`), read with `client`.
pub async fn client_from_secret(
    client: &Client,
    namespace: &str,
    name: &str,
    context: Option<&str>,
    options: &ClientOptions,
) -> Result<Client, ClientError> {
    let secret_error = |reason: String| ClientError::Secret {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        reason,
    };
    let secret = Api::<Secret>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|e| secret_error(format!("cannot be read: {}", describe_kube_error(&e))))?
        .ok_or_else(|| secret_error("not found".into()))?;
    let yaml = kubeconfig_from_secret(&secret).map_err(secret_error)?;
    client_from_kubeconfig_yaml(
        &yaml,
        context,
        options,
        &format!("secret {namespace}/{name}"),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_relaying_users_have_no_shared_budget() {
        let controller = ClientOptions::new("c");
        assert!(controller.rate_limit.is_limited());
        let gateway = controller.clone().relaying_users();
        assert!(!gateway.rate_limit.is_limited());
        assert!(!gateway.server_retry);
        assert_eq!(gateway.user_agent, "c");
        // The controller's budget and retries are untouched.
        assert!(controller.rate_limit.is_limited());
        assert!(controller.server_retry);
    }

    #[test]
    fn not_found() {
        let api = |code: u16| {
            kube::Error::Api(
                kube::core::Status::failure("failed", "Reason")
                    .with_code(code)
                    .boxed(),
            )
        };
        for (result, want) in [
            (Ok(1), Ok(Some(1))),
            (Err(api(404)), Ok(None)),
            (Err(api(409)), Err(409)),
            (Err(api(500)), Err(500)),
        ] {
            let got = ignore_not_found(result).map_err(|e| match e {
                kube::Error::Api(s) => s.code,
                _ => 0,
            });
            assert_eq!(got, want);
        }
        assert!(is_not_found(&api(404)));
        assert!(!is_not_found(&api(410)));
        assert!(!is_not_found(&kube::Error::LinesCodecMaxLineLengthExceeded));
    }
    use k8s_openapi::ByteString;
    use std::collections::BTreeMap;

    const SECRET_TOKEN: &str = "s3cr3t-t0ken-value";

    fn kubeconfig(server: &str, token: &str) -> String {
        format!(
            "apiVersion: v1
kind: Config
current-context: main
clusters:
- name: c1
  cluster:
    server: {server}
contexts:
- name: main
  context:
    cluster: c1
    user: u1
    namespace: team-a
users:
- name: u1
  user:
    token: {token}
"
        )
    }

    fn opts() -> ClientOptions {
        ClientOptions::new(user_agent("test", "0.0.0"))
    }

    #[tokio::test]
    async fn yaml_with_context_builds_client_with_its_namespace() {
        let client = client_from_kubeconfig_yaml(
            &kubeconfig("http://127.0.0.1:1", SECRET_TOKEN),
            Some("main"),
            &opts(),
            "inline",
        )
        .await
        .unwrap();
        assert_eq!(client.default_namespace(), "team-a");
    }

    #[tokio::test]
    async fn errors_name_the_source_and_context_but_not_credentials() {
        let cases = [
            (
                kubeconfig("http://127.0.0.1:1", SECRET_TOKEN),
                Some("missing"),
                "context \"missing\" not found",
            ),
            (
                // A type error makes serde quote the value: the token must not leak.
                format!("apiVersion: v1\nkind: Config\nusers: {SECRET_TOKEN}\n"),
                None,
                "not a valid kubeconfig YAML document",
            ),
            (
                kubeconfig("http://[::1", SECRET_TOKEN),
                Some("main"),
                "invalid cluster server URL",
            ),
        ];
        for (yaml, context, want) in cases {
            let err = client_from_kubeconfig_yaml(&yaml, context, &opts(), "secret ns/worker")
                .await
                .err()
                .unwrap();
            let text = format!("{err} {err:?}");
            assert!(text.contains("secret ns/worker"), "{text}");
            assert!(text.contains(want), "want {want:?} in {text}");
            assert!(!text.contains(SECRET_TOKEN), "credential leaked: {text}");
            if let Some(c) = context {
                assert!(text.contains(c), "{text}");
            }
        }
    }

    #[tokio::test]
    async fn file_list_is_merged_and_missing_file_is_named() {
        let dir = std::env::temp_dir().join(format!("kube-kit-client-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = dir.join("a.yaml");
        std::fs::write(&a, kubeconfig("http://127.0.0.1:1", SECRET_TOKEN)).unwrap();
        let joined = std::env::join_paths([a.clone(), dir.join("absent.yaml")]).unwrap();
        let err = client_from_kubeconfig(Some(Path::new(&joined)), None, &opts())
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("absent.yaml"), "{err}");
        assert!(!err.contains(SECRET_TOKEN), "{err}");

        let client = client_from_kubeconfig(Some(&a), Some("main"), &opts())
            .await
            .unwrap();
        assert_eq!(client.default_namespace(), "team-a");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn kubeconfig_from_secret_table() {
        let secret = |data: Option<(&str, Vec<u8>)>| Secret {
            data: data.map(|(k, v)| BTreeMap::from([(k.to_owned(), ByteString(v))])),
            ..Secret::default()
        };
        assert_eq!(
            kubeconfig_from_secret(&secret(Some(("kubeconfig", b"apiVersion: v1".to_vec())))),
            Ok("apiVersion: v1".to_owned())
        );
        assert!(
            kubeconfig_from_secret(&secret(Some(("config", b"x".to_vec()))))
                .unwrap_err()
                .contains("no \"kubeconfig\" key")
        );
        assert!(kubeconfig_from_secret(&secret(None)).is_err());
        assert!(
            kubeconfig_from_secret(&secret(Some(("kubeconfig", vec![0xff, 0xfe]))))
                .unwrap_err()
                .contains("not UTF-8")
        );
    }

    #[test]
    fn describe_exec_failure_withholds_output() {
        use kube::client::AuthError;
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("echo {SECRET_TOKEN}; exit 3")])
            .output()
            .unwrap();
        let err = kube::Error::Auth(AuthError::AuthExecRun {
            cmd: "get-token".into(),
            out: Box::new(out),
        });
        let text = describe_kube_error(&err);
        assert!(text.contains("get-token"), "{text}");
        assert!(!text.contains(SECRET_TOKEN), "{text}");
    }

    #[test]
    fn invalid_user_agent_is_rejected() {
        let config = Config::new("http://127.0.0.1:1".parse().unwrap());
        let err = client_from_config(config, &ClientOptions::new("bad\nagent"), "x")
            .err()
            .unwrap();
        assert!(matches!(err, ClientError::UserAgent(_)));
    }
}
