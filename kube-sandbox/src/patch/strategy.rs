//! List strategies per kind and field path, for strategic merge and server-side apply.

/// How strategic merge patch treats a list (the Go `patchStrategy` tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SmpList {
    Replace,
    MergePrimitives,
    MergeByKey(&'static str),
}

/// How server-side apply treats a list (`+listType` / `+listMapKey`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SsaList {
    Atomic,
    Set,
    Map(&'static [MapKey]),
}

/// A list-map key field, with the default the schema gives it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct MapKey {
    pub(super) field: &'static str,
    pub(super) default: Option<&'static str>,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct ListRule {
    pub(super) smp: SmpList,
    pub(super) ssa: SsaList,
}

pub(super) const fn key(field: &'static str) -> MapKey {
    MapKey {
        field,
        default: None,
    }
}

pub(super) const TCP: Option<&str> = Some("TCP");
pub(super) const KEYS_NAME: &[MapKey] = &[key("name")];
pub(super) const KEYS_TYPE: &[MapKey] = &[key("type")];
pub(super) const KEYS_UID: &[MapKey] = &[key("uid")];
pub(super) const KEYS_IP: &[MapKey] = &[key("ip")];
pub(super) const KEYS_MOUNT_PATH: &[MapKey] = &[key("mountPath")];
pub(super) const KEYS_DEVICE_PATH: &[MapKey] = &[key("devicePath")];
pub(super) const KEYS_CONTAINER_PORT: &[MapKey] = &[
    key("containerPort"),
    MapKey {
        field: "protocol",
        default: TCP,
    },
];
pub(super) const KEYS_SERVICE_PORT: &[MapKey] = &[
    key("port"),
    MapKey {
        field: "protocol",
        default: TCP,
    },
];
pub(super) const KEYS_TOPOLOGY: &[MapKey] = &[key("topologyKey"), key("whenUnsatisfiable")];

pub(super) const ATOMIC: ListRule = ListRule {
    smp: SmpList::Replace,
    ssa: SsaList::Atomic,
};
pub(super) const SET: ListRule = ListRule {
    smp: SmpList::MergePrimitives,
    ssa: SsaList::Set,
};
pub(super) const fn by(smp_key: &'static str, ssa_keys: &'static [MapKey]) -> ListRule {
    ListRule {
        smp: SmpList::MergeByKey(smp_key),
        ssa: SsaList::Map(ssa_keys),
    }
}
pub(super) const BY_NAME: ListRule = by("name", KEYS_NAME);
pub(super) const BY_TYPE: ListRule = by("type", KEYS_TYPE);
pub(super) const BY_IP: ListRule = by("ip", KEYS_IP);

/// Built-in kinds: they have Go types, so strategic merge patch works for them.
pub(super) const BUILTIN_KINDS: &[&str] = &[
    "APIService",
    "Binding",
    "CertificateSigningRequest",
    "ClusterRole",
    "ClusterRoleBinding",
    "ComponentStatus",
    "ConfigMap",
    "ControllerRevision",
    "CronJob",
    "CSIDriver",
    "CSINode",
    "CSIStorageCapacity",
    "CustomResourceDefinition",
    "DaemonSet",
    "Deployment",
    "DeviceClass",
    "EndpointSlice",
    "Endpoints",
    "Event",
    "FlowSchema",
    "HorizontalPodAutoscaler",
    "Ingress",
    "IngressClass",
    "IPAddress",
    "Job",
    "Lease",
    "LimitRange",
    "MutatingWebhookConfiguration",
    "Namespace",
    "NetworkPolicy",
    "Node",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Pod",
    "PodDisruptionBudget",
    "PodTemplate",
    "PriorityClass",
    "PriorityLevelConfiguration",
    "ReplicaSet",
    "ReplicationController",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceQuota",
    "ResourceSlice",
    "Role",
    "RoleBinding",
    "RuntimeClass",
    "Secret",
    "Service",
    "ServiceAccount",
    "ServiceCIDR",
    "StatefulSet",
    "StorageClass",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration",
    "VolumeAttachment",
    "VolumeAttributesClass",
];

