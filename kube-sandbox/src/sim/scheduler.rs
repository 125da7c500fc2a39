//! The simulated scheduler: a pod's effective requests, the placement rules (readiness,
//! taints and tolerations, nodeSelector, required node affinity, free host ports), what bound pods take from
//! each node, and the binding of pending pods to the node that fits them best.

use crate::apiserver::api::WriteContext;
use crate::apiserver::resources::GroupResource;
use crate::apiserver::state::ClusterState;
use crate::sim::controllers::objects::at;
use kube_kit::quantity::{Format, Quantity};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Parses a Kubernetes quantity exactly (apimachinery's `ParseQuantity`, as
/// [`kube_kit::quantity`] implements it).
pub fn parse_quantity(q: &str) -> Option<Quantity> {
    Quantity::parse(q.trim()).ok()
}

/// The pod's effective requests: max(largest init container, sum of containers) plus overhead,
/// and one `pods`.
pub fn pod_requests(pod: &Value) -> Requests {
    let mut sum = Requests::new();
    let requests = |c: &Value| -> Requests {
        at(c, &["resources", "requests"])
            .and_then(Value::as_object)
            .map(|r| {
                r.iter()
                    .filter_map(|(k, v)| Some((k.clone(), parse_quantity(v.as_str()?)?)))
                    .collect()
            })
            .unwrap_or_default()
    };
    for c in at(pod, &["spec", "containers"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for (k, v) in requests(c) {
            *sum.entry(k).or_default() += v;
        }
    }
    for c in at(pod, &["spec", "initContainers"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for (k, v) in requests(c) {
            let e = sum.entry(k).or_default();
            *e = (*e).max(v);
        }
    }
    if let Some(overhead) = at(pod, &["spec", "overhead"]).and_then(Value::as_object) {
        for (k, v) in overhead {
            if let Some(q) = v.as_str().and_then(parse_quantity) {
                *sum.entry(k.clone()).or_default() += q;
            }
        }
    }
    *sum.entry("pods".into()).or_default() += one_pod();
    sum
}

fn expression_matches(expr: &Value, value_of: &dyn Fn(&str) -> Option<String>) -> bool {
    let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
    let values: Vec<&str> = expr
        .get("values")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let actual = value_of(key);
    match expr.get("operator").and_then(Value::as_str).unwrap_or("") {
        "In" => actual.is_some_and(|a| values.contains(&a.as_str())),
        "NotIn" => actual.is_none_or(|a| !values.contains(&a.as_str())),
        "Exists" => actual.is_some(),
        "DoesNotExist" => actual.is_none(),
        op @ ("Gt" | "Lt") => {
            let (Some(a), Some(v)) = (
                actual.and_then(|a| a.parse::<i64>().ok()),
                values.first().and_then(|v| v.parse::<i64>().ok()),
            ) else {
                return false;
            };
            if op == "Gt" { a > v } else { a < v }
        }
        _ => false,
    }
}

/// The terms of a pod's required node affinity.
fn required_node_terms(pod: &Value) -> Option<&Vec<Value>> {
    at(
        pod,
        &[
            "spec",
            "affinity",
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            "nodeSelectorTerms",
        ],
    )?
    .as_array()
}

/// The node names a pod's required node affinity limits it to, when every term names them
/// (`matchFields` on `metadata.name` with `In`): kube-scheduler's NodeAffinity pre-filter
/// narrows the nodes it evaluates to these. `None` when the affinity names no such set.
pub fn pinned_node_names(pod: &Value) -> Option<HashSet<&str>> {
    let terms = required_node_terms(pod)?;
    let mut names = HashSet::new();
    for term in terms {
        let named = term
            .get("matchFields")
            .and_then(Value::as_array)?
            .iter()
            .find(|f| {
                f.get("key").and_then(Value::as_str) == Some("metadata.name")
                    && f.get("operator").and_then(Value::as_str) == Some("In")
            })?;
        names.extend(
            named
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str),
        );
    }
    (!terms.is_empty()).then_some(names)
}

/// Whether a pod may be placed on a node: readiness, unschedulable, taints, nodeSelector,
/// required node affinity. Resources are checked by the caller.
pub fn node_accepts(node: &Value, pod: &Value) -> bool {
    let ready = at(node, &["status", "conditions"])
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
    if !ready || at(node, &["metadata", "deletionTimestamp"]).is_some() {
        return false;
    }
    // Borrowed, not cloned: this runs for every pending pod on every node.
    let tolerations: &[Value] = at(pod, &["spec", "tolerations"])
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let tolerates = |key: &str, value: &str, effect: &str| {
        tolerations.iter().any(|t| {
            let t_key = t.get("key").and_then(Value::as_str).unwrap_or("");
            let op = t.get("operator").and_then(Value::as_str).unwrap_or("Equal");
            let t_effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
            let key_ok = t_key.is_empty() && op == "Exists" || t_key == key;
            let value_ok =
                op == "Exists" || t.get("value").and_then(Value::as_str).unwrap_or("") == value;
            let effect_ok = t_effect.is_empty() || t_effect == effect;
            key_ok && value_ok && effect_ok
        })
    };
    if at(node, &["spec", "unschedulable"]).and_then(Value::as_bool) == Some(true)
        && !tolerates("node.kubernetes.io/unschedulable", "", "NoSchedule")
    {
        return false;
    }
    for taint in at(node, &["spec", "taints"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let effect = taint.get("effect").and_then(Value::as_str).unwrap_or("");
        if effect == "PreferNoSchedule" {
            continue;
        }
        let key = taint.get("key").and_then(Value::as_str).unwrap_or("");
        let value = taint.get("value").and_then(Value::as_str).unwrap_or("");
        if !tolerates(key, value, effect) {
            return false;
        }
    }
    let labels = at(node, &["metadata", "labels"]).and_then(Value::as_object);
    let label = |k: &str| labels.and_then(|l| l.get(k));
    if let Some(selector) = at(pod, &["spec", "nodeSelector"]).and_then(Value::as_object) {
        for (k, v) in selector {
            if label(k) != Some(v) {
                return false;
            }
        }
    }
    let node_name = at(node, &["metadata", "name"])
        .and_then(Value::as_str)
        .unwrap_or("");
    if let Some(terms) = required_node_terms(pod) {
        let label_of = |k: &str| label(k).and_then(Value::as_str).map(str::to_string);
        let field_of = |k: &str| (k == "metadata.name").then(|| node_name.to_string());
        let any_term = terms.iter().any(|term| {
            let exprs = term.get("matchExpressions").and_then(Value::as_array);
            let fields = term.get("matchFields").and_then(Value::as_array);
            if exprs.is_none_or(Vec::is_empty) && fields.is_none_or(Vec::is_empty) {
                return false;
            }
            exprs
                .into_iter()
                .flatten()
                .all(|e| expression_matches(e, &label_of))
                && fields
                    .into_iter()
                    .flatten()
                    .all(|e| expression_matches(e, &field_of))
        });
        if !any_term {
            return false;
        }
    }
    true
}

/// Effective requests of a pod, as [`pod_requests`] computes them.
pub type Requests = HashMap<String, Quantity>;

/// What every pod takes of a node's `pods`.
fn one_pod() -> Quantity {
    Quantity::from_units(1, Format::DecimalSI)
}

/// The node a pod's requests count against: it is bound and has not finished.
fn counted_node(pod: &Value) -> Option<&str> {
    let node = at(pod, &["spec", "nodeName"])
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())?;
    let finished = matches!(
        at(pod, &["status", "phase"]).and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    (!finished).then_some(node)
}

/// What bound, unfinished pods take from each node, kept up to date from pod changes: a
/// scheduling pass then reads one figure per node instead of re-reading every bound pod
/// (which made each pass cost as much as the whole cluster).
#[derive(Debug, Default)]
pub struct NodeUsage {
    /// Pod key -> the node it counts against and its requests.
    pods: HashMap<(String, String), (String, Requests)>,
    /// Node -> sum of the requests of its pods.
    nodes: HashMap<String, Requests>,
}

impl NodeUsage {
    /// Takes a pod's latest state into account (`None`: the pod is gone).
    pub fn observe(&mut self, key: &(String, String), pod: Option<&Value>) {
        let node = pod.and_then(counted_node);
        match (self.pods.get(key), node) {
            // A bound pod's requests do not change; most changes are status writes.
            (Some((counted, _)), Some(node)) if counted == node => return,
            (None, None) => return,
            _ => {}
        }
        self.remove(key);
        if let (Some(pod), Some(node)) = (pod, node) {
            self.add(key.clone(), node.to_string(), pod_requests(pod));
        }
    }

    /// Counts a pod the scheduler just bound, before its change is read back.
    pub fn bound(&mut self, key: (String, String), node: String, requests: Requests) {
        self.remove(&key);
        self.add(key, node, requests);
    }

    /// What the node's counted pods request, by resource.
    pub fn used(&self, node: &str) -> Option<&Requests> {
        self.nodes.get(node)
    }

    fn add(&mut self, key: (String, String), node: String, requests: Requests) {
        let sum = self.nodes.entry(node.clone()).or_default();
        for (resource, quantity) in &requests {
            *sum.entry(resource.clone()).or_default() += *quantity;
        }
        self.pods.insert(key, (node, requests));
    }

    fn remove(&mut self, key: &(String, String)) {
        let Some((node, requests)) = self.pods.remove(key) else {
            return;
        };
        let Some(sum) = self.nodes.get_mut(&node) else {
            return;
        };
        for (resource, quantity) in &requests {
            if let Some(total) = sum.get_mut(resource) {
                *total -= *quantity;
            }
        }
        // Every pod counts one `pods`; none left means the node takes nothing.
        if sum
            .get("pods")
            .is_none_or(|pods| *pods <= Quantity::default())
        {
            self.nodes.remove(&node);
        }
    }
}

/// A node as the scheduler reads it: re-read only when some node changed.
pub(super) struct NodeView {
    node: Arc<crate::apiserver::store::Stored>,
    name: String,
    allocatable: Requests,
}

impl NodeView {
    pub(super) fn new(node: Arc<crate::apiserver::store::Stored>) -> NodeView {
        let name = at(&node.value, &["metadata", "name"])
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let allocatable = at(&node.value, &["status", "allocatable"])
            .or_else(|| at(&node.value, &["status", "capacity"]))
            .and_then(Value::as_object)
            .map(|a| {
                a.iter()
                    .filter_map(|(k, v)| Some((k.clone(), parse_quantity(v.as_str()?)?)))
                    .collect()
            })
            .unwrap_or_default();
        NodeView {
            node,
            name,
            allocatable,
        }
    }
}

/// The node with the largest share of CPU left after placing a pod requesting `requests`,
/// among `candidates` (name, allocatable, used) where it fits; on equal CPU shares the one
/// with the larger share of its `pods` left, so that pods without requests spread over nodes
/// as kube-scheduler's scoring spreads them; full ties keep the first.
fn best_fit<'a>(
    requests: &Requests,
    candidates: impl IntoIterator<Item = (&'a str, &'a Requests, Option<&'a Requests>)>,
) -> Option<&'a str> {
    let mut best: Option<((f64, f64), &str)> = None;
    for (name, allocatable, used) in candidates {
        let mut fits = true;
        let mut free_cpu_fraction = 1.0;
        let mut free_pods_fraction = 1.0;
        for (res, want) in requests {
            let have = allocatable.get(res).copied().unwrap_or_default();
            let taken = used.and_then(|u| u.get(res)).copied().unwrap_or_default();
            let zero = Quantity::default();
            if *want > zero && taken + *want > have {
                fits = false;
                break;
            }
            if res == "cpu" && have > zero {
                // Only compared between nodes; exact inputs make equal shares compare equal.
                free_cpu_fraction =
                    (have - taken - *want).nano_value() as f64 / have.nano_value() as f64;
            }
            if res == "pods" && have > zero {
                free_pods_fraction =
                    (have - taken - *want).nano_value() as f64 / have.nano_value() as f64;
            }
        }
        let score = (free_cpu_fraction, free_pods_fraction);
        if fits && best.is_none_or(|(best_score, _)| score > best_score) {
            best = Some((score, name));
        }
    }
    best.map(|(_, name)| name)
}

/// A host port a container asks for: (host IP, protocol, port).
pub type HostPort = (String, String, i64);

/// The host ports of a pod's containers and init containers (host IP `0.0.0.0` and
/// protocol `TCP` when unset, as the NodePorts filter reads them).
pub fn host_ports(pod: &Value) -> Vec<HostPort> {
    let mut ports = Vec::new();
    for list in ["containers", "initContainers"] {
        let containers = at(pod, &["spec", list]).and_then(Value::as_array);
        for container in containers.into_iter().flatten() {
            let container_ports = container.get("ports").and_then(Value::as_array);
            for port in container_ports.into_iter().flatten() {
                let Some(host_port) = port.get("hostPort").and_then(Value::as_i64) else {
                    continue;
                };
                if host_port <= 0 {
                    continue;
                }
                let ip = port.get("hostIP").and_then(Value::as_str).unwrap_or("");
                let protocol = port
                    .get("protocol")
                    .and_then(Value::as_str)
                    .unwrap_or("TCP");
                let ip = if ip.is_empty() { "0.0.0.0" } else { ip };
                ports.push((ip.to_string(), protocol.to_string(), host_port));
            }
        }
    }
    ports
}

/// Whether two host ports clash: same port and protocol, and the same host IP or either
/// on every address (`0.0.0.0`), as kube-scheduler's NodePorts filter decides.
pub fn ports_conflict(a: &HostPort, b: &HostPort) -> bool {
    a.2 == b.2 && a.1 == b.1 && (a.0 == b.0 || a.0 == "0.0.0.0" || b.0 == "0.0.0.0")
}

/// Host ports taken on each node by its bound, unfinished pods.
fn host_ports_by_node(state: &ClusterState) -> HashMap<String, Vec<HostPort>> {
    let pods_gr = GroupResource::new("", "pods");
    let listed = state.store.list(&pods_gr, None, None, 0, &|_| true);
    let mut taken: HashMap<String, Vec<HostPort>> = HashMap::new();
    for pod in &listed.items {
        if let Some(node) = counted_node(&pod.value) {
            let ports = host_ports(&pod.value);
            if !ports.is_empty() {
                taken.entry(node.to_string()).or_default().extend(ports);
            }
        }
    }
    taken
}

pub(super) fn is_pending(pod: &Value) -> bool {
    at(pod, &["spec", "nodeName"])
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
        && at(pod, &["metadata", "deletionTimestamp"]).is_none()
        && at(pod, &["spec", "schedulerName"])
            .and_then(Value::as_str)
            .unwrap_or("default-scheduler")
            == "default-scheduler"
        && matches!(
            at(pod, &["status", "phase"]).and_then(Value::as_str),
            None | Some("Pending")
        )
}

/// Binds what fits; returns the pods still pending.
pub(super) fn schedule(
    state: &ClusterState,
    pending: Vec<(String, String)>,
    nodes: &[NodeView],
    usage: &mut NodeUsage,
) -> Vec<(String, String)> {
    let pods_gr = GroupResource::new("", "pods");
    if nodes.is_empty() {
        return pending;
    }
    let mut still = Vec::new();
    for (ns, name) in pending {
        let Some(pod) = state.store.get(&pods_gr, &ns, &name) else {
            continue;
        };
        if !is_pending(&pod.value) {
            continue;
        }
        let requests = pod_requests(&pod.value);
        let pinned = pinned_node_names(&pod.value);
        let wanted_ports = host_ports(&pod.value);
        let taken_ports = match wanted_ports.is_empty() {
            true => HashMap::new(),
            false => host_ports_by_node(state),
        };
        let candidates = nodes
            .iter()
            .filter(|n| pinned.as_ref().is_none_or(|p| p.contains(n.name.as_str())))
            .filter(|n| node_accepts(&n.node.value, &pod.value))
            .filter(|n| {
                let taken = taken_ports.get(n.name.as_str());
                wanted_ports
                    .iter()
                    .all(|w| taken.is_none_or(|t| !t.iter().any(|u| ports_conflict(w, u))))
            })
            .map(|n| (n.name.as_str(), &n.allocatable, usage.used(&n.name)));
        match best_fit(&requests, candidates).map(str::to_string) {
            Some(node) => {
                let ctx = WriteContext::system("kube-scheduler");
                if crate::apiserver::subresources::bind_pod(state, &ns, &name, &node, &ctx).is_ok()
                {
                    usage.bound((ns, name), node, requests);
                }
            }
            None => still.push((ns, name)),
        }
    }
    still
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A quantity written in a test.
    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn affinity_on_node_names_narrows_the_candidates() {
        let pod = |terms: Value| {
            json!({"spec": {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}})
        };
        let name_in = |names: &[&str]| json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": names}]});
        let set = |names: &[&'static str]| Some(names.iter().copied().collect::<HashSet<_>>());
        let label_term =
            json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]});
        let not_in = json!({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]});
        let cases = [
            ("no affinity", json!({"spec": {}}), None),
            ("one name", pod(json!([name_in(&["n1"])])), set(&["n1"])),
            (
                "terms are ORed",
                pod(json!([name_in(&["n1"]), name_in(&["n2", "n3"])])),
                set(&["n1", "n2", "n3"]),
            ),
            (
                "a term without names",
                pod(json!([name_in(&["n1"]), label_term])),
                None,
            ),
            ("NotIn names nothing", pod(json!([not_in])), None),
            ("no terms", pod(json!([])), None),
        ];
        for (case, pod, want) in cases {
            assert_eq!(pinned_node_names(&pod), want, "{case}");
        }
    }

    #[test]
    fn host_ports_conflict_as_the_node_ports_filter_says() {
        let pod = json!({ "spec": {
            "containers": [{ "ports": [{ "containerPort": 80, "hostPort": 8080 },
                { "containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1" },
                { "containerPort": 9000 }] }],
            "initContainers": [{ "ports": [{ "containerPort": 1, "hostPort": 7000 }] }] } });
        let ports = host_ports(&pod);
        assert_eq!(ports.len(), 3);
        let p = |ip: &str, proto: &str, port| (ip.to_string(), proto.to_string(), port);
        let cases = [
            (p("0.0.0.0", "TCP", 8080), p("10.0.0.2", "TCP", 8080), true),
            (
                p("10.0.0.1", "TCP", 8080),
                p("10.0.0.2", "TCP", 8080),
                false,
            ),
            (p("0.0.0.0", "TCP", 8080), p("0.0.0.0", "UDP", 8080), false),
            (p("0.0.0.0", "TCP", 8080), p("0.0.0.0", "TCP", 8081), false),
        ];
        for (a, b, want) in cases {
            assert_eq!(ports_conflict(&a, &b), want, "{a:?} {b:?}");
        }
    }

    #[test]
    fn quantities_parse() {
        // (quantity, its value in nano-units)
        let cases: [(&str, i128); 6] = [
            ("4", 4_000_000_000),
            ("500m", 500_000_000),
            ("1Gi", 1_073_741_824_000_000_000),
            ("2k", 2_000_000_000_000),
            ("1e3", 1_000_000_000_000),
            (" 100n ", 100),
        ];
        for (text, want) in cases {
            assert_eq!(parse_quantity(text).unwrap().nano_value(), want, "{text}");
        }
        assert!(parse_quantity("abc").is_none());
    }

    #[test]
    fn effective_requests_take_the_largest_init_container() {
        let pod = json!({"spec": {
            "initContainers": [{"resources": {"requests": {"cpu": "2"}}}],
            "containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                           {"resources": {"requests": {"cpu": "500m"}}}],
            "overhead": {"cpu": "100m"}}});
        let r = pod_requests(&pod);
        assert_eq!(r["cpu"], q("2100m"));
        assert_eq!(r["memory"], q("1Gi"));
        assert_eq!(r["pods"], q("1"));
    }

    #[test]
    fn placement_rules() {
        let node = json!({"metadata": {"name": "n1", "labels": {"zone": "a", "gpu": "4"}},
            "spec": {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let tol = json!([{"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoSchedule"}]);
        let cases = [
            (json!({"spec": {}}), false),
            (json!({"spec": {"tolerations": tol}}), true),
            (
                json!({"spec": {"tolerations": [{"operator": "Exists"}]}}),
                true,
            ),
            (
                json!({"spec": {"tolerations": tol, "nodeSelector": {"zone": "b"}}}),
                false,
            ),
            (
                json!({"spec": {"tolerations": tol, "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}}}),
                true,
            ),
            (
                json!({"spec": {"tolerations": tol, "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["8"]}]}]}}}}}),
                false,
            ),
        ];
        for (pod, want) in cases {
            assert_eq!(node_accepts(&node, &pod), want, "{pod}");
        }
    }

    fn bound_pod(node: &str, cpu: &str, phase: &str) -> Value {
        json!({"spec": {"nodeName": node,
            "containers": [{"resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": phase}})
    }

    #[test]
    fn node_usage_follows_pod_changes() {
        let key = |n: &str| ("ns".to_string(), n.to_string());
        let pending = json!({"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}});
        // (case, pod, its new state, expected cpu and pods on n1, on n2)
        #[allow(clippy::type_complexity)]
        let steps: Vec<(&str, &str, Option<Value>, (&str, &str), (&str, &str))> = vec![
            (
                "pending pods do not count",
                "a",
                Some(pending.clone()),
                ("0", "0"),
                ("0", "0"),
            ),
            (
                "bound",
                "a",
                Some(bound_pod("n1", "1", "Pending")),
                ("1", "1"),
                ("0", "0"),
            ),
            (
                "second pod",
                "b",
                Some(bound_pod("n1", "500m", "Running")),
                ("1.5", "2"),
                ("0", "0"),
            ),
            (
                "status change",
                "a",
                Some(bound_pod("n1", "1", "Running")),
                ("1.5", "2"),
                ("0", "0"),
            ),
            (
                "moved",
                "b",
                Some(bound_pod("n2", "500m", "Running")),
                ("1", "1"),
                ("0.5", "1"),
            ),
            (
                "finished",
                "a",
                Some(bound_pod("n1", "1", "Succeeded")),
                ("0", "0"),
                ("0.5", "1"),
            ),
            ("deleted", "b", None, ("0", "0"), ("0", "0")),
            ("unknown pod deleted", "c", None, ("0", "0"), ("0", "0")),
        ];
        let mut usage = NodeUsage::default();
        let on = |usage: &NodeUsage, node: &str| {
            usage.used(node).map_or((q("0"), q("0")), |u| {
                (
                    u.get("cpu").copied().unwrap_or_default(),
                    u.get("pods").copied().unwrap_or_default(),
                )
            })
        };
        for (case, name, pod, n1, n2) in steps {
            usage.observe(&key(name), pod.as_ref());
            let (got1, got2) = (on(&usage, "n1"), on(&usage, "n2"));
            for (got, want) in [(got1, n1), (got2, n2)] {
                assert_eq!(got, (q(want.0), q(want.1)), "{case}");
            }
        }
        usage.bound(
            key("d"),
            "n2".into(),
            pod_requests(&bound_pod("n2", "2", "")),
        );
        usage.observe(&key("d"), Some(&bound_pod("n2", "2", "Pending")));
        assert_eq!(
            on(&usage, "n2"),
            (q("2"), q("1")),
            "a bound pod read back counts once"
        );
    }

    #[test]
    fn best_fit_picks_the_most_free_cpu() {
        let reqs = |cpu: &str| -> Requests {
            [("cpu".to_string(), q(cpu)), ("pods".to_string(), q("1"))].into()
        };
        let alloc = |cpu: &str, pods: &str| -> Requests {
            [("cpu".to_string(), q(cpu)), ("pods".to_string(), q(pods))].into()
        };
        let (a4, a8, a8_full) = (alloc("4", "10"), alloc("8", "10"), alloc("8", "1"));
        let used_half = reqs("4");
        let no_cpu: Requests = [("pods".to_string(), q("1"))].into();
        let one_pod = no_cpu.clone();
        // (case, request, candidates, expected)
        #[allow(clippy::type_complexity)]
        let cases: Vec<(
            &str,
            Requests,
            Vec<(&str, &Requests, Option<&Requests>)>,
            Option<&str>,
        )> = vec![
            ("no candidates", reqs("1"), vec![], None),
            (
                "larger share free wins",
                reqs("1"),
                vec![("a", &a4, None), ("b", &a8, None)],
                Some("b"),
            ),
            (
                "usage counts",
                reqs("1"),
                vec![("a", &a4, None), ("b", &a8, Some(&used_half))],
                Some("a"),
            ),
            (
                "too big",
                reqs("9"),
                vec![("a", &a4, None), ("b", &a8, None)],
                None,
            ),
            (
                "pods limit",
                reqs("1"),
                vec![("a", &a8_full, Some(&used_half))],
                None,
            ),
            (
                "ties keep the first",
                reqs("1"),
                vec![("a", &a8, None), ("b", &a8, None)],
                Some("a"),
            ),
            (
                "equal cpu: fewer pods wins",
                no_cpu.clone(),
                vec![("a", &a8, Some(&one_pod)), ("b", &a8, None)],
                Some("b"),
            ),
        ];
        for (case, want_reqs, candidates, want) in cases {
            assert_eq!(best_fit(&want_reqs, candidates), want, "{case}");
        }
    }
}
