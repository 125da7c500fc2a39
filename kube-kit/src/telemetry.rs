//! Logging: a `tracing` subscriber with an env filter that can be changed at run time, in
//! text or JSON, written to stderr (stdout stays free for command output such as manifests).

use std::io::IsTerminal;
use std::sync::{Arc, Mutex, PoisonError};

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Registry, fmt, reload};

/// The filter used when neither `--log-level` nor `RUST_LOG` is set.
pub const DEFAULT_FILTER: &str = "info";

/// Log line format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// How to set up logging.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogOptions {
    /// `EnvFilter` directives, e.g. `info,kube_kit=debug`.
    pub filter: String,
    /// Line format.
    pub format: LogFormat,
}

/// Why logging could not be set up or changed.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The filter directives do not parse.
    #[error("invalid log filter {filter:?}: {reason}")]
    InvalidFilter {
        /// The rejected directives.
        filter: String,
        /// The parser's complaint.
        reason: String,
    },
    /// A global subscriber was installed before.
    #[error("a global tracing subscriber is already installed")]
    AlreadyInitialized,
    /// The subscriber the handle controls is gone.
    #[error("the log filter can no longer be changed: {0}")]
    Reload(String),
}

type ReloadFn = dyn Fn(EnvFilter) -> Result<(), String> + Send + Sync;

/// Reads and replaces the active log filter; cheap to clone.
#[derive(Clone)]
pub struct LogHandle {
    reload: Arc<ReloadFn>,
    current: Arc<Mutex<String>>,
}

impl std::fmt::Debug for LogHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogHandle")
            .field("current", &self.current())
            .finish_non_exhaustive()
    }
}

impl LogHandle {
    /// The active filter directives.
    pub fn current(&self) -> String {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the filter; on error the old filter stays.
    pub fn set(&self, directives: &str) -> Result<(), TelemetryError> {
        let filter = parse_filter(directives)?;
        (self.reload)(filter).map_err(TelemetryError::Reload)?;
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = directives.to_owned();
        Ok(())
    }
}

/// Picks the filter: `--log-level` wins, then `RUST_LOG`, then [`DEFAULT_FILTER`].
pub fn resolve_filter(flag: Option<&str>, rust_log: Option<&str>) -> String {
    [flag, rust_log]
        .into_iter()
        .flatten()
        .map(str::trim)
        .find(|s| !s.is_empty())
        .unwrap_or(DEFAULT_FILTER)
        .to_owned()
}

fn parse_filter(directives: &str) -> Result<EnvFilter, TelemetryError> {
    EnvFilter::builder()
        .parse(directives)
        .map_err(|err| TelemetryError::InvalidFilter {
            filter: directives.to_owned(),
            reason: err.to_string(),
        })
}

/// Builds the subscriber without installing it (tests install it with
/// `tracing::subscriber::set_default`).
pub fn build_subscriber(
    options: &LogOptions,
) -> Result<(impl tracing::Subscriber + Send + Sync + 'static, LogHandle), TelemetryError> {
    let filter = parse_filter(&options.filter)?;
    let (filter_layer, handle) = reload::Layer::<EnvFilter, Registry>::new(filter);
    let (text, json) = match options.format {
        LogFormat::Text => (
            Some(
                fmt::layer()
                    .with_ansi(std::io::stderr().is_terminal())
                    .with_writer(std::io::stderr),
            ),
            None,
        ),
        LogFormat::Json => (
            None,
            Some(
                fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(false)
                    .with_writer(std::io::stderr),
            ),
        ),
    };
    let subscriber = tracing_subscriber::registry()
        .with(filter_layer)
        .with(text)
        .with(json);
    let log = LogHandle {
        reload: Arc::new(move |filter| handle.reload(filter).map_err(|e| e.to_string())),
        current: Arc::new(Mutex::new(options.filter.clone())),
    };
    Ok((subscriber, log))
}

/// Installs the subscriber globally and returns the handle for `/debug/log-level`.
pub fn init(options: &LogOptions) -> Result<LogHandle, TelemetryError> {
    let (subscriber, handle) = build_subscriber(options)?;
    subscriber
        .try_init()
        .map_err(|_| TelemetryError::AlreadyInitialized)?;
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_filter_table() {
        for (flag, env, want) in [
            (Some("debug"), Some("warn"), "debug"),
            (None, Some("warn,kube=info"), "warn,kube=info"),
            (Some("  "), Some("warn"), "warn"),
            (None, None, DEFAULT_FILTER),
            (None, Some(""), DEFAULT_FILTER),
        ] {
            assert_eq!(resolve_filter(flag, env), want, "{flag:?} {env:?}");
        }
    }

    #[test]
    fn bad_filter_is_rejected_with_the_filter_named() {
        let err = build_subscriber(&LogOptions {
            filter: "kube=loud".into(),
            format: LogFormat::Json,
        })
        .err()
        .unwrap();
        assert!(err.to_string().contains("kube=loud"), "{err}");
    }

    #[test]
    fn reload_changes_what_is_enabled() {
        let (subscriber, handle) = build_subscriber(&LogOptions {
            filter: "warn".into(),
            format: LogFormat::Json,
        })
        .unwrap();
        tracing::subscriber::with_default(subscriber, || {
            assert!(!tracing::enabled!(tracing::Level::INFO));
            handle.set("debug").unwrap();
            assert!(tracing::enabled!(tracing::Level::DEBUG));
            assert!(handle.set("=bad=").is_err());
            assert_eq!(handle.current(), "debug");
        });
    }
}
