//! The simulated node side of a sandbox cluster: a scheduler that binds pending pods to nodes
//! that fit them, a kubelet that "runs" pods on simulated nodes (status, IPs, logs, graceful
//! termination, node Leases), and the node lifecycle rule that turns a node Ready=Unknown when
//! its Lease stops being renewed.
//!
//! The loop follows the store's change history like a watch, so each change is looked at once.

use crate::api::{DeleteOptions, WriteContext};
use crate::error::ApiError;
use crate::resources::GroupResource;
use crate::state::ClusterState;
use crate::store::EventType;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The kubelet port a node advertises when its endpoint is not known (kubelet's default).
pub const DEFAULT_KUBELET_PORT: u16 = 10250;

/// A node that the sandbox's kubelet runs.
#[derive(Clone, Debug, Default)]
pub struct SimNode {
    /// Node name.
    pub name: String,
    /// Labels (hostname, os and arch labels are added).
    pub labels: BTreeMap<String, String>,
    /// Taints as `(key, value, effect)`.
    pub taints: Vec<(String, String, String)>,
    /// Capacity (= allocatable), e.g. `cpu: "4"`, `memory: "8Gi"`, `pods: "110"`.
    pub capacity: BTreeMap<String, String>,
}

impl SimNode {
    /// A node with the given name, cpu and memory, and room for 110 pods.
    pub fn new(name: &str, cpu: &str, memory: &str) -> SimNode {
        let mut capacity = BTreeMap::new();
        capacity.insert("cpu".to_string(), cpu.to_string());
        capacity.insert("memory".to_string(), memory.to_string());
        capacity.insert("pods".to_string(), "110".to_string());
        SimNode {
            name: name.to_string(),
            capacity,
            ..Default::default()
        }
    }

    /// Adds a label.
    pub fn label(mut self, key: &str, value: &str) -> SimNode {
        self.labels.insert(key.to_string(), value.to_string());
        self
    }

    /// Adds a taint.
    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> SimNode {
        self.taints
            .push((key.to_string(), value.to_string(), effect.to_string()));
        self
    }

    /// Sets one capacity entry.
    pub fn capacity(mut self, resource: &str, quantity: &str) -> SimNode {
        self.capacity
            .insert(resource.to_string(), quantity.to_string());
        self
    }
}

#[derive(Clone, Debug)]
struct LogLine {
    at: jiff::Timestamp,
    text: String,
}

/// What the simulated kubelet keeps: which nodes it runs and what containers printed.
#[derive(Default)]
pub struct KubeletState {
    nodes: Mutex<HashMap<String, usize>>,
    stopped: Mutex<HashSet<String>>,
    logs: Mutex<HashMap<(String, String, String), Vec<LogLine>>>,
    next_ip: Mutex<u32>,
    endpoint: Mutex<Option<SocketAddr>>,
}

impl KubeletState {
    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether this cluster's kubelet runs the node (and has not been stopped).
    pub fn runs(&self, node: &str) -> bool {
        Self::lock(&self.nodes).contains_key(node) && !Self::lock(&self.stopped).contains(node)
    }

    /// Whether the node is one of this cluster's simulated nodes (running or stopped).
    pub fn is_sim_node(&self, node: &str) -> bool {
        Self::lock(&self.nodes).contains_key(node)
    }

    /// Whether the simulated node's kubelet has been stopped.
    pub fn is_stopped(&self, node: &str) -> bool {
        Self::lock(&self.stopped).contains(node)
    }

    /// Where the simulated kubelet API listens, while the cluster is served.
    pub fn endpoint(&self) -> Option<SocketAddr> {
        *Self::lock(&self.endpoint)
    }

    fn node_index(&self, node: &str) -> usize {
        Self::lock(&self.nodes).get(node).copied().unwrap_or(0)
    }

    /// Appends a line to a container's log.
    pub fn append_log(&self, namespace: &str, pod: &str, container: &str, text: &str) {
        Self::lock(&self.logs)
            .entry((namespace.into(), pod.into(), container.into()))
            .or_default()
            .push(LogLine {
                at: jiff::Timestamp::now(),
                text: text.to_string(),
            });
    }

    /// What a container printed so far, one entry per line; `None` before it started.
    pub fn printed(&self, namespace: &str, pod: &str, container: &str) -> Option<Vec<String>> {
        self.log_lines(namespace, pod, container)
            .map(|lines| lines.into_iter().map(|l| l.text).collect())
    }

    fn log_lines(&self, namespace: &str, pod: &str, container: &str) -> Option<Vec<LogLine>> {
        Self::lock(&self.logs)
            .get(&(namespace.into(), pod.into(), container.into()))
            .cloned()
    }

    fn forget_pod(&self, namespace: &str, pod: &str) {
        Self::lock(&self.logs).retain(|(ns, p, _), _| !(ns == namespace && p == pod));
    }

    fn allocate_ip(&self) -> String {
        let mut next = Self::lock(&self.next_ip);
        *next += 1;
        let n = *next;
        format!("10.244.{}.{}", (n / 250) % 256, n % 250 + 2)
    }
}

impl ClusterState {
    /// Creates a simulated node that this cluster's kubelet runs.
    pub fn add_sim_node(&self, node: &SimNode) -> Result<(), ApiError> {
        let index = {
            let mut nodes = KubeletState::lock(&self.kubelet.nodes);
            let index = nodes.len() + 1;
            nodes.insert(node.name.clone(), index);
            index
        };
        KubeletState::lock(&self.kubelet.stopped).remove(&node.name);
        let (internal_ip, kubelet_port) = match self.kubelet.endpoint() {
            Some(addr) => (addr.ip().to_string(), addr.port()),
            None => (
                format!("10.0.{}.{}", index / 250, index % 250 + 1),
                DEFAULT_KUBELET_PORT,
            ),
        };
        let mut labels: BTreeMap<String, String> = BTreeMap::new();
        labels.insert("kubernetes.io/hostname".into(), node.name.clone());
        labels.insert("kubernetes.io/os".into(), "linux".into());
        labels.insert("kubernetes.io/arch".into(), "amd64".into());
        labels.extend(node.labels.clone());
        let taints: Vec<Value> = node
            .taints
            .iter()
            .map(|(k, v, e)| json!({"key": k, "value": v, "effect": e}))
            .collect();
        let now = crate::meta::now_rfc3339();
        let body = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node.name, "labels": labels},
            "spec": {"taints": taints, "podCIDR": format!("10.244.{index}.0/24")},
            "status": {
                "capacity": node.capacity,
                "allocatable": node.capacity,
                "conditions": ready_conditions(&now, "True"),
                "addresses": [
                    {"type": "InternalIP", "address": internal_ip},
                    {"type": "Hostname", "address": node.name},
                ],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
                "nodeInfo": {
                    "machineID": crate::meta::new_uid(), "systemUUID": crate::meta::new_uid(),
                    "bootID": crate::meta::new_uid(), "kernelVersion": "6.1.0-sandbox",
                    "osImage": "kube-sandbox", "containerRuntimeVersion": "sandbox://1.0",
                    "kubeletVersion": self.options.git_version, "kubeProxyVersion": self.options.git_version,
                    "operatingSystem": "linux", "architecture": "amd64"
                }
            }
        });
        let rt = self
            .resource_type("", "nodes")
            .ok_or_else(|| ApiError::internal("nodes are not served"))?;
        match self.create(&rt, "v1", "", body, &WriteContext::system("kubelet")) {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
        self.renew_node_lease(&node.name);
        Ok(())
    }

    /// Records where the simulated kubelet API listens (`None` when it stopped) and makes every
    /// simulated node advertise it as its InternalIP and kubelet port.
    pub fn set_kubelet_endpoint(&self, endpoint: Option<SocketAddr>) {
        *KubeletState::lock(&self.kubelet.endpoint) = endpoint;
        let Some(addr) = endpoint else { return };
        let Some(rt) = self.resource_type("", "nodes") else {
            return;
        };
        let names: Vec<String> = KubeletState::lock(&self.kubelet.nodes)
            .keys()
            .cloned()
            .collect();
        let ctx = WriteContext::system("kubelet");
        for name in names {
            let _ = self.update_with(&rt, "v1", "", &name, Some("status"), &ctx, None, |old| {
                let mut new = old.clone();
                new["status"]["addresses"] = json!([
                    {"type": "InternalIP", "address": addr.ip().to_string()},
                    {"type": "Hostname", "address": name},
                ]);
                new["status"]["daemonEndpoints"] =
                    json!({"kubeletEndpoint": {"Port": addr.port()}});
                Ok(new)
            });
        }
    }

    /// Stops the kubelet of a simulated node: no more Lease renewals or pod updates, as when a
    /// machine dies.
    pub fn stop_sim_node(&self, name: &str) {
        KubeletState::lock(&self.kubelet.stopped).insert(name.to_string());
    }

    /// Restarts the kubelet of a stopped simulated node.
    pub fn start_sim_node(&self, name: &str) {
        KubeletState::lock(&self.kubelet.stopped).remove(name);
        self.renew_node_lease(name);
        self.set_node_ready(
            name,
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        );
    }

    fn renew_node_lease(&self, node: &str) {
        let Some(rt) = self.resource_type("coordination.k8s.io", "leases") else {
            return;
        };
        let now = crate::meta::now_micro();
        let ctx = WriteContext::system("kubelet");
        let updated = self.update_with(
            &rt,
            "v1",
            "kube-node-lease",
            node,
            None,
            &ctx,
            None,
            |old| {
                let mut new = old.clone();
                new["spec"]["renewTime"] = json!(now);
                Ok(new)
            },
        );
        if matches!(&updated, Err(e) if e.code == 404) {
            let body = json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": node, "namespace": "kube-node-lease"},
                "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": now}
            });
            let _ = self.create(&rt, "v1", "kube-node-lease", body, &ctx);
        }
    }

    fn set_node_ready(&self, node: &str, status: &str, reason: &str, message: &str) {
        let Some(rt) = self.resource_type("", "nodes") else {
            return;
        };
        let now = crate::meta::now_rfc3339();
        let ctx = WriteContext::system("node-controller");
        let _ = self.update_with(&rt, "v1", "", node, Some("status"), &ctx, None, |old| {
            let mut new = old.clone();
            if let Some(conds) = new
                .pointer_mut("/status/conditions")
                .and_then(Value::as_array_mut)
            {
                for c in conds.iter_mut() {
                    if c["type"] == "Ready" {
                        if c["status"] != status {
                            c["lastTransitionTime"] = json!(now);
                        }
                        c["status"] = json!(status);
                        c["reason"] = json!(reason);
                        c["message"] = json!(message);
                        c["lastHeartbeatTime"] = json!(now);
                    }
                }
            }
            Ok(new)
        });
        // The unreachable taints follow the Ready condition, as node lifecycle keeps them.
        let _ = self.update_with(&rt, "v1", "", node, None, &ctx, None, |old| {
            let mut new = old.clone();
            let spec = new
                .as_object_mut()
                .map(|m| m.entry("spec").or_insert_with(|| json!({})));
            if let Some(Value::Object(spec)) = spec {
                let taints = spec.entry("taints").or_insert_with(|| json!([]));
                if let Value::Array(taints) = taints {
                    taints.retain(|t| t["key"] != "node.kubernetes.io/unreachable");
                    if status == "Unknown" {
                        for effect in ["NoSchedule", "NoExecute"] {
                            taints.push(json!({"key": "node.kubernetes.io/unreachable", "effect": effect, "timeAdded": now}));
                        }
                    }
                }
            }
            Ok(new)
        });
    }
}

