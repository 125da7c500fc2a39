//! What a simulated node's kubelet reports about resource usage: `/stats/summary`
//! (`stats/v1alpha1` Summary), `/metrics/resource` and `/metrics/cadvisor` (Prometheus text).
//!
//! Usage is derived from the node's running pods, so two nodes with different pods report
//! different figures: each container uses what it requests (else its limit, else 1m CPU and
//! 4 MiB), the node adds a fixed system share (20m CPU, 64 MiB) to the sum of its pods, and
//! a container's cumulative CPU time grows at its rate from its start time. A pod's and the
//! node's cumulative CPU time are the sums of their parts (the node's system share counted
//! from the node's start), so they grow as counters do when pods come: metrics-server's rate
//! between two scrapes is the usage in between. (The time of pods that have ended is not
//! kept, so the node's counter falls back when one ends; metrics-server skips that window.)

use super::scheduler::parse_quantity;
use crate::sim::controllers::objects::at;
use jiff::Timestamp;
use serde_json::{Value, json};
use std::fmt::Write as _;

/// CPU (nanocores) the node itself uses besides its pods.
pub const SYSTEM_CPU_NANOCORES: u64 = 20_000_000;
/// Memory (bytes) the node itself uses besides its pods.
pub const SYSTEM_MEMORY_BYTES: u64 = 64 * 1024 * 1024;
/// CPU (nanocores) of a container that neither requests nor limits CPU.
pub const DEFAULT_CPU_NANOCORES: u64 = 1_000_000;
/// Memory (bytes) of a container that neither requests nor limits memory.
pub const DEFAULT_MEMORY_BYTES: u64 = 4 * 1024 * 1024;

/// One running container's usage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerUsage {
    /// Container name.
    pub name: String,
    /// Image.
    pub image: String,
    /// When it started.
    pub start: Option<Timestamp>,
    /// CPU in use, nanocores.
    pub cpu_nanocores: u64,
    /// Working set, bytes.
    pub memory_bytes: u64,
}

/// One running pod's usage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodUsage {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
    /// When it started.
    pub start: Option<Timestamp>,
    /// Its containers.
    pub containers: Vec<ContainerUsage>,
}

impl PodUsage {
    /// Core-nanoseconds its containers have used by `now`.
    fn cumulative_cpu(&self, now: Timestamp) -> u64 {
        self.containers
            .iter()
            .map(|c| cumulative(c.cpu_nanocores, c.start, now))
            .fold(0, u64::saturating_add)
    }

    fn cpu(&self) -> u64 {
        self.containers.iter().map(|c| c.cpu_nanocores).sum()
    }

    fn memory(&self) -> u64 {
        self.containers.iter().map(|c| c.memory_bytes).sum()
    }
}

fn amount(container: &Value, resource: &str, nanos: bool) -> Option<u64> {
    ["requests", "limits"].iter().find_map(|kind| {
        let text = at(container, &["resources", kind, resource])?.as_str()?;
        let quantity = parse_quantity(text)?;
        let value = if nanos {
            quantity.nano_value()
        } else {
            quantity.value()
        };
        u64::try_from(value).ok().filter(|v| *v > 0)
    })
}

fn time(value: Option<&Value>) -> Option<Timestamp> {
    value?.as_str()?.parse().ok()
}

