//! The model of metrics-server the sandbox's `metrics.k8s.io` is to serve: what it reads from
//! each node's `/metrics/resource` and how it turns two scrapes into NodeMetrics and
//! PodMetrics. Pure functions only; the scrape loop and the API routes build on them.
//!
//! - decoding (kubernetes-sigs/metrics-server `pkg/scraper/client/resource/decode.go`,
//!   `decodeBatch`): `node_cpu_usage_seconds_total`, `node_memory_working_set_bytes`,
//!   `container_cpu_usage_seconds_total` and `container_memory_working_set_bytes` with
//!   `namespace`, `pod`, `container` labels; the sample's timestamp is in milliseconds;
//! - usage (`pkg/storage/node.go`, `pkg/storage/pod.go`, `resourceUsage` in
//!   `pkg/storage/types.go`): CPU is the rate between the last two points of a node or
//!   container (nanocores over the window between them); memory is the last working set; a
//!   point needs a predecessor older than itself, and a counter that went back is skipped;
//! - objects (`pkg/api/node.go`, `pkg/api/pod.go`): `NodeMetrics` and `PodMetrics` of
//!   `metrics.k8s.io/v1beta1` with `timestamp`, `window` and `usage` (`cpu` in `n`,
//!   `memory` in `Ki`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// One cumulative CPU and one memory reading.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MetricsPoint {
    /// When it was taken (milliseconds since the epoch).
    pub timestamp_ms: i64,
    /// Cumulative CPU time, core-seconds.
    pub cpu_seconds: f64,
    /// Working set, bytes.
    pub memory_bytes: f64,
}

/// One scrape of one node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricsBatch {
    /// The node's point, when both of its series were present.
    pub node: Option<MetricsPoint>,
    /// Containers' points by (namespace, pod), then container.
    pub pods: BTreeMap<(String, String), BTreeMap<String, MetricsPoint>>,
}

/// One sample line: name, labels, value and timestamp (ms), if any.
type Sample<'a> = (&'a str, BTreeMap<&'a str, &'a str>, f64, Option<i64>);

/// A container's cumulative CPU (with its timestamp) and memory, as far as seen.
type ContainerSeries = (Option<(f64, i64)>, Option<f64>);

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