fn ready_conditions(now: &str, ready: &str) -> Value {
    let mut conds: Vec<Value> = ["MemoryPressure", "DiskPressure", "PIDPressure"]
        .iter()
        .map(|t| json!({"type": t, "status": "False", "reason": format!("KubeletHas{}", match *t {
            "MemoryPressure" => "SufficientMemory", "DiskPressure" => "NoDiskPressure", _ => "SufficientPID" }),
            "lastHeartbeatTime": now, "lastTransitionTime": now}))
        .collect();
    conds.push(json!({"type": "Ready", "status": ready, "reason": "KubeletReady",
        "message": "kubelet is posting ready status", "lastHeartbeatTime": now, "lastTransitionTime": now}));
    Value::Array(conds)
}

/// The value at `path`, without the allocations of `Value::pointer` (which unescapes
/// every segment): the scheduler reads pods and nodes this way for every pending pod.
fn at<'v>(value: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// Parses a Kubernetes quantity into a number of base units (cores, bytes, count).
pub fn parse_quantity(q: &str) -> Option<f64> {
    let q = q.trim();
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(q.len());
    let (num, suffix) = q.split_at(split);
    let n: f64 = num.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        s if s.starts_with('e') || s.starts_with('E') => 10f64.powi(s[1..].parse().ok()?),
        _ => return None,
    };
    Some(n * factor)
}

