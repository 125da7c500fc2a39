//! What a physical node offers and what its own pods already use.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use kube_kit::quantity::{Format, Quantity};

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

    /// Removes every amount, keeping the allocation.
    pub fn clear(&mut self) {
        self.0.clear();
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
    let allocatable = status
        .and_then(|s| s.allocatable.as_ref())
        .filter(|a| !a.is_empty());
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
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending");
    let ours = labels::is_managed(&pod.metadata);
    matches!(phase, "Pending" | "Running") && !ours
}

/// Sum of the effective requests of the pods that count (see [`pod_counts`]), each also
/// using one `pods`.
pub fn node_usage<'a>(pods: &[&'a Pod]) -> ResourceAmounts<'a> {
    let mut usage = ResourceAmounts::new();
    let mut scratch = Scratch::default();
    let mut count = 0i128;
    // Pods are large and spread over memory. Gathering the request entries of plain pods
    // in a short loop lets the CPU fetch many pods at once; parsing comes after.
    let mut entries: Vec<(&'a str, &'a K8sQuantity)> = Vec::with_capacity(pods.len() * 4);
    for pod in pods.iter().copied().filter(|pod| pod_counts(pod)) {
        count += 1;
        let Some(spec) = pod.spec.as_ref() else {
            continue;
        };
        let plain = spec.init_containers.as_ref().is_none_or(Vec::is_empty)
            && spec
                .resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .is_none_or(BTreeMap::is_empty);
        if !plain {
            add_pod_requests(pod, &mut usage, &mut scratch);
            continue;
        }
        for container in &spec.containers {
            let requests = container
                .resources
                .as_ref()
                .and_then(|r| r.requests.as_ref());
            entries.extend(
                requests
                    .into_iter()
                    .flatten()
                    .map(|(name, q)| (name.as_str(), q)),
            );
        }
        entries.extend(
            spec.overhead
                .iter()
                .flatten()
                .map(|(name, q)| (name.as_str(), q)),
        );
    }
    for (name, q) in entries {
        add_parsed(&mut usage, name, q);
    }
    if count > 0 {
        usage.add(PODS, Quantity::from_units(count, Format::DecimalSI));
    }
    usage
}

/// The effective requests of one pod, as the scheduler computes them.
pub fn pod_requests(pod: &Pod) -> ResourceAmounts<'_> {
    let mut requests = ResourceAmounts::new();
    add_pod_requests(pod, &mut requests, &mut Scratch::default());
    requests
}

/// Buffers reused across the pods of a node.
#[derive(Default)]
struct Scratch<'a> {
    requests: ResourceAmounts<'a>,
    sidecars: ResourceAmounts<'a>,
    init_peak: ResourceAmounts<'a>,
    init: ResourceAmounts<'a>,
}

/// Adds a pod's effective requests to `total`: max(each init container plus the sidecars
/// started before it, app containers plus all sidecars), with pod-level requests taking
/// precedence, plus the pod overhead. Expects objects as the API server stores them
/// (requests defaulted from limits, see [`default_requests_from_limits`]).
fn add_pod_requests<'a>(pod: &'a Pod, total: &mut ResourceAmounts<'a>, scratch: &mut Scratch<'a>) {
    let Some(spec) = pod.spec.as_ref() else {
        return;
    };
    let init_containers = spec.init_containers.as_deref().unwrap_or_default();
    let pod_level = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .filter(|r| !r.is_empty());
    if init_containers.is_empty() && pod_level.is_none() {
        // Common case: sum straight into the total.
        for container in &spec.containers {
            add_container_requests(container, total);
        }
    } else {
        let Scratch {
            requests,
            sidecars,
            init_peak,
            init,
        } = scratch;
        requests.clear();
        sidecars.clear();
        init_peak.clear();
        for container in &spec.containers {
            add_container_requests(container, requests);
        }
        for container in init_containers {
            init.clear();
            add_container_requests(container, init);
            if container.restart_policy.as_deref() == Some("Always") {
                // A sidecar keeps running next to the app containers and later init containers.
                requests.add_all(init);
                sidecars.add_all(init);
                init_peak.raise_all(sidecars);
            } else {
                init.add_all(sidecars);
                init_peak.raise_all(init);
            }
        }
        requests.raise_all(init_peak);
        for (name, q) in pod_level.into_iter().flatten() {
            if let Ok(q) = Quantity::parse(&q.0) {
                requests.set(name, q);
            }
        }
        total.add_all(requests);
    }
    for (name, q) in spec.overhead.iter().flatten() {
        add_parsed(total, name, q);
    }
}

