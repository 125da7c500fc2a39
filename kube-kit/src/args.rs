//! The command-line flags every controller binary shares, each also readable from an
//! environment variable; `#[command(flatten)]` them into a binary's own `Args`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use kube::Client;

use crate::client::{self, ClientError, ClientOptions};
use crate::leader::{
    AlwaysLeader, LeaderElectionConfig, LeaderElectionError, LeaderElectionMetrics, LeaderElector,
    LeaseElector, default_identity,
};
use crate::telemetry::{LogFormat, LogOptions, resolve_filter};

/// Where a pod finds its own namespace.
const SERVICE_ACCOUNT_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Shared flags: cluster access, logging, admin addresses and leader election.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct Args {
    /// Kubeconfig file (or `:`-separated list); default: in-cluster, else ~/.kube/config.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,

    /// Kubeconfig context; default: the current context.
    #[arg(long, env = "KUBE_CONTEXT")]
    pub context: Option<String>,

    /// Sustained client-side request rate to the API server (0 disables the limit).
    #[arg(long, env = "KUBE_API_QPS", default_value_t = client::DEFAULT_QPS)]
    pub kube_api_qps: f64,

    /// Requests that may be sent at once above the sustained rate.
    #[arg(long, env = "KUBE_API_BURST", default_value_t = client::DEFAULT_BURST)]
    pub kube_api_burst: u32,

    /// Log filter (`EnvFilter` syntax, e.g. `info,kube=debug`); overrides RUST_LOG.
    #[arg(long, env = "LOG_LEVEL")]
    pub log_level: Option<String>,

    /// Log line format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Address of the `/metrics` endpoint.
    #[arg(long, env = "METRICS_ADDR", default_value = "0.0.0.0:8080")]
    pub metrics_addr: SocketAddr,

    /// Address of the `/healthz`, `/readyz` and `/debug/log-level` endpoints.
    #[arg(long, env = "PROBE_ADDR", default_value = "0.0.0.0:8081")]
    pub probe_addr: SocketAddr,

    /// Run only while holding the leader election lease (for several replicas).
    #[arg(
        long,
        env = "LEADER_ELECT",
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_value_t = false,
        default_missing_value = "true",
        value_parser = clap::builder::BoolishValueParser::new(),
    )]
    pub leader_elect: bool,

    /// How long a lease stays valid after its holder's last renewal was seen.
    #[arg(long, env = "LEADER_ELECT_LEASE_DURATION", default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: Duration,

    /// How long the leader keeps trying to renew before it steps down.
    #[arg(long, env = "LEADER_ELECT_RENEW_DEADLINE", default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: Duration,

    /// Interval between acquire and renew attempts.
    #[arg(long, env = "LEADER_ELECT_RETRY_PERIOD", default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: Duration,

    /// Namespace of the lease; default: the pod's namespace, else the client's.
    #[arg(long, env = "LEADER_ELECT_NAMESPACE")]
    pub leader_elect_namespace: Option<String>,

    /// Name of the lease; default: chosen by the binary.
    #[arg(long, env = "LEADER_ELECT_ID")]
    pub leader_elect_id: Option<String>,

    /// This replica's identity in the election; default: host name plus a random suffix.
    #[arg(long, env = "LEADER_ELECT_IDENTITY")]
    pub leader_elect_identity: Option<String>,
}

/// Parses a duration such as `15s`, `1m30s`, `500ms` or `PT15S`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let signed: jiff::SignedDuration = text
        .trim()
        .parse()
        .map_err(|e| format!("invalid duration {text:?}: {e}"))?;
    Duration::try_from(signed).map_err(|_| format!("duration {text:?} must not be negative"))
}

impl Args {
    /// Logging options: `--log-level`, else `RUST_LOG`, else `info`.
    pub fn log_options(&self) -> LogOptions {
        let rust_log = std::env::var("RUST_LOG").ok();
        LogOptions {
            filter: resolve_filter(self.log_level.as_deref(), rust_log.as_deref()),
            format: self.log_format,
        }
    }

    /// Client options with this component's user agent and the QPS/burst flags.
    pub fn client_options(&self, user_agent: impl Into<String>) -> ClientOptions {
        ClientOptions::new(user_agent).with_rate_limit(self.kube_api_qps, self.kube_api_burst)
    }

    /// The client for the cluster this process runs against: `--kubeconfig`/`--context` if
    /// given, else the in-cluster service account, else `$KUBECONFIG`/`~/.kube/config`.
    pub async fn client(&self, options: &ClientOptions) -> Result<Client, ClientError> {
        if self.kubeconfig.is_none() && self.context.is_none() && client::in_cluster() {
            return client::client_in_cluster(options);
        }
        client::client_from_kubeconfig(self.kubeconfig.as_deref(), self.context.as_deref(), options)
            .await
    }

