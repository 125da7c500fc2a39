//! The model of metrics-server the sandbox's `metrics.k8s.io` serves: what it reads from each
//! node's `/metrics/resource`, how it keeps the last two scrapes and turns them into
//! NodeMetrics and PodMetrics. Pure functions and plain data only; the scrape loop is in
//! `metrics_scraper.rs`, the API in `metrics_api.rs`.
//!
//! - decoding (kubernetes-sigs/metrics-server `pkg/scraper/client/resource/decode.go`,
//!   `decodeBatch`): `node_cpu_usage_seconds_total`, `node_memory_working_set_bytes`,
//!   `container_cpu_usage_seconds_total`, `container_memory_working_set_bytes` and
//!   `container_start_time_seconds` with `namespace`, `pod`, `container` labels; a sample's
//!   timestamp is in milliseconds (the request time when absent); a node point needs a
//!   timestamp and non-zero CPU and memory, and a pod is dropped whole when one of its
//!   containers has zero CPU or memory (`checkContainerMetrics`);
//! - storage (`pkg/storage/node.go`, `pkg/storage/pod.go`): the last point of each node and
//!   container and the one before it (a point replaces the last when it is newer; a
//!   container restarted since the last point starts over; a fresh container's start time
//!   stands in for the previous point, `freshContainerMinMetricsResolution`);
//! - usage (`resourceUsage` in `pkg/storage/types.go`): CPU is the rate of the cumulative
//!   counter between the two points (nanocores), memory the last working set; a counter or
//!   start time that went back is an error and the node or container is skipped;
//! - objects (`pkg/api/node.go`, `pkg/api/pod.go`, `pkg/api/table.go`): `NodeMetrics` and
//!   `PodMetrics` of `metrics.k8s.io/v1beta1` with `timestamp`, `window` (Go's duration text)
//!   and `usage` (`cpu` a DecimalSI quantity of nanocores, `memory` a BinarySI one of bytes,
//!   both canonical), and their server-side Table.

use std::collections::BTreeMap;

use crate::apiserver::table::IncludeObject;
use kube_kit::quantity::{Format, Quantity};
use serde_json::{Value, json};

/// Nanoseconds per millisecond.
const NANOS_PER_MS: i64 = 1_000_000;
/// A container younger than this at its first point gets no start-time predecessor
/// (`freshContainerMinMetricsResolution` of `pkg/storage/pod.go`).
const FRESH_CONTAINER_MIN_NANOS: i64 = 10_000_000_000;

/// One node's or container's reading (`storage.MetricsPoint`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetricsPoint {
    /// When the node or container started (nanoseconds since the epoch; 0 when unknown).
    pub start_ns: i64,
    /// When the reading was taken (nanoseconds since the epoch).
    pub timestamp_ns: i64,
    /// Cumulative CPU time since the start, core-nanoseconds.
    pub cpu_core_nanos: u64,
    /// Working set, bytes.
    pub memory_bytes: u64,
}

/// A pod's containers' points by container name.
pub type PodPoints = BTreeMap<String, MetricsPoint>;

/// `(namespace, name)` of a pod.
pub type PodKey = (String, String);

/// One scrape: points by node, and by pod (`storage.MetricsBatch`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetricsBatch {
    /// Node points by node name.
    pub nodes: BTreeMap<String, MetricsPoint>,
    /// Container points by pod.
    pub pods: BTreeMap<PodKey, PodPoints>,
}

impl MetricsBatch {
    /// Adds another node's batch; a node or pod already present keeps its first point, as
    /// the scraper merges its per-node results (`pkg/scraper/scraper.go`, `Scrape`).
    pub fn merge(&mut self, other: MetricsBatch) {
        for (node, point) in other.nodes {
            self.nodes.entry(node).or_insert(point);
        }
        for (pod, points) in other.pods {
            self.pods.entry(pod).or_insert(points);
        }
    }
}

/// One sample line: name, labels, value and timestamp (ms), if any.
type Sample<'a> = (&'a str, BTreeMap<&'a str, &'a str>, f64, Option<i64>);

