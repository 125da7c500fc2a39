//! Scheduling cases whose expected placements are Karmada's own (karmada-io/karmada v1.19,
//! file and case name beside each row).

#![allow(clippy::unwrap_used, clippy::type_complexity)]

use serde_json::{Value, json};

use super::*;

fn cluster(name: &str, extra: Value) -> Cluster {
    let mut value = json!({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name}, "spec": {}
    });
    if let Some(fields) = extra.as_object() {
        for (k, v) in fields {
            match k.as_str() {
                "labels" => value["metadata"]["labels"] = v.clone(),
                "status" => value["status"] = v.clone(),
                _ => value["spec"][k] = v.clone(),
            }
        }
    }
    serde_json::from_value(value).unwrap()
}

/// A cluster that can hold `pods` more pods (the way Karmada's tests build
/// `NewClusterWithResource(name, {pods: n}, {}, {})`).
fn room(name: &str, pods: i32) -> Cluster {
    cluster(
        name,
        json!({"status": {"resourceSummary": {"allocatable": {"pods": pods.to_string()}}}}),
    )
}

fn placement(value: Value) -> Placement {
    Placement::from_value(&value).unwrap()
}

fn workload(replicas: i32) -> Workload {
    Workload {
        replicas,
        has_replica_requirements: true,
        ..Workload::default()
    }
}

fn targets(pairs: &[(&str, i32)]) -> Vec<TargetCluster> {
    pairs
        .iter()
        .map(|(n, r)| TargetCluster {
            name: (*n).to_owned(),
            replicas: *r,
        })
        .collect()
}

fn static_weights(weights: &[(&str, i64)]) -> Value {
    let list: Vec<Value> = weights
        .iter()
        .map(|(n, w)| json!({"targetCluster": {"clusterNames": [n]}, "weight": w}))
        .collect();
    json!({"replicaScheduling": {
        "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
        "weightPreference": {"staticWeightList": list}
    }})
}

fn three() -> Vec<Cluster> {
    ["member1", "member2", "member3"]
        .iter()
        .map(|n| cluster(n, json!({})))
        .collect()
}

#[test]
fn static_weights_divide_as_karmada() {
    // (source, placement, replicas, clusters, expected)
    let cases: Vec<(&str, Value, i32, Vec<Cluster>, Vec<TargetCluster>)> = vec![
        (
            "pkg/scheduler/core/assignment_test.go Test_assignByStaticWeightStrategy 'replica 12, weight 3:2:1'",
            static_weights(&[("member1", 3), ("member2", 2), ("member3", 1)]),
            12,
            three(),
            targets(&[("member1", 6), ("member2", 4), ("member3", 2)]),
        ),
        (
            "pkg/scheduler/core/assignment_test.go Test_assignByStaticWeightStrategy 'replica 12, default weight'",
            json!({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}),
            12,
            three(),
            targets(&[("member1", 4), ("member2", 4), ("member3", 4)]),
        ),
        (
            "pkg/scheduler/core/assignment_test.go Test_assignByStaticWeightStrategy 'replica 13, weight 3:2:1'",
            static_weights(&[("member1", 3), ("member2", 2), ("member3", 1)]),
            13,
            three(),
            targets(&[("member1", 7), ("member2", 4), ("member3", 2)]),
        ),
        (
            "pkg/scheduler/core/assignment_test.go Test_assignByStaticWeightStrategy 'replica 14, weight 3:2:1'",
            static_weights(&[("member1", 3), ("member2", 2), ("member3", 1)]),
            14,
            three(),
            targets(&[("member1", 7), ("member2", 5), ("member3", 2)]),
        ),
        (
            "pkg/scheduler/core/assignment_test.go Test_assignByStaticWeightStrategy 'selected cluster without weight should be ignored'",
            static_weights(&[("member1", 1)]),
            2,
            three().into_iter().take(2).collect(),
            targets(&[("member1", 2)]),
        ),
        (
            "pkg/scheduler/core/assignment_test.go Test_assignByStaticWeightStrategy 'cluster with multiple weights'",
            static_weights(&[("member1", 1), ("member2", 1), ("member1", 2)]),
            3,
            three().into_iter().take(2).collect(),
            targets(&[("member1", 2), ("member2", 1)]),
        ),
        (
            // The recorded application (kairship-core/tests/data/karmada-v1.19/resourcebinding-shop-deployment.json).
            "recorded Karmada v1.19: shop, 4 replicas, weights mreal:1 msb:3",
            static_weights(&[("mreal", 1), ("msb", 3)]),
            4,
            vec![cluster("msb", json!({})), cluster("mreal", json!({}))],
            targets(&[("mreal", 1), ("msb", 3)]),
        ),
    ];
    for (source, p, replicas, clusters, want) in cases {
        let got = schedule(&placement(p), &workload(replicas), &clusters).unwrap();
        assert_eq!(got.clusters, want, "{source}");
    }
}

