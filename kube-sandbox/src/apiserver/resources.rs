//! The resource types a sandbox cluster serves: the built-in ones and those added by CRDs.

use serde_json::Value;
use std::sync::Arc;

/// Identity of a served resource: API group (empty for core) and plural name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupResource {
    /// API group, empty for the core group.
    pub group: String,
    /// Plural resource name, e.g. `pods`.
    pub resource: String,
}

impl GroupResource {
    /// Builds a group-resource pair.
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }

    /// `resource.group` as kube-apiserver names it in messages (`pods`, `deployments.apps`).
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

/// Everything the server needs to know about one resource type.
#[derive(Clone, Debug)]
pub struct ResourceType {
    /// Group, empty for core.
    pub group: String,
    /// Versions served; the first one is the storage and preferred version.
    pub versions: Vec<String>,
    /// Plural name (`pods`).
    pub plural: String,
    /// Singular name (`pod`).
    pub singular: String,
    /// Kind (`Pod`).
    pub kind: String,
    /// Kind of the list (`PodList`).
    pub list_kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names for discovery (`po`).
    pub short_names: Vec<String>,
    /// Categories for discovery (`all`).
    pub categories: Vec<String>,
    /// Verbs advertised in discovery.
    pub verbs: Vec<&'static str>,
    /// Subresources served (`status`, `log`, `binding`, ...).
    pub subresources: Vec<&'static str>,
    /// Whether `metadata.generation` is maintained.
    pub has_generation: bool,
    /// For custom resources: the CRD's per-version schema, printer columns etc.
    pub custom: Option<Arc<CustomInfo>>,
}

/// What a CustomResourceDefinition adds to a resource type.
#[derive(Clone, Debug)]
pub struct CustomInfo {
    /// Name of the CRD (`plural.group`).
    pub crd_name: String,
    /// `openAPIV3Schema` per served version.
    pub schemas: Vec<(String, Value)>,
    /// `additionalPrinterColumns` of the storage version.
    pub printer_columns: Value,
}

impl ResourceType {
    /// The key under which objects of this type are stored.
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.plural)
    }

    /// `group/version` for the given version (`v1` for core).
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{}", self.group, version)
        }
    }

    /// `plural.group` as kube-apiserver names the resource in messages.
    pub fn qualified_plural(&self) -> String {
        self.group_resource().qualified()
    }

    /// The preferred (storage) version.
    pub fn storage_version(&self) -> &str {
        self.versions.first().map(String::as_str).unwrap_or("v1")
    }

    /// Whether `status` is a separate subresource.
    pub fn has_status(&self) -> bool {
        self.subresources.contains(&"status")
    }

    /// The openAPIV3 schema for a version, if this is a custom resource with one.
    pub fn schema(&self, version: &str) -> Option<&Value> {
        self.custom.as_ref().and_then(|c| {
            c.schemas
                .iter()
                .find(|(v, _)| v == version)
                .map(|(_, schema)| schema)
        })
    }
}

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

struct Builtin {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    subresources: &'static [&'static str],
    has_generation: bool,
    verbs: &'static [&'static str],
}

const fn b(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    subresources: &'static [&'static str],
) -> Builtin {
    Builtin {
        group,
        version,
        plural,
        kind,
        namespaced,
        short_names,
        subresources,
        has_generation: false,
        verbs: ALL_VERBS,
    }
}

const fn with_generation(mut builtin: Builtin) -> Builtin {
    builtin.has_generation = true;
    builtin
}

/// Namespaces cannot be deleted as a collection (kube-apiserver lists no `deletecollection`).
const fn without_deletecollection(mut builtin: Builtin) -> Builtin {
    builtin.verbs = &[
        "create", "delete", "get", "list", "patch", "update", "watch",
    ];
    builtin
}

const fn create_only(mut builtin: Builtin) -> Builtin {
    builtin.verbs = &["create"];
    builtin
}

/// Read-only resources the server computes (`componentstatuses`).
const fn read_only(mut builtin: Builtin) -> Builtin {
    builtin.verbs = &["get", "list"];
    builtin
}

