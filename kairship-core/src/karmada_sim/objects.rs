//! What the propagation controllers share: Karmada's resource types, the label and annotation
//! names they write (karmada-io/karmada `pkg/apis/work/v1alpha2/binding_types_helper.go`,
//! `well_known_constants.go`, `pkg/apis/policy/v1alpha1/well_known_constants.go`,
//! `pkg/util/constants.go`), the names they derive (`pkg/util/names/names.go`), and a small
//! JSON toolbox.

use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Map, Value};

/// Label on templates, bindings and member objects: the PropagationPolicy's permanent id.
pub const PP_PERMANENT_ID: &str = "propagationpolicy.karmada.io/permanent-id";
/// Label on cluster-scoped templates: the ClusterPropagationPolicy's permanent id.
pub const CPP_PERMANENT_ID: &str = "clusterpropagationpolicy.karmada.io/permanent-id";
/// Annotations naming the PropagationPolicy that claimed a template.
pub const PP_NAME: &str = "propagationpolicy.karmada.io/name";
/// See [`PP_NAME`].
pub const PP_NAMESPACE: &str = "propagationpolicy.karmada.io/namespace";
/// Annotation naming the ClusterPropagationPolicy that claimed a template.
pub const CPP_NAME: &str = "clusterpropagationpolicy.karmada.io/name";
/// Label: the ResourceBinding's permanent id (on the binding, its Works and member objects).
pub const RB_PERMANENT_ID: &str = "resourcebinding.karmada.io/permanent-id";
/// Label: the ClusterResourceBinding's permanent id.
pub const CRB_PERMANENT_ID: &str = "clusterresourcebinding.karmada.io/permanent-id";
/// Annotations naming the binding on Works and member objects.
pub const RB_NAME: &str = "resourcebinding.karmada.io/name";
/// See [`RB_NAME`].
pub const RB_NAMESPACE: &str = "resourcebinding.karmada.io/namespace";
/// Annotation naming the ClusterResourceBinding on Works and member objects.
pub const CRB_NAME: &str = "clusterresourcebinding.karmada.io/name";
/// Label: the Work's permanent id (on the Work and what it applied).
pub const WORK_PERMANENT_ID: &str = "work.karmada.io/permanent-id";
/// Annotations naming the Work on what it applied.
pub const WORK_NAME: &str = "work.karmada.io/name";
/// See [`WORK_NAME`].
pub const WORK_NAMESPACE: &str = "work.karmada.io/namespace";
/// Annotation: `abort` or `overwrite` when the member already holds the object.
pub const CONFLICT_RESOLUTION: &str = "work.karmada.io/conflict-resolution";
/// Label on everything Karmada applied to a member.
pub const MANAGED: &str = "karmada.io/managed";
/// Annotation: the template's uid.
pub const TEMPLATE_UID: &str = "resourcetemplate.karmada.io/uid";
/// Annotation: the template's generation the manifest was made from.
pub const TEMPLATE_GENERATION: &str = "resourcetemplate.karmada.io/generation";
/// Annotation listing the annotations Karmada manages on the member object.
pub const MANAGED_ANNOTATIONS: &str = "resourcetemplate.karmada.io/managed-annotations";
/// Annotation listing the labels Karmada manages on the member object.
pub const MANAGED_LABELS: &str = "resourcetemplate.karmada.io/managed-labels";
/// Annotation on a binding: the placement it was last scheduled with.
pub const APPLIED_PLACEMENT: &str = "policy.karmada.io/applied-placement";
/// Annotation on a Work: the OverridePolicies applied to its manifest.
pub const APPLIED_OVERRIDES: &str = "policy.karmada.io/applied-overrides";
/// Annotation on a Work: the ClusterOverridePolicies applied to its manifest.
pub const APPLIED_CLUSTER_OVERRIDES: &str = "policy.karmada.io/applied-cluster-overrides";
/// The binding controller's finalizer on bindings.
pub const BINDING_FINALIZER: &str = "karmada.io/binding-controller";
/// The cluster-scoped binding controller's finalizer.
pub const CLUSTER_BINDING_FINALIZER: &str = "karmada.io/cluster-resource-binding-controller";
/// The policy controller's finalizer on PropagationPolicies.
pub const PP_FINALIZER: &str = "karmada.io/propagation-policy-controller";
/// The policy controller's finalizer on ClusterPropagationPolicies.
pub const CPP_FINALIZER: &str = "karmada.io/cluster-propagation-policy-controller";

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// `policy.karmada.io/v1alpha1` PropagationPolicy.
pub fn propagation_policies() -> ApiResource {
    resource(
        "policy.karmada.io",
        "v1alpha1",
        "PropagationPolicy",
        "propagationpolicies",
    )
}
/// `policy.karmada.io/v1alpha1` ClusterPropagationPolicy.
pub fn cluster_propagation_policies() -> ApiResource {
    resource(
        "policy.karmada.io",
        "v1alpha1",
        "ClusterPropagationPolicy",
        "clusterpropagationpolicies",
    )
}
/// `policy.karmada.io/v1alpha1` OverridePolicy.
pub fn override_policies() -> ApiResource {
    resource(
        "policy.karmada.io",
        "v1alpha1",
        "OverridePolicy",
        "overridepolicies",
    )
}
/// `policy.karmada.io/v1alpha1` ClusterOverridePolicy.
pub fn cluster_override_policies() -> ApiResource {
    resource(
        "policy.karmada.io",
        "v1alpha1",
        "ClusterOverridePolicy",
        "clusteroverridepolicies",
    )
}
/// `work.karmada.io/v1alpha2` ResourceBinding.
pub fn resource_bindings() -> ApiResource {
    resource(
        "work.karmada.io",
        "v1alpha2",
        "ResourceBinding",
        "resourcebindings",
    )
}
/// `work.karmada.io/v1alpha2` ClusterResourceBinding.
pub fn cluster_resource_bindings() -> ApiResource {
    resource(
        "work.karmada.io",
        "v1alpha2",
        "ClusterResourceBinding",
        "clusterresourcebindings",
    )
}
/// `work.karmada.io/v1alpha1` Work.
pub fn works() -> ApiResource {
    resource("work.karmada.io", "v1alpha1", "Work", "works")
}
/// Core Namespaces.
pub fn namespaces() -> ApiResource {
    resource("", "v1", "Namespace", "namespaces")
}
/// Core Events.
pub fn events() -> ApiResource {
    resource("", "v1", "Event", "events")
}

