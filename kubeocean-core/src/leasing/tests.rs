//! Table-driven tests of the leasing engine and its parts.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeSelector, Pod, Taint};
use serde_json::{Value, json};

use super::*;
use crate::crd::{ClusterBinding, ResourceLeasingPolicy};

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn node(name: &str, labels: Value, allocatable: Value, taints: Value) -> Node {
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": labels },
        "spec": { "taints": taints },
        "status": { "allocatable": allocatable },
    }))
    .unwrap()
}

fn plain_node(allocatable: Value) -> Node {
    node("node-1", json!({}), allocatable, json!([]))
}

/// A pod from its spec (containers etc.) and phase; `null` phase means no status.
fn pod(spec: Value, phase: Value) -> Pod {
    let mut pod = json!({ "metadata": { "name": "p" }, "spec": spec });
    if !phase.is_null() {
        pod["status"] = json!({ "phase": phase });
    }
    serde_json::from_value(pod).unwrap()
}

fn app(requests: Value) -> Value {
    json!({ "name": "app", "resources": { "requests": requests } })
}

fn running(requests: Value) -> Pod {
    pod(json!({ "containers": [app(requests)] }), json!("Running"))
}

fn policy(name: &str, created: &str, spec: Value) -> ResourceLeasingPolicy {
    let mut spec = spec;
    if spec.get("cluster").is_none() {
        spec["cluster"] = json!("binding-a");
    }
    serde_json::from_value(json!({
        "apiVersion": "cloud.tencent.com/v1beta1",
        "kind": "ResourceLeasingPolicy",
        "metadata": { "name": name, "creationTimestamp": created },
        "spec": spec,
    }))
    .unwrap()
}

fn binding(spec_extra: Value) -> ClusterBinding {
    let mut spec = json!({ "clusterID": "c1", "secretRef": { "name": "kc", "namespace": "kubeocean-system" } });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(json!({ "metadata": { "name": "binding-a" }, "spec": spec })).unwrap()
}

fn canonical(map: &BTreeMap<String, kube_kit::quantity::Quantity>) -> BTreeMap<String, String> {
    map.iter()
        .map(|(k, v)| (k.clone(), v.to_canonical_string()))
        .collect()
}

fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn evaluate(
    node: &Node,
    pods: &[Pod],
    policies: &[ResourceLeasingPolicy],
    binding: &ClusterBinding,
    now: &str,
) -> LeasingDecision {
    DefaultLeasingEngine.evaluate(&LeasingInput {
        node,
        pods: pods.iter().collect(),
        policies: policies.iter().collect(),
        binding,
        usage: None,
        now: ts(now),
    })
}

fn schedule(windows: Value, timezone: Option<&str>) -> Schedule {
    let mut spec = json!({ "cluster": "binding-a", "timeWindows": windows });
    if let Some(tz) = timezone {
        spec["timezone"] = json!(tz);
    }
    Schedule::parse(&serde_json::from_value(spec).unwrap()).unwrap()
}

