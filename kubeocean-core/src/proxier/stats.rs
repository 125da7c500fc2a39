//! `/stats/summary` and `/metrics/resource` of virtual nodes, made from what the worker's
//! kubelets report for the physical nodes: only pods mapped from virtual pods are kept, with
//! their virtual namespace, name and UID; the node is named after its virtual node.
//!
//! On a virtual node's own port a request is for that node alone. On the shared port a
//! request cannot always say which virtual node it is for; when it covers several, pods of
//! all of them are listed and node-level figures are summed (summary: CPU and memory usage, under
//! the binding's name; resource metrics: `node_*` series summed, `*scrape_error` the maximum).
//! Volume stats lose their `pvcRef`: physical claim names do not mean anything to users of
//! the computing cluster.

use serde_json::{Map, Value, json};

use super::mapping::PodIndex;

/// One physical node's Summary (kubelet `stats/v1alpha1`) rewritten for its virtual node.
pub fn rewrite_summary(mut summary: Value, virtual_node: &str, pods: &PodIndex) -> Value {
    let Some(object) = summary.as_object_mut() else {
        return empty_summary(virtual_node);
    };
    let node = object
        .entry("node")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(node) = node.as_object_mut() {
        node.insert("nodeName".into(), json!(virtual_node));
    }
    let kept: Vec<Value> = object
        .get("pods")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|pod| rewrite_pod_stats(pod, pods))
        .collect();
    object.insert("pods".into(), Value::Array(kept));
    summary
}

fn rewrite_pod_stats(pod: &Value, pods: &PodIndex) -> Option<Value> {
    let reference = pod.get("podRef")?;
    let namespace = reference.get("namespace")?.as_str()?;
    let name = reference.get("name")?.as_str()?;
    let virtual_pod = pods.get(&(namespace.to_owned(), name.to_owned()))?;
    let mut pod = pod.clone();
    pod["podRef"] = json!({
        "name": virtual_pod.name,
        "namespace": virtual_pod.namespace,
        "uid": virtual_pod.uid,
    });
    if let Some(volumes) = pod.get_mut("volume").and_then(Value::as_array_mut) {
        for volume in volumes.iter_mut().filter_map(Value::as_object_mut) {
            volume.remove("pvcRef");
        }
    }
    Some(pod)
}

/// The Summary of a virtual node whose physical node could not be asked.
pub fn empty_summary(node_name: &str) -> Value {
    json!({"node": {"nodeName": node_name, "systemContainers": []}, "pods": []})
}

/// CPU and memory fields summed when a summary covers several nodes.
const SUMMED: [(&str, &[&str]); 2] = [
    ("cpu", &["usageNanoCores", "usageCoreNanoSeconds"]),
    (
        "memory",
        &[
            "availableBytes",
            "usageBytes",
            "workingSetBytes",
            "rssBytes",
            "pageFaults",
            "majorPageFaults",
        ],
    ),
];

/// One Summary from the per-node summaries: a single one as is; several with all pods and
/// the node's CPU and memory usage summed under `combined_name`.
pub fn combine_summaries(combined_name: &str, mut summaries: Vec<Value>) -> Value {
    if summaries.len() <= 1 {
        return summaries
            .pop()
            .unwrap_or_else(|| empty_summary(combined_name));
    }
    let mut node = Map::new();
    node.insert("nodeName".into(), json!(combined_name));
    node.insert("systemContainers".into(), json!([]));
    for (section, fields) in SUMMED {
        let parts: Vec<&Value> = summaries
            .iter()
            .filter_map(|s| s.pointer(&format!("/node/{section}")))
            .collect();
        if parts.is_empty() {
            continue;
        }
        let mut combined = Map::new();
        if let Some(time) = latest_time(parts.iter().filter_map(|p| p.get("time"))) {
            combined.insert("time".into(), json!(time));
        }
        for field in fields.iter() {
            let values: Vec<u64> = parts
                .iter()
                .filter_map(|p| p.get(*field).and_then(Value::as_u64))
                .collect();
            if !values.is_empty() {
                let sum = values.iter().fold(0u64, |acc, v| acc.saturating_add(*v));
                combined.insert((*field).into(), json!(sum));
            }
        }
        node.insert(section.into(), Value::Object(combined));
    }
    let pods: Vec<Value> = summaries
        .iter_mut()
        .filter_map(|s| s.get_mut("pods").and_then(Value::as_array_mut))
        .flat_map(std::mem::take)
        .collect();
    json!({"node": node, "pods": pods})
}

fn latest_time<'a>(times: impl Iterator<Item = &'a Value>) -> Option<String> {
    times
        .filter_map(Value::as_str)
        .filter_map(|t| t.parse::<jiff::Timestamp>().ok().map(|at| (at, t)))
        .max_by_key(|(at, _)| *at)
        .map(|(_, t)| t.to_owned())
}

