//! Drift: where a member cluster's live copy of a propagated object no longer matches what
//! Karmada applies to it.
//!
//! What Karmada applies is the manifest inside the object's `Work` in `karmada-es-<cluster>`:
//! the resource template after the matching overrides, as the execution controller writes it
//! (karmada-io/karmada `pkg/controllers/execution/execution_controller.go`, `syncToClusters`).
//! [`field_drift`] compares that manifest with the live object field by field:
//!
//! - every field the manifest sets must hold the same value in the live object (quantities are
//!   compared by value, so `0.1` equals `100m`; named list entries such as containers, env
//!   variables, ports and volumes are matched by `name`, other lists by position; a named entry
//!   the member holds beyond the manifest's, such as an injected sidecar, is drift);
//! - fields the manifest does not set are the member's own (defaults, `status`, what its
//!   controllers write) and are ignored, unless the live object's `managedFields` show that a
//!   person's tool (kubectl, helm, a console, anything that is not a controller) set them: a
//!   label added with `kubectl label` is drift, a default filled in by the member's API server
//!   is not;
//! - `status`, and everything under `metadata` except `labels` and `annotations`, is never
//!   compared.

use std::collections::BTreeMap;
use std::fmt;

use kube_kit::quantity::Quantity;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One field where the live object differs from the applied manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldDrift {
    /// The field, as `spec.template.spec.containers[name=web].image` or
    /// `metadata.labels.team`.
    pub path: String,
    /// What Karmada applies there; absent when the field was added in the member.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied: Option<Value>,
    /// What the member holds there; absent when the member lost the field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<Value>,
}

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Field(String),
    Named(String),
    Index(usize),
}

/// A field path, printed as `a.b[name=x].c[0]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct FieldPath(Vec<Step>);

