//! The EndpointSlice controller: for every Service with a selector, `discovery.k8s.io/v1`
//! EndpointSlices named `<service>-<5 random>` (labels `kubernetes.io/service-name` and
//! `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`, owned by the
//! Service) listing the selected pods that have an IP, with ready/serving/terminating
//! conditions, nodeName, zone and targetRef; target ports resolved per pod (named ports from the
//! pod's container ports), one slice per distinct port set (an empty placeholder slice when
//! nothing is selected).

use super::Pass;
use super::objects::{
    Writer, at, controller_ref, is_deleting, is_ready, is_terminal, labels_match, name_of,
    namespace_of, owned_by, str_at, uid_of,
};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};

/// The field manager of its writes.
pub const NAME: &str = "endpointslice-controller";
/// The label naming a slice's Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The label naming who manages a slice.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// This controller's value of [`MANAGED_BY_LABEL`].
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";

/// Syncs the slices of every Service.
pub fn sync_all(pass: &Pass) {
    let writer = Writer {
        state: pass.state,
        manager: NAME,
    };
    let slices = pass.list("discovery.k8s.io", "endpointslices");
    let zones: HashMap<String, String> = pass
        .list("", "nodes")
        .iter()
        .filter_map(|n| {
            let zone = str_at(n, &["metadata", "labels", "topology.kubernetes.io/zone"]);
            (!zone.is_empty()).then(|| (name_of(n).to_string(), zone.to_string()))
        })
        .collect();
    for service in pass.list("", "services") {
        let Some(selector) = selector_of(&service) else {
            continue;
        };
        if is_deleting(&service) {
            continue;
        }
        let pods = pass.pods_in(namespace_of(&service));
        let groups = endpoint_groups(&service, selector, &pods, &zones);
        let owned: Vec<&Value> = owned_by(&slices, uid_of(&service))
            .into_iter()
            .filter(|s| str_at(s, &["metadata", "labels", MANAGED_BY_LABEL]) == MANAGED_BY)
            .collect();
        reconcile(&writer, &service, groups, owned);
    }
}

/// A Service's selector, when it selects pods (not ExternalName, not empty).
pub fn selector_of(service: &Value) -> Option<&Map<String, Value>> {
    if str_at(service, &["spec", "type"]) == "ExternalName" {
        return None;
    }
    at(service, &["spec", "selector"])
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty())
}

/// One selected pod with its IP and state, and the ports resolved for it.
pub struct PodEndpoint {
    /// The pod IP.
    pub ip: String,
    /// Ready and not terminating.
    pub ready: bool,
    /// Ready, terminating or not.
    pub serving: bool,
    /// Being deleted.
    pub terminating: bool,
    /// The pod's node.
    pub node: String,
    /// The pod's name and uid.
    pub name: String,
    /// The pod's uid.
    pub uid: String,
}

