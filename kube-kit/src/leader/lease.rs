//! The Lease-backed elector: the I/O around the decisions in [`super::record`].

use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until, timeout, timeout_at};
use tokio_util::sync::CancellationToken;

use super::record::{Decision, LeaseRecord, Observed, decide, observe};
use super::{
    LeaderElectionConfig, LeaderElectionError, LeaderElectionMetrics, LeaderElector, LeaderState,
};

/// Leader election on a `coordination.k8s.io/v1` Lease with client-go's rules.
///
/// - Every acquire, renew and release is a compare-and-swap on `metadata.resourceVersion`;
///   a 409 means another candidate changed the lease first.
/// - Another holder's lease expires one lease duration after this candidate last saw the
///   record change, on this candidate's monotonic clock; `renewTime` is written but never
///   trusted, so clock skew between candidates does not matter.
/// - A leader steps down once `renew_deadline` has passed since the start of its last
///   successful write. That write reached the server no earlier than it started, and other
///   candidates judge expiry from when they saw it, so a leader always stops at least
///   `lease_duration - renew_deadline` before anyone else may take over.
/// - On stop the lease is released (no holder, 1 s duration) so a successor takes over at
///   its next retry.
pub struct LeaseElector {
    api: Api<Lease>,
    config: LeaderElectionConfig,
    lease_key: String,
    state: watch::Sender<LeaderState>,
    metrics: Option<LeaderElectionMetrics>,
    running: AtomicBool,
}

impl std::fmt::Debug for LeaseElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseElector")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Outcome of one attempt by a candidate that does not lead.
enum Attempt {
    /// The lease is ours; the write that won it started at this instant.
    Acquired { write_started: Instant },
    /// Someone else holds a valid lease.
    Held { holder: String, expires_at: Instant },
    /// Another candidate wrote first.
    Conflict,
    /// The API server could not be reached or refused the request.
    Failed(kube::Error),
}

/// Outcome of one renewal by the leader.
enum Renewal {
    Renewed,
    /// A 409 whose re-read still shows this candidate as holder: an earlier write of ours
    /// landed late. The lease is still ours; retry with the new version.
    StillOurs,
    LostTo(Option<String>),
    Failed(kube::Error),
}

enum WriteError {
    Conflict,
    Other(kube::Error),
}

fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 409)
}

impl LeaseElector {
    /// An elector for the lease described by `config`, using `client`.
    pub fn new(client: Client, config: LeaderElectionConfig) -> Result<Self, LeaderElectionError> {
        config.validate()?;
        Ok(Self {
            api: Api::namespaced(client, &config.namespace),
            lease_key: config.lease_key(),
            config,
            state: watch::Sender::new(LeaderState::Starting),
            metrics: None,
            running: AtomicBool::new(false),
        })
    }

    /// Also report leadership as `leader_election_is_leader{lease}`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: LeaderElectionMetrics) -> Self {
        metrics.set_leading(&self.lease_key, false);
        self.metrics = Some(metrics);
        self
    }

    /// The settings this elector runs with.
    pub fn config(&self) -> &LeaderElectionConfig {
        &self.config
    }

    fn publish(&self, next: LeaderState) {
        let changed = self.state.send_if_modified(|current| {
            if *current == next {
                false
            } else {
                *current = next.clone();
                true
            }
        });
        if changed {
            if let Some(metrics) = &self.metrics {
                metrics.set_leading(&self.lease_key, next.is_leading());
            }
            tracing::debug!(lease = %self.lease_key, identity = %self.config.identity, state = ?next, "leader state changed");
        }
    }
}

#[async_trait]
impl LeaderElector for LeaseElector {
    fn identity(&self) -> &str {
        &self.config.identity
    }

    fn subscribe(&self) -> watch::Receiver<LeaderState> {
        self.state.subscribe()
    }

    async fn run(&self, stop: CancellationToken) -> Result<(), LeaderElectionError> {
        if self.running.swap(true, Ordering::SeqCst) {
            return Err(LeaderElectionError::AlreadyRunning {
                lease: self.lease_key.clone(),
            });
        }
        let mut session = Session {
            elector: self,
            observed: None,
            lease: None,
        };
        session.campaign(&stop).await;
        self.publish(LeaderState::Stopped);
        self.running.store(false, Ordering::SeqCst);
        Ok(())
    }
}

/// One run of the elector: what it has seen of the lease.
struct Session<'a> {
    elector: &'a LeaseElector,
    observed: Option<Observed>,
    /// The lease object last read or written, whose resourceVersion the next write swaps on.
    lease: Option<Lease>,
}

