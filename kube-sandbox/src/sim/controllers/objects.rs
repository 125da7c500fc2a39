//! What every workload controller reads and writes: owned objects, pod predicates, pods from
//! templates, owner references, and writes that change nothing when nothing differs.

use crate::apiserver::api::{DeleteOptions, WriteContext};
use crate::apiserver::error::ApiError;
use crate::apiserver::resources::GroupResource;
use crate::apiserver::state::ClusterState;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The value at `path` (object keys only).
pub fn at<'v>(value: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// A string at `path`, or "".
pub fn str_at<'v>(value: &'v Value, path: &[&str]) -> &'v str {
    at(value, path).and_then(Value::as_str).unwrap_or("")
}

/// An integer at `path`.
pub fn int_at(value: &Value, path: &[&str]) -> Option<i64> {
    at(value, path).and_then(Value::as_i64)
}

/// `metadata.name`.
pub fn name_of(obj: &Value) -> &str {
    str_at(obj, &["metadata", "name"])
}

/// `metadata.namespace`.
pub fn namespace_of(obj: &Value) -> &str {
    str_at(obj, &["metadata", "namespace"])
}

/// `metadata.uid`.
pub fn uid_of(obj: &Value) -> &str {
    str_at(obj, &["metadata", "uid"])
}

/// Whether the object is being deleted.
pub fn is_deleting(obj: &Value) -> bool {
    at(obj, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null())
}

/// The uid of the object's controller (the owner reference with `controller: true`).
pub fn controller_uid(obj: &Value) -> Option<&str> {
    at(obj, &["metadata", "ownerReferences"])
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .and_then(|r| r.get("uid").and_then(Value::as_str))
}

/// An owner reference making `owner` the controller of what carries it, as controllers set
/// it (`controller: true`, `blockOwnerDeletion: true`).
pub fn controller_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": str_at(owner, &["apiVersion"]),
        "kind": str_at(owner, &["kind"]),
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The current objects of one resource, all namespaces.
pub fn list(state: &ClusterState, group: &str, plural: &str) -> Vec<Value> {
    let gr = GroupResource::new(group, plural);
    state
        .store
        .list(&gr, None, None, 0, &|_| true)
        .items
        .into_iter()
        .map(|s| s.value.clone())
        .collect()
}

/// The objects of `items` whose controller is the object with `uid`.
pub fn owned_by<'a>(items: &'a [Value], uid: &str) -> Vec<&'a Value> {
    items
        .iter()
        .filter(|o| controller_uid(o) == Some(uid))
        .collect()
}

/// A pod's phase.
pub fn phase(pod: &Value) -> &str {
    str_at(pod, &["status", "phase"])
}

/// Succeeded or Failed.
pub fn is_terminal(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// Neither terminal nor being deleted: what ReplicaSets and Jobs count as active.
pub fn is_active(pod: &Value) -> bool {
    !is_terminal(pod) && !is_deleting(pod)
}

/// The `Ready` condition's transition time when it is True.
pub fn ready_since(pod: &Value) -> Option<jiff::Timestamp> {
    let cond = at(pod, &["status", "conditions"])
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == "Ready" && c["status"] == "True")?;
    Some(
        cond.get("lastTransitionTime")
            .and_then(Value::as_str)
            .and_then(|t| t.parse().ok())
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH),
    )
}

/// Whether a pod is Running and Ready.
pub fn is_ready(pod: &Value) -> bool {
    phase(pod) == "Running" && ready_since(pod).is_some()
}

/// Whether a pod has been ready for `min_ready_seconds` at `now` (upstream `IsPodAvailable`).
pub fn is_available(pod: &Value, min_ready_seconds: i64, now: jiff::Timestamp) -> bool {
    if phase(pod) != "Running" {
        return false;
    }
    match ready_since(pod) {
        None => false,
        Some(_) if min_ready_seconds <= 0 => true,
        Some(since) => since + jiff::SignedDuration::from_secs(min_ready_seconds) <= now,
    }
}

/// Whether every `key: value` of `selector` is among `labels` (an empty selector matches all).
pub fn labels_match(selector: &Map<String, Value>, labels: Option<&Map<String, Value>>) -> bool {
    selector
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// Whether a `metav1.LabelSelector` (matchLabels and matchExpressions) selects `labels`.
pub fn selector_matches(selector: &Value, labels: Option<&Map<String, Value>>) -> bool {
    if let Some(match_labels) = selector.get("matchLabels").and_then(Value::as_object)
        && !labels_match(match_labels, labels)
    {
        return false;
    }
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|e| {
            let key = str_at(e, &["key"]);
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match str_at(e, &["operator"]) {
                "In" => label(key).is_some_and(|v| values.contains(&v)),
                "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
                "Exists" => label(key).is_some(),
                "DoesNotExist" => label(key).is_none(),
                _ => false,
            }
        })
}

