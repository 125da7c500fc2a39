//! The plain steps of a preview: the request checked field by field and turned into the
//! scheduler's placement and workload, and the scheduler's decision into the answer.

use serde_json::Value;

use super::types::{PlacementPreview, PlacementPreviewSpec, PreviewLeftOut, PreviewTarget};
use crate::api::error::ApiError;
use crate::scheduling::{
    ClusterAffinity, DIVIDED, DUPLICATED, Decision, Placement, ReplicaScheduling, SpreadConstraint,
    Unschedulable, Workload,
};

/// The kinds a policy may be.
const POLICY_KINDS: [&str; 2] = ["PropagationPolicy", "ClusterPropagationPolicy"];

/// The placement to preview and the field it came from (`policy.spec.placement` or
/// `placement`), checked.
pub fn placement_of(spec: &PlacementPreviewSpec) -> Result<Placement, ApiError> {
    match (&spec.policy, &spec.placement) {
        (Some(_), Some(_)) => Err(ApiError::invalid_field(
            "placement",
            "give a policy or a placement, not both",
        )),
        (None, None) => Err(ApiError::invalid_field(
            "policy",
            "give a PropagationPolicy (or ClusterPropagationPolicy) or an application placement",
        )),
        (None, Some(application)) => parse_placement(&application.karmada_placement(), "placement"),
        (Some(policy), None) => {
            let kind = policy["kind"].as_str().unwrap_or_default();
            if !kind.is_empty() && !POLICY_KINDS.contains(&kind) {
                return Err(ApiError::invalid_field(
                    "policy.kind",
                    format!("{kind:?} is not a PropagationPolicy or ClusterPropagationPolicy"),
                ));
            }
            let placement = &policy["spec"]["placement"];
            if placement.is_null() {
                return Err(ApiError::invalid_field(
                    "policy.spec.placement",
                    "the policy has no placement",
                ));
            }
            parse_placement(placement, "policy.spec.placement")
        }
    }
}

/// `value` as a placement: each field read on its own so that an error names it, then the
/// values Karmada's CRD allows checked.
pub fn parse_placement(value: &Value, field: &str) -> Result<Placement, ApiError> {
    let Some(fields) = value.as_object() else {
        return Err(ApiError::invalid_field(field, "must be an object"));
    };
    fn read<T: serde::de::DeserializeOwned + Default>(
        fields: &serde_json::Map<String, Value>,
        field: &str,
        key: &str,
    ) -> Result<T, ApiError> {
        match fields.get(key) {
            None | Some(Value::Null) => Ok(T::default()),
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| ApiError::invalid_field(&format!("{field}.{key}"), e.to_string())),
        }
    }
    if fields.contains_key("clusterAffinities") {
        return Err(ApiError::invalid_field(
            &format!("{field}.clusterAffinities"),
            "ordered cluster affinity groups are not previewed; give clusterAffinity",
        ));
    }
    let placement = Placement {
        cluster_affinity: read::<Option<ClusterAffinity>>(fields, field, "clusterAffinity")?,
        cluster_tolerations: read(fields, field, "clusterTolerations")?,
        spread_constraints: read(fields, field, "spreadConstraints")?,
        replica_scheduling: read::<Option<ReplicaScheduling>>(fields, field, "replicaScheduling")?,
    };
    check_placement(&placement, field)?;
    Ok(placement)
}

fn one_of(field: &str, value: Option<&str>, allowed: &[&str]) -> Result<(), ApiError> {
    match value {
        Some(v) if !allowed.contains(&v) => Err(ApiError::invalid_field(
            field,
            format!("{v:?} is not one of {}", allowed.join(", ")),
        )),
        _ => Ok(()),
    }
}