    /// Leader election settings from the flags; `default_lease_name` when `--leader-elect-id`
    /// is absent, and the lease namespace falls back to the pod's, then `client_namespace`.
    pub fn leader_election_config(
        &self,
        default_lease_name: &str,
        client_namespace: &str,
    ) -> LeaderElectionConfig {
        let namespace = self.leader_elect_namespace.clone().unwrap_or_else(|| {
            std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE)
                .ok()
                .map(|ns| ns.trim().to_owned())
                .filter(|ns| !ns.is_empty())
                .unwrap_or_else(|| client_namespace.to_owned())
        });
        LeaderElectionConfig {
            namespace,
            lease_name: self
                .leader_elect_id
                .clone()
                .unwrap_or_else(|| default_lease_name.to_owned()),
            identity: self
                .leader_elect_identity
                .clone()
                .unwrap_or_else(default_identity),
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
        }
    }

    /// The elector the flags ask for: a [`LeaseElector`] with `--leader-elect`, otherwise
    /// an [`AlwaysLeader`]. `metrics` is registered once by the caller and shared by every elector.
    pub fn elector(
        &self,
        client: &Client,
        default_lease_name: &str,
        metrics: &LeaderElectionMetrics,
    ) -> Result<Box<dyn LeaderElector>, LeaderElectionError> {
        let config = self.leader_election_config(default_lease_name, client.default_namespace());
        if !self.leader_elect {
            return Ok(Box::new(AlwaysLeader::new(config.identity)));
        }
        let elector = LeaseElector::new(client.clone(), config)?.with_metrics(metrics.clone());
        Ok(Box::new(elector))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        common: Args,
    }

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Cli::try_parse_from(std::iter::once("bin").chain(args.iter().copied())).map(|c| c.common)
    }

    #[test]
    fn parse_duration_table() {
        for (text, want) in [
            ("15s", Some(Duration::from_secs(15))),
            ("1m30s", Some(Duration::from_secs(90))),
            ("500ms", Some(Duration::from_millis(500))),
            ("PT2S", Some(Duration::from_secs(2))),
            (" 2s ", Some(Duration::from_secs(2))),
            ("-1s", None),
            ("soon", None),
            ("", None),
        ] {
            assert_eq!(parse_duration(text).ok(), want, "{text:?}");
        }
    }

    // One test touches the environment so parallel tests never see half-set variables.
    #[test]
    fn flags_defaults_and_env() {
        let defaults = parse(&[]).unwrap();
        assert_eq!(defaults.metrics_addr, "0.0.0.0:8080".parse().unwrap());
        assert_eq!(defaults.probe_addr, "0.0.0.0:8081".parse().unwrap());
        assert!(!defaults.leader_elect);
        assert_eq!(
            defaults.leader_elect_lease_duration,
            Duration::from_secs(15)
        );
        assert_eq!(
            defaults.leader_elect_renew_deadline,
            Duration::from_secs(10)
        );
        assert_eq!(defaults.leader_elect_retry_period, Duration::from_secs(2));
        assert_eq!(defaults.kube_api_qps, client::DEFAULT_QPS);
        assert_eq!(defaults.log_format, LogFormat::Text);

        let a = parse(&[
            "--leader-elect",
            "--kube-api-qps=5",
            "--kube-api-burst",
            "7",
            "--log-format",
            "json",
            "--leader-elect-retry-period=500ms",
            "--context",
            "kind-worker",
        ])
        .unwrap();
        assert!(a.leader_elect);
        assert_eq!((a.kube_api_qps, a.kube_api_burst), (5.0, 7));
        assert_eq!(a.log_format, LogFormat::Json);
        assert_eq!(a.leader_elect_retry_period, Duration::from_millis(500));
        assert_eq!(a.context.as_deref(), Some("kind-worker"));
        assert!(!parse(&["--leader-elect=false"]).unwrap().leader_elect);
        assert!(parse(&["--leader-elect-lease-duration", "forever"]).is_err());

        // Setting variables here would race other tests; parse them in a child process.
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                "args::tests::env_probe",
                "--nocapture",
                "--ignored",
            ])
            .env("LEADER_ELECT", "yes")
            .env("PROBE_ADDR", "127.0.0.1:9999")
            .env("LEADER_ELECT_RENEW_DEADLINE", "7s")
            .env("KUBE_API_BURST", "3")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        assert!(
            stdout.contains("ENV_PROBE true 127.0.0.1:9999 7s 3"),
            "{stdout}"
        );
    }

    /// Run by `flags_defaults_and_env` in a child process with variables set.
    #[test]
    #[ignore = "helper run in a child process"]
    fn env_probe() {
        let a = parse(&[]).unwrap();
        println!(
            "ENV_PROBE {} {} {}s {}",
            a.leader_elect,
            a.probe_addr,
            a.leader_elect_renew_deadline.as_secs(),
            a.kube_api_burst
        );
    }

    #[test]
    fn leader_election_config_uses_flags_then_defaults() {
        let mut a = parse(&[
            "--leader-elect-namespace",
            "ops",
            "--leader-elect-identity",
            "pod-1",
        ])
        .unwrap();
        let cfg = a.leader_election_config("kubeocean-manager", "default");
        assert_eq!(
            (
                cfg.namespace.as_str(),
                cfg.lease_name.as_str(),
                cfg.identity.as_str()
            ),
            ("ops", "kubeocean-manager", "pod-1")
        );
        assert!(cfg.validate().is_ok());
        a.leader_elect_id = Some("custom".into());
        assert_eq!(
            a.leader_election_config("x", "default").lease_name,
            "custom"
        );
        a.leader_elect_identity = None;
        assert!(!a.leader_election_config("x", "default").identity.is_empty());
    }
}
