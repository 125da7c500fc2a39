//! Bounded waits for a condition that a controller or the simulator makes true eventually.
//! The limits are guards against a hang, never a measure of speed.

use std::future::Future;
use std::time::Duration;

/// How long [`eventually`] waits.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(30);
/// How often [`eventually`] checks.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(25);

/// Polls `check` every `interval` until it returns `Some`, for at most `limit`; panics naming
/// `what` if it never does.
pub async fn eventually_some_every<T, F, Fut>(
    what: &str,
    limit: Duration,
    interval: Duration,
    mut check: F,
) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(interval).await;
    }
}

/// Polls `check` every 50 ms until it returns `Some`, for at most `limit`.
pub async fn eventually_some<T, F, Fut>(what: &str, limit: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    eventually_some_every(what, limit, Duration::from_millis(50), check).await
}

/// Polls `check` every `interval` until it holds, for at most `limit`.
pub async fn eventually_every<F, Fut>(what: &str, limit: Duration, interval: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    eventually_some_every(what, limit, interval, || {
        let holds = check();
        async move { holds.await.then_some(()) }
    })
    .await;
}

/// Polls `check` every [`DEFAULT_INTERVAL`] until it holds, for at most [`DEFAULT_LIMIT`].
pub async fn eventually<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    eventually_every(what, DEFAULT_LIMIT, DEFAULT_INTERVAL, check).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn returns_the_first_value_and_stops_polling() {
        let calls = AtomicU32::new(0);
        let got = eventually_some_every("three calls", DEFAULT_LIMIT, Duration::ZERO, || {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            async move { (n == 3).then_some(n) }
        })
        .await;
        assert_eq!(got, 3);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    #[should_panic(expected = "waiting for never")]
    async fn panics_naming_what_never_held() {
        eventually_every(
            "never",
            Duration::from_millis(30),
            Duration::from_millis(5),
            || async { false },
        )
        .await;
    }
}
