//! Graceful shutdown: SIGTERM or SIGINT cancel one [`CancellationToken`] that controllers,
//! servers and the elector all honour, and the process gets a bounded time to finish.

use std::future::Future;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Default time allowed between the shutdown signal and exit.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Why shutdown handling could not be set up, or did not complete in time.
#[derive(Debug, thiserror::Error)]
pub enum ShutdownError {
    /// A signal handler could not be installed.
    #[error("cannot install the {signal} handler: {source}")]
    Signal {
        /// `SIGTERM` or `SIGINT`.
        signal: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// Work was still running when the grace period ended.
    #[error("shutdown did not complete within {0:?}")]
    GraceExceeded(Duration),
}

/// Installs SIGTERM and SIGINT handlers that cancel `token` on the first signal. Must be
/// called inside a tokio runtime.
pub fn cancel_on_signal(token: CancellationToken) -> Result<JoinHandle<()>, ShutdownError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).map_err(|source| ShutdownError::Signal {
        signal: "SIGTERM",
        source,
    })?;
    let mut int = signal(SignalKind::interrupt()).map_err(|source| ShutdownError::Signal {
        signal: "SIGINT",
        source,
    })?;
    Ok(tokio::spawn(async move {
        let name = tokio::select! {
            () = token.cancelled() => return,
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!(signal = name, "shutdown requested");
        token.cancel();
    }))
}

/// A token cancelled by SIGTERM or SIGINT.
pub fn signal_token() -> Result<CancellationToken, ShutdownError> {
    let token = CancellationToken::new();
    cancel_on_signal(token.clone())?;
    Ok(token)
}

/// Runs `work` to completion, but once `token` is cancelled gives it at most `grace` more.
pub async fn run_with_grace<F: Future>(
    token: &CancellationToken,
    grace: Duration,
    work: F,
) -> Result<F::Output, ShutdownError> {
    tokio::pin!(work);
    tokio::select! {
        out = &mut work => return Ok(out),
        () = token.cancelled() => {}
    }
    tokio::time::timeout(grace, work)
        .await
        .map_err(|_| ShutdownError::GraceExceeded(grace))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    #[tokio::test(start_paused = true)]
    async fn work_finishing_in_grace_returns_its_output() {
        let token = CancellationToken::new();
        let t = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            t.cancel();
        });
        let inner = token.clone();
        let out = run_with_grace(&token, Duration::from_secs(5), async move {
            inner.cancelled().await;
            tokio::time::sleep(Duration::from_secs(2)).await;
            7
        })
        .await
        .unwrap();
        assert_eq!(out, 7);
    }

    #[tokio::test(start_paused = true)]
    async fn work_ignoring_the_token_is_cut_off_after_grace() {
        let token = CancellationToken::new();
        token.cancel();
        let start = Instant::now();
        let err = run_with_grace(&token, Duration::from_secs(5), std::future::pending::<()>())
            .await
            .unwrap_err();
        assert!(matches!(err, ShutdownError::GraceExceeded(_)));
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn work_is_not_limited_before_shutdown() {
        let token = CancellationToken::new();
        let out = run_with_grace(&token, Duration::from_secs(1), async {
            tokio::time::sleep(Duration::from_secs(100)).await;
            "done"
        })
        .await
        .unwrap();
        assert_eq!(out, "done");
    }

    #[tokio::test]
    async fn sigterm_cancels_the_token() {
        let token = signal_token().unwrap();
        let pid = std::process::id().to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(status.success());
        tokio::time::timeout(Duration::from_secs(10), token.cancelled())
            .await
            .unwrap();
    }
}
