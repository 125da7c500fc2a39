//! The manager's metrics under upstream Kubeocean's names: ClusterBindings by status
//! (`kubeocean_clusterbindings_total`) and reconciles per binding
//! (`kubeocean_manager_sync_total`, `kubeocean_manager_sync_errors_total`,
//! `kubeocean_manager_sync_duration_seconds`). The generic controller metrics
//! (`controller_reconcile_*`) are kube-kit's.

use std::collections::BTreeMap;
use std::time::Duration;

use kube_kit::admin::Metrics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

use crate::crd::{ClusterBinding, ClusterBindingPhase};

/// The statuses `kubeocean_clusterbindings_total` reports (always all four).
pub const BINDING_STATUSES: [&str; 4] = ["Pending", "Ready", "Failed", "Deleting"];

/// Label of the status gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusLabel {
    /// `Pending`, `Ready`, `Failed` or `Deleting`.
    pub status: String,
}

/// Label of the per-binding counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterBindingLabel {
    /// ClusterBinding name.
    pub clusterbinding: String,
}

/// How many bindings are in each of [`BINDING_STATUSES`]: `Deleting` when the binding is
/// being deleted, else its phase (`Pending` until it has one).
pub fn binding_status_counts(bindings: &[ClusterBinding]) -> BTreeMap<&'static str, i64> {
    let mut counts: BTreeMap<&'static str, i64> =
        BINDING_STATUSES.iter().map(|s| (*s, 0)).collect();
    for binding in bindings {
        let status = if binding.metadata.deletion_timestamp.is_some() {
            "Deleting"
        } else {
            match binding.status.as_ref().and_then(|s| s.phase) {
                Some(ClusterBindingPhase::Ready) => "Ready",
                Some(ClusterBindingPhase::Failed) => "Failed",
                _ => "Pending",
            }
        };
        *counts.entry(status).or_insert(0) += 1;
    }
    counts
}

/// The manager's upstream-named metrics; cheap to clone.
#[derive(Clone, Debug)]
pub struct ManagerMetrics {
    bindings: Family<StatusLabel, Gauge>,
    syncs: Family<ClusterBindingLabel, Counter>,
    sync_errors: Family<ClusterBindingLabel, Counter>,
    sync_duration: Histogram,
}

impl ManagerMetrics {
    /// Creates the metrics and registers them into `metrics`.
    pub fn register(metrics: &Metrics) -> ManagerMetrics {
        let this = ManagerMetrics {
            bindings: Family::default(),
            syncs: Family::default(),
            sync_errors: Family::default(),
            sync_duration: Histogram::new(exponential_buckets(0.005, 2.0, 14)),
        };
        metrics.with_registry(|registry| {
            registry.register(
                "kubeocean_clusterbindings_total",
                "ClusterBindings by status (Pending, Ready, Failed, Deleting)",
                this.bindings.clone(),
            );
            registry.register(
                "kubeocean_manager_sync",
                "ClusterBinding reconciles",
                this.syncs.clone(),
            );
            registry.register(
                "kubeocean_manager_sync_errors",
                "ClusterBinding reconciles that failed",
                this.sync_errors.clone(),
            );
            registry.register(
                "kubeocean_manager_sync_duration_seconds",
                "Duration of ClusterBinding reconciles",
                this.sync_duration.clone(),
            );
        });
        this
    }

    /// Sets the status gauge from the stored bindings.
    pub fn set_bindings(&self, bindings: &[ClusterBinding]) {
        for (status, count) in binding_status_counts(bindings) {
            self.bindings
                .get_or_create(&StatusLabel {
                    status: status.to_owned(),
                })
                .set(count);
        }
    }

    /// Records one reconcile of `binding`.
    pub fn synced(&self, binding: &str, took: Duration, failed: bool) {
        let label = ClusterBindingLabel {
            clusterbinding: binding.to_owned(),
        };
        self.syncs.get_or_create(&label).inc();
        if failed {
            self.sync_errors.get_or_create(&label).inc();
        }
        self.sync_duration.observe(took.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn binding(name: &str, phase: Option<&str>, deleting: bool) -> ClusterBinding {
        let mut value = json!({
            "metadata": { "name": name },
            "spec": { "clusterID": name, "secretRef": { "name": "s" } },
        });
        if let Some(phase) = phase {
            value["status"] = json!({ "phase": phase });
        }
        if deleting {
            value["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn bindings_are_counted_by_status() {
        let bindings = [
            binding("a", Some("Ready"), false),
            binding("b", Some("Ready"), false),
            binding("c", Some("Failed"), false),
            binding("d", None, false),
            binding("e", Some("Pending"), false),
            binding("f", Some("Ready"), true),
        ];
        let counts = binding_status_counts(&bindings);
        assert_eq!(
            counts,
            BTreeMap::from([("Deleting", 1), ("Failed", 1), ("Pending", 2), ("Ready", 2)])
        );
        assert_eq!(
            binding_status_counts(&[]),
            BTreeMap::from([("Deleting", 0), ("Failed", 0), ("Pending", 0), ("Ready", 0)])
        );
        let registry = Metrics::new();
        let metrics = ManagerMetrics::register(&registry);
        metrics.set_bindings(&bindings);
        metrics.synced("a", Duration::from_millis(20), false);
        metrics.synced("a", Duration::from_millis(20), true);
        let text = registry.encode().unwrap();
        for want in [
            "kubeocean_clusterbindings_total{status=\"Ready\"} 2",
            "kubeocean_clusterbindings_total{status=\"Deleting\"} 1",
            "kubeocean_manager_sync_total{clusterbinding=\"a\"} 2",
            "kubeocean_manager_sync_errors_total{clusterbinding=\"a\"} 1",
            "kubeocean_manager_sync_duration_seconds_count 2",
        ] {
            assert!(text.contains(want), "{want} not in\n{text}");
        }
    }
}
