//! The cells of one Table row per built-in kind, as kube-apiserver's printers
//! (`pkg/printers/internalversion/printers.go`) compute them with every column (`wide`).

use super::duration::{human_duration, since};
use jiff::Timestamp;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// Which printer renders a kind's rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Printer {
    /// Pods (`v1`).
    Pod,
    /// Nodes (`v1`).
    Node,
    /// Namespaces (`v1`).
    Namespace,
    /// ConfigMaps (`v1`).
    ConfigMap,
    /// Secrets (`v1`).
    Secret,
    /// Services (`v1`).
    Service,
    /// ServiceAccounts (`v1`).
    ServiceAccount,
    /// Endpoints (`v1`).
    Endpoints,
    /// EndpointSlices (`discovery.k8s.io/v1`).
    EndpointSlice,
    /// Events (`v1`).
    Event,
    /// Events (`events.k8s.io/v1`).
    EventsV1,
    /// Deployments (`apps/v1`).
    Deployment,
    /// ReplicaSets (`apps/v1`).
    ReplicaSet,
    /// StatefulSets (`apps/v1`).
    StatefulSet,
    /// DaemonSets (`apps/v1`).
    DaemonSet,
    /// Jobs (`batch/v1`).
    Job,
    /// CronJobs (`batch/v1`).
    CronJob,
    /// Leases (`coordination.k8s.io/v1`).
    Lease,
    /// PersistentVolumes (`v1`).
    PersistentVolume,
    /// PersistentVolumeClaims (`v1`).
    PersistentVolumeClaim,
}

impl Printer {
    /// The printer kube-apiserver registers for a group and resource, if any (the others get
    /// the default `Name`, `Created At` table).
    pub fn for_resource(group: &str, plural: &str) -> Option<Printer> {
        Some(match (group, plural) {
            ("", "pods") => Printer::Pod,
            ("", "nodes") => Printer::Node,
            ("", "namespaces") => Printer::Namespace,
            ("", "configmaps") => Printer::ConfigMap,
            ("", "secrets") => Printer::Secret,
            ("", "services") => Printer::Service,
            ("", "serviceaccounts") => Printer::ServiceAccount,
            ("", "endpoints") => Printer::Endpoints,
            ("discovery.k8s.io", "endpointslices") => Printer::EndpointSlice,
            ("", "events") => Printer::Event,
            ("events.k8s.io", "events") => Printer::EventsV1,
            ("apps", "deployments") => Printer::Deployment,
            ("apps", "replicasets") => Printer::ReplicaSet,
            ("apps", "statefulsets") => Printer::StatefulSet,
            ("apps", "daemonsets") => Printer::DaemonSet,
            ("batch", "jobs") => Printer::Job,
            ("batch", "cronjobs") => Printer::CronJob,
            ("coordination.k8s.io", "leases") => Printer::Lease,
            ("", "persistentvolumes") => Printer::PersistentVolume,
            ("", "persistentvolumeclaims") => Printer::PersistentVolumeClaim,
            _ => return None,
        })
    }