/// The usage of `pod` when it is running (with its containers' start times from the status).
pub fn pod_usage(pod: &Value) -> Option<PodUsage> {
    if at(pod, &["status", "phase"]).and_then(Value::as_str) != Some("Running") {
        return None;
    }
    let statuses = at(pod, &["status", "containerStatuses"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let pod_start = time(at(pod, &["status", "startTime"]));
    let containers = at(pod, &["spec", "containers"])
        .and_then(Value::as_array)?
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap_or_default().to_string();
            let start = statuses
                .iter()
                .find(|s| s["name"] == name.as_str())
                .and_then(|s| time(s.pointer("/state/running/startedAt")))
                .or(pod_start);
            ContainerUsage {
                image: c["image"].as_str().unwrap_or_default().to_string(),
                start,
                cpu_nanocores: amount(c, "cpu", true).unwrap_or(DEFAULT_CPU_NANOCORES),
                memory_bytes: amount(c, "memory", false).unwrap_or(DEFAULT_MEMORY_BYTES),
                name,
            }
        })
        .collect();
    let meta = |key: &str| {
        at(pod, &["metadata", key])
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Some(PodUsage {
        namespace: meta("namespace"),
        name: meta("name"),
        uid: meta("uid"),
        start: pod_start,
        containers,
    })
}

/// Core-nanoseconds used at `rate` nanocores from `start` to `now`.
fn cumulative(rate: u64, start: Option<Timestamp>, now: Timestamp) -> u64 {
    let elapsed_ms = start
        .map(|s| {
            now.as_millisecond()
                .saturating_sub(s.as_millisecond())
                .max(0)
        })
        .unwrap_or(0);
    let total = u128::from(rate) * u128::try_from(elapsed_ms).unwrap_or(0) / 1000;
    u64::try_from(total).unwrap_or(u64::MAX)
}

/// A simulated node: its name, memory capacity (bytes) and start time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// Node name.
    pub name: String,
    /// Memory capacity, bytes.
    pub memory_capacity: u64,
    /// CPU capacity, cores.
    pub cpu_cores: u64,
    /// When the node started (its creation time).
    pub start: Option<Timestamp>,
}

impl NodeInfo {
    /// Name, capacity and start of the node object `node`.
    pub fn of(node: &Value) -> NodeInfo {
        let capacity = |resource: &str| {
            at(node, &["status", "capacity", resource])
                .and_then(Value::as_str)
                .and_then(parse_quantity)
                .and_then(|q| u64::try_from(q.value()).ok())
                .unwrap_or(0)
        };
        NodeInfo {
            name: at(node, &["metadata", "name"])
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            memory_capacity: capacity("memory"),
            cpu_cores: capacity("cpu"),
            start: time(at(node, &["metadata", "creationTimestamp"])),
        }
    }

    fn cpu(&self, pods: &[PodUsage]) -> u64 {
        SYSTEM_CPU_NANOCORES + pods.iter().map(PodUsage::cpu).sum::<u64>()
    }

    /// Core-nanoseconds used by `now`: the system share since the node started, and what
    /// its running pods have used.
    fn cumulative_cpu(&self, pods: &[PodUsage], now: Timestamp) -> u64 {
        pods.iter().map(|p| p.cumulative_cpu(now)).fold(
            cumulative(SYSTEM_CPU_NANOCORES, self.start, now),
            u64::saturating_add,
        )
    }

    fn memory(&self, pods: &[PodUsage]) -> u64 {
        SYSTEM_MEMORY_BYTES + pods.iter().map(PodUsage::memory).sum::<u64>()
    }
}

fn cpu_stats(rate: u64, used: u64, now: Timestamp) -> Value {
    json!({
        "time": now.to_string(),
        "usageNanoCores": rate,
        "usageCoreNanoSeconds": used,
    })
}

fn memory_stats(bytes: u64, available: Option<u64>, now: Timestamp) -> Value {
    let mut stats = json!({
        "time": now.to_string(),
        "usageBytes": bytes,
        "workingSetBytes": bytes,
        "rssBytes": bytes,
        "pageFaults": 0,
        "majorPageFaults": 0,
    });
    if let Some(available) = available {
        stats["availableBytes"] = json!(available);
    }
    stats
}

fn start_text(start: Option<Timestamp>) -> Value {
    start.map_or(Value::Null, |s| json!(s.to_string()))
}

/// The node's Summary (`/stats/summary`).
pub fn summary(node: &NodeInfo, pods: &[PodUsage], now: Timestamp) -> Value {
    let node_memory = node.memory(pods);
    let node_cpu = node.cpu(pods);
    let node_used = node.cumulative_cpu(pods, now);
    let pods: Vec<Value> = pods
        .iter()
        .map(|pod| {
            let containers: Vec<Value> = pod
                .containers
                .iter()
                .map(|c| {
                    json!({
                        "name": c.name,
                        "startTime": start_text(c.start),
                        "cpu": cpu_stats(c.cpu_nanocores, cumulative(c.cpu_nanocores, c.start, now), now),
                        "memory": memory_stats(c.memory_bytes, None, now),
                    })
                })
                .collect();
            json!({
                "podRef": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
                "startTime": start_text(pod.start),
                "containers": containers,
                "cpu": cpu_stats(pod.cpu(), pod.cumulative_cpu(now), now),
                "memory": memory_stats(pod.memory(), None, now),
            })
        })
        .collect();
    json!({
        "node": {
            "nodeName": node.name,
            "systemContainers": [],
            "startTime": start_text(node.start),
            "cpu": cpu_stats(node_cpu, node_used, now),
            "memory": memory_stats(
                node_memory,
                Some(node.memory_capacity.saturating_sub(node_memory)),
                now,
            ),
        },
        "pods": pods,
    })
}

