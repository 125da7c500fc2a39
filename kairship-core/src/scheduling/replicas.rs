//! What a resource template asks of the scheduler: its replicas and what one replica requests,
//! as Karmada's default resource interpreter reads them (karmada-io/karmada
//! `pkg/resourceinterpreter/default/native/replica.go`, `GetReplicas`).

use std::collections::BTreeMap;

use kube_kit::quantity::Quantity;
use serde_json::{Map, Value, json};

use super::Workload;

/// The workload's replicas and `replicaRequirements` (`GetReplicas`); `None` for kinds
/// without replicas.
pub fn replicas(template: &Value) -> Option<(i32, Value)> {
    let kind = template["kind"].as_str().unwrap_or_default();
    let pod_spec = match kind {
        "Deployment" | "StatefulSet" | "Job" | "ReplicaSet" => {
            &template["spec"]["template"]["spec"]
        }
        "Pod" => &template["spec"],
        _ => return None,
    };
    let n = match kind {
        "Pod" => 1,
        // Job: parallelism (default 1), never more than what is left to complete.
        "Job" => template["spec"]["parallelism"].as_i64().unwrap_or(1),
        _ => template["spec"]["replicas"].as_i64().unwrap_or(1),
    };
    let mut requirements = Map::new();
    let requests = pod_requests(pod_spec);
    if !requests.is_empty() {
        requirements.insert("resourceRequest".into(), json!(requests));
    }
    if let Some(ns) = template["metadata"]["namespace"].as_str() {
        requirements.insert("namespace".into(), json!(ns));
    }
    if let Some(p) = pod_spec["priorityClassName"].as_str() {
        requirements.insert("priorityClassName".into(), json!(p));
    }
    Some((
        i32::try_from(n).unwrap_or(i32::MAX),
        Value::Object(requirements),
    ))
}

/// A pod's requests: the sum of its containers', at least its largest init container's
/// (`resourcehelper.PodRequests`), as canonical quantities.
fn pod_requests(spec: &Value) -> BTreeMap<String, String> {
    pod_spec_requests(spec)
        .into_iter()
        .map(|(k, q)| (k, q.to_canonical_string()))
        .collect()
}

/// The requests of pod spec `spec`: its containers' sum, raised to any init container's.
pub fn pod_spec_requests(spec: &Value) -> BTreeMap<String, Quantity> {
    let mut sum: BTreeMap<String, Quantity> = BTreeMap::new();
    let requests = |c: &Value| -> Vec<(String, Quantity)> {
        c["resources"]["requests"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), Quantity::parse(v.as_str()?).ok()?)))
            .collect()
    };
    for c in spec["containers"].as_array().into_iter().flatten() {
        for (k, q) in requests(c) {
            *sum.entry(k).or_default() += q;
        }
    }
    for c in spec["initContainers"].as_array().into_iter().flatten() {
        for (k, q) in requests(c) {
            let e = sum.entry(k).or_default();
            if q > *e {
                *e = q;
            }
        }
    }
    sum
}

/// The [`Workload`] the scheduler sees for `template`, as the resource detector puts it in a
/// new ResourceBinding (`spec.replicas`, `spec.replicaRequirements`, the template's uid); no
/// clusters scheduled yet.
pub fn workload_of_template(template: &Value) -> Workload {
    let (replicas, requirements) = replicas(template).unwrap_or_default();
    let resource_request = requirements["resourceRequest"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect();
    Workload {
        replicas,
        resource_request,
        has_replica_requirements: requirements.is_object(),
        scheduled: Vec::new(),
        uid: template["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    }
}
