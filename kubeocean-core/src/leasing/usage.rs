//! What a physical node offers and what its own pods already use.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use kube_kit::quantity::Quantity;

use crate::labels;

/// Resource name of the pod count.
pub const PODS: &str = "pods";

/// Resource amounts by name, borrowing names from the objects they were read from.
/// A short vector: nodes and pods carry a handful of resources, so a linear scan beats a
/// map and allocates once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceAmounts<'a>(Vec<(&'a str, Quantity)>);

impl<'a> ResourceAmounts<'a> {
    /// No resources.
    pub fn new() -> Self {
        ResourceAmounts(Vec::new())
    }

    /// The amount of `name`, if present.
    pub fn get(&self, name: &str) -> Option<Quantity> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, q)| *q)
    }

    /// Adds `amount` to `name`.
    pub fn add(&mut self, name: &'a str, amount: Quantity) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, q)) => *q += amount,
            None => self.0.push((name, amount)),
        }
    }

    /// Raises `name` to at least `amount`.
    pub fn raise_to(&mut self, name: &'a str, amount: Quantity) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, q)) => *q = (*q).max(amount),
            None => self.0.push((name, amount)),
        }
    }

    /// Replaces the amount of `name`.
    pub fn set(&mut self, name: &'a str, amount: Quantity) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, q)) => *q = amount,
            None => self.0.push((name, amount)),
        }
    }

    /// Adds every amount of `other`.
    pub fn add_all(&mut self, other: &ResourceAmounts<'a>) {
        for &(name, amount) in &other.0 {
            self.add(name, amount);
        }
    }

    /// Raises every amount to at least the one in `other`.
    pub fn raise_all(&mut self, other: &ResourceAmounts<'a>) {
        for &(name, amount) in &other.0 {
            self.raise_to(name, amount);
        }
    }

    /// `(name, amount)` pairs in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, Quantity)> + '_ {
        self.0.iter().copied()
    }
}

/// Resources a node offers: `status.allocatable`, or `status.capacity` when allocatable is
/// empty. Unparseable quantities are skipped (the kubelet never writes them).
pub fn node_base(node: &Node) -> BTreeMap<String, Quantity> {
    let status = node.status.as_ref();
    let allocatable = status.and_then(|s| s.allocatable.as_ref()).filter(|a| !a.is_empty());
    let source = allocatable.or_else(|| status.and_then(|s| s.capacity.as_ref()));
    source
        .into_iter()
        .flatten()
        .filter_map(|(name, q)| Quantity::parse(&q.0).ok().map(|q| (name.clone(), q)))
        .collect()
}

/// Whether a pod counts against its node: phase Pending or Running (a pod without a
/// status is Pending) and not a pod Kubeocean itself placed there.
pub fn pod_counts(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
    let ours = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(labels::MANAGED_BY))
        .is_some_and(|v| v == labels::MANAGED_BY_VALUE);
    matches!(phase, "Pending" | "Running") && !ours
}

/// Sum of the effective requests of the pods that count (see [`pod_counts`]), each also
/// using one `pods`.
pub fn node_usage<'a>(pods: &[&'a Pod]) -> ResourceAmounts<'a> {
    let mut usage = ResourceAmounts::new();
    let mut count = 0i128;
    for pod in pods.iter().copied().filter(|pod| pod_counts(pod)) {
        add_pod_requests(pod, &mut usage);
        count += 1;
    }
    if count > 0 {
        usage.add(PODS, Quantity::from_units(count, kube_kit::quantity::Format::DecimalSI));
    }
    usage
}

/// The effective requests of one pod, as the scheduler computes them.
pub fn pod_requests(pod: &Pod) -> ResourceAmounts<'_> {
    let mut requests = ResourceAmounts::new();
    add_pod_requests(pod, &mut requests);
    requests
}

/// Adds a pod's effective requests to `total`: max(each init container plus the sidecars
/// started before it, app containers plus all sidecars), with pod-level requests taking
/// precedence, plus the pod overhead.
fn add_pod_requests<'a>(pod: &'a Pod, total: &mut ResourceAmounts<'a>) {
    let Some(spec) = pod.spec.as_ref() else { return };
    let init_containers = spec.init_containers.as_deref().unwrap_or_default();
    let pod_level = spec.resources.as_ref().and_then(|r| r.requests.as_ref()).filter(|r| !r.is_empty());
    if init_containers.is_empty() && pod_level.is_none() {
        // Common case: sum straight into the total without a per-pod buffer.
        for container in &spec.containers {
            add_container_requests(container, total);
        }
    } else {
        let mut requests = ResourceAmounts::new();
        for container in &spec.containers {
            add_container_requests(container, &mut requests);
        }
        let mut sidecars = ResourceAmounts::new();
        let mut init_peak = ResourceAmounts::new();
        for container in init_containers {
            let mut own = ResourceAmounts::new();
            add_container_requests(container, &mut own);
            if container.restart_policy.as_deref() == Some("Always") {
                // A sidecar keeps running next to the app containers and later init containers.
                requests.add_all(&own);
                sidecars.add_all(&own);
                init_peak.raise_all(&sidecars);
            } else {
                own.add_all(&sidecars);
                init_peak.raise_all(&own);
            }
        }
        requests.raise_all(&init_peak);
        for (name, q) in pod_level.into_iter().flatten() {
            if let Ok(q) = Quantity::parse(&q.0) {
                requests.set(name, q);
            }
        }
        total.add_all(&requests);
    }
    for (name, q) in spec.overhead.iter().flatten() {
        if let Ok(q) = Quantity::parse(&q.0) {
            total.add(name, q);
        }
    }
}

/// A container's requests; a resource with only a limit requests its limit (the API
/// server's defaulting, repeated for objects read from files).
fn add_container_requests<'a>(container: &'a Container, into: &mut ResourceAmounts<'a>) {
    let Some(resources) = container.resources.as_ref() else { return };
    let requests = resources.requests.as_ref();
    for (name, q) in requests.into_iter().flatten() {
        add_parsed(into, name, q);
    }
    for (name, q) in resources.limits.iter().flatten() {
        if !requests.is_some_and(|r| r.contains_key(name)) {
            add_parsed(into, name, q);
        }
    }
}

fn add_parsed<'a>(into: &mut ResourceAmounts<'a>, name: &'a str, q: &K8sQuantity) {
    // The API server rejects malformed quantities, so skipping one loses nothing real.
    if let Ok(q) = Quantity::parse(&q.0) {
        into.add(name, q);
    }
}
