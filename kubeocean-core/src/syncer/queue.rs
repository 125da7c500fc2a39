//! A work queue of keys (node or policy names) as client-go has it: a key is queued at most
//! once, is never handed to two workers at once (a key added while it is being worked on is
//! handed out again afterwards), and can be scheduled for a later instant (only the earliest
//! schedule of a key is kept). Beside it, the consecutive failures per key that the retry
//! policy ([`super::worker::backoff`]) grows its delay with.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct State {
    ready: VecDeque<String>,
    queued: HashSet<String>,
    active: HashSet<String>,
    again: HashSet<String>,
    timers: BTreeSet<(Instant, String)>,
    due: HashMap<String, Instant>,
}

/// A deduplicating work queue with delayed adds.
#[derive(Default)]
pub struct WorkQueue {
    state: Mutex<State>,
    notify: Notify,
}

impl WorkQueue {
    /// An empty queue.
    pub fn new() -> WorkQueue {
        WorkQueue::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `key` now.
    pub fn add(&self, key: &str) {
        let added = Self::push(&mut self.lock(), key);
        if added {
            self.notify.notify_one();
        }
    }

    /// Queues every key now.
    pub fn add_all<'k>(&self, keys: impl IntoIterator<Item = &'k str>) {
        let mut added = false;
        {
            let mut state = self.lock();
            for key in keys {
                added |= Self::push(&mut state, key);
            }
        }
        if added {
            self.notify.notify_waiters();
            self.notify.notify_one();
        }
    }

    fn push(state: &mut State, key: &str) -> bool {
        if state.active.contains(key) {
            state.again.insert(key.to_owned());
            return false;
        }
        if state.queued.insert(key.to_owned()) {
            state.ready.push_back(key.to_owned());
            return true;
        }
        false
    }

    /// Queues `key` at `at` (now if `at` has passed); an earlier schedule of the key wins.
    pub fn add_at(&self, key: &str, at: Instant) {
        {
            let mut state = self.lock();
            match state.due.get(key) {
                Some(existing) if *existing <= at => return,
                Some(existing) => {
                    let existing = *existing;
                    state.timers.remove(&(existing, key.to_owned()));
                }
                None => {}
            }
            state.due.insert(key.to_owned(), at);
            state.timers.insert((at, key.to_owned()));
        }
        // Wake a waiter so it re-computes its sleep.
        self.notify.notify_one();
    }

    /// The number of keys ready to be handed out.
    pub fn len(&self) -> usize {
        self.lock().ready.len()
    }

    /// Whether no key is ready.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hands out the next key, waiting for one; `None` once `token` is cancelled. Call
    /// [`WorkQueue::done`] with the key when finished.
    pub async fn next(&self, token: &CancellationToken) -> Option<String> {
        loop {
            let wake_at = {
                let mut state = self.lock();
                let now = Instant::now();
                while let Some((at, key)) = state.timers.first().cloned() {
                    if at > now {
                        break;
                    }
                    state.timers.pop_first();
                    state.due.remove(&key);
                    Self::push(&mut state, &key);
                }
                if let Some(key) = state.ready.pop_front() {
                    state.queued.remove(&key);
                    state.active.insert(key.clone());
                    // Others may be waiting too.
                    if !state.ready.is_empty() {
                        self.notify.notify_one();
                    }
                    return Some(key);
                }
                state.timers.first().map(|(at, _)| *at)
            };
            let sleep = async {
                match wake_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = token.cancelled() => return None,
                _ = self.notify.notified() => {}
                _ = sleep => {}
            }
        }
    }

    /// Marks `key` finished; if it was added meanwhile it is queued again.
    pub fn done(&self, key: &str) {
        let requeue = {
            let mut state = self.lock();
            state.active.remove(key);
            state.again.remove(key) && Self::push(&mut state, key)
        };
        if requeue {
            self.notify.notify_one();
        }
    }
}

/// Consecutive failures per key, for the backoff.
#[derive(Debug, Default)]
pub struct FailureCounts(Mutex<HashMap<String, u32>>);

impl FailureCounts {
    /// Records a failure of `key`; returns how many in a row.
    pub fn failed(&self, key: &str) -> u32 {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let count = map.entry(key.to_owned()).or_insert(0);
        *count = count.saturating_add(1);
        *count
    }

    /// Forgets the failures of `key` after a success.
    pub fn succeeded(&self, key: &str) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !map.is_empty() {
            map.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn failures_count_in_a_row_per_key() {
        let counts = FailureCounts::default();
        assert_eq!(counts.failed("a"), 1);
        assert_eq!(counts.failed("a"), 2);
        assert_eq!(counts.failed("b"), 1);
        counts.succeeded("a");
        assert_eq!(counts.failed("a"), 1);
    }

    #[tokio::test]
    async fn keys_are_deduplicated_and_never_handed_out_twice_at_once() {
        let q = WorkQueue::new();
        let token = CancellationToken::new();
        q.add_all(["a", "b", "a"]);
        assert_eq!(q.len(), 2);
        let a = q.next(&token).await.unwrap();
        assert_eq!(a, "a");
        // Added while active: held back until done.
        q.add("a");
        assert_eq!(q.next(&token).await.unwrap(), "b");
        assert!(q.is_empty());
        q.done("a");
        assert_eq!(q.next(&token).await.unwrap(), "a");
        q.done("a");
        q.done("b");
        assert!(q.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_keys_come_due_and_earliest_schedule_wins() {
        let q = WorkQueue::new();
        let token = CancellationToken::new();
        let start = Instant::now();
        q.add_at("late", start + Duration::from_secs(10));
        q.add_at("late", start + Duration::from_secs(3));
        q.add_at("late", start + Duration::from_secs(20));
        let key = q.next(&token).await.unwrap();
        assert_eq!(key, "late");
        assert_eq!(Instant::now() - start, Duration::from_secs(3));
        q.done(&key);
        // Only one schedule was kept.
        let waited = tokio::time::timeout(Duration::from_secs(60), q.next(&token)).await;
        assert!(waited.is_err(), "no second schedule of the key");
    }

    #[tokio::test]
    async fn cancellation_ends_the_wait() {
        let q = WorkQueue::new();
        let token = CancellationToken::new();
        token.cancel();
        assert_eq!(q.next(&token).await, None);
    }
}