/// One sample of the Prometheus text format.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Metric name.
    pub name: String,
    /// Labels in their written order.
    pub labels: Vec<(String, String)>,
    /// Value as written.
    pub value: String,
    /// Timestamp in milliseconds, as written.
    pub timestamp: Option<String>,
}

impl Sample {
    /// The value of label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn set_label(&mut self, key: &str, value: &str) {
        if let Some(entry) = self.labels.iter_mut().find(|(k, _)| k == key) {
            entry.1 = value.to_owned();
        }
    }

    /// Sets label `key` to `value`, adding it when missing.
    pub fn put_label(&mut self, key: &str, value: &str) {
        match self.labels.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value.to_owned(),
            None => self.labels.push((key.to_owned(), value.to_owned())),
        }
    }
}

/// One metric family: its `# HELP` and `# TYPE` lines and its samples.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Family {
    /// Family name.
    pub name: String,
    /// Help text, escaped as written.
    pub help: Option<String>,
    /// Type (`counter`, `gauge`, ...).
    pub kind: Option<String>,
    /// Samples.
    pub samples: Vec<Sample>,
}

/// Parses the Prometheus text format; lines that cannot be parsed are dropped.
pub fn parse_metrics(text: &str) -> Vec<Family> {
    let mut families: Vec<Family> = Vec::new();
    let mut current: Option<usize> = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(comment) = line.strip_prefix('#') {
            let mut words = comment.trim_start().splitn(3, ' ');
            let (keyword, name, rest) = (words.next(), words.next(), words.next());
            let (Some(keyword @ ("HELP" | "TYPE")), Some(name)) = (keyword, name) else {
                continue;
            };
            let index = family_index(&mut families, name);
            let rest = rest.map(|r| r.trim().to_owned());
            if keyword == "HELP" {
                families[index].help = rest;
            } else {
                families[index].kind = rest;
            }
            current = Some(index);
            continue;
        }
        let Some(sample) = parse_sample(line) else {
            continue;
        };
        let index = match current {
            Some(index) if belongs_to(&sample.name, &families[index].name) => index,
            _ => {
                let index = family_index(&mut families, &sample.name);
                current = Some(index);
                index
            }
        };
        families[index].samples.push(sample);
    }
    families
}

fn family_index(families: &mut Vec<Family>, name: &str) -> usize {
    if let Some(index) = families.iter().position(|f| f.name == name) {
        return index;
    }
    families.push(Family {
        name: name.to_owned(),
        ..Family::default()
    });
    families.len() - 1
}

fn belongs_to(sample: &str, family: &str) -> bool {
    sample == family
        || sample
            .strip_prefix(family)
            .is_some_and(|suffix| suffix.starts_with('_'))
}

fn parse_sample(line: &str) -> Option<Sample> {
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        let (parsed, remaining) = parse_labels(after)?;
        labels = parsed;
        rest = remaining;
    }
    let mut fields = rest.split_whitespace();
    let value = fields.next()?.to_owned();
    let timestamp = fields.next().map(str::to_owned);
    if fields.next().is_some() {
        return None;
    }
    Some(Sample {
        name: name.to_owned(),
        labels,
        value,
        timestamp,
    })
}

/// Parses `key="value",...}` and returns the labels and what follows the `}`.
fn parse_labels(mut text: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        text = text.trim_start();
        if let Some(rest) = text.strip_prefix('}') {
            return Some((labels, rest));
        }
        let (key, rest) = text.split_once('=')?;
        let quoted = rest.trim_start().strip_prefix('"')?;
        let mut chars = quoted.char_indices();
        let mut value = String::new();
        let end = loop {
            match chars.next()? {
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                (at, '"') => break at,
                (_, c) => value.push(c),
            }
        };
        labels.push((key.trim().to_owned(), value));
        text = quoted[end + 1..].trim_start();
        text = text.strip_prefix(',').unwrap_or(text);
    }
}

/// One physical node's resource metrics for the virtual side: series of pods not mapped
/// from virtual pods are dropped, the others carry the virtual namespace and name.
pub fn rewrite_metrics(mut families: Vec<Family>, pods: &PodIndex) -> Vec<Family> {
    for family in &mut families {
        family.samples.retain_mut(|sample| {
            let (Some(namespace), Some(name)) = (sample.label("namespace"), sample.label("pod"))
            else {
                // Node-level series.
                return sample.label("pod").is_none();
            };
            match pods.get(&(namespace.to_owned(), name.to_owned())) {
                Some(virtual_pod) => {
                    let (namespace, name) =
                        (virtual_pod.namespace.clone(), virtual_pod.name.clone());
                    sample.set_label("namespace", &namespace);
                    sample.set_label("pod", &name);
                    true
                }
                None => false,
            }
        });
    }
    families
}

