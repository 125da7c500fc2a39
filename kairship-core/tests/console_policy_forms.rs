//! The console's policy form against real policies: every PropagationPolicy and OverridePolicy
//! a real Karmada v1.19 stored (`tests/data/karmada-v1.19/`, recorded as its README says) is
//! read into the form and written back: what the form writes is what was stored, what it does
//! not show is exactly the listed fields, an edit that changes nothing stores the object as it
//! was, and an edit of one field changes only that field.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use kairship_core::console::merge::is_part_of;
use kairship_core::console::policies::fields::PolicyKind;
use kairship_core::console::policies::form::{PolicyForm, edited_policy, not_shown};
use serde_json::{Value, json};

fn recorded(file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/karmada-v1.19")
        .join(file);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// JSON pointers of the leaves (scalars, empty objects, lists of scalars) of `v` under `at`.
fn leaves(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, child) in m {
                leaves(child, &format!("{at}/{k}"), out);
            }
        }
        Value::Array(items) if items.iter().any(|i| i.is_object() || i.is_array()) => {
            for (i, child) in items.iter().enumerate() {
                leaves(child, &format!("{at}/{i}"), out);
            }
        }
        _ => out.push(at.to_owned()),
    }
}

fn without_managed_fields(mut v: Value) -> Value {
    v["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    v
}

#[test]
fn recorded_policies_go_through_the_form_and_back() {
    for (file, left_to_the_merge) in [
        (
            "propagationpolicy-shop-as-stored.json",
            vec!["/spec/schedulerName"],
        ),
        (
            "propagationpolicy-ref-pp-create-response.json",
            vec!["/spec/schedulerName"],
        ),
        ("propagationpolicy-ref-pp-sent.json", vec![]),
        (
            "overridepolicy-shop-msb-as-stored.json",
            vec!["/spec/overriders"],
        ),
        (
            "overridepolicy-shop-mreal-as-stored.json",
            vec!["/spec/overriders"],
        ),
        (
            "overridepolicy-ref-op-create-response.json",
            vec!["/spec/overriders"],
        ),
        ("overridepolicy-ref-op-sent.json", vec![]),
    ] {
        let stored = recorded(file);
        let kind = PolicyKind::parse(stored["kind"].as_str().unwrap()).unwrap();
        let form = PolicyForm::of_policy(kind, &stored);
        let shown = form
            .to_policy()
            .unwrap_or_else(|e| panic!("{file}: the form refuses its own policy: {e}"));
        assert!(is_part_of(&shown, &stored), "{file}: {shown}");
        assert_eq!(not_shown(&stored, &form), left_to_the_merge, "{file}");
        // Showing what the form wrote gives the same form.
        assert_eq!(PolicyForm::of_policy(kind, &shown), form, "{file}");
        // Saving without a change stores the object as it was.
        let rv = stored["metadata"]["resourceVersion"].as_str().unwrap_or("");
        let mut want = without_managed_fields(stored.clone());
        if rv.is_empty() {
            want["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("resourceVersion");
        }
        assert_eq!(edited_policy(&stored, &form, rv).unwrap(), want, "{file}");
    }
}

#[test]
fn one_edited_field_changes_one_field() {
    // A weight of the recorded application's policy (msb:3 mreal:1 becomes mreal:2).
    let stored = recorded("propagationpolicy-shop-as-stored.json");
    let PolicyForm::Propagation(mut form) = PolicyForm::of_policy(PolicyKind::Propagation, &stored)
    else {
        panic!("a propagation form");
    };
    assert_eq!(form.weights[0].clusters, "mreal");
    form.weights[0].weight = "2".into();
    let edited = edited_policy(&stored, &PolicyForm::Propagation(form), "725").unwrap();
    let mut want = without_managed_fields(stored.clone());
    want["spec"]["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"][0]["weight"] =
        json!(2);
    assert_eq!(edited, want);

    // The image tag of the recorded override (1.28 becomes 1.29), the other overriders kept.
    let stored = recorded("overridepolicy-shop-msb-as-stored.json");
    let PolicyForm::Override(mut form) = PolicyForm::of_policy(PolicyKind::Override, &stored)
    else {
        panic!("an override form");
    };
    assert_eq!(form.rules[0].images[2].component, "Tag");
    form.rules[0].images[2].value = "1.29".into();
    let edited = edited_policy(&stored, &PolicyForm::Override(form), "732").unwrap();
    let mut want = without_managed_fields(stored.clone());
    want["spec"]["overrideRules"][0]["overriders"]["imageOverrider"][2]["value"] = json!("1.29");
    assert_eq!(edited, want);
}

#[test]
fn fields_outside_the_form_survive_an_edit() {
    // Everything the form shows, and what it does not: an annotation, activationPreference,
    // a NotIn field selector, a cluster failover, a weight's excluded cluster.
    let stored = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
        "metadata": {"name": "everywhere", "resourceVersion": "12",
            "annotations": {"team": "platform"}},
        "spec": {
            "activationPreference": "Lazy",
            "resourceSelectors": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop",
                 "labelSelector": {"matchLabels": {"app": "web"},
                    "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}}],
            "placement": {
                "clusterAffinity": {"clusterNames": ["a", "b", "c"], "exclude": ["d"],
                    "labelSelector": {"matchLabels": {"env": "prod"}},
                    "fieldSelector": {"matchExpressions": [
                        {"key": "region", "operator": "In", "values": ["eu", "us"]},
                        {"key": "zone", "operator": "NotIn", "values": ["eu-1c"]}]}},
                "clusterTolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                    "effect": "NoExecute", "tolerationSeconds": 30}],
                "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 3, "minGroups": 2},
                    {"spreadByField": "region", "maxGroups": 2, "minGroups": 1}],
                "replicaScheduling": {"replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": [
                        {"targetCluster": {"clusterNames": ["a"], "exclude": ["x"]}, "weight": 1},
                        {"targetCluster": {"clusterNames": ["b", "c"]}, "weight": 2}]}}},
            "priority": 10, "preemption": "Always", "conflictResolution": "Overwrite",
            "failover": {"application": {"decisionConditions": {"tolerationSeconds": 120},
                "purgeMode": "Gracefully", "gracePeriodSeconds": 60},
                "cluster": {"purgeMode": "Directly"}}
        }
    });
    let form = PolicyForm::of_policy(PolicyKind::ClusterPropagation, &stored);
    let shown = form.to_policy().unwrap();
    // Every field the form writes is the stored one (the field selector's list is shown in
    // part, so it is not a part of the stored list as a whole).
    let mut written = Vec::new();
    leaves(&shown, "", &mut written);
    for pointer in written {
        assert_eq!(
            shown.pointer(&pointer),
            stored.pointer(&pointer),
            "{pointer}"
        );
    }
    assert_eq!(
        not_shown(&stored, &form),
        [
            "/spec/activationPreference",
            "/spec/failover/cluster",
            "/spec/placement/clusterAffinity/fieldSelector/matchExpressions/1",
            "/spec/placement/replicaScheduling/weightPreference/staticWeightList/0/targetCluster/exclude",
        ]
    );
    let PolicyForm::Propagation(mut edit) = form else {
        panic!("a propagation form");
    };
    edit.regions = "eu".into();
    edit.weights[1].weight = "5".into();
    edit.priority = "11".into();
    let edited = edited_policy(&stored, &PolicyForm::Propagation(edit), "12").unwrap();
    let mut want = stored.clone();
    want["spec"]["placement"]["clusterAffinity"]["fieldSelector"]["matchExpressions"][0]["values"] =
        json!(["eu"]);
    want["spec"]["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"][1]["weight"] =
        json!(5);
    want["spec"]["priority"] = json!(11);
    assert_eq!(edited, want);
}
