//! The simulated kubelet: the nodes it runs ([`SimNode`]), their Leases and advertised kubelet
//! endpoint, pods it "starts" (status, IPs, what containers print) and the container logs it
//! serves.

use super::Simulator;
use super::node_lifecycle::{ready_conditions, set_node_ready};
use crate::apiserver::api::WriteContext;
use crate::apiserver::error::ApiError;
use crate::apiserver::resources::GroupResource;
use crate::sim::controllers::objects::at;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    /// Wakes the followers of logs when a line is printed.
    appended: tokio::sync::Notify,
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

    /// The names of the nodes this kubelet runs (running or stopped).
    pub(super) fn node_names(&self) -> Vec<String> {
        Self::lock(&self.nodes).keys().cloned().collect()
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
        self.appended.notify_waiters();
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

    pub(super) fn forget_pod(&self, namespace: &str, pod: &str) {
        Self::lock(&self.logs).retain(|(ns, p, _), _| !(ns == namespace && p == pod));
    }

    fn allocate_ip(&self) -> String {
        let mut next = Self::lock(&self.next_ip);
        *next += 1;
        let n = *next;
        format!("10.244.{}.{}", (n / 250) % 256, n % 250 + 2)
    }
}

impl Simulator {
    /// Creates a simulated node that this cluster's kubelet runs.
    pub fn add_node(&self, node: &SimNode) -> Result<(), ApiError> {
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
        let now = crate::apiserver::meta::now_rfc3339();
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
                    "machineID": crate::apiserver::meta::new_uid(), "systemUUID": crate::apiserver::meta::new_uid(),
                    "bootID": crate::apiserver::meta::new_uid(), "kernelVersion": "6.1.0-sandbox",
                    "osImage": "kube-sandbox", "containerRuntimeVersion": "sandbox://1.0",
                    "kubeletVersion": self.state.options.git_version, "kubeProxyVersion": self.state.options.git_version,
                    "operatingSystem": "linux", "architecture": "amd64"
                }
            }
        });
        let rt = self
            .state
            .resource_type("", "nodes")
            .ok_or_else(|| ApiError::internal("nodes are not served"))?;
        match self
            .state
            .create(&rt, "v1", "", body, &WriteContext::system("kubelet"))
        {
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
        let Some(rt) = self.state.resource_type("", "nodes") else {
            return;
        };
        let names: Vec<String> = KubeletState::lock(&self.kubelet.nodes)
            .keys()
            .cloned()
            .collect();
        let ctx = WriteContext::system("kubelet");
        for name in names {
            let _ =
                self.state
                    .update_with(&rt, "v1", "", &name, Some("status"), &ctx, None, |old| {
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
    pub fn stop_node(&self, name: &str) {
        KubeletState::lock(&self.kubelet.stopped).insert(name.to_string());
    }

    /// Restarts the kubelet of a stopped simulated node.
    pub fn start_node(&self, name: &str) {
        KubeletState::lock(&self.kubelet.stopped).remove(name);
        self.renew_node_lease(name);
        set_node_ready(
            &self.state,
            name,
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        );
    }

    pub(super) fn renew_node_lease(&self, node: &str) {
        let Some(rt) = self.state.resource_type("coordination.k8s.io", "leases") else {
            return;
        };
        let now = crate::apiserver::meta::now_micro();
        let ctx = WriteContext::system("kubelet");
        let updated = self.state.update_with(
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
            let _ = self.state.create(&rt, "v1", "kube-node-lease", body, &ctx);
        }
    }
}

/// The pod annotation that makes a pod's containers exit after that many seconds (decimals
/// allowed), for pods whose `restartPolicy` is `Never` or `OnFailure`.
pub const RUN_SECONDS_ANNOTATION: &str = "sandbox.kube/run-seconds";

/// How long a pod's containers run before they exit, `None` when they run until deleted:
/// pods with `restartPolicy: Always` never end; others end after their
/// [`RUN_SECONDS_ANNOTATION`], or, when a Job owns them, after `job_pod_run_time`.
pub fn run_time(pod: &Value, job_pod_run_time: Duration) -> Option<Duration> {
    let policy = at(pod, &["spec", "restartPolicy"])
        .and_then(Value::as_str)
        .unwrap_or("Always");
    if policy == "Always" {
        return None;
    }
    let annotated = at(pod, &["metadata", "annotations", RUN_SECONDS_ANNOTATION])
        .and_then(Value::as_str)
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0);
    if let Some(seconds) = annotated {
        return Some(Duration::from_secs_f64(seconds));
    }
    let owned_by_job = at(pod, &["metadata", "ownerReferences"])
        .and_then(Value::as_array)
        .is_some_and(|refs| refs.iter().any(|r| r["kind"] == "Job"));
    owned_by_job.then_some(job_pod_run_time)
}

/// The exit code of a container that ends: `N` of the last `exit N` in its command and args
/// (`sh -c 'echo hi; exit 3'` -> 3), else 0.
pub fn exit_code(container: &Value) -> i64 {
    let words: Vec<&str> = ["command", "args"]
        .iter()
        .filter_map(|k| container.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .flat_map(|s| s.split(|c: char| c.is_whitespace() || c == ';' || c == '\'' || c == '"'))
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .filter(|w| w[0] == "exit")
        .filter_map(|w| w[1].parse::<i64>().ok())
        .next_back()
        .unwrap_or(0)
}

/// Ends a running pod's containers: each with its [`exit_code`], the pod Succeeded when all
/// exit 0, Failed otherwise (containers are not restarted in place, even with `OnFailure`).
pub(super) fn finish_pod(sim: &Simulator, namespace: &str, name: &str) {
    let state = &sim.state;
    let Some(rt) = state.resource_type("", "pods") else {
        return;
    };
    let Some(pod) = state.store.get(&rt.group_resource(), namespace, name) else {
        return;
    };
    let node = at(&pod.value, &["spec", "nodeName"])
        .and_then(Value::as_str)
        .unwrap_or("");
    if !sim.kubelet.runs(node)
        || at(&pod.value, &["metadata", "deletionTimestamp"]).is_some()
        || at(&pod.value, &["status", "phase"]).and_then(Value::as_str) != Some("Running")
    {
        return;
    }
    let containers: Vec<Value> = at(&pod.value, &["spec", "containers"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let now = crate::apiserver::meta::now_rfc3339();
    let codes: HashMap<String, i64> = containers
        .iter()
        .map(|c| {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
            (cname.to_string(), exit_code(c))
        })
        .collect();
    for (cname, code) in &codes {
        sim.kubelet.append_log(
            namespace,
            name,
            cname,
            &format!("container {cname} exited with code {code}"),
        );
    }
    let succeeded = codes.values().all(|c| *c == 0);
    let ctx = WriteContext::system("kubelet");
    let _ = state.update_with(
        &rt,
        "v1",
        namespace,
        name,
        Some("status"),
        &ctx,
        None,
        |old| {
            let mut new = old.clone();
            new["status"]["phase"] = json!(if succeeded { "Succeeded" } else { "Failed" });
            if let Some(conditions) = new["status"]["conditions"].as_array_mut() {
                for c in conditions.iter_mut() {
                    if c["type"] == "Ready" || c["type"] == "ContainersReady" {
                        c["status"] = json!("False");
                        c["reason"] = json!("PodCompleted");
                        c["lastTransitionTime"] = json!(now);
                    }
                }
            }
            if let Some(statuses) = new["status"]["containerStatuses"].as_array_mut() {
                for s in statuses.iter_mut() {
                    let cname = s["name"].as_str().unwrap_or("").to_string();
                    let code = codes.get(&cname).copied().unwrap_or(0);
                    let started = s["state"]["running"]["startedAt"].clone();
                    s["ready"] = json!(false);
                    s["started"] = json!(false);
                    s["state"] = json!({"terminated": {
                        "exitCode": code,
                        "reason": if code == 0 { "Completed" } else { "Error" },
                        "startedAt": started, "finishedAt": now,
                        "containerID": s["containerID"].clone(),
                    }});
                }
            }
            Ok(new)
        },
    );
}

/// Starts a pod's containers; answers how long they run when they end by themselves.
pub(super) fn start_pod(sim: &Arc<Simulator>, namespace: &str, name: &str) -> Option<Duration> {
    let state = &sim.state;
    let rt = state.resource_type("", "pods")?;
    let pods_gr = rt.group_resource();
    let pod = state.store.get(&pods_gr, namespace, name)?;
    let node = at(&pod.value, &["spec", "nodeName"])
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !sim.kubelet.runs(&node) || at(&pod.value, &["metadata", "deletionTimestamp"]).is_some() {
        return None;
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
        .unwrap_or_else(|| format!("10.0.0.{}", sim.kubelet.node_index(&node)));
    let pod_ip = if at(&pod.value, &["spec", "hostNetwork"]).and_then(Value::as_bool) == Some(true)
    {
        host_ip.clone()
    } else {
        sim.kubelet.allocate_ip()
    };
    let now = crate::apiserver::meta::now_rfc3339();
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
        // A container running its image's own entrypoint prints what the image prints, which
        // the sandbox cannot know: it gets one line saying what started. A container given a
        // command or args prints only what they print, as a real one does.
        if c.get("command").is_none() && c.get("args").is_none() {
            sim.kubelet.append_log(
                namespace,
                name,
                cname,
                &format!("container {cname} started from image {image} on node {node}"),
            );
        }
        for line in printed_lines(c) {
            sim.kubelet.append_log(namespace, name, cname, &line);
        }
    }
    let scripts: Vec<(String, super::container_script::Script)> = containers
        .iter()
        .map(|c| {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
            (cname.to_string(), super::container_script::script(c))
        })
        .filter(|(_, script)| script.continues())
        .collect();
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
    // Containers that print over time keep printing while the pod runs.
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        for (cname, script) in scripts {
            let key = (
                namespace.to_string(),
                name.to_string(),
                pod.uid().to_string(),
            );
            runtime.spawn(run_script(sim.clone(), key, cname, script));
        }
    }
    run_time(&pod.value, state.options.job_pod_run_time)
}

/// Starts the ephemeral containers of a running pod that have no status yet (added through
/// `pods/ephemeralcontainers`), as the kubelet does for `kubectl debug`.
pub(super) fn start_ephemeral_containers(sim: &Simulator, pod: &Value) {
    let has_status = |cname: &str| {
        at(pod, &["status", "ephemeralContainerStatuses"])
            .and_then(Value::as_array)
            .is_some_and(|s| s.iter().any(|c| c["name"].as_str() == Some(cname)))
    };
    let missing: Vec<Value> = at(pod, &["spec", "ephemeralContainers"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| !has_status(c["name"].as_str().unwrap_or("")))
        .cloned()
        .collect();
    let Some(rt) = sim
        .state
        .resource_type("", "pods")
        .filter(|_| !missing.is_empty())
    else {
        return;
    };
    let (namespace, name) = super::key_of(pod);
    let uid = at(pod, &["metadata", "uid"])
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let now = crate::apiserver::meta::now_rfc3339();
    let ctx = WriteContext::system("kubelet");
    let _ = sim.state.update_with(
        &rt,
        "v1",
        &namespace,
        &name,
        Some("status"),
        &ctx,
        None,
        |old| {
            let mut new = old.clone();
            let mut statuses = at(old, &["status", "ephemeralContainerStatuses"])
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for c in &missing {
                let cname = c["name"].as_str().unwrap_or("");
                if statuses.iter().any(|s| s["name"].as_str() == Some(cname)) {
                    continue;
                }
                let image = c["image"].as_str().unwrap_or("");
                statuses.push(json!({
                    "name": cname, "ready": false, "restartCount": 0,
                    "image": image, "imageID": format!("sandbox://{image}"),
                    "containerID": format!("sandbox://{uid}-{cname}"),
                    "state": {"running": {"startedAt": now}}
                }));
            }
            new["status"]["ephemeralContainerStatuses"] = json!(statuses);
            Ok(new)
        },
    );
}

/// What a simulated container prints at once: the lines of its script before any wait.
fn printed_lines(container: &Value) -> Vec<String> {
    let now = jiff::Timestamp::now();
    super::container_script::script(container)
        .immediate()
        .0
        .iter()
        .map(|line| super::container_script::expand(line, now))
        .collect()
}

/// Prints the rest of a container's script as it runs, until the pod (this very pod, by uid)
/// stops running or the cluster shuts down.
async fn run_script(
    sim: Arc<Simulator>,
    pod: (String, String, String),
    container: String,
    script: super::container_script::Script,
) {
    use super::container_script::{Step, expand};
    let (namespace, name, uid) = pod;
    let running = || {
        sim.state
            .store
            .get(&GroupResource::new("", "pods"), &namespace, &name)
            .is_some_and(|p| {
                p.uid() == uid
                    && at(&p.value, &["metadata", "deletionTimestamp"]).is_none()
                    && at(&p.value, &["status", "phase"]).and_then(Value::as_str) == Some("Running")
            })
    };
    let (_, first) = script.immediate();
    let steps = script.once[first..]
        .iter()
        .chain(script.repeat.iter().cycle());
    for step in steps {
        match step {
            Step::Print(text) => {
                if !running() {
                    return;
                }
                let line = expand(text, jiff::Timestamp::now());
                sim.kubelet.append_log(&namespace, &name, &container, &line);
            }
            Step::Sleep(wait) => {
                tokio::select! {
                    _ = tokio::time::sleep(*wait) => {}
                    _ = sim.state.shutdown.cancelled() => return,
                }
            }
            Step::End => return,
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
    sim: Arc<Simulator>,
    namespace: &str,
    name: &str,
    query: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    let pods_gr = GroupResource::new("", "pods");
    let pod = sim
        .state
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
    let Some(lines) = sim.kubelet.log_lines(namespace, name, &container) else {
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
        let mut printed = Box::pin(sim.kubelet.appended.notified());
        loop {
            tokio::select! {
                _ = sim.state.shutdown.cancelled() => return,
                _ = tx.closed() => return,
                _ = &mut printed => {}
                // The pod's deletion prints nothing: look again now and then.
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
            // Made before the log is read again, so a line printed meanwhile still wakes it.
            printed = Box::pin(sim.kubelet.appended.notified());
            if sim.state.store.get(&pods_gr, &ns, &pod_name).is_none() {
                return;
            }
            let Some(lines) = sim.kubelet.log_lines(&ns, &pod_name, &container) else {
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
    fn pods_end_by_restart_policy_annotation_and_owner() {
        let job = Duration::from_secs(7);
        let cases = [
            (
                json!({"spec": {"restartPolicy": "Always"}, "metadata": {"annotations": {RUN_SECONDS_ANNOTATION: "1"}}}),
                None,
            ),
            (json!({"spec": {}}), None),
            (json!({"spec": {"restartPolicy": "Never"}}), None),
            (
                json!({"spec": {"restartPolicy": "Never"}, "metadata": {"annotations": {RUN_SECONDS_ANNOTATION: "0.5"}}}),
                Some(Duration::from_millis(500)),
            ),
            (
                json!({"spec": {"restartPolicy": "OnFailure"}, "metadata": {"ownerReferences": [{"kind": "Job"}]}}),
                Some(job),
            ),
            (
                json!({"spec": {"restartPolicy": "Never"}, "metadata": {"annotations": {RUN_SECONDS_ANNOTATION: "x"}, "ownerReferences": [{"kind": "Job"}]}}),
                Some(job),
            ),
        ];
        for (pod, expected) in cases {
            assert_eq!(run_time(&pod, job), expected, "{pod}");
        }
    }

    #[test]
    fn exit_codes_come_from_exit_commands() {
        let cases = [
            (json!({"command": ["sh", "-c", "exit 3"]}), 3),
            (
                json!({"command": ["sh", "-c"], "args": ["echo hi; exit 1"]}),
                1,
            ),
            (json!({"command": ["sh", "-c", "exit 2; exit 0"]}), 0),
            (json!({"command": ["true"]}), 0),
            (json!({"args": ["sh", "-c", "'exit 4'"]}), 4),
            (json!({}), 0),
        ];
        for (container, expected) in cases {
            assert_eq!(exit_code(&container), expected, "{container}");
        }
    }

    #[test]
    fn echo_commands_print() {
        let c = json!({"command": ["sh", "-c"], "args": ["echo hello; sleep 3600"]});
        assert_eq!(printed_lines(&c), vec!["hello"]);
    }
}
