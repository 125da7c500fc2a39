//! What karmada-aggregated-apiserver does to a `Cluster` on every create and update of its
//! spec, where kube-sandbox holds Clusters as a CRD: the zone rules of
//! `pkg/registry/cluster/strategy.go` (Karmada v1.19).
//!
//! - validation (`pkg/apis/cluster/validation`, `validateClusterSpecForFieldSelector`): the
//!   deprecated `spec.zone` and `spec.zones` cannot both be set: 422 `Invalid`, field
//!   `spec.spec`, reason `FieldValueTypeInvalid`, "Zone and Zones cannot co-exist" (recorded
//!   in `cluster-patch-zone-when-zones-set-error.json`; Karmada prints the spec with its Go
//!   field names, the sandbox prints it as stored);
//! - then canonicalization (`pkg/apis/cluster/mutation`, `MutateCluster`): a `zone`
//!   without `zones` is stored as `zones: [zone]`, `zone` cleared (`migrateZoneToZones`),
//!   and a `NoExecute` taint without `timeAdded` gets the time (`mutateClusterTaints`);
//! - the resource models (`PrepareForCreate`, `PrepareForUpdate`, feature
//!   `CustomizedClusterResourceModeling`, on by default): Karmada's default grades on a
//!   Cluster created without any, the canonical form of any given
//!   ([`super::resource_models::prepare`]).

use std::sync::Arc;

use kube_sandbox::error::{ApiError, Cause};
use kube_sandbox::{ClusterOptions, StrategyHook};
use serde_json::{Value, json};

use super::cluster_proxy::CLUSTER_GROUP;

/// `options` with Karmada's Cluster strategy for `clusters`.
pub fn with_cluster_strategy(options: ClusterOptions) -> ClusterOptions {
    let hook: Arc<dyn StrategyHook> = Arc::new(|old: Option<&Value>, new: &mut Value| {
        super::resource_models::prepare(new, old.is_none());
        validate_zones(new)?;
        migrate_zone_to_zones(new);
        time_no_execute_taints(
            new,
            &jiff::Timestamp::now()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string(),
        );
        Ok(())
    });
    ClusterOptions {
        strategy_hooks: options
            .strategy_hooks
            .clone()
            .with(CLUSTER_GROUP, "clusters", hook),
        ..options
    }
}

fn zone(cluster: &Value) -> &str {
    cluster
        .pointer("/spec/zone")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn has_zones(cluster: &Value) -> bool {
    cluster
        .pointer("/spec/zones")
        .and_then(Value::as_array)
        .is_some_and(|z| !z.is_empty())
}

/// Refuses a Cluster holding both `spec.zone` and `spec.zones`, as Karmada does.
pub fn validate_zones(cluster: &Value) -> Result<(), ApiError> {
    if zone(cluster).is_empty() || !has_zones(cluster) {
        return Ok(());
    }
    let name = cluster
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let spec = cluster.get("spec").cloned().unwrap_or(Value::Null);
    Err(ApiError::invalid(
        CLUSTER_GROUP,
        "Cluster",
        name,
        vec![Cause {
            reason: "FieldValueTypeInvalid".into(),
            message: format!("Invalid value: {spec}: Zone and Zones cannot co-exist"),
            field: "spec.spec".into(),
        }],
    ))
}

/// Moves a lone `spec.zone` into `spec.zones`.
pub fn migrate_zone_to_zones(cluster: &mut Value) {
    let zone = zone(cluster).to_owned();
    if zone.is_empty() || has_zones(cluster) {
        return;
    }
    if let Some(spec) = cluster.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("zone");
        spec.insert("zones".into(), json!([zone]));
    }
}

/// `mutateClusterTaints`: a `NoExecute` taint without `timeAdded` gets `now`.
pub fn time_no_execute_taints(cluster: &mut Value, now: &str) {
    let Some(taints) = cluster
        .pointer_mut("/spec/taints")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for taint in taints {
        if taint["effect"] == "NoExecute" && taint.get("timeAdded").is_none_or(Value::is_null) {
            taint["timeAdded"] = json!(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_execute_taints_get_their_time() {
        let mut cluster = json!({"spec": {"taints": [
            {"key": "a", "effect": "NoExecute"},
            {"key": "b", "effect": "NoExecute", "timeAdded": "T0"},
            {"key": "c", "effect": "NoSchedule"}]}});
        time_no_execute_taints(&mut cluster, "T1");
        assert_eq!(
            cluster["spec"]["taints"],
            json!([
                {"key": "a", "effect": "NoExecute", "timeAdded": "T1"},
                {"key": "b", "effect": "NoExecute", "timeAdded": "T0"},
                {"key": "c", "effect": "NoSchedule"}])
        );
    }

    #[test]
    fn zone_rules() {
        // (spec, refused, stored spec)
        let cases = [
            (json!({"zone": "a"}), false, json!({"zones": ["a"]})),
            (
                json!({"zones": ["a", "b"]}),
                false,
                json!({"zones": ["a", "b"]}),
            ),
            (
                json!({"zone": "", "zones": ["a"]}),
                false,
                json!({"zone": "", "zones": ["a"]}),
            ),
            (
                json!({"zone": "b", "zones": []}),
                false,
                json!({"zones": ["b"]}),
            ),
            (json!({"zone": "b", "zones": ["a"]}), true, Value::Null),
            (json!({"region": "r"}), false, json!({"region": "r"})),
        ];
        for (spec, refused, stored) in cases {
            let mut cluster = json!({"metadata": {"name": "msb"}, "spec": spec});
            match validate_zones(&cluster) {
                Err(err) => {
                    assert!(refused, "{spec}: {err:?}");
                    assert_eq!(err.code, 422);
                    assert_eq!(err.reason, "Invalid");
                    assert!(
                        err.message.starts_with(
                            "Cluster.cluster.karmada.io \"msb\" is invalid: spec.spec: Invalid value: {"
                        ) && err.message.ends_with("}: Zone and Zones cannot co-exist"),
                        "{}",
                        err.message
                    );
                }
                Ok(()) => {
                    assert!(!refused, "{spec}");
                    migrate_zone_to_zones(&mut cluster);
                    assert_eq!(cluster["spec"], stored, "{spec}");
                }
            }
        }
    }
}