#[test]
fn time_windows() {
    struct Case {
        what: &'static str,
        windows: Value,
        timezone: Option<&'static str>,
        at: &'static str,
        in_window: bool,
        next_change: Option<&'static str>,
    }
    let office = json!([{ "start": "09:00", "end": "17:00" }]);
    let friday_night = json!([{ "start": "22:00", "end": "02:00", "days": ["Friday"] }]);
    // 2025-01-03 is a Friday.
    let cases = [
        Case {
            what: "no windows: always",
            windows: json!([]),
            timezone: None,
            at: "2025-01-03T12:00:00Z",
            in_window: true,
            next_change: None,
        },
        Case {
            what: "inside a day window",
            windows: office.clone(),
            timezone: None,
            at: "2025-01-03T12:00:00Z",
            in_window: true,
            next_change: Some("2025-01-03T17:01:00Z"),
        },
        Case {
            what: "start edge is inclusive",
            windows: office.clone(),
            timezone: None,
            at: "2025-01-03T09:00:00Z",
            in_window: true,
            next_change: Some("2025-01-03T17:01:00Z"),
        },
        Case {
            what: "end minute is inclusive",
            windows: office.clone(),
            timezone: None,
            at: "2025-01-03T17:00:59Z",
            in_window: true,
            next_change: Some("2025-01-03T17:01:00Z"),
        },
        Case {
            what: "after the end minute",
            windows: office.clone(),
            timezone: None,
            at: "2025-01-03T17:01:00Z",
            in_window: false,
            next_change: Some("2025-01-04T09:00:00Z"),
        },
        Case {
            what: "just before the start",
            windows: office.clone(),
            timezone: None,
            at: "2025-01-03T08:59:59.5Z",
            in_window: false,
            next_change: Some("2025-01-03T09:00:00Z"),
        },
        Case {
            what: "overnight window covers the next morning",
            windows: friday_night.clone(),
            timezone: None,
            at: "2025-01-04T01:00:00Z",
            in_window: true,
            next_change: Some("2025-01-04T02:01:00Z"),
        },
        Case {
            what: "overnight window belongs to its start day",
            windows: friday_night.clone(),
            timezone: None,
            at: "2025-01-03T01:00:00Z",
            in_window: false,
            next_change: Some("2025-01-03T22:00:00Z"),
        },
        Case {
            what: "overnight window not on other days",
            windows: friday_night.clone(),
            timezone: None,
            at: "2025-01-05T01:00:00Z",
            in_window: false,
            next_change: Some("2025-01-10T22:00:00Z"),
        },
        Case {
            what: "day names are case-insensitive",
            windows: json!([{ "start": "00:00", "end": "23:59", "days": ["sATURDAY", "sunday"] }]),
            timezone: None,
            at: "2025-01-05T10:00:00Z",
            in_window: true,
            next_change: Some("2025-01-06T00:00:00Z"),
        },
        Case {
            what: "a weekend window starts next Saturday",
            windows: json!([{ "start": "00:00", "end": "23:59", "days": ["Saturday", "Sunday"] }]),
            timezone: None,
            at: "2025-01-06T10:00:00Z",
            in_window: false,
            next_change: Some("2025-01-11T00:00:00Z"),
        },
        Case {
            what: "overnight Sunday window wraps into Monday",
            windows: json!([{ "start": "23:00", "end": "01:00", "days": ["Sunday"] }]),
            timezone: None,
            at: "2025-01-06T00:30:00Z",
            in_window: true,
            next_change: Some("2025-01-06T01:01:00Z"),
        },
        Case {
            what: "touching windows are one run",
            windows: json!([{ "start": "08:00", "end": "11:59" }, { "start": "12:00", "end": "13:00" }]),
            timezone: None,
            at: "2025-01-03T11:00:00Z",
            in_window: true,
            next_change: Some("2025-01-03T13:01:00Z"),
        },
        Case {
            what: "whole week never changes",
            windows: json!([{ "start": "00:00", "end": "23:59" }]),
            timezone: None,
            at: "2025-01-03T11:00:00Z",
            in_window: true,
            next_change: None,
        },
        Case {
            what: "one-minute window",
            windows: json!([{ "start": "12:00", "end": "12:00" }]),
            timezone: None,
            at: "2025-01-03T12:00:30Z",
            in_window: true,
            next_change: Some("2025-01-03T12:01:00Z"),
        },
        Case {
            what: "read in the policy's time zone",
            windows: json!([{ "start": "09:00", "end": "18:00" }]),
            timezone: Some("Asia/Shanghai"),
            at: "2025-01-06T02:00:00Z",
            in_window: true,
            next_change: Some("2025-01-06T10:01:00Z"),
        },
        Case {
            what: "time zone decides the weekday",
            windows: json!([{ "start": "00:00", "end": "23:59", "days": ["Monday"] }]),
            timezone: Some("Asia/Tokyo"),
            at: "2025-01-05T16:00:00Z",
            in_window: true,
            next_change: Some("2025-01-06T15:00:00Z"),
        },
        Case {
            what: "winter offset of Europe/Berlin",
            windows: office.clone(),
            timezone: Some("Europe/Berlin"),
            at: "2025-03-28T12:00:00Z",
            in_window: true,
            next_change: Some("2025-03-28T16:01:00Z"),
        },
        Case {
            what: "summer offset after the DST change",
            windows: office.clone(),
            timezone: Some("Europe/Berlin"),
            at: "2025-03-31T12:00:00Z",
            in_window: true,
            next_change: Some("2025-03-31T15:01:00Z"),
        },
        Case {
            what: "next start across the spring-forward night",
            windows: office.clone(),
            timezone: Some("Europe/Berlin"),
            at: "2025-03-29T20:00:00Z",
            in_window: false,
            next_change: Some("2025-03-30T07:00:00Z"),
        },
        Case {
            what: "window cut short by the spring-forward jump",
            windows: json!([{ "start": "01:00", "end": "02:30" }]),
            timezone: Some("America/New_York"),
            at: "2025-03-09T06:30:00Z",
            in_window: true,
            next_change: Some("2025-03-09T07:00:00Z"),
        },
        Case {
            what: "fall-back: first pass through the repeated hour",
            windows: json!([{ "start": "02:00", "end": "02:29" }]),
            timezone: Some("Europe/Berlin"),
            at: "2025-10-26T00:10:00Z",
            in_window: true,
            next_change: Some("2025-10-26T00:30:00Z"),
        },
        Case {
            what: "fall-back: the repeated hour starts the window again",
            windows: json!([{ "start": "02:00", "end": "02:29" }]),
            timezone: Some("Europe/Berlin"),
            at: "2025-10-26T00:45:00Z",
            in_window: false,
            next_change: Some("2025-10-26T01:00:00Z"),
        },
    ];
    for case in cases {
        let schedule = schedule(case.windows, case.timezone);
        let state = schedule.state(ts(case.at));
        assert_eq!(state.in_window, case.in_window, "{}: in window", case.what);
        assert_eq!(
            state.next_change,
            case.next_change.map(ts),
            "{}: next change",
            case.what
        );
        assert_eq!(
            schedule.is_active(ts(case.at)),
            case.in_window,
            "{}: is_active",
            case.what
        );
        if let Some(next) = state.next_change {
            assert_ne!(
                schedule.is_active(next),
                case.in_window,
                "{}: the state flips at the next change",
                case.what
            );
        }
    }
}