fn check_affinity(affinity: &ClusterAffinity, field: &str) -> Result<(), ApiError> {
    for (i, e) in affinity
        .label_selector
        .iter()
        .flat_map(|s| s.match_expressions.iter().flatten())
        .enumerate()
    {
        one_of(
            &format!("{field}.labelSelector.matchExpressions[{i}].operator"),
            Some(&e.operator),
            &["In", "NotIn", "Exists", "DoesNotExist"],
        )?;
    }
    for (i, r) in affinity
        .field_selector
        .iter()
        .flat_map(|s| s.match_expressions.iter())
        .enumerate()
    {
        let at = format!("{field}.fieldSelector.matchExpressions[{i}]");
        one_of(
            &format!("{at}.key"),
            Some(&r.key),
            &["provider", "region", "zone"],
        )?;
        one_of(
            &format!("{at}.operator"),
            Some(&r.operator),
            &["In", "NotIn", "Exists", "DoesNotExist"],
        )?;
    }
    Ok(())
}

/// The enumerations and bounds of Karmada's `Placement` (its CRD's validation).
fn check_placement(placement: &Placement, field: &str) -> Result<(), ApiError> {
    if let Some(affinity) = &placement.cluster_affinity {
        check_affinity(affinity, &format!("{field}.clusterAffinity"))?;
    }
    for (i, t) in placement.cluster_tolerations.iter().enumerate() {
        let at = format!("{field}.clusterTolerations[{i}]");
        one_of(
            &format!("{at}.operator"),
            t.operator.as_deref(),
            &["Exists", "Equal"],
        )?;
        one_of(
            &format!("{at}.effect"),
            t.effect.as_deref().filter(|e| !e.is_empty()),
            &["NoSchedule", "PreferNoSchedule", "NoExecute"],
        )?;
    }
    for (i, c) in placement.spread_constraints.iter().enumerate() {
        check_spread(c, &format!("{field}.spreadConstraints[{i}]"))?;
    }
    if let Some(r) = &placement.replica_scheduling {
        let at = format!("{field}.replicaScheduling");
        one_of(
            &format!("{at}.replicaSchedulingType"),
            r.replica_scheduling_type.as_deref(),
            &[DUPLICATED, DIVIDED],
        )?;
        one_of(
            &format!("{at}.replicaDivisionPreference"),
            r.replica_division_preference.as_deref(),
            &["Aggregated", "Weighted"],
        )?;
        if let Some(w) = &r.weight_preference {
            one_of(
                &format!("{at}.weightPreference.dynamicWeight"),
                w.dynamic_weight.as_deref().filter(|d| !d.is_empty()),
                &["AvailableReplicas"],
            )?;
            for (i, s) in w.static_weight_list.iter().enumerate() {
                let entry = format!("{at}.weightPreference.staticWeightList[{i}]");
                if s.weight < 1 {
                    return Err(ApiError::invalid_field(
                        &format!("{entry}.weight"),
                        format!("{} is below the minimum 1", s.weight),
                    ));
                }
                check_affinity(&s.target_cluster, &format!("{entry}.targetCluster"))?;
            }
        }
    }
    Ok(())
}

fn check_spread(c: &SpreadConstraint, at: &str) -> Result<(), ApiError> {
    match (&c.spread_by_field, &c.spread_by_label) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid_field(
                at,
                "spreadByField and spreadByLabel exclude each other",
            ));
        }
        (Some(f), None) => one_of(
            &format!("{at}.spreadByField"),
            Some(f),
            &["cluster", "region", "zone", "provider"],
        )?,
        _ => {}
    }
    if c.max_groups > 0 && c.min_groups > c.max_groups {
        return Err(ApiError::invalid_field(
            &format!("{at}.minGroups"),
            format!("{} is above maxGroups {}", c.min_groups, c.max_groups),
        ));
    }
    Ok(())
}

/// Checks a workload given as an object: an object with a `kind` (what Karmada reads its
/// replicas by; `apiVersion` may be left out, as the application call fills it in).
pub fn check_workload(workload: &Value) -> Result<(), ApiError> {
    if !workload.is_object() {
        return Err(ApiError::invalid_field("workload", "must be an object"));
    }
    if workload
        .pointer("/kind")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(ApiError::invalid_field("workload.kind", "is required"));
    }
    Ok(())
}

