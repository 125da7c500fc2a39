//! Karmada's default resource interpreter for the native kinds
//! (karmada-io/karmada `pkg/resourceinterpreter/default/native/`): replicas and per-replica
//! requests (`replica.go`), replicas revised per cluster (`revisereplica.go`), the status
//! reflected from a member (`reflectstatus.go`), health (`healthy.go`), the status aggregated
//! into the template (`aggregatestatus.go`) and the fields pruned from manifests
//! (`prune/prune.go`).

use serde_json::{Map, Value, json};

// `GetReplicas` is the scheduling module's: the placement preview needs it without the
// emulation.
pub use crate::scheduling::replicas;

/// The manifest with `replicas` for one cluster (`ReviseReplica`).
pub fn revise_replicas(manifest: &mut Value, replicas: i32) {
    match manifest["kind"].as_str().unwrap_or_default() {
        "Deployment" | "StatefulSet" | "ReplicaSet" => {
            manifest["spec"]["replicas"] = json!(replicas)
        }
        "Job" => manifest["spec"]["parallelism"] = json!(replicas),
        _ => {}
    }
}

/// Removes what must not travel to a member (`prune.RemoveIrrelevantFields`).
pub fn prune(manifest: &mut Value) {
    if let Some(meta) = manifest["metadata"].as_object_mut() {
        for f in [
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
            "resourceVersion",
            "selfLink",
            "uid",
            "ownerReferences",
            "finalizers",
        ] {
            meta.remove(f);
        }
    }
    if let Some(o) = manifest.as_object_mut() {
        o.remove("status");
    }
    match manifest["kind"].as_str().unwrap_or_default() {
        "Deployment" => {
            if let Some(a) = manifest["metadata"]["annotations"].as_object_mut() {
                a.remove("deployment.kubernetes.io/revision");
                a.remove("deployment.kubernetes.io/revision-history");
            }
        }
        "Service" => {
            let ip = manifest["spec"]["clusterIP"].as_str().map(str::to_owned);
            if ip.is_some_and(|ip| ip != "None")
                && let Some(spec) = manifest["spec"].as_object_mut()
            {
                spec.remove("clusterIP");
                spec.remove("clusterIPs");
            }
        }
        "Job" => {
            if manifest["spec"]["manualSelector"] != json!(true) {
                for pointer in [
                    "/spec/selector/matchLabels",
                    "/spec/template/metadata/labels",
                ] {
                    if let Some(l) = manifest.pointer_mut(pointer).and_then(Value::as_object_mut) {
                        for k in [
                            "controller-uid",
                            "job-name",
                            "batch.kubernetes.io/controller-uid",
                            "batch.kubernetes.io/job-name",
                        ] {
                            l.remove(k);
                        }
                    }
                }
            }
            if let Some(spec) = manifest["spec"].as_object_mut() {
                spec.remove("ttlSecondsAfterFinished");
            }
        }
        _ => {}
    }
}

fn pick(from: &Value, fields: &[&str], always: &[&str]) -> Map<String, Value> {
    let mut out = Map::new();
    for f in fields {
        match from.get(*f) {
            Some(v) if !(v.is_null() || v == &json!(0) || v == &json!([])) => {
                out.insert((*f).into(), v.clone());
            }
            _ if always.contains(f) => {
                out.insert((*f).into(), json!(0));
            }
            _ => {}
        }
    }
    out
}

fn federated_generation(member: &Value, out: &mut Map<String, Value>) {
    // `FederatedGeneration`: both omitted when 0.
    if let Some(g) = member["metadata"]["generation"]
        .as_i64()
        .filter(|g| *g != 0)
    {
        out.insert("generation".into(), json!(g));
    }
    let template = member["metadata"]["annotations"][super::objects::TEMPLATE_GENERATION]
        .as_str()
        .and_then(|g| g.parse::<i64>().ok())
        .unwrap_or(0);
    if template != 0 {
        out.insert("resourceTemplateGeneration".into(), json!(template));
    }
}

/// The status the work-status controller records for a member object (`ReflectStatus`);
/// `None` when there is nothing to record.
pub fn reflect_status(member: &Value) -> Option<Value> {
    let status = &member["status"];
    let kind = member["kind"].as_str().unwrap_or_default();
    let out = match kind {
        "Deployment" => {
            if !status.is_object() {
                return None;
            }
            let mut out = Map::new();
            federated_generation(member, &mut out);
            out.extend(pick(
                status,
                &[
                    "observedGeneration",
                    "replicas",
                    "updatedReplicas",
                    "readyReplicas",
                    "availableReplicas",
                    "unavailableReplicas",
                ],
                &[],
            ));
            out
        }
        "StatefulSet" => {
            if !status.is_object() {
                return None;
            }
            let mut out = Map::new();
            federated_generation(member, &mut out);
            out.extend(pick(
                status,
                &[
                    "replicas",
                    "readyReplicas",
                    "currentReplicas",
                    "updatedReplicas",
                    "availableReplicas",
                ],
                &["replicas", "availableReplicas"],
            ));
            out
        }
        "DaemonSet" => {
            if !status.is_object() {
                return None;
            }
            let mut out = Map::new();
            federated_generation(member, &mut out);
            out.extend(pick(
                status,
                &[
                    "currentNumberScheduled",
                    "numberMisscheduled",
                    "desiredNumberScheduled",
                    "numberReady",
                    "observedGeneration",
                    "updatedNumberScheduled",
                    "numberAvailable",
                    "numberUnavailable",
                ],
                &[
                    "currentNumberScheduled",
                    "numberMisscheduled",
                    "desiredNumberScheduled",
                    "numberReady",
                ],
            ));
            out
        }
        "Job" => pick(
            status,
            &[
                "conditions",
                "startTime",
                "completionTime",
                "active",
                "succeeded",
                "failed",
            ],
            &[],
        ),
        "Service" => {
            if member["spec"]["type"] != "LoadBalancer" {
                return None;
            }
            let mut out = Map::new();
            out.insert("loadBalancer".into(), status["loadBalancer"].clone());
            out
        }
        _ => return status.as_object().cloned().map(Value::Object),
    };
    (!out.is_empty()).then_some(Value::Object(out))
}

