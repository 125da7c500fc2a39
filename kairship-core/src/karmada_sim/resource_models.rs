//! Karmada's cluster resource models (feature `CustomizedClusterResourceModeling`, on by
//! default): the grades of `spec.resourceModels` a new Cluster gets, how they are put in a
//! canonical form, and `status.resourceSummary.allocatableModelings`, the member's nodes
//! counted by the grade of what is still free on each.

use std::collections::BTreeMap;

use kube_kit::quantity::Quantity;
use serde_json::{Value, json};

/// The largest quantity Karmada writes (`math.MaxInt64`).
const MAX_INT64: &str = "9223372036854775807";

/// `spec.resourceModels` of a Cluster created without any (karmada-io/karmada
/// `pkg/apis/cluster/mutation/mutation.go`, `SetDefaultClusterResourceModels`, as a real
/// Karmada v1.19 serialized them in `cluster-edge-1-pull-no-agent.json`).
pub fn default_resource_models() -> Value {
    let grades = [
        ("0", "1", "0", "4Gi"),
        ("1", "2", "4Gi", "16Gi"),
        ("2", "4", "16Gi", "32Gi"),
        ("4", "8", "32Gi", "64Gi"),
        ("8", "16", "64Gi", "128Gi"),
        ("16", "32", "128Gi", "256Gi"),
        ("32", "64", "256Gi", "512Gi"),
        ("64", "128", "512Gi", "1Ti"),
        ("128", MAX_INT64, "1Ti", MAX_INT64),
    ];
    grades
        .iter()
        .enumerate()
        .map(|(grade, (cpu_min, cpu_max, mem_min, mem_max))| {
            json!({"grade": grade, "ranges": [
                {"name": "cpu", "min": cpu_min, "max": cpu_max},
                {"name": "memory", "min": mem_min, "max": mem_max}]})
        })
        .collect()
}

/// `StandardizeClusterResourceModels`: the grades in order, the first grade's minimums zero
/// and the last grade's maximums `MaxInt64`.
pub fn standardize(models: &mut [Value]) {
    if models.is_empty() {
        return;
    }
    models.sort_by_key(|m| m["grade"].as_i64().unwrap_or(0));
    if let Some(ranges) = models[0]["ranges"].as_array_mut() {
        for range in ranges {
            range["min"] = json!("0");
        }
    }
    let last = models.len() - 1;
    if let Some(ranges) = models[last]["ranges"].as_array_mut() {
        for range in ranges {
            range["max"] = json!(MAX_INT64);
        }
    }
}

/// What Karmada's Cluster strategy does to `spec.resourceModels` (`pkg/registry/cluster/
/// strategy.go`, `PrepareForCreate` and `PrepareForUpdate`): on create, the defaults when
/// there are none, else the canonical form; on update, the canonical form of any given.
pub fn prepare(cluster: &mut Value, create: bool) {
    let models = cluster
        .pointer("/spec/resourceModels")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if models.is_empty() {
        if create {
            cluster["spec"]["resourceModels"] = default_resource_models();
        }
        return;
    }
    let mut models = models;
    standardize(&mut models);
    cluster["spec"]["resourceModels"] = Value::Array(models);
}

fn quantity(value: &Value) -> Option<Quantity> {
    match value {
        Value::String(s) => Quantity::parse(s).ok(),
        Value::Number(n) => Quantity::parse(&n.to_string()).ok(),
        _ => None,
    }
}

fn resources(list: Option<&Value>) -> BTreeMap<String, Quantity> {
    list.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), quantity(v)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// A pod's requests as Karmada counts them (`pkg/util/resource.go`, `AddPodRequest`): the
/// containers' sum, raised to any init container's, plus the overhead.
fn pod_requests(pod: &Value) -> BTreeMap<String, Quantity> {
    let mut total = crate::scheduling::pod_spec_requests(&pod["spec"]);
    for (name, q) in resources(pod.pointer("/spec/overhead")) {
        *total.entry(name).or_default() += q;
    }
    total
}