impl FieldPath {
    fn child(&self, step: Step) -> FieldPath {
        let mut steps = self.0.clone();
        steps.push(step);
        FieldPath(steps)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                Step::Field(name) if i == 0 => write!(f, "{name}")?,
                Step::Field(name) => write!(f, ".{name}")?,
                Step::Named(name) => write!(f, "[name={name}]")?,
                Step::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// The fields where `live` differs from `applied`, sorted by path.
pub fn field_drift(applied: &Value, live: &Value) -> Vec<FieldDrift> {
    let mut out = BTreeMap::new();
    let (Some(applied_map), Some(live_map)) = (applied.as_object(), live.as_object()) else {
        return vec![FieldDrift {
            path: String::new(),
            applied: Some(applied.clone()),
            live: Some(live.clone()),
        }];
    };
    for (key, applied_value) in applied_map {
        let path = FieldPath(vec![Step::Field(key.clone())]);
        match key.as_str() {
            "apiVersion" | "kind" | "status" => {}
            "metadata" => {
                for part in ["labels", "annotations"] {
                    let applied_part = applied_value.get(part);
                    let live_part = live_map.get("metadata").and_then(|m| m.get(part));
                    if let Some(applied_part) = applied_part {
                        compare(
                            &path.child(Step::Field(part.to_string())),
                            applied_part,
                            live_part,
                            &mut out,
                        );
                    }
                }
            }
            _ => compare(&path, applied_value, live_map.get(key), &mut out),
        }
    }
    for added in hand_set_fields(live) {
        if added.0.first() == Some(&Step::Field("status".into())) || !comparable(&added) {
            continue;
        }
        if lookup(applied, &added).is_none()
            && let Some(live_value) = lookup(live, &added)
        {
            out.entry(added).or_insert((None, Some(live_value.clone())));
        }
    }
    out.into_iter()
        .map(|(path, (applied, live))| FieldDrift {
            path: path.to_string(),
            applied,
            live,
        })
        .collect()
}

/// Whether a path is one drift looks at: anything outside `metadata`, and only labels and
/// annotations inside it.
fn comparable(path: &FieldPath) -> bool {
    match path.0.as_slice() {
        [Step::Field(first), rest @ ..] if first == "metadata" => matches!(
            rest.first(),
            Some(Step::Field(part)) if part == "labels" || part == "annotations"
        ),
        [Step::Field(first), ..] => first != "apiVersion" && first != "kind",
        _ => false,
    }
}

type Found = BTreeMap<FieldPath, (Option<Value>, Option<Value>)>;

fn compare(path: &FieldPath, applied: &Value, live: Option<&Value>, out: &mut Found) {
    let Some(live) = live else {
        out.insert(path.clone(), (Some(applied.clone()), None));
        return;
    };
    match (applied, live) {
        (Value::Object(applied_map), Value::Object(live_map)) => {
            for (key, value) in applied_map {
                compare(
                    &path.child(Step::Field(key.clone())),
                    value,
                    live_map.get(key),
                    out,
                );
            }
        }
        (Value::Array(applied_items), Value::Array(live_items)) => {
            compare_lists(path, applied, applied_items, live, live_items, out)
        }
        _ if same_scalar(applied, live) => {}
        _ => {
            out.insert(path.clone(), (Some(applied.clone()), Some(live.clone())));
        }
    }
}

fn compare_lists(
    path: &FieldPath,
    applied: &Value,
    applied_items: &[Value],
    live: &Value,
    live_items: &[Value],
    out: &mut Found,
) {
    if let (Some(applied_named), Some(live_named)) =
        (named_entries(applied_items), named_entries(live_items))
    {
        for (name, value) in &applied_named {
            compare(
                &path.child(Step::Named(name.clone())),
                value,
                live_named.get(name).copied(),
                out,
            );
        }
        for (name, value) in live_named {
            if !applied_named.contains_key(&name) {
                out.insert(path.child(Step::Named(name)), (None, Some(value.clone())));
            }
        }
        return;
    }
    if applied_items.len() != live_items.len() {
        out.insert(path.clone(), (Some(applied.clone()), Some(live.clone())));
        return;
    }
    for (index, (applied_item, live_item)) in applied_items.iter().zip(live_items).enumerate() {
        compare(
            &path.child(Step::Index(index)),
            applied_item,
            Some(live_item),
            out,
        );
    }
}

/// A list whose entries are all objects with a distinct string `name`, by name.
fn named_entries(items: &[Value]) -> Option<BTreeMap<String, &Value>> {
    if items.is_empty() {
        return None;
    }
    let mut named = BTreeMap::new();
    for item in items {
        let name = item.get("name")?.as_str()?;
        if named.insert(name.to_string(), item).is_some() {
            return None;
        }
    }
    Some(named)
}

/// Scalars equal as JSON, as numbers, or as Kubernetes quantities (`0.5` and `500m`, `1Gi`
/// and `1024Mi`): API servers print quantities in their canonical form, so the member may
/// hold another spelling of the value Karmada applied.
fn same_scalar(applied: &Value, live: &Value) -> bool {
    if applied == live {
        return true;
    }
    match (applied, live) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::String(b)) => quantity_equal(a, b),
        (Value::Number(a), Value::String(b)) | (Value::String(b), Value::Number(a)) => {
            quantity_equal(&a.to_string(), b)
        }
        _ => false,
    }
}

