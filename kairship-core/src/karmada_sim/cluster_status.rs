//! Karmada's cluster-status controller, emulated: for every `Cluster` of a Karmada-like API
//! server that has `spec.secretRef` (a Push member), it reaches the member's `apiEndpoint`
//! with the token (and `caBundle`) of that Secret, probes `/readyz`, `/version` and the nodes
//! and pods, and writes the status Karmada writes: the `Ready` condition (`ClusterReady`,
//! `ClusterNotReady` or `ClusterNotReachable`, with Karmada's messages), and for a member that
//! answers healthy `kubernetesVersion`, `apiEnablements` with the `CompleteAPIEnablements`
//! condition, `nodeSummary` and `resourceSummary` (allocatable and allocated CPU, memory and
//! pods) (karmada-io/karmada `pkg/controllers/status/cluster_status_controller.go`,
//! `syncClusterStatus`, `setCurrentClusterStatus`).
//!
//! It watches Clusters (a new member is probed at once) and probes every member again each
//! `interval`, as Karmada's `--cluster-status-update-frequency` does.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use kube::api::{ListParams, Patch, PatchParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Api, Client};
use kube_kit::quantity::{Format, Quantity};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::cluster_passes::{clusters, on_cluster_changes};

/// Field manager of the status writes.
pub const MANAGER: &str = "karmada-controller-manager";
/// Time one probe of a member may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What a probe of a member found.
#[derive(Clone, Debug, PartialEq)]
pub enum Probe {
    /// The member could not be reached (or refused the credentials): why.
    Unreachable(String),
    /// The member answered.
    Reached {
        /// Whether `/readyz` answered `ok`.
        healthy: bool,
        /// `gitVersion` of `/version`.
        version: Option<String>,
        /// Nodes, and how many are Ready.
        nodes: (i64, i64),
        /// Sum of the nodes' allocatable resources.
        allocatable: BTreeMap<String, Quantity>,
        /// Sum of the requests of the pods bound to nodes and not finished.
        allocated: BTreeMap<String, Quantity>,
        /// The member's API group versions and their resources ([`api_enablements`]), and
        /// whether every group version could be read.
        api_enablements: (Vec<Value>, bool),
        /// The nodes counted by grade of the Cluster's resource models
        /// ([`super::resource_models::allocatable_modelings`]), when it has models.
        allocatable_modelings: Option<Value>,
    },
}

/// `status.apiEnablements` from a member's discovery: per group version (sorted), its
/// resources by name and kind (sorted by name), subresources left out (`getAPIEnablements`).
pub fn api_enablements(discovered: Vec<(String, Vec<(String, String)>)>) -> Vec<Value> {
    let mut lists = discovered;
    lists.sort_by(|a, b| a.0.cmp(&b.0));
    lists
        .into_iter()
        .map(|(group_version, resources)| {
            let mut resources: Vec<(String, String)> = resources
                .into_iter()
                .filter(|(name, _)| !name.contains('/'))
                .collect();
            resources.sort_by(|a, b| a.0.cmp(&b.0));
            let resources: Vec<Value> = resources
                .into_iter()
                .map(|(name, kind)| json!({"name": name, "kind": kind}))
                .collect();
            json!({"groupVersion": group_version, "resources": resources})
        })
        .collect()
}

/// `meta.SetStatusCondition`: `condition` replaces the one of its type, keeping its
/// `lastTransitionTime` while the status stays the same, or is appended.
fn set_condition(conditions: &mut Vec<Value>, condition: Value) {
    match conditions
        .iter_mut()
        .find(|c| c["type"] == condition["type"])
    {
        Some(existing) => {
            let transition = if existing["status"] == condition["status"] {
                existing["lastTransitionTime"].clone()
            } else {
                condition["lastTransitionTime"].clone()
            };
            *existing = condition;
            existing["lastTransitionTime"] = transition;
        }
        None => conditions.push(condition),
    }
}

