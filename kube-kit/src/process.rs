//! The start-up every controller process shares, in the order that makes failures plain:
//! logging first, then the admin listeners (a busy port stops the process before it does
//! anything), then the signal handlers and the cluster client. [`run`] puts a command on its
//! runtime and turns the outcome into the exit code.

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;

use kube::Client;
use tokio_util::sync::CancellationToken;

use crate::admin::{AdminError, AdminServer};
use crate::args::Args;
use crate::client::{ClientError, ClientOptions, user_agent};
use crate::shutdown::{ShutdownError, signal_token};
use crate::telemetry::{LogHandle, TelemetryError};

/// Why a process could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Logging could not be set up.
    #[error("logging: {0}")]
    Telemetry(#[from] TelemetryError),
    /// An admin listener could not be bound (the message names the address).
    #[error(transparent)]
    Admin(#[from] AdminError),
    /// The signal handlers could not be installed.
    #[error("signal handlers: {0}")]
    Signals(#[from] ShutdownError),
    /// No client for the cluster the process runs against.
    #[error("cluster client: {0}")]
    Client(#[from] ClientError),
}

/// What a started process holds: its log handle (for `/debug/log-level`), its bound admin
/// listeners (not yet serving: components register metrics and readiness checks first), the
/// token SIGTERM/SIGINT cancel, and a client with the options it was built with.
pub struct Started {
    /// The handle that changes the log filter at run time.
    pub log: LogHandle,
    /// The metrics and probe listeners, bound.
    pub admin: AdminServer,
    /// Cancelled on SIGTERM/SIGINT.
    pub shutdown: CancellationToken,
    /// The options `client` was built with (user agent, rate limit).
    pub client_options: ClientOptions,
    /// The cluster the process runs against.
    pub client: Client,
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started")
            .field("admin", &self.admin)
            .field("client_options", &self.client_options)
            .finish_non_exhaustive()
    }
}

/// Starts a process whose flags are `args`, as `component` at `version` (its user agent).
pub async fn start(args: &Args, component: &str, version: &str) -> Result<Started, StartError> {
    let log = crate::telemetry::init(&args.log_options())?;
    // Bound before anything else: a busy port stops the process now, not after it ran
    // without probes.
    let admin = AdminServer::bind(args.metrics_addr, args.probe_addr).await?;
    let shutdown = signal_token()?;
    let client_options = args.client_options(user_agent(component, version));
    let client = args.client(&client_options).await?;
    Ok(Started {
        log,
        admin,
        shutdown,
        client_options,
        client,
    })
}

/// Runs `main` on a runtime of `threads` threads ([`crate::runtime::build`]): exit code 0 when
/// it returns `Ok`, else 1 after `error: <the error and its causes>` on stderr.
pub fn run<E, F>(threads: usize, main: F) -> ExitCode
where
    E: Display,
    F: Future<Output = Result<(), E>>,
{
    let runtime = match crate::runtime::build(threads) {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::from(1);
        }
    };
    exit_code(runtime.block_on(main))
}

/// Exit code 0 for `Ok`, else 1 after printing the error with its causes (`{:#}`, which
/// `anyhow` renders as `outer: inner: ...`).
pub fn exit_code<E: Display>(result: Result<(), E>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn args(flags: &[&str]) -> Args {
        Cli::try_parse_from(std::iter::once("test").chain(flags.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn run_maps_the_outcome_to_the_exit_code() {
        assert_eq!(run(1, async { Ok::<(), String>(()) }), ExitCode::SUCCESS);
        assert_eq!(run(2, async { Err("boom".to_owned()) }), ExitCode::from(1));
    }

    #[tokio::test]
    async fn a_busy_admin_port_stops_the_start_before_the_client() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let busy = taken.local_addr().unwrap();
        // The kubeconfig does not exist: had the client been built first, that would be the
        // error.
        let flags = [
            format!("--metrics-addr={busy}"),
            "--probe-addr=127.0.0.1:0".to_owned(),
            "--kubeconfig=/nonexistent/kubeconfig".to_owned(),
        ];
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let err = start(&args(&flags), "test", "0").await.unwrap_err();
        assert!(matches!(err, StartError::Admin(_)), "{err}");
        assert!(
            err.to_string()
                .starts_with(&format!("cannot listen on {busy} (metrics)")),
            "{err}"
        );
    }
}