/// Whether kube-apiserver accepts a strategic merge patch for `kind`: built-in kinds
/// only; custom resources get 415 Unsupported Media Type.
pub fn supports_strategic_merge(kind: &str) -> bool {
    BUILTIN_KINDS.contains(&kind)
}

/// Where the PodSpec sits in objects of `kind`.
pub(super) fn pod_spec_prefix(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "Pod" => Some(&["spec"]),
        "PodTemplate" => Some(&["template", "spec"]),
        "Deployment"
        | "ReplicaSet"
        | "StatefulSet"
        | "DaemonSet"
        | "Job"
        | "ReplicationController" => Some(&["spec", "template", "spec"]),
        "CronJob" => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
        _ => None,
    }
}

pub(super) fn pod_spec_rule(rel: &[&str]) -> Option<ListRule> {
    let is_container_list =
        |c: &str| matches!(c, "containers" | "initContainers" | "ephemeralContainers");
    Some(match rel {
        [c] if is_container_list(c) => BY_NAME,
        [c, "env"] if is_container_list(c) => BY_NAME,
        [c, "ports"] if is_container_list(c) => by("containerPort", KEYS_CONTAINER_PORT),
        [c, "volumeMounts"] if is_container_list(c) => by("mountPath", KEYS_MOUNT_PATH),
        [c, "volumeDevices"] if is_container_list(c) => by("devicePath", KEYS_DEVICE_PATH),
        ["volumes"] | ["imagePullSecrets"] | ["schedulingGates"] | ["resourceClaims"] => BY_NAME,
        ["hostAliases"] => BY_IP,
        ["topologySpreadConstraints"] => by("topologyKey", KEYS_TOPOLOGY),
        _ => return None,
    })
}

/// The strategy of the list at `path` (field names from the object root, list
/// indexes skipped) in an object of `kind`.
pub(super) fn list_rule(kind: &str, path: &[String]) -> ListRule {
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    match path.as_slice() {
        ["metadata", "finalizers"] => return SET,
        ["metadata", "ownerReferences"] => return by("uid", KEYS_UID),
        _ => {}
    }
    if !supports_strategic_merge(kind) {
        return ATOMIC;
    }
    if let Some(prefix) = pod_spec_prefix(kind)
        && path.starts_with(prefix)
        && let Some(rule) = pod_spec_rule(&path[prefix.len()..])
    {
        return rule;
    }
    match (kind, path.as_slice()) {
        ("Pod", ["status", "podIPs" | "hostIPs"]) => BY_IP,
        ("Pod", ["status", "resourceClaimStatuses"]) => BY_NAME,
        ("Node", ["spec", "podCIDRs"]) => SET,
        ("Node", ["status", "addresses"]) => BY_TYPE,
        ("Service", ["spec", "ports"]) => by("port", KEYS_SERVICE_PORT),
        ("ServiceAccount", ["secrets"]) => BY_NAME,
        // Job conditions carry a patch merge key but are `listType=atomic` for apply.
        ("Job", ["status", "conditions"]) => ListRule {
            smp: SmpList::MergeByKey("type"),
            ssa: SsaList::Atomic,
        },
        (_, ["status", "conditions"]) => BY_TYPE,
        _ => ATOMIC,
    }
}

/// Objects that server-side apply treats as one value (`+structType=atomic`,
/// `+mapType=atomic`).
pub(super) fn is_atomic_object(kind: &str, path: &[String]) -> bool {
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    matches!(
        (kind, path.as_slice()),
        (
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" | "Job" | "Service",
            ["spec", "selector"]
        ) | ("Event", ["involvedObject"])
    )
}