/// `status.resourceSummary.allocatableModelings` of a member with `models`
/// (`spec.resourceModels`), `nodes` and `pods` (`pkg/controllers/status/
/// cluster_status_controller.go`, `getAllocatableModelings`, with `getNodeAvailable` and
/// `pkg/modeling`): what each node has free (allocatable less the requests of the pods bound
/// to it and not finished) falls in the highest grade whose minimum it reaches in every
/// resource; the nodes are counted per grade. As upstream, the count stops at the first node
/// without room for another pod. `None` without models.
pub fn allocatable_modelings(models: &Value, nodes: &[Value], pods: &[Value]) -> Option<Value> {
    let models = models.as_array().filter(|m| !m.is_empty())?;
    // `InitSummary`: the resource names of the first grade, each grade's minimums.
    let names: Vec<String> = models[0]["ranges"]
        .as_array()?
        .iter()
        .filter_map(|r| r["name"].as_str().map(str::to_owned))
        .collect();
    let minimums: Vec<BTreeMap<String, Quantity>> = models
        .iter()
        .map(|m| {
            m["ranges"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| Some((r["name"].as_str()?.to_owned(), quantity(&r["min"])?)))
                .collect()
        })
        .collect();
    let mut requested: BTreeMap<String, BTreeMap<String, Quantity>> = BTreeMap::new();
    let mut pod_count: BTreeMap<String, i128> = BTreeMap::new();
    for pod in pods {
        let node = pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let phase = pod.pointer("/status/phase").and_then(Value::as_str);
        if node.is_empty() || matches!(phase, Some("Succeeded" | "Failed")) {
            continue;
        }
        let on_node = requested.entry(node.to_owned()).or_default();
        for (name, q) in pod_requests(pod) {
            *on_node.entry(name).or_default() += q;
        }
        *pod_count.entry(node.to_owned()).or_default() += 1;
    }
    let mut counts = vec![0_i64; models.len()];
    for node in nodes {
        let name = node
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut available = resources(node.pointer("/status/allocatable"));
        if let Some(used) = requested.get(name) {
            let pods_free = available.get("pods").map_or(0, Quantity::value)
                - pod_count.get(name).copied().unwrap_or(0);
            if pods_free <= 0 {
                break;
            }
            for (resource, q) in used {
                if let Some(free) = available.get_mut(resource) {
                    *free -= *q;
                }
            }
        }
        // `getIndex`: per resource the last grade whose minimum the node reaches; the lowest.
        let grade = names
            .iter()
            .map(|resource| {
                let have = available.get(resource).copied().unwrap_or_default();
                minimums
                    .iter()
                    .rposition(|m| m.get(resource).copied().unwrap_or_default() <= have)
            })
            .min()
            .flatten();
        if let Some(grade) = grade {
            counts[grade] += 1;
        }
    }
    Some(
        models
            .iter()
            .zip(counts)
            .map(|(m, count)| json!({"grade": m["grade"], "count": count}))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_are_defaulted_and_standardized_as_karmada_does() {
        let mut new = json!({"spec": {"syncMode": "Push"}});
        prepare(&mut new, true);
        let recorded: Value = serde_json::from_str(include_str!(
            "../../tests/data/karmada-v1.19/cluster-edge-1-pull-no-agent.json"
        ))
        .unwrap();
        assert_eq!(
            new["spec"]["resourceModels"],
            recorded["spec"]["resourceModels"]
        );
        // Given out of order with other bounds: sorted, the ends widened.
        let mut given = json!({"spec": {"resourceModels": [
            {"grade": 1, "ranges": [{"name": "cpu", "min": "2", "max": "4"}]},
            {"grade": 0, "ranges": [{"name": "cpu", "min": "1", "max": "2"}]}]}});
        prepare(&mut given, false);
        assert_eq!(
            given["spec"]["resourceModels"],
            json!([
                {"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "2"}]},
                {"grade": 1, "ranges": [{"name": "cpu", "min": "2", "max": MAX_INT64}]}])
        );
        // An update without models gets none.
        let mut updated = json!({"spec": {}});
        prepare(&mut updated, false);
        assert!(updated["spec"].get("resourceModels").is_none());
    }

    #[test]
    fn nodes_are_counted_by_the_grade_of_what_is_free_on_them() {
        let models = default_resource_models();
        let node = |name: &str, cpu: &str, memory: &str| {
            json!({"metadata": {"name": name},
                "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}})
        };
        let pod = |node: &str, cpu: &str, memory: &str, phase: &str| {
            json!({"spec": {"nodeName": node, "containers": [
                {"resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
                "status": {"phase": phase}})
        };
        // cluster-msb-push-kube-sandbox.json: 3 nodes of 4 CPU / 8Gi, 3 pods of 100m / 64Mi:
        // CPU in grade 2, memory in grade 1, so grade 1 for each.
        let nodes: Vec<Value> = (1..=3)
            .map(|i| node(&format!("msb-node-{i}"), "4", "8Gi"))
            .collect();
        let pods: Vec<Value> = (1..=3)
            .map(|i| pod(&format!("msb-node-{i}"), "100m", "64Mi", "Running"))
            .collect();
        let counts = |m: Value| -> Vec<i64> {
            m.as_array()
                .unwrap()
                .iter()
                .map(|g| g["count"].as_i64().unwrap())
                .collect()
        };
        assert_eq!(
            counts(allocatable_modelings(&models, &nodes, &pods).unwrap()),
            [0, 3, 0, 0, 0, 0, 0, 0, 0]
        );
        // What pods take moves a node down; finished pods take nothing.
        let busy = [
            pod("msb-node-1", "3500m", "1Gi", "Running"),
            pod("msb-node-2", "3500m", "1Gi", "Succeeded"),
        ];
        assert_eq!(
            counts(allocatable_modelings(&models, &nodes, &busy).unwrap()),
            [1, 2, 0, 0, 0, 0, 0, 0, 0]
        );
        // A node without room for another pod ends the count (upstream's `break`).
        let full = node("full", "4", "8Gi");
        let mut full = full;
        full["status"]["allocatable"]["pods"] = json!("1");
        let nodes = [full, node("big", "64", "256Gi")];
        let pods = [pod("full", "1", "1Gi", "Running")];
        assert_eq!(
            counts(allocatable_modelings(&models, &nodes, &pods).unwrap()),
            [0; 9]
        );
        assert_eq!(allocatable_modelings(&json!([]), &nodes, &pods), None);
    }
}