/// The selected pods grouped by the ports resolved for them (ports as slices write them).
pub fn endpoint_groups(
    service: &Value,
    selector: &Map<String, Value>,
    pods: &[Value],
    zones: &HashMap<String, String>,
) -> BTreeMap<String, (Vec<Value>, Vec<Value>)> {
    let publish_not_ready =
        at(service, &["spec", "publishNotReadyAddresses"]).and_then(Value::as_bool) == Some(true);
    let service_ports: Vec<Value> = at(service, &["spec", "ports"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut groups: BTreeMap<String, (Vec<Value>, Vec<Value>)> = BTreeMap::new();
    let mut selected: Vec<&Value> = pods
        .iter()
        .filter(|p| {
            labels_match(
                selector,
                at(p, &["metadata", "labels"]).and_then(Value::as_object),
            ) && !is_terminal(p)
                && !str_at(p, &["status", "podIP"]).is_empty()
        })
        .collect();
    selected.sort_by_key(|p| name_of(p).to_string());
    for pod in selected {
        let ports: Vec<Value> = service_ports
            .iter()
            .filter_map(|sp| {
                let port = resolve_target_port(sp, pod)?;
                let mut out = json!({
                    "name": sp.get("name").and_then(Value::as_str).unwrap_or(""),
                    "port": port,
                    "protocol": sp.get("protocol").and_then(Value::as_str).unwrap_or("TCP"),
                });
                if let Some(app) = sp.get("appProtocol") {
                    out["appProtocol"] = app.clone();
                }
                Some(out)
            })
            .collect();
        let terminating = is_deleting(pod);
        let ready = is_ready(pod) || publish_not_ready;
        let node = str_at(pod, &["spec", "nodeName"]);
        let mut endpoint = json!({
            "addresses": [str_at(pod, &["status", "podIP"])],
            "conditions": {
                "ready": ready && !terminating,
                "serving": ready,
                "terminating": terminating,
            },
            "targetRef": {
                "kind": "Pod", "namespace": namespace_of(pod),
                "name": name_of(pod), "uid": uid_of(pod),
            },
        });
        // A pod named into the Service's DNS (`hostname` with `subdomain` = the Service, as
        // StatefulSet pods are) gets its hostname on the endpoint.
        let hostname = str_at(pod, &["spec", "hostname"]);
        if !hostname.is_empty()
            && str_at(pod, &["spec", "subdomain"]) == name_of(service)
            && !name_of(service).is_empty()
        {
            endpoint["hostname"] = json!(hostname);
        }
        if !node.is_empty() {
            endpoint["nodeName"] = json!(node);
            if let Some(zone) = zones.get(node) {
                endpoint["zone"] = json!(zone);
            }
        }
        let key = Value::Array(ports.clone()).to_string();
        groups
            .entry(key)
            .or_insert_with(|| (ports, Vec::new()))
            .1
            .push(endpoint);
    }
    groups
}

/// A service port's target port for one pod: a number, or a named container port of the pod;
/// `None` when the name is not found (the pod is left out for that port, as upstream does).
pub fn resolve_target_port(service_port: &Value, pod: &Value) -> Option<i64> {
    match service_port.get("targetPort") {
        None | Some(Value::Null) => service_port.get("port").and_then(Value::as_i64),
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(name)) => {
            if let Ok(n) = name.parse::<i64>() {
                return Some(n);
            }
            let protocol = service_port
                .get("protocol")
                .and_then(Value::as_str)
                .unwrap_or("TCP");
            at(pod, &["spec", "containers"])
                .and_then(Value::as_array)?
                .iter()
                .filter_map(|c| c.get("ports").and_then(Value::as_array))
                .flatten()
                .find(|p| {
                    p.get("name").and_then(Value::as_str) == Some(name)
                        && p.get("protocol").and_then(Value::as_str).unwrap_or("TCP") == protocol
                })
                .and_then(|p| p.get("containerPort").and_then(Value::as_i64))
        }
        Some(_) => None,
    }
}

fn reconcile(
    w: &Writer,
    service: &Value,
    mut groups: BTreeMap<String, (Vec<Value>, Vec<Value>)>,
    owned: Vec<&Value>,
) {
    if groups.is_empty() {
        // A placeholder slice with no ports and no endpoints.
        groups.insert("[]".into(), (Vec::new(), Vec::new()));
    }
    let service_name = name_of(service);
    let mut labels = at(service, &["metadata", "labels"])
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert(SERVICE_NAME_LABEL.into(), json!(service_name));
    labels.insert(MANAGED_BY_LABEL.into(), json!(MANAGED_BY));
    let mut unused: Vec<&Value> = owned;
    for (key, (ports, endpoints)) in groups {
        let ports_value = if ports.is_empty() && endpoints.is_empty() {
            Value::Null
        } else {
            Value::Array(ports)
        };
        let existing = unused
            .iter()
            .position(|s| {
                let have = s.get("ports").cloned().unwrap_or(Value::Null);
                have == ports_value || (have.is_null() && key == "[]")
            })
            .map(|i| unused.remove(i));
        let labels = Value::Object(labels.clone());
        match existing {
            Some(slice) => {
                let _ = w.update("discovery.k8s.io", "endpointslices", slice, None, |s| {
                    s["metadata"]["labels"] = labels;
                    s["endpoints"] = json!(endpoints);
                    match &ports_value {
                        Value::Null => {
                            if let Some(map) = s.as_object_mut() {
                                map.remove("ports");
                            }
                        }
                        ports => s["ports"] = ports.clone(),
                    }
                });
            }
            None => {
                let mut body = json!({
                    "apiVersion": "discovery.k8s.io/v1",
                    "kind": "EndpointSlice",
                    "metadata": {
                        "generateName": format!("{service_name}-"),
                        "labels": labels,
                        "ownerReferences": [controller_ref(service)],
                    },
                    "addressType": "IPv4",
                    "endpoints": endpoints,
                });
                if !ports_value.is_null() {
                    body["ports"] = ports_value;
                }
                if let Err(e) = w.create(
                    "discovery.k8s.io",
                    "endpointslices",
                    namespace_of(service),
                    body,
                ) {
                    tracing::debug!(service = service_name, "cannot create a slice: {e}");
                }
            }
        }
    }
    for slice in unused {
        let _ = w.delete("discovery.k8s.io", "endpointslices", slice);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_in_the_service_domain_get_their_hostname() {
        let service = json!({"metadata": {"name": "db"}, "spec": {"selector": {"app": "db"}, "ports": [{"port": 5432}]}});
        let pod = |name: &str, subdomain: &str| {
            json!({
                "metadata": {"name": name, "labels": {"app": "db"}},
                "spec": {"hostname": name, "subdomain": subdomain},
                "status": {"phase": "Running", "podIP": "10.0.0.1"}
            })
        };
        let pods = vec![pod("db-0", "db"), pod("other-0", "elsewhere")];
        let selector = selector_of(&service).expect("selector");
        let groups = endpoint_groups(&service, selector, &pods, &HashMap::new());
        let endpoints = &groups.values().next().expect("one group").1;
        assert_eq!(endpoints[0]["hostname"], "db-0");
        assert!(endpoints[1].get("hostname").is_none());
        assert_eq!(endpoints[0]["conditions"]["ready"], false);
    }

    #[test]
    fn target_ports_resolve_by_number_and_name() {
        let pod = json!({"spec": {"containers": [{"name": "c", "ports": [
            {"name": "http", "containerPort": 8080},
            {"name": "dns", "containerPort": 53, "protocol": "UDP"}
        ]}]}});
        let cases = [
            (json!({"port": 80}), Some(80)),
            (json!({"port": 80, "targetPort": 9090}), Some(9090)),
            (json!({"port": 80, "targetPort": "http"}), Some(8080)),
            (
                json!({"port": 53, "targetPort": "dns", "protocol": "UDP"}),
                Some(53),
            ),
            (json!({"port": 53, "targetPort": "dns"}), None),
            (json!({"port": 80, "targetPort": "missing"}), None),
        ];
        for (port, expected) in cases {
            assert_eq!(resolve_target_port(&port, &pod), expected, "{port}");
        }
    }

    #[test]
    fn endpoints_carry_conditions_and_group_by_ports() {
        let service = json!({"spec": {"selector": {"app": "a"}, "ports": [{"port": 80, "targetPort": "http"}]}});
        let ready = |name: &str, ip: &str, port: i64| {
            json!({
                "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": {"app": "a"}},
                "spec": {"nodeName": "n1", "containers": [{"ports": [{"name": "http", "containerPort": port}]}]},
                "status": {"phase": "Running", "podIP": ip, "conditions": [{"type": "Ready", "status": "True"}]}
            })
        };
        let mut terminating = ready("c", "10.0.0.3", 8080);
        terminating["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        let pods = vec![
            ready("a", "10.0.0.1", 8080),
            ready("b", "10.0.0.2", 9090),
            terminating,
            json!({"metadata": {"name": "no-ip", "labels": {"app": "a"}}, "status": {"phase": "Pending"}}),
            json!({"metadata": {"name": "other", "labels": {"app": "b"}}, "status": {"phase": "Running", "podIP": "10.0.0.9"}}),
        ];
        let zones = HashMap::from([("n1".to_string(), "z1".to_string())]);
        let selector = selector_of(&service).expect("selector");
        let groups = endpoint_groups(&service, selector, &pods, &zones);
        assert_eq!(groups.len(), 2);
        let (ports, endpoints) = groups
            .values()
            .find(|(p, _)| p[0]["port"] == 8080)
            .expect("8080");
        assert_eq!(ports[0]["protocol"], "TCP");
        assert_eq!(endpoints.len(), 2);
        assert_eq!(endpoints[0]["addresses"], json!(["10.0.0.1"]));
        assert_eq!(
            endpoints[0]["conditions"],
            json!({"ready": true, "serving": true, "terminating": false})
        );
        assert_eq!(endpoints[0]["zone"], "z1");
        assert_eq!(
            endpoints[1]["conditions"],
            json!({"ready": false, "serving": true, "terminating": true})
        );
    }
}