/// The pod's effective requests: max(largest init container, sum of containers) plus overhead,
/// and one `pods`.
pub fn pod_requests(pod: &Value) -> HashMap<String, f64> {
    let mut sum: HashMap<String, f64> = HashMap::new();
    let requests = |c: &Value| -> HashMap<String, f64> {
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
            *e = e.max(v);
        }
    }
    if let Some(overhead) = at(pod, &["spec", "overhead"]).and_then(Value::as_object) {
        for (k, v) in overhead {
            if let Some(q) = v.as_str().and_then(parse_quantity) {
                *sum.entry(k.clone()).or_default() += q;
            }
        }
    }
    *sum.entry("pods".into()).or_default() += 1.0;
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
pub type Requests = HashMap<String, f64>;

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
            *sum.entry(resource.clone()).or_default() += quantity;
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
                *total -= quantity;
            }
        }
        // Every pod counts one `pods`; none left means no rounding residue is kept either.
        if sum.get("pods").is_none_or(|pods| *pods < 0.5) {
            self.nodes.remove(&node);
        }
    }
}

/// A node as the scheduler reads it: re-read only when some node changed.
struct NodeView {
    node: Arc<crate::store::Stored>,
    name: String,
    allocatable: Requests,
}

impl NodeView {
    fn new(node: Arc<crate::store::Stored>) -> NodeView {
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
/// among `candidates` (name, allocatable, used) where it fits; ties keep the first.
fn best_fit<'a>(
    requests: &Requests,
    candidates: impl IntoIterator<Item = (&'a str, &'a Requests, Option<&'a Requests>)>,
) -> Option<&'a str> {
    let mut best: Option<(f64, &str)> = None;
    for (name, allocatable, used) in candidates {
        let mut fits = true;
        let mut free_cpu_fraction = 1.0;
        for (res, want) in requests {
            let have = allocatable.get(res).copied().unwrap_or(0.0);
            let taken = used.and_then(|u| u.get(res)).copied().unwrap_or(0.0);
            if *want > 0.0 && taken + want > have + 1e-9 {
                fits = false;
                break;
            }
            if res == "cpu" && have > 0.0 {
                free_cpu_fraction = (have - taken - want) / have;
            }
        }
        if fits && best.is_none_or(|(score, _)| free_cpu_fraction > score) {
            best = Some((free_cpu_fraction, name));
        }
    }
    best.map(|(_, name)| name)
}

enum Timer {
    StartPod(String, String),
    RemovePod(String, String),
}

/// Runs the scheduler, kubelet and node lifecycle of a cluster until it shuts down.
pub async fn run(state: Arc<ClusterState>) {
    let pods_gr = GroupResource::new("", "pods");
    let nodes_gr = GroupResource::new("", "nodes");
    // Only pod and node changes concern this loop; the rest of the cluster's writes (leases,
    // events, ...) need not wake it.
    let mut pod_changes = state.store.subscribe_resource(&pods_gr);
    let mut node_changes = state.store.subscribe_resource(&nodes_gr);
    let mut cursor = 0u64;
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut waiting: Vec<(String, String)> = Vec::new();
    let mut retry_all = false;
    let mut timers: BinaryHeap<Reverse<(Instant, u64)>> = BinaryHeap::new();
    let mut timer_actions: HashMap<u64, Timer> = HashMap::new();
    let mut seq = 0u64;
    let mut scheduled_removal: HashSet<(String, String)> = HashSet::new();
    let mut starting: HashSet<(String, String)> = HashSet::new();
    let mut last_lease = Instant::now();
    let mut last_lifecycle = Instant::now();
    let mut last_retry = Instant::now();
    let mut usage = NodeUsage::default();
    let mut nodes: Option<Vec<NodeView>> = None;
    loop {
        // Follow pod and node changes since the cursor.
        let oldest = state.store.oldest_watchable();
        if cursor < oldest {
            // Fell behind the history: start over from the current state.
            cursor = state.store.current_rv();
            let pods = state.store.list(&pods_gr, None, None, 0, &|_| true).items;
            usage = NodeUsage::default();
            for pod in &pods {
                usage.observe(&key_of(&pod.value), Some(&pod.value));
            }
            pending = pods
                .iter()
                .filter(|p| is_pending(&p.value))
                .map(|p| key_of(&p.value))
                .collect();
            nodes = None;
            retry_all = true;
        }
        let mut nodes_changed = false;
        // Read up to a version taken first, so that changes written while this pass reads
        // are picked up by the next pass instead of being skipped.
        let upto = state.store.current_rv();
        for gr in [&pods_gr, &nodes_gr] {
            if let Ok((events, _)) = state.store.events_after(cursor, gr, usize::MAX) {
                for event in events.into_iter().filter(|e| e.rv <= upto) {
                    if *gr == nodes_gr {
                        nodes_changed = true;
                        continue;
                    }
                    let pod = &event.object.value;
                    let key = key_of(pod);
                    match event.kind {
                        EventType::Deleted => {
                            usage.observe(&key, None);
                            state.kubelet.forget_pod(&key.0, &key.1);
                            scheduled_removal.remove(&key);
                            starting.remove(&key);
                        }
                        _ => {
                            usage.observe(&key, Some(pod));
                            if is_pending(pod) && state.options.scheduler {
                                pending.push(key.clone());
                            }
                            let node = at(pod, &["spec", "nodeName"])
                                .and_then(Value::as_str)
                                .unwrap_or("");
                            if !node.is_empty() && state.options.kubelet && state.kubelet.runs(node)
                            {
                                let phase = at(pod, &["status", "phase"])
                                    .and_then(Value::as_str)
                                    .unwrap_or("");
                                let deleting =
                                    at(pod, &["metadata", "deletionTimestamp"]).is_some();
                                let started = at(pod, &["status", "startTime"]).is_some();
                                if deleting {
                                    if scheduled_removal.insert(key.clone()) {
                                        let grace =
                                            at(pod, &["metadata", "deletionGracePeriodSeconds"])
                                                .and_then(Value::as_u64)
                                                .unwrap_or(0);
                                        let delay = Duration::from_secs(grace)
                                            .min(state.options.max_termination_delay);
                                        seq += 1;
                                        timers.push(Reverse((Instant::now() + delay, seq)));
                                        timer_actions.insert(
                                            seq,
                                            Timer::RemovePod(key.0.clone(), key.1.clone()),
                                        );
                                    }
                                } else if phase == "Pending"
                                    && !started
                                    && starting.insert(key.clone())
                                {
                                    seq += 1;
                                    timers.push(Reverse((
                                        Instant::now() + state.options.pod_start_delay,
                                        seq,
                                    )));
                                    timer_actions
                                        .insert(seq, Timer::StartPod(key.0.clone(), key.1.clone()));
                                }
                            }
                        }
                    }
                }
            }
        }
        cursor = upto.max(cursor);
        if nodes_changed {
            nodes = None;
        }
        if nodes_changed || last_retry.elapsed() >= Duration::from_secs(1) {
            retry_all = true;
        }

        if state.options.scheduler {
            // New pods get one try at once; those that found no node are retried when nodes
            // change, or every second.
            let mut batch = std::mem::take(&mut pending);
            if retry_all {
                batch.append(&mut waiting);
                batch.sort();
                batch.dedup();
                last_retry = Instant::now();
                retry_all = false;
            }
            if !batch.is_empty() {
                let nodes = nodes.get_or_insert_with(|| {
                    let nodes_gr = GroupResource::new("", "nodes");
                    let listed = state.store.list(&nodes_gr, None, None, 0, &|_| true);
                    listed.items.into_iter().map(NodeView::new).collect()
                });
                waiting.extend(schedule(&state, batch, nodes, &mut usage));
            }
        }

        // Due timers.
        let now = Instant::now();
        while let Some(Reverse((at, id))) = timers.peek().copied() {
            if at > now {
                break;
            }
            timers.pop();
            match timer_actions.remove(&id) {
                Some(Timer::StartPod(ns, name)) => {
                    start_pod(&state, &ns, &name);
                    starting.remove(&(ns, name));
                }
                Some(Timer::RemovePod(ns, name)) => {
                    if let Some(rt) = state.resource_type("", "pods") {
                        let opts = DeleteOptions {
                            grace_period_seconds: Some(0),
                            ..Default::default()
                        };
                        let _ = state.delete(&rt, &ns, &name, &opts);
                    }
                }
                None => {}
            }
        }

        if last_lease.elapsed() >= state.options.node_lease_renew {
            last_lease = Instant::now();
            let nodes: Vec<String> = KubeletState::lock(&state.kubelet.nodes)
                .keys()
                .cloned()
                .collect();
            for node in nodes {
                if state.kubelet.runs(&node) {
                    state.renew_node_lease(&node);
                }
            }
        }
        if last_lifecycle.elapsed() >= Duration::from_secs(1) {
            last_lifecycle = Instant::now();
            node_lifecycle_pass(&state);
        }

        let next_timer = timers.peek().map(|Reverse((at, _))| *at);
        let tick = Instant::now() + Duration::from_millis(500);
        let wake = next_timer.map(|t| t.min(tick)).unwrap_or(tick);
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = pod_changes.changed() => {}
            _ = node_changes.changed() => {}
            _ = tokio::time::sleep_until(wake) => {}
        }
    }
}

