//! A small, bounded cache whose entries expire, for review answers.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long review answers are kept, and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReviewCacheConfig {
    /// How long a positive answer (authenticated, allowed) is reused.
    pub positive_ttl: Duration,
    /// How long a negative answer (not authenticated, denied) is reused.
    pub negative_ttl: Duration,
    /// Most answers kept; the ones closest to expiry go first when full.
    pub capacity: usize,
}

impl Default for ReviewCacheConfig {
    fn default() -> Self {
        ReviewCacheConfig {
            positive_ttl: Duration::from_secs(10),
            negative_ttl: Duration::from_secs(10),
            capacity: 4096,
        }
    }
}

impl ReviewCacheConfig {
    /// No caching: every call asks the host cluster.
    pub fn disabled() -> Self {
        ReviewCacheConfig {
            positive_ttl: Duration::ZERO,
            negative_ttl: Duration::ZERO,
            capacity: 0,
        }
    }

    /// The time to live of an answer.
    pub fn ttl(&self, positive: bool) -> Duration {
        if positive {
            self.positive_ttl
        } else {
            self.negative_ttl
        }
    }
}

/// Entries expire after their own time to live; at most `capacity` are kept.
#[derive(Debug)]
pub(crate) struct TtlCache<K, V> {
    capacity: usize,
    entries: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K: Eq + Hash + Clone, V: Clone> TtlCache<K, V> {
    pub(crate) fn new(capacity: usize) -> Self {
        TtlCache {
            capacity,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The live value of `key` at `now`.
    pub(crate) fn get_at(&self, key: &K, now: Instant) -> Option<V> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        match entries.get(key) {
            Some((expires, value)) if *expires > now => Some(value.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Keeps `value` until `now + ttl`; a zero ttl or capacity keeps nothing.
    pub(crate) fn insert_at(&self, key: K, value: V, now: Instant, ttl: Duration) {
        if ttl.is_zero() || self.capacity == 0 {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.retain(|_, (expires, _)| *expires > now);
            // Still full: drop the entry that would expire first.
            if entries.len() >= self.capacity
                && let Some(oldest) = entries
                    .iter()
                    .min_by_key(|(_, (expires, _))| *expires)
                    .map(|(k, _)| k.clone())
            {
                entries.remove(&oldest);
            }
        }
        entries.insert(key, (now + ttl, value));
    }

    pub(crate) fn get(&self, key: &K) -> Option<V> {
        self.get_at(key, Instant::now())
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// The SHA-256 digest of a bearer token: caches key answers by it so that no token is kept in
/// memory longer than a request.
pub(crate) fn token_digest(token: &str) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(digest.as_ref());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn entries_expire_after_their_ttl() {
        let cache = TtlCache::new(8);
        let t0 = Instant::now();
        cache.insert_at("a", 1, t0, S * 10);
        cache.insert_at("b", 2, t0, S);
        for (key, at, want) in [
            ("a", t0, Some(1)),
            ("a", t0 + S * 9, Some(1)),
            ("a", t0 + S * 10, None),
            ("b", t0, Some(2)),
            ("b", t0 + S, None),
            ("c", t0, None),
        ] {
            assert_eq!(cache.get_at(&key, at), want, "{key} at +{:?}", at - t0);
        }
    }

    #[test]
    fn zero_ttl_or_capacity_keeps_nothing() {
        let t0 = Instant::now();
        let cache = TtlCache::new(8);
        cache.insert_at("a", 1, t0, Duration::ZERO);
        assert_eq!(cache.get_at(&"a", t0), None);
        let none = TtlCache::new(0);
        none.insert_at("a", 1, t0, S);
        assert_eq!(none.get_at(&"a", t0), None);
    }

    #[test]
    fn a_full_cache_drops_expired_then_soonest_to_expire() {
        let t0 = Instant::now();
        let cache = TtlCache::new(2);
        cache.insert_at("short", 1, t0, S);
        cache.insert_at("long", 2, t0, S * 100);
        // "short" has expired by now: it is the one dropped.
        cache.insert_at("new", 3, t0 + S * 2, S * 50);
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get_at(&"long", t0 + S * 2), Some(2));
        assert_eq!(cache.get_at(&"new", t0 + S * 2), Some(3));
        // Nothing expired: the entry expiring first ("new") goes.
        cache.insert_at("newer", 4, t0 + S * 3, S * 60);
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get_at(&"new", t0 + S * 3), None);
        assert_eq!(cache.get_at(&"long", t0 + S * 3), Some(2));
        // Replacing a present key never evicts another.
        cache.insert_at("long", 5, t0 + S * 3, S);
        assert_eq!(cache.get_at(&"newer", t0 + S * 3), Some(4));
    }

    #[test]
    fn token_digests_differ_and_hide_the_token() {
        let a = token_digest("secret-a");
        assert_eq!(a, token_digest("secret-a"));
        assert_ne!(a, token_digest("secret-b"));
        assert!(!a.windows(6).any(|w| w == b"secret"));
    }
}