/// The `status` Karmada would write for `probe`; `previous` is the current status, whose
/// conditions keep their `lastTransitionTime` while their status does not change.
pub fn status_of(probe: &Probe, previous: Option<&Value>, now: &str) -> Value {
    let (ready, reason, message) = match probe {
        Probe::Unreachable(_) => ("False", "ClusterNotReachable", "cluster is not reachable"),
        Probe::Reached { healthy: false, .. } => {
            ("False", "ClusterNotReady", "cluster is not healthy")
        }
        Probe::Reached { healthy: true, .. } => (
            "True",
            "ClusterReady",
            "cluster is healthy and ready to accept workloads",
        ),
    };
    let mut status = previous.cloned().unwrap_or_else(|| json!({}));
    let mut conditions: Vec<Value> = status["conditions"].as_array().cloned().unwrap_or_default();
    // Only a member that answers healthy has the rest of its status collected.
    if let Probe::Reached {
        healthy: true,
        version,
        nodes,
        allocatable,
        allocated,
        api_enablements: (enablements, complete),
        allocatable_modelings,
    } = probe
    {
        let (state, reason, message) = match (enablements.len(), complete) {
            (0, _) => (
                "False",
                "Empty",
                "collected empty APIEnablements from the cluster".to_owned(),
            ),
            (n, false) => (
                "False",
                "Partial",
                format!("might collect partial APIEnablements({n}) from the cluster"),
            ),
            (_, true) => (
                "True",
                "Complete",
                "collected complete APIEnablements from the cluster".to_owned(),
            ),
        };
        set_condition(
            &mut conditions,
            json!({"type": "CompleteAPIEnablements", "status": state, "reason": reason,
                "message": message, "lastTransitionTime": now}),
        );
        status["apiEnablements"] = json!(enablements);
        if let Some(v) = version {
            status["kubernetesVersion"] = json!(v);
        }
        status["nodeSummary"] = json!({"totalNum": nodes.0, "readyNum": nodes.1});
        let strings = |m: &BTreeMap<String, Quantity>| -> Value {
            m.iter()
                .map(|(k, q)| (k.clone(), json!(q.to_canonical_string())))
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        status["resourceSummary"] =
            json!({"allocatable": strings(allocatable), "allocated": strings(allocated)});
        if let Some(modelings) = allocatable_modelings {
            status["resourceSummary"]["allocatableModelings"] = modelings.clone();
        }
    }
    set_condition(
        &mut conditions,
        json!({"type": "Ready", "status": ready, "reason": reason, "message": message,
            "lastTransitionTime": now}),
    );
    status["conditions"] = json!(conditions);
    status
}

fn add_resources(total: &mut BTreeMap<String, Quantity>, resources: Option<&Value>) {
    let Some(resources) = resources.and_then(Value::as_object) else {
        return;
    };
    for (name, value) in resources {
        if !matches!(
            name.as_str(),
            "cpu" | "memory" | "pods" | "ephemeral-storage"
        ) {
            continue;
        }
        let Some(q) = value.as_str().and_then(|s| Quantity::parse(s).ok()) else {
            continue;
        };
        total
            .entry(name.clone())
            .and_modify(|t| *t += q)
            .or_insert(q);
    }
}

/// Node counts and summed allocatable of `nodes`, summed requests of `pods` (bound and not
/// finished; each pod counts one `pods`).
pub fn summarize(
    nodes: &[Value],
    pods: &[Value],
) -> (
    (i64, i64),
    BTreeMap<String, Quantity>,
    BTreeMap<String, Quantity>,
) {
    let mut allocatable = BTreeMap::new();
    let mut ready = 0;
    for node in nodes {
        add_resources(&mut allocatable, node.pointer("/status/allocatable"));
        let is_ready = node
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            });
        if is_ready {
            ready += 1;
        }
    }
    let mut allocated = BTreeMap::new();
    let mut pod_count = 0;
    for pod in pods {
        let bound = pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        let phase = pod.pointer("/status/phase").and_then(Value::as_str);
        if !bound || matches!(phase, Some("Succeeded" | "Failed")) {
            continue;
        }
        pod_count += 1;
        for container in pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            add_resources(&mut allocated, container.pointer("/resources/requests"));
        }
    }
    if pod_count > 0 {
        allocated.insert(
            "pods".to_owned(),
            Quantity::from_units(pod_count, Format::DecimalSI),
        );
    }
    (
        (i64::try_from(nodes.len()).unwrap_or(i64::MAX), ready),
        allocatable,
        allocated,
    )
}