/// `name{labels} value timestamp` split up; `None` for comments and malformed lines.
fn sample(line: &str) -> Option<Sample<'_>> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (name, labels, rest) = match line.find('{') {
        Some(open) => {
            let close = line[open..].find('}')? + open;
            (&line[..open], &line[open + 1..close], &line[close + 1..])
        }
        None => {
            let space = line.find(' ')?;
            (&line[..space], "", &line[space..])
        }
    };
    let mut labels_map = BTreeMap::new();
    for pair in labels.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = pair.split_once('=')?;
        labels_map.insert(k.trim(), v.trim().trim_matches('"'));
    }
    let mut fields = rest.split_whitespace();
    let value: f64 = fields.next()?.parse().ok()?;
    let timestamp = fields.next().and_then(|t| t.parse().ok());
    Some((name, labels_map, value, timestamp))
}

/// Go's `uint64(f)` of a non-negative float (negative and NaN give 0 here).
fn to_u64(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        value as u64
    } else {
        0
    }
}

/// The point of the container `key` names, created empty on first sight.
fn container_point<'a>(
    pods: &'a mut BTreeMap<PodKey, PodPoints>,
    key: Option<(String, String, &str)>,
) -> Option<&'a mut MetricsPoint> {
    let (namespace, pod, container) = key?;
    Some(
        pods.entry((namespace, pod))
            .or_default()
            .entry(container.to_owned())
            .or_default(),
    )
}

/// Node `node_name`'s `/metrics/resource` text as metrics-server decodes it; `now_ms` (the
/// request time) stands in for a sample without a timestamp.
pub fn decode_resource_metrics(text: &str, now_ms: i64, node_name: &str) -> MetricsBatch {
    let mut node = MetricsPoint::default();
    let mut pods: BTreeMap<PodKey, PodPoints> = BTreeMap::new();
    for line in text.lines() {
        let Some((name, labels, value, ts)) = sample(line) else {
            continue;
        };
        let timestamp_ns = ts.unwrap_or(now_ms).saturating_mul(NANOS_PER_MS);
        let key = match (
            labels.get("namespace"),
            labels.get("pod"),
            labels.get("container"),
        ) {
            (Some(ns), Some(pod), Some(c)) => Some(((*ns).to_owned(), (*pod).to_owned(), *c)),
            _ => None,
        };
        match name {
            "node_cpu_usage_seconds_total" => {
                node.cpu_core_nanos = to_u64(value * 1e9);
                node.timestamp_ns = timestamp_ns;
            }
            "node_memory_working_set_bytes" => {
                node.memory_bytes = to_u64(value);
                node.timestamp_ns = timestamp_ns;
            }
            "container_cpu_usage_seconds_total" => {
                if let Some(p) = container_point(&mut pods, key) {
                    p.cpu_core_nanos = to_u64(value * 1e9);
                    p.timestamp_ns = timestamp_ns;
                }
            }
            "container_memory_working_set_bytes" => {
                if let Some(p) = container_point(&mut pods, key) {
                    p.memory_bytes = to_u64(value);
                    p.timestamp_ns = timestamp_ns;
                }
            }
            "container_start_time_seconds" => {
                if let Some(p) = container_point(&mut pods, key) {
                    p.start_ns = i64::try_from(to_u64(value * 1e9)).unwrap_or(i64::MAX);
                }
            }
            _ => {}
        }
    }
    let mut batch = MetricsBatch::default();
    if node.timestamp_ns != 0 && node.cpu_core_nanos != 0 && node.memory_bytes != 0 {
        batch.nodes.insert(node_name.to_owned(), node);
    }
    for (pod, containers) in pods {
        let complete: Option<PodPoints> = containers
            .into_iter()
            .filter(|(_, p)| *p != MetricsPoint::default())
            .map(|(c, p)| (p.cpu_core_nanos != 0 && p.memory_bytes != 0).then_some((c, p)))
            .collect();
        if let Some(complete) = complete {
            batch.pods.insert(pod, complete);
        }
    }
    batch
}

/// Usage over the window between two points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// CPU, nanocores.
    pub cpu_nanocores: u64,
    /// Memory working set, bytes.
    pub memory_bytes: u64,
    /// End of the window (nanoseconds since the epoch).
    pub timestamp_ns: i64,
    /// Length of the window, nanoseconds.
    pub window_ns: i64,
}