const BUILTINS: &[Builtin] = &[
    without_deletecollection(b(
        "",
        "v1",
        "namespaces",
        "Namespace",
        false,
        &["ns"],
        &["status", "finalize"],
    )),
    b(
        "",
        "v1",
        "nodes",
        "Node",
        false,
        &["no"],
        &["status", "proxy"],
    ),
    with_generation(b(
        "",
        "v1",
        "pods",
        "Pod",
        true,
        &["po"],
        &[
            "status",
            "log",
            "binding",
            "eviction",
            "exec",
            "attach",
            "portforward",
            "proxy",
            "ephemeralcontainers",
            "resize",
        ],
    )),
    b("", "v1", "configmaps", "ConfigMap", true, &["cm"], &[]),
    b("", "v1", "secrets", "Secret", true, &[], &[]),
    b(
        "",
        "v1",
        "services",
        "Service",
        true,
        &["svc"],
        &["status", "proxy"],
    ),
    b("", "v1", "endpoints", "Endpoints", true, &["ep"], &[]),
    b(
        "",
        "v1",
        "serviceaccounts",
        "ServiceAccount",
        true,
        &["sa"],
        &["token"],
    ),
    b(
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        false,
        &["pv"],
        &["status"],
    ),
    b(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
        &["pvc"],
        &["status"],
    ),
    b("", "v1", "events", "Event", true, &["ev"], &[]),
    b(
        "",
        "v1",
        "resourcequotas",
        "ResourceQuota",
        true,
        &["quota"],
        &["status"],
    ),
    b(
        "",
        "v1",
        "limitranges",
        "LimitRange",
        true,
        &["limits"],
        &[],
    ),
    create_only(b("", "v1", "bindings", "Binding", true, &[], &[])),
    read_only(b(
        "",
        "v1",
        "componentstatuses",
        "ComponentStatus",
        false,
        &["cs"],
        &[],
    )),
    b("", "v1", "podtemplates", "PodTemplate", true, &[], &[]),
    with_generation(b(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        true,
        &["rc"],
        &["status", "scale"],
    )),
    b(
        "apiregistration.k8s.io",
        "v1",
        "apiservices",
        "APIService",
        false,
        &[],
        &["status"],
    ),
    b(
        "apps",
        "v1",
        "controllerrevisions",
        "ControllerRevision",
        true,
        &[],
        &[],
    ),
    create_only(b(
        "authentication.k8s.io",
        "v1",
        "selfsubjectreviews",
        "SelfSubjectReview",
        false,
        &[],
        &[],
    )),
    create_only(b(
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        false,
        &[],
        &[],
    )),
    // Stored as autoscaling/v2 and served as v1 too (`conversion`).
    with_generation(b(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        true,
        &["hpa"],
        &["status"],
    )),
    b(
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "IngressClass",
        false,
        &[],
        &[],
    ),
    with_generation(b(
        "networking.k8s.io",
        "v1",
        "ingresses",
        "Ingress",
        true,
        &["ing"],
        &["status"],
    )),
    b(
        "networking.k8s.io",
        "v1",
        "ipaddresses",
        "IPAddress",
        false,
        &["ip"],
        &[],
    ),
    with_generation(b(
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        true,
        &["netpol"],
        &[],
    )),
    b(
        "networking.k8s.io",
        "v1",
        "servicecidrs",
        "ServiceCIDR",
        false,
        &[],
        &["status"],
    ),
    with_generation(b(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
        &["pdb"],
        &["status"],
    )),
    b(
        "storage.k8s.io",
        "v1",
        "csidrivers",
        "CSIDriver",
        false,
        &[],
        &[],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "csistoragecapacities",
        "CSIStorageCapacity",
        true,
        &[],
        &[],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "volumeattachments",
        "VolumeAttachment",
        false,
        &[],
        &["status"],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "volumeattributesclasses",
        "VolumeAttributesClass",
        false,
        &["vac"],
        &[],
    ),
    // Stored and served; the sandbox calls no webhook and evaluates no admission policy.
    with_generation(b(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingadmissionpolicies",
        "MutatingAdmissionPolicy",
        false,
        &[],
        &[],
    )),
    with_generation(b(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingadmissionpolicybindings",
        "MutatingAdmissionPolicyBinding",
        false,
        &[],
        &[],
    )),
    with_generation(b(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        false,
        &[],
        &[],
    )),
    with_generation(b(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        false,
        &[],
        &["status"],
    )),
    with_generation(b(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        false,
        &[],
        &[],
    )),
    with_generation(b(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        false,
        &[],
        &[],
    )),
    b(
        "node.k8s.io",
        "v1",
        "runtimeclasses",
        "RuntimeClass",
        false,
        &[],
        &[],
    ),
    // Stored and served; the simulated scheduler allocates no devices.
    b(
        "resource.k8s.io",
        "v1",
        "deviceclasses",
        "DeviceClass",
        false,
        &[],
        &[],
    ),
    b(
        "resource.k8s.io",
        "v1",
        "resourceclaims",
        "ResourceClaim",
        true,
        &[],
        &["status"],
    ),
    b(
        "resource.k8s.io",
        "v1",
        "resourceclaimtemplates",
        "ResourceClaimTemplate",
        true,
        &[],
        &[],
    ),
    b(
        "resource.k8s.io",
        "v1",
        "resourceslices",
        "ResourceSlice",
        false,
        &[],
        &[],
    ),
    // Stored and served; the sandbox does not limit request rates by them.
    with_generation(b(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "flowschemas",
        "FlowSchema",
        false,
        &[],
        &["status"],
    )),
    with_generation(b(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "prioritylevelconfigurations",
        "PriorityLevelConfiguration",
        false,
        &[],
        &["status"],
    )),
    b("events.k8s.io", "v1", "events", "Event", true, &["ev"], &[]),
    b(
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "EndpointSlice",
        true,
        &[],
        &[],
    ),
    b(
        "coordination.k8s.io",
        "v1",
        "leases",
        "Lease",
        true,
        &[],
        &[],
    ),
    with_generation(b(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        true,
        &["deploy"],
        &["status", "scale"],
    )),
    with_generation(b(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        true,
        &["rs"],
        &["status", "scale"],
    )),
    with_generation(b(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        true,
        &["sts"],
        &["status", "scale"],
    )),
    with_generation(b(
        "apps",
        "v1",
        "daemonsets",
        "DaemonSet",
        true,
        &["ds"],
        &["status"],
    )),
    with_generation(b("batch", "v1", "jobs", "Job", true, &[], &["status"])),
    with_generation(b(
        "batch",
        "v1",
        "cronjobs",
        "CronJob",
        true,
        &["cj"],
        &["status"],
    )),
    b(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "PriorityClass",
        false,
        &["pc"],
        &[],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "csinodes",
        "CSINode",
        false,
        &[],
        &[],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        false,
        &["sc"],
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "Role",
        true,
        &[],
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
        &[],
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
        &[],
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
        &[],
        &[],
    ),
    b(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        false,
        &["csr"],
        &["approval", "status"],
    ),
    with_generation(b(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
        &["status"],
    )),
    create_only(b(
        "authentication.k8s.io",
        "v1",
        "tokenreviews",
        "TokenReview",
        false,
        &[],
        &[],
    )),
    create_only(b(
        "authorization.k8s.io",
        "v1",
        "subjectaccessreviews",
        "SubjectAccessReview",
        false,
        &[],
        &[],
    )),
    create_only(b(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        false,
        &[],
        &[],
    )),
    create_only(b(
        "authorization.k8s.io",
        "v1",
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
        true,
        &[],
        &[],
    )),
];