fn decode(secret: &Value, key: &str) -> Option<String> {
    secret
        .pointer(&format!("/data/{key}"))
        .and_then(Value::as_str)
        .and_then(|b| STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
}

/// A client of the member a Cluster names, with the credentials of its Secret.
pub(crate) async fn member_client(karmada: &Client, cluster: &Value) -> Result<Client, String> {
    let endpoint = cluster
        .pointer("/spec/apiEndpoint")
        .and_then(Value::as_str)
        .ok_or("the Cluster has no spec.apiEndpoint")?;
    let namespace = cluster
        .pointer("/spec/secretRef/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = cluster
        .pointer("/spec/secretRef/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let secrets: Api<DynamicObject> = Api::namespaced_with(
        karmada.clone(),
        namespace,
        &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Secret"), "secrets"),
    );
    let secret = secrets
        .get(name)
        .await
        .map_err(|e| format!("secret {namespace}/{name}: {e}"))?;
    let secret = serde_json::to_value(&secret).map_err(|e| e.to_string())?;
    let token = decode(&secret, "token").ok_or("the credential Secret has no token")?;
    let mut server = json!({"server": endpoint});
    if let Some(ca) = decode(&secret, "caBundle") {
        server["certificate-authority-data"] = json!(STANDARD.encode(ca));
    }
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "member", "cluster": server}],
        "users": [{"name": "karmada", "user": {"token": token}}],
        "contexts": [{"name": "member", "context": {"cluster": "member", "user": "karmada"}}],
        "current-context": "member",
    });
    let mut options = kube_kit::client::ClientOptions::new("karmada-cluster-status");
    options.read_timeout = Some(PROBE_TIMEOUT);
    options.connect_timeout = PROBE_TIMEOUT;
    let text = serde_json::to_string(&kubeconfig).map_err(|e| e.to_string())?;
    kube_kit::client::client_from_kubeconfig_yaml(&text, None, &options, "cluster credentials")
        .await
        .map_err(|e| e.to_string())
}

async fn probe(karmada: &Client, cluster: &Value) -> Probe {
    let client = match member_client(karmada, cluster).await {
        Ok(c) => c,
        Err(e) => return Probe::Unreachable(e),
    };
    let readyz = http::Request::get("/readyz").body(Vec::new());
    let healthy = match readyz {
        Ok(req) => match tokio::time::timeout(PROBE_TIMEOUT, client.request_text(req)).await {
            Ok(Ok(text)) => text.trim() == "ok",
            // An answer that is not `ok` (e.g. a 500 from a failing check): reached, unhealthy.
            Ok(Err(kube::Error::Api(_))) => false,
            Ok(Err(e)) => return Probe::Unreachable(kube_kit::client::describe_kube_error(&e)),
            Err(_) => return Probe::Unreachable("timed out".into()),
        },
        Err(e) => return Probe::Unreachable(e.to_string()),
    };
    let version = match tokio::time::timeout(PROBE_TIMEOUT, client.apiserver_version()).await {
        Ok(Ok(info)) => Some(info.git_version),
        _ => None,
    };
    let list = |group: &str, kind: &str, plural: &str| {
        let api: Api<DynamicObject> = Api::all_with(
            client.clone(),
            &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural),
        );
        async move {
            match tokio::time::timeout(PROBE_TIMEOUT, api.list(&ListParams::default())).await {
                Ok(Ok(list)) => list
                    .items
                    .iter()
                    .filter_map(|o| serde_json::to_value(o).ok())
                    .collect(),
                _ => Vec::new(),
            }
        }
    };
    let nodes = list("", "Node", "nodes").await;
    let pods = list("", "Pod", "pods").await;
    let allocatable_modelings = cluster
        .pointer("/spec/resourceModels")
        .and_then(|models| super::resource_models::allocatable_modelings(models, &nodes, &pods));
    let (nodes, allocatable, allocated) = summarize(&nodes, &pods);
    let api_enablements = match tokio::time::timeout(PROBE_TIMEOUT, discover(&client)).await {
        Ok((found, complete)) => (api_enablements(found), complete),
        Err(_) => (Vec::new(), false),
    };
    Probe::Reached {
        healthy,
        version,
        nodes,
        allocatable,
        allocated,
        api_enablements,
        allocatable_modelings,
    }
}

