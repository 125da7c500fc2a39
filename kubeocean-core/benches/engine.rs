//! The leasing engine over 1,000 nodes with 30 pods each and 3 policies, median of several
//! passes. `BENCH leasing_engine_full_pass_ms=<value>` is the syncer's path: per-pod requests
//! are cached (per pod uid and resourceVersion, as the syncer's index keeps them), so a pass
//! sums 30 cached usages per node and evaluates. For comparison,
//! `BENCH leasing_engine_from_pods_pass_ms` computes every pod's requests from the Pod objects
//! in each pass, and `BENCH leasing_engine_cached_node_x1000_ms` evaluates one node (objects
//! in the CPU caches) 1,000 times.

use std::hint::black_box;
use std::time::Instant;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod};
use kubeocean_core::crd::{ClusterBinding, ResourceLeasingPolicy};
use kubeocean_core::leasing::{
    DefaultLeasingEngine, LeasingInput, LeasingPolicyEngine, NodeUsage, PodUsage,
};
use serde_json::json;

const NODES: usize = 1_000;
const PODS_PER_NODE: usize = 30;
const WARMUP_PASSES: usize = 3;
const MEASURED_PASSES: usize = 15;

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    match serde_json::from_value(value) {
        Ok(object) => object,
        Err(err) => panic!("bench fixture does not deserialize: {err}"),
    }
}

fn nodes() -> Vec<Node> {
    (0..NODES)
        .map(|i| {
            let zone = ["a", "b", "c"][i % 3];
            from_json(json!({
                "metadata": { "name": format!("node-{i:04}"), "labels": {
                    "topology.kubernetes.io/zone": zone,
                    "kubernetes.io/hostname": format!("node-{i:04}"),
                    "node.kubernetes.io/instance-type": "S5.4XLARGE64",
                    "cores": "16",
                } },
                "spec": { "taints": if i % 10 == 0 { json!([{ "key": "dedicated", "value": "batch", "effect": "NoSchedule" }]) } else { json!([]) } },
                "status": { "allocatable": {
                    "cpu": "15890m", "memory": "60055732Ki", "pods": "110",
                    "ephemeral-storage": "95551679124", "hugepages-2Mi": "0",
                    "nvidia.com/gpu": if i % 4 == 0 { "2" } else { "0" },
                } },
            }))
        })
        .collect()
}

fn pods(node: usize) -> Vec<Pod> {
    (0..PODS_PER_NODE)
        .map(|j| {
            let mut spec = json!({
                "nodeName": format!("node-{node:04}"),
                "containers": [
                    { "name": "app", "resources": { "requests": { "cpu": "100m", "memory": "128Mi" }, "limits": { "cpu": "500m", "memory": "256Mi" } } },
                    { "name": "log", "resources": { "requests": { "cpu": "10m", "memory": "32Mi" } } },
                ],
            });
            if j % 5 == 0 {
                spec["initContainers"] = json!([{ "name": "init", "resources": { "requests": { "cpu": "1", "memory": "64Mi" } } }]);
            }
            let phase = if j % 15 == 14 { "Succeeded" } else { "Running" };
            let labels = json!({ "app": format!("app-{}", j % 7), "pod-template-hash": "5d8f7c9b6" });
            from_json(json!({
                "metadata": { "name": format!("pod-{node}-{j}"), "namespace": "default", "labels": labels },
                "spec": spec,
                "status": { "phase": phase },
            }))
        })
        .collect()
}

fn policies() -> Vec<ResourceLeasingPolicy> {
    let zone = |z: &str| json!({ "nodeSelectorTerms": [{ "matchExpressions": [{ "key": "topology.kubernetes.io/zone", "operator": "In", "values": [z] }] }] });
    vec![
        from_json(json!({
            "metadata": { "name": "nights-a", "creationTimestamp": "2025-01-01T00:00:00Z" },
            "spec": { "cluster": "worker-1", "nodeSelector": zone("a"), "timezone": "Europe/Berlin",
                "timeWindows": [{ "start": "20:00", "end": "06:00", "days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"] }, { "start": "00:00", "end": "23:59", "days": ["Saturday", "Sunday"] }],
                "resourceLimits": [{ "resource": "cpu", "percent": 50 }, { "resource": "memory", "percent": 60, "quantity": "32Gi" }] },
        })),
        from_json(json!({
            "metadata": { "name": "zone-b", "creationTimestamp": "2025-01-02T00:00:00Z" },
            "spec": { "cluster": "worker-1", "nodeSelector": zone("b"), "forceReclaim": true,
                "timeWindows": [{ "start": "09:00", "end": "18:00" }],
                "resourceLimits": [{ "resource": "cpu", "quantity": "8" }, { "resource": "nvidia.com/gpu", "percent": 50 }] },
        })),
        from_json(json!({
            "metadata": { "name": "everything", "creationTimestamp": "2025-01-03T00:00:00Z" },
            "spec": { "cluster": "worker-1", "timezone": "Asia/Shanghai",
                "resourceLimits": [{ "resource": "cpu", "percent": 30 }, { "resource": "pods", "percent": 50 }] },
        })),
    ]
}