/// The resource types every sandbox cluster serves from the start.
pub fn builtin_types() -> Vec<ResourceType> {
    BUILTINS
        .iter()
        .map(|builtin| ResourceType {
            group: builtin.group.to_string(),
            versions: match (builtin.group, builtin.plural) {
                ("autoscaling", "horizontalpodautoscalers") => vec!["v2".into(), "v1".into()],
                _ => vec![builtin.version.to_string()],
            },
            plural: builtin.plural.to_string(),
            singular: builtin.kind.to_ascii_lowercase(),
            kind: builtin.kind.to_string(),
            list_kind: format!("{}List", builtin.kind),
            namespaced: builtin.namespaced,
            short_names: builtin.short_names.iter().map(|s| s.to_string()).collect(),
            categories: match (builtin.group, builtin.plural) {
                (
                    _,
                    "pods"
                    | "services"
                    | "deployments"
                    | "replicasets"
                    | "statefulsets"
                    | "daemonsets"
                    | "jobs"
                    | "cronjobs"
                    | "replicationcontrollers"
                    | "horizontalpodautoscalers",
                ) => vec!["all".to_string()],
                (
                    "apiextensions.k8s.io"
                    | "apiregistration.k8s.io"
                    | "admissionregistration.k8s.io",
                    _,
                ) => {
                    vec!["api-extensions".to_string()]
                }
                _ => Vec::new(),
            },
            verbs: builtin.verbs.to_vec(),
            subresources: builtin.subresources.to_vec(),
            has_generation: builtin.has_generation,
            custom: None,
        })
        .collect()
}