#[test]
fn leasing_math() {
    struct Case {
        what: &'static str,
        allocatable: Value,
        pods: Vec<Pod>,
        limits: Value,
        want: &'static [(&'static str, &'static str)],
    }
    let cases = vec![
        Case {
            what: "design example: 50% cpu, 75% memory of what remains",
            allocatable: json!({ "cpu": "4", "memory": "8Gi" }),
            pods: vec![running(json!({ "cpu": "1", "memory": "2Gi" }))],
            limits: json!([{ "resource": "cpu", "percent": 50 }, { "resource": "memory", "percent": 75 }]),
            want: &[("cpu", "1500m"), ("memory", "4608Mi")],
        },
        Case {
            what: "quantity smaller than percent wins",
            allocatable: json!({ "cpu": "4" }),
            pods: vec![],
            limits: json!([{ "resource": "cpu", "percent": 50, "quantity": "1" }]),
            want: &[("cpu", "1")],
        },
        Case {
            what: "percent smaller than quantity wins",
            allocatable: json!({ "cpu": "4" }),
            pods: vec![],
            limits: json!([{ "resource": "cpu", "percent": 25, "quantity": "3" }]),
            want: &[("cpu", "1")],
        },
        Case {
            what: "a cap above what remains changes nothing",
            allocatable: json!({ "cpu": "4", "memory": "8Gi" }),
            pods: vec![running(json!({ "cpu": "3" }))],
            limits: json!([{ "resource": "cpu", "quantity": "2" }]),
            want: &[("cpu", "1"), ("memory", "8Gi")],
        },
        Case {
            what: "zero quantity and zero percent are not caps",
            allocatable: json!({ "cpu": "4" }),
            pods: vec![],
            limits: json!([{ "resource": "cpu", "percent": 0, "quantity": "0" }]),
            want: &[("cpu", "4")],
        },
        Case {
            what: "limit on a missing resource is ignored; others pass through",
            allocatable: json!({ "cpu": "2", "memory": "1Gi" }),
            pods: vec![],
            limits: json!([{ "resource": "nvidia.com/gpu", "quantity": "1" }]),
            want: &[("cpu", "2"), ("memory", "1Gi")],
        },
        Case {
            what: "usage above the base clamps to zero",
            allocatable: json!({ "cpu": "1" }),
            pods: vec![running(json!({ "cpu": "1500m" }))],
            limits: json!([]),
            want: &[("cpu", "0")],
        },
        Case {
            what: "each counted pod uses one of pods; half of 107 rounds down",
            allocatable: json!({ "cpu": "8", "pods": "110" }),
            pods: vec![running(json!({})), running(json!({})), pod(json!({ "containers": [app(json!({}))] }), json!("Pending"))],
            limits: json!([{ "resource": "pods", "percent": 50 }]),
            want: &[("cpu", "8"), ("pods", "53")],
        },
        Case {
            what: "GPUs are lent in whole units",
            allocatable: json!({ "nvidia.com/gpu": "3" }),
            pods: vec![],
            limits: json!([{ "resource": "nvidia.com/gpu", "percent": 50 }]),
            want: &[("nvidia.com/gpu", "1")],
        },
        Case {
            what: "hugepages are byte amounts, not extended resources",
            allocatable: json!({ "hugepages-2Mi": "1Gi" }),
            pods: vec![],
            limits: json!([{ "resource": "hugepages-2Mi", "percent": 50 }]),
            want: &[("hugepages-2Mi", "512Mi")],
        },
        Case {
            what: "memory percent rounds down to whole bytes",
            allocatable: json!({ "memory": "1025Ki" }),
            pods: vec![],
            limits: json!([{ "resource": "memory", "percent": 33 }]),
            want: &[("memory", "346368")],
        },
        Case {
            what: "decimal memory stays decimal",
            allocatable: json!({ "memory": "16G" }),
            pods: vec![],
            limits: json!([{ "resource": "memory", "percent": 75 }]),
            want: &[("memory", "12G")],
        },
        Case {
            what: "the largest init container beats smaller app containers",
            allocatable: json!({ "cpu": "4" }),
            pods: vec![pod(
                json!({
                    "initContainers": [{ "name": "init", "resources": { "requests": { "cpu": "2" } } }],
                    "containers": [app(json!({ "cpu": "1" })), app(json!({ "cpu": "500m" }))],
                }),
                json!("Running"),
            )],
            limits: json!([]),
            want: &[("cpu", "2")],
        },
        Case {
            what: "sidecars add to the app containers; init containers are not summed",
            allocatable: json!({ "cpu": "4" }),
            pods: vec![pod(
                json!({
                    "initContainers": [
                        { "name": "setup", "resources": { "requests": { "cpu": "1" } } },
                        { "name": "migrate", "resources": { "requests": { "cpu": "1200m" } } },
                        { "name": "proxy", "restartPolicy": "Always", "resources": { "requests": { "cpu": "500m" } } },
                    ],
                    "containers": [app(json!({ "cpu": "1" }))],
                }),
                json!("Running"),
            )],
            limits: json!([]),
            want: &[("cpu", "2500m")],
        },
        Case {
            what: "an init container after a sidecar runs next to it",
            allocatable: json!({ "cpu": "4" }),
            pods: vec![pod(
                json!({
                    "initContainers": [
                        { "name": "proxy", "restartPolicy": "Always", "resources": { "requests": { "cpu": "1" } } },
                        { "name": "warmup", "resources": { "requests": { "cpu": "2" } } },
                    ],
                    "containers": [app(json!({ "cpu": "500m" }))],
                }),
                json!("Running"),
            )],
            limits: json!([]),
            want: &[("cpu", "1")],
        },
        Case {
            what: "pod overhead counts",
            allocatable: json!({ "cpu": "4", "memory": "1Gi" }),
            pods: vec![pod(json!({ "containers": [app(json!({ "cpu": "1" }))], "overhead": { "cpu": "250m", "memory": "128Mi" } }), json!("Running"))],
            limits: json!([]),
            want: &[("cpu", "2750m"), ("memory", "896Mi")],
        },
        Case {
            what: "a limit without a request counts as the request (after API defaulting)",
            allocatable: json!({ "cpu": "4" }),
            pods: vec![{
                let mut limited = pod(json!({ "containers": [{ "name": "app", "resources": { "limits": { "cpu": "1" } } }] }), json!("Running"));
                default_requests_from_limits(&mut limited);
                limited
            }],
            limits: json!([]),
            want: &[("cpu", "3")],
        },
        Case {
            what: "pod-level requests replace the container sum",
            allocatable: json!({ "cpu": "4" }),
            pods: vec![pod(json!({ "resources": { "requests": { "cpu": "2" } }, "containers": [app(json!({ "cpu": "500m" }))] }), json!("Running"))],
            limits: json!([]),
            want: &[("cpu", "2")],
        },
        Case {
            what: "finished pods, our own pods do not count; a pod without status does",
            allocatable: json!({ "cpu": "10", "pods": "10" }),
            pods: vec![
                pod(json!({ "containers": [app(json!({ "cpu": "1" }))] }), json!("Succeeded")),
                pod(json!({ "containers": [app(json!({ "cpu": "1" }))] }), json!("Failed")),
                serde_json::from_value(json!({
                    "metadata": { "name": "mapped", "labels": { "kubeocean.io/managed-by": "kubeocean" } },
                    "spec": { "containers": [app(json!({ "cpu": "1" }))] },
                    "status": { "phase": "Running" },
                }))
                .unwrap(),
                pod(json!({ "containers": [app(json!({ "cpu": "2" }))] }), Value::Null),
            ],
            limits: json!([]),
            want: &[("cpu", "8"), ("pods", "9")],
        },
        Case {
            what: "capacity is the base when allocatable is empty",
            allocatable: json!({}),
            pods: vec![],
            limits: json!([{ "resource": "cpu", "percent": 50 }]),
            want: &[("cpu", "1")],
        },
    ];
    let binding = binding(json!({}));
    for case in cases {
        let mut node = plain_node(case.allocatable.clone());
        if case.allocatable.as_object().is_some_and(|a| a.is_empty())
            && let Some(status) = node.status.as_mut()
        {
            status.capacity = Some(BTreeMap::from([(
                "cpu".to_owned(),
                k8s_openapi::apimachinery::pkg::api::resource::Quantity("2".into()),
            )]));
        }
        let policies = [policy(
            "p",
            "2025-01-01T00:00:00Z",
            json!({ "resourceLimits": case.limits }),
        )];
        let decision = evaluate(
            &node,
            &case.pods,
            &policies,
            &binding,
            "2025-01-03T12:00:00Z",
        );
        assert!(decision.lent, "{}: lent", case.what);
        assert_eq!(
            canonical(&decision.allocatable),
            strings(case.want),
            "{}",
            case.what
        );
    }
}