    /// The key of this printer's columns in `columns.json`.
    pub fn columns_key(self) -> &'static str {
        match self {
            Printer::Pod => "pods",
            Printer::Node => "nodes",
            Printer::Namespace => "namespaces",
            Printer::ConfigMap => "configmaps",
            Printer::Secret => "secrets",
            Printer::Service => "services",
            Printer::ServiceAccount => "serviceaccounts",
            Printer::Endpoints => "endpoints",
            Printer::EndpointSlice => "endpointslices",
            Printer::Event | Printer::EventsV1 => "events",
            Printer::Deployment => "deployments",
            Printer::ReplicaSet => "replicasets",
            Printer::StatefulSet => "statefulsets",
            Printer::DaemonSet => "daemonsets",
            Printer::Job => "jobs",
            Printer::CronJob => "cronjobs",
            Printer::Lease => "leases",
            Printer::PersistentVolume => "persistentvolumes",
            Printer::PersistentVolumeClaim => "persistentvolumeclaims",
        }
    }

    /// The row's cells and its conditions (only finished pods have some).
    pub fn row(self, obj: &Value, now: Timestamp) -> (Vec<Value>, Option<Value>) {
        let name = json!(text(obj, "/metadata/name"));
        let age = json!(since(
            obj.pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str),
            now
        ));
        let cells = match self {
            Printer::Pod => return pod(obj, now),
            Printer::Node => node(obj, name, age),
            Printer::Namespace => vec![name, json!(text(obj, "/status/phase")), age],
            Printer::ConfigMap => {
                let count = len(obj, "/data") + len(obj, "/binaryData");
                vec![name, json!(count), age]
            }
            Printer::Secret => vec![
                name,
                json!(text(obj, "/type")),
                json!(len(obj, "/data")),
                age,
            ],
            Printer::Service => service(obj, name, age),
            Printer::ServiceAccount => vec![name, age],
            Printer::Endpoints => vec![name, json!(endpoints(obj)), age],
            Printer::EndpointSlice => endpoint_slice(obj, name, age),
            Printer::Event => event(obj, now),
            Printer::EventsV1 => event(&core_event(obj), now),
            Printer::Deployment => {
                let (containers, images) = containers(obj, "/spec/template/spec/containers");
                vec![
                    name,
                    json!(format!(
                        "{}/{}",
                        int(obj, "/status/readyReplicas"),
                        int(obj, "/spec/replicas")
                    )),
                    json!(int(obj, "/status/updatedReplicas")),
                    json!(int(obj, "/status/availableReplicas")),
                    age,
                    json!(containers),
                    json!(images),
                    json!(selector_string(obj.pointer("/spec/selector"))),
                ]
            }
            Printer::ReplicaSet => {
                let (containers, images) = containers(obj, "/spec/template/spec/containers");
                vec![
                    name,
                    json!(int(obj, "/spec/replicas")),
                    json!(int(obj, "/status/replicas")),
                    json!(int(obj, "/status/readyReplicas")),
                    age,
                    json!(containers),
                    json!(images),
                    json!(selector_string(obj.pointer("/spec/selector"))),
                ]
            }
            Printer::StatefulSet => {
                let (containers, images) = containers(obj, "/spec/template/spec/containers");
                vec![
                    name,
                    json!(format!(
                        "{}/{}",
                        int(obj, "/status/readyReplicas"),
                        int(obj, "/spec/replicas")
                    )),
                    age,
                    json!(containers),
                    json!(images),
                ]
            }
            Printer::DaemonSet => {
                let (containers, images) = containers(obj, "/spec/template/spec/containers");
                vec![
                    name,
                    json!(int(obj, "/status/desiredNumberScheduled")),
                    json!(int(obj, "/status/currentNumberScheduled")),
                    json!(int(obj, "/status/numberReady")),
                    json!(int(obj, "/status/updatedNumberScheduled")),
                    json!(int(obj, "/status/numberAvailable")),
                    json!(format_labels(
                        obj.pointer("/spec/template/spec/nodeSelector")
                    )),
                    age,
                    json!(containers),
                    json!(images),
                    json!(format_label_selector(obj.pointer("/spec/selector"))),
                ]
            }
            Printer::Job => job(obj, name, age, now),
            Printer::CronJob => {
                let (containers, images) =
                    containers(obj, "/spec/jobTemplate/spec/template/spec/containers");
                let last = match obj
                    .pointer("/status/lastScheduleTime")
                    .and_then(Value::as_str)
                {
                    Some(t) => since(Some(t), now),
                    None => "<none>".into(),
                };
                vec![
                    name,
                    json!(text(obj, "/spec/schedule")),
                    json!(opt_text(obj, "/spec/timeZone").unwrap_or("<none>")),
                    json!(
                        match obj.pointer("/spec/suspend").and_then(Value::as_bool) {
                            None => "<unset>",
                            Some(true) => "True",
                            Some(false) => "False",
                        }
                    ),
                    json!(len(obj, "/status/active")),
                    json!(last),
                    age,
                    json!(containers),
                    json!(images),
                    json!(format_label_selector(
                        obj.pointer("/spec/jobTemplate/spec/selector")
                    )),
                ]
            }
            Printer::Lease => vec![name, json!(text(obj, "/spec/holderIdentity")), age],
            Printer::PersistentVolume => persistent_volume(obj, name, age),
            Printer::PersistentVolumeClaim => persistent_volume_claim(obj, name, age),
        };
        (cells, None)
    }
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    opt_text(obj, pointer).unwrap_or("")
}