/// The group metrics-server serves through its APIService.
pub const METRICS_GROUP: &str = "metrics.k8s.io";

/// `metrics.k8s.io/v1beta1` as metrics-server installs it (kubernetes-sigs/metrics-server
/// `pkg/api/install.go`, `Build`; `pkg/api/node.go` and `pod.go`: `get` and `list` only, no
/// singular name, nodes cluster-wide and pods namespaced). Served while the sandbox's
/// metrics-server model runs ([`crate::ClusterOptions::metrics_server`]).
pub fn metrics_types() -> Vec<ResourceType> {
    [
        ("nodes", "NodeMetrics", false),
        ("pods", "PodMetrics", true),
    ]
    .into_iter()
    .map(|(plural, kind, namespaced)| ResourceType {
        group: METRICS_GROUP.to_string(),
        versions: vec!["v1beta1".to_string()],
        plural: plural.to_string(),
        singular: String::new(),
        kind: kind.to_string(),
        list_kind: format!("{kind}List"),
        namespaced,
        short_names: Vec::new(),
        categories: Vec::new(),
        verbs: vec!["get", "list"],
        subresources: Vec::new(),
        has_generation: false,
        custom: None,
    })
    .collect()
}

/// Builds the resource type a CRD object describes, or explains why it cannot be served.
pub fn type_from_crd(crd: &Value) -> Result<ResourceType, String> {
    let spec = crd.get("spec").ok_or("spec: Required value")?;
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let group = text(spec, "group").ok_or("spec.group: Required value")?;
    let names = spec.get("names").ok_or("spec.names: Required value")?;
    let plural = text(names, "plural").ok_or("spec.names.plural: Required value")?;
    let kind = text(names, "kind").ok_or("spec.names.kind: Required value")?;
    let singular = text(names, "singular").unwrap_or_else(|| kind.to_ascii_lowercase());
    let list_kind = text(names, "listKind").unwrap_or_else(|| format!("{kind}List"));
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let scope = text(spec, "scope").ok_or("spec.scope: Required value")?;
    let namespaced = match scope.as_str() {
        "Namespaced" => true,
        "Cluster" => false,
        other => {
            return Err(format!(
                "spec.scope: Unsupported value: \"{other}\": supported values: \"Cluster\", \"Namespaced\""
            ));
        }
    };
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .filter(|v| !v.is_empty())
        .ok_or("spec.versions: Invalid value: null: must have exactly one version marked as storage version")?;
    let mut served = Vec::new();
    let mut schemas = Vec::new();
    let mut storage = None;
    let mut has_status = false;
    let mut has_scale = false;
    let mut printer_columns = Value::Array(Vec::new());
    for version in versions {
        let name = text(version, "name").ok_or("spec.versions[].name: Required value")?;
        let is_storage = version
            .get("storage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if version
            .get("served")
            .and_then(Value::as_bool)
            .unwrap_or(false)
        {
            served.push(name.clone());
        }
        if let Some(schema) = version.pointer("/schema/openAPIV3Schema") {
            schemas.push((name.clone(), schema.clone()));
        }
        if is_storage {
            if storage.is_some() {
                return Err("spec.versions: Invalid value: must have exactly one version marked as storage version".into());
            }
            storage = Some(name.clone());
            has_status = version.pointer("/subresources/status").is_some();
            has_scale = version.pointer("/subresources/scale").is_some();
            if let Some(cols) = version.get("additionalPrinterColumns") {
                printer_columns = cols.clone();
            }
        }
    }
    let storage = storage.ok_or(
        "spec.versions: Invalid value: must have exactly one version marked as storage version",
    )?;
    // The storage version is preferred, so it comes first.
    served.sort_by_key(|v| *v != storage);
    let mut subresources = Vec::new();
    if has_status {
        subresources.push("status");
    }
    if has_scale {
        subresources.push("scale");
    }
    Ok(ResourceType {
        group: group.clone(),
        versions: served,
        plural: plural.clone(),
        singular,
        kind,
        list_kind,
        namespaced,
        short_names: strings(names.get("shortNames")),
        categories: strings(names.get("categories")),
        verbs: ALL_VERBS.to_vec(),
        subresources,
        has_generation: true,
        custom: Some(Arc::new(CustomInfo {
            crd_name: format!("{plural}.{group}"),
            schemas,
            printer_columns,
        })),
    })
}

/// Whether a built-in resource's `status` is reset by the server on create, and to what.
pub fn status_on_create(group: &str, plural: &str) -> Option<Value> {
    use serde_json::json;
    match (group, plural) {
        ("", "pods") => Some(json!({"phase": "Pending", "qosClass": "BestEffort"})),
        ("", "persistentvolumeclaims") | ("", "persistentvolumes") => {
            Some(json!({"phase": "Pending"}))
        }
        ("", "namespaces") => Some(json!({"phase": "Active"})),
        ("", "services") => Some(json!({"loadBalancer": {}})),
        ("apps", _) | ("batch", _) => Some(json!({})),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtins_have_unique_group_resources() {
        let types = builtin_types();
        let mut keys: Vec<_> = types.iter().map(ResourceType::group_resource).collect();
        keys.sort();
        let before = keys.len();
        keys.dedup();
        assert_eq!(before, keys.len());
    }

    #[test]
    fn crd_becomes_a_type_with_storage_version_first() {
        let crd = json!({
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1alpha1", "served": true, "storage": false},
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                     "schema": {"openAPIV3Schema": {"type": "object"}}}
                ]
            }
        });
        let rt = type_from_crd(&crd).unwrap();
        assert_eq!(rt.versions, vec!["v1", "v1alpha1"]);
        assert!(rt.has_status());
        assert!(rt.namespaced);
        assert_eq!(rt.list_kind, "WidgetList");
        assert_eq!(rt.short_names, vec!["wd"]);
        assert!(rt.schema("v1").is_some());
    }

    #[test]
    fn crd_without_storage_version_is_refused() {
        let crd = json!({"spec": {"group": "g", "scope": "Cluster",
            "names": {"plural": "xs", "kind": "X"},
            "versions": [{"name": "v1", "served": true, "storage": false}]}});
        assert!(type_from_crd(&crd).unwrap_err().contains("storage version"));
        let bad_scope = json!({"spec": {"group": "g", "scope": "Everywhere",
            "names": {"plural": "xs", "kind": "X"},
            "versions": [{"name": "v1", "served": true, "storage": true}]}});
        assert!(
            type_from_crd(&bad_scope)
                .unwrap_err()
                .contains("Unsupported value")
        );
    }
}