/// The usage between `prev` and `last`; an error when a start time or the counter went
/// back, as metrics-server then skips the node or container.
pub fn resource_usage(last: &MetricsPoint, prev: &MetricsPoint) -> Result<Usage, String> {
    if last.start_ns < prev.start_ns {
        return Err("unexpected decrease in startTime of node/container".into());
    }
    if last.cpu_core_nanos < prev.cpu_core_nanos {
        return Err("unexpected decrease in cumulative CPU usage value".into());
    }
    let window_ns = last.timestamp_ns - prev.timestamp_ns;
    // The storage keeps only predecessors older than the last point; guard the division.
    if window_ns <= 0 {
        return Err("the last point is not newer than the previous one".into());
    }
    let rate = (last.cpu_core_nanos - prev.cpu_core_nanos) as f64 / (window_ns as f64 / 1e9);
    Ok(Usage {
        cpu_nanocores: to_u64(rate),
        memory_bytes: last.memory_bytes,
        timestamp_ns: last.timestamp_ns,
        window_ns,
    })
}

/// A pod's usage: its containers' and the earliest window among them (`podStorage.GetMetrics`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodUsage {
    /// Usage by container name.
    pub containers: BTreeMap<String, Usage>,
    /// End of the pod's window.
    pub timestamp_ns: i64,
    /// Length of the pod's window.
    pub window_ns: i64,
}

/// The last two scrapes (`pkg/storage/storage.go`).
#[derive(Clone, Debug, Default)]
pub struct Storage {
    nodes_last: BTreeMap<String, MetricsPoint>,
    nodes_prev: BTreeMap<String, MetricsPoint>,
    pods_last: BTreeMap<PodKey, PodPoints>,
    pods_prev: BTreeMap<PodKey, PodPoints>,
    /// The scrape period, nanoseconds (`--metric-resolution`).
    resolution_ns: i64,
}

impl Storage {
    /// Empty storage for scrapes every `resolution`.
    pub fn new(resolution: std::time::Duration) -> Storage {
        Storage {
            resolution_ns: i64::try_from(resolution.as_nanos()).unwrap_or(i64::MAX),
            ..Storage::default()
        }
    }

    /// Takes a scrape in: it becomes the last points, and what can precede them is kept
    /// (`nodeStorage.Store`, `podStorage.Store`).
    pub fn store(&mut self, batch: MetricsBatch) {
        let mut prev_nodes = BTreeMap::new();
        for (node, new) in &batch.nodes {
            let Some(last) = self.nodes_last.get(node) else {
                continue;
            };
            if new.timestamp_ns > last.timestamp_ns {
                prev_nodes.insert(node.clone(), *last);
            } else if let Some(prev) = self.nodes_prev.get(node)
                && prev.timestamp_ns < new.timestamp_ns
            {
                prev_nodes.insert(node.clone(), *prev);
            }
        }
        let mut prev_pods = BTreeMap::new();
        for (pod, containers) in &batch.pods {
            let mut prev_pod = PodPoints::new();
            for (container, new) in containers {
                let age = new.timestamp_ns - new.start_ns;
                if new.start_ns < new.timestamp_ns
                    && age < self.resolution_ns
                    && age >= FRESH_CONTAINER_MIN_NANOS
                {
                    // A container started within the last period: its start is a point of
                    // zero usage.
                    let start = MetricsPoint {
                        timestamp_ns: new.start_ns,
                        cpu_core_nanos: 0,
                        ..*new
                    };
                    prev_pod.insert(container.clone(), start);
                    continue;
                }
                let Some(last) = self.pods_last.get(pod).and_then(|p| p.get(container)) else {
                    continue;
                };
                // A container restarted since the last point starts over.
                if new.start_ns >= last.timestamp_ns {
                    continue;
                }
                if new.timestamp_ns > last.timestamp_ns {
                    prev_pod.insert(container.clone(), *last);
                } else if let Some(prev) = self.pods_prev.get(pod).and_then(|p| p.get(container))
                    && prev.timestamp_ns < new.timestamp_ns
                {
                    prev_pod.insert(container.clone(), *prev);
                }
            }
            if !prev_pod.is_empty() {
                prev_pods.insert(pod.clone(), prev_pod);
            }
        }
        self.nodes_last = batch.nodes;
        self.nodes_prev = prev_nodes;
        self.pods_last = batch.pods;
        self.pods_prev = prev_pods;
    }

