//! `kubeocean proxier`: flags and files, then [`kubeocean_core::proxier::Proxier`].
//!
//! Exit codes: 2 for unusable flags or files (unreadable or invalid certificates, no way to
//! authenticate clients), 1 for failures while running.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use kube_kit::admin::AdminState;
use kube_kit::args::parse_duration;
use kubeocean_core::proxier::{Proxier, ProxierConfig, ProxierMetrics, tls};

/// Flags of `kubeocean proxier`.
#[derive(Debug, clap::Args)]
pub struct ProxierArgs {
    /// Name of the ClusterBinding whose virtual nodes are served.
    #[arg(long, env = "CLUSTER_BINDING")]
    cluster_binding: String,

    /// Address of the kubelet API of the virtual nodes.
    #[arg(long, env = "PROXIER_LISTEN", default_value = "0.0.0.0:10250")]
    listen: SocketAddr,

    /// Ports (`START-END`) of the virtual nodes' own endpoints: the proxier listens, on the IP
    /// of --listen, on the port each virtual node of the binding advertises within this
    /// range, and answers there for that node alone; `0`: only --listen.
    #[arg(long, env = "PROXIER_NODE_PORTS", default_value = "0", value_parser = crate::manager::parse_port_range)]
    node_ports: crate::manager::PortRange,

    /// Port (on the IP of --listen) of upstream Kubeocean's single-port cAdvisor endpoint,
    /// plain HTTP `/{vnode}/metrics`, which the `kubeocean.io/prometheus-url` annotation of
    /// the virtual nodes points at; `0`: not served.
    #[arg(long, env = "VNODE_METRICS_PORT", default_value_t = kubeocean_core::proxier::vnode_metrics::DEFAULT_PORT)]
    vnode_metrics_port: u16,

    /// Serving certificate (PEM, leaf first).
    #[arg(long, env = "TLS_CERT_FILE", value_name = "FILE")]
    tls_cert_file: PathBuf,

    /// Serving private key (PEM).
    #[arg(long, env = "TLS_PRIVATE_KEY_FILE", value_name = "FILE")]
    tls_private_key_file: PathBuf,

    /// CA bundle (PEM) whose client certificates are accepted: the computing cluster's CA.
    #[arg(long, env = "CLIENT_CA_FILE", value_name = "FILE")]
    client_ca_file: Option<PathBuf>,

    /// Accept bearer tokens, checked by TokenReview on the computing cluster.
    #[arg(long, env = "TOKEN_REVIEW")]
    token_review: bool,

    /// Audience a reviewed token must carry; repeatable (default: any).
    #[arg(long = "token-audience", value_name = "AUDIENCE")]
    token_audiences: Vec<String>,

    /// How long TokenReview and SubjectAccessReview results are reused.
    #[arg(long, env = "AUTH_CACHE_TTL", default_value = "10s", value_parser = parse_duration)]
    auth_cache_ttl: Duration,

    /// Namespace of the binding's Secret when its secretRef has none.
    #[arg(long, env = "POD_NAMESPACE", default_value = "kubeocean-system")]
    secret_namespace: String,

    #[command(flatten)]
    kube: kube_kit::Args,
}

/// The PEM files the flags name, read and checked.
#[derive(Debug)]
struct TlsFiles {
    cert: String,
    key: String,
    client_ca: Option<String>,
}

fn read(path: &Path, what: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {what} {}: {e}", path.display()))
}

/// Reads the certificate files and checks that they make a usable TLS setup and that
/// clients have some way to authenticate.
fn load_tls_files(args: &ProxierArgs) -> Result<TlsFiles, String> {
    if args.client_ca_file.is_none() && !args.token_review {
        return Err(
            "clients could not authenticate: give --client-ca-file, --token-review or both".into(),
        );
    }
    let files = TlsFiles {
        cert: read(&args.tls_cert_file, "--tls-cert-file")?,
        key: read(&args.tls_private_key_file, "--tls-private-key-file")?,
        client_ca: args
            .client_ca_file
            .as_deref()
            .map(|path| read(path, "--client-ca-file"))
            .transpose()?,
    };
    tls::server_config(&files.cert, &files.key, files.client_ca.as_deref())
        .map_err(|e| e.to_string())?;
    Ok(files)
}