/// A node's `/metrics/resource` text as metrics-server decodes it; `now_ms` stands in for a
/// sample without a timestamp.
pub fn decode_resource_metrics(text: &str, now_ms: i64) -> MetricsBatch {
    let mut node_cpu = None;
    let mut node_memory = None;
    let mut containers: BTreeMap<(String, String, String), ContainerSeries> = BTreeMap::new();
    for line in text.lines() {
        let Some((name, labels, value, ts)) = sample(line) else {
            continue;
        };
        let ts = ts.unwrap_or(now_ms);
        let key = || -> Option<(String, String, String)> {
            Some((
                (*labels.get("namespace")?).to_owned(),
                (*labels.get("pod")?).to_owned(),
                (*labels.get("container")?).to_owned(),
            ))
        };
        match name {
            "node_cpu_usage_seconds_total" => node_cpu = Some((value, ts)),
            "node_memory_working_set_bytes" => node_memory = Some(value),
            "container_cpu_usage_seconds_total" => {
                if let Some(k) = key() {
                    containers.entry(k).or_default().0 = Some((value, ts));
                }
            }
            "container_memory_working_set_bytes" => {
                if let Some(k) = key() {
                    containers.entry(k).or_default().1 = Some(value);
                }
            }
            _ => {}
        }
    }
    let mut batch = MetricsBatch {
        node: match (node_cpu, node_memory) {
            (Some((cpu, ts)), Some(memory)) => Some(MetricsPoint {
                timestamp_ms: ts,
                cpu_seconds: cpu,
                memory_bytes: memory,
            }),
            _ => None,
        },
        pods: BTreeMap::new(),
    };
    for ((namespace, pod, container), (cpu, memory)) in containers {
        if let (Some((cpu, ts)), Some(memory)) = (cpu, memory) {
            batch.pods.entry((namespace, pod)).or_default().insert(
                container,
                MetricsPoint {
                    timestamp_ms: ts,
                    cpu_seconds: cpu,
                    memory_bytes: memory,
                },
            );
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
    /// End of the window (milliseconds since the epoch).
    pub timestamp_ms: i64,
    /// Length of the window, milliseconds.
    pub window_ms: i64,
}

/// The usage between `prev` and `last`; an error when the window is empty or the counter
/// went back (a restart), as metrics-server skips such points.
pub fn resource_usage(last: &MetricsPoint, prev: &MetricsPoint) -> Result<Usage, String> {
    let window_ms = last.timestamp_ms - prev.timestamp_ms;
    if window_ms <= 0 {
        return Err("the last point is not newer than the previous one".into());
    }
    if last.cpu_seconds < prev.cpu_seconds {
        return Err("the cumulative CPU usage decreased".into());
    }
    let nanocores = (last.cpu_seconds - prev.cpu_seconds) * 1e9 * 1000.0 / window_ms as f64;
    Ok(Usage {
        cpu_nanocores: nanocores.round() as u64,
        memory_bytes: last.memory_bytes.max(0.0) as u64,
        timestamp_ms: last.timestamp_ms,
        window_ms,
    })
}

/// A point to keep as the predecessor of `new`, given the stored `last` and `prev`
/// (`nodeStorage.Store`): the old last when `new` is newer, else the old previous when it is
/// older than `new`.
pub fn predecessor(
    new: &MetricsPoint,
    last: Option<&MetricsPoint>,
    prev: Option<&MetricsPoint>,
) -> Option<MetricsPoint> {
    let last = last?;
    if new.timestamp_ms > last.timestamp_ms {
        return Some(*last);
    }
    prev.filter(|p| p.timestamp_ms < new.timestamp_ms).copied()
}

fn rfc3339(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.round(jiff::Unit::Second).unwrap_or(t).to_string())
        .unwrap_or_default()
}

fn window(ms: i64) -> String {
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{}ms", ms)
    }
}

/// The `usage` of a metrics object: CPU in nanocores, memory in kibibytes (as
/// metrics-server's quantities serialise).
fn usage_json(u: &Usage) -> Value {
    json!({"cpu": format!("{}n", u.cpu_nanocores), "memory": format!("{}Ki", u.memory_bytes / 1024)})
}

/// A `NodeMetrics` object for node `name` with its labels (`pkg/api/node.go`).
pub fn node_metrics(name: &str, labels: &Value, usage: &Usage) -> Value {
    json!({
        "kind": "NodeMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": rfc3339(usage.timestamp_ms)},
        "timestamp": rfc3339(usage.timestamp_ms),
        "window": window(usage.window_ms),
        "usage": usage_json(usage),
    })
}