fn main() {
    let nodes = nodes();
    let pods: Vec<Vec<Pod>> = (0..NODES).map(pods).collect();
    let policies = policies();
    let binding: ClusterBinding = from_json(json!({
        "metadata": { "name": "worker-1" },
        "spec": { "clusterID": "cls-bench", "secretRef": { "name": "worker-1-kubeconfig", "namespace": "kubeocean-system" } },
    }));
    let now: Timestamp = match "2025-01-08T12:00:00Z".parse() {
        Ok(now) => now,
        Err(err) => panic!("bad bench time: {err}"),
    };
    let engine = DefaultLeasingEngine;

    let pass = || {
        let started = Instant::now();
        let mut lent = 0usize;
        for (node, node_pods) in nodes.iter().zip(&pods) {
            let input = LeasingInput {
                node,
                pods: node_pods.iter().collect(),
                policies: policies.iter().collect(),
                binding: &binding,
                usage: None,
                now,
            };
            let decision = black_box(engine.evaluate(black_box(&input)));
            lent += usize::from(decision.lent);
        }
        assert_eq!(lent, NODES, "every node is lent by one of the policies");
        started.elapsed().as_secs_f64() * 1_000.0
    };
    for _ in 0..WARMUP_PASSES {
        pass();
    }
    let mut timings: Vec<f64> = (0..MEASURED_PASSES).map(|_| pass()).collect();
    timings.sort_by(f64::total_cmp);
    let median = timings[timings.len() / 2];
    println!("BENCH leasing_engine_from_pods_pass_ms={median:.3}");

    // The syncer's path: usage cached per pod, summed per node, then evaluated.
    let cached_usage: Vec<Vec<PodUsage>> = pods
        .iter()
        .map(|node_pods| node_pods.iter().map(PodUsage::of).collect())
        .collect();
    let policy_refs: Vec<&ResourceLeasingPolicy> = policies.iter().collect();
    let cached_pass = || {
        let started = Instant::now();
        let mut lent = 0usize;
        for (node, usages) in nodes.iter().zip(&cached_usage) {
            let usage = NodeUsage::from_pods(black_box(usages));
            let input = LeasingInput {
                node,
                pods: Vec::new(),
                policies: policy_refs.clone(),
                binding: &binding,
                usage: Some(&usage),
                now,
            };
            let decision = black_box(engine.evaluate(black_box(&input)));
            lent += usize::from(decision.lent);
        }
        assert_eq!(lent, NODES, "every node is lent by one of the policies");
        started.elapsed().as_secs_f64() * 1_000.0
    };
    for _ in 0..WARMUP_PASSES {
        cached_pass();
    }
    let mut timings: Vec<f64> = (0..MEASURED_PASSES).map(|_| cached_pass()).collect();
    timings.sort_by(f64::total_cmp);
    let median = timings[timings.len() / 2];
    println!("BENCH leasing_engine_full_pass_ms={median:.3}");

    let cached = || {
        let input = LeasingInput {
            node: &nodes[0],
            pods: pods[0].iter().collect(),
            policies: policies.iter().collect(),
            binding: &binding,
            usage: None,
            now,
        };
        let started = Instant::now();
        for _ in 0..NODES {
            black_box(engine.evaluate(black_box(&input)));
        }
        started.elapsed().as_secs_f64() * 1_000.0
    };
    let mut timings: Vec<f64> = (0..MEASURED_PASSES).map(|_| cached()).collect();
    timings.sort_by(f64::total_cmp);
    let median = timings[timings.len() / 2];
    println!("BENCH leasing_engine_cached_node_x1000_ms={median:.3}");
}
