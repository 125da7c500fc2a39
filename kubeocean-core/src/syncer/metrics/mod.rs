//! Prometheus metrics of the syncer: reconciles (count, errors by reason, duration) per
//! reconciler through kube-kit's [`ControllerMetrics`], and per binding the number of
//! virtual nodes and whether the worker answers; the top-down half's own metrics
//! ([`TopDownMetrics`]) and upstream Kubeocean's names ([`UpstreamMetrics`]) are registered
//! with them.

use std::time::Duration;

use kube_kit::admin::Metrics;
use kube_kit::controller::ControllerMetrics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

pub mod topdown;
pub mod upstream;

pub use self::topdown::TopDownMetrics;
pub use self::upstream::{NodeResources, UpstreamMetrics, node_resources};

/// Labels of the per-binding gauges.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BindingLabels {
    /// ClusterBinding name.
    pub binding: String,
}

/// The syncer's metrics; register once and share (cheap to clone).
#[derive(Clone, Debug)]
pub struct SyncerMetrics {
    controllers: ControllerMetrics,
    virtual_nodes: Family<BindingLabels, Gauge>,
    worker_reachable: Family<BindingLabels, Gauge>,
    topdown: TopDownMetrics,
    upstream: UpstreamMetrics,
}

impl SyncerMetrics {
    /// Creates the metrics and registers them into `metrics`.
    pub fn register(metrics: &Metrics) -> SyncerMetrics {
        let this = SyncerMetrics {
            controllers: ControllerMetrics::register(metrics),
            virtual_nodes: Family::default(),
            worker_reachable: Family::default(),
            topdown: TopDownMetrics::register(metrics),
            upstream: UpstreamMetrics::register(metrics),
        };
        metrics.with_registry(|registry| {
            registry.register(
                "kubeocean_virtual_nodes",
                "Virtual nodes of the binding in the computing cluster",
                this.virtual_nodes.clone(),
            );
            registry.register(
                "kubeocean_worker_reachable",
                "1 while the binding's worker cluster answers, else 0",
                this.worker_reachable.clone(),
            );
        });
        this
    }

    /// The top-down metrics.
    pub fn topdown(&self) -> &TopDownMetrics {
        &self.topdown
    }

    /// The metrics under upstream Kubeocean's names.
    pub fn upstream(&self) -> &UpstreamMetrics {
        &self.upstream
    }

    /// Records one reconcile.
    pub fn reconciled(&self, reconciler: &str, took: Duration, failure: Option<&str>) {
        self.controllers.record(reconciler, took, failure);
    }

    /// Sets the number of virtual nodes of `binding`.
    pub fn set_virtual_nodes(&self, binding: &str, count: usize) {
        let labels = BindingLabels {
            binding: binding.to_owned(),
        };
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        self.virtual_nodes.get_or_create(&labels).set(count);
        self.upstream.set_vnode_total(binding, count);
    }

    /// Removes the series of `binding` (its syncer stopped for good): a binding that is gone
    /// is not reported as having virtual nodes or a reachable worker.
    pub fn forget_binding(&self, binding: &str) {
        let labels = BindingLabels {
            binding: binding.to_owned(),
        };
        self.virtual_nodes.remove(&labels);
        self.worker_reachable.remove(&labels);
        self.topdown.forget_binding(binding);
        self.upstream.forget_binding(binding);
    }

    /// Sets whether the worker of `binding` answers.
    pub fn set_worker_reachable(&self, binding: &str, reachable: bool) {
        let labels = BindingLabels {
            binding: binding.to_owned(),
        };
        self.worker_reachable
            .get_or_create(&labels)
            .set(i64::from(reachable));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_exported_with_the_binding_label() {
        let registry = Metrics::new();
        let metrics = SyncerMetrics::register(&registry);
        metrics.set_virtual_nodes("b1", 3);
        metrics.set_worker_reachable("b1", true);
        metrics.reconciled(
            "physical-node",
            Duration::from_millis(3),
            Some("VirtualNodeWrite"),
        );
        let text = registry.encode().unwrap();
        assert!(
            text.contains("kubeocean_virtual_nodes{binding=\"b1\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("kubeocean_worker_reachable{binding=\"b1\"} 1"),
            "{text}"
        );
        assert!(text.contains("reason=\"VirtualNodeWrite\""), "{text}");
    }

    #[test]
    fn a_forgotten_binding_has_no_series_left() {
        let registry = Metrics::new();
        let metrics = SyncerMetrics::register(&registry);
        for binding in ["b1", "b2"] {
            metrics.set_virtual_nodes(binding, 2);
            metrics.set_worker_reachable(binding, true);
            metrics
                .topdown()
                .pod_created(binding, Duration::from_millis(5));
            metrics.topdown().set_pods(
                binding,
                crate::syncer::error::Side::Worker,
                &std::collections::BTreeMap::from([("Running".to_owned(), 1)]),
            );
        }
        metrics.forget_binding("b1");
        let text = registry.encode().unwrap();
        assert!(!text.contains("binding=\"b1\""), "{text}");
        assert!(
            text.contains("kubeocean_virtual_nodes{binding=\"b2\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("kubeocean_worker_reachable{binding=\"b2\"} 1"),
            "{text}"
        );
    }
}
