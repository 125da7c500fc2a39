//! Router counters: cache hits, direct fallbacks by reason, read-your-writes waits, writes;
//! exported through a prometheus-client [`Registry`].

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::decision::FallbackReason;

/// The label set of the fallback counter: `reason`.
type ReasonLabels = [(&'static str, &'static str); 1];

/// Counters shared by a router; cheap to read at any time. The counters are
/// prometheus-client metrics, so [`RouterMetrics::register`] exports these very values.
#[derive(Debug, Default)]
pub struct RouterMetrics {
    cache_hits: Counter,
    fallbacks: Family<ReasonLabels, Counter>,
    ryw_waits: Counter,
    ryw_wait_timeouts: Counter,
    writes: Counter,
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
}

fn reason_labels(reason: FallbackReason) -> ReasonLabels {
    [("reason", reason.as_str())]
}

impl RouterMetrics {
    /// Zeroed counters.
    pub fn new() -> Self {
        let metrics = Self::default();
        // Every reason shows up at zero, so dashboards see the series before the first fallback.
        for reason in FallbackReason::ALL {
            let _ = metrics.fallbacks.get_or_create(&reason_labels(reason));
        }
        metrics
    }

    /// Registers the counters in `registry` (prometheus-client adds the `_total` suffix):
    /// `kairship_router_cache_hits_total`, `kairship_router_fallbacks_total{reason}`,
    /// `kairship_router_read_your_writes_waits_total`,
    /// `kairship_router_read_your_writes_timeouts_total`, `kairship_router_writes_total`.
    /// The registered metrics share their values with `self`.
    pub fn register(&self, registry: &mut Registry) {
        let router = registry.sub_registry_with_prefix("kairship_router");
        router.register(
            "cache_hits",
            "Reads answered by the read backend",
            self.cache_hits.clone(),
        );
        router.register(
            "fallbacks",
            "Reads answered directly by the instance, by reason",
            self.fallbacks.clone(),
        );
        router.register(
            "read_your_writes_waits",
            "Reads that waited for the cache to see the client's own write",
            self.ryw_waits.clone(),
        );
        router.register(
            "read_your_writes_timeouts",
            "Reads whose wait for the cache timed out",
            self.ryw_wait_timeouts.clone(),
        );
        router.register(
            "writes",
            "Writes forwarded to the instance",
            self.writes.clone(),
        );
    }

    /// The counters in the Prometheus text exposition format (a registry holding only them).
    pub fn to_prometheus_text(&self) -> String {
        let mut registry = Registry::default();
        self.register(&mut registry);
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &registry);
        out
    }

    pub(crate) fn cache_hit(&self) {
        self.cache_hits.inc();
    }

    pub(crate) fn fallback(&self, reason: FallbackReason) {
        self.fallbacks.get_or_create(&reason_labels(reason)).inc();
    }

    pub(crate) fn ryw_wait(&self, timed_out: bool) {
        self.ryw_waits.inc();
        if timed_out {
            self.ryw_wait_timeouts.inc();
        }
    }

    pub(crate) fn write(&self) {
        self.writes.inc();
    }

    /// The current values.
    pub fn snapshot(&self) -> RouterMetricsSnapshot {
        RouterMetricsSnapshot {
            cache_hits: self.cache_hits.get(),
            fallbacks: FallbackReason::ALL
                .map(|reason| self.fallbacks.get_or_create(&reason_labels(reason)).get()),
            ryw_waits: self.ryw_waits.get(),
            ryw_wait_timeouts: self.ryw_wait_timeouts.get(),
            writes: self.writes.get(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_exports_through_a_registry() {
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

        let mut registry = Registry::default();
        m.register(&mut registry);
        // Counting after registration shows in the registry: the values are shared.
        m.cache_hit();
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        for line in [
            "# TYPE kairship_router_cache_hits counter",
            "kairship_router_cache_hits_total 3",
            "kairship_router_fallbacks_total{reason=\"unsynced\"} 1",
            "kairship_router_fallbacks_total{reason=\"stale_after_write\"} 1",
            "kairship_router_fallbacks_total{reason=\"cache_error\"} 0",
            "kairship_router_read_your_writes_waits_total 2",
            "kairship_router_read_your_writes_timeouts_total 1",
            "kairship_router_writes_total 1",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        assert!(
            m.to_prometheus_text()
                .contains("kairship_router_cache_hits_total 3")
        );
    }
}