#[test]
fn node_selectors() {
    let labels = json!({ "zone": "a", "gpu": "a10", "cores": "16" });
    let expr = |key: &str, op: &str, values: Value| json!({ "nodeSelectorTerms": [{ "matchExpressions": [{ "key": key, "operator": op, "values": values }] }] });
    let cases: Vec<(&str, Option<Value>, bool)> = vec![
        ("no selector matches all", None, true),
        (
            "empty selector matches all",
            Some(json!({ "nodeSelectorTerms": [] })),
            true,
        ),
        (
            "a term without requirements matches nothing",
            Some(json!({ "nodeSelectorTerms": [{}] })),
            false,
        ),
        ("In", Some(expr("zone", "In", json!(["a", "b"]))), true),
        (
            "In, other value",
            Some(expr("zone", "In", json!(["b"]))),
            false,
        ),
        (
            "In, missing label",
            Some(expr("rack", "In", json!(["1"]))),
            false,
        ),
        ("NotIn", Some(expr("zone", "NotIn", json!(["b"]))), true),
        (
            "NotIn, listed value",
            Some(expr("zone", "NotIn", json!(["a"]))),
            false,
        ),
        (
            "NotIn, missing label",
            Some(expr("rack", "NotIn", json!(["1"]))),
            true,
        ),
        ("Exists", Some(expr("gpu", "Exists", json!([]))), true),
        (
            "Exists, missing label",
            Some(expr("rack", "Exists", json!([]))),
            false,
        ),
        (
            "DoesNotExist",
            Some(expr("rack", "DoesNotExist", json!([]))),
            true,
        ),
        (
            "DoesNotExist, present label",
            Some(expr("gpu", "DoesNotExist", json!([]))),
            false,
        ),
        ("Gt", Some(expr("cores", "Gt", json!(["8"]))), true),
        (
            "Gt, equal is not greater",
            Some(expr("cores", "Gt", json!(["16"]))),
            false,
        ),
        ("Lt", Some(expr("cores", "Lt", json!(["32"]))), true),
        (
            "Lt, not an integer label",
            Some(expr("zone", "Lt", json!(["32"]))),
            false,
        ),
        (
            "Gt, two values is malformed",
            Some(expr("cores", "Gt", json!(["1", "2"]))),
            false,
        ),
        (
            "unknown operator",
            Some(expr("zone", "Equals", json!(["a"]))),
            false,
        ),
        (
            "expressions in a term are ANDed",
            Some(json!({ "nodeSelectorTerms": [{ "matchExpressions": [
                { "key": "zone", "operator": "In", "values": ["a"] },
                { "key": "gpu", "operator": "In", "values": ["t4"] },
            ] }] })),
            false,
        ),
        (
            "terms are ORed",
            Some(json!({ "nodeSelectorTerms": [
                { "matchExpressions": [{ "key": "gpu", "operator": "In", "values": ["t4"] }] },
                { "matchExpressions": [{ "key": "zone", "operator": "In", "values": ["a"] }] },
            ] })),
            true,
        ),
        (
            "matchFields metadata.name In",
            Some(
                json!({ "nodeSelectorTerms": [{ "matchFields": [{ "key": "metadata.name", "operator": "In", "values": ["node-1"] }] }] }),
            ),
            true,
        ),
        (
            "matchFields metadata.name NotIn",
            Some(
                json!({ "nodeSelectorTerms": [{ "matchFields": [{ "key": "metadata.name", "operator": "NotIn", "values": ["node-1"] }] }] }),
            ),
            false,
        ),
        (
            "matchFields on another field",
            Some(
                json!({ "nodeSelectorTerms": [{ "matchFields": [{ "key": "spec.podCIDR", "operator": "In", "values": ["x"] }] }] }),
            ),
            false,
        ),
    ];
    let node = node("node-1", labels, json!({}), json!([]));
    for (what, selector, want) in cases {
        let selector: Option<NodeSelector> = selector.map(|s| serde_json::from_value(s).unwrap());
        assert_eq!(node_matches(selector.as_ref(), &node), want, "{what}");
    }
}