/// Every group version the member serves with its resources (`(name, kind)`), as client-go's
/// `ServerGroupsAndResources` reads them, and whether none failed to be read.
async fn discover(client: &Client) -> (Vec<(String, Vec<(String, String)>)>, bool) {
    let (resources, complete) = crate::api::resources::discovery::read_all(client, "member").await;
    let mut by_group_version: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for r in resources {
        let group_version = if r.group == crate::api::CORE_GROUP {
            r.version
        } else {
            format!("{}/{}", r.group, r.version)
        };
        by_group_version
            .entry(group_version)
            .or_default()
            .push((r.resource, r.kind));
    }
    (by_group_version.into_iter().collect(), complete)
}

/// Probes every Push member of `karmada` once and writes the statuses that changed.
pub async fn sync_once(karmada: &Client) -> Result<(), kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(karmada.clone(), &clusters());
    let list = api.list(&ListParams::default()).await?;
    for cluster in list.items {
        let Some(name) = cluster.metadata.name.clone() else {
            continue;
        };
        let value = serde_json::to_value(&cluster).unwrap_or(Value::Null);
        if value.pointer("/spec/secretRef").is_none()
            || cluster.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        let found = probe(karmada, &value).await;
        if let Probe::Unreachable(why) = &found {
            tracing::debug!(cluster = %name, reason = %why, "member not reachable");
        }
        let now = jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        let previous = value.get("status");
        let status = status_of(&found, previous, &now);
        if previous == Some(&status) {
            continue;
        }
        let patch = json!({"status": status});
        if let Err(err) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::debug!(cluster = %name, error = %err, "cannot write the cluster status");
        }
    }
    Ok(())
}

/// Runs the emulated cluster-status controller on `karmada` until `shutdown`: a pass on every
/// change of a Cluster and every `interval`.
pub async fn run(karmada: Client, interval: Duration, shutdown: CancellationToken) {
    on_cluster_changes(
        karmada,
        interval,
        shutdown,
        "cluster status",
        |k| async move { sync_once(&k).await },
    )
    .await;
}