/// A resource template kind the emulation propagates, with its plural and scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateKind {
    /// `group/version` or `version`.
    pub api_version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Plural resource name.
    pub plural: &'static str,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

impl TemplateKind {
    /// Its [`ApiResource`].
    pub fn resource(&self) -> ApiResource {
        let (group, version) = self
            .api_version
            .split_once('/')
            .unwrap_or(("", self.api_version));
        resource(group, version, self.kind, self.plural)
    }
}

/// The kinds the resource detector watches (the native kinds Karmada's default interpreter
/// knows, `pkg/resourceinterpreter/default/native/default.go`).
pub const TEMPLATE_KINDS: &[TemplateKind] = &[
    TemplateKind {
        api_version: "apps/v1",
        kind: "Deployment",
        plural: "deployments",
        namespaced: true,
    },
    TemplateKind {
        api_version: "apps/v1",
        kind: "StatefulSet",
        plural: "statefulsets",
        namespaced: true,
    },
    TemplateKind {
        api_version: "apps/v1",
        kind: "DaemonSet",
        plural: "daemonsets",
        namespaced: true,
    },
    TemplateKind {
        api_version: "batch/v1",
        kind: "Job",
        plural: "jobs",
        namespaced: true,
    },
    TemplateKind {
        api_version: "v1",
        kind: "Service",
        plural: "services",
        namespaced: true,
    },
    TemplateKind {
        api_version: "v1",
        kind: "Pod",
        plural: "pods",
        namespaced: true,
    },
    TemplateKind {
        api_version: "v1",
        kind: "ConfigMap",
        plural: "configmaps",
        namespaced: true,
    },
    TemplateKind {
        api_version: "v1",
        kind: "Secret",
        plural: "secrets",
        namespaced: true,
    },
    TemplateKind {
        api_version: "v1",
        kind: "ServiceAccount",
        plural: "serviceaccounts",
        namespaced: true,
    },
    TemplateKind {
        api_version: "v1",
        kind: "PersistentVolumeClaim",
        plural: "persistentvolumeclaims",
        namespaced: true,
    },
    TemplateKind {
        api_version: "networking.k8s.io/v1",
        kind: "Ingress",
        plural: "ingresses",
        namespaced: true,
    },
    TemplateKind {
        api_version: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        plural: "clusterroles",
        namespaced: false,
    },
    TemplateKind {
        api_version: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        plural: "clusterrolebindings",
        namespaced: false,
    },
];

/// The kind of `api_version`/`kind` among [`TEMPLATE_KINDS`].
pub fn template_kind(api_version: &str, kind: &str) -> Option<&'static TemplateKind> {
    TEMPLATE_KINDS
        .iter()
        .find(|k| k.api_version == api_version && k.kind == kind)
}

/// `names.GenerateBindingName`: `<name>-<kind>` lower-cased, `:` made `.`.
pub fn binding_name(kind: &str, name: &str) -> String {
    format!("{}-{}", name.replace(':', "."), kind).to_lowercase()
}

/// `names.GenerateBasicWorkName`: the name and a hash of namespace, name and kind.
pub fn work_name(kind: &str, name: &str, namespace: &str) -> String {
    let name = name.replace(':', ".").to_lowercase();
    let hashed = if namespace.is_empty() {
        format!("{name}-{kind}")
    } else {
        format!("{namespace}-{name}-{kind}")
    }
    .to_lowercase();
    // `hashutil.DeepHashObject` of a string writes the string itself.
    format!(
        "{name}-{}",
        safe_encode(&fnv32a(hashed.as_bytes()).to_string())
    )
}