fn quantity_equal(a: &str, b: &str) -> bool {
    let starts_numeric = |s: &str| s.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    if !starts_numeric(a) || !starts_numeric(b) {
        return false;
    }
    match (Quantity::parse(a), Quantity::parse(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The value at `path`, if the object has one.
fn lookup<'a>(object: &'a Value, path: &FieldPath) -> Option<&'a Value> {
    let mut current = object;
    for step in &path.0 {
        current = match step {
            Step::Field(name) => current.as_object()?.get(name)?,
            Step::Index(index) => current.as_array()?.get(*index)?,
            Step::Named(name) => current
                .as_array()?
                .iter()
                .find(|item| item.get("name").and_then(Value::as_str) == Some(name))?,
        };
    }
    Some(current)
}

/// Whether a field manager is a controller (whose fields are the member's own) rather than a
/// person's tool. Controllers are named after what they run: `kube-controller-manager`,
/// `deployment-controller`, `karmada-controller-manager`, `kube-scheduler`, `kubelet`.
pub fn is_controller_manager(manager: &str) -> bool {
    manager.ends_with("-controller")
        || manager.ends_with("-controller-manager")
        || manager == "kube-scheduler"
        || manager == "kubelet"
        || manager.starts_with("karmada-")
}

/// Leaf fields set in `live` by a manager that is not a controller, from its `managedFields`
/// (`fieldsV1`: `f:<field>`, `k:<json key>` for a list entry, `i:<index>`, `.` for the node).
fn hand_set_fields(live: &Value) -> Vec<FieldPath> {
    let mut paths = Vec::new();
    let entries = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for entry in entries {
        let manager = entry
            .get("manager")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if is_controller_manager(manager) {
            continue;
        }
        if let Some(fields) = entry.get("fieldsV1").and_then(Value::as_object) {
            collect_leaves(&FieldPath::default(), fields, &mut paths);
        }
    }
    paths
}

fn collect_leaves(path: &FieldPath, fields: &Map<String, Value>, out: &mut Vec<FieldPath>) {
    let children: Vec<_> = fields
        .iter()
        .filter(|(key, _)| key.as_str() != ".")
        .collect();
    if children.is_empty() {
        if !path.0.is_empty() {
            out.push(path.clone());
        }
        return;
    }
    for (key, value) in children {
        let step = if let Some(field) = key.strip_prefix("f:") {
            Step::Field(field.to_string())
        } else if let Some(json_key) = key.strip_prefix("k:") {
            // Only entries keyed by name can be found again; others are compared as a whole.
            match serde_json::from_str::<Value>(json_key)
                .ok()
                .and_then(|k| k.get("name").and_then(Value::as_str).map(str::to_string))
            {
                Some(name) => Step::Named(name),
                None => {
                    out.push(path.clone());
                    continue;
                }
            }
        } else if let Some(index) = key.strip_prefix("i:").and_then(|i| i.parse().ok()) {
            Step::Index(index)
        } else {
            out.push(path.clone());
            continue;
        };
        match value.as_object() {
            Some(map) => collect_leaves(&path.child(step), map, out),
            None => out.push(path.child(step)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn applied() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "shop", "namespace": "demo",
                "labels": {"app": "shop", "karmada.io/managed": "true"},
                "annotations": {"work.karmada.io/name": "shop-84b68648dc"}
            },
            "spec": {
                "replicas": 3,
                "template": {"spec": {"containers": [{
                    "name": "web", "image": "nginx:1.27",
                    "resources": {"requests": {"cpu": "0.1", "memory": "64Mi"}},
                    "env": [{"name": "REGION", "value": "us"}]
                }]}}
            }
        })
    }

    /// The applied manifest as the member stores it: defaults filled in, quantities in
    /// canonical form, status and the member's own metadata added.
    fn live() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "shop", "namespace": "demo", "uid": "u1", "resourceVersion": "7",
                "generation": 2,
                "labels": {"app": "shop", "karmada.io/managed": "true"},
                "annotations": {
                    "work.karmada.io/name": "shop-84b68648dc",
                    "deployment.kubernetes.io/revision": "1"
                },
                "managedFields": [
                    {"manager": "karmada-controller-manager", "operation": "Update",
                     "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}},
                    {"manager": "deployment-controller", "operation": "Update",
                     "fieldsV1": {"f:metadata": {"f:annotations": {
                         "f:deployment.kubernetes.io/revision": {}}}}}
                ]
            },
            "spec": {
                "replicas": 3,
                "progressDeadlineSeconds": 600,
                "template": {"spec": {
                    "restartPolicy": "Always",
                    "containers": [{
                        "name": "web", "image": "nginx:1.27",
                        "imagePullPolicy": "IfNotPresent",
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                        "env": [{"name": "REGION", "value": "us"}]
                    }]
                }}
            },
            "status": {"replicas": 3, "readyReplicas": 3}
        })
    }

    fn edit(mut object: Value, pointer: &str, value: Option<Value>) -> Value {
        let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
        let Some(parent) = object.pointer_mut(parent) else {
            return object;
        };
        match (parent, value) {
            (Value::Object(map), Some(value)) => {
                map.insert(key.to_string(), value);
            }
            (Value::Object(map), None) => {
                map.remove(key);
            }
            (Value::Array(items), Some(value)) => {
                if let Ok(index) = key.parse::<usize>() {
                    items[index] = value;
                }
            }
            (Value::Array(items), None) => {
                if let Ok(index) = key.parse::<usize>() {
                    items.remove(index);
                }
            }
            _ => {}
        }
        object
    }

    fn by_hand(mut object: Value, manager: &str, fields: Value) -> Value {
        if let Some(Value::Array(entries)) = object.pointer_mut("/metadata/managedFields") {
            entries.push(json!({"manager": manager, "operation": "Update", "fieldsV1": fields}));
        }
        object
    }

    #[test]
    fn drift_table() {
        let cases: Vec<(&str, Value, Vec<&str>)> = vec![
            (
                "defaults, status and canonical quantities are not drift",
                live(),
                vec![],
            ),
            (
                "an image changed by hand",
                edit(
                    live(),
                    "/spec/template/spec/containers/0/image",
                    Some(json!("nginx:1.28")),
                ),
                vec!["spec.template.spec.containers[name=web].image"],
            ),
            (
                "replicas scaled in the member",
                edit(live(), "/spec/replicas", Some(json!(5))),
                vec!["spec.replicas"],
            ),
            (
                "a label Karmada applies removed",
                edit(live(), "/metadata/labels/app", None),
                vec!["metadata.labels.app"],
            ),
            (
                "an env variable removed",
                edit(
                    live(),
                    "/spec/template/spec/containers/0/env",
                    Some(json!([])),
                ),
                vec!["spec.template.spec.containers[name=web].env"],
            ),
            (
                "an env variable added by hand",
                edit(
                    live(),
                    "/spec/template/spec/containers/0/env",
                    Some(
                        json!([{"name": "REGION", "value": "us"}, {"name": "DEBUG", "value": "1"}]),
                    ),
                ),
                vec!["spec.template.spec.containers[name=web].env[name=DEBUG]"],
            ),
            (
                "a CPU request changed to another value",
                edit(
                    live(),
                    "/spec/template/spec/containers/0/resources/requests/cpu",
                    Some(json!("200m")),
                ),
                vec!["spec.template.spec.containers[name=web].resources.requests.cpu"],
            ),
            (
                "a label added with kubectl label",
                by_hand(
                    edit(live(), "/metadata/labels/debug", Some(json!("true"))),
                    "kubectl-label",
                    json!({"f:metadata": {"f:labels": {"f:debug": {}}}}),
                ),
                vec!["metadata.labels.debug"],
            ),
            (
                "a field set by kubectl edit that Karmada does not apply",
                by_hand(
                    edit(live(), "/spec/paused", Some(json!(true))),
                    "kubectl-edit",
                    json!({"f:spec": {"f:paused": {}}}),
                ),
                vec!["spec.paused"],
            ),
            (
                "status written by hand is still the member's",
                by_hand(
                    live(),
                    "kubectl-edit",
                    json!({"f:status": {"f:readyReplicas": {}}}),
                ),
                vec![],
            ),
            (
                "an annotation from the member's controllers is not drift",
                live(),
                vec![],
            ),
        ];
        for (name, live, expected) in cases {
            let paths: Vec<String> = field_drift(&applied(), &live)
                .into_iter()
                .map(|d| d.path)
                .collect();
            assert_eq!(paths, expected, "{name}");
        }
    }

    #[test]
    fn drift_carries_both_values() {
        let live = edit(live(), "/spec/replicas", Some(json!(5)));
        assert_eq!(
            field_drift(&applied(), &live),
            vec![FieldDrift {
                path: "spec.replicas".into(),
                applied: Some(json!(3)),
                live: Some(json!(5)),
            }]
        );
        let lost = edit(super::tests::live(), "/metadata/labels/app", None);
        assert_eq!(
            field_drift(&applied(), &lost),
            vec![FieldDrift {
                path: "metadata.labels.app".into(),
                applied: Some(json!("shop")),
                live: None,
            }]
        );
    }

    #[test]
    fn controller_managers() {
        for (manager, controller) in [
            ("kube-controller-manager", true),
            ("deployment-controller", true),
            ("karmada-controller-manager", true),
            ("kube-scheduler", true),
            ("kubelet", true),
            ("kubectl-edit", false),
            ("kubectl-client-side-apply", false),
            ("helm", false),
            ("kairship-console", false),
        ] {
            assert_eq!(is_controller_manager(manager), controller, "{manager}");
        }
    }

    #[test]
    fn quantities_compare_by_value() {
        for (a, b, equal) in [
            ("0.1", "100m", true),
            ("1Gi", "1024Mi", true),
            ("1", "1000m", true),
            ("1", "2", false),
            ("nginx", "nginx:1", false),
        ] {
            assert_eq!(same_scalar(&json!(a), &json!(b)), equal, "{a} {b}");
        }
        assert!(same_scalar(&json!(1), &json!("1")));
    }
}