#[test]
fn policy_selection() {
    let gpu_only = json!({ "nodeSelector": { "nodeSelectorTerms": [{ "matchExpressions": [{ "key": "gpu", "operator": "Exists" }] }] } });
    let cases: Vec<(&str, Vec<ResourceLeasingPolicy>, Option<&str>)> = vec![
        ("none", vec![], None),
        (
            "another binding's policy",
            vec![policy(
                "other",
                "2025-01-01T00:00:00Z",
                json!({ "cluster": "binding-b" }),
            )],
            None,
        ),
        (
            "oldest wins",
            vec![
                policy("newer", "2025-02-01T00:00:00Z", json!({})),
                policy("older", "2025-01-01T00:00:00Z", json!({})),
            ],
            Some("older"),
        ),
        (
            "same age: by name",
            vec![
                policy("b", "2025-01-01T00:00:00Z", json!({})),
                policy("a", "2025-01-01T00:00:00Z", json!({})),
            ],
            Some("a"),
        ),
        (
            "a policy whose selector misses the node is skipped",
            vec![
                policy("gpu", "2024-01-01T00:00:00Z", gpu_only),
                policy("all", "2025-01-01T00:00:00Z", json!({})),
            ],
            Some("all"),
        ),
        (
            "an invalid policy is skipped",
            vec![
                policy(
                    "broken",
                    "2024-01-01T00:00:00Z",
                    json!({ "timeWindows": [{ "start": "25:00", "end": "26:00" }] }),
                ),
                policy("fine", "2025-01-01T00:00:00Z", json!({})),
            ],
            Some("fine"),
        ),
        (
            "a policy being deleted is skipped",
            vec![
                {
                    let mut deleting = policy("deleting", "2024-01-01T00:00:00Z", json!({}));
                    deleting.metadata.deletion_timestamp =
                        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts(
                            "2025-01-02T00:00:00Z",
                        )));
                    deleting
                },
                policy("fine", "2025-01-01T00:00:00Z", json!({})),
            ],
            Some("fine"),
        ),
    ];
    let node = node(
        "node-1",
        json!({ "zone": "a" }),
        json!({ "cpu": "1" }),
        json!([]),
    );
    for (what, policies, want) in cases {
        let refs: Vec<&ResourceLeasingPolicy> = policies.iter().collect();
        let chosen = select_policy("binding-a", &node, &refs);
        assert_eq!(
            chosen
                .and_then(|c| c.policy.metadata.name.clone())
                .as_deref(),
            want,
            "{what}"
        );
    }
}

