//! Leader election on a `coordination.k8s.io/v1` Lease, and running work only while leading.
//!
//! [`LeaseElector`] follows client-go's rules (see [`record`] for the decisions); its state is
//! published on a [`watch`] channel. [`run_while_leading`] starts a set of controllers each
//! time leadership is gained and stops them when it is lost; [`run_elected`] ties an elector,
//! the controllers and graceful shutdown together so the lease is released only after the
//! controllers have stopped.

mod lease;
pub mod record;
pub(crate) mod state;

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::admin::Metrics;

pub use lease::LeaseElector;
pub use state::LeaderState;

/// Default time a lease is valid for after its last observed change (client-go's 15 s).
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// Default time a leader keeps trying to renew before it steps down (client-go's 10 s).
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// Default interval between acquire or renew attempts (client-go's 2 s).
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// Where the lease lives, who this candidate is, and the timing rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub lease_name: String,
    /// This candidate's identity, unique among candidates (see [`default_identity`]).
    pub identity: String,
    /// How long a lease is valid after its last observed change; written in whole seconds.
    pub lease_duration: Duration,
    /// How long a leader keeps trying to renew before it steps down; shorter than the lease.
    pub renew_deadline: Duration,
    /// Interval between acquire and renew attempts.
    pub retry_period: Duration,
}

/// Why a [`LeaderElectionConfig`] was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LeaderElectionError {
    /// The configuration breaks one of the timing or naming rules.
    #[error("invalid leader election settings for lease {lease}: {reason}")]
    InvalidConfig {
        /// `namespace/name` of the lease.
        lease: String,
        /// Which rule was broken.
        reason: String,
    },
    /// `run` was called while the same elector was already running.
    #[error("the elector for lease {lease} is already running")]
    AlreadyRunning {
        /// `namespace/name` of the lease.
        lease: String,
    },
}

impl LeaderElectionConfig {
    /// Settings with client-go's default timings.
    pub fn new(
        namespace: impl Into<String>,
        lease_name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            lease_name: lease_name.into(),
            identity: identity.into(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
        }
    }

    /// `namespace/name` of the lease, as used in logs and the metric label.
    pub fn lease_key(&self) -> String {
        format!("{}/{}", self.namespace, self.lease_name)
    }

    /// Checks the rules that make leadership exclusive: the lease (in the whole seconds that
    /// are written) outlasts the renew deadline, which outlasts the retry period.
    pub fn validate(&self) -> Result<(), LeaderElectionError> {
        let fail = |reason: String| {
            Err(LeaderElectionError::InvalidConfig {
                lease: self.lease_key(),
                reason,
            })
        };
        if self.namespace.is_empty() || self.lease_name.is_empty() {
            return fail("the lease namespace and name must not be empty".into());
        }
        if self.identity.is_empty() {
            return fail("the candidate identity must not be empty".into());
        }
        let written = Duration::from_secs(self.lease_duration.as_secs());
        if written < Duration::from_secs(1) {
            return fail(format!(
                "lease duration {:?} is shorter than one second",
                self.lease_duration
            ));
        }
        if self.renew_deadline >= written {
            return fail(format!(
                "renew deadline {:?} must be shorter than the lease duration {written:?}",
                self.renew_deadline
            ));
        }
        if self.retry_period.is_zero() || self.retry_period >= self.renew_deadline {
            return fail(format!(
                "retry period {:?} must be positive and shorter than the renew deadline {:?}",
                self.retry_period, self.renew_deadline
            ));
        }
        Ok(())
    }

    /// How long controllers may keep running after leadership is lost without overlapping a
    /// successor: the gap between stepping down and the earliest takeover.
    pub fn safe_stop_grace(&self) -> Duration {
        Duration::from_secs(self.lease_duration.as_secs()).saturating_sub(self.renew_deadline)
    }
}

/// A unique candidate identity: the host name (pod name in a cluster) and a random suffix,
/// as client-go's `hostname_uuid`.
pub fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "candidate".to_owned());
    let mut suffix = [0u8; 6];
    // A failing system RNG leaves zeros; the host name alone still identifies the pod.
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut suffix);
    let hex: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
    format!("{host}_{hex}")
}

/// Something that decides whether this process leads.
#[async_trait]
pub trait LeaderElector: Send + Sync {
    /// This candidate's identity.
    fn identity(&self) -> &str;

