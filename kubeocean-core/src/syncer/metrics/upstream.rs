//! Upstream Kubeocean's syncer metric names, labels and units, so that dashboards and alerts
//! written for upstream keep working after a switch: per virtual node what its physical node
//! offers (`kubeocean_syncer_vnode_origin_resource`), what is lent
//! (`..._available_resource`), what the worker's own pods request (`..._physical_usage`)
//! and what the virtual pods request (`..._virtual_usage`), their sums per binding (`kubeocean_syncer_cluster_*`), and the
//! number of virtual nodes (`kubeocean_syncer_vnode_total`). Units as upstream: CPU in
//! millicores, memory-like resources in MiB, everything else in units.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

use kube_kit::admin::Metrics;
use kube_kit::quantity::Quantity;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

/// A gauge holding a float (resource amounts in upstream's units).
type FloatGauge = Gauge<f64, AtomicU64>;

/// Labels of the per-node resource gauges.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeResourceLabels {
    /// ClusterBinding name.
    pub clusterbinding: String,
    /// Virtual node name.
    pub node: String,
    /// Resource name (`cpu`, `memory`, `nvidia.com/gpu`...).
    pub resource: String,
}

/// Labels of the per-binding resource sums.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterResourceLabels {
    /// ClusterBinding name.
    pub clusterbinding: String,
    /// Resource name.
    pub resource: String,
}

/// Label of the per-binding gauges.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterBindingLabel {
    /// ClusterBinding name.
    pub clusterbinding: String,
}

/// What one virtual node reports, in upstream's units.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeResources {
    /// The physical node's allocatable (or capacity).
    pub origin: BTreeMap<String, f64>,
    /// What the virtual node lends (after the policy's limits).
    pub available: BTreeMap<String, f64>,
    /// What the worker's own pods on the physical node request.
    pub physical_usage: BTreeMap<String, f64>,
    /// What virtual pods (Kubeocean's physical pods) on the physical node request.
    pub virtual_usage: BTreeMap<String, f64>,
}

/// `quantity` of `resource` in upstream's unit: CPU-like resources (`cpu`, `*/cpu`) in
/// millicores, memory-like ones (`memory`, `ephemeral-storage`, `*/memory`, `hugepages-*`)
/// in MiB, the rest in units.
pub fn metric_value(resource: &str, quantity: &Quantity) -> f64 {
    let last = resource.rsplit('/').next().unwrap_or(resource);
    if last == "cpu" {
        return quantity.milli_value() as f64;
    }
    if matches!(last, "memory" | "ephemeral-storage") || resource.starts_with("hugepages-") {
        return quantity.milli_value() as f64 / 1000.0 / (1024.0 * 1024.0);
    }
    quantity.milli_value() as f64 / 1000.0
}