fn opt_text<'a>(obj: &'a Value, pointer: &str) -> Option<&'a str> {
    obj.pointer(pointer).and_then(Value::as_str)
}

fn int(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn array<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Entries of a map or items of a list.
fn len(obj: &Value, pointer: &str) -> usize {
    match obj.pointer(pointer) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

/// `layoutContainerCells`: names and images joined with commas.
fn containers(obj: &Value, pointer: &str) -> (String, String) {
    let list = array(obj, pointer);
    let names: Vec<&str> = list.iter().map(|c| text(c, "/name")).collect();
    let images: Vec<&str> = list.iter().map(|c| text(c, "/image")).collect();
    (names.join(","), images.join(","))
}

/// `labels.FormatLabels`: `k=v` sorted by key, `<none>` when empty.
fn format_labels(map: Option<&Value>) -> String {
    let pairs: Vec<String> = map
        .and_then(Value::as_object)
        .map(|m| {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            keys.iter()
                .map(|k| format!("{k}={}", m[k.as_str()].as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    if pairs.is_empty() {
        "<none>".into()
    } else {
        pairs.join(",")
    }
}

/// `metav1.LabelSelectorAsSelector(s).String()`: requirements sorted by key, `k=v`,
/// `k in (a,b)`, `k notin (a,b)`, `k`, `!k`; empty for a missing or empty selector.
pub fn selector_string(selector: Option<&Value>) -> String {
    let Some(selector) = selector else {
        return String::new();
    };
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            requirements.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))));
        }
    }
    for expr in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        let key = text(expr, "/key");
        let mut values: Vec<&str> = array(expr, "/values")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let rendered = match text(expr, "/operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return "<invalid>".into(),
        };
        requirements.push((key.to_string(), rendered));
    }
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    requirements
        .into_iter()
        .map(|(_, r)| r)
        .collect::<Vec<_>>()
        .join(",")
}

/// `metav1.FormatLabelSelector`: as `selector_string`, `<none>` when empty.
fn format_label_selector(selector: Option<&Value>) -> String {
    let s = selector_string(selector);
    if s.is_empty() { "<none>".into() } else { s }
}

fn is_restartable_init_container(container: Option<&Value>) -> bool {
    container.is_some_and(|c| text(c, "/restartPolicy") == "Always")
}