/// Fields at `path` (field names from the root) that the kind's Go zero value already holds:
/// the non-pointer struct fields (`{}`) and the lists without `omitempty` (`null`, such as a
/// pod spec's `containers`). kube-apiserver's field manager compares an update with the live
/// object converted from its Go type (and a create with the zero value), so these nodes are
/// never new and never get a `.` member of their own; every other object or list an update
/// creates (a map, a pointer to a struct, a list item) does (sigs.k8s.io/structured-merge-diff
/// `typed.Comparison`, as used by `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager`).
pub(super) fn in_zero_value(kind: &str, path: &[String]) -> bool {
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    if let Some(prefix) = pod_spec_prefix(kind)
        && path.len() == prefix.len() + 1
        && path.starts_with(prefix)
        && path.last() == Some(&"containers")
    {
        return true;
    }
    match (kind, path.as_slice()) {
        ("Role" | "ClusterRole", ["rules"])
        | ("EndpointSlice", ["endpoints" | "ports"])
        | ("CustomResourceDefinition", ["spec", "versions"]) => return true,
        _ => {}
    }
    const TEMPLATE: &[&[&str]] = &[
        &["spec"],
        &["status"],
        &["spec", "template"],
        &["spec", "template", "metadata"],
        &["spec", "template", "spec"],
    ];
    let within = |paths: &[&[&str]]| paths.contains(&path.as_slice());
    if path.as_slice() == ["metadata"] {
        return true;
    }
    match kind {
        "Pod"
        | "Namespace"
        | "PersistentVolume"
        | "ResourceQuota"
        | "ReplicationController"
        | "CertificateSigningRequest"
        | "PodDisruptionBudget" => within(&[&["spec"], &["status"]]),
        "LimitRange"
        | "Lease"
        | "CSINode"
        | "IngressClass"
        | "PriorityLevelConfiguration"
        | "FlowSchema"
        | "DeviceClass"
        | "ResourceClaimTemplate"
        | "ResourceSlice" => within(&[&["spec"], &["status"]]),
        "ResourceClaim" => within(&[&["spec"], &["status"], &["spec", "devices"]]),
        "Service" | "Ingress" => within(&[&["spec"], &["status"], &["status", "loadBalancer"]]),
        "Node" => within(&[
            &["spec"],
            &["status"],
            &["status", "daemonEndpoints"],
            &["status", "daemonEndpoints", "kubeletEndpoint"],
            &["status", "nodeInfo"],
        ]),
        "PersistentVolumeClaim" => within(&[&["spec"], &["spec", "resources"], &["status"]]),
        "PodTemplate" => within(&[
            &["template"],
            &["template", "metadata"],
            &["template", "spec"],
        ]),
        "Event" => within(&[
            &["involvedObject"],
            &["source"],
            &["regarding"],
            &["deprecatedSource"],
        ]),
        "Deployment" => within(TEMPLATE) || path.as_slice() == ["spec", "strategy"],
        "StatefulSet" | "DaemonSet" => {
            within(TEMPLATE) || path.as_slice() == ["spec", "updateStrategy"]
        }
        "ReplicaSet" | "Job" => within(TEMPLATE),
        "CronJob" => within(&[
            &["spec"],
            &["status"],
            &["spec", "jobTemplate"],
            &["spec", "jobTemplate", "metadata"],
            &["spec", "jobTemplate", "spec"],
            &["spec", "jobTemplate", "spec", "template"],
            &["spec", "jobTemplate", "spec", "template", "metadata"],
            &["spec", "jobTemplate", "spec", "template", "spec"],
        ]),
        "RoleBinding" | "ClusterRoleBinding" => path.as_slice() == ["roleRef"],
        "CustomResourceDefinition" => within(&[
            &["spec"],
            &["spec", "names"],
            &["status"],
            &["status", "acceptedNames"],
        ]),
        "HorizontalPodAutoscaler" => within(&[&["spec"], &["spec", "scaleTargetRef"], &["status"]]),
        "NetworkPolicy" => within(&[&["spec"], &["spec", "podSelector"]]),
        _ => false,
    }
}
