//! Karmada's filter plugins: which clusters a placement admits, and why the others are not.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::{ClusterAffinity, Exclusion, FieldRequirement, Placement, Workload};
use crate::models::cluster::Cluster;

/// `clusteraffinity` plugin's reason.
pub const AFFINITY_MISMATCH: &str =
    "cluster(s) did not match the placement cluster affinity constraint";

/// Taints Karmada's cluster controller puts on a cluster whose `Ready` condition is `False`
/// or `Unknown` (`pkg/controllers/cluster/cluster_controller.go`, `NotReadyTaintTemplate`
/// and `UnreachableTaintTemplate`): a placement that does not tolerate them leaves the cluster
/// out because it is not Ready.
pub const NOT_READY_TAINTS: [&str; 2] = [
    "cluster.karmada.io/not-ready",
    "cluster.karmada.io/unreachable",
];

/// The first filter plugin that rejects `cluster`: which kind of rule and its reason in
/// Karmada's words; `None` when all admit it. Order as registered in
/// `pkg/scheduler/framework/plugins/registry.go`: taint toleration, cluster affinity, spread
/// constraint.
pub(super) fn reason(
    placement: &Placement,
    workload: &Workload,
    cluster: &Cluster,
) -> Option<(Exclusion, String)> {
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    // `tainttoleration.Filter`: a cluster the binding already targets stays.
    let already = workload.scheduled.iter().any(|t| t.name == name);
    if !already
        && let Some(taint) = untolerated_taint(&cluster.spec.taints, &placement.cluster_tolerations)
    {
        let kind = if NOT_READY_TAINTS.contains(&taint.key.as_str()) {
            Exclusion::NotReady
        } else {
            Exclusion::Taint
        };
        return Some((
            kind,
            format!(
                "cluster(s) had untolerated taint {{{}}}",
                taint_string(&taint)
            ),
        ));
    }
    if let Some(affinity) = &placement.cluster_affinity
        && !affinity_matches(cluster, affinity)
    {
        return Some((Exclusion::ClusterAffinity, AFFINITY_MISMATCH.to_owned()));
    }
    // `spreadconstraint.Filter`: a cluster must have the property spread by.
    for constraint in &placement.spread_constraints {
        let missing = match constraint.spread_by_field.as_deref() {
            Some("provider") => cluster
                .spec
                .provider
                .as_deref()
                .unwrap_or_default()
                .is_empty(),
            Some("region") => cluster
                .spec
                .region
                .as_deref()
                .unwrap_or_default()
                .is_empty(),
            Some("zone") => cluster.spec.zones.is_empty(),
            _ => false,
        };
        if missing {
            let field = constraint.spread_by_field.as_deref().unwrap_or_default();
            let property = if field == "zone" { "zones" } else { field };
            return Some((
                Exclusion::SpreadConstraint,
                format!("cluster(s) did not have {property} property"),
            ));
        }
    }
    None
}

/// `util.ClusterMatches` (`pkg/util/selector.go`): not excluded, and labels, fields and names
/// all match where given.
pub fn affinity_matches(cluster: &Cluster, affinity: &ClusterAffinity) -> bool {
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    if affinity.exclude.iter().any(|e| e == name) {
        return false;
    }
    if let Some(selector) = &affinity.label_selector {
        let labels = cluster.metadata.labels.clone().unwrap_or_default();
        if !label_selector_matches(selector, &labels) {
            return false;
        }
    }
    if let Some(fields) = &affinity.field_selector {
        for requirement in &fields.match_expressions {
            if !field_matches(cluster, requirement) {
                return false;
            }
        }
    }
    affinity.cluster_names.is_empty() || affinity.cluster_names.iter().any(|n| n == name)
}

fn field_matches(cluster: &Cluster, requirement: &FieldRequirement) -> bool {
    let values = &requirement.values;
    if requirement.key == "zone" {
        // `matchZones`: any overlap for In, none for NotIn.
        let zones = &cluster.spec.zones;
        return match requirement.operator.as_str() {
            "In" => zones.iter().any(|z| values.contains(z)),
            "NotIn" => !zones.iter().any(|z| values.contains(z)),
            "Exists" => !zones.is_empty(),
            "DoesNotExist" => zones.is_empty(),
            _ => false,
        };
    }
    // provider and region are matched as labels (`extractClusterFields`): unset is absent.
    let value = match requirement.key.as_str() {
        "provider" => cluster.spec.provider.as_deref(),
        "region" => cluster.spec.region.as_deref(),
        _ => None,
    }
    .filter(|v| !v.is_empty());
    requirement_matches(&requirement.operator, values, value)
}

fn requirement_matches(operator: &str, values: &[String], value: Option<&str>) -> bool {
    match operator {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => !value.is_some_and(|v| values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        _ => false,
    }
}

/// Whether `labels` satisfy `selector` (`metav1.LabelSelectorAsSelector`); an invalid
/// operator matches nothing.
pub fn label_selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let by_label = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    by_label
        && selector.match_expressions.iter().flatten().all(|e| {
            requirement_matches(
                &e.operator,
                e.values.as_deref().unwrap_or_default(),
                labels.get(&e.key).map(String::as_str),
            )
        })
}

/// The first NoSchedule or NoExecute taint no toleration tolerates
/// (`v1helper.FindMatchingUntoleratedTaint`).
pub fn untolerated_taint(taints: &[Taint], tolerations: &[Toleration]) -> Option<Taint> {
    taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|t| !tolerations.iter().any(|o| tolerates(o, t)))
        .cloned()
}

/// `Toleration.ToleratesTaint` (k8s.io/api/core/v1 `toleration.go`).
fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let effect = toleration.effect.as_deref().unwrap_or_default();
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" | "" => {
            toleration.value.as_deref().unwrap_or_default()
                == taint.value.as_deref().unwrap_or_default()
        }
        _ => false,
    }
}

/// `Taint.ToString`: `key=value:effect`, parts left out when empty.
fn taint_string(taint: &Taint) -> String {
    let value = taint.value.as_deref().unwrap_or_default();
    match (value.is_empty(), taint.effect.is_empty()) {
        (true, true) => taint.key.clone(),
        (false, true) => format!("{}={value}", taint.key),
        (true, false) => format!("{}:{}", taint.key, taint.effect),
        (false, false) => format!("{}={value}:{}", taint.key, taint.effect),
    }
}