impl Session<'_> {
    fn config(&self) -> &LeaderElectionConfig {
        &self.elector.config
    }

    /// Tries to acquire every retry period (or as soon as the holder's lease expires) and
    /// leads whenever it succeeds, until `stop`.
    async fn campaign(&mut self, stop: &CancellationToken) {
        let retry = self.config().retry_period;
        let bound = self.config().renew_deadline;
        while !stop.is_cancelled() {
            let attempt_start = Instant::now();
            let attempt = match timeout(bound, self.try_acquire()).await {
                Ok(attempt) => attempt,
                Err(_) => {
                    tracing::warn!(lease = %self.elector.lease_key, ?bound, "lease request timed out");
                    Attempt::Failed(kube::Error::Service("lease request timed out".into()))
                }
            };
            let next = match attempt {
                Attempt::Acquired { write_started } => {
                    tracing::info!(lease = %self.elector.lease_key, identity = %self.config().identity, "acquired lease");
                    self.elector.publish(LeaderState::Leading);
                    self.lead(write_started, stop).await;
                    Instant::now() + retry
                }
                Attempt::Held { holder, expires_at } => {
                    self.elector.publish(LeaderState::Standby {
                        holder: Some(holder),
                    });
                    (attempt_start + retry).min(expires_at)
                }
                Attempt::Conflict => {
                    let holder = self.observed.as_ref().and_then(|o| o.record.holder.clone());
                    self.elector.publish(LeaderState::Standby { holder });
                    attempt_start + retry
                }
                Attempt::Failed(err) => {
                    tracing::warn!(lease = %self.elector.lease_key, error = %err, "could not acquire lease");
                    attempt_start + retry
                }
            };
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                () = sleep_until(next) => {}
            }
        }
    }

    /// Renews every retry period until the lease is lost, the renew deadline passes, or
    /// `stop` (which releases the lease).
    async fn lead(&mut self, write_started: Instant, stop: &CancellationToken) {
        let retry = self.config().retry_period;
        let renew_deadline = self.config().renew_deadline;
        let mut deadline = write_started + renew_deadline;
        let mut last_attempt = write_started;
        loop {
            let wake = (last_attempt + retry).min(deadline);
            tokio::select! {
                biased;
                () = stop.cancelled() => {
                    self.elector.publish(LeaderState::Stopped);
                    self.release().await;
                    return;
                }
                () = sleep_until(wake) => {}
            }
            let now = Instant::now();
            if now >= deadline {
                self.step_down();
                return;
            }
            last_attempt = now;
            // Stopping abandons a renewal in flight; the release that follows is a
            // compare-and-swap too, so whichever of the two lands second fails harmlessly.
            let renewal = tokio::select! {
                biased;
                () = stop.cancelled() => None,
                renewal = timeout_at(deadline, self.renew()) => Some(renewal),
            };
            let Some(renewal) = renewal else {
                self.elector.publish(LeaderState::Stopped);
                self.release().await;
                return;
            };
            match renewal {
                Ok(Renewal::Renewed) => deadline = now + renew_deadline,
                Ok(Renewal::StillOurs) => {}
                Ok(Renewal::LostTo(holder)) => {
                    tracing::info!(lease = %self.elector.lease_key, ?holder, "lease taken over; stepping down");
                    self.elector.publish(LeaderState::Standby { holder });
                    return;
                }
                Ok(Renewal::Failed(err)) => {
                    tracing::warn!(lease = %self.elector.lease_key, error = %err, "could not renew lease");
                }
                Err(_) => {
                    self.step_down();
                    return;
                }
            }
        }
    }

    fn step_down(&self) {
        tracing::warn!(
            lease = %self.elector.lease_key,
            renew_deadline = ?self.config().renew_deadline,
            "lease not renewed before the renew deadline; stepping down"
        );
        self.elector.publish(LeaderState::Lost);
    }

    async fn try_acquire(&mut self) -> Attempt {
        let existing = match self.elector.api.get_opt(&self.config().lease_name).await {
            Ok(existing) => existing,
            Err(err) => return Attempt::Failed(err),
        };
        let Some(lease) = existing else {
            return self.create().await;
        };
        self.remember(&lease);
        let Some(observed) = self.observed.as_ref() else {
            return Attempt::Conflict;
        };
        let cfg = self.config();
        match decide(
            &cfg.identity,
            observed,
            Instant::now(),
            Timestamp::now(),
            cfg.lease_duration,
        ) {
            Decision::HeldByOther { holder, expires_at } => Attempt::Held { holder, expires_at },
            Decision::Claim(record) => {
                let write_started = Instant::now();
                match self.write(lease, &record).await {
                    Ok(()) => Attempt::Acquired { write_started },
                    Err(WriteError::Conflict) => Attempt::Conflict,
                    Err(WriteError::Other(err)) => Attempt::Failed(err),
                }
            }
        }
    }

    async fn create(&mut self) -> Attempt {
        let cfg = self.config();
        let record = LeaseRecord::first(&cfg.identity, cfg.lease_duration, Timestamp::now());
        let mut spec = LeaseSpec::default();
        record.apply_to(&mut spec);
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(cfg.lease_name.clone()),
                namespace: Some(cfg.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
        };
        let write_started = Instant::now();
        match self
            .elector
            .api
            .create(&PostParams::default(), &lease)
            .await
        {
            Ok(created) => {
                self.remember(&created);
                Attempt::Acquired { write_started }
            }
            Err(err) if is_conflict(&err) => Attempt::Conflict,
            Err(err) => Attempt::Failed(err),
        }
    }

    async fn renew(&mut self) -> Renewal {
        let Some(lease) = self.lease.clone() else {
            return Renewal::LostTo(None);
        };
        let cfg = self.config();
        let current = LeaseRecord::from_spec(lease.spec.as_ref());
        let record = current.claimed_by(&cfg.identity, cfg.lease_duration, Timestamp::now());
        match self.write(lease, &record).await {
            Ok(()) => Renewal::Renewed,
            Err(WriteError::Other(err)) => Renewal::Failed(err),
            Err(WriteError::Conflict) => {
                match self.elector.api.get_opt(&self.config().lease_name).await {
                    Ok(Some(fresh)) => {
                        self.remember(&fresh);
                        let record = LeaseRecord::from_spec(fresh.spec.as_ref());
                        if record.is_held_by(&self.config().identity) {
                            Renewal::StillOurs
                        } else {
                            Renewal::LostTo(record.holder)
                        }
                    }
                    Ok(None) => Renewal::LostTo(None),
                    // We know someone else wrote; without the record we cannot know it is
                    // still ours, so this counts as lost.
                    Err(_) => Renewal::LostTo(None),
                }
            }
        }
    }

    /// Gives the lease up if this candidate holds it, bounded by the renew deadline.
    async fn release(&mut self) {
        let bound = self.config().renew_deadline;
        let key = self.elector.lease_key.clone();
        let released = timeout(bound, async {
            // A second try covers a late renewal of ours that bumped the version.
            for _ in 0..2 {
                let Some(lease) = self.lease.clone() else {
                    return false;
                };
                let current = LeaseRecord::from_spec(lease.spec.as_ref());
                if !current.is_held_by(&self.config().identity) {
                    return false;
                }
                match self.write(lease, &current.released(Timestamp::now())).await {
                    Ok(()) => return true,
                    Err(WriteError::Conflict) => {
                        match self.elector.api.get_opt(&self.config().lease_name).await {
                            Ok(Some(fresh)) => self.remember(&fresh),
                            _ => return false,
                        }
                    }
                    Err(WriteError::Other(err)) => {
                        tracing::warn!(lease = %key, error = %err, "could not release lease");
                        return false;
                    }
                }
            }
            false
        })
        .await;
        match released {
            Ok(true) => tracing::info!(lease = %key, "released lease"),
            Ok(false) => tracing::info!(lease = %key, "lease not released (not held or changed)"),
            Err(_) => tracing::warn!(lease = %key, "releasing the lease timed out"),
        }
    }

    /// Compare-and-swap `record` into `lease` on its resourceVersion.
    async fn write(&mut self, mut lease: Lease, record: &LeaseRecord) -> Result<(), WriteError> {
        if lease
            .metadata
            .resource_version
            .as_deref()
            .is_none_or(str::is_empty)
        {
            // Without a version the PUT would be unconditional and could overwrite a rival.
            return Err(WriteError::Other(kube::Error::Service(
                format!("lease {} has no resourceVersion", self.elector.lease_key).into(),
            )));
        }
        record.apply_to(lease.spec.get_or_insert_with(LeaseSpec::default));
        match self
            .elector
            .api
            .replace(&self.config().lease_name, &PostParams::default(), &lease)
            .await
        {
            Ok(written) => {
                self.remember(&written);
                Ok(())
            }
            Err(err) if is_conflict(&err) => Err(WriteError::Conflict),
            Err(err) => Err(WriteError::Other(err)),
        }
    }

    /// Records a lease read from or written to the server.
    fn remember(&mut self, lease: &Lease) {
        let record = LeaseRecord::from_spec(lease.spec.as_ref());
        self.observed = Some(observe(
            self.observed.as_ref(),
            record,
            lease.metadata.resource_version.clone(),
            Instant::now(),
        ));
        self.lease = Some(lease.clone());
    }
}
