//! Client-side QPS and burst limits for API requests, as a tower [`Layer`].
//!
//! The limiter is a token bucket expressed as the generic cell rate algorithm (GCRA): each
//! request reserves the next slot of a schedule with one slot per `1/qps`, and up to `burst`
//! slots may be taken ahead of time. Reservations are exact integer arithmetic on
//! [`tokio::time::Instant`], so a paused test clock measures the rate precisely.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

/// The token-bucket schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    /// Time between requests at the sustained rate.
    interval: Duration,
    /// How far ahead of the schedule a request may go: `(burst - 1) * interval`.
    tolerance: Duration,
    /// Theoretical arrival time of the next request at the sustained rate.
    next_slot: Option<Instant>,
}

impl TokenBucket {
    /// A bucket allowing `qps` requests per second on average and `burst` at once; `None`
    /// when `qps` is not a positive finite number (no limit). A `burst` of 0 counts as 1.
    pub fn new(qps: f64, burst: u32) -> Option<Self> {
        if !(qps.is_finite() && qps > 0.0) {
            return None;
        }
        let interval = Duration::try_from_secs_f64(1.0 / qps).ok()?;
        Some(Self {
            interval,
            tolerance: interval.saturating_mul(burst.max(1) - 1),
            next_slot: None,
        })
    }

    /// Reserves a slot for a request arriving at `now` and returns when it may be sent.
    pub fn reserve(&mut self, now: Instant) -> Instant {
        let slot = self.next_slot.map_or(now, |next| next.max(now));
        self.next_slot = Some(slot + self.interval);
        // `slot - tolerance`, but never before now (and without underflowing an Instant).
        if slot.saturating_duration_since(now) <= self.tolerance {
            now
        } else {
            slot - self.tolerance
        }
    }
}

/// A shareable limiter: clones (and every client built with the same layer) draw from one
/// bucket.
#[derive(Clone, Debug)]
pub struct RateLimitLayer {
    bucket: Option<Arc<Mutex<TokenBucket>>>,
}

impl RateLimitLayer {
    /// `qps` requests per second on average with bursts of `burst`; `qps <= 0` disables the
    /// limit.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            bucket: TokenBucket::new(qps, burst).map(|b| Arc::new(Mutex::new(b))),
        }
    }

    /// Whether this layer limits anything.
    pub fn is_limited(&self) -> bool {
        self.bucket.is_some()
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimit {
            inner,
            bucket: self.bucket.clone(),
            state: Permit::None,
        }
    }
}

enum Permit {
    None,
    Waiting(Pin<Box<Sleep>>),
    Granted,
}

/// The service made by [`RateLimitLayer`]: `poll_ready` waits for the request's slot.
pub struct RateLimit<S> {
    inner: S,
    bucket: Option<Arc<Mutex<TokenBucket>>>,
    state: Permit,
}

impl<S: Clone> Clone for RateLimit<S> {
    fn clone(&self) -> Self {
        // A clone shares the bucket but not this instance's reservation.
        Self {
            inner: self.inner.clone(),
            bucket: self.bucket.clone(),
            state: Permit::None,
        }
    }
}

impl<S, Req> Service<Req> for RateLimit<S>
where
    S: Service<Req>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if let Some(bucket) = &self.bucket {
            loop {
                match &mut self.state {
                    Permit::Granted => break,
                    Permit::None => {
                        let now = Instant::now();
                        let at = bucket
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .reserve(now);
                        self.state = if at <= now {
                            Permit::Granted
                        } else {
                            Permit::Waiting(Box::pin(tokio::time::sleep_until(at)))
                        };
                    }
                    Permit::Waiting(sleep) => {
                        ready!(sleep.as_mut().poll(cx));
                        self.state = Permit::Granted;
                    }
                }
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        self.state = Permit::None;
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    #[test]
    fn bucket_schedule_table() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // (qps, burst, arrival offsets in ms, expected release offsets in ms)
        let cases: [(f64, u32, &[u64], &[u64]); 5] = [
            (10.0, 1, &[0, 0, 0], &[0, 100, 200]),
            (10.0, 3, &[0, 0, 0, 0, 0], &[0, 0, 0, 100, 200]),
            (
                10.0,
                3,
                &[0, 0, 0, 1000, 1000, 1000, 1000],
                &[0, 0, 0, 1000, 1000, 1000, 1100],
            ),
            (2.0, 2, &[0, 0, 0, 600], &[0, 0, 500, 1000]),
            (4.0, 0, &[0, 0], &[0, 250]),
        ];
        for (qps, burst, arrivals, want) in cases {
            let mut bucket = TokenBucket::new(qps, burst).unwrap();
            let got: Vec<u64> = arrivals
                .iter()
                .map(|a| {
                    let at = bucket.reserve(t0 + ms(*a));
                    u64::try_from(at.duration_since(t0).as_millis()).unwrap()
                })
                .collect();
            assert_eq!(got, want, "qps {qps} burst {burst}");
        }
    }

    #[test]
    fn non_positive_qps_means_unlimited() {
        for qps in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(TokenBucket::new(qps, 5).is_none(), "{qps}");
            assert!(!RateLimitLayer::new(qps, 5).is_limited());
        }
    }

    #[tokio::test(start_paused = true)]
    async fn layer_holds_rate_over_a_burst() {
        let (qps, burst, total) = (5.0, 10u32, 60u32);
        let layer = RateLimitLayer::new(qps, burst);
        let mut svc = layer.layer(tower::service_fn(|_: ()| async {
            Ok::<_, std::convert::Infallible>(Instant::now())
        }));
        let start = Instant::now();
        let mut sent = Vec::new();
        for _ in 0..total {
            sent.push(svc.ready().await.unwrap().call(()).await.unwrap());
        }
        let offsets: Vec<Duration> = sent.iter().map(|t| t.duration_since(start)).collect();
        // The burst goes at once, the rest one per 1/qps.
        assert!(offsets[..burst as usize].iter().all(|d| d.is_zero()));
        let expected_end = Duration::from_secs_f64(f64::from(total - burst) / qps);
        assert_eq!(*offsets.last().unwrap(), expected_end);
        // No one-second window holds more than burst + qps requests.
        for (i, t) in sent.iter().enumerate() {
            let in_window = sent[i..]
                .iter()
                .filter(|u| u.duration_since(*t) < Duration::from_secs(1))
                .count();
            assert!(
                in_window <= (burst + 5) as usize,
                "window at {i}: {in_window}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn clones_share_one_bucket() {
        let layer = RateLimitLayer::new(1.0, 1);
        let mut a = layer.layer(tower::service_fn(|_: ()| async {
            Ok::<_, ()>(Instant::now())
        }));
        let mut b = layer.layer(tower::service_fn(|_: ()| async {
            Ok::<_, ()>(Instant::now())
        }));
        let start = Instant::now();
        a.ready().await.unwrap().call(()).await.unwrap();
        let second = b.ready().await.unwrap().call(()).await.unwrap();
        assert_eq!(second.duration_since(start), Duration::from_secs(1));
    }
}