fn fnv32a(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for b in bytes {
        hash ^= u32::from(*b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// `rand.SafeEncodeString` (k8s.io/apimachinery/pkg/util/rand).
fn safe_encode(s: &str) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

/// A new permanent id (a UUID, as Karmada's webhook assigns).
pub fn permanent_id() -> String {
    kube_sandbox::apiserver::meta::new_uid()
}

/// The object as JSON.
pub fn json_of(object: &DynamicObject) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// The string at `pointer`, or "".
pub fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A label of `value`.
pub fn label<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.pointer("/metadata/labels")?.get(key)?.as_str()
}

/// An annotation of `value`.
pub fn annotation<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.pointer("/metadata/annotations")?.get(key)?.as_str()
}

/// The map at `/metadata/<field>` of `value`, created when missing.
pub fn meta_map<'a>(value: &'a mut Value, field: &str) -> &'a mut Map<String, Value> {
    if !value["metadata"][field].is_object() {
        value["metadata"][field] = Value::Object(Map::new());
    }
    match value["metadata"][field].as_object_mut() {
        Some(map) => map,
        None => unreachable!("just made an object"),
    }
}

/// RFC 3339 time now, to the second, as Kubernetes writes condition times.
pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A condition list with `condition` set: the transition time kept when the status did not
/// change (`meta.SetStatusCondition`).
pub fn set_condition(conditions: &Value, condition: Value) -> Value {
    let mut list: Vec<Value> = conditions.as_array().cloned().unwrap_or_default();
    let kind = condition["type"].clone();
    match list.iter_mut().find(|c| c["type"] == kind) {
        Some(existing) => {
            let mut next = condition;
            if existing["status"] == next["status"] {
                next["lastTransitionTime"] = existing["lastTransitionTime"].clone();
            }
            *existing = next;
        }
        None => list.push(condition),
    }
    Value::Array(list)
}

/// Applies a JSON merge patch (RFC 7386) to `target`.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    for (k, v) in fields {
        if v.is_null() {
            if let Some(o) = target.as_object_mut() {
                o.remove(k);
            }
        } else {
            merge_patch(&mut target[k], v);
        }
    }
}

/// Whether every field of `want` is in `have` with the same value (objects compared
/// field by field, anything else as a whole): what the member added does not count.
pub fn contains(have: &Value, want: &Value) -> bool {
    match (have, want) {
        (Value::Object(h), Value::Object(w)) => w.iter().all(|(k, v)| {
            h.get(k).is_some_and(|hv| contains(hv, v)) || (v.is_null() && !h.contains_key(k))
        }),
        (Value::Array(h), Value::Array(w)) => {
            h.len() == w.len() && h.iter().zip(w).all(|(a, b)| contains(a, b))
        }
        _ => have == want,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_karmadas() {
        // The recorded Works (kairship-core/tests/data/karmada-v1.19/works-karmada-es-msb.json).
        assert_eq!(work_name("Deployment", "shop", "demo"), "shop-84b68648dc");
        assert_eq!(work_name("Service", "shop", "demo"), "shop-695554fb95");
        assert_eq!(work_name("Namespace", "demo", ""), "demo-6654f4c4f6");
        assert_eq!(
            work_name("ClusterRole", "karmada-impersonator", ""),
            "karmada-impersonator-7cbb6bd5c9"
        );
        assert_eq!(binding_name("Deployment", "shop"), "shop-deployment");
        assert_eq!(
            binding_name("ClusterRole", "system:x"),
            "system.x-clusterrole"
        );
    }

    #[test]
    fn conditions_keep_their_transition_time() {
        let old = json!([{"type": "A", "status": "True", "lastTransitionTime": "t0"}]);
        let same = set_condition(
            &old,
            json!({"type": "A", "status": "True", "lastTransitionTime": "t1"}),
        );
        assert_eq!(same[0]["lastTransitionTime"], "t0");
        let flipped = set_condition(
            &old,
            json!({"type": "A", "status": "False", "lastTransitionTime": "t1"}),
        );
        assert_eq!(flipped[0]["lastTransitionTime"], "t1");
        assert_eq!(
            set_condition(&old, json!({"type": "B"}))
                .as_array()
                .map(Vec::len),
            Some(2)
        );
    }

    #[test]
    fn containment_ignores_what_the_member_added() {
        let have =
            json!({"spec": {"replicas": 3, "clusterIP": "10.0.0.1"}, "metadata": {"uid": "u"}});
        assert!(contains(&have, &json!({"spec": {"replicas": 3}})));
        assert!(!contains(&have, &json!({"spec": {"replicas": 2}})));
        assert!(contains(&json!({"a": [1, 2]}), &json!({"a": [1, 2]})));
        assert!(!contains(&json!({"a": [1]}), &json!({"a": [1, 2]})));
    }
}
