//! Conversion between the served versions of a built-in resource stored in another version:
//! HorizontalPodAutoscalers are stored as `autoscaling/v2` and served as `v1` too, as
//! kube-apiserver does (kubernetes `pkg/apis/autoscaling/v1/conversion.go`). `v1` has one
//! target, the CPU utilization; what else a `v2` object says (other metrics, behavior,
//! conditions, current metrics) rides in `autoscaling.alpha.kubernetes.io/*` annotations of
//! the `v1` view, and comes back from them on a `v1` write, so a `v1` client's update loses
//! nothing. (Upstream writes those annotations in the older v1 metric shapes; the sandbox
//! keeps the `v2` shapes there.) Custom resources convert with the `None` strategy:
//! `apiVersion` alone changes.

use crate::apiserver::resources::ResourceType;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";

fn is_hpa(rt: &ResourceType) -> bool {
    rt.group == "autoscaling" && rt.plural == "horizontalpodautoscalers"
}

/// The stored object as `version` serves it.
pub fn to_version<'a>(rt: &ResourceType, stored: &'a Value, version: &str) -> Cow<'a, Value> {
    if version == rt.storage_version() {
        return Cow::Borrowed(stored);
    }
    let mut out = stored.clone();
    if is_hpa(rt) && version == "v1" {
        hpa_v2_to_v1(&mut out);
    }
    out["apiVersion"] = json!(rt.api_version(version));
    Cow::Owned(out)
}

/// An object sent in another served version, in the storage version.
pub fn to_storage(rt: &ResourceType, mut value: Value) -> Value {
    let storage = rt.api_version(rt.storage_version());
    let sent = value.get("apiVersion").and_then(Value::as_str);
    if sent.is_none_or(|v| v == storage) {
        return value;
    }
    if is_hpa(rt) && sent == Some("autoscaling/v1") {
        hpa_v1_to_v2(&mut value);
    }
    value["apiVersion"] = json!(storage);
    value
}

fn is_cpu_utilization(metric: &Value) -> bool {
    metric["type"] == "Resource"
        && metric["resource"]["name"] == "cpu"
        && metric["resource"]["target"]["type"] == "Utilization"
}

/// Adds `entries` to the object's annotations.
fn annotate(obj: &mut Value, entries: Vec<(&str, Value)>) {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    if !obj["metadata"]["annotations"].is_object() {
        obj["metadata"]["annotations"] = json!({});
    }
    if let Some(map) = obj["metadata"]["annotations"].as_object_mut() {
        for (key, value) in entries {
            map.insert(key.into(), json!(value.to_string()));
        }
    }
}

fn take(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    map.remove(key).filter(|v| !v.is_null())
}

/// `Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler`.
fn hpa_v2_to_v1(obj: &mut Value) {
    let mut carried: Vec<(&str, Value)> = Vec::new();
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let metrics = take(spec, "metrics")
            .and_then(|m| m.as_array().cloned())
            .unwrap_or_default();
        let (cpu, others): (Vec<Value>, Vec<Value>) =
            metrics.into_iter().partition(is_cpu_utilization);
        if let Some(target) = cpu
            .first()
            .and_then(|m| m["resource"]["target"]["averageUtilization"].as_i64())
        {
            spec.insert("targetCPUUtilizationPercentage".into(), json!(target));
        }
        if !others.is_empty() {
            carried.push((METRICS, Value::Array(others)));
        }
        if let Some(behavior) = take(spec, "behavior") {
            carried.push((BEHAVIOR, behavior));
        }
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        let current = take(status, "currentMetrics")
            .and_then(|m| m.as_array().cloned())
            .unwrap_or_default();
        let (cpu, others): (Vec<Value>, Vec<Value>) = current
            .into_iter()
            .partition(|m| m["type"] == "Resource" && m["resource"]["name"] == "cpu");
        if let Some(value) = cpu
            .first()
            .and_then(|m| m["resource"]["current"]["averageUtilization"].as_i64())
        {
            status.insert("currentCPUUtilizationPercentage".into(), json!(value));
        }
        if !others.is_empty() {
            carried.push((CURRENT_METRICS, Value::Array(others)));
        }
        if let Some(conditions) = take(status, "conditions") {
            carried.push((CONDITIONS, conditions));
        }
    }
    if !carried.is_empty() {
        annotate(obj, carried);
    }
}