#[test]
fn taints_of_virtual_nodes() {
    fn t(key: &str, value: Option<&str>, effect: &str) -> Taint {
        taint(key, value, effect)
    }
    let physical = json!([
        { "key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule" },
        { "key": "dedicated", "value": "batch", "effect": "NoSchedule" },
    ]);
    // (case, physical taints, binding spec, policy spec, time, expected taints)
    type Case = (&'static str, Value, Value, Value, &'static str, Vec<Taint>);
    let cases: Vec<Case> = vec![
        (
            "physical taints copied, unschedulable renamed, default taint added",
            physical.clone(),
            json!({}),
            json!({}),
            "2025-01-03T12:00:00Z",
            vec![
                t(
                    "kubeocean.io/physical-node-unschedulable",
                    None,
                    "NoSchedule",
                ),
                t("dedicated", Some("batch"), "NoSchedule"),
                t("kubeocean.io/vnode", None, "NoSchedule"),
            ],
        ),
        (
            "default taint disabled",
            json!([]),
            json!({ "disableNodeDefaultTaint": true }),
            json!({}),
            "2025-01-03T12:00:00Z",
            vec![],
        ),
        (
            "outside the windows: NoSchedule",
            json!([]),
            json!({}),
            json!({ "timeWindows": [{ "start": "20:00", "end": "23:00" }] }),
            "2025-01-03T12:00:00Z",
            vec![
                t("kubeocean.io/vnode", None, "NoSchedule"),
                t(
                    "kubeocean.io/out-of-time-windows",
                    Some("true"),
                    "NoSchedule",
                ),
            ],
        ),
        (
            "outside the windows with forceReclaim: NoExecute",
            json!([]),
            json!({ "disableNodeDefaultTaint": true }),
            json!({ "forceReclaim": true, "timeWindows": [{ "start": "20:00", "end": "23:00" }] }),
            "2025-01-03T12:00:00Z",
            vec![t(
                "kubeocean.io/out-of-time-windows",
                Some("true"),
                "NoExecute",
            )],
        ),
        (
            "inside the windows: no window taint",
            json!([]),
            json!({ "disableNodeDefaultTaint": true }),
            json!({ "forceReclaim": true, "timeWindows": [{ "start": "20:00", "end": "23:00" }] }),
            "2025-01-03T21:00:00Z",
            vec![],
        ),
        (
            "a physical out-of-time-windows taint is never copied (inside the window)",
            json!([
                { "key": "kubeocean.io/out-of-time-windows", "value": "true", "effect": "NoExecute" },
                { "key": "dedicated", "value": "batch", "effect": "NoSchedule" },
            ]),
            json!({ "disableNodeDefaultTaint": true }),
            json!({}),
            "2025-01-03T12:00:00Z",
            vec![t("dedicated", Some("batch"), "NoSchedule")],
        ),
        (
            "outside the window only the virtual node's own window taint is set",
            json!([
                { "key": "kubeocean.io/out-of-time-windows", "value": "true", "effect": "NoExecute" },
            ]),
            json!({ "disableNodeDefaultTaint": true }),
            json!({ "timeWindows": [{ "start": "20:00", "end": "23:00" }] }),
            "2025-01-03T12:00:00Z",
            vec![t(
                "kubeocean.io/out-of-time-windows",
                Some("true"),
                "NoSchedule",
            )],
        ),
    ];
    for (what, physical, binding_spec, policy_spec, at, want) in cases {
        let node = node("node-1", json!({}), json!({ "cpu": "1" }), physical);
        let policies = [policy("p", "2025-01-01T00:00:00Z", policy_spec)];
        let decision = evaluate(&node, &[], &policies, &binding(binding_spec), at);
        assert_eq!(decision.taints, want, "{what}");
    }
}