fn key_of(obj: &Value) -> (String, String) {
    (
        at(obj, &["metadata", "namespace"])
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        at(obj, &["metadata", "name"])
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    )
}

fn is_pending(pod: &Value) -> bool {
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
fn schedule(
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
        let candidates = nodes
            .iter()
            .filter(|n| pinned.as_ref().is_none_or(|p| p.contains(n.name.as_str())))
            .filter(|n| node_accepts(&n.node.value, &pod.value))
            .map(|n| (n.name.as_str(), &n.allocatable, usage.used(&n.name)));
        match best_fit(&requests, candidates).map(str::to_string) {
            Some(node) => {
                let ctx = WriteContext::system("default-scheduler");
                if crate::subresources::bind_pod(state, &ns, &name, &node, &ctx).is_ok() {
                    usage.bound((ns, name), node, requests);
                }
            }
            None => still.push((ns, name)),
        }
    }
    still
}

fn start_pod(state: &ClusterState, namespace: &str, name: &str) {
    let Some(rt) = state.resource_type("", "pods") else {
        return;
    };
    let pods_gr = rt.group_resource();
    let Some(pod) = state.store.get(&pods_gr, namespace, name) else {
        return;
    };
    let node = at(&pod.value, &["spec", "nodeName"])
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !state.kubelet.runs(&node) || at(&pod.value, &["metadata", "deletionTimestamp"]).is_some() {
        return;
    }
    let host_ip = state
        .store
        .get(&GroupResource::new("", "nodes"), "", &node)
        .and_then(|n| {
            at(&n.value, &["status", "addresses"])
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find(|x| x["type"] == "InternalIP"))
                .and_then(|x| x["address"].as_str().map(str::to_string))
        })
        .unwrap_or_else(|| format!("10.0.0.{}", state.kubelet.node_index(&node)));
    let pod_ip = if at(&pod.value, &["spec", "hostNetwork"]).and_then(Value::as_bool) == Some(true)
    {
        host_ip.clone()
    } else {
        state.kubelet.allocate_ip()
    };
    let now = crate::meta::now_rfc3339();
    let containers: Vec<Value> = at(&pod.value, &["spec", "containers"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
            let image = c.get("image").and_then(Value::as_str).unwrap_or("");
            json!({
                "name": cname, "ready": true, "started": true, "restartCount": 0,
                "image": image, "imageID": format!("sandbox://{image}"),
                "containerID": format!("sandbox://{}-{cname}", pod.uid()),
                "state": {"running": {"startedAt": now}}
            })
        })
        .collect();
    for c in &containers {
        let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        state.kubelet.append_log(
            namespace,
            name,
            cname,
            &format!("container {cname} started from image {image} on node {node}"),
        );
        for line in printed_lines(c) {
            state.kubelet.append_log(namespace, name, cname, &line);
        }
    }
    let ctx = WriteContext::system("kubelet");
    let _ = state.update_with(&rt, "v1", namespace, name, Some("status"), &ctx, None, |old| {
        let mut new = old.clone();
        let qos = at(old, &["status", "qosClass"]).cloned().unwrap_or(json!("BestEffort"));
        let cond = |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
        new["status"] = json!({
            "phase": "Running",
            "conditions": [cond("PodReadyToStartContainers"), cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")],
            "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
            "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
            "startTime": now,
            "containerStatuses": statuses,
            "qosClass": qos,
        });
        Ok(new)
    });
}

