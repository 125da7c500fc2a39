//! Prometheus metrics of the top-down half: physical pods created, reconcile errors by
//! reconciler and reason, how long a virtual pod waits for its physical pod, and virtual and
//! physical pods by phase. Registered with [`super::SyncerMetrics`].

use std::collections::BTreeMap;
use std::time::Duration;

use kube_kit::admin::Metrics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

use crate::syncer::error::Side;

/// Labels of per-binding counters and histograms.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BindingLabel {
    /// ClusterBinding name.
    pub binding: String,
}

/// Labels of the error counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// ClusterBinding name.
    pub binding: String,
    /// Reconciler (`virtual-pod`, `physical-pod`, ...).
    pub reconciler: String,
    /// Short reason of the error.
    pub reason: String,
}

/// Labels of the pod gauges.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PodLabels {
    /// ClusterBinding name.
    pub binding: String,
    /// `computing` (virtual pods) or `worker` (physical pods).
    pub cluster: String,
    /// Pod phase.
    pub phase: String,
}

/// The top-down metrics; cheap to clone.
#[derive(Clone, Debug)]
pub struct TopDownMetrics {
    pod_creates: Family<BindingLabel, Counter>,
    errors: Family<ErrorLabels, Counter>,
    mapping_latency: Family<BindingLabel, Histogram>,
    pods: Family<PodLabels, Gauge>,
    /// Upstream's names: pods created, and virtual and physical pods by phase.
    upstream_created: Family<UpstreamBindingLabel, Counter>,
    upstream_create_attempts: Family<UpstreamBindingLabel, Counter>,
    upstream_create_errors: Family<UpstreamBindingLabel, Counter>,
    upstream_failed: Family<UpstreamBindingLabel, Counter>,
    upstream_virtual_pods: Family<UpstreamPodLabels, Gauge>,
    upstream_physical_pods: Family<UpstreamPodLabels, Gauge>,
}

/// Label of upstream-named per-binding counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UpstreamBindingLabel {
    /// ClusterBinding name.
    pub clusterbinding: String,
}

/// Labels of upstream-named pod gauges.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UpstreamPodLabels {
    /// ClusterBinding name.
    pub clusterbinding: String,
    /// Pod phase.
    pub phase: String,
}

/// Phases always exported (at 0 when no pod is in them).
const PHASES: [&str; 5] = ["Pending", "Running", "Succeeded", "Failed", "Unknown"];

