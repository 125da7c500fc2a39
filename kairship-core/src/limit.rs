//! A per-caller limit on users' requests: one token bucket per authenticated user, for the
//! native proxy (every request) and REST writes. Off unless `kairship apiserver
//! --per-caller-qps` is given; the instances' own Priority and Fairness still throttles what
//! gets through.
//!
//! The bucket arithmetic is the pure [`take`]; [`CallerLimiter`] keeps one bucket per user.
//! A refused request is answered `429 Too Many Requests` with `Retry-After` (whole seconds until
//! the caller's next token): a Kubernetes `Status` on the proxy ([`proxy_too_many_requests`])
//! and `{code, message}` on REST ([`rest_too_many_requests`]).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

use crate::api::{ApiError, Code};

/// How many requests a caller may make: `per_second` on average, `burst` at once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limit {
    per_second: f64,
    burst: u32,
}

impl Limit {
    /// A limit of `per_second` requests per second on average and `burst` at once; `None`
    /// for a rate that is not a positive finite number or a burst of 0.
    pub fn new(per_second: f64, burst: u32) -> Option<Self> {
        (per_second.is_finite() && per_second > 0.0 && burst >= 1)
            .then_some(Limit { per_second, burst })
    }

    /// Requests per second on average.
    pub fn per_second(&self) -> f64 {
        self.per_second
    }

    /// Requests at once.
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// The burst when none is given: twice the rate, rounded up, at least 1.
    pub fn default_burst(per_second: f64) -> u32 {
        let twice = (per_second * 2.0).ceil();
        if twice.is_finite() && twice >= 1.0 {
            // Saturates at u32::MAX, as `as` does for floats.
            twice as u32
        } else {
            1
        }
    }
}

/// One caller's bucket: the tokens it held at `at` (time since the limiter started).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bucket {
    tokens: f64,
    at: Duration,
}

impl Bucket {
    /// A full bucket at `now`: what a caller not seen before has.
    pub fn full(limit: &Limit, now: Duration) -> Self {
        Bucket {
            tokens: f64::from(limit.burst),
            at: now,
        }
    }

    /// The tokens at `now`: refilled at the limit's rate since `at`, at most the burst (a
    /// clock that went back refills nothing).
    fn tokens_at(&self, limit: &Limit, now: Duration) -> f64 {
        let elapsed = now.saturating_sub(self.at).as_secs_f64();
        (self.tokens + elapsed * limit.per_second).min(f64::from(limit.burst))
    }

    /// Whether the bucket is full at `now`, so forgetting it changes nothing.
    pub fn is_full_at(&self, limit: &Limit, now: Duration) -> bool {
        self.tokens_at(limit, now) >= f64::from(limit.burst)
    }
}

/// A refused request: whole seconds until the caller has a token again (at least 1, as
/// `Retry-After` counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryAfter(pub u64);

/// Takes one token from `bucket` at `now`: the bucket afterwards, and whether the request may
/// go (else how long until it could).
pub fn take(limit: &Limit, bucket: Bucket, now: Duration) -> (Bucket, Result<(), RetryAfter>) {
    let now = now.max(bucket.at);
    let tokens = bucket.tokens_at(limit, now);
    if tokens >= 1.0 {
        let after = Bucket {
            tokens: tokens - 1.0,
            at: now,
        };
        return (after, Ok(()));
    }
    let wait = ((1.0 - tokens) / limit.per_second).ceil();
    let seconds = if wait.is_finite() && wait >= 1.0 {
        wait as u64
    } else {
        1
    };
    (Bucket { tokens, at: now }, Err(RetryAfter(seconds)))
}

/// Buckets kept before full ones are forgotten.
const SWEEP_AT: usize = 4096;

/// One bucket per caller, shared by every request of the API server.
#[derive(Debug)]
pub struct CallerLimiter {
    limit: Limit,
    started: Instant,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl CallerLimiter {
    /// A limiter giving each caller `limit`.
    pub fn new(limit: Limit) -> Self {
        CallerLimiter {
            limit,
            started: Instant::now(),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// The limit each caller gets.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// Takes a token for `caller` (a user name) now.
    pub fn admit(&self, caller: &str) -> Result<(), RetryAfter> {
        let now = self.started.elapsed();
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= SWEEP_AT && !buckets.contains_key(caller) {
            // A full bucket is what an unknown caller gets: forgetting it changes nothing.
            buckets.retain(|_, bucket| !bucket.is_full_at(&self.limit, now));
        }
        let bucket = buckets
            .get(caller)
            .copied()
            .unwrap_or_else(|| Bucket::full(&self.limit, now));
        let (after, admitted) = take(&self.limit, bucket, now);
        buckets.insert(caller.to_owned(), after);
        admitted
    }
}

/// What a limited caller is told (kube-apiserver's words for its own limit,
/// `tooManyRequests` in `staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go`).
const MESSAGE: &str = "Too many requests, please try again later.";

fn with_retry_after(mut response: Response, retry: RetryAfter) -> Response {
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from_str(&retry.0.to_string()).unwrap_or(HeaderValue::from_static("1")),
    );
    response
}

/// The proxy's answer to a limited caller: 429 with `Retry-After` and the `Status` kube-rs and
/// client-go read as `TooManyRequests`, shaped as apimachinery's `NewTooManyRequests`
/// (`staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go`: `reason: TooManyRequests`,
/// `code: 429`, `details.retryAfterSeconds`). kube-apiserver's own limit
/// (`tooManyRequests` in `staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go`,
/// used by priority-and-fairness.go too) sets the same `Retry-After` with this message as plain
/// text, which clients turn into that same `Status`.
pub fn proxy_too_many_requests(retry: RetryAfter) -> Response {
    let body = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": MESSAGE,
        "reason": "TooManyRequests",
        "details": {"retryAfterSeconds": retry.0},
        "code": 429,
    });
    let mut response = body.to_string().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    with_retry_after(response, retry)
}

