//! The Endpoints controller: the legacy `v1` Endpoints object of every Service with a selector
//! (same name), with ready pods in `addresses` and the others in `notReadyAddresses`, one subset
//! per distinct port set, labelled `endpointslice.kubernetes.io/skip-mirror: "true"` as
//! upstream's; removed when its Service goes.

use super::Pass;
use super::endpointslice::{endpoint_groups, selector_of};
use super::objects::{Writer, at, is_deleting, name_of, namespace_of, str_at};
use crate::apiserver::resources::GroupResource;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};

/// The field manager of its writes.
pub const NAME: &str = "endpoint-controller";
/// The label that keeps the EndpointSlice mirroring controller away from these objects.
const SKIP_MIRROR: &str = "endpointslice.kubernetes.io/skip-mirror";

/// Syncs the Endpoints of every Service.
pub fn sync_all(pass: &Pass) {
    let writer = Writer {
        state: pass.state,
        manager: NAME,
    };
    let services = pass.list("", "services");
    let mut served: HashSet<(String, String)> = HashSet::new();
    for service in &services {
        let Some(selector) = selector_of(service) else {
            continue;
        };
        if is_deleting(service) {
            continue;
        }
        let namespace = namespace_of(service);
        served.insert((namespace.to_string(), name_of(service).to_string()));
        let pods = pass.pods_in(namespace);
        let groups = endpoint_groups(service, selector, &pods, &HashMap::new());
        let subsets: Vec<Value> = groups
            .into_values()
            .filter_map(|(ports, endpoints)| {
                let address = |e: &Value| {
                    let mut a = json!({
                        "ip": e["addresses"][0],
                        "targetRef": e["targetRef"],
                    });
                    if let Some(node) = e.get("nodeName") {
                        a["nodeName"] = node.clone();
                    }
                    a
                };
                let ready: Vec<Value> = endpoints
                    .iter()
                    .filter(|e| e["conditions"]["ready"] == true)
                    .map(address)
                    .collect();
                let not_ready: Vec<Value> = endpoints
                    .iter()
                    .filter(|e| {
                        e["conditions"]["ready"] != true && e["conditions"]["terminating"] != true
                    })
                    .map(address)
                    .collect();
                if ready.is_empty() && not_ready.is_empty() {
                    return None;
                }
                let ports: Vec<Value> = ports
                    .into_iter()
                    .map(|mut p| {
                        if p["name"] == ""
                            && let Some(map) = p.as_object_mut()
                        {
                            map.remove("name");
                        }
                        p
                    })
                    .collect();
                let mut subset = json!({"ports": ports});
                if !ready.is_empty() {
                    subset["addresses"] = json!(ready);
                }
                if !not_ready.is_empty() {
                    subset["notReadyAddresses"] = json!(not_ready);
                }
                Some(subset)
            })
            .collect();
        let mut labels = at(service, &["metadata", "labels"])
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        labels.insert(SKIP_MIRROR.into(), json!("true"));
        let existing = pass.state.store.get(
            &GroupResource::new("", "endpoints"),
            namespace,
            name_of(service),
        );
        match existing {
            Some(current) => {
                let _ = writer.update("", "endpoints", &current.value, None, |e| {
                    e["metadata"]["labels"] = Value::Object(labels);
                    if subsets.is_empty() {
                        if let Some(map) = e.as_object_mut() {
                            map.remove("subsets");
                        }
                    } else {
                        e["subsets"] = json!(subsets);
                    }
                });
            }
            None => {
                let mut body = json!({
                    "apiVersion": "v1", "kind": "Endpoints",
                    "metadata": {"name": name_of(service), "labels": labels},
                });
                if !subsets.is_empty() {
                    body["subsets"] = json!(subsets);
                }
                if let Err(e) = writer.create("", "endpoints", namespace, body) {
                    tracing::debug!(service = name_of(service), "cannot create endpoints: {e}");
                }
            }
        }
    }
    // Endpoints this controller made whose Service is gone.
    for endpoints in pass.list("", "endpoints") {
        let key = (
            namespace_of(&endpoints).to_string(),
            name_of(&endpoints).to_string(),
        );
        if str_at(&endpoints, &["metadata", "labels", SKIP_MIRROR]) == "true"
            && !served.contains(&key)
            && !services
                .iter()
                .any(|s| namespace_of(s) == key.0 && name_of(s) == key.1)
        {
            let _ = writer.delete("", "endpoints", &endpoints);
        }
    }
}
