//! The leader-election decisions, as pure functions over what a candidate has seen of the Lease.
//!
//! The rules are client-go's: a lease held by someone else is valid until one lease duration
//! has passed on *this* candidate's monotonic clock since it last saw the record change; a free
//! lease, an expired lease or one this candidate already holds may be written; a change of
//! holder increments `leaseTransitions`. Nothing here performs I/O.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use tokio::time::Instant;

/// The fields of a Lease that leader election reads and writes.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct LeaseRecord {
    /// Identity of the holder; `None` when the lease is free (an empty string reads as free).
    pub holder: Option<String>,
    /// How long the holder claims the lease for, as written by the holder.
    pub lease_duration_seconds: Option<i32>,
    /// When the current holder acquired the lease (informational).
    pub acquire_time: Option<Timestamp>,
    /// When the current holder last renewed the lease (informational: never used for expiry).
    pub renew_time: Option<Timestamp>,
    /// How many times the holder has changed.
    pub lease_transitions: i32,
}

impl LeaseRecord {
    /// Reads the record out of a Lease spec.
    pub fn from_spec(spec: Option<&LeaseSpec>) -> Self {
        let Some(spec) = spec else {
            return Self::default();
        };
        Self {
            holder: spec.holder_identity.clone().filter(|h| !h.is_empty()),
            lease_duration_seconds: spec.lease_duration_seconds,
            acquire_time: spec.acquire_time.as_ref().map(|t| t.0),
            renew_time: spec.renew_time.as_ref().map(|t| t.0),
            lease_transitions: spec.lease_transitions.unwrap_or(0),
        }
    }

    /// Writes the record into a Lease spec, leaving fields leader election does not own
    /// (`preferredHolder`, `strategy`) as they are.
    pub fn apply_to(&self, spec: &mut LeaseSpec) {
        spec.holder_identity = self.holder.clone();
        spec.lease_duration_seconds = self.lease_duration_seconds;
        spec.acquire_time = self.acquire_time.map(MicroTime);
        spec.renew_time = self.renew_time.map(MicroTime);
        spec.lease_transitions = Some(self.lease_transitions);
    }

    /// Whether `identity` is the holder.
    pub fn is_held_by(&self, identity: &str) -> bool {
        self.holder.as_deref() == Some(identity)
    }

    /// The record a candidate writes to take or keep the lease.
    ///
    /// Keeping it (this candidate already holds it) preserves `acquireTime` and the transition
    /// count; taking it over from anyone else (or from nobody) counts one transition.
    pub fn claimed_by(&self, identity: &str, lease_duration: Duration, now: Timestamp) -> Self {
        let keeping = self.is_held_by(identity);
        Self {
            holder: Some(identity.to_owned()),
            lease_duration_seconds: Some(whole_seconds(lease_duration)),
            acquire_time: if keeping {
                self.acquire_time.or(Some(now))
            } else {
                Some(now)
            },
            renew_time: Some(now),
            lease_transitions: if keeping {
                self.lease_transitions
            } else {
                self.lease_transitions.saturating_add(1)
            },
        }
    }

    /// The record a holder writes when it gives the lease up on shutdown: no holder and a
    /// one-second duration (as client-go's `ReleaseOnCancel`), transitions unchanged so the
    /// successor's claim counts the handover once.
    pub fn released(&self, now: Timestamp) -> Self {
        Self {
            holder: None,
            lease_duration_seconds: Some(1),
            acquire_time: Some(now),
            renew_time: Some(now),
            lease_transitions: self.lease_transitions,
        }
    }

    /// The record for a Lease that does not exist yet: held by `identity`, no transitions.
    pub fn first(identity: &str, lease_duration: Duration, now: Timestamp) -> Self {
        Self {
            holder: Some(identity.to_owned()),
            lease_duration_seconds: Some(whole_seconds(lease_duration)),
            acquire_time: Some(now),
            renew_time: Some(now),
            lease_transitions: 0,
        }
    }
}

/// The number of whole seconds written into `leaseDurationSeconds` (at least 1).
pub fn whole_seconds(duration: Duration) -> i32 {
    i32::try_from(duration.as_secs()).unwrap_or(i32::MAX).max(1)
}

/// What this candidate last saw of the lease and when, on its own monotonic clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// The record as last read or written.
    pub record: LeaseRecord,
    /// `metadata.resourceVersion` of that read or write.
    pub resource_version: Option<String>,
    /// When this candidate first saw this exact record.
    pub seen_at: Instant,
}