fn seconds(core_nanos: u64) -> String {
    format!("{}", core_nanos as f64 / 1e9)
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The node's resource metrics (`/metrics/resource`), as the kubelet writes them.
pub fn resource_metrics(node: &NodeInfo, pods: &[PodUsage], now: Timestamp) -> String {
    let ts = now.as_millisecond();
    let mut out = String::new();
    let container_labels = |p: &PodUsage, c: &ContainerUsage| {
        format!(
            "container=\"{}\",namespace=\"{}\",pod=\"{}\"",
            escape(&c.name),
            escape(&p.namespace),
            escape(&p.name)
        )
    };
    let pod_labels = |p: &PodUsage| {
        format!(
            "namespace=\"{}\",pod=\"{}\"",
            escape(&p.namespace),
            escape(&p.name)
        )
    };
    family(
        &mut out,
        "container_cpu_usage_seconds_total",
        "counter",
        "[STABLE] Cumulative cpu time consumed by the container in core-seconds",
    );
    for p in pods {
        for c in &p.containers {
            let used = cumulative(c.cpu_nanocores, c.start, now);
            let _ = writeln!(
                out,
                "container_cpu_usage_seconds_total{{{}}} {} {ts}",
                container_labels(p, c),
                seconds(used)
            );
        }
    }
    family(
        &mut out,
        "container_memory_working_set_bytes",
        "gauge",
        "[STABLE] Current working set of the container in bytes",
    );
    for p in pods {
        for c in &p.containers {
            let _ = writeln!(
                out,
                "container_memory_working_set_bytes{{{}}} {} {ts}",
                container_labels(p, c),
                c.memory_bytes
            );
        }
    }
    family(
        &mut out,
        "container_start_time_seconds",
        "gauge",
        "[STABLE] Start time of the container since unix epoch in seconds",
    );
    for p in pods {
        for c in &p.containers {
            if let Some(start) = c.start {
                let _ = writeln!(
                    out,
                    "container_start_time_seconds{{{}}} {} {ts}",
                    container_labels(p, c),
                    start.as_second()
                );
            }
        }
    }
    family(
        &mut out,
        "node_cpu_usage_seconds_total",
        "counter",
        "[STABLE] Cumulative cpu time consumed by the node in core-seconds",
    );
    let _ = writeln!(
        out,
        "node_cpu_usage_seconds_total {} {ts}",
        seconds(node.cumulative_cpu(pods, now))
    );
    family(
        &mut out,
        "node_memory_working_set_bytes",
        "gauge",
        "[STABLE] Current working set of the node in bytes",
    );
    let _ = writeln!(
        out,
        "node_memory_working_set_bytes {} {ts}",
        node.memory(pods)
    );
    family(
        &mut out,
        "pod_cpu_usage_seconds_total",
        "counter",
        "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
    );
    for p in pods {
        let _ = writeln!(
            out,
            "pod_cpu_usage_seconds_total{{{}}} {} {ts}",
            pod_labels(p),
            seconds(p.cumulative_cpu(now))
        );
    }
    family(
        &mut out,
        "pod_memory_working_set_bytes",
        "gauge",
        "[STABLE] Current working set of the pod in bytes",
    );
    for p in pods {
        let _ = writeln!(
            out,
            "pod_memory_working_set_bytes{{{}}} {} {ts}",
            pod_labels(p),
            p.memory()
        );
    }
    family(
        &mut out,
        "resource_scrape_error",
        "gauge",
        "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise",
    );
    let _ = writeln!(out, "resource_scrape_error 0");
    out
}

/// The node's cAdvisor metrics (`/metrics/cadvisor`): CPU and memory of the node's root
/// cgroup (`id="/"`), of each pod and of each container, and the machine's size.
pub fn cadvisor_metrics(node: &NodeInfo, pods: &[PodUsage], now: Timestamp) -> String {
    let ts = now.as_millisecond();
    let mut out = String::new();
    let container_labels = |p: &PodUsage, c: &ContainerUsage| {
        let id = format!("/kubepods/pod{}/{}", p.uid, c.name);
        format!(
            "container=\"{}\",id=\"{}\",image=\"{}\",name=\"{}\",namespace=\"{}\",pod=\"{}\"",
            escape(&c.name),
            escape(&id),
            escape(&c.image),
            escape(&c.name),
            escape(&p.namespace),
            escape(&p.name)
        )
    };
    family(
        &mut out,
        "container_cpu_usage_seconds_total",
        "counter",
        "Cumulative cpu time consumed in seconds.",
    );
    let _ = writeln!(
        out,
        "container_cpu_usage_seconds_total{{container=\"\",cpu=\"total\",id=\"/\",image=\"\",name=\"\",namespace=\"\",pod=\"\"}} {} {ts}",
        seconds(node.cumulative_cpu(pods, now))
    );
    for p in pods {
        for c in &p.containers {
            let _ = writeln!(
                out,
                "container_cpu_usage_seconds_total{{{},cpu=\"total\"}} {} {ts}",
                container_labels(p, c),
                seconds(cumulative(c.cpu_nanocores, c.start, now))
            );
        }
    }
    family(
        &mut out,
        "container_memory_working_set_bytes",
        "gauge",
        "Current working set in bytes.",
    );
    let _ = writeln!(
        out,
        "container_memory_working_set_bytes{{container=\"\",id=\"/\",image=\"\",name=\"\",namespace=\"\",pod=\"\"}} {} {ts}",
        node.memory(pods)
    );
    for p in pods {
        for c in &p.containers {
            let _ = writeln!(
                out,
                "container_memory_working_set_bytes{{{}}} {} {ts}",
                container_labels(p, c),
                c.memory_bytes
            );
        }
    }
    family(
        &mut out,
        "machine_cpu_cores",
        "gauge",
        "Number of logical CPU cores.",
    );
    let _ = writeln!(out, "machine_cpu_cores {}", node.cpu_cores);
    family(
        &mut out,
        "machine_memory_bytes",
        "gauge",
        "Amount of memory installed on the machine.",
    );
    let _ = writeln!(out, "machine_memory_bytes {}", node.memory_capacity);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, phase: &str, cpu: Option<&str>, memory: Option<&str>) -> Value {
        let mut requests = json!({});
        if let Some(cpu) = cpu {
            requests["cpu"] = json!(cpu);
        }
        if let Some(memory) = memory {
            requests["memory"] = json!(memory);
        }
        json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
            "spec": {"containers": [{"name": "app", "image": "busybox", "resources": {"requests": requests}}]},
            "status": {"phase": phase, "startTime": "2025-01-01T00:00:00Z",
                "containerStatuses": [{"name": "app", "state": {"running": {"startedAt": "2025-01-01T00:00:10Z"}}}]},
        })
    }

    fn node() -> NodeInfo {
        NodeInfo::of(&json!({
            "metadata": {"name": "n1", "creationTimestamp": "2025-01-01T00:00:00Z"},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi"}},
        }))
    }

    #[test]
    fn usage_comes_from_requests_and_defaults() {
        // (pod, cpu nanocores, memory bytes) or not running
        let cases = [
            (
                pod("a", "Running", Some("250m"), Some("64Mi")),
                Some((250_000_000, 64 << 20)),
            ),
            (
                pod("b", "Running", None, None),
                Some((DEFAULT_CPU_NANOCORES, DEFAULT_MEMORY_BYTES)),
            ),
            (
                pod("c", "Running", Some("1"), None),
                Some((1_000_000_000, DEFAULT_MEMORY_BYTES)),
            ),
            (pod("d", "Pending", Some("1"), None), None),
            (pod("e", "Succeeded", Some("1"), None), None),
        ];
        for (pod, want) in cases {
            let got = pod_usage(&pod).map(|p| (p.cpu(), p.memory()));
            assert_eq!(got, want, "{pod}");
        }
        let usage = pod_usage(&pod("a", "Running", None, None)).unwrap();
        assert_eq!(
            usage.containers[0].start,
            "2025-01-01T00:00:10Z".parse().ok()
        );
    }

    #[test]
    fn node_and_pod_cpu_time_add_up_what_ran_when() {
        // The node started at 00:00:00, the container at 00:00:10 at half a core; at
        // 00:01:10 the node has run 70 s of its system share and the container 60 s.
        let now: Timestamp = "2025-01-01T00:01:10Z".parse().unwrap();
        let pods = [pod_usage(&pod("a", "Running", Some("500m"), Some("128Mi"))).unwrap()];
        let want_pod = 60 * 500_000_000u64;
        let want_node = 70 * SYSTEM_CPU_NANOCORES + want_pod;
        assert_eq!(pods[0].cumulative_cpu(now), want_pod);
        assert_eq!(node().cumulative_cpu(&pods, now), want_node);
        let summary = summary(&node(), &pods, now);
        assert_eq!(summary["node"]["cpu"]["usageCoreNanoSeconds"], want_node);
        assert_eq!(summary["pods"][0]["cpu"]["usageCoreNanoSeconds"], want_pod);
        let text = resource_metrics(&node(), &pods, now);
        assert!(
            text.contains(&format!(
                "node_cpu_usage_seconds_total {} ",
                want_node as f64 / 1e9
            )),
            "{text}"
        );
    }

    #[test]
    fn summaries_differ_with_the_pods() {
        let now: Timestamp = "2025-01-01T00:01:10Z".parse().unwrap();
        let busy = [pod_usage(&pod("a", "Running", Some("500m"), Some("128Mi"))).unwrap()];
        let idle: [PodUsage; 0] = [];
        let busy_summary = summary(&node(), &busy, now);
        let idle_summary = summary(&node(), &idle, now);
        assert_eq!(busy_summary["node"]["nodeName"], "n1");
        assert_eq!(
            busy_summary["node"]["cpu"]["usageNanoCores"],
            SYSTEM_CPU_NANOCORES + 500_000_000
        );
        assert_eq!(
            idle_summary["node"]["cpu"]["usageNanoCores"],
            SYSTEM_CPU_NANOCORES
        );
        assert_eq!(
            busy_summary["node"]["memory"]["workingSetBytes"],
            SYSTEM_MEMORY_BYTES + (128 << 20)
        );
        assert_eq!(
            busy_summary["node"]["memory"]["availableBytes"],
            (8u64 << 30) - SYSTEM_MEMORY_BYTES - (128 << 20)
        );
        let pod = &busy_summary["pods"][0];
        assert_eq!(
            pod["podRef"],
            json!({"name": "a", "namespace": "ns", "uid": "uid-a"})
        );
        // 60 s since the container started, at half a core.
        assert_eq!(
            pod["containers"][0]["cpu"]["usageCoreNanoSeconds"],
            30_000_000_000u64
        );
        assert_eq!(idle_summary["pods"], json!([]));
    }

    #[test]
    fn metrics_are_prometheus_text() {
        let now: Timestamp = "2025-01-01T00:01:10Z".parse().unwrap();
        let pods = [pod_usage(&pod("a", "Running", Some("500m"), Some("128Mi"))).unwrap()];
        let text = resource_metrics(&node(), &pods, now);
        for line in [
            "# TYPE container_cpu_usage_seconds_total counter",
            "container_cpu_usage_seconds_total{container=\"app\",namespace=\"ns\",pod=\"a\"} 30 1735689670000",
            "pod_memory_working_set_bytes{namespace=\"ns\",pod=\"a\"} 134217728 1735689670000",
            "node_memory_working_set_bytes 201326592 1735689670000",
            "resource_scrape_error 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        let text = cadvisor_metrics(&node(), &pods, now);
        assert!(text.contains("machine_memory_bytes 8589934592"), "{text}");
        assert!(
            text.contains("container_memory_working_set_bytes{container=\"app\",id=\"/kubepods/poduid-a/app\",image=\"busybox\",name=\"app\",namespace=\"ns\",pod=\"a\"} 134217728"),
            "{text}"
        );
    }
}