/// The gauges of one virtual node from the leasing engine's inputs and result, and what the
/// virtual pods on it request (`mapped`).
pub fn node_resources<'a, 'b>(
    base: &BTreeMap<String, Quantity>,
    available: &BTreeMap<String, Quantity>,
    usage: impl IntoIterator<Item = (&'a str, Quantity)>,
    mapped: impl IntoIterator<Item = (&'b str, Quantity)>,
) -> NodeResources {
    let convert = |(name, q): (&str, &Quantity)| (name.to_owned(), metric_value(name, q));
    NodeResources {
        origin: base.iter().map(|(n, q)| convert((n, q))).collect(),
        available: available.iter().map(|(n, q)| convert((n, q))).collect(),
        physical_usage: usage.into_iter().map(|(n, q)| convert((n, &q))).collect(),
        virtual_usage: mapped.into_iter().map(|(n, q)| convert((n, &q))).collect(),
    }
}

/// Sums of the nodes' resources, per resource (origin, available, physical usage).
pub fn cluster_sums<'a>(nodes: impl IntoIterator<Item = &'a NodeResources>) -> NodeResources {
    let mut sums = NodeResources::default();
    for node in nodes {
        for (into, from) in [
            (&mut sums.origin, &node.origin),
            (&mut sums.available, &node.available),
            (&mut sums.physical_usage, &node.physical_usage),
            (&mut sums.virtual_usage, &node.virtual_usage),
        ] {
            for (resource, value) in from {
                *into.entry(resource.clone()).or_insert(0.0) += value;
            }
        }
    }
    sums
}

/// The upstream-named syncer metrics; cheap to clone.
#[derive(Clone, Debug)]
pub struct UpstreamMetrics {
    vnode_total: Family<ClusterBindingLabel, Gauge>,
    node_gauges: [Family<NodeResourceLabels, FloatGauge>; 4],
    cluster_gauges: [Family<ClusterResourceLabels, FloatGauge>; 4],
    /// What each (binding, virtual node) reported last, to sum and to remove series.
    nodes: Arc<Mutex<BTreeMap<(String, String), NodeResources>>>,
}

/// Names and help of the four node gauges, in the order of [`NodeResources`]' fields.
const NODE_GAUGES: [(&str, &str); 4] = [
    (
        "kubeocean_syncer_vnode_origin_resource",
        "Allocatable resources of the physical node of a virtual node (cpu in millicores, memory in MiB)",
    ),
    (
        "kubeocean_syncer_vnode_available_resource",
        "Resources a virtual node lends, after the policy's limits (cpu in millicores, memory in MiB)",
    ),
    (
        "kubeocean_syncer_vnode_physical_usage",
        "Requests of the worker's own (non-Kubeocean) pods on the physical node of a virtual node",
    ),
    (
        "kubeocean_syncer_vnode_virtual_usage",
        "Requests of the virtual pods (Pending or Running) on a virtual node",
    ),
];

/// Names and help of the four binding sums.
const CLUSTER_GAUGES: [(&str, &str); 4] = [
    (
        "kubeocean_syncer_cluster_origin_resource",
        "Sum of kubeocean_syncer_vnode_origin_resource over the binding's virtual nodes",
    ),
    (
        "kubeocean_syncer_cluster_available_resource",
        "Sum of kubeocean_syncer_vnode_available_resource over the binding's virtual nodes",
    ),
    (
        "kubeocean_syncer_cluster_physical_usage",
        "Sum of kubeocean_syncer_vnode_physical_usage over the binding's virtual nodes",
    ),
    (
        "kubeocean_syncer_cluster_virtual_usage",
        "Sum of kubeocean_syncer_vnode_virtual_usage over the binding's virtual nodes",
    ),
];

fn parts(resources: &NodeResources) -> [&BTreeMap<String, f64>; 4] {
    [
        &resources.origin,
        &resources.available,
        &resources.physical_usage,
        &resources.virtual_usage,
    ]
}

impl UpstreamMetrics {
    /// Creates the metrics and registers them into `metrics`.
    pub fn register(metrics: &Metrics) -> UpstreamMetrics {
        let this = UpstreamMetrics {
            vnode_total: Family::default(),
            node_gauges: Default::default(),
            cluster_gauges: Default::default(),
            nodes: Arc::default(),
        };
        metrics.with_registry(|registry| {
            registry.register(
                "kubeocean_syncer_vnode_total",
                "Virtual nodes of the binding (upstream name of kubeocean_virtual_nodes)",
                this.vnode_total.clone(),
            );
            for ((name, help), family) in NODE_GAUGES.iter().zip(&this.node_gauges) {
                registry.register(*name, *help, family.clone());
            }
            for ((name, help), family) in CLUSTER_GAUGES.iter().zip(&this.cluster_gauges) {
                registry.register(*name, *help, family.clone());
            }
        });
        this
    }

    fn nodes(&self) -> MutexGuard<'_, BTreeMap<(String, String), NodeResources>> {
        self.nodes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the number of virtual nodes of `binding`.
    pub fn set_vnode_total(&self, binding: &str, count: i64) {
        self.vnode_total
            .get_or_create(&ClusterBindingLabel {
                clusterbinding: binding.to_owned(),
            })
            .set(count);
    }

    /// Records what virtual node `node` of `binding` reports now.
    pub fn set_node(&self, binding: &str, node: &str, resources: NodeResources) {
        let mut nodes = self.nodes();
        let before = sums_of(&nodes, binding);
        let key = (binding.to_owned(), node.to_owned());
        let old = nodes.insert(key, resources.clone()).unwrap_or_default();
        for ((family, new), old) in self
            .node_gauges
            .iter()
            .zip(parts(&resources))
            .zip(parts(&old))
        {
            for resource in old.keys().filter(|r| !new.contains_key(*r)) {
                family.remove(&node_labels(binding, node, resource));
            }
            for (resource, value) in new {
                family
                    .get_or_create(&node_labels(binding, node, resource))
                    .set(*value);
            }
        }
        self.update_sums(&nodes, binding, &before);
    }

    /// Removes the series of virtual node `node` of `binding` (it is no longer lent).
    pub fn forget_node(&self, binding: &str, node: &str) {
        let mut nodes = self.nodes();
        let before = sums_of(&nodes, binding);
        let Some(old) = nodes.remove(&(binding.to_owned(), node.to_owned())) else {
            return;
        };
        for (family, old) in self.node_gauges.iter().zip(parts(&old)) {
            for resource in old.keys() {
                family.remove(&node_labels(binding, node, resource));
            }
        }
        self.update_sums(&nodes, binding, &before);
    }

    /// Removes every series of `binding`.
    pub fn forget_binding(&self, binding: &str) {
        let names: Vec<String> = self
            .nodes()
            .keys()
            .filter(|(b, _)| b == binding)
            .map(|(_, n)| n.clone())
            .collect();
        for node in names {
            self.forget_node(binding, &node);
        }
        self.vnode_total.remove(&ClusterBindingLabel {
            clusterbinding: binding.to_owned(),
        });
    }

    /// Sets the binding's sums from `nodes`; removes the series of resources that `before`
    /// (the sums until now) had and no node reports any more.
    fn update_sums(
        &self,
        nodes: &BTreeMap<(String, String), NodeResources>,
        binding: &str,
        before: &NodeResources,
    ) {
        let sums = sums_of(nodes, binding);
        for ((family, sum), old) in self
            .cluster_gauges
            .iter()
            .zip(parts(&sums))
            .zip(parts(before))
        {
            for resource in old.keys().filter(|r| !sum.contains_key(*r)) {
                family.remove(&cluster_labels(binding, resource));
            }
            for (resource, value) in sum {
                family
                    .get_or_create(&cluster_labels(binding, resource))
                    .set(*value);
            }
        }
    }
}

/// The sums of `binding`'s nodes.
fn sums_of(nodes: &BTreeMap<(String, String), NodeResources>, binding: &str) -> NodeResources {
    cluster_sums(
        nodes
            .iter()
            .filter(|((b, _), _)| b == binding)
            .map(|(_, r)| r),
    )
}

fn node_labels(binding: &str, node: &str, resource: &str) -> NodeResourceLabels {
    NodeResourceLabels {
        clusterbinding: binding.to_owned(),
        node: node.to_owned(),
        resource: resource.to_owned(),
    }
}

fn cluster_labels(binding: &str, resource: &str) -> ClusterResourceLabels {
    ClusterResourceLabels {
        clusterbinding: binding.to_owned(),
        resource: resource.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn values_are_in_upstream_units() {
        let cases = [
            ("cpu", "1500m", 1500.0),
            ("cpu", "2", 2000.0),
            ("gocrane.io/cpu", "1", 1000.0),
            ("memory", "4608Mi", 4608.0),
            ("memory", "1Gi", 1024.0),
            ("ephemeral-storage", "512Mi", 512.0),
            ("hugepages-2Mi", "4Mi", 4.0),
            ("gocrane.io/memory", "2Gi", 2048.0),
            ("nvidia.com/gpu", "4", 4.0),
            ("pods", "109", 109.0),
        ];
        for (resource, quantity, want) in cases {
            assert_eq!(
                metric_value(resource, &q(quantity)),
                want,
                "{resource} {quantity}"
            );
        }
    }

    #[test]
    fn node_and_cluster_series_follow_the_nodes() {
        let registry = Metrics::new();
        let metrics = UpstreamMetrics::register(&registry);
        let resources = |cpu: &str, gpu: Option<&str>| {
            let mut base =
                BTreeMap::from([("cpu".to_owned(), q("4")), ("memory".to_owned(), q("8Gi"))]);
            if let Some(gpu) = gpu {
                base.insert("nvidia.com/gpu".to_owned(), q(gpu));
            }
            let available = BTreeMap::from([("cpu".to_owned(), q(cpu))]);
            node_resources(&base, &available, [("cpu", q("1"))], [("cpu", q("250m"))])
        };
        metrics.set_vnode_total("b1", 2);
        metrics.set_node("b1", "vnode-a", resources("1500m", Some("2")));
        metrics.set_node("b1", "vnode-b", resources("500m", None));
        let text = registry.encode().unwrap();
        for want in [
            "kubeocean_syncer_vnode_total{clusterbinding=\"b1\"} 2",
            "kubeocean_syncer_vnode_origin_resource{clusterbinding=\"b1\",node=\"vnode-a\",resource=\"memory\"} 8192.0",
            "kubeocean_syncer_vnode_available_resource{clusterbinding=\"b1\",node=\"vnode-a\",resource=\"cpu\"} 1500.0",
            "kubeocean_syncer_vnode_physical_usage{clusterbinding=\"b1\",node=\"vnode-b\",resource=\"cpu\"} 1000.0",
            "kubeocean_syncer_cluster_available_resource{clusterbinding=\"b1\",resource=\"cpu\"} 2000.0",
            "kubeocean_syncer_cluster_origin_resource{clusterbinding=\"b1\",resource=\"nvidia.com/gpu\"} 2.0",
            "kubeocean_syncer_cluster_physical_usage{clusterbinding=\"b1\",resource=\"cpu\"} 2000.0",
            "kubeocean_syncer_vnode_virtual_usage{clusterbinding=\"b1\",node=\"vnode-a\",resource=\"cpu\"} 250.0",
            "kubeocean_syncer_cluster_virtual_usage{clusterbinding=\"b1\",resource=\"cpu\"} 500.0",
        ] {
            assert!(text.contains(want), "{want} not in\n{text}");
        }
        // The GPU node goes: its series and the GPU sum go with it.
        metrics.forget_node("b1", "vnode-a");
        let text = registry.encode().unwrap();
        assert!(!text.contains("vnode-a"), "{text}");
        assert!(!text.contains("nvidia.com/gpu"), "{text}");
        assert!(
            text.contains("kubeocean_syncer_cluster_available_resource{clusterbinding=\"b1\",resource=\"cpu\"} 500.0"),
            "{text}"
        );
        metrics.forget_binding("b1");
        let text = registry.encode().unwrap();
        assert!(!text.contains("clusterbinding=\"b1\""), "{text}");
    }
}