/// A pod built from a workload's `spec.template`, owned by `owner`, with extra labels.
pub fn pod_from_template(
    template: &Value,
    owner: &Value,
    name: PodName<'_>,
    extra_labels: &[(&str, &str)],
) -> Value {
    let mut metadata = Map::new();
    match name {
        PodName::Exact(n) => metadata.insert("name".into(), json!(n)),
        PodName::Generate(prefix) => metadata.insert("generateName".into(), json!(prefix)),
    };
    let mut labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (k, v) in extra_labels {
        labels.insert((*k).into(), json!(v));
    }
    metadata.insert("labels".into(), Value::Object(labels));
    if let Some(annotations) = template
        .pointer("/metadata/annotations")
        .filter(|a| a.is_object())
    {
        metadata.insert("annotations".into(), annotations.clone());
    }
    if let Some(finalizers) = template.pointer("/metadata/finalizers") {
        metadata.insert("finalizers".into(), finalizers.clone());
    }
    metadata.insert("ownerReferences".into(), json!([controller_ref(owner)]));
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// How a created pod is named.
pub enum PodName<'a> {
    /// This exact name.
    Exact(&'a str),
    /// `generateName`: the prefix plus five random characters.
    Generate(&'a str),
}

/// Writes done by one controller, under its field manager.
pub struct Writer<'a> {
    /// The cluster written to.
    pub state: &'a ClusterState,
    /// The controller's name (`deployment-controller`), as its events name their source.
    /// Its writes are recorded under [`FIELD_MANAGER`], as every controller of
    /// kube-controller-manager is.
    pub manager: &'static str,
}

/// The field manager of kube-controller-manager's writes: its user agent's first segment, which
/// kube-apiserver takes as the manager (`kube-controller-manager/v1.36.2 (linux/amd64) ...`).
pub const FIELD_MANAGER: &str = "kube-controller-manager";

impl Writer<'_> {
    fn ctx(&self) -> WriteContext {
        WriteContext::system(FIELD_MANAGER)
    }

    /// Creates an object.
    pub fn create(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
        body: Value,
    ) -> Result<Arc<crate::apiserver::store::Stored>, ApiError> {
        let rt = self
            .state
            .resource_type(group, plural)
            .ok_or_else(|| ApiError::internal(format!("{plural} are not served")))?;
        let version = rt.storage_version().to_string();
        self.state
            .create(&rt, &version, namespace, body, &self.ctx())
    }

    /// Changes an object (or its status with `subresource = Some("status")`): `change` is
    /// applied to the stored object; when it alters nothing, nothing is written.
    pub fn update(
        &self,
        group: &str,
        plural: &str,
        obj: &Value,
        subresource: Option<&str>,
        change: impl FnOnce(&mut Value),
    ) -> Result<(), ApiError> {
        let rt = self
            .state
            .resource_type(group, plural)
            .ok_or_else(|| ApiError::internal(format!("{plural} are not served")))?;
        let version = rt.storage_version().to_string();
        let uid = uid_of(obj).to_string();
        self.state
            .update_with(
                &rt,
                &version,
                namespace_of(obj),
                name_of(obj),
                subresource,
                &self.ctx(),
                None,
                move |current| {
                    // Another object of the same name is not the one this pass decided on.
                    if uid_of(current) != uid {
                        return Err(ApiError::conflict(
                            group,
                            plural,
                            name_of(current),
                            "the object was replaced",
                        ));
                    }
                    let mut new = current.clone();
                    change(&mut new);
                    Ok(new)
                },
            )
            .map(|_| ())
    }

    /// Sets `status` to `status` when it differs.
    pub fn set_status(
        &self,
        group: &str,
        plural: &str,
        obj: &Value,
        status: Value,
    ) -> Result<(), ApiError> {
        self.update(group, plural, obj, Some("status"), |o| o["status"] = status)
    }

    /// Records a core/v1 Event about `obj`, as the controller's event recorder does
    /// (`kubectl describe` lists them); a failure to record is not an error of the sync.
    pub fn event(&self, obj: &Value, kind: &str, reason: &str, message: &str) {
        let now = crate::apiserver::meta::now_rfc3339();
        let nanos = jiff::Timestamp::now().as_nanosecond();
        let name = format!("{}.{:x}", name_of(obj), nanos.max(0));
        let body = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name},
            "involvedObject": {
                "apiVersion": str_at(obj, &["apiVersion"]), "kind": str_at(obj, &["kind"]),
                "name": name_of(obj), "namespace": namespace_of(obj), "uid": uid_of(obj),
                "resourceVersion": str_at(obj, &["metadata", "resourceVersion"]),
            },
            "reason": reason, "message": message, "type": kind,
            "source": {"component": self.manager},
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "reportingComponent": self.manager, "reportingInstance": "",
        });
        let namespace = match namespace_of(obj) {
            "" => "default",
            ns => ns,
        };
        if let Err(e) = self.create("", "events", namespace, body) {
            tracing::debug!(reason, "cannot record an event: {e}");
        }
    }

    /// Deletes an object (background propagation, default grace period).
    pub fn delete(&self, group: &str, plural: &str, obj: &Value) -> Result<(), ApiError> {
        let rt = self
            .state
            .resource_type(group, plural)
            .ok_or_else(|| ApiError::internal(format!("{plural} are not served")))?;
        match self.state.delete(
            &rt,
            namespace_of(obj),
            name_of(obj),
            &DeleteOptions {
                precondition_uid: Some(uid_of(obj).to_string()),
                ..Default::default()
            },
        ) {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 || e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// A status condition as workload controllers write it: when `status`, `reason` and
/// `message` are unchanged the old condition is kept (with its times); a new status moves
/// `lastTransitionTime`, and `lastUpdateTime` follows every change (Deployments).
pub fn set_condition(
    conditions: &mut Vec<Value>,
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
    with_update_time: bool,
) {
    let existing = conditions.iter().position(|c| c["type"] == kind);
    if let Some(i) = existing {
        let old = &conditions[i];
        if old["status"] == status && old["reason"] == reason && old["message"] == message {
            return;
        }
    }
    let transition = match existing {
        Some(i) if conditions[i]["status"] == status => conditions[i]["lastTransitionTime"].clone(),
        _ => json!(now),
    };
    let mut cond = json!({
        "type": kind, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": transition,
    });
    if with_update_time {
        cond["lastUpdateTime"] = json!(now);
    }
    match existing {
        Some(i) => conditions[i] = cond,
        None => conditions.push(cond),
    }
}

/// The conditions of an object's status, cloned.
pub fn conditions_of(obj: &Value) -> Vec<Value> {
    at(obj, &["status", "conditions"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// An RFC 3339 timestamp with seconds, as condition times are written.
pub fn rfc3339(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A timestamp field, if set and parseable.
pub fn time_at(obj: &Value, path: &[&str]) -> Option<jiff::Timestamp> {
    at(obj, path)
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
}

/// Pods first by namespace, then by creation time (oldest first), then by name.
pub fn by_creation(a: &Value, b: &Value) -> std::cmp::Ordering {
    let created = |o: &Value| str_at(o, &["metadata", "creationTimestamp"]).to_string();
    created(a)
        .cmp(&created(b))
        .then_with(|| name_of(a).cmp(name_of(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_selectors() {
        let labels = json!({"app": "web", "tier": "front"});
        let labels = labels.as_object();
        let cases = [
            (json!({"matchLabels": {"app": "web"}}), true),
            (json!({"matchLabels": {"app": "db"}}), false),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "x"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}),
                false,
            ),
            (json!({}), true),
        ];
        for (selector, expected) in cases {
            assert_eq!(selector_matches(&selector, labels), expected, "{selector}");
        }
    }

    #[test]
    fn conditions_keep_their_times_when_unchanged() {
        let mut conditions = Vec::new();
        set_condition(&mut conditions, "Available", "True", "R", "m", "t1", true);
        set_condition(&mut conditions, "Available", "True", "R", "m", "t2", true);
        assert_eq!(conditions[0]["lastUpdateTime"], "t1");
        set_condition(&mut conditions, "Available", "True", "R2", "m", "t3", true);
        assert_eq!(conditions[0]["lastTransitionTime"], "t1");
        assert_eq!(conditions[0]["lastUpdateTime"], "t3");
        set_condition(&mut conditions, "Available", "False", "R2", "m", "t4", true);
        assert_eq!(conditions[0]["lastTransitionTime"], "t4");
        assert_eq!(conditions.len(), 1);
    }
}