/// `printPod`: READY, STATUS (the reason a user sees: `Init:0/1`, `CrashLoopBackOff`,
/// `Terminating`, ...), RESTARTS (`2 (5m ago)`), AGE, IP, NODE, NOMINATED NODE, READINESS GATES.
fn pod(obj: &Value, now: Timestamp) -> (Vec<Value>, Option<Value>) {
    let spec_containers = array(obj, "/spec/containers");
    let init_containers = array(obj, "/spec/initContainers");
    let mut total = spec_containers.len();
    let mut ready = 0usize;
    let mut restarts = 0i64;
    let mut restartable_restarts = 0i64;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_restartable_restart: Option<Timestamp> = None;
    let phase = text(obj, "/status/phase");
    let mut reason = opt_text(obj, "/status/reason")
        .filter(|r| !r.is_empty())
        .unwrap_or(phase)
        .to_string();
    for condition in array(obj, "/status/conditions") {
        if text(condition, "/type") == "PodScheduled"
            && text(condition, "/reason") == "SchedulingGated"
        {
            reason = "SchedulingGated".into();
        }
    }
    let conditions = match phase {
        "Succeeded" => Some(json!([{"type": "Completed", "status": "True",
            "reason": "Succeeded", "message": "The pod has completed successfully."}])),
        "Failed" => Some(json!([{"type": "Completed", "status": "True",
            "reason": "Failed", "message": "The pod failed."}])),
        _ => None,
    };
    let init_by_name = |name: &str| init_containers.iter().find(|c| text(c, "/name") == name);
    total += init_containers
        .iter()
        .filter(|c| is_restartable_init_container(Some(c)))
        .count();
    let finished_at = |status: &Value| {
        opt_text(status, "/lastState/terminated/finishedAt")
            .and_then(|t| t.parse::<Timestamp>().ok())
    };
    let later = |a: Option<Timestamp>, b: Option<Timestamp>| match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };

    let mut initializing = false;
    let init_statuses = array(obj, "/status/initContainerStatuses");
    for (i, status) in init_statuses.iter().enumerate() {
        restarts += int(status, "/restartCount");
        last_restart = later(last_restart, finished_at(status));
        let restartable = is_restartable_init_container(init_by_name(text(status, "/name")));
        if restartable {
            restartable_restarts += int(status, "/restartCount");
            last_restartable_restart = later(last_restartable_restart, finished_at(status));
        }
        let terminated = status.pointer("/state/terminated");
        let waiting_reason = text(status, "/state/waiting/reason");
        if terminated.is_some_and(|t| int(t, "/exitCode") == 0) {
            continue;
        }
        if restartable && status.get("started").and_then(Value::as_bool) == Some(true) {
            if status.get("ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            reason = match text(t, "/reason") {
                "" if int(t, "/signal") != 0 => format!("Init:Signal:{}", int(t, "/signal")),
                "" => format!("Init:ExitCode:{}", int(t, "/exitCode")),
                r => format!("Init:{r}"),
            };
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            reason = format!("Init:{waiting_reason}");
        } else {
            reason = format!("Init:{i}/{}", init_containers.len());
        }
        initializing = true;
        break;
    }

    let initialized = array(obj, "/status/conditions")
        .iter()
        .any(|c| text(c, "/type") == "Initialized" && text(c, "/status") == "True");
    if !initializing || initialized {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        for status in array(obj, "/status/containerStatuses").iter().rev() {
            restarts += int(status, "/restartCount");
            last_restart = later(last_restart, finished_at(status));
            let waiting = text(status, "/state/waiting/reason");
            let terminated = status.pointer("/state/terminated");
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if let Some(t) = terminated {
                reason = match text(t, "/reason") {
                    "" if int(t, "/signal") != 0 => format!("Signal:{}", int(t, "/signal")),
                    "" => format!("ExitCode:{}", int(t, "/exitCode")),
                    r => r.to_string(),
                };
            } else if status.get("ready").and_then(Value::as_bool) == Some(true)
                && status.pointer("/state/running").is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = array(obj, "/status/conditions")
                .iter()
                .any(|c| text(c, "/type") == "Ready" && text(c, "/status") == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.into();
        }
    }

    let deleting = obj.pointer("/metadata/deletionTimestamp").is_some();
    if deleting && text(obj, "/status/reason") == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }

    let restarts_cell = match last_restart {
        Some(at) if restarts != 0 => {
            format!(
                "{restarts} ({} ago)",
                human_duration(now.duration_since(at))
            )
        }
        _ => restarts.to_string(),
    };
    let none_if_empty = |s: &str| {
        if s.is_empty() {
            "<none>".to_string()
        } else {
            s.to_string()
        }
    };
    let pod_ip = array(obj, "/status/podIPs")
        .first()
        .map(|ip| text(ip, "/ip"))
        .unwrap_or_else(|| text(obj, "/status/podIP"));
    let gates = array(obj, "/spec/readinessGates");
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let conditions = array(obj, "/status/conditions");
        let true_count = gates
            .iter()
            .filter(|g| {
                conditions
                    .iter()
                    .find(|c| text(c, "/type") == text(g, "/conditionType"))
                    .is_some_and(|c| text(c, "/status") == "True")
            })
            .count();
        format!("{true_count}/{}", gates.len())
    };
    let cells = vec![
        json!(text(obj, "/metadata/name")),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_cell),
        json!(since(opt_text(obj, "/metadata/creationTimestamp"), now)),
        json!(none_if_empty(pod_ip)),
        json!(none_if_empty(text(obj, "/spec/nodeName"))),
        json!(none_if_empty(text(obj, "/status/nominatedNodeName"))),
        json!(readiness_gates),
    ];
    (cells, conditions)
}