#[test]
fn zero_replicas_under_static_weights_are_zero_for_everyone() {
    // pkg/scheduler/core/assignment_test.go Test_assignByStaticWeightStrategy
    // 'insufficient replica assignment should get 0 replica' (before removeZeroReplicasCluster).
    let p = placement(static_weights(&[("member1", 1), ("member2", 1)]));
    let candidates: Vec<divide::Candidate> = three()
        .into_iter()
        .take(2)
        .map(|c| divide::Candidate {
            name: c.metadata.name.clone().unwrap(),
            cluster: c,
            allocatable: 0,
            available: 0,
        })
        .collect();
    let got = divide::divide_by_static_weight(&p, &workload(0), &candidates);
    assert_eq!(got, targets(&[("member1", 0), ("member2", 0)]));
    // and the scheduler then leaves both out for having no replicas.
    let decision = schedule(&p, &workload(0), &three()[..2]).unwrap();
    assert!(decision.clusters.is_empty());
    assert_eq!(decision.left_out.len(), 2);
    assert!(decision.left_out.iter().all(|l| l.reason == NO_REPLICAS));
}

#[test]
fn dynamic_division_follows_available_replicas() {
    let dynamic = json!({"replicaScheduling": {
        "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"}
    }});
    let aggregated = json!({"replicaScheduling": {
        "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"
    }});
    let rooms = |a, b, c| vec![room("member1", a), room("member2", b), room("member3", c)];
    let cases: Vec<(&str, &Value, Vec<Cluster>, Result<Vec<TargetCluster>, ()>)> = vec![
        (
            "pkg/scheduler/core/assignment_test.go Test_dynamicScaleUp 'replica 12, dynamic weight 6:8:10'",
            &dynamic,
            rooms(6, 8, 10),
            Ok(targets(&[("member1", 3), ("member2", 4), ("member3", 5)])),
        ),
        (
            "pkg/scheduler/core/assignment_test.go Test_dynamicScaleUp 'replica 12, dynamic weight 8:8:10'",
            &dynamic,
            rooms(8, 8, 10),
            Ok(targets(&[("member1", 4), ("member2", 4), ("member3", 4)])),
        ),
        (
            "pkg/scheduler/core/assignment_test.go Test_dynamicScaleUp 'replica 12, dynamic weight 3:3:3'",
            &dynamic,
            rooms(3, 3, 3),
            Err(()),
        ),
        (
            "pkg/scheduler/core/assignment_test.go Test_dynamicScaleUp 'replica 12, aggregated 6:8:10'",
            &aggregated,
            rooms(6, 8, 10),
            Ok(targets(&[("member2", 5), ("member3", 7)])),
        ),
        (
            "pkg/scheduler/core/assignment_test.go Test_dynamicScaleUp 'replica 12, aggregated 12:8:10'",
            &aggregated,
            rooms(12, 8, 10),
            Ok(targets(&[("member1", 12)])),
        ),
        (
            "pkg/scheduler/core/assignment_test.go Test_dynamicScaleUp 'replica 12, aggregated 3:3:3'",
            &aggregated,
            rooms(3, 3, 3),
            Err(()),
        ),
    ];
    for (source, p, clusters, want) in cases {
        let got = schedule(&placement(p.clone()), &workload(12), &clusters);
        match (got, want) {
            (Ok(d), Ok(want)) => assert_eq!(d.clusters, want, "{source}"),
            (Err(e), Err(())) => {
                assert!(
                    e.message.contains("are not enough to schedule"),
                    "{source}: {e}"
                );
            }
            (got, want) => panic!("{source}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn cluster_affinity_matches_as_karmada() {
    // pkg/util/selector_test.go TestClusterMatches: the cluster under test.
    let c = cluster(
        "cluster1",
        json!({"labels": {"foo": "bar"}, "zones": ["zone1", "zone2", "zone3"],
               "region": "region1", "provider": "provider1"}),
    );
    let zones = json!(["zone1", "zone2", "zone3"]);
    let cases: Vec<(&str, Value, bool)> = vec![
        (
            "test cluster excluded and names",
            json!({"exclude": ["cluster1"], "clusterNames": ["cluster1"]}),
            false,
        ),
        (
            "test cluster excluded and label selector",
            json!({"exclude": ["cluster1"], "labelSelector": {"matchLabels": {"foo": "bar"}}}),
            false,
        ),
        (
            "test cluster excluded and field selector",
            json!({"exclude": ["cluster1"], "fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": zones}]}}),
            false,
        ),
        (
            "test cluster names",
            json!({"clusterNames": ["cluster1"]}),
            true,
        ),
        (
            "test cluster names not matched",
            json!({"clusterNames": ["cluster2"]}),
            false,
        ),
        (
            "test cluster names and label selector",
            json!({"clusterNames": ["cluster1"], "labelSelector": {"matchLabels": {"foo": "bar"}}}),
            true,
        ),
        (
            "test cluster names and label selector not matched",
            json!({"clusterNames": ["cluster1"], "labelSelector": {"matchLabels": {"foo": "unmatched"}}}),
            false,
        ),
        (
            "test cluster names and field selector(zone & region)",
            json!({"clusterNames": ["cluster1"], "fieldSelector": {"matchExpressions": [
            {"key": "zone", "operator": "In", "values": zones}, {"key": "region", "operator": "In", "values": ["region1"]}]}}),
            true,
        ),
        (
            "test cluster names and field selector(provider)",
            json!({"clusterNames": ["cluster1"], "fieldSelector": {"matchExpressions": [{"key": "provider", "operator": "In", "values": ["provider1"]}]}}),
            true,
        ),
        (
            "test cluster names and field selector(zone not in)",
            json!({"clusterNames": ["cluster1"], "fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": zones}]}}),
            false,
        ),
        (
            "test cluster names and field selector(provider not in)",
            json!({"clusterNames": ["cluster1"], "fieldSelector": {"matchExpressions": [{"key": "provider", "operator": "NotIn", "values": ["provider1"]}]}}),
            false,
        ),
        (
            "test cluster names and field selector(region not in)",
            json!({"clusterNames": ["cluster1"], "fieldSelector": {"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["region1"]}]}}),
            false,
        ),
        (
            "test label selector not matched",
            json!({"labelSelector": {"matchLabels": {"foo": "unmatched"}}}),
            false,
        ),
        ("test empty cluster affinity matched", json!({}), true),
    ];
    for (case, affinity, want) in cases {
        let affinity: ClusterAffinity = serde_json::from_value(affinity).unwrap();
        assert_eq!(
            affinity_matches(&c, &affinity),
            want,
            "pkg/util/selector_test.go TestClusterMatches '{case}'"
        );
    }
}

#[test]
fn filters_give_karmadas_reasons() {
    let tainted = || {
        cluster(
            "member1",
            json!({"taints": [{"key": "key1", "value": "value1", "effect": "NoSchedule"}]}),
        )
    };
    let tolerating = json!({"clusterTolerations": [
        {"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoSchedule"}
    ]});
    // (source, placement, cluster, workload already there, expected reason)
    let cases: Vec<(&str, Value, Cluster, bool, Option<&str>)> = vec![
        (
            "pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go 'no taints'",
            json!({}),
            cluster("member1", json!({})),
            false,
            None,
        ),
        (
            "pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go 'tolerated taint'",
            tolerating,
            tainted(),
            false,
            None,
        ),
        (
            "pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go 'untolerated taint'",
            json!({}),
            tainted(),
            false,
            Some("cluster(s) had untolerated taint {key1=value1:NoSchedule}"),
        ),
        (
            "pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go 'cluster already in target clusters'",
            json!({}),
            tainted(),
            true,
            None,
        ),
        (
            "pkg/scheduler/framework/plugins/clusteraffinity/cluster_affinity_test.go 'non-matching affinity'",
            json!({"clusterAffinity": {"clusterNames": ["member2"]}}),
            cluster("member1", json!({})),
            false,
            Some(filter::AFFINITY_MISMATCH),
        ),
        (
            "pkg/scheduler/framework/plugins/clusteraffinity/cluster_affinity_test.go 'no affinity specified'",
            json!({}),
            cluster("member1", json!({})),
            false,
            None,
        ),
        (
            "pkg/scheduler/framework/plugins/spreadconstraint/spread_constraint_test.go 'spread by provider - provider missing'",
            json!({"spreadConstraints": [{"spreadByField": "provider", "maxGroups": 1, "minGroups": 1}]}),
            cluster("member1", json!({})),
            false,
            Some("cluster(s) did not have provider property"),
        ),
        (
            "pkg/scheduler/framework/plugins/spreadconstraint/spread_constraint_test.go 'spread by region - region missing'",
            json!({"spreadConstraints": [{"spreadByField": "region", "maxGroups": 1, "minGroups": 1}]}),
            cluster("member1", json!({})),
            false,
            Some("cluster(s) did not have region property"),
        ),
        (
            "pkg/scheduler/framework/plugins/spreadconstraint/spread_constraint_test.go 'spread by zone - zones missing'",
            json!({"spreadConstraints": [{"spreadByField": "zone", "maxGroups": 1, "minGroups": 1}]}),
            cluster("member1", json!({})),
            false,
            Some("cluster(s) did not have zones property"),
        ),
        (
            "pkg/scheduler/framework/plugins/spreadconstraint/spread_constraint_test.go 'spread by region - region present'",
            json!({"spreadConstraints": [{"spreadByField": "region", "maxGroups": 1, "minGroups": 1}]}),
            cluster("member1", json!({"region": "us-east-1"})),
            false,
            None,
        ),
    ];
    for (source, p, c, already, want) in cases {
        let mut w = workload(0);
        if already {
            w.scheduled = targets(&[("member1", 0)]);
        }
        let got = filter::reason(&placement(p), &w, &c);
        assert_eq!(got.as_ref().map(|(_, r)| r.as_str()), want, "{source}");
    }
}

#[test]
fn nothing_feasible_is_a_fit_error_with_every_reason() {
    // The FitError message (pkg/scheduler/framework/types.go `FitError.Error`), each reason
    // counted and sorted; every cluster left out carries its own.
    let clusters = vec![
        cluster(
            "a",
            json!({"taints": [{"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}]}),
        ),
        cluster("b", json!({})),
        cluster("c", json!({})),
    ];
    let p = placement(json!({"clusterAffinity": {"clusterNames": ["a"]}}));
    let err = schedule(&p, &workload(1), &clusters).unwrap_err();
    assert_eq!(
        err.message,
        "0/3 clusters are available: 1 cluster(s) had untolerated taint {cluster.karmada.io/not-ready:NoSchedule}, 2 cluster(s) did not match the placement cluster affinity constraint."
    );
    assert_eq!(err.left_out.len(), 3);
    let none = schedule(&p, &workload(1), &[]).unwrap_err();
    assert_eq!(
        none.message,
        "0/0 clusters are available: no cluster exists."
    );
}

#[test]
fn spread_by_cluster_keeps_the_best_clusters() {
    // pkg/scheduler/core/spreadconstraint/select_clusters_test.go: with maxGroups 2 the two
    // clusters with the most room are chosen; the third is left out as not selected.
    let p = placement(json!({
        "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2, "minGroups": 1}],
        "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
            "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
    }));
    let clusters = vec![
        room("member1", 10),
        room("member2", 20),
        room("member3", 30),
    ];
    let d = schedule(&p, &workload(10), &clusters).unwrap();
    assert_eq!(d.clusters, targets(&[("member2", 4), ("member3", 6)]));
    assert_eq!(
        d.left_out,
        vec![LeftOut {
            cluster: "member1".into(),
            exclusion: Exclusion::SpreadConstraint,
            reason: NOT_SELECTED.into()
        }]
    );
    // minGroups above the feasible clusters fails.
    let p = placement(json!({
        "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 5, "minGroups": 4}],
        "replicaScheduling": {"replicaSchedulingType": "Duplicated"}
    }));
    let err = schedule(&p, &workload(1), &clusters).unwrap_err();
    assert!(
        err.message.contains("less than spreadConstraint.MinGroups"),
        "{err}"
    );
}

#[test]
fn duplicated_and_replica_less_objects() {
    // Duplicated: every feasible cluster gets all replicas (assignment.go
    // assignByDuplicatedStrategy); objects without replicas get no replica count (common.go
    // AssignReplicas).
    let d = schedule(&placement(json!({})), &workload(3), &three()).unwrap();
    assert_eq!(
        d.clusters,
        targets(&[("member1", 3), ("member2", 3), ("member3", 3)])
    );
    let config = Workload::default();
    let d = schedule(&placement(json!({})), &config, &three()).unwrap();
    assert_eq!(
        d.clusters,
        targets(&[("member1", 0), ("member2", 0), ("member3", 0)])
    );
}

#[test]
fn available_replicas_follow_the_resource_summary() {
    // pkg/estimator/client/general.go: free pods bound it, then each request.
    let c = cluster(
        "m",
        json!({"status": {"resourceSummary": {
            "allocatable": {"cpu": "12", "memory": "24Gi", "pods": "330"},
            "allocated": {"cpu": "1", "pods": "10"},
            "allocating": {"cpu": "500m"}
        }}}),
    );
    let req = |cpu: &str, mem: &str| {
        BTreeMap::from([
            ("cpu".to_owned(), cpu.to_owned()),
            ("memory".to_owned(), mem.to_owned()),
        ])
    };
    assert_eq!(available_replicas(&c, &BTreeMap::new()), 320);
    assert_eq!(available_replicas(&c, &req("100m", "64Mi")), 105);
    assert_eq!(available_replicas(&c, &req("1", "8Gi")), 3);
    assert_eq!(
        available_replicas(&cluster("none", json!({})), &BTreeMap::new()),
        0
    );
}

#[test]
fn webster_ties_follow_the_uid() {
    // pkg/util/helper/binding.go tieBreakerByUID: an even FNV-1a hash of the uid prefers the
    // smaller name, an odd one the larger.
    let votes = vec![("a".to_owned(), 1), ("b".to_owned(), 1)];
    let no_uid = webster(1, &votes, &[], "");
    assert_eq!(no_uid, targets(&[("a", 1), ("b", 0)]));
    let odd = (0..100)
        .map(|i| format!("uid-{i}"))
        .find(|u| divide_fnv_odd(u))
        .unwrap();
    assert_eq!(
        webster(1, &votes, &[], &odd),
        targets(&[("a", 0), ("b", 1)])
    );
}

fn divide_fnv_odd(uid: &str) -> bool {
    let mut hash: u32 = 0x811c_9dc5;
    for b in uid.bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash & 1 == 1
}

#[test]
fn every_cluster_left_out_names_its_rule() {
    // The preview's case: cluster affinity by label, a tainted cluster, static weights 2:1.
    // Karmada filters (tainttoleration, clusteraffinity), then divides 6 replicas by the
    // weights of the feasible clusters (assignment.go assignByStaticWeightStrategy, Webster:
    // 6 seats for votes 2 and 1 are 4 and 2).
    let prod = json!({"env": "prod"});
    let clusters = vec![
        cluster("east", json!({"labels": prod})),
        cluster("west", json!({"labels": prod})),
        cluster(
            "south",
            json!({"labels": prod, "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}),
        ),
        cluster("north", json!({"labels": {"env": "dev"}})),
        cluster(
            "down",
            json!({"labels": prod, "taints": [{"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}]}),
        ),
    ];
    let mut p = static_weights(&[("east", 2), ("west", 1)]);
    p["clusterAffinity"] = json!({"labelSelector": {"matchLabels": {"env": "prod"}}});
    let d = schedule(&placement(p), &workload(6), &clusters).unwrap();
    assert_eq!(d.clusters, targets(&[("east", 4), ("west", 2)]));
    let why: Vec<(&str, Exclusion, &str)> = d
        .left_out
        .iter()
        .map(|l| (l.cluster.as_str(), l.exclusion, l.reason.as_str()))
        .collect();
    assert_eq!(
        why,
        vec![
            (
                "down",
                Exclusion::NotReady,
                "cluster(s) had untolerated taint {cluster.karmada.io/not-ready:NoSchedule}"
            ),
            ("north", Exclusion::ClusterAffinity, AFFINITY_MISMATCH),
            (
                "south",
                Exclusion::Taint,
                "cluster(s) had untolerated taint {dedicated=gpu:NoSchedule}"
            ),
        ]
    );
}

#[test]
fn clusters_without_room_are_left_out_for_resources() {
    // A dynamic division weighs clusters by the replicas they can still hold
    // (assignment.go assignByDynamicStrategy, dynamicScaleUp): one that can hold none gets
    // none, for want of resources.
    let p = placement(json!({"replicaScheduling": {
        "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}));
    let clusters = vec![room("big", 10), room("full", 0)];
    let d = schedule(&p, &workload(4), &clusters).unwrap();
    assert_eq!(d.clusters, targets(&[("big", 4)]));
    assert_eq!(
        d.left_out,
        vec![LeftOut {
            cluster: "full".into(),
            exclusion: Exclusion::Resources,
            reason: NO_ROOM.into()
        }]
    );
    // More replicas than all can hold: scheduling fails, and every cluster that passed the
    // filters is left out with the division's message.
    let err = schedule(&p, &workload(40), &clusters).unwrap_err();
    assert_eq!(
        err.message,
        "failed to assign replicas: failed to scale up: Clusters available replicas 10 are not enough to schedule."
    );
    assert_eq!(err.left_out.len(), 2);
    assert!(
        err.left_out
            .iter()
            .all(|l| l.exclusion == Exclusion::Resources && l.reason == err.message)
    );
}

#[test]
fn template_replicas_are_what_the_detector_binds() {
    // replica.go GetReplicas: a Deployment's replicas (default 1) and the sum of its
    // containers' requests.
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "demo", "uid": "u1"},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "0.2"}}}]}}}});
    let w = workload_of_template(&d);
    assert_eq!(w.replicas, 3);
    assert!(w.has_replica_requirements);
    assert_eq!(w.resource_request["cpu"], "300m");
    assert_eq!(w.resource_request["memory"], "64Mi");
    assert_eq!(w.uid, "u1");
    let cm = workload_of_template(&json!({"apiVersion": "v1", "kind": "ConfigMap"}));
    assert_eq!((cm.replicas, cm.has_replica_requirements), (0, false));
}