/// What a simulated container prints: the words after `echo` in its command and args.
fn printed_lines(container: &Value) -> Vec<String> {
    let words: Vec<String> = ["command", "args"]
        .iter()
        .filter_map(|k| container.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let joined = words.join(" ");
    joined
        .split(['\n', ';'])
        .filter_map(|part| {
            let part = part.trim();
            let at = part.find("echo ")?;
            Some(part[at + 5..].trim().trim_matches(['"', '\'']).to_string())
        })
        .collect()
}

/// Node lifecycle: a node whose Lease and Ready heartbeat are older than the grace period
/// turns Ready=Unknown; a fresh Lease on a node we marked Unknown makes it Ready again.
fn node_lifecycle_pass(state: &ClusterState) {
    let nodes = state
        .store
        .list(&GroupResource::new("", "nodes"), None, None, 0, &|_| true)
        .items;
    let leases = GroupResource::new("coordination.k8s.io", "leases");
    let now = jiff::Timestamp::now();
    let grace = state.options.node_monitor_grace.as_secs_f64();
    for node in nodes {
        let name = at(&node.value, &["metadata", "name"])
            .and_then(Value::as_str)
            .unwrap_or("");
        let ready = at(&node.value, &["status", "conditions"])
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready"));
        let Some(ready) = ready else { continue };
        let parse = |s: Option<&str>| s.and_then(|s| s.parse::<jiff::Timestamp>().ok());
        let heartbeat = parse(ready.get("lastHeartbeatTime").and_then(Value::as_str));
        let created =
            parse(at(&node.value, &["metadata", "creationTimestamp"]).and_then(Value::as_str));
        let renewed = state
            .store
            .get(&leases, "kube-node-lease", name)
            .and_then(|l| parse(at(&l.value, &["spec", "renewTime"]).and_then(Value::as_str)));
        let last = [heartbeat, renewed, created].into_iter().flatten().max();
        let Some(last) = last else { continue };
        let age = now.duration_since(last).as_secs_f64();
        let status = ready.get("status").and_then(Value::as_str).unwrap_or("");
        if age > grace && status != "Unknown" {
            state.set_node_ready(
                name,
                "Unknown",
                "NodeStatusUnknown",
                "Kubelet stopped posting node status.",
            );
        } else if age <= grace
            && status == "Unknown"
            && renewed.is_some_and(|r| heartbeat.is_none_or(|h| r > h))
            && ready.get("reason").and_then(Value::as_str) == Some("NodeStatusUnknown")
        {
            state.set_node_ready(
                name,
                "True",
                "KubeletReady",
                "kubelet is posting ready status",
            );
        }
    }
}

/// The names of a pod's (regular) containers.
pub fn container_names(pod: &Value) -> Vec<String> {
    at(pod, &["spec", "containers"])
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The container a request addresses: the named one, or the only one, as kube-apiserver
/// picks it for `pods/log`, `pods/exec` and `pods/attach`.
pub fn resolve_container(
    pod: &Value,
    name: &str,
    requested: Option<&str>,
) -> Result<String, ApiError> {
    let containers = container_names(pod);
    match requested.filter(|c| !c.is_empty()) {
        Some(c) if containers.iter().any(|n| n == c) => Ok(c.to_string()),
        Some(c) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None if containers.len() == 1 => Ok(containers[0].clone()),
        None => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {name}, choose one of: [{}]",
            containers.join(" ")
        ))),
    }
}