impl TopDownMetrics {
    /// Creates the metrics and registers them into `metrics`.
    pub fn register(metrics: &Metrics) -> TopDownMetrics {
        let this = TopDownMetrics {
            pod_creates: Family::default(),
            errors: Family::default(),
            mapping_latency: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 16))
            }),
            pods: Family::default(),
            upstream_created: Family::default(),
            upstream_create_attempts: Family::default(),
            upstream_create_errors: Family::default(),
            upstream_failed: Family::default(),
            upstream_virtual_pods: Family::default(),
            upstream_physical_pods: Family::default(),
        };
        metrics.with_registry(|registry| {
            registry.register(
                "kubeocean_topdown_physical_pod_creates",
                "Physical pods created in the worker cluster",
                this.pod_creates.clone(),
            );
            registry.register(
                "kubeocean_topdown_errors",
                "Failed top-down reconciles by reconciler and reason",
                this.errors.clone(),
            );
            registry.register(
                "kubeocean_topdown_mapping_latency_seconds",
                "From the syncer first seeing a virtual pod to its physical pod being created",
                this.mapping_latency.clone(),
            );
            registry.register(
                "kubeocean_topdown_pods",
                "Virtual (cluster=computing) and physical (cluster=worker) pods of the binding by phase",
                this.pods.clone(),
            );
            registry.register(
                "kubeocean_syncer_pod_created",
                "Physical pods created (upstream name of kubeocean_topdown_physical_pod_creates_total)",
                this.upstream_created.clone(),
            );
            registry.register(
                "kubeocean_syncer_create_pod",
                "Attempts to create a physical pod (upstream name)",
                this.upstream_create_attempts.clone(),
            );
            registry.register(
                "kubeocean_syncer_create_pod_errors",
                "Attempts to create a physical pod that failed (upstream name)",
                this.upstream_create_errors.clone(),
            );
            registry.register(
                "kubeocean_syncer_pod_created_failed",
                "Virtual pods marked Failed because their physical pod was lost (upstream name)",
                this.upstream_failed.clone(),
            );
            registry.register(
                "kubeocean_syncer_virtual_pod_total",
                "Virtual pods of the binding by phase (upstream name)",
                this.upstream_virtual_pods.clone(),
            );
            registry.register(
                "kubeocean_syncer_physical_pod_total",
                "Physical pods of the binding by phase (upstream name)",
                this.upstream_physical_pods.clone(),
            );
        });
        this
    }

    /// Records a physical pod created `latency` after its virtual pod was first seen.
    pub fn pod_created(&self, binding: &str, latency: Duration) {
        let labels = BindingLabel {
            binding: binding.to_owned(),
        };
        self.pod_creates.get_or_create(&labels).inc();
        self.upstream_created
            .get_or_create(&UpstreamBindingLabel {
                clusterbinding: binding.to_owned(),
            })
            .inc();
        self.mapping_latency
            .get_or_create(&labels)
            .observe(latency.as_secs_f64());
    }

    /// Records one attempt to create a physical pod (`failed`: it did not succeed).
    pub fn create_attempted(&self, binding: &str, failed: bool) {
        let label = UpstreamBindingLabel {
            clusterbinding: binding.to_owned(),
        };
        self.upstream_create_attempts.get_or_create(&label).inc();
        if failed {
            self.upstream_create_errors.get_or_create(&label).inc();
        }
    }

    /// Records a virtual pod marked Failed because its physical pod was lost.
    pub fn pod_failed(&self, binding: &str) {
        self.upstream_failed
            .get_or_create(&UpstreamBindingLabel {
                clusterbinding: binding.to_owned(),
            })
            .inc();
    }

    /// Records a failed reconcile.
    pub fn error(&self, binding: &str, reconciler: &str, reason: &str) {
        self.errors
            .get_or_create(&ErrorLabels {
                binding: binding.to_owned(),
                reconciler: reconciler.to_owned(),
                reason: reason.to_owned(),
            })
            .inc();
    }

    /// Removes the per-binding gauges, counter and histogram of `binding` (the error
    /// counter, labelled by reason as well, stays). Pod phases beyond the five standard
    /// ones are not known here and stay too.
    pub fn forget_binding(&self, binding: &str) {
        let labels = BindingLabel {
            binding: binding.to_owned(),
        };
        self.pod_creates.remove(&labels);
        self.mapping_latency.remove(&labels);
        let upstream_label = UpstreamBindingLabel {
            clusterbinding: binding.to_owned(),
        };
        for family in [
            &self.upstream_created,
            &self.upstream_create_attempts,
            &self.upstream_create_errors,
            &self.upstream_failed,
        ] {
            family.remove(&upstream_label);
        }
        for side in [Side::Computing, Side::Worker] {
            for phase in PHASES {
                self.pods.remove(&PodLabels {
                    binding: binding.to_owned(),
                    cluster: side.to_string(),
                    phase: phase.to_owned(),
                });
                self.upstream_pods(side).remove(&UpstreamPodLabels {
                    clusterbinding: binding.to_owned(),
                    phase: phase.to_owned(),
                });
            }
        }
    }

    /// Sets the pod counts of one cluster by phase.
    pub fn set_pods(&self, binding: &str, side: Side, phases: &BTreeMap<String, i64>) {
        let names = PHASES
            .iter()
            .map(|p| (*p).to_owned())
            .chain(phases.keys().cloned());
        for phase in names {
            let count = phases.get(&phase).copied().unwrap_or(0);
            self.upstream_pods(side)
                .get_or_create(&UpstreamPodLabels {
                    clusterbinding: binding.to_owned(),
                    phase: phase.clone(),
                })
                .set(count);
            self.pods
                .get_or_create(&PodLabels {
                    binding: binding.to_owned(),
                    cluster: side.to_string(),
                    phase,
                })
                .set(count);
        }
    }

    fn upstream_pods(&self, side: Side) -> &Family<UpstreamPodLabels, Gauge> {
        match side {
            Side::Computing => &self.upstream_virtual_pods,
            Side::Worker => &self.upstream_physical_pods,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_exported() {
        let registry = Metrics::new();
        let metrics = TopDownMetrics::register(&registry);
        metrics.pod_created("b1", Duration::from_millis(5));
        metrics.error("b1", "virtual-pod", "NameConflict");
        metrics.set_pods(
            "b1",
            Side::Computing,
            &BTreeMap::from([("Running".to_owned(), 3)]),
        );
        metrics.set_pods("b1", Side::Worker, &BTreeMap::new());
        metrics.create_attempted("b1", false);
        metrics.create_attempted("b1", true);
        metrics.pod_failed("b1");
        let text = registry.encode().unwrap();
        for want in [
            "kubeocean_topdown_physical_pod_creates_total{binding=\"b1\"} 1",
            "kubeocean_topdown_errors_total{binding=\"b1\",reconciler=\"virtual-pod\",reason=\"NameConflict\"} 1",
            "kubeocean_topdown_mapping_latency_seconds_count{binding=\"b1\"} 1",
            "kubeocean_topdown_pods{binding=\"b1\",cluster=\"computing\",phase=\"Running\"} 3",
            "kubeocean_topdown_pods{binding=\"b1\",cluster=\"computing\",phase=\"Pending\"} 0",
            "kubeocean_syncer_pod_created_total{clusterbinding=\"b1\"} 1",
            "kubeocean_syncer_create_pod_total{clusterbinding=\"b1\"} 2",
            "kubeocean_syncer_create_pod_errors_total{clusterbinding=\"b1\"} 1",
            "kubeocean_syncer_pod_created_failed_total{clusterbinding=\"b1\"} 1",
            "kubeocean_syncer_virtual_pod_total{clusterbinding=\"b1\",phase=\"Running\"} 3",
            "kubeocean_syncer_physical_pod_total{clusterbinding=\"b1\",phase=\"Running\"} 0",
        ] {
            assert!(text.contains(want), "{want} not in\n{text}");
        }
    }
}