/// `Healthy`, `Unhealthy` or, for kinds without a rule, `Healthy` (`InterpretHealth`).
pub fn health(member: &Value) -> &'static str {
    let s = &member["status"];
    let i = |v: &Value| v.as_i64().unwrap_or(0);
    let generation = i(&member["metadata"]["generation"]);
    let healthy = match member["kind"].as_str().unwrap_or_default() {
        "Deployment" | "StatefulSet" => {
            i(&s["observedGeneration"]) == generation
                && member["spec"]["replicas"]
                    .as_i64()
                    .is_none_or(|r| i(&s["updatedReplicas"]) >= r)
                && i(&s["availableReplicas"]) >= i(&s["updatedReplicas"])
        }
        "DaemonSet" => {
            i(&s["observedGeneration"]) == generation
                && i(&s["updatedNumberScheduled"]) >= i(&s["desiredNumberScheduled"])
                && i(&s["numberAvailable"]) >= i(&s["updatedNumberScheduled"])
        }
        "Service" => {
            member["spec"]["type"] != "LoadBalancer"
                || s["loadBalancer"]["ingress"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|g| {
                        g["ip"].as_str().is_some_and(|x| !x.is_empty())
                            || g["hostname"].as_str().is_some_and(|x| !x.is_empty())
                    })
        }
        "PersistentVolumeClaim" => s["phase"] == "Bound",
        "Pod" => {
            s["phase"] == "Succeeded"
                || (s["phase"] == "Running"
                    && s["conditions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True"))
        }
        _ => true,
    };
    if healthy { "Healthy" } else { "Unhealthy" }
}