/// The answer for `placement` and `workload` from the scheduler's outcome.
pub fn answer(
    placement: &Placement,
    workload: &Workload,
    outcome: Result<Decision, Unschedulable>,
) -> PlacementPreview {
    let (clusters, left_out, message) = match outcome {
        Ok(d) => (d.clusters, d.left_out, None),
        Err(e) => (Vec::new(), e.left_out, Some(e.message)),
    };
    PlacementPreview {
        replicas: workload.replicas,
        replica_scheduling_type: placement
            .replica_scheduling
            .as_ref()
            .and_then(|r| r.replica_scheduling_type.clone())
            .unwrap_or_else(|| DUPLICATED.to_owned()),
        clusters: clusters
            .into_iter()
            .map(|t| PreviewTarget {
                cluster: t.name,
                replicas: t.replicas,
            })
            .collect(),
        left_out: left_out
            .into_iter()
            .map(|l| PreviewLeftOut {
                cluster: l.cluster,
                exclusion: l.exclusion,
                reason: l.reason,
            })
            .collect(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::applications::Placement as ApplicationPlacement;

    fn field_of(err: ApiError) -> String {
        err.message.split(':').next().unwrap_or_default().to_owned()
    }

    #[test]
    fn malformed_placements_name_the_field() {
        let cases = [
            (
                json!({"clusterAffinity": "east"}),
                "policy.spec.placement.clusterAffinity",
            ),
            (
                json!({"clusterAffinity": {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}}),
                "policy.spec.placement.clusterAffinity.labelSelector.matchExpressions[0].operator",
            ),
            (
                json!({"clusterTolerations": [{"key": "a", "operator": "Maybe"}]}),
                "policy.spec.placement.clusterTolerations[0].operator",
            ),
            (
                json!({"spreadConstraints": [{"spreadByField": "planet", "maxGroups": 1}]}),
                "policy.spec.placement.spreadConstraints[0].spreadByField",
            ),
            (
                json!({"replicaScheduling": {"replicaSchedulingType": "Tripled"}}),
                "policy.spec.placement.replicaScheduling.replicaSchedulingType",
            ),
            (
                json!({"replicaScheduling": {"replicaSchedulingType": "Divided",
                    "weightPreference": {"staticWeightList": [{"targetCluster": {}, "weight": 0}]}}}),
                "policy.spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight",
            ),
            (
                json!({"replicaScheduling": {"replicaSchedulingType": 3}}),
                "policy.spec.placement.replicaScheduling",
            ),
            (json!([]), "policy.spec.placement"),
        ];
        for (placement, field) in cases {
            let spec = PlacementPreviewSpec {
                policy: Some(
                    json!({"kind": "PropagationPolicy", "spec": {"placement": placement}}),
                ),
                ..Default::default()
            };
            let err = placement_of(&spec).unwrap_err();
            assert_eq!(field_of(err), field, "{placement}");
        }
        let not_a_policy = PlacementPreviewSpec {
            policy: Some(json!({"kind": "OverridePolicy", "spec": {}})),
            ..Default::default()
        };
        assert_eq!(
            field_of(placement_of(&not_a_policy).unwrap_err()),
            "policy.kind"
        );
        assert_eq!(
            field_of(placement_of(&PlacementPreviewSpec::default()).unwrap_err()),
            "policy"
        );
        assert_eq!(
            field_of(check_workload(&json!({"apiVersion": "apps/v1"})).unwrap_err()),
            "workload.kind"
        );
    }

    #[test]
    fn an_application_placement_is_previewed_as_its_policy() {
        let spec = PlacementPreviewSpec {
            placement: Some(ApplicationPlacement {
                cluster_names: vec!["east".into(), "west".into()],
                weights: [("east".to_owned(), 2), ("west".to_owned(), 1)].into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let p = placement_of(&spec).unwrap();
        assert_eq!(
            p.cluster_affinity.unwrap().cluster_names,
            vec!["east".to_owned(), "west".to_owned()]
        );
        let r = p.replica_scheduling.unwrap();
        assert_eq!(r.replica_scheduling_type.as_deref(), Some(DIVIDED));
        assert_eq!(r.weight_preference.unwrap().static_weight_list.len(), 2);
    }
}