/// Serves `pods/{name}/log` (and the kubelet's `/containerLogs`) from what simulated containers
/// printed: `container`, `follow`, `tailLines`, `sinceSeconds`, `sinceTime`, `timestamps`,
/// `limitBytes`, `previous`.
pub async fn serve_log(
    state: Arc<ClusterState>,
    namespace: &str,
    name: &str,
    query: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    let pods_gr = GroupResource::new("", "pods");
    let pod = state
        .store
        .get(&pods_gr, namespace, name)
        .ok_or_else(|| ApiError::not_found("", "pods", name))?;
    let container =
        resolve_container(&pod.value, name, query.get("container").map(String::as_str))?;
    if query
        .get("previous")
        .is_some_and(|p| p == "true" || p == "1")
    {
        // Simulated containers never restart, so there is no previous instance.
        return Err(ApiError::bad_request(format!(
            "previous terminated container \"{container}\" in pod \"{name}\" not found"
        )));
    }
    let Some(lines) = state.kubelet.log_lines(namespace, name, &container) else {
        return Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start: ContainerCreating"
        )));
    };
    let num = |k: &str| -> Result<Option<i64>, ApiError> {
        query
            .get(k)
            .map(|v| {
                v.parse::<i64>()
                    .map_err(|_| ApiError::bad_request(format!("invalid {k} {v:?}")))
            })
            .transpose()
    };
    let tail = num("tailLines")?;
    let since = num("sinceSeconds")?;
    let limit_bytes = num("limitBytes")?;
    let timestamps = query.get("timestamps").is_some_and(|t| t == "true");
    let follow = query.get("follow").is_some_and(|f| f == "true");
    let since_time = query
        .get("sinceTime")
        .map(|t| {
            t.parse::<jiff::Timestamp>()
                .map_err(|_| ApiError::bad_request(format!("invalid sinceTime {t:?}")))
        })
        .transpose()?;
    if since.is_some() && since_time.is_some() {
        return Err(ApiError::bad_request(
            "at most one of `sinceTime` or `sinceSeconds` may be specified",
        ));
    }
    let cutoff = since
        .map(|s| jiff::Timestamp::now() - jiff::SignedDuration::from_secs(s))
        .or(since_time);
    let format_line = move |l: &LogLine| {
        if timestamps {
            format!("{} {}\n", l.at.strftime("%Y-%m-%dT%H:%M:%S.%9fZ"), l.text)
        } else {
            format!("{}\n", l.text)
        }
    };
    let mut selected: Vec<&LogLine> = lines
        .iter()
        .filter(|l| cutoff.is_none_or(|c| l.at >= c))
        .collect();
    if let Some(t) = tail {
        let skip = selected.len().saturating_sub(t.max(0) as usize);
        selected.drain(..skip);
    }
    let mut text: String = selected.iter().map(|l| format_line(l)).collect();
    if let Some(limit) = limit_bytes {
        text.truncate(limit.max(0) as usize);
    }
    if !follow {
        let mut response = (StatusCode::OK, text).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        return Ok(response);
    }
    // Follow: send what exists, then new lines as they are printed, until the pod goes.
    let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(16);
    let (ns, pod_name) = (namespace.to_string(), name.to_string());
    let seen = lines.len();
    tokio::spawn(async move {
        if tx.send(bytes::Bytes::from(text)).await.is_err() {
            return;
        }
        let mut seen = seen;
        loop {
            tokio::select! {
                _ = state.shutdown.cancelled() => return,
                _ = tx.closed() => return,
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
            if state.store.get(&pods_gr, &ns, &pod_name).is_none() {
                return;
            }
            let Some(lines) = state.kubelet.log_lines(&ns, &pod_name, &container) else {
                return;
            };
            if lines.len() > seen {
                let chunk: String = lines[seen..].iter().map(&format_line).collect();
                seen = lines.len();
                if tx.send(bytes::Bytes::from(chunk)).await.is_err() {
                    return;
                }
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|c| (Ok::<_, std::convert::Infallible>(c), rx))
    });
    let mut response = Response::new(Body::from_stream(stream));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn quantities_parse() {
        let cases = [
            ("4", 4.0),
            ("500m", 0.5),
            ("1Gi", 1073741824.0),
            ("2k", 2000.0),
            ("1e3", 1000.0),
        ];
        for (q, want) in cases {
            assert!((parse_quantity(q).unwrap() - want).abs() < 1e-9, "{q}");
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
        assert!((r["cpu"] - 2.1).abs() < 1e-9);
        assert_eq!(r["pods"], 1.0);
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
        let steps: Vec<(&str, &str, Option<Value>, (f64, f64), (f64, f64))> = vec![
            (
                "pending pods do not count",
                "a",
                Some(pending.clone()),
                (0.0, 0.0),
                (0.0, 0.0),
            ),
            (
                "bound",
                "a",
                Some(bound_pod("n1", "1", "Pending")),
                (1.0, 1.0),
                (0.0, 0.0),
            ),
            (
                "second pod",
                "b",
                Some(bound_pod("n1", "500m", "Running")),
                (1.5, 2.0),
                (0.0, 0.0),
            ),
            (
                "status change",
                "a",
                Some(bound_pod("n1", "1", "Running")),
                (1.5, 2.0),
                (0.0, 0.0),
            ),
            (
                "moved",
                "b",
                Some(bound_pod("n2", "500m", "Running")),
                (1.0, 1.0),
                (0.5, 1.0),
            ),
            (
                "finished",
                "a",
                Some(bound_pod("n1", "1", "Succeeded")),
                (0.0, 0.0),
                (0.5, 1.0),
            ),
            ("deleted", "b", None, (0.0, 0.0), (0.0, 0.0)),
            ("unknown pod deleted", "c", None, (0.0, 0.0), (0.0, 0.0)),
        ];
        let mut usage = NodeUsage::default();
        let on = |usage: &NodeUsage, node: &str| {
            usage.used(node).map_or((0.0, 0.0), |u| {
                (
                    u.get("cpu").copied().unwrap_or(0.0),
                    u.get("pods").copied().unwrap_or(0.0),
                )
            })
        };
        for (case, name, pod, n1, n2) in steps {
            usage.observe(&key(name), pod.as_ref());
            let (got1, got2) = (on(&usage, "n1"), on(&usage, "n2"));
            for (got, want) in [(got1, n1), (got2, n2)] {
                assert!(
                    (got.0 - want.0).abs() < 1e-9 && got.1 == want.1,
                    "{case}: {got:?} != {want:?}"
                );
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
            (2.0, 1.0),
            "a bound pod read back counts once"
        );
    }

    #[test]
    fn best_fit_picks_the_most_free_cpu() {
        let reqs =
            |cpu: f64| -> Requests { [("cpu".to_string(), cpu), ("pods".to_string(), 1.0)].into() };
        let alloc = |cpu: f64, pods: f64| -> Requests {
            [("cpu".to_string(), cpu), ("pods".to_string(), pods)].into()
        };
        let (a4, a8, a8_full) = (alloc(4.0, 10.0), alloc(8.0, 10.0), alloc(8.0, 1.0));
        let used_half = reqs(4.0);
        // (case, request, candidates, expected)
        #[allow(clippy::type_complexity)]
        let cases: Vec<(
            &str,
            Requests,
            Vec<(&str, &Requests, Option<&Requests>)>,
            Option<&str>,
        )> = vec![
            ("no candidates", reqs(1.0), vec![], None),
            (
                "larger share free wins",
                reqs(1.0),
                vec![("a", &a4, None), ("b", &a8, None)],
                Some("b"),
            ),
            (
                "usage counts",
                reqs(1.0),
                vec![("a", &a4, None), ("b", &a8, Some(&used_half))],
                Some("a"),
            ),
            (
                "too big",
                reqs(9.0),
                vec![("a", &a4, None), ("b", &a8, None)],
                None,
            ),
            (
                "pods limit",
                reqs(1.0),
                vec![("a", &a8_full, Some(&used_half))],
                None,
            ),
            (
                "ties keep the first",
                reqs(1.0),
                vec![("a", &a8, None), ("b", &a8, None)],
                Some("a"),
            ),
        ];
        for (case, want_reqs, candidates, want) in cases {
            assert_eq!(best_fit(&want_reqs, candidates), want, "{case}");
        }
    }

    #[test]
    fn echo_commands_print() {
        let c = json!({"command": ["sh", "-c"], "args": ["echo hello; sleep 3600"]});
        assert_eq!(printed_lines(&c), vec!["hello"]);
    }
}