/// The template's status aggregated from the bindings' `aggregatedStatus` items
/// (`AggregateStatus`); `None` when the kind aggregates nothing or nothing changed.
pub fn aggregate_status(template: &Value, items: &[Value]) -> Option<Value> {
    let old = &template["status"];
    let statuses: Vec<&Value> = items
        .iter()
        .map(|i| &i["status"])
        .filter(|s| s.is_object())
        .collect();
    let sum = |field: &str| -> i64 {
        statuses
            .iter()
            .map(|s| s[field].as_i64().unwrap_or(0))
            .sum()
    };
    let generation = template["metadata"]["generation"].as_i64().unwrap_or(0);
    // Every member saw its latest spec and the template's latest generation.
    let all_latest = items.iter().all(|i| {
        let s = &i["status"];
        s["observedGeneration"].as_i64().unwrap_or(0) >= s["generation"].as_i64().unwrap_or(0)
            && s["resourceTemplateGeneration"].as_i64().unwrap_or(0) >= generation
    });
    let observed = if all_latest {
        generation
    } else {
        old["observedGeneration"].as_i64().unwrap_or(0)
    };
    let mut next = old.as_object().cloned().unwrap_or_default();
    let mut set = |k: &str, v: i64| {
        if v == 0 {
            next.remove(k);
        } else {
            next.insert(k.into(), json!(v));
        }
    };
    match template["kind"].as_str().unwrap_or_default() {
        "Deployment" => {
            set("observedGeneration", observed);
            for f in [
                "replicas",
                "readyReplicas",
                "updatedReplicas",
                "availableReplicas",
                "unavailableReplicas",
            ] {
                set(f, sum(f));
            }
        }
        "StatefulSet" => {
            set("observedGeneration", observed);
            for f in [
                "replicas",
                "readyReplicas",
                "currentReplicas",
                "updatedReplicas",
                "availableReplicas",
            ] {
                set(f, sum(f));
            }
        }
        "DaemonSet" => {
            set("observedGeneration", observed);
            for f in [
                "currentNumberScheduled",
                "numberMisscheduled",
                "desiredNumberScheduled",
                "numberReady",
                "updatedNumberScheduled",
                "numberAvailable",
                "numberUnavailable",
            ] {
                set(f, sum(f));
            }
        }
        "Job" => {
            // A finished Job is never updated again (`aggregateJobStatus`).
            let finished = old["conditions"].as_array().into_iter().flatten().any(|c| {
                (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True"
            });
            if finished {
                return None;
            }
            for f in ["active", "succeeded", "failed"] {
                set(f, sum(f));
            }
            let clusters = items.len();
            let done = |t: &str| {
                clusters > 0
                    && statuses.len() == clusters
                    && statuses.iter().all(|s| {
                        s["conditions"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|c| c["type"] == t && c["status"] == "True")
                    })
            };
            if done("Complete") {
                let time = statuses
                    .iter()
                    .filter_map(|s| s["completionTime"].as_str())
                    .max()
                    .map(str::to_owned);
                next.insert(
                    "conditions".into(),
                    json!([{"type": "Complete", "status": "True", "reason": "Completed",
                            "message": "Job completed", "lastProbeTime": time, "lastTransitionTime": time}]),
                );
                if let Some(t) = time {
                    next.insert("completionTime".into(), json!(t));
                }
            }
            if let Some(start) = statuses
                .iter()
                .filter_map(|s| s["startTime"].as_str())
                .min()
            {
                next.insert("startTime".into(), json!(start));
            }
        }
        "Service" => {
            if template["spec"]["type"] != "LoadBalancer" {
                return None;
            }
            let mut ingress: Vec<Value> = statuses
                .iter()
                .flat_map(|s| {
                    s["loadBalancer"]["ingress"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                })
                .collect();
            ingress.sort_by_key(|i| i.to_string());
            ingress.dedup();
            next.insert(
                "loadBalancer".into(),
                if ingress.is_empty() {
                    json!({})
                } else {
                    json!({"ingress": ingress})
                },
            );
        }
        "Pod" => {
            let phases: Vec<&str> = items
                .iter()
                .map(|i| i["status"]["phase"].as_str().unwrap_or("Pending"))
                .collect();
            let phase = ["Failed", "Pending", "Running", "Succeeded"]
                .into_iter()
                .find(|p| phases.contains(p));
            let containers: Vec<Value> = statuses
                .iter()
                .flat_map(|s| s["containerStatuses"].as_array().cloned().unwrap_or_default())
                .map(|c| json!({"ready": c["ready"], "state": c["state"], "name": "", "image": "", "imageID": "", "restartCount": 0}))
                .collect();
            next = Map::new();
            if let Some(p) = phase {
                next.insert("phase".into(), json!(p));
            }
            if !containers.is_empty() {
                next.insert("containerStatuses".into(), json!(containers));
            }
        }
        _ => return None,
    }
    let next = Value::Object(next);
    (&next != old && !(old.is_null() && next == json!({}))).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_and_requests_of_the_recorded_deployment() {
        let d = json!({"kind": "Deployment", "metadata": {"namespace": "demo"}, "spec": {"replicas": 4,
            "template": {"spec": {"containers": [{"resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}});
        let (n, req) = replicas(&d).unwrap_or_default();
        assert_eq!(n, 4);
        assert_eq!(
            req,
            json!({"namespace": "demo", "resourceRequest": {"cpu": "100m", "memory": "64Mi"}})
        );
        assert!(replicas(&json!({"kind": "Service"})).is_none());
    }

    #[test]
    fn deployment_status_reflects_and_aggregates_as_recorded() {
        // kairship-core/tests/data/karmada-v1.19/resourcebinding-shop-deployment.json.
        let member = json!({"kind": "Deployment",
            "metadata": {"generation": 1, "annotations": {super::super::objects::TEMPLATE_GENERATION: "2"}},
            "spec": {"replicas": 1},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "unavailableReplicas": 1}});
        assert_eq!(
            reflect_status(&member),
            Some(
                json!({"generation": 1, "observedGeneration": 1, "replicas": 1, "resourceTemplateGeneration": 2,
                        "unavailableReplicas": 1, "updatedReplicas": 1})
            )
        );
        assert_eq!(health(&member), "Unhealthy");
        let items = vec![
            json!({"status": reflect_status(&member)}),
            json!({"status": {"availableReplicas": 3, "generation": 1, "observedGeneration": 1, "readyReplicas": 3,
                              "replicas": 3, "resourceTemplateGeneration": 2, "updatedReplicas": 3}}),
        ];
        let template = json!({"kind": "Deployment", "metadata": {"generation": 2}});
        assert_eq!(
            aggregate_status(&template, &items),
            Some(
                json!({"observedGeneration": 2, "replicas": 4, "updatedReplicas": 4, "readyReplicas": 3,
                        "availableReplicas": 3, "unavailableReplicas": 1})
            )
        );
        let done = json!({"kind": "Deployment", "metadata": {"generation": 2}, "status": aggregate_status(&template, &items)});
        assert_eq!(aggregate_status(&done, &items), None);
    }

    #[test]
    fn pruning_drops_instance_fields() {
        let mut s = json!({"kind": "Service", "metadata": {"uid": "u", "resourceVersion": "1", "name": "x"},
            "spec": {"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"], "type": "ClusterIP"}, "status": {}});
        prune(&mut s);
        assert_eq!(
            s,
            json!({"kind": "Service", "metadata": {"name": "x"}, "spec": {"type": "ClusterIP"}})
        );
    }
}