/// REST's answer to a limited caller: 429 with `Retry-After` and `{code, message}`.
pub fn rest_too_many_requests(retry: RetryAfter) -> Response {
    let message = format!("{MESSAGE} (per-caller limit; retry after {} s)", retry.0);
    with_retry_after(
        ApiError::new(Code::ResourceExhausted, message).into_response(),
        retry,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn limits_table() {
        // (per second, burst, valid)
        for (rate, burst, valid) in [
            (1.0, 1, true),
            (0.5, 3, true),
            (100.0, 200, true),
            (0.0, 1, false),
            (-1.0, 1, false),
            (f64::NAN, 1, false),
            (f64::INFINITY, 1, false),
            (1.0, 0, false),
        ] {
            assert_eq!(Limit::new(rate, burst).is_some(), valid, "{rate} {burst}");
        }
        // (per second, default burst)
        for (rate, burst) in [
            (1.0, 2),
            (0.2, 1),
            (0.5, 1),
            (2.5, 5),
            (10.0, 20),
            (0.0, 1),
            (f64::NAN, 1),
            (1e12, u32::MAX),
        ] {
            assert_eq!(Limit::default_burst(rate), burst, "{rate}");
        }
    }

    #[test]
    fn buckets_table() {
        // (rate, burst, request times in seconds, outcome of each: None admitted, Some(retry))
        type Case = (f64, u32, Vec<f64>, Vec<Option<u64>>);
        let cases: Vec<Case> = vec![
            // A burst at once, then one per second.
            (
                1.0,
                3,
                vec![0.0, 0.0, 0.0, 0.0, 1.0, 1.0],
                vec![None, None, None, Some(1), None, Some(1)],
            ),
            // Slow rates wait longer: 0.25 per second is 4 s per token.
            (
                0.25,
                1,
                vec![0.0, 0.0, 2.0, 4.0],
                vec![None, Some(4), Some(2), None],
            ),
            // Refill never goes beyond the burst.
            (
                10.0,
                2,
                vec![0.0, 0.0, 100.0, 100.0, 100.0],
                vec![None, None, None, None, Some(1)],
            ),
            // Fractions of a token add up; less than a second to wait is still 1.
            (
                4.0,
                1,
                vec![0.0, 0.1, 0.25, 0.3],
                vec![None, Some(1), None, Some(1)],
            ),
            // A clock that goes back refills nothing and takes nothing extra.
            (1.0, 1, vec![5.0, 3.0, 6.0], vec![None, Some(1), None]),
        ];
        for (rate, burst, times, want) in cases {
            let limit = Limit::new(rate, burst).unwrap();
            let mut bucket = Bucket::full(&limit, Duration::ZERO);
            let mut got = Vec::new();
            for at in &times {
                let (after, admitted) = take(&limit, bucket, secs(*at));
                bucket = after;
                got.push(admitted.err().map(|r| r.0));
            }
            assert_eq!(got, want, "{rate}/s burst {burst} at {times:?}");
        }
    }

    #[test]
    fn full_buckets_are_the_ones_that_can_be_forgotten() {
        let limit = Limit::new(1.0, 2).unwrap();
        let (spent, _) = take(&limit, Bucket::full(&limit, Duration::ZERO), Duration::ZERO);
        // (time, full)
        for (at, full) in [(0.0, false), (0.5, false), (1.0, true), (60.0, true)] {
            assert_eq!(spent.is_full_at(&limit, secs(at)), full, "{at}");
        }
        assert!(Bucket::full(&limit, secs(3.0)).is_full_at(&limit, secs(3.0)));
    }

    #[test]
    fn callers_have_their_own_buckets() {
        // A rate so slow that no token comes back while the test runs.
        let limiter = CallerLimiter::new(Limit::new(0.001, 2).unwrap());
        assert_eq!(limiter.admit("alice"), Ok(()));
        assert_eq!(limiter.admit("alice"), Ok(()));
        let refused = limiter.admit("alice").unwrap_err();
        assert!(refused.0 >= 999, "{refused:?}");
        assert_eq!(limiter.admit("bob"), Ok(()));
    }

    #[tokio::test]
    async fn refusals_answer_429_with_retry_after() {
        let proxy = proxy_too_many_requests(RetryAfter(3));
        assert_eq!(proxy.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(proxy.headers()[header::RETRY_AFTER], "3");
        let body = axum::body::to_bytes(proxy.into_body(), 4096).await.unwrap();
        let status: kube::core::Status = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            (status.code, status.reason.as_str()),
            (429, "TooManyRequests")
        );
        assert_eq!(status.details.unwrap().retry_after_seconds, 3);

        let rest = rest_too_many_requests(RetryAfter(2));
        assert_eq!(rest.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(rest.headers()[header::RETRY_AFTER], "2");
        let body = axum::body::to_bytes(rest.into_body(), 4096).await.unwrap();
        let error: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(error["code"], Code::ResourceExhausted as i32, "{error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("retry after 2 s")
        );
    }
}