#[test]
fn whole_decisions() {
    let gpu_binding = json!({ "nodeSelector": { "nodeSelectorTerms": [{ "matchExpressions": [{ "key": "gpu", "operator": "Exists" }] }] } });
    let virtual_labels = json!({ "type": "virtual-kubelet" });
    let eklet = json!({ "node.kubernetes.io/instance-type": "eklet" });
    let cases: Vec<(&str, Value, Value, Option<NotLentReason>)> = vec![
        ("a plain node is lent", json!({}), json!({}), None),
        (
            "a virtual-kubelet node is never lent",
            virtual_labels,
            json!({}),
            Some(NotLentReason::VirtualNode),
        ),
        (
            "an eklet node is never lent",
            eklet,
            json!({}),
            Some(NotLentReason::VirtualNode),
        ),
        (
            "the binding's selector must match",
            json!({}),
            gpu_binding,
            Some(NotLentReason::NotSelectedByBinding),
        ),
    ];
    let policies = [policy(
        "p",
        "2025-01-01T00:00:00Z",
        json!({ "timeWindows": [{ "start": "09:00", "end": "17:00" }] }),
    )];
    for (what, labels, binding_spec, reason) in cases {
        let node = node("node-1", labels, json!({ "cpu": "2" }), json!([]));
        let decision = evaluate(
            &node,
            &[],
            &policies,
            &binding(binding_spec),
            "2025-01-03T12:00:00Z",
        );
        assert_eq!(decision.not_lent_reason, reason, "{what}");
        assert_eq!(decision.lent, reason.is_none(), "{what}");
        assert_eq!(decision.virtual_node_name, "vnode-c1-node-1", "{what}");
        if reason.is_none() {
            assert_eq!(decision.policy.as_deref(), Some("p"), "{what}");
            assert!(decision.in_window, "{what}");
            assert_eq!(
                decision.next_change,
                Some(ts("2025-01-03T17:01:00Z")),
                "{what}"
            );
        } else {
            assert!(
                decision.allocatable.is_empty() && decision.taints.is_empty(),
                "{what}"
            );
        }
    }
    // No policy at all.
    let node = node("node-1", json!({}), json!({ "cpu": "2" }), json!([]));
    let decision = evaluate(&node, &[], &[], &binding(json!({})), "2025-01-03T12:00:00Z");
    assert_eq!(decision.not_lent_reason, Some(NotLentReason::NoPolicy));
    assert_eq!(decision.policy, None);
    // A binding being deleted lends nothing, as the syncer drains its nodes.
    let mut deleting = binding(json!({}));
    deleting.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts("2025-01-03T11:00:00Z")),
    );
    let decision = evaluate(&node, &[], &policies, &deleting, "2025-01-03T12:00:00Z");
    assert_eq!(decision.not_lent_reason, Some(NotLentReason::BindingGone));
    assert!(!decision.lent && decision.taints.is_empty());
}