/// Folds a fresh read of the lease into what was seen before.
///
/// The clock restarts only when the record or the resourceVersion changed. Comparing the
/// resourceVersion as well as the record means a holder renewing with an unchanged (or
/// skewed) renewTime still counts as a change; a lease nobody touches keeps its first-seen
/// instant however far in the future its renewTime claims to be.
pub fn observe(
    previous: Option<&Observed>,
    record: LeaseRecord,
    resource_version: Option<String>,
    now: Instant,
) -> Observed {
    let seen_at = match previous {
        Some(prev) if prev.record == record && prev.resource_version == resource_version => {
            prev.seen_at
        }
        _ => now,
    };
    Observed {
        record,
        resource_version,
        seen_at,
    }
}

/// What a candidate should do after reading the lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Another candidate holds a valid lease; it expires for us at `expires_at` unless it
    /// changes before then.
    HeldByOther {
        /// The current holder.
        holder: String,
        /// The local instant from which the lease may be taken over.
        expires_at: Instant,
    },
    /// Write this record with a compare-and-swap on the observed resourceVersion.
    Claim(LeaseRecord),
}

/// Decides whether `identity` may claim the lease it has observed.
///
/// A holder's lease is valid for the duration that holder wrote (or `own_duration` if it wrote
/// none or nonsense), measured from [`Observed::seen_at`].
pub fn decide(
    identity: &str,
    observed: &Observed,
    now: Instant,
    wall_now: Timestamp,
    own_duration: Duration,
) -> Decision {
    let record = &observed.record;
    if let Some(holder) = record.holder.as_deref()
        && holder != identity
    {
        let expires_at = observed.seen_at + holder_duration(record, own_duration);
        if now < expires_at {
            return Decision::HeldByOther {
                holder: holder.to_owned(),
                expires_at,
            };
        }
    }
    Decision::Claim(record.claimed_by(identity, own_duration, wall_now))
}

