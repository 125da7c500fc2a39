//! The syncer's clock.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use tokio::time::Instant;

/// The syncer's notion of "now": the system clock, optionally shifted (tests use a shift
/// to bring a time-window edge a few seconds ahead).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    offset: SignedDuration,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// The system clock shifted by `offset`.
    pub fn with_offset(offset: SignedDuration) -> Clock {
        Clock { offset }
    }

    /// The current time.
    pub fn now(&self) -> Timestamp {
        Timestamp::now()
            .checked_add(self.offset)
            .unwrap_or_else(|_| Timestamp::now())
    }

    /// The monotonic instant at which this clock shows `at` (now if it has passed), rounded
    /// up to the millisecond so that a timer never fires before the edge.
    pub fn instant_at(&self, at: Timestamp) -> Instant {
        let wait = at.duration_since(self.now());
        let wait = Duration::try_from(wait).unwrap_or_default();
        let millis = wait.as_nanos().div_ceil(1_000_000);
        Instant::now() + Duration::from_millis(u64::try_from(millis).unwrap_or(u64::MAX / 2))
    }
}