/// Runs `kubeocean proxier` and returns the process exit code.
pub fn main(args: ProxierArgs) -> ExitCode {
    let files = match load_tls_files(&args) {
        Ok(files) => files,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    // One worker thread per CPU.
    kube_kit::process::run(0, run(args, files))
}

/// Serves until SIGTERM/SIGINT.
async fn run(args: ProxierArgs, files: TlsFiles) -> anyhow::Result<()> {
    let kube_kit::process::Started {
        log,
        admin: admin_server,
        shutdown: token,
        client_options: options,
        client,
    } = kube_kit::process::start(&args.kube, "kubeocean-proxier", env!("CARGO_PKG_VERSION"))
        .await?;

    let admin_state = AdminState {
        log: Some(log),
        ..AdminState::default()
    };
    let metrics = ProxierMetrics::register(&admin_state.metrics);
    let ready = admin_state.readiness.flag("proxier");
    let admin = admin_server.spawn(admin_state, token.clone());

    let mut config = ProxierConfig::new(&args.cluster_binding, args.listen, files.cert, files.key);
    config.client_ca_pem = files.client_ca;
    config.token_review = args.token_review;
    config.token_audiences = args.token_audiences.clone();
    config.auth_cache_ttl = args.auth_cache_ttl;
    config.secret_namespace = args.secret_namespace.clone();
    config.client_options = options;
    config.metrics = Some(metrics);
    config.node_ports = args.node_ports.0.clone();
    config.vnode_metrics_port = (args.vnode_metrics_port != 0).then_some(args.vnode_metrics_port);
    let bound = Proxier::new(client, config)
        .bind()
        .await
        .context("starting the proxier")?;
    ready.set(true);
    let served = bound.run(token.clone()).await.context("proxier");
    token.cancel();
    admin.await.context("admin server task")??;
    served
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use kubeocean_core::proxier::self_signed_serving_cert;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        args: ProxierArgs,
    }

    fn parse(args: &[&str]) -> Result<ProxierArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("proxier").chain(args.iter().copied())).map(|c| c.args)
    }

    struct TempDir(PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn flags_and_files() {
        let dir = TempDir(
            std::env::temp_dir().join(format!("kubeocean-proxier-flags-{}", std::process::id())),
        );
        std::fs::create_dir_all(&dir.0).unwrap();
        let (cert, key) = self_signed_serving_cert(&[]).unwrap();
        let (ca, _) = self_signed_serving_cert(&["ca".to_owned()]).unwrap();
        let write = |name: &str, content: &str| {
            let path = dir.0.join(name);
            std::fs::write(&path, content).unwrap();
            path.display().to_string()
        };
        let (cert, key, ca, junk) = (
            write("tls.crt", &cert),
            write("tls.key", &key),
            write("ca.crt", &ca),
            write("junk", "not pem"),
        );
        let missing = dir.0.join("missing").display().to_string();

        assert!(parse(&["--tls-cert-file", &cert, "--tls-private-key-file", &key]).is_err());
        assert!(parse(&["--cluster-binding", "b1", "--tls-cert-file", &cert]).is_err());
        assert!(
            parse(&[
                "--cluster-binding",
                "b1",
                "--listen",
                "nowhere",
                "--tls-cert-file",
                &cert,
                "--tls-private-key-file",
                &key
            ])
            .is_err()
        );

        let base = [
            "--cluster-binding",
            "b1",
            "--tls-cert-file",
            &cert,
            "--tls-private-key-file",
            &key,
        ];
        let defaults = parse(&base).unwrap();
        assert_eq!(defaults.listen, "0.0.0.0:10250".parse().unwrap());
        assert_eq!(defaults.auth_cache_ttl, Duration::from_secs(10));
        assert!(!defaults.token_review);

        let cases: Vec<(Vec<&str>, Result<(), &str>)> = vec![
            (vec![], Err("could not authenticate")),
            (vec!["--token-review"], Ok(())),
            (vec!["--client-ca-file", &ca], Ok(())),
            (
                vec![
                    "--client-ca-file",
                    &ca,
                    "--token-review",
                    "--token-audience",
                    "a",
                ],
                Ok(()),
            ),
            (
                vec!["--client-ca-file", &missing],
                Err("cannot read --client-ca-file"),
            ),
            (vec!["--client-ca-file", &junk], Err("client CA")),
        ];
        for (extra, want) in cases {
            let args = parse(&[&base[..], &extra[..]].concat()).unwrap();
            match (load_tls_files(&args), want) {
                (Ok(files), Ok(())) => {
                    assert!(files.cert.contains("BEGIN CERTIFICATE"));
                    assert_eq!(files.client_ca.is_some(), args.client_ca_file.is_some());
                }
                (Err(err), Err(expected)) => assert!(err.contains(expected), "{extra:?}: {err}"),
                (got, want) => panic!("{extra:?}: got {got:?}, want {want:?}"),
            }
        }

        for (cert_file, key_file, expected) in [
            (
                missing.as_str(),
                key.as_str(),
                "cannot read --tls-cert-file",
            ),
            (
                cert.as_str(),
                missing.as_str(),
                "cannot read --tls-private-key-file",
            ),
            (junk.as_str(), key.as_str(), "serving certificate"),
            (cert.as_str(), junk.as_str(), "serving certificate"),
        ] {
            let args = parse(&[
                "--cluster-binding",
                "b1",
                "--token-review",
                "--tls-cert-file",
                cert_file,
                "--tls-private-key-file",
                key_file,
            ])
            .unwrap();
            let err = load_tls_files(&args).unwrap_err();
            assert!(err.contains(expected), "{err}");
        }
    }
}