    /// Node `name`'s usage, once two points are stored (`nodeStorage.GetMetrics`).
    pub fn node_usage(&self, name: &str) -> Option<Usage> {
        let last = self.nodes_last.get(name)?;
        let prev = self.nodes_prev.get(name)?;
        match resource_usage(last, prev) {
            Ok(usage) => Some(usage),
            Err(err) => {
                tracing::warn!(node = name, "Skipping node usage metric: {err}");
                None
            }
        }
    }

    /// A pod's usage, once each of its containers has two points (`podStorage.GetMetrics`).
    pub fn pod_usage(&self, namespace: &str, name: &str) -> Option<PodUsage> {
        let key = (namespace.to_owned(), name.to_owned());
        let last = self.pods_last.get(&key)?;
        let prev = self.pods_prev.get(&key)?;
        let mut containers = BTreeMap::new();
        let mut earliest: Option<(i64, i64)> = None;
        for (container, last) in last {
            let prev = prev.get(container)?;
            match resource_usage(last, prev) {
                Ok(usage) => {
                    if earliest.is_none_or(|(ts, _)| ts > usage.timestamp_ns) {
                        earliest = Some((usage.timestamp_ns, usage.window_ns));
                    }
                    containers.insert(container.clone(), usage);
                }
                Err(err) => {
                    tracing::warn!(
                        pod = format!("{namespace}/{name}"),
                        container = container.as_str(),
                        "Skipping container usage metric: {err}"
                    );
                }
            }
        }
        // metrics-server would list such a pod with no containers and a zero time; the
        // sandbox leaves it out.
        let (timestamp_ns, window_ns) = earliest?;
        Some(PodUsage {
            containers,
            timestamp_ns,
            window_ns,
        })
    }
}

/// `metav1.Time` as JSON: RFC 3339 in UTC, whole seconds (truncated).
fn rfc3339(ns: i64) -> String {
    jiff::Timestamp::from_second(ns.div_euclid(1_000_000_000))
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Go's `time.Duration.String()` (`metav1.Duration` as JSON): `15s`, `1.5s`, `500ms`,
/// `1m0.5s`, `2h0m0s`.
pub fn go_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let sign = if ns < 0 { "-" } else { "" };
    let ns = ns.unsigned_abs();
    let fraction = |value: u64, digits: u32| {
        let scale = 10u64.pow(digits);
        let (whole, frac) = (value / scale, value % scale);
        if frac == 0 {
            whole.to_string()
        } else {
            let text = format!("{frac:0width$}", width = digits as usize);
            format!("{whole}.{}", text.trim_end_matches('0'))
        }
    };
    if ns < 1_000 {
        return format!("{sign}{ns}ns");
    }
    if ns < 1_000_000 {
        return format!("{sign}{}µs", fraction(ns, 3));
    }
    if ns < 1_000_000_000 {
        return format!("{sign}{}ms", fraction(ns, 6));
    }
    let hours = ns / 3_600_000_000_000;
    let minutes = ns / 60_000_000_000 % 60;
    let seconds = fraction(ns % 60_000_000_000, 9);
    match (hours, minutes) {
        (0, 0) => format!("{sign}{seconds}s"),
        (0, m) => format!("{sign}{m}m{seconds}s"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}s"),
    }
}

/// The `usage` of a metrics object: canonical quantities, CPU from nanocores (DecimalSI),
/// memory from bytes (BinarySI), as `uint64Quantity` builds them.
fn usage_json(cpu_nanocores: u64, memory_bytes: u64) -> Value {
    let cpu = Quantity::from_nanos(i128::from(cpu_nanocores), Format::DecimalSI);
    let memory = Quantity::from_units(i128::from(memory_bytes), Format::BinarySI);
    json!({"cpu": cpu.to_canonical_string(), "memory": memory.to_canonical_string()})
}

/// Object metadata of a metrics object: name (and namespace), the node's or pod's labels
/// when it has any, and `creationTimestamp` the time of the answer.
fn metadata(namespace: Option<&str>, name: &str, labels: Option<&Value>, now_ns: i64) -> Value {
    let mut meta = json!({"name": name, "creationTimestamp": rfc3339(now_ns)});
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    if let Some(labels) = labels.filter(|l| l.as_object().is_some_and(|m| !m.is_empty())) {
        meta["labels"] = labels.clone();
    }
    meta
}