    /// A receiver of the current [`LeaderState`].
    fn subscribe(&self) -> watch::Receiver<LeaderState>;

    /// Takes part in the election until `stop` is cancelled, then releases the lease if held.
    ///
    /// Cancel `stop` only after the work guarded by the lease has stopped (as
    /// [`run_elected`] does); a successor may start within one retry period of the release.
    async fn run(&self, stop: CancellationToken) -> Result<(), LeaderElectionError>;
}

/// An elector for `--leader-elect=false`: always leading until stopped.
#[derive(Debug)]
pub struct AlwaysLeader {
    identity: String,
    state: watch::Sender<LeaderState>,
}

impl AlwaysLeader {
    /// A single-replica "elector" with the given identity.
    pub fn new(identity: impl Into<String>) -> Self {
        Self {
            identity: identity.into(),
            state: watch::Sender::new(LeaderState::Starting),
        }
    }
}

#[async_trait]
impl LeaderElector for AlwaysLeader {
    fn identity(&self) -> &str {
        &self.identity
    }

    fn subscribe(&self) -> watch::Receiver<LeaderState> {
        self.state.subscribe()
    }

    async fn run(&self, stop: CancellationToken) -> Result<(), LeaderElectionError> {
        self.state.send_replace(LeaderState::Leading);
        stop.cancelled().await;
        self.state.send_replace(LeaderState::Stopped);
        Ok(())
    }
}

/// Label set of the leader-election metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LeaseLabels {
    /// `namespace/name` of the lease.
    pub lease: String,
}

/// `leader_election_is_leader{lease}`: 1 while this process holds the lease.
#[derive(Clone, Debug, Default)]
pub struct LeaderElectionMetrics {
    is_leader: Family<LeaseLabels, Gauge>,
}

impl LeaderElectionMetrics {
    /// Creates the metric and registers it into `metrics`.
    pub fn register(metrics: &Metrics) -> Self {
        let this = Self::default();
        metrics.with_registry(|registry| {
            registry.register(
                "leader_election_is_leader",
                "Whether this process currently holds the leader election lease (1) or not (0)",
                this.is_leader.clone(),
            );
        });
        this
    }

    /// Records whether this process leads `lease`.
    pub fn set_leading(&self, lease: &str, leading: bool) {
        self.is_leader
            .get_or_create(&LeaseLabels {
                lease: lease.to_owned(),
            })
            .set(i64::from(leading));
    }
}

/// How long controllers get to finish in-flight work when they are stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopGrace {
    /// After leadership is lost; keep it within [`LeaderElectionConfig::safe_stop_grace`] so
    /// the old leader's work never overlaps its successor's.
    pub on_loss: Duration,
    /// On shutdown, while the lease is still held and renewed.
    pub on_shutdown: Duration,
}

impl Default for StopGrace {
    fn default() -> Self {
        Self {
            on_loss: Duration::from_secs(3),
            on_shutdown: Duration::from_secs(30),
        }
    }
}

/// Why [`run_while_leading`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeadingOutcome {
    /// The shutdown token was cancelled.
    Shutdown,
    /// The elector stopped (or was dropped).
    ElectorStopped,
    /// The controllers returned on their own while this process was leading.
    ControllersExited,
}

/// Runs the controllers made by `start` only while `state` says leading.
///
/// Each time leadership is gained, `start` is called with a fresh token; when leadership is
/// lost or `shutdown` is cancelled that token is cancelled and the controllers get
/// [`StopGrace`] to finish in-flight work before they are dropped. Pass several controllers by
/// joining them in the returned future.
pub async fn run_while_leading<F, Fut>(
    mut state: watch::Receiver<LeaderState>,
    shutdown: CancellationToken,
    grace: StopGrace,
    mut start: F,
) -> LeadingOutcome
where
    F: FnMut(CancellationToken) -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        let leading = tokio::select! {
            biased;
            () = shutdown.cancelled() => return LeadingOutcome::Shutdown,
            seen = state.wait_for(|s| s.is_leading() || *s == LeaderState::Stopped) => {
                matches!(seen.as_deref(), Ok(LeaderState::Leading))
            }
        };
        if !leading {
            return LeadingOutcome::ElectorStopped;
        }
        tracing::info!("leading: starting controllers");
        let term = shutdown.child_token();
        let controllers = start(term.clone());
        tokio::pin!(controllers);
        let finished = tokio::select! {
            biased;
            () = &mut controllers => true,
            () = shutdown.cancelled() => false,
            _ = state.wait_for(|s| !s.is_leading()) => false,
        };
        if finished {
            // They may have stopped because the shared shutdown token fired.
            if shutdown.is_cancelled() {
                return LeadingOutcome::Shutdown;
            }
            if state.borrow().is_leading() {
                tracing::warn!("controllers exited while leading");
                return LeadingOutcome::ControllersExited;
            }
            continue;
        }
        term.cancel();
        let limit = if shutdown.is_cancelled() {
            grace.on_shutdown
        } else {
            grace.on_loss
        };
        if tokio::time::timeout(limit, &mut controllers).await.is_err() {
            tracing::warn!(
                ?limit,
                "controllers did not stop within the grace period; dropping them"
            );
        }
        if shutdown.is_cancelled() {
            return LeadingOutcome::Shutdown;
        }
        tracing::info!("no longer leading: controllers stopped");
    }
}