/// Merges the metrics of several nodes: families by name, pod series side by side,
/// node-level series with the same labels summed (`*scrape_error`: the maximum).
pub fn combine_metrics(per_node: Vec<Vec<Family>>) -> Vec<Family> {
    let mut out: Vec<Family> = Vec::new();
    for families in per_node {
        for family in families {
            let index = family_index(&mut out, &family.name);
            let target = &mut out[index];
            target.help = target.help.take().or(family.help);
            target.kind = target.kind.take().or(family.kind);
            for sample in family.samples {
                let node_level = sample.label("pod").is_none();
                let existing = target
                    .samples
                    .iter_mut()
                    .find(|s| node_level && s.name == sample.name && s.labels == sample.labels);
                match existing {
                    Some(existing) => merge_sample(existing, &sample),
                    None => target.samples.push(sample),
                }
            }
        }
    }
    out
}

fn merge_sample(into: &mut Sample, other: &Sample) {
    let (Ok(a), Ok(b)) = (into.value.parse::<f64>(), other.value.parse::<f64>()) else {
        return;
    };
    let merged = if into.name.ends_with("scrape_error") {
        a.max(b)
    } else {
        a + b
    };
    into.value = merged.to_string();
    let newest = [into.timestamp.as_deref(), other.timestamp.as_deref()]
        .into_iter()
        .flatten()
        .filter_map(|t| t.parse::<i64>().ok())
        .max();
    if let Some(newest) = newest {
        into.timestamp = Some(newest.to_string());
    }
}

/// Renders families in the Prometheus text format (families without samples are left out).
pub fn render_metrics(families: &[Family]) -> String {
    let mut out = String::new();
    for family in families.iter().filter(|f| !f.samples.is_empty()) {
        if let Some(help) = &family.help {
            out.push_str(&format!("# HELP {} {help}\n", family.name));
        }
        if let Some(kind) = &family.kind {
            out.push_str(&format!("# TYPE {} {kind}\n", family.name));
        }
        for sample in &family.samples {
            out.push_str(&sample.name);
            if !sample.labels.is_empty() {
                let labels: Vec<String> = sample
                    .labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                    .collect();
                out.push_str(&format!("{{{}}}", labels.join(",")));
            }
            out.push(' ');
            out.push_str(&sample.value);
            if let Some(timestamp) = &sample.timestamp {
                out.push(' ');
                out.push_str(timestamp);
            }
            out.push('\n');
        }
    }
    out
}

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxier::mapping::VirtualPodRef;

    fn index() -> PodIndex {
        PodIndex::from([(
            ("mount".to_owned(), "web-123".to_owned()),
            VirtualPodRef {
                namespace: "team".into(),
                name: "web".into(),
                uid: "vuid".into(),
            },
        )])
    }

    fn physical_summary(node: &str, cpu: u64) -> Value {
        json!({
            "node": {"nodeName": node, "startTime": "2024-01-01T00:00:00Z",
                     "cpu": {"time": format!("2024-01-01T00:00:0{cpu}Z"), "usageNanoCores": cpu * 1000},
                     "memory": {"time": "2024-01-01T00:00:00Z", "workingSetBytes": 100}},
            "pods": [
                {"podRef": {"name": "web-123", "namespace": "mount", "uid": "puid"},
                 "cpu": {"usageNanoCores": 5},
                 "volume": [{"name": "data", "pvcRef": {"name": "data-abc", "namespace": "mount"}}]},
                {"podRef": {"name": "other-tenant", "namespace": "prod", "uid": "x"}},
                {"noPodRef": true},
            ],
        })
    }

    #[test]
    fn summaries_keep_only_mapped_pods_under_virtual_names() {
        let got = rewrite_summary(physical_summary("n1", 1), "vnode-n1", &index());
        assert_eq!(got["node"]["nodeName"], "vnode-n1");
        assert_eq!(got["node"]["startTime"], "2024-01-01T00:00:00Z");
        assert_eq!(got["pods"].as_array().unwrap().len(), 1);
        assert_eq!(
            got["pods"][0]["podRef"],
            json!({"name": "web", "namespace": "team", "uid": "vuid"})
        );
        assert_eq!(got["pods"][0]["cpu"]["usageNanoCores"], 5);
        assert_eq!(got["pods"][0]["volume"], json!([{"name": "data"}]));
        assert_eq!(
            rewrite_summary(json!("garbage"), "vnode-n1", &index()),
            empty_summary("vnode-n1")
        );
        let no_pods = rewrite_summary(json!({"node": {"nodeName": "n1"}}), "v", &index());
        assert_eq!(no_pods, json!({"node": {"nodeName": "v"}, "pods": []}));
    }

    #[test]
    fn summaries_combine() {
        let one = rewrite_summary(physical_summary("n1", 1), "vnode-n1", &index());
        assert_eq!(combine_summaries("b1", vec![one.clone()]), one);
        assert_eq!(combine_summaries("b1", vec![]), empty_summary("b1"));
        let two = rewrite_summary(physical_summary("n2", 3), "vnode-n2", &PodIndex::new());
        let combined = combine_summaries("b1", vec![one, two, empty_summary("vnode-n3")]);
        assert_eq!(combined["node"]["nodeName"], "b1");
        assert_eq!(combined["node"]["cpu"]["usageNanoCores"], 4000);
        assert_eq!(combined["node"]["cpu"]["time"], "2024-01-01T00:00:03Z");
        assert_eq!(combined["node"]["memory"]["workingSetBytes"], 200);
        assert_eq!(combined["pods"].as_array().unwrap().len(), 1);
    }

    const NODE_METRICS: &str = r#"# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="mount",pod="web-123"} 1.5 1700000000000