/// A `NodeMetrics` object for node `name` with its labels (`pkg/storage/node.go`).
pub fn node_metrics(name: &str, labels: Option<&Value>, usage: &Usage, now_ns: i64) -> Value {
    json!({
        "kind": "NodeMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": metadata(None, name, labels, now_ns),
        "timestamp": rfc3339(usage.timestamp_ns),
        "window": go_duration(usage.window_ns),
        "usage": usage_json(usage.cpu_nanocores, usage.memory_bytes),
    })
}

/// A `PodMetrics` object (`pkg/storage/pod.go`).
pub fn pod_metrics(
    namespace: &str,
    name: &str,
    labels: Option<&Value>,
    usage: &PodUsage,
    now_ns: i64,
) -> Value {
    let containers: Vec<Value> = usage
        .containers
        .iter()
        .map(|(c, u)| json!({"name": c, "usage": usage_json(u.cpu_nanocores, u.memory_bytes)}))
        .collect();
    json!({
        "kind": "PodMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": metadata(Some(namespace), name, labels, now_ns),
        "timestamp": rfc3339(usage.timestamp_ns),
        "window": go_duration(usage.window_ns),
        "containers": containers,
    })
}

/// A list of metrics objects (`NodeMetricsList`, `PodMetricsList`): no resourceVersion, as
/// metrics-server's lists carry none.
pub fn list(kind: &str, items: Vec<Value>) -> Value {
    json!({
        "kind": kind,
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {},
        "items": items,
    })
}