/// `Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`.
fn hpa_v1_to_v2(obj: &mut Value) {
    let mut restored: Map<String, Value> = Map::new();
    if let Some(map) = obj
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        for key in [METRICS, BEHAVIOR, CONDITIONS, CURRENT_METRICS] {
            if let Some(parsed) = map
                .remove(key)
                .and_then(|v| v.as_str().and_then(|s| serde_json::from_str(s).ok()))
            {
                restored.insert(key.into(), parsed);
            }
        }
        if map.is_empty()
            && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.remove("annotations");
        }
    }
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let mut metrics = Vec::new();
        if let Some(target) = take(spec, "targetCPUUtilizationPercentage") {
            metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": target}}}));
        }
        if let Some(Value::Array(others)) = restored.remove(METRICS) {
            metrics.extend(others);
        }
        if !metrics.is_empty() {
            spec.insert("metrics".into(), Value::Array(metrics));
        }
        if let Some(behavior) = restored.remove(BEHAVIOR) {
            spec.insert("behavior".into(), behavior);
        }
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        let mut current = Vec::new();
        if let Some(value) = take(status, "currentCPUUtilizationPercentage") {
            current.push(json!({"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": value}}}));
        }
        if let Some(Value::Array(others)) = restored.remove(CURRENT_METRICS) {
            current.extend(others);
        }
        if !current.is_empty() {
            status.insert("currentMetrics".into(), Value::Array(current));
        }
        if let Some(conditions) = restored.remove(CONDITIONS) {
            status.insert("conditions".into(), conditions);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::resources::builtin_types;

    fn hpa_type() -> ResourceType {
        builtin_types()
            .into_iter()
            .find(|t| t.plural == "horizontalpodautoscalers")
            .unwrap()
    }

    #[test]
    fn a_cpu_target_reads_as_v1_and_comes_back() {
        let rt = hpa_type();
        let stored = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60}}}]},
            "status": {"currentReplicas": 2, "desiredReplicas": 2,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "current": {"averageUtilization": 40}}}]}});
        let v1 = to_version(&rt, &stored, "v1").into_owned();
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
        assert!(v1["spec"].get("metrics").is_none());
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 40);
        assert!(v1["metadata"].get("annotations").is_none());
        assert_eq!(to_storage(&rt, v1), stored);
    }

    #[test]
    fn what_v1_cannot_say_rides_in_annotations() {
        let rt = hpa_type();
        let stored = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "annotations": {"team": "a"}},
            "spec": {"maxReplicas": 5,
                "metrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"},
                    "target": {"type": "AverageValue", "averageValue": "10"}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}},
            "status": {"conditions": [{"type": "AbleToScale", "status": "True"}]}});
        let v1 = to_version(&rt, &stored, "v1").into_owned();
        assert!(v1["spec"].get("targetCPUUtilizationPercentage").is_none());
        assert!(v1["metadata"]["annotations"][METRICS].is_string());
        assert!(v1["metadata"]["annotations"][BEHAVIOR].is_string());
        assert!(v1["metadata"]["annotations"][CONDITIONS].is_string());
        assert_eq!(to_storage(&rt, v1), stored);
    }

    #[test]
    fn the_storage_version_is_not_copied() {
        let rt = hpa_type();
        let stored = json!({"apiVersion": "autoscaling/v2"});
        assert!(matches!(to_version(&rt, &stored, "v2"), Cow::Borrowed(_)));
    }
}