container_cpu_usage_seconds_total{container="db",namespace="prod",pod="other-tenant"} 9 1700000000000
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 10 1700000000000
# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="mount",pod="web-123"} 2048 1700000000000
# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
"#;

    #[test]
    fn samples_parse() {
        let cases = [
            (
                r#"a_b{x="1",y="q\"uo\\te\n"} 3.5 17"#,
                Some(Sample {
                    name: "a_b".into(),
                    labels: vec![("x".into(), "1".into()), ("y".into(), "q\"uo\\te\n".into())],
                    value: "3.5".into(),
                    timestamp: Some("17".into()),
                }),
            ),
            (
                "up 1",
                Some(Sample {
                    name: "up".into(),
                    labels: vec![],
                    value: "1".into(),
                    timestamp: None,
                }),
            ),
            (
                r#"m{a="x", b="y",} +Inf"#,
                Some(Sample {
                    name: "m".into(),
                    labels: vec![("a".into(), "x".into()), ("b".into(), "y".into())],
                    value: "+Inf".into(),
                    timestamp: None,
                }),
            ),
            (r#"m{a="unterminated} 1"#, None),
            ("m", None),
            ("9m 1", None),
            ("m 1 2 3", None),
        ];
        for (line, want) in cases {
            assert_eq!(parse_sample(line), want, "{line}");
        }
    }

    #[test]
    fn metrics_round_trip_and_rewrite() {
        let families = parse_metrics(NODE_METRICS);
        assert_eq!(render_metrics(&families), NODE_METRICS);
        let rewritten = render_metrics(&rewrite_metrics(families, &index()));
        assert!(rewritten.contains(
            "container_cpu_usage_seconds_total{container=\"app\",namespace=\"team\",pod=\"web\"} 1.5 1700000000000\n"
        ), "{rewritten}");
        assert!(
            rewritten.contains("pod_memory_working_set_bytes{namespace=\"team\",pod=\"web\"} 2048")
        );
        assert!(!rewritten.contains("other-tenant"), "{rewritten}");
        assert!(!rewritten.contains("mount"), "{rewritten}");
        assert!(rewritten.contains("node_cpu_usage_seconds_total 10 1700000000000\n"));
    }

    #[test]
    fn metrics_combine_across_nodes() {
        let second = NODE_METRICS
            .replace(
                "node_cpu_usage_seconds_total 10 1700000000000",
                "node_cpu_usage_seconds_total 2.5 1700000001000",
            )
            .replace("resource_scrape_error 0", "resource_scrape_error 1");
        let combined = combine_metrics(vec![
            rewrite_metrics(parse_metrics(NODE_METRICS), &index()),
            rewrite_metrics(parse_metrics(&second), &PodIndex::new()),
        ]);
        let text = render_metrics(&combined);
        assert!(
            text.contains("node_cpu_usage_seconds_total 12.5 1700000001000\n"),
            "{text}"
        );
        assert!(text.contains("resource_scrape_error 1\n"), "{text}");
        assert_eq!(
            text.matches("# TYPE node_cpu_usage_seconds_total counter")
                .count(),
            1
        );
        assert_eq!(text.matches("pod=\"web\"").count(), 2, "{text}");
    }

    #[test]
    fn samples_without_help_form_their_own_family() {
        let families = parse_metrics("foo 1\n# TYPE bar gauge\nbar 2\nbaz_total 3\n# junk\n");
        let names: Vec<&str> = families.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["foo", "bar", "baz_total"]);
        assert_eq!(families[1].kind.as_deref(), Some("gauge"));
    }
}
