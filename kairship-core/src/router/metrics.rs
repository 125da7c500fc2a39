//! Router counters: cache hits, direct fallbacks by reason, read-your-writes waits, writes.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use super::decision::FallbackReason;

/// Counters shared by a router; cheap to read at any time.
#[derive(Debug, Default)]
pub struct RouterMetrics {
    cache_hits: AtomicU64,
    fallbacks: [AtomicU64; FallbackReason::ALL.len()],
    ryw_waits: AtomicU64,
    ryw_wait_timeouts: AtomicU64,
    writes: AtomicU64,
}

/// A point-in-time copy of [`RouterMetrics`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouterMetricsSnapshot {
    /// Reads answered by the read backend.
    pub cache_hits: u64,
    /// Reads answered directly by the instance, per reason, in [`FallbackReason::ALL`] order.
    pub fallbacks: [u64; FallbackReason::ALL.len()],
    /// Reads that waited for the cache to see the client's own write.
    pub ryw_waits: u64,
    /// Of those, the ones that gave up and read directly.
    pub ryw_wait_timeouts: u64,
    /// Writes forwarded to the instance.
    pub writes: u64,
}

impl RouterMetricsSnapshot {
    /// All fallbacks, whatever the reason.
    pub fn fallbacks_total(&self) -> u64 {
        self.fallbacks.iter().sum()
    }

    /// Fallbacks for one reason.
    pub fn fallbacks_for(&self, reason: FallbackReason) -> u64 {
        FallbackReason::ALL
            .iter()
            .position(|r| *r == reason)
            .map_or(0, |i| self.fallbacks[i])
    }

    /// The counters in the Prometheus text exposition format.
    pub fn to_prometheus_text(&self) -> String {
        let mut out = String::new();
        let mut counter = |name: &str, help: &str, samples: &[(String, u64)]| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for (labels, value) in samples {
                let _ = writeln!(out, "{name}{labels} {value}");
            }
        };
        counter(
            "kairship_router_cache_hits_total",
            "Reads answered by the read backend",
            &[(String::new(), self.cache_hits)],
        );
        let by_reason: Vec<(String, u64)> = FallbackReason::ALL
            .iter()
            .zip(self.fallbacks)
            .map(|(r, v)| (format!("{{reason=\"{}\"}}", r.as_str()), v))
            .collect();
        counter(
            "kairship_router_fallbacks_total",
            "Reads answered directly by the instance, by reason",
            &by_reason,
        );
        counter(
            "kairship_router_read_your_writes_waits_total",
            "Reads that waited for the cache to see the client's own write",
            &[(String::new(), self.ryw_waits)],
        );
        counter(
            "kairship_router_read_your_writes_timeouts_total",
            "Reads whose wait for the cache timed out",
            &[(String::new(), self.ryw_wait_timeouts)],
        );
        counter(
            "kairship_router_writes_total",
            "Writes forwarded to the instance",
            &[(String::new(), self.writes)],
        );
        out
    }
}

impl RouterMetrics {
    /// Zeroed counters.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn cache_hit(&self) {
        self.cache_hits.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn fallback(&self, reason: FallbackReason) {
        if let Some(i) = FallbackReason::ALL.iter().position(|r| *r == reason) {
            self.fallbacks[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn ryw_wait(&self, timed_out: bool) {
        self.ryw_waits.fetch_add(1, Ordering::Relaxed);
        if timed_out {
            self.ryw_wait_timeouts.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn write(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }

    /// The current values.
    pub fn snapshot(&self) -> RouterMetricsSnapshot {
        RouterMetricsSnapshot {
            cache_hits: self.cache_hits.load(Ordering::Relaxed),
            fallbacks: std::array::from_fn(|i| self.fallbacks[i].load(Ordering::Relaxed)),
            ryw_waits: self.ryw_waits.load(Ordering::Relaxed),
            ryw_wait_timeouts: self.ryw_wait_timeouts.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_renders() {
        let m = RouterMetrics::new();
        m.cache_hit();
        m.cache_hit();
        m.fallback(FallbackReason::Unsynced);
        m.fallback(FallbackReason::StaleAfterWrite);
        m.ryw_wait(true);
        m.ryw_wait(false);
        m.write();
        let s = m.snapshot();
        assert_eq!(s.cache_hits, 2);
        assert_eq!(s.fallbacks_total(), 2);
        assert_eq!(s.fallbacks_for(FallbackReason::Unsynced), 1);
        assert_eq!(s.fallbacks_for(FallbackReason::CacheError), 0);
        assert_eq!((s.ryw_waits, s.ryw_wait_timeouts, s.writes), (2, 1, 1));
        let text = s.to_prometheus_text();
        assert!(
            text.contains("kairship_router_cache_hits_total 2"),
            "{text}"
        );
        assert!(
            text.contains("kairship_router_fallbacks_total{reason=\"unsynced\"} 1"),
            "{text}"
        );
        assert!(text.contains("kairship_router_read_your_writes_timeouts_total 1"));
    }
}