/// A `PodMetrics` object (`pkg/api/pod.go`): the pod's window is its containers' latest.
pub fn pod_metrics(
    namespace: &str,
    name: &str,
    labels: &Value,
    containers: &BTreeMap<String, Usage>,
) -> Option<Value> {
    let latest = containers.values().max_by_key(|u| u.timestamp_ms)?;
    Some(json!({
        "kind": "PodMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {"name": name, "namespace": namespace, "labels": labels,
                     "creationTimestamp": rfc3339(latest.timestamp_ms)},
        "timestamp": rfc3339(latest.timestamp_ms),
        "window": window(latest.window_ms),
        "containers": containers.iter().map(|(c, u)| json!({"name": c, "usage": usage_json(u)}))
            .collect::<Vec<_>>(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRAPE: &str = r#"# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 2.5 1700000010000
container_cpu_usage_seconds_total{container="side",namespace="default",pod="web"} 1 1700000010000
container_cpu_usage_seconds_total{container="lonely",namespace="default",pod="x"} 1 1700000010000
container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 1048576 1700000010000
container_memory_working_set_bytes{container="side",namespace="default",pod="web"} 2048 1700000010000
node_cpu_usage_seconds_total 100.5 1700000010000
node_memory_working_set_bytes 4.194304e+06 1700000010000
resource_scrape_error 0
"#;

    #[test]
    fn decodes_node_and_container_points() {
        let batch = decode_resource_metrics(SCRAPE, 0);
        assert_eq!(
            batch.node,
            Some(MetricsPoint {
                timestamp_ms: 1_700_000_010_000,
                cpu_seconds: 100.5,
                memory_bytes: 4_194_304.0
            })
        );
        let web = &batch.pods[&("default".to_owned(), "web".to_owned())];
        assert_eq!(web.len(), 2);
        assert_eq!(web["app"].cpu_seconds, 2.5);
        assert_eq!(web["side"].memory_bytes, 2048.0);
        // A container without memory is left out, as is its pod.
        assert!(
            !batch
                .pods
                .contains_key(&("default".to_owned(), "x".to_owned()))
        );
        assert_eq!(
            decode_resource_metrics("garbage {\n", 0),
            MetricsBatch::default()
        );
        // No timestamp: the scrape time.
        let batch = decode_resource_metrics(
            "node_cpu_usage_seconds_total 1\nnode_memory_working_set_bytes 2\n",
            42,
        );
        assert_eq!(batch.node.map(|p| p.timestamp_ms), Some(42));
    }

    #[test]
    fn usage_is_the_rate_between_two_points() {
        let p = |ms: i64, cpu: f64, mem: f64| MetricsPoint {
            timestamp_ms: ms,
            cpu_seconds: cpu,
            memory_bytes: mem,
        };
        let cases = [
            (
                p(20_000, 12.0, 4096.0),
                p(10_000, 10.0, 1.0),
                Ok(Usage {
                    cpu_nanocores: 200_000_000,
                    memory_bytes: 4096,
                    timestamp_ms: 20_000,
                    window_ms: 10_000,
                }),
            ),
            (p(10_000, 12.0, 1.0), p(10_000, 10.0, 1.0), Err(())),
            (p(20_000, 9.0, 1.0), p(10_000, 10.0, 1.0), Err(())),
        ];
        for (last, prev, want) in cases {
            assert_eq!(resource_usage(&last, &prev).map_err(|_| ()), want);
        }
        let (old, mid, new) = (p(1, 0.0, 0.0), p(2, 0.0, 0.0), p(3, 0.0, 0.0));
        assert_eq!(predecessor(&new, Some(&mid), Some(&old)), Some(mid));
        assert_eq!(predecessor(&mid, Some(&mid), Some(&old)), Some(old));
        assert_eq!(predecessor(&old, Some(&mid), Some(&old)), None);
        assert_eq!(predecessor(&new, None, None), None);
    }

    #[test]
    fn objects_are_shaped_as_metrics_server_serves_them() {
        let usage = Usage {
            cpu_nanocores: 250_000_000,
            memory_bytes: 10 * 1024 * 1024,
            timestamp_ms: 1_700_000_010_000,
            window_ms: 10_000,
        };
        let node = node_metrics("vnode-w1-n1", &json!({"a": "b"}), &usage);
        assert_eq!(
            node["usage"],
            json!({"cpu": "250000000n", "memory": "10240Ki"})
        );
        assert_eq!(node["window"], "10s");
        assert_eq!(node["timestamp"], "2023-11-14T22:13:30Z");
        assert_eq!(node["metadata"]["labels"]["a"], "b");
        let containers = BTreeMap::from([("app".to_owned(), usage)]);
        let pod = pod_metrics("default", "web", &json!({}), &containers).unwrap();
        assert_eq!(pod["kind"], "PodMetrics");
        assert_eq!(pod["containers"][0]["name"], "app");
        assert_eq!(
            pod_metrics("default", "web", &json!({}), &BTreeMap::new()),
            None
        );
    }
}
