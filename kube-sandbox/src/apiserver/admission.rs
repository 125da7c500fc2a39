//! Per-kind defaults and validation of built-in resources, as kube-apiserver's registry
//! strategies and default admission plugins apply them (the parts controllers rely on).

use crate::apiserver::error::{ApiError, Cause};
use crate::apiserver::resources::{GroupResource, ResourceType};
use crate::apiserver::state::ClusterState;
use crate::apiserver::workload_defaults;
use crate::validation::schema;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

fn invalid(rt: &ResourceType, obj: &Value, field: &str, reason: &str, message: String) -> ApiError {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    ApiError::invalid(
        &rt.group,
        &rt.kind,
        name,
        vec![Cause {
            reason: reason.into(),
            message,
            field: field.into(),
        }],
    )
}

fn set_default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.into(), value);
    }
}

/// The label `kubernetes.io/metadata.name: <name>` every namespace carries, set on every
/// write whatever the request says (kubernetes `pkg/apis/core/v1/defaults.go`,
/// `SetDefaults_Namespace`, and the namespace strategy's `Canonicalize`).
pub fn label_namespace_name(namespace: &mut Value) {
    let Some(name) = namespace
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
    else {
        return;
    };
    let Some(meta) = namespace.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    if let Some(labels) = labels.as_object_mut() {
        labels.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
}

/// Defaults and checks applied when an object is created.
pub fn on_create(state: &ClusterState, rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
    if let Some(hook) = state.options.strategy_hooks.find(&rt.group, &rt.plural) {
        hook.apply(None, obj)?;
    }
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => create_pod(state, rt, obj),
        ("", "secrets") => {
            fold_string_data(obj);
            if let Some(map) = obj.as_object_mut() {
                set_default(map, "type", json!("Opaque"));
            }
            Ok(())
        }
        ("", "namespaces") => {
            if let Some(map) = obj.as_object_mut() {
                let spec = map.entry("spec").or_insert_with(|| json!({}));
                if let Some(spec) = spec.as_object_mut() {
                    set_default(spec, "finalizers", json!(["kubernetes"]));
                }
            }
            label_namespace_name(obj);
            Ok(())
        }
        ("", "services") => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                set_default(spec, "type", json!("ClusterIP"));
                if spec
                    .get("clusterIP")
                    .is_none_or(|v| v.as_str().is_none_or(str::is_empty))
                {
                    let b = crate::apiserver::meta::random_bytes::<2>();
                    let ip = format!("10.96.{}.{}", b[0], b[1].max(1));
                    spec.insert("clusterIP".into(), json!(ip));
                    spec.insert("clusterIPs".into(), json!([ip]));
                }
                set_default(spec, "sessionAffinity", json!("None"));
            }
            Ok(())
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => check_crd(rt, obj),
        (group, plural) if workload_defaults::applies_to(group, plural) => {
            workload_defaults::apply(group, plural, obj, true);
            Ok(())
        }
        ("scheduling.k8s.io", "priorityclasses") => {
            if obj.get("value").and_then(Value::as_i64).is_none() {
                return Err(invalid(
                    rt,
                    obj,
                    "value",
                    "FieldValueRequired",
                    "value: Required value".into(),
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Defaults and checks applied when an object is replaced or patched.
pub fn on_update(
    state: &ClusterState,
    rt: &ResourceType,
    old: &Value,
    new: &mut Value,
    status_write: bool,
) -> Result<(), ApiError> {
    if !status_write && let Some(hook) = state.options.strategy_hooks.find(&rt.group, &rt.plural) {
        hook.apply(Some(old), new)?;
    }
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "secrets") => {
            fold_string_data(new);
            Ok(())
        }
        ("", "namespaces") => {
            label_namespace_name(new);
            Ok(())
        }
        ("", "pods") if !status_write => {
            let old_node = old
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or("");
            let new_node = new
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !old_node.is_empty() && old_node != new_node {
                return Err(invalid(
                    rt,
                    new,
                    "spec",
                    "FieldValueForbidden",
                    "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)".into(),
                ));
            }
            Ok(())
        }
        (group, plural) if !status_write && workload_defaults::applies_to(group, plural) => {
            workload_defaults::apply(group, plural, new, false);
            Ok(())
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") if !status_write => {
            check_crd(rt, new)?;
            let group = |v: &Value| v.pointer("/spec/group").cloned();
            let scope = |v: &Value| v.pointer("/spec/scope").cloned();
            if group(old) != group(new) || scope(old) != scope(new) {
                return Err(invalid(
                    rt,
                    new,
                    "spec.group",
                    "FieldValueInvalid",
                    "spec.group: Invalid value: field is immutable".into(),
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// How long a deleted object lingers before removal: `Some(seconds)` for pods that a kubelet
/// has to stop, `None` when it goes at once.
pub fn grace_period(rt: &ResourceType, obj: &Value, requested: Option<i64>) -> Option<i64> {
    if !(rt.group.is_empty() && rt.plural == "pods") {
        return None;
    }
    if requested == Some(0) {
        return Some(0);
    }
    let scheduled = obj
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let finished = matches!(
        obj.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    if !scheduled || finished {
        return None;
    }
    Some(
        requested
            .or_else(|| {
                obj.pointer("/spec/terminationGracePeriodSeconds")
                    .and_then(Value::as_i64)
            })
            .unwrap_or(30)
            .max(1),
    )
}

/// `stringData` is write-only: it is merged into `data` base64-encoded.
fn fold_string_data(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let Some(Value::Object(string_data)) = map.remove("stringData") else {
        return;
    };
    let data = map.entry("data").or_insert_with(|| json!({}));
    if let Some(data) = data.as_object_mut() {
        for (k, v) in string_data {
            if let Some(s) = v.as_str() {
                data.insert(k, json!(STANDARD.encode(s)));
            }
        }
    }
}

fn create_pod(state: &ClusterState, rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
    let containers_ok = obj
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty());
    if !containers_ok {
        return Err(invalid(
            rt,
            obj,
            "spec.containers",
            "FieldValueRequired",
            "spec.containers: Required value".into(),
        ));
    }
    let priority_class = obj
        .pointer("/spec/priorityClassName")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut priority = None;
    if let Some(pc) = priority_class.filter(|p| !p.is_empty()) {
        let gr = GroupResource::new("scheduling.k8s.io", "priorityclasses");
        match state.store.get(&gr, "", &pc) {
            Some(found) => priority = found.value.get("value").and_then(Value::as_i64),
            None if pc == "system-node-critical" => priority = Some(2_000_001_000),
            None if pc == "system-cluster-critical" => priority = Some(2_000_000_000),
            None => {
                return Err(ApiError::forbidden(
                    "",
                    "pods",
                    obj.pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                    format!("no PriorityClass with name {pc} was found"),
                ));
            }
        }
    }
    let qos = qos_class(obj);
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        set_default(spec, "restartPolicy", json!("Always"));
        set_default(spec, "dnsPolicy", json!("ClusterFirst"));
        set_default(spec, "schedulerName", json!("default-scheduler"));
        set_default(spec, "terminationGracePeriodSeconds", json!(30));
        set_default(spec, "serviceAccountName", json!("default"));
        set_default(spec, "enableServiceLinks", json!(true));
        default_toleration_seconds(spec);
        if let Some(p) = priority {
            spec.insert("priority".into(), json!(p));
        } else {
            set_default(spec, "priority", json!(0));
        }
        for list in ["containers", "initContainers"] {
            if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
                for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
                    let latest = !image.contains(':') || image.ends_with(":latest");
                    let policy = if latest { "Always" } else { "IfNotPresent" };
                    set_default(c, "imagePullPolicy", json!(policy));
                    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
                    set_default(c, "terminationMessagePolicy", json!("File"));
                }
            }
        }
    }
    obj["status"] = json!({"phase": "Pending", "qosClass": qos});
    Ok(())
}

/// How long pods tolerate a not-ready or unreachable node unless they say otherwise
/// (kube-apiserver's `--default-not-ready-toleration-seconds` and
/// `--default-unreachable-toleration-seconds`).
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// The DefaultTolerationSeconds admission plugin, on by default in kube-apiserver
/// (kubernetes `plugin/pkg/admission/defaulttolerationseconds/admission.go`, `Admit`): a new
/// pod that does not tolerate `node.kubernetes.io/not-ready:NoExecute` (resp.
/// `unreachable`) with a toleration of that key or an empty key, and the effect `NoExecute`
/// or none, gets one with `tolerationSeconds: 300`.
fn default_toleration_seconds(spec: &mut Map<String, Value>) {
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if tolerations.is_null() {
        *tolerations = json!([]);
    }
    let Some(tolerations) = tolerations.as_array_mut() else {
        return;
    };
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        let tolerated = tolerations.iter().any(|t| {
            let field = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("");
            (field("key") == key || field("key").is_empty())
                && (field("effect") == "NoExecute" || field("effect").is_empty())
        });
        if !tolerated {
            tolerations.push(
                json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}),
            );
        }
    }
}

/// The pod's QoS class from its containers' requests and limits.
pub fn qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|l| pod.pointer(&format!("/spec/{l}")).and_then(Value::as_array))
        .flatten()
        .collect();
    let mut any = false;
    let mut guaranteed = true;
    for c in &containers {
        let requests = c.pointer("/resources/requests").and_then(Value::as_object);
        let limits = c.pointer("/resources/limits").and_then(Value::as_object);
        if requests.is_some_and(|r| !r.is_empty()) || limits.is_some_and(|l| !l.is_empty()) {
            any = true;
        }
        for res in ["cpu", "memory"] {
            let limit = limits.and_then(|l| l.get(res));
            let request = requests.and_then(|r| r.get(res)).or(limit);
            if limit.is_none() || request != limit {
                guaranteed = false;
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

fn check_crd(rt: &ResourceType, obj: &Value) -> Result<(), ApiError> {
    let parsed = crate::apiserver::resources::type_from_crd(obj)
        .map_err(|why| invalid(rt, obj, "spec", "FieldValueInvalid", why))?;
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let expected = format!("{}.{}", parsed.plural, parsed.group);
    if name != expected {
        return Err(invalid(
            rt,
            obj,
            "metadata.name",
            "FieldValueInvalid",
            format!(
                "metadata.name: Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"
            ),
        ));
    }
    let mut causes = Vec::new();
    if let Some(versions) = obj.pointer("/spec/versions").and_then(Value::as_array) {
        for (i, v) in versions.iter().enumerate() {
            if let Some(schema) = v.pointer("/schema/openAPIV3Schema") {
                for e in schema::validate_crd_schema(schema) {
                    let e = e.with_prefix(&format!("spec.versions[{i}].schema.openAPIV3Schema"));
                    causes.push(Cause {
                        reason: e.reason().to_string(),
                        message: e.error_body(),
                        field: e.field.clone(),
                    });
                }
            }
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(&rt.group, &rt.kind, name, causes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos_classes() {
        let cases = [
            (
                json!({"spec": {"containers": [{"name": "a"}]}}),
                "BestEffort",
            ),
            (
                json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}}),
                "Burstable",
            ),
            (
                json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}),
                "Guaranteed",
            ),
            (
                json!({"spec": {"containers": [{"name": "a", "resources": {
                    "requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]}}),
                "Burstable",
            ),
        ];
        for (pod, want) in cases {
            assert_eq!(qos_class(&pod), want, "{pod}");
        }
    }

    #[test]
    fn string_data_folds_into_data() {
        let mut s = json!({"stringData": {"a": "hello"}, "data": {"b": "eA=="}});
        fold_string_data(&mut s);
        assert_eq!(s, json!({"data": {"a": "aGVsbG8=", "b": "eA=="}}));
    }
}