/// The server-side Table of metrics objects (`pkg/api/table.go`): `Name`, one quantity
/// column per resource (`cpu`, `memory`; a pod's summed over its containers) and `Window`.
pub fn table(objects: &[Value], include: IncludeObject) -> Value {
    let quantity = |text: Option<&str>| text.and_then(|t| Quantity::parse(t).ok());
    let mut rows = Vec::new();
    for object in objects {
        let usage = |resource: &str| -> String {
            if let Some(usage) = object.get("usage") {
                return usage[resource].as_str().unwrap_or_default().to_owned();
            }
            let summed = object["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| quantity(c["usage"][resource].as_str()))
                .reduce(|a, b| a + b);
            summed.map(|q| q.to_canonical_string()).unwrap_or_default()
        };
        let mut row = json!({"cells": [object["metadata"]["name"], usage("cpu"), usage("memory"), object["window"]]});
        row["object"] = match include {
            IncludeObject::None => Value::Null,
            IncludeObject::Metadata => json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": object["metadata"],
            }),
            IncludeObject::Object => object.clone(),
        };
        rows.push(row);
    }
    let column = |name: &str, format: &str| json!({"name": name, "type": "string", "format": format, "description": "", "priority": 0});
    let mut columns = Vec::new();
    if !rows.is_empty() {
        columns = vec![
            json!({"name": "Name", "type": "string", "format": "name",
                   "description": "Name of the resource", "priority": 0}),
            column("cpu", "quantity"),
            column("memory", "quantity"),
            column("Window", "duration"),
        ];
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": columns,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRAPE: &str = r#"# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 2.5 1700000010000
container_cpu_usage_seconds_total{container="side",namespace="default",pod="web"} 1 1700000010000
container_cpu_usage_seconds_total{container="lonely",namespace="default",pod="x"} 1 1700000010000
container_cpu_usage_seconds_total{container="idle",namespace="default",pod="y"} 0 1700000010000
container_memory_working_set_bytes{container="idle",namespace="default",pod="y"} 5 1700000010000
container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 1048576 1700000010000
container_memory_working_set_bytes{container="side",namespace="default",pod="web"} 2048 1700000010000
container_start_time_seconds{container="app",namespace="default",pod="web"} 1.7e+09 1700000010000
node_cpu_usage_seconds_total 100.5 1700000010000
node_memory_working_set_bytes 4.194304e+06 1700000010000
resource_scrape_error 0
"#;

    fn web(batch: &MetricsBatch) -> &PodPoints {
        &batch.pods[&("default".to_owned(), "web".to_owned())]
    }

    #[test]
    fn decodes_node_and_container_points() {
        let batch = decode_resource_metrics(SCRAPE, 0, "n1");
        assert_eq!(
            batch.nodes["n1"],
            MetricsPoint {
                start_ns: 0,
                timestamp_ns: 1_700_000_010_000 * NANOS_PER_MS,
                cpu_core_nanos: 100_500_000_000,
                memory_bytes: 4_194_304,
            }
        );
        let web = web(&batch);
        assert_eq!(web.len(), 2);
        assert_eq!(web["app"].cpu_core_nanos, 2_500_000_000);
        assert_eq!(web["app"].start_ns, 1_700_000_000_000_000_000);
        assert_eq!(web["side"].memory_bytes, 2048);
        // A container without memory, or with zero CPU, drops its pod.
        for pod in ["x", "y"] {
            assert!(
                !batch
                    .pods
                    .contains_key(&("default".to_owned(), pod.to_owned())),
                "{pod}"
            );
        }
        assert_eq!(
            decode_resource_metrics("garbage {\n", 0, "n1"),
            MetricsBatch::default()
        );
        // No timestamp: the request time. Zero memory: no node point.
        let batch = decode_resource_metrics(
            "node_cpu_usage_seconds_total 1\nnode_memory_working_set_bytes 2\n",
            42,
            "n1",
        );
        assert_eq!(batch.nodes["n1"].timestamp_ns, 42 * NANOS_PER_MS);
        let batch = decode_resource_metrics(
            "node_cpu_usage_seconds_total 1 5\nnode_memory_working_set_bytes 0 5\n",
            42,
            "n1",
        );
        assert!(batch.nodes.is_empty());
    }

    fn p(ms: i64, cpu_seconds: u64, mem: u64) -> MetricsPoint {
        MetricsPoint {
            start_ns: 0,
            timestamp_ns: ms * NANOS_PER_MS,
            cpu_core_nanos: cpu_seconds * 1_000_000_000,
            memory_bytes: mem,
        }
    }

    #[test]
    fn usage_is_the_rate_between_two_points() {
        let restarted = MetricsPoint {
            start_ns: 5,
            ..p(20_000, 12, 1)
        };
        let cases = [
            (
                p(20_000, 12, 4096),
                p(10_000, 10, 1),
                Ok((200_000_000, 4096, 10_000 * NANOS_PER_MS)),
            ),
            (p(10_000, 12, 1), p(10_000, 10, 1), Err(())),
            (p(20_000, 9, 1), p(10_000, 10, 1), Err(())),
            (
                p(20_000, 12, 1),
                MetricsPoint {
                    start_ns: 9,
                    ..p(10_000, 10, 1)
                },
                Err(()),
            ),
            (
                restarted,
                p(10_000, 10, 1),
                Ok((200_000_000, 1, 10_000 * NANOS_PER_MS)),
            ),
        ];
        for (last, prev, want) in cases {
            let got = resource_usage(&last, &prev)
                .map(|u| (u.cpu_nanocores, u.memory_bytes, u.window_ns))
                .map_err(|_| ());
            assert_eq!(got, want, "{last:?} after {prev:?}");
        }
    }

    fn batch(node: MetricsPoint, container: MetricsPoint) -> MetricsBatch {
        MetricsBatch {
            nodes: BTreeMap::from([("n1".to_owned(), node)]),
            pods: BTreeMap::from([(
                ("default".to_owned(), "web".to_owned()),
                BTreeMap::from([("app".to_owned(), container)]),
            )]),
        }
    }

    #[test]
    fn storage_needs_two_scrapes_and_keeps_the_newer_points() {
        let mut storage = Storage::new(std::time::Duration::from_secs(1));
        storage.store(batch(p(10_000, 10, 100), p(10_000, 1, 10)));
        assert_eq!(storage.node_usage("n1"), None);
        assert_eq!(storage.pod_usage("default", "web"), None);
        storage.store(batch(p(20_000, 15, 200), p(20_000, 3, 20)));
        let node = storage.node_usage("n1").unwrap();
        assert_eq!((node.cpu_nanocores, node.memory_bytes), (500_000_000, 200));
        let pod = storage.pod_usage("default", "web").unwrap();
        assert_eq!(pod.containers["app"].cpu_nanocores, 200_000_000);
        assert_eq!(pod.window_ns, 10_000 * NANOS_PER_MS);
        // The same point again: the previous one stays.
        storage.store(batch(p(20_000, 15, 200), p(20_000, 3, 20)));
        assert_eq!(storage.node_usage("n1").unwrap().cpu_nanocores, 500_000_000);
        // A restarted container (started after the last point) starts over.
        let restarted = MetricsPoint {
            start_ns: 25_000 * NANOS_PER_MS,
            ..p(30_000, 1, 20)
        };
        storage.store(batch(p(30_000, 20, 200), restarted));
        assert!(storage.node_usage("n1").is_some());
        assert_eq!(storage.pod_usage("default", "web"), None);
        // A node gone from the scrape is gone from the answers.
        storage.store(MetricsBatch::default());
        assert_eq!(storage.node_usage("n1"), None);
    }

    #[test]
    fn a_fresh_container_counts_from_its_start() {
        let mut storage = Storage::new(std::time::Duration::from_secs(60));
        let fresh = MetricsPoint {
            start_ns: 5_000 * NANOS_PER_MS,
            ..p(20_000, 3, 20)
        };
        storage.store(batch(p(20_000, 1, 1), fresh));
        let pod = storage.pod_usage("default", "web").unwrap();
        assert_eq!(pod.containers["app"].cpu_nanocores, 200_000_000);
        assert_eq!(pod.window_ns, 15_000 * NANOS_PER_MS);
    }

    #[test]
    fn go_durations() {
        for (ns, want) in [
            (0, "0s"),
            (15_000_000_000, "15s"),
            (1_500_000_000, "1.5s"),
            (500_000_000, "500ms"),
            (1_250_000, "1.25ms"),
            (999, "999ns"),
            (60_500_000_000, "1m0.5s"),
            (7_200_000_000_000, "2h0m0s"),
            (-2_000_000_000, "-2s"),
        ] {
            assert_eq!(go_duration(ns), want, "{ns}");
        }
    }

    #[test]
    fn objects_are_shaped_as_metrics_server_serves_them() {
        let usage = Usage {
            cpu_nanocores: 250_000_000,
            memory_bytes: 10 * 1024 * 1024,
            timestamp_ns: 1_700_000_010_900 * NANOS_PER_MS,
            window_ns: 10_000 * NANOS_PER_MS,
        };
        let now = 1_700_000_011_000 * NANOS_PER_MS;
        let node = node_metrics("vnode-w1-n1", Some(&json!({"a": "b"})), &usage, now);
        assert_eq!(node["usage"], json!({"cpu": "250m", "memory": "10Mi"}));
        assert_eq!(node["window"], "10s");
        assert_eq!(node["timestamp"], "2023-11-14T22:13:30Z");
        assert_eq!(
            node["metadata"]["creationTimestamp"],
            "2023-11-14T22:13:31Z"
        );
        assert_eq!(node["metadata"]["labels"]["a"], "b");
        let odd = Usage {
            cpu_nanocores: 1_234_567,
            memory_bytes: 4096 * 3,
            ..usage
        };
        assert_eq!(
            node_metrics("n", None, &odd, now)["usage"],
            json!({"cpu": "1234567n", "memory": "12Ki"})
        );
        assert!(
            node_metrics("n", Some(&json!({})), &odd, now)["metadata"]
                .get("labels")
                .is_none()
        );
        let pod = PodUsage {
            containers: BTreeMap::from([("app".to_owned(), usage), ("side".to_owned(), odd)]),
            timestamp_ns: usage.timestamp_ns,
            window_ns: usage.window_ns,
        };
        let object = pod_metrics("default", "web", None, &pod, now);
        assert_eq!(object["kind"], "PodMetrics");
        assert_eq!(object["metadata"]["namespace"], "default");
        assert_eq!(object["containers"][0]["name"], "app");
        assert_eq!(object["containers"][1]["usage"]["cpu"], "1234567n");
        let table = table(&[object], IncludeObject::None);
        assert_eq!(
            table["rows"][0]["cells"],
            json!(["web", "251234567n", "10252Ki", "10s"])
        );
        assert_eq!(table["columnDefinitions"][1]["name"], "cpu");
        assert_eq!(list("NodeMetricsList", vec![])["items"], json!([]));
    }
}