/// Starts [`run`] in the background.
pub fn spawn(
    karmada: Client,
    interval: Duration,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(karmada, interval, shutdown))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn statuses_follow_karmada() {
        let enablements = api_enablements(vec![
            (
                "v1".into(),
                vec![
                    ("pods".into(), "Pod".into()),
                    ("pods/log".into(), "Pod".into()),
                    ("configmaps".into(), "ConfigMap".into()),
                ],
            ),
            (
                "apps/v1".into(),
                vec![("deployments".into(), "Deployment".into())],
            ),
        ]);
        assert_eq!(
            enablements,
            [
                json!({"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}),
                json!({"groupVersion": "v1", "resources": [
                    {"name": "configmaps", "kind": "ConfigMap"}, {"name": "pods", "kind": "Pod"}]}),
            ]
        );
        let reached = Probe::Reached {
            healthy: true,
            version: Some("v1.31.0".into()),
            nodes: (2, 1),
            allocatable: [("cpu".to_owned(), q("4"))].into(),
            allocated: [("cpu".to_owned(), q("500m"))].into(),
            api_enablements: (enablements.clone(), true),
            allocatable_modelings: Some(json!([{"grade": 0, "count": 2}])),
        };
        let s = status_of(&reached, None, "T1");
        // The order Karmada sets them in (cluster-msb-push-kube-sandbox.json).
        let types: Vec<&Value> = s["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["type"])
            .collect();
        assert_eq!(types, ["CompleteAPIEnablements", "Ready"]);
        assert_eq!(
            s["conditions"][0],
            json!({"type": "CompleteAPIEnablements", "status": "True", "reason": "Complete",
                "message": "collected complete APIEnablements from the cluster",
                "lastTransitionTime": "T1"})
        );
        assert_eq!(s["conditions"][1]["reason"], "ClusterReady");
        assert_eq!(s["conditions"][1]["lastTransitionTime"], "T1");
        assert_eq!(s["apiEnablements"], json!(enablements));
        assert_eq!(s["kubernetesVersion"], "v1.31.0");
        assert_eq!(s["nodeSummary"], json!({"totalNum": 2, "readyNum": 1}));
        assert_eq!(s["resourceSummary"]["allocated"]["cpu"], "500m");
        assert_eq!(
            s["resourceSummary"]["allocatableModelings"],
            json!([{"grade": 0, "count": 2}])
        );
        // The same answer later keeps the transition times; a change moves it.
        assert_eq!(status_of(&reached, Some(&s), "T2"), s);
        let down = status_of(&Probe::Unreachable("refused".into()), Some(&s), "T3");
        assert_eq!(down["conditions"][1]["status"], "False");
        assert_eq!(down["conditions"][1]["reason"], "ClusterNotReachable");
        assert_eq!(down["conditions"][1]["lastTransitionTime"], "T3");
        // What was collected before stays as it was.
        assert_eq!(down["conditions"][0], s["conditions"][0]);
        assert_eq!(down["nodeSummary"], s["nodeSummary"]);
        let unhealthy = Probe::Reached {
            healthy: false,
            version: None,
            nodes: (0, 0),
            allocatable: BTreeMap::new(),
            allocated: BTreeMap::new(),
            api_enablements: (Vec::new(), true),
            allocatable_modelings: None,
        };
        let s = status_of(&unhealthy, None, "T");
        assert_eq!(s["conditions"][0]["reason"], "ClusterNotReady");
        assert_eq!(s["conditions"].as_array().unwrap().len(), 1);
        assert!(s.get("nodeSummary").is_none(), "{s}");
        // Discovery that failed in part, or found nothing.
        for (found, complete, reason, message) in [
            (
                enablements.clone(),
                false,
                "Partial",
                "might collect partial APIEnablements(2) from the cluster",
            ),
            (
                Vec::new(),
                false,
                "Empty",
                "collected empty APIEnablements from the cluster",
            ),
        ] {
            let probe = Probe::Reached {
                healthy: true,
                version: None,
                nodes: (0, 0),
                allocatable: BTreeMap::new(),
                allocated: BTreeMap::new(),
                api_enablements: (found, complete),
                allocatable_modelings: None,
            };
            let s = status_of(&probe, None, "T");
            assert_eq!(s["conditions"][0]["status"], "False");
            assert_eq!(s["conditions"][0]["reason"], reason);
            assert_eq!(s["conditions"][0]["message"], message);
        }
    }

    #[test]
    fn summaries_count_ready_nodes_and_bound_running_pods() {
        let node = |ready: &str| {
            json!({"status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                              "conditions": [{"type": "Ready", "status": ready}]}})
        };
        let pod = |node: &str, phase: &str, cpu: &str| {
            json!({"spec": {"nodeName": node, "containers": [{"resources": {"requests": {"cpu": cpu}}}]},
                   "status": {"phase": phase}})
        };
        let (nodes, allocatable, allocated) = summarize(
            &[node("True"), node("False")],
            &[
                pod("n1", "Running", "100m"),
                pod("n1", "Succeeded", "1"),
                pod("", "Pending", "1"),
                pod("n2", "Pending", "200m"),
            ],
        );
        assert_eq!(nodes, (2, 1));
        assert_eq!(allocatable["cpu"], q("4"));
        assert_eq!(allocatable["memory"], q("8Gi"));
        assert_eq!(allocated["cpu"], q("300m"));
        assert_eq!(allocated["pods"], q("2"));
    }
}