/// Runs `elector` and, while it leads, the controllers made by `start`; on `shutdown` the
/// controllers stop first (the lease is still renewed meanwhile) and the lease is released
/// after, so a successor never overlaps them.
pub async fn run_elected<E, F, Fut>(
    elector: &E,
    shutdown: CancellationToken,
    grace: StopGrace,
    start: F,
) -> Result<LeadingOutcome, LeaderElectionError>
where
    E: LeaderElector + ?Sized,
    F: FnMut(CancellationToken) -> Fut,
    Fut: Future<Output = ()>,
{
    let elector_stop = CancellationToken::new();
    let state = elector.subscribe();
    let election = elector.run(elector_stop.clone());
    tokio::pin!(election);
    let work = run_while_leading(state, shutdown, grace, start);
    tokio::pin!(work);
    tokio::select! {
        outcome = &mut work => {
            elector_stop.cancel();
            election.await?;
            Ok(outcome)
        }
        result = &mut election => {
            result?;
            Ok(work.await)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leadership_gauge_is_in_the_registry() {
        let metrics = Metrics::new();
        let leader = LeaderElectionMetrics::register(&metrics);
        leader.set_leading("kube-system/demo", true);
        let text = metrics.encode().unwrap();
        assert!(
            text.contains("leader_election_is_leader{lease=\"kube-system/demo\"} 1"),
            "{text}"
        );
        leader.set_leading("kube-system/demo", false);
        let text = metrics.encode().unwrap();
        assert!(
            text.contains("leader_election_is_leader{lease=\"kube-system/demo\"} 0"),
            "{text}"
        );
    }

    #[test]
    fn validate_table() {
        let ok = LeaderElectionConfig::new("ns", "lease", "me");
        let cases: Vec<(&str, LeaderElectionConfig, bool)> = vec![
            ("defaults", ok.clone(), true),
            (
                "renew deadline equal to lease",
                LeaderElectionConfig {
                    renew_deadline: Duration::from_secs(15),
                    ..ok.clone()
                },
                false,
            ),
            (
                "lease rounds down below deadline",
                LeaderElectionConfig {
                    lease_duration: Duration::from_millis(10_900),
                    ..ok.clone()
                },
                false,
            ),
            (
                "sub-second lease",
                LeaderElectionConfig {
                    lease_duration: Duration::from_millis(900),
                    renew_deadline: Duration::from_millis(500),
                    retry_period: Duration::from_millis(100),
                    ..ok.clone()
                },
                false,
            ),
            (
                "retry equal to deadline",
                LeaderElectionConfig {
                    retry_period: Duration::from_secs(10),
                    ..ok.clone()
                },
                false,
            ),
            (
                "zero retry",
                LeaderElectionConfig {
                    retry_period: Duration::ZERO,
                    ..ok.clone()
                },
                false,
            ),
            (
                "empty identity",
                LeaderElectionConfig {
                    identity: String::new(),
                    ..ok.clone()
                },
                false,
            ),
            (
                "empty namespace",
                LeaderElectionConfig {
                    namespace: String::new(),
                    ..ok.clone()
                },
                false,
            ),
            (
                "tight but valid",
                LeaderElectionConfig {
                    lease_duration: Duration::from_secs(2),
                    renew_deadline: Duration::from_millis(1_500),
                    retry_period: Duration::from_millis(200),
                    ..ok.clone()
                },
                true,
            ),
        ];
        for (name, cfg, valid) in cases {
            assert_eq!(
                cfg.validate().is_ok(),
                valid,
                "{name}: {:?}",
                cfg.validate()
            );
        }
    }

    #[test]
    fn safe_stop_grace_is_gap_between_deadline_and_expiry() {
        let cfg = LeaderElectionConfig::new("ns", "l", "me");
        assert_eq!(cfg.safe_stop_grace(), Duration::from_secs(5));
    }

    #[test]
    fn state_readiness_table() {
        for (state, leading, ready) in [
            (LeaderState::Starting, false, false),
            (LeaderState::Standby { holder: None }, false, true),
            (LeaderState::Leading, true, true),
            (LeaderState::Lost, false, false),
            (LeaderState::Stopped, false, false),
        ] {
            assert_eq!(state.is_leading(), leading, "{state:?}");
            assert_eq!(state.is_ready(), ready, "{state:?}");
        }
    }

    #[test]
    fn default_identity_is_unique_per_call() {
        let a = default_identity();
        let b = default_identity();
        assert_ne!(a, b);
        assert!(a.contains('_'));
    }

    #[tokio::test(start_paused = true)]
    async fn run_while_leading_starts_and_stops_with_leadership() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};

        let (tx, rx) = watch::channel(LeaderState::Starting);
        let shutdown = CancellationToken::new();
        let starts = Arc::new(AtomicUsize::new(0));
        let running = Arc::new(AtomicUsize::new(0));
        let (s, r) = (starts.clone(), running.clone());
        let task = tokio::spawn(run_while_leading(
            rx,
            shutdown.clone(),
            StopGrace::default(),
            move |token| {
                let (s, r) = (s.clone(), r.clone());
                async move {
                    s.fetch_add(1, Ordering::SeqCst);
                    r.fetch_add(1, Ordering::SeqCst);
                    token.cancelled().await;
                    r.fetch_sub(1, Ordering::SeqCst);
                }
            },
        ));
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(
            starts.load(Ordering::SeqCst),
            0,
            "not started while standby"
        );

        tx.send_replace(LeaderState::Leading);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(running.load(Ordering::SeqCst), 1);

        tx.send_replace(LeaderState::Lost);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(running.load(Ordering::SeqCst), 0, "stopped on loss");

        tx.send_replace(LeaderState::Leading);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(starts.load(Ordering::SeqCst), 2, "restarted on regain");

        shutdown.cancel();
        assert_eq!(task.await.unwrap(), LeadingOutcome::Shutdown);
        assert_eq!(running.load(Ordering::SeqCst), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn run_while_leading_drops_controllers_that_ignore_the_token() {
        let (tx, rx) = watch::channel(LeaderState::Leading);
        let shutdown = CancellationToken::new();
        let grace = StopGrace {
            on_loss: Duration::from_secs(1),
            on_shutdown: Duration::from_secs(5),
        };
        let task = tokio::spawn(run_while_leading(rx, shutdown.clone(), grace, |_token| {
            std::future::pending::<()>()
        }));
        tokio::time::sleep(Duration::from_millis(10)).await;
        let lost_at = tokio::time::Instant::now();
        tx.send_replace(LeaderState::Stopped);
        assert_eq!(task.await.unwrap(), LeadingOutcome::ElectorStopped);
        assert_eq!(lost_at.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn run_while_leading_reports_controllers_exiting() {
        let (_tx, rx) = watch::channel(LeaderState::Leading);
        let outcome = run_while_leading(
            rx,
            CancellationToken::new(),
            StopGrace::default(),
            |_| async {},
        )
        .await;
        assert_eq!(outcome, LeadingOutcome::ControllersExited);
    }

    #[tokio::test(start_paused = true)]
    async fn run_elected_with_always_leader_stops_on_shutdown() {
        let elector = AlwaysLeader::new("solo");
        let mut state = elector.subscribe();
        let shutdown = CancellationToken::new();
        let trigger = shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            trigger.cancel();
        });
        let outcome = run_elected(
            &elector,
            shutdown,
            StopGrace::default(),
            |token| async move {
                token.cancelled().await;
            },
        )
        .await
        .unwrap();
        assert_eq!(outcome, LeadingOutcome::Shutdown);
        assert_eq!(*state.borrow_and_update(), LeaderState::Stopped);
    }
}