#[test]
fn policy_validation() {
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        ("a minimal policy is valid", json!({}), vec![]),
        (
            "everything at once",
            json!({
                "timezone": "Mars/Olympus",
                "timeWindows": [{ "start": "24:00", "end": "9:00", "days": ["Monday", "Funday"] }],
                "resourceLimits": [
                    { "resource": "cpu", "percent": 101 },
                    { "resource": "", "quantity": "lots" },
                    { "resource": "memory", "quantity": "-1Gi" },
                ],
                "gracefulReclaimPeriodSeconds": -5,
                "nodeSelector": { "nodeSelectorTerms": [{ "matchExpressions": [
                    { "key": "zone", "operator": "In" },
                    { "key": "cores", "operator": "Gt", "values": ["many"] },
                    { "key": "zone", "operator": "Near", "values": ["a"] },
                ] }] },
            }),
            vec![
                r#"spec.timezone "Mars/Olympus" is not a known IANA time zone (for example Europe/Berlin)"#,
                r#"spec.timeWindows[0].start "24:00" is not a time in HH:MM format (00:00 to 23:59)"#,
                r#"spec.timeWindows[0].end "9:00" is not a time in HH:MM format (00:00 to 23:59)"#,
                r#"spec.timeWindows[0].days[1] "Funday" is not a weekday name (Monday to Sunday)"#,
                "spec.resourceLimits[0].percent 101 is outside 0 to 100",
                "spec.resourceLimits[1].resource must not be empty",
                r#"spec.resourceLimits[1].quantity: quantity "lots" is not a number followed by an optional suffix"#,
                r#"spec.resourceLimits[2].quantity "-1Gi" must not be negative"#,
                "spec.gracefulReclaimPeriodSeconds -5 must not be negative",
                "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0]: operator In needs at least one value",
                "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[1]: operator Gt needs exactly one integer value",
                r#"spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[2]: unknown operator "Near" (expected In, NotIn, Exists, DoesNotExist, Gt or Lt)"#,
            ],
        ),
        (
            "an empty cluster",
            json!({ "cluster": "" }),
            vec!["spec.cluster must name a ClusterBinding"],
        ),
    ];
    for (what, spec, want) in cases {
        let result = validate_policy(&policy("p", "2025-01-01T00:00:00Z", spec));
        let got = result.err().unwrap_or_default();
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn allocatable_converts_for_the_node_status() {
    let node = plain_node(json!({ "cpu": "4", "memory": "8Gi" }));
    let policies = [policy(
        "p",
        "2025-01-01T00:00:00Z",
        json!({ "resourceLimits": [{ "resource": "cpu", "percent": 50 }] }),
    )];
    let decision = evaluate(
        &node,
        &[],
        &policies,
        &binding(json!({})),
        "2025-01-03T12:00:00Z",
    );
    let status = decision.allocatable_for_node();
    assert_eq!(status.get("cpu").map(|q| q.0.as_str()), Some("2"));
    assert_eq!(status.get("memory").map(|q| q.0.as_str()), Some("8Gi"));
}

#[test]
fn precomputed_usage_gives_the_same_decision_as_pods() {
    let node =
        plain_node(json!({ "cpu": "8", "memory": "16Gi", "pods": "110", "nvidia.com/gpu": "4" }));
    let pods = vec![
        running(json!({ "cpu": "1", "memory": "1Gi" })),
        running(json!({ "cpu": "250m", "nvidia.com/gpu": "1" })),
        // Init container larger than the app: the effective request is the init's.
        pod(
            json!({
                "initContainers": [{ "name": "init", "resources": { "requests": { "cpu": "2" } } }],
                "containers": [app(json!({ "cpu": "500m" }))],
                "overhead": { "cpu": "100m" },
            }),
            json!("Pending"),
        ),
        // Finished pods do not count.
        pod(
            json!({ "containers": [app(json!({ "cpu": "3" }))] }),
            json!("Succeeded"),
        ),
    ];
    let refs: Vec<&Pod> = pods.iter().collect();
    let cached: Vec<PodUsage> = pods.iter().map(PodUsage::of).collect();
    assert_eq!(cached.iter().filter(|p| p.counts).count(), 3);
    let usage = NodeUsage::from_pods(&cached);
    assert_eq!(usage.amounts(), node_usage(&refs));
    assert_eq!(
        usage.get("cpu").map(|q| q.to_canonical_string()),
        Some("3350m".to_owned())
    );
    assert_eq!(usage.get(PODS).map(|q| q.value()), Some(3));

    let policies = vec![policy(
        "p",
        "2025-01-01T00:00:00Z",
        json!({ "resourceLimits": [{ "resource": "cpu", "percent": 50 }] }),
    )];
    let binding = binding(json!({}));
    let from_pods = evaluate(&node, &pods, &policies, &binding, "2025-01-06T12:00:00Z");
    let from_usage = DefaultLeasingEngine.evaluate(&LeasingInput {
        node: &node,
        pods: Vec::new(),
        policies: policies.iter().collect(),
        binding: &binding,
        usage: Some(&usage),
        now: ts("2025-01-06T12:00:00Z"),
    });
    assert_eq!(from_pods, from_usage);
    assert_eq!(canonical(&from_usage.allocatable)["cpu"], "2325m");
}