fn add_container_requests<'a>(container: &'a Container, into: &mut ResourceAmounts<'a>) {
    let requests = container
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref());
    for (name, q) in requests.into_iter().flatten() {
        add_parsed(into, name, q);
    }
}

fn add_parsed<'a>(into: &mut ResourceAmounts<'a>, name: &'a str, q: &K8sQuantity) {
    // The API server rejects malformed quantities, so skipping one loses nothing real.
    if let Ok(q) = Quantity::parse(&q.0) {
        into.add(name, q);
    }
}

/// The API server's defaulting of container requests: a resource with a limit but no
/// request requests its limit. Objects read from a cluster already have it; apply it to
/// objects read from files before evaluating them.
pub fn default_requests_from_limits(pod: &mut Pod) {
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    let init = spec.init_containers.iter_mut().flatten();
    for container in spec.containers.iter_mut().chain(init) {
        let Some(resources) = container.resources.as_mut() else {
            continue;
        };
        let Some(limits) = resources.limits.as_ref() else {
            continue;
        };
        let requests = resources.requests.get_or_insert_with(Default::default);
        for (name, limit) in limits {
            requests
                .entry(name.clone())
                .or_insert_with(|| limit.clone());
        }
    }
}

/// What one pod takes from its node, computed once per pod version so that re-evaluating a
/// node only sums cached amounts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodUsage {
    /// Whether the pod counts against its node at all (see [`pod_counts`]).
    pub counts: bool,
    /// Its effective requests (see [`pod_requests`]); empty when it does not count.
    pub requests: Vec<(String, Quantity)>,
}

impl PodUsage {
    /// The usage of `pod`.
    pub fn of(pod: &Pod) -> PodUsage {
        if !pod_counts(pod) {
            return PodUsage::default();
        }
        let requests = pod_requests(pod)
            .iter()
            .map(|(name, q)| (name.to_owned(), q))
            .collect();
        PodUsage {
            counts: true,
            requests,
        }
    }
}

impl PodUsage {
    /// The usage of `pod` if it is one of Kubeocean's own physical pods (label
    /// `kubeocean.io/managed-by=kubeocean`) in phase Pending or Running: what virtual pods
    /// take from the node, which the leasing math leaves out (see [`pod_counts`]) and the
    /// metrics report.
    pub fn of_mapped(pod: &Pod) -> PodUsage {
        let phase = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("Pending");
        let ours = labels::is_managed(&pod.metadata);
        if !ours || !matches!(phase, "Pending" | "Running") {
            return PodUsage::default();
        }
        let requests = pod_requests(pod)
            .iter()
            .map(|(name, q)| (name.to_owned(), q))
            .collect();
        PodUsage {
            counts: true,
            requests,
        }
    }
}

/// The summed usage of the pods on one node, built from [`PodUsage`]s; give it to the
/// engine through [`crate::leasing::LeasingInput::usage`] instead of the pods.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeUsage {
    amounts: Vec<(String, Quantity)>,
    pods: i128,
}

impl NodeUsage {
    /// No usage.
    pub fn new() -> NodeUsage {
        NodeUsage::default()
    }

    /// The usage of these pods.
    pub fn from_pods<'p>(pods: impl IntoIterator<Item = &'p PodUsage>) -> NodeUsage {
        let mut usage = NodeUsage::new();
        for pod in pods {
            usage.add_pod(pod);
        }
        usage
    }

    /// Adds one pod (nothing if it does not count).
    pub fn add_pod(&mut self, pod: &PodUsage) {
        if !pod.counts {
            return;
        }
        self.pods += 1;
        for (name, amount) in &pod.requests {
            match self.amounts.iter_mut().find(|(n, _)| n == name) {
                Some((_, q)) => *q += *amount,
                None => self.amounts.push((name.clone(), *amount)),
            }
        }
    }

    /// The total of `name` (`pods` included).
    pub fn get(&self, name: &str) -> Option<Quantity> {
        self.amounts().get(name)
    }

    /// The totals, with the pod count under `pods`, as the engine's limit functions take them.
    pub fn amounts(&self) -> ResourceAmounts<'_> {
        let mut amounts = ResourceAmounts(
            self.amounts
                .iter()
                .map(|(name, q)| (name.as_str(), *q))
                .collect(),
        );
        if self.pods > 0 {
            amounts.add(PODS, Quantity::from_units(self.pods, Format::DecimalSI));
        }
        amounts
    }
}