/// The lease duration the holder claimed, falling back to ours when missing or not positive.
fn holder_duration(record: &LeaseRecord, own_duration: Duration) -> Duration {
    match record.lease_duration_seconds {
        Some(secs) if secs > 0 => Duration::from_secs(u64::from(secs.unsigned_abs())),
        _ => own_duration,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_secs(15);

    fn ts(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    fn held(holder: Option<&str>, duration: Option<i32>, transitions: i32) -> LeaseRecord {
        LeaseRecord {
            holder: holder.map(str::to_owned),
            lease_duration_seconds: duration,
            acquire_time: Some(ts(100)),
            renew_time: Some(ts(200)),
            lease_transitions: transitions,
        }
    }

    #[test]
    fn decide_table() {
        let t0 = Instant::now();
        let wall = ts(1_000);
        struct Case {
            name: &'static str,
            record: LeaseRecord,
            elapsed: Duration,
            want: Result<(i32, Option<Timestamp>), Duration>,
        }
        // want: Ok((transitions, acquire_time)) for a claim, Err(time until expiry) when held.
        let cases = [
            Case {
                name: "free lease is claimed, one transition",
                record: held(None, Some(1), 4),
                elapsed: Duration::ZERO,
                want: Ok((5, Some(wall))),
            },
            Case {
                name: "own lease is renewed, acquire time and transitions kept",
                record: held(Some("me"), Some(15), 4),
                elapsed: Duration::ZERO,
                want: Ok((4, Some(ts(100)))),
            },
            Case {
                name: "other's fresh lease is respected",
                record: held(Some("other"), Some(15), 4),
                elapsed: Duration::from_secs(14),
                want: Err(Duration::from_secs(15)),
            },
            Case {
                name: "other's lease expires exactly one duration after it was seen",
                record: held(Some("other"), Some(15), 4),
                elapsed: Duration::from_secs(15),
                want: Ok((5, Some(wall))),
            },
            Case {
                name: "holder's own duration is used, not ours",
                record: held(Some("other"), Some(40), 0),
                elapsed: Duration::from_secs(30),
                want: Err(Duration::from_secs(40)),
            },
            Case {
                name: "missing duration falls back to ours",
                record: held(Some("other"), None, 0),
                elapsed: Duration::from_secs(14),
                want: Err(LEASE),
            },
            Case {
                name: "negative duration falls back to ours",
                record: held(Some("other"), Some(-3), 0),
                elapsed: Duration::from_secs(15),
                want: Ok((1, Some(wall))),
            },
        ];
        for case in cases {
            let observed = Observed {
                record: case.record.clone(),
                resource_version: Some("7".into()),
                seen_at: t0,
            };
            let got = decide("me", &observed, t0 + case.elapsed, wall, LEASE);
            match (got, case.want) {
                (Decision::Claim(rec), Ok((transitions, acquire))) => {
                    assert_eq!(rec.holder.as_deref(), Some("me"), "{}", case.name);
                    assert_eq!(rec.lease_transitions, transitions, "{}", case.name);
                    assert_eq!(rec.acquire_time, acquire, "{}", case.name);
                    assert_eq!(rec.renew_time, Some(wall), "{}", case.name);
                    assert_eq!(rec.lease_duration_seconds, Some(15), "{}", case.name);
                }
                (Decision::HeldByOther { holder, expires_at }, Err(until)) => {
                    assert_eq!(holder, case.record.holder.unwrap(), "{}", case.name);
                    assert_eq!(expires_at, t0 + until, "{}", case.name);
                }
                (got, want) => panic!("{}: got {got:?}, want {want:?}", case.name),
            }
        }
    }

    #[test]
    fn observe_restarts_clock_only_on_change() {
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(9);
        let rec = held(Some("other"), Some(15), 1);
        let first = observe(None, rec.clone(), Some("1".into()), t0);
        assert_eq!(first.seen_at, t0);

        let cases = [
            ("same record, same version", rec.clone(), "1", t0),
            ("same record, new version", rec.clone(), "2", later),
            (
                "renewTime changed",
                LeaseRecord {
                    renew_time: Some(ts(201)),
                    ..rec.clone()
                },
                "1",
                later,
            ),
            (
                "holder changed",
                LeaseRecord {
                    holder: Some("third".into()),
                    ..rec.clone()
                },
                "1",
                later,
            ),
        ];
        for (name, record, version, want) in cases {
            let next = observe(Some(&first), record, Some(version.into()), later);
            assert_eq!(next.seen_at, want, "{name}");
        }
    }

    #[test]
    fn far_future_renew_time_does_not_extend_validity() {
        let t0 = Instant::now();
        let mut rec = held(Some("ghost"), Some(15), 3);
        rec.renew_time = Some(ts(4_000_000_000));
        let seen = observe(None, rec.clone(), Some("5".into()), t0);
        let again = observe(Some(&seen), rec, Some("5".into()), t0 + LEASE);
        match decide("me", &again, t0 + LEASE, ts(1_000), LEASE) {
            Decision::Claim(claim) => assert_eq!(claim.lease_transitions, 4),
            other => panic!("expected a claim, got {other:?}"),
        }
    }

    #[test]
    fn spec_round_trip_and_empty_holder_is_free() {
        let rec = held(Some("me"), Some(15), 2);
        let mut spec = LeaseSpec {
            preferred_holder: Some("keep".into()),
            ..LeaseSpec::default()
        };
        rec.apply_to(&mut spec);
        assert_eq!(LeaseRecord::from_spec(Some(&spec)), rec);
        assert_eq!(spec.preferred_holder.as_deref(), Some("keep"));

        spec.holder_identity = Some(String::new());
        assert_eq!(LeaseRecord::from_spec(Some(&spec)).holder, None);
        assert_eq!(LeaseRecord::from_spec(None), LeaseRecord::default());
    }

    #[test]
    fn release_then_claim_counts_one_transition() {
        let now = ts(500);
        let mine = LeaseRecord::first("a", LEASE, now);
        assert_eq!(mine.lease_transitions, 0);
        let renewed = mine.claimed_by("a", LEASE, ts(502));
        assert_eq!(renewed.lease_transitions, 0);
        assert_eq!(renewed.acquire_time, Some(now));
        let released = renewed.released(ts(503));
        assert_eq!(released.holder, None);
        assert_eq!(released.lease_duration_seconds, Some(1));
        assert_eq!(released.lease_transitions, 0);
        let taken = released.claimed_by("b", LEASE, ts(504));
        assert_eq!(taken.lease_transitions, 1);
        assert_eq!(taken.acquire_time, Some(ts(504)));
    }

    #[test]
    fn whole_seconds_table() {
        for (d, want) in [
            (Duration::from_millis(500), 1),
            (Duration::from_secs(15), 15),
            (Duration::from_millis(15_900), 15),
            (Duration::from_secs(u64::MAX), i32::MAX),
        ] {
            assert_eq!(whole_seconds(d), want, "{d:?}");
        }
    }
}