/// `printNode`: `Ready` / `NotReady` / `Unknown`, plus `SchedulingDisabled`; roles from the
/// `node-role.kubernetes.io/<role>` and `kubernetes.io/role` labels.
fn node(obj: &Value, name: Value, age: Value) -> Vec<Value> {
    let mut status: Vec<String> = Vec::new();
    if let Some(ready) = array(obj, "/status/conditions")
        .iter()
        .rev()
        .find(|c| text(c, "/type") == "Ready")
    {
        status.push(if text(ready, "/status") == "True" {
            "Ready".into()
        } else {
            "NotReady".into()
        });
    }
    if status.is_empty() {
        status.push("Unknown".into());
    }
    if obj.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled".into());
    }
    let mut roles = BTreeSet::new();
    if let Some(labels) = obj.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if k == "kubernetes.io/role"
                && let Some(v) = v.as_str().filter(|v| !v.is_empty())
            {
                roles.insert(v.to_string());
            }
        }
    }
    let roles = if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    };
    let address = |kind: &str| {
        array(obj, "/status/addresses")
            .iter()
            .find(|a| text(a, "/type") == kind)
            .map(|a| text(a, "/address").to_string())
            .unwrap_or_else(|| "<none>".into())
    };
    let unknown_if_empty = |pointer: &str| match text(obj, pointer) {
        "" => "<unknown>".to_string(),
        s => s.to_string(),
    };
    vec![
        name,
        json!(status.join(",")),
        json!(roles),
        age,
        json!(text(obj, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(unknown_if_empty("/status/nodeInfo/osImage")),
        json!(unknown_if_empty("/status/nodeInfo/kernelVersion")),
        json!(unknown_if_empty("/status/nodeInfo/containerRuntimeVersion")),
    ]
}

/// `printService`: TYPE, CLUSTER-IP, EXTERNAL-IP (`<pending>` for a LoadBalancer without
/// ingress), PORT(S) (`80/TCP`, `80:30080/TCP`), AGE, SELECTOR.
fn service(obj: &Value, name: Value, age: Value) -> Vec<Value> {
    let svc_type = text(obj, "/spec/type");
    let cluster_ip = array(obj, "/spec/clusterIPs")
        .first()
        .and_then(Value::as_str)
        .or_else(|| opt_text(obj, "/spec/clusterIP").filter(|s| !s.is_empty()))
        .unwrap_or("<none>");
    let external_ips: Vec<String> = array(obj, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let external = match svc_type {
        "ClusterIP" | "NodePort" | "" => {
            if external_ips.is_empty() {
                "<none>".to_string()
            } else {
                external_ips.join(",")
            }
        }
        "LoadBalancer" => {
            let ingress: Vec<String> = array(obj, "/status/loadBalancer/ingress")
                .iter()
                .filter_map(|i| {
                    opt_text(i, "/ip")
                        .filter(|s| !s.is_empty())
                        .or_else(|| opt_text(i, "/hostname").filter(|s| !s.is_empty()))
                })
                .map(str::to_string)
                .collect();
            let all: Vec<String> = ingress.into_iter().chain(external_ips).collect();
            if all.is_empty() {
                "<pending>".to_string()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => text(obj, "/spec/externalName").to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports: Vec<String> = array(obj, "/spec/ports")
        .iter()
        .map(|p| {
            let protocol = opt_text(p, "/protocol").unwrap_or("TCP");
            match int(p, "/nodePort") {
                0 => format!("{}/{protocol}", int(p, "/port")),
                node_port => format!("{}:{node_port}/{protocol}", int(p, "/port")),
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".to_string()
    } else {
        ports.join(",")
    };
    vec![
        name,
        json!(if svc_type.is_empty() {
            "ClusterIP"
        } else {
            svc_type
        }),
        json!(cluster_ip),
        json!(external),
        json!(ports),
        age,
        json!(format_labels(obj.pointer("/spec/selector"))),
    ]
}

/// `listWithMoreString`: at most three entries, then ` + N more...`; `<unset>` when empty.
fn list_with_more(list: &[String], count: usize) -> String {
    const MAX: usize = 3;
    let shown = list.iter().take(MAX).cloned().collect::<Vec<_>>().join(",");
    if count > MAX {
        format!("{shown} + {} more...", count - MAX)
    } else if shown.is_empty() {
        "<unset>".into()
    } else {
        shown
    }
}

fn endpoint_slice(obj: &Value, name: Value, age: Value) -> Vec<Value> {
    let ports: Vec<String> = array(obj, "/ports")
        .iter()
        .map(
            |p| match (p.get("port").and_then(Value::as_i64), opt_text(p, "/name")) {
                (Some(port), _) => port.to_string(),
                (None, Some(name)) => name.to_string(),
                (None, None) => "*".into(),
            },
        )
        .collect();
    let addresses: Vec<String> = array(obj, "/endpoints")
        .iter()
        .flat_map(|e| array(e, "/addresses"))
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    vec![
        name,
        json!(text(obj, "/addressType")),
        json!(list_with_more(&ports, ports.len())),
        json!(list_with_more(&addresses, addresses.len())),
        age,
    ]
}

/// `formatEndpoints`: `ip:port` per address and port, at most three, `<none>` without subsets.
fn endpoints(obj: &Value) -> String {
    let subsets = array(obj, "/subsets");
    if subsets.is_empty() {
        return "<none>".into();
    }
    let mut list = Vec::new();
    for subset in subsets {
        let ips: Vec<&str> = array(subset, "/addresses")
            .iter()
            .map(|a| text(a, "/ip"))
            .collect();
        let ports = array(subset, "/ports");
        if ports.is_empty() {
            list.extend(ips.iter().map(|ip| ip.to_string()));
            continue;
        }
        for port in ports {
            for ip in &ips {
                let port = int(port, "/port");
                list.push(if ip.contains(':') {
                    format!("[{ip}]:{port}")
                } else {
                    format!("{ip}:{port}")
                });
            }
        }
    }
    let count = list.len();
    let shown = list.iter().take(3).cloned().collect::<Vec<_>>().join(",");
    if count > 3 {
        format!("{shown} + {} more...", count - 3)
    } else {
        shown
    }
}

/// An `events.k8s.io/v1` Event in core/v1 terms, as kube-apiserver converts it before
/// printing.
fn core_event(obj: &Value) -> Value {
    let mut out = Map::new();
    out.insert(
        "metadata".into(),
        obj.get("metadata").cloned().unwrap_or_default(),
    );
    let renames = [
        ("regarding", "involvedObject"),
        ("note", "message"),
        ("reason", "reason"),
        ("type", "type"),
        ("deprecatedSource", "source"),
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
        ("deprecatedCount", "count"),
        ("reportingController", "reportingComponent"),
        ("reportingInstance", "reportingInstance"),
        ("eventTime", "eventTime"),
        ("series", "series"),
    ];
    for (from, to) in renames {
        if let Some(v) = obj.get(from) {
            out.insert(to.into(), v.clone());
        }
    }
    Value::Object(out)
}

/// `printEvent`: LAST SEEN, TYPE, REASON, OBJECT (`kind/name`), SUBOBJECT, SOURCE, MESSAGE,
/// FIRST SEEN, COUNT, NAME.
fn event(obj: &Value, now: Timestamp) -> Vec<Value> {
    let first = match opt_text(obj, "/firstTimestamp") {
        Some(t) => since(Some(t), now),
        None => since(opt_text(obj, "/eventTime"), now),
    };
    let mut last = match opt_text(obj, "/lastTimestamp") {
        Some(t) => since(Some(t), now),
        None => first.clone(),
    };
    let mut count = int(obj, "/count");
    if let Some(series) = obj.get("series").filter(|s| s.is_object()) {
        last = since(opt_text(series, "/lastObservedTime"), now);
        count = int(series, "/count");
    } else if count == 0 {
        count = 1;
    }
    let kind = text(obj, "/involvedObject/kind").to_ascii_lowercase();
    let target = match text(obj, "/involvedObject/name") {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let first_non_empty = |a: &str, b: &str| {
        if a.is_empty() {
            b.to_string()
        } else {
            a.to_string()
        }
    };
    let component = first_non_empty(
        text(obj, "/source/component"),
        text(obj, "/reportingComponent"),
    );
    let instance = first_non_empty(text(obj, "/source/host"), text(obj, "/reportingInstance"));
    let source = [component, instance]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ");
    vec![
        json!(last),
        json!(text(obj, "/type")),
        json!(text(obj, "/reason")),
        json!(target),
        json!(text(obj, "/involvedObject/fieldPath")),
        json!(source),
        json!(text(obj, "/message").trim()),
        json!(first),
        json!(count),
        json!(text(obj, "/metadata/name")),
    ]
}

fn has_condition(obj: &Value, kind: &str) -> bool {
    array(obj, "/status/conditions")
        .iter()
        .any(|c| text(c, "/type") == kind && text(c, "/status") == "True")
}

/// `printJob`: STATUS, COMPLETIONS (`0/1`, `0/1 of 3`), DURATION, AGE, CONTAINERS, IMAGES,
/// SELECTOR.
fn job(obj: &Value, name: Value, age: Value, now: Timestamp) -> Vec<Value> {
    let succeeded = int(obj, "/status/succeeded");
    let completions = match obj.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int(obj, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let parse = |p: &str| opt_text(obj, p).and_then(|t| t.parse::<Timestamp>().ok());
    let duration = match (parse("/status/startTime"), parse("/status/completionTime")) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now.duration_since(start)),
        (Some(start), Some(end)) => human_duration(end.duration_since(start)),
    };
    let status = if has_condition(obj, "Complete") {
        "Complete"
    } else if has_condition(obj, "Failed") {
        "Failed"
    } else if obj.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if has_condition(obj, "Suspended") {
        "Suspended"
    } else if has_condition(obj, "FailureTarget") {
        "FailureTarget"
    } else if has_condition(obj, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let (containers, images) = containers(obj, "/spec/template/spec/containers");
    vec![
        name,
        json!(status),
        json!(completions),
        json!(duration),
        age,
        json!(containers),
        json!(images),
        json!(format_label_selector(obj.pointer("/spec/selector"))),
    ]
}

/// `GetAccessModesAsString`: the abbreviations in a fixed order, each once.
fn access_modes(obj: &Value, pointer: &str) -> String {
    let modes: Vec<&str> = array(obj, pointer)
        .iter()
        .filter_map(Value::as_str)
        .collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| modes.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

fn quantity(obj: &Value, pointer: &str) -> String {
    match obj.pointer(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".into(),
    }
}

fn phase_or_terminating(obj: &Value) -> String {
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating".into()
    } else {
        text(obj, "/status/phase").to_string()
    }
}

fn storage_class(obj: &Value) -> String {
    opt_text(
        obj,
        "/metadata/annotations/volume.beta.kubernetes.io~1storage-class",
    )
    .or_else(|| opt_text(obj, "/spec/storageClassName"))
    .unwrap_or("")
    .to_string()
}

fn persistent_volume(obj: &Value, name: Value, age: Value) -> Vec<Value> {
    let claim = match obj.pointer("/spec/claimRef") {
        Some(r) if r.is_object() => format!("{}/{}", text(r, "/namespace"), text(r, "/name")),
        _ => String::new(),
    };
    vec![
        name,
        json!(quantity(obj, "/spec/capacity/storage")),
        json!(access_modes(obj, "/spec/accessModes")),
        json!(text(obj, "/spec/persistentVolumeReclaimPolicy")),
        json!(phase_or_terminating(obj)),
        json!(claim),
        json!(storage_class(obj)),
        json!(opt_text(obj, "/spec/volumeAttributesClassName").unwrap_or("<unset>")),
        json!(text(obj, "/status/reason")),
        age,
        json!(opt_text(obj, "/spec/volumeMode").unwrap_or("<unset>")),
    ]
}

fn persistent_volume_claim(obj: &Value, name: Value, age: Value) -> Vec<Value> {
    let volume = text(obj, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity(obj, "/status/capacity/storage"),
            access_modes(obj, "/status/accessModes"),
        )
    };
    vec![
        name,
        json!(phase_or_terminating(obj)),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(storage_class(obj)),
        json!(
            opt_text(obj, "/spec/volumeAttributesClassName")
                .filter(|s| !s.is_empty())
                .unwrap_or("<unset>")
        ),
        age,
        json!(opt_text(obj, "/spec/volumeMode").unwrap_or("<unset>")),
    ]
}
