//! The patch formats kube-apiserver accepts, applied to objects held as JSON.
//!
//! - [`merge_patch`]: RFC 7386 JSON merge patch (`application/merge-patch+json`).
//! - [`json_patch()`]: RFC 6902 JSON patch (`application/json-patch+json`).
//! - [`strategic_merge_patch`]: Kubernetes strategic merge patch
//!   (`application/strategic-merge-patch+json`), a port of apimachinery's
//!   `strategicpatch.StrategicMergeMapPatch` including its element ordering.
//! - [`server_side_apply`] and [`record_update`]: field ownership in
//!   `metadata.managedFields` (`application/apply-patch+yaml` and ordinary writes).
//!
//! Kept as upstream, though it may surprise: Node `spec.taints` and pod `tolerations`
//! have no patch merge key, so strategic merge replaces them whole; `$patch: merge` is
//! rejected ("unknown patch type" in a map, "merging lists cannot yet be specified in
//! the patch" in a list); items a patch adds to a merged list go before the server-only
//! items unless `$setElementOrder` says otherwise.
//!
//! What is approximated, compared with kube-apiserver:
//! - List strategies come from a built-in table keyed by kind and field path (the pod
//!   template of Pod, PodTemplate, Deployment, ReplicaSet, StatefulSet, DaemonSet,
//!   ReplicationController, Job and CronJob; `status.conditions` of every built-in kind;
//!   Node, Service and ServiceAccount specifics; `metadata.finalizers` and
//!   `metadata.ownerReferences` of every kind). Every other list is atomic.
//! - `$setElementOrder` sorting follows upstream's algorithm; items missing from the
//!   order list (which upstream places unpredictably) go last.
//! - Values a strategic merge patch adds where the original has nothing are cleaned of
//!   `null`s and `$` directives (upstream keeps them and the typed decode drops them).
//! - Server-side apply has one schema per kind and no conversion of managed fields
//!   between API versions. For custom resources every list is atomic and every object
//!   granular (`x-kubernetes-list-type` / `x-kubernetes-map-type` are ignored). The only
//!   atomic objects known are `spec.selector` of workloads and Services and Event
//!   `involvedObject`. List items are keyed by all their list-map keys with defaults
//!   (`k:{"containerPort":80,"protocol":"TCP"}`); strategic merge uses the single patch
//!   merge key, as upstream.
//! - Pruning removes a field the applier owned before and no longer applies unless some
//!   manager owns it or something below it; objects and lists left empty by pruning are
//!   removed when nobody owns anything in them (upstream also drops whole struct
//!   subtrees only the applier had fields in).
//! - `record_update` records the leaves a write added or changed, new list items and new
//!   empty objects; a `.` member is recorded for list items, new non-atomic lists and new
//!   `metadata.labels` / `metadata.annotations` (upstream also marks pointer structs).
//! - Not implemented: the cap of ten update managers ("ancient-changes"), upgrades from
//!   `kubectl.kubernetes.io/last-applied-configuration`, `resourceVersion` preconditions
//!   in apply configurations (ignored, like `uid`, `creationTimestamp` and
//!   `managedFields`), the field resets of subresource endpoints (the caller drops
//!   `status` from main-resource applies and everything else from status applies), and
//!   checking the configuration's `apiVersion` against the request path (the caller's).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use serde_json::{Map, Value};

/// Why a patch could not be applied. [`PatchError::status_code`] gives the HTTP status
/// kube-apiserver answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch document is malformed (400 Bad Request).
    #[error("{0}")]
    BadRequest(String),
    /// The patch is well formed but cannot be applied to this object (422).
    #[error("{0}")]
    Unprocessable(String),
    /// A JSON patch `test` operation did not hold (422).
    #[error("testing value {path} failed: test failed")]
    TestFailed {
        /// The JSON pointer the failed `test` operation checked.
        path: String,
    },
    /// The strategic merge failed on the content of the object or patch; kube-apiserver
    /// reports these as internal errors (500).
    #[error("{0}")]
    MergeFailed(String),
    /// Strategic merge patch on a kind without a built-in schema, such as a custom
    /// resource (415 Unsupported Media Type).
    #[error(
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )]
    UnsupportedKind {
        /// The kind the patch was sent for.
        kind: String,
    },
}

impl PatchError {
    /// The HTTP status code kube-apiserver uses for this error.
    pub fn status_code(&self) -> u16 {
        match self {
            Self::BadRequest(_) => 400,
            Self::Unprocessable(_) | Self::TestFailed { .. } => 422,
            Self::MergeFailed(_) => 500,
            Self::UnsupportedKind { .. } => 415,
        }
    }
}

/// One field that an apply would take from another manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyConflict {
    /// The manager that owns the field.
    pub manager: String,
    /// The field, in managed-fields path syntax (`.spec.replicas`,
    /// `.spec.template.spec.containers[name="app"].image`).
    pub field: String,
    /// The manager as kube-apiserver prints it: `"name"` for appliers,
    /// `"name" using apps/v1` for updaters.
    pub description: String,
}

impl ApplyConflict {
    /// The message of the matching `FieldManagerConflict` status cause.
    pub fn message(&self) -> String {
        format!("conflict with {}", self.description)
    }
}

/// Why a server-side apply was refused. [`ApplyError::status_code`] gives the HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers would change (409 Conflict, one cause per field
    /// with reason `FieldManagerConflict`).
    #[error("{}", conflict_message(.0))]
    Conflict(Vec<ApplyConflict>),
    /// No field manager was given (400).
    #[error("PATCH, fieldManager is required for apply requests")]
    MissingFieldManager,
    /// The apply configuration is not a valid object of its kind (400).
    #[error("{0}")]
    InvalidConfig(String),
}

impl ApplyError {
    /// The HTTP status code kube-apiserver uses for this error.
    pub fn status_code(&self) -> u16 {
        match self {
            Self::Conflict(_) => 409,
            Self::MissingFieldManager | Self::InvalidConfig(_) => 400,
        }
    }
}

/// The apiserver's summary of apply conflicts (`Apply failed with N conflicts: ...`).
fn conflict_message(conflicts: &[ApplyConflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.description, only.field
        );
    }
    let mut by_manager: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for c in conflicts {
        by_manager.entry(&c.description).or_default().push(&c.field);
    }
    let mut lines = Vec::new();
    for (manager, fields) in by_manager {
        lines.push(format!("conflicts with {manager}:"));
        lines.extend(fields.into_iter().map(|f| format!("- {f}")));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

// ---------------------------------------------------------------------------
// JSON merge patch and JSON patch.

/// Applies an RFC 7386 JSON merge patch to `target` in place.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

/// Applies an RFC 6902 JSON patch (a JSON array of operations) to a copy of `target`.
/// A malformed patch is a [`PatchError::BadRequest`]; an operation that cannot be
/// applied, including a failed `test`, is a 422 error.
pub fn json_patch(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    let ops: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|e| PatchError::BadRequest(format!("invalid JSON patch: {e}")))?;
    let mut doc = target.clone();
    json_patch::patch(&mut doc, &ops).map_err(|e| match e.kind {
        json_patch::PatchErrorKind::TestFailed => PatchError::TestFailed {
            path: e.path.to_string(),
        },
        _ => PatchError::Unprocessable(e.to_string()),
    })?;
    Ok(doc)
}

// ---------------------------------------------------------------------------
// Schema: list strategies per kind and field path.

/// How strategic merge patch treats a list (the Go `patchStrategy` tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SmpList {
    Replace,
    MergePrimitives,
    MergeByKey(&'static str),
}

/// How server-side apply treats a list (`+listType` / `+listMapKey`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SsaList {
    Atomic,
    Set,
    Map(&'static [MapKey]),
}

/// A list-map key field, with the default the schema gives it.
#[derive(Debug, PartialEq, Eq)]
struct MapKey {
    field: &'static str,
    default: Option<&'static str>,
}

#[derive(Debug, Clone, Copy)]
struct ListRule {
    smp: SmpList,
    ssa: SsaList,
}

const fn key(field: &'static str) -> MapKey {
    MapKey {
        field,
        default: None,
    }
}

const TCP: Option<&str> = Some("TCP");
const KEYS_NAME: &[MapKey] = &[key("name")];
const KEYS_TYPE: &[MapKey] = &[key("type")];
const KEYS_UID: &[MapKey] = &[key("uid")];
const KEYS_IP: &[MapKey] = &[key("ip")];
const KEYS_MOUNT_PATH: &[MapKey] = &[key("mountPath")];
const KEYS_DEVICE_PATH: &[MapKey] = &[key("devicePath")];
const KEYS_CONTAINER_PORT: &[MapKey] = &[
    key("containerPort"),
    MapKey {
        field: "protocol",
        default: TCP,
    },
];
const KEYS_SERVICE_PORT: &[MapKey] = &[
    key("port"),
    MapKey {
        field: "protocol",
        default: TCP,
    },
];
const KEYS_TOPOLOGY: &[MapKey] = &[key("topologyKey"), key("whenUnsatisfiable")];

const ATOMIC: ListRule = ListRule {
    smp: SmpList::Replace,
    ssa: SsaList::Atomic,
};
const SET: ListRule = ListRule {
    smp: SmpList::MergePrimitives,
    ssa: SsaList::Set,
};
const fn by(smp_key: &'static str, ssa_keys: &'static [MapKey]) -> ListRule {
    ListRule {
        smp: SmpList::MergeByKey(smp_key),
        ssa: SsaList::Map(ssa_keys),
    }
}
const BY_NAME: ListRule = by("name", KEYS_NAME);
const BY_TYPE: ListRule = by("type", KEYS_TYPE);
const BY_IP: ListRule = by("ip", KEYS_IP);

/// Built-in kinds: they have Go types, so strategic merge patch works for them.
const BUILTIN_KINDS: &[&str] = &[
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
fn pod_spec_prefix(kind: &str) -> Option<&'static [&'static str]> {
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

fn pod_spec_rule(rel: &[&str]) -> Option<ListRule> {
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
fn list_rule(kind: &str, path: &[String]) -> ListRule {
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
fn is_atomic_object(kind: &str, path: &[String]) -> bool {
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    matches!(
        (kind, path.as_slice()),
        (
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" | "Job" | "Service",
            ["spec", "selector"]
        ) | ("Event", ["involvedObject"])
    )
}

/// Go maps (as opposed to structs) whose creation an update records with a `.` member.
fn is_go_map(path: &[String]) -> bool {
    matches!(path, [m, f] if m == "metadata" && (f == "labels" || f == "annotations"))
}

// ---------------------------------------------------------------------------
// Strategic merge patch.

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// Applies a Kubernetes strategic merge patch to `original`, an object of the built-in
/// `kind`, and returns the patched object. `null` deletes a field; `$patch: replace`
/// and `$patch: delete` work in maps and list elements; `$deleteFromPrimitiveList/<f>`,
/// `$setElementOrder/<f>` and `$retainKeys` are honoured as upstream does.
pub fn strategic_merge_patch(
    original: &Value,
    patch: &Value,
    kind: &str,
) -> Result<Value, PatchError> {
    if !supports_strategic_merge(kind) {
        return Err(PatchError::UnsupportedKind {
            kind: kind.to_string(),
        });
    }
    let Value::Object(patch) = patch else {
        return Err(PatchError::BadRequest(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_type_name(patch)
        )));
    };
    let original = match original {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        _ => return Err(PatchError::BadRequest("invalid JSON document".to_string())),
    };
    let merged = Smp { kind }.merge_map(original, patch.clone(), &mut Vec::new())?;
    Ok(Value::Object(merged))
}

fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElemKind {
    Null,
    Bool,
    Number,
    String,
    Object,
}

/// The common element type of the lists, as `sliceElementType` checks it.
fn element_kind(lists: &[&[Value]]) -> Result<ElemKind, PatchError> {
    let mut kind = None;
    for v in lists.iter().flat_map(|l| l.iter()) {
        let k = match v {
            Value::Array(_) => {
                return Err(PatchError::Unprocessable(
                    "lists of lists are not supported".to_string(),
                ));
            }
            Value::Null => ElemKind::Null,
            Value::Bool(_) => ElemKind::Bool,
            Value::Number(_) => ElemKind::Number,
            Value::String(_) => ElemKind::String,
            Value::Object(_) => ElemKind::Object,
        };
        if kind.is_some_and(|prev| prev != k) {
            let all: Vec<Value> = lists.iter().map(|l| Value::Array(l.to_vec())).collect();
            return Err(PatchError::MergeFailed(format!(
                "list element types are not identical: {}",
                Value::Array(all)
            )));
        }
        kind = Some(k);
    }
    kind.ok_or_else(|| {
        PatchError::MergeFailed("no elements in any of the given slices".to_string())
    })
}

/// The value of `key` in a list element, or the apiserver's "no merge key" error.
fn merge_key_value<'v>(item: &'v Value, key: &str) -> Result<&'v Value, PatchError> {
    item.as_object().and_then(|m| m.get(key)).ok_or_else(|| {
        PatchError::MergeFailed(format!(
            "map: {item} does not contain declared merge key: {key}"
        ))
    })
}

/// Position of `item` in `list`, compared by merge key (maps) or by value (scalars).
fn index_of(list: &[Value], item: &Value, key: Option<&str>) -> Option<usize> {
    match key {
        Some(k) => {
            let wanted = item.get(k)?;
            list.iter().position(|v| v.get(k) == Some(wanted))
        }
        None => list.iter().position(|v| v == item),
    }
}

fn is_delete_element(v: &Value) -> bool {
    v.get(DIRECTIVE).and_then(Value::as_str) == Some("delete")
}

/// Splits `merged` into the items present in `by` and the server-only rest.
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut in_patch = Vec::new();
    let mut server_only = Vec::new();
    for v in merged {
        let present = match key {
            Some(k) => {
                let kv = merge_key_value(&v, k)?;
                by.iter().any(|b| b.get(k) == Some(kv))
            }
            None => by.contains(&v),
        };
        if present {
            in_patch.push(v);
        } else {
            server_only.push(v);
        }
    }
    Ok((in_patch, server_only))
}

/// Sorts `items` by their position in `order`, keeping `$patch: delete` items last.
fn normalize_slice_order(
    items: Vec<Value>,
    order: &[Value],
    key: Option<&str>,
) -> Result<Vec<Value>, PatchError> {
    let mut deletes = Vec::new();
    let mut keep = Vec::new();
    if let Some(k) = key {
        for v in items.iter().chain(order) {
            merge_key_value(v, k)?;
        }
        for v in items {
            if is_delete_element(&v) {
                deletes.push(v);
            } else {
                keep.push(v);
            }
        }
    } else {
        keep = items;
    }
    let mut indexed: Vec<(usize, Value)> = keep
        .into_iter()
        .map(|v| (index_of(order, &v, key).unwrap_or(usize::MAX), v))
        .collect();
    indexed.sort_by_key(|(i, _)| *i);
    let mut out: Vec<Value> = indexed.into_iter().map(|(_, v)| v).collect();
    out.extend(deletes);
    Ok(out)
}

/// Interleaves server-only items (`left`) with patch items (`right`): a server-only
/// item goes first only when both are in `server_order` and it comes earlier there,
/// so items new to the server come before the server-only items that follow them.
fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (index_of(server_order, l, key), index_of(server_order, r, key)),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Result<Vec<Value>, PatchError> {
    let patch_items = normalize_slice_order(patch_items, patch_order, key)?;
    let server_only = normalize_slice_order(server_only, server_order, key)?;
    Ok(merge_sorted_slice(
        server_only,
        patch_items,
        server_order,
        key,
    ))
}

/// The field a `$directive/<field>` key names.
fn extract_directive_field(key: &str, prefix: &str, err: &str) -> Result<String, PatchError> {
    match key.split_once('/') {
        Some((p, field)) if p == prefix => Ok(field.to_string()),
        _ => Err(PatchError::BadRequest(err.to_string())),
    }
}

/// Checks that a patch list follows the relative order of its `$setElementOrder` list.
fn validate_set_element_order(
    patch: &[Value],
    order: &[Value],
    key: Option<&str>,
) -> Result<(), PatchError> {
    if patch.is_empty() || order.is_empty() {
        return Ok(());
    }
    let items: Vec<&Value> = match key {
        Some(_) => patch.iter().filter(|v| !is_delete_element(v)).collect(),
        None => patch.iter().collect(),
    };
    let (mut pi, mut si) = (0, 0);
    while pi < items.len() && si < order.len() {
        if items[pi].get(DIRECTIVE).is_some() {
            pi += 1;
            continue;
        }
        let equal = match key {
            Some(k) => merge_key_value(items[pi], k)? == merge_key_value(&order[si], k)?,
            None => items[pi] == &order[si],
        };
        if equal {
            pi += 1;
        }
        si += 1;
    }
    if pi < items.len() && si >= order.len() {
        return Err(PatchError::MergeFailed(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            Value::Array(patch.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}

struct Smp<'a> {
    kind: &'a str,
}

impl Smp<'_> {
    fn rule(&self, path: &[String]) -> ListRule {
        list_rule(self.kind, path)
    }

    fn merge_map(
        &self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Result<Map<String, Value>, PatchError> {
        if let Some(directive) = patch.get(DIRECTIVE).cloned() {
            return match directive.as_str() {
                Some("replace") => {
                    patch.remove(DIRECTIVE);
                    self.merge_map(Map::new(), patch, path)
                }
                Some("delete") => Ok(Map::new()),
                _ => Err(PatchError::MergeFailed(format!(
                    "unknown patch type: {} in map: {}",
                    directive
                        .as_str()
                        .map_or_else(|| directive.to_string(), str::to_string),
                    Value::Object(patch)
                ))),
            };
        }

        if let Some(retain) = patch.remove(RETAIN_KEYS) {
            let bad = || PatchError::BadRequest("invalid patch format of retainKeys".to_string());
            let Value::Array(retain) = retain else {
                return Err(bad());
            };
            let retained = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
            for (k, v) in &patch {
                let exempt = v.is_null()
                    || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
                    || k.starts_with(SET_ELEMENT_ORDER);
                if !exempt && !retained(k) {
                    return Err(bad());
                }
            }
            original.retain(|k, _| retained(k));
        }

        let order_keys: Vec<String> = patch
            .keys()
            .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
            .cloned()
            .collect();
        for order_key in order_keys {
            let order = patch.remove(&order_key).unwrap_or(Value::Null);
            self.apply_set_element_order(&mut original, &mut patch, &order_key, order, path)?;
        }

        for (k, patch_v) in patch {
            if k.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
                let field = extract_directive_field(
                    &k,
                    DELETE_FROM_PRIMITIVE_LIST,
                    "invalid patch format of primitive list",
                )?;
                let Value::Array(to_delete) = patch_v else {
                    return Err(PatchError::BadRequest(
                        "invalid patch format of primitive list".to_string(),
                    ));
                };
                if let Some(Value::Array(list)) = original.get_mut(&field) {
                    list.retain(|v| !to_delete.contains(v));
                }
                continue;
            }
            if patch_v.is_null() {
                original.remove(&k);
                continue;
            }
            path.push(k.clone());
            let merged = match (original.remove(&k), patch_v) {
                (Some(Value::Object(o)), Value::Object(p)) => {
                    Value::Object(self.merge_map(o, p, path)?)
                }
                (Some(Value::Array(o)), Value::Array(p)) => {
                    Value::Array(self.merge_list(o, p, path)?)
                }
                (_, p) => self.materialize(p, path)?,
            };
            path.pop();
            original.insert(k, merged);
        }
        Ok(original)
    }

    /// Merges the list a `$setElementOrder/<field>` directive names and orders it.
    fn apply_set_element_order(
        &self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
        order_key: &str,
        order: Value,
        path: &mut Vec<String>,
    ) -> Result<(), PatchError> {
        let field = extract_directive_field(
            order_key,
            SET_ELEMENT_ORDER,
            "invalid patch format of setElementOrder list",
        )?;
        let Value::Array(order) = order else {
            return Err(PatchError::BadRequest(
                "invalid patch format of setElementOrder list".to_string(),
            ));
        };
        let original_list = match original.get(&field) {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => {
                return Err(PatchError::MergeFailed(format!(
                    "expected a list at {field}, but received a {}",
                    json_type_name(other)
                )));
            }
        };
        let patch_list = match patch.remove(&field) {
            None => None,
            Some(Value::Array(a)) => Some(a),
            Some(other) => {
                return Err(PatchError::MergeFailed(format!(
                    "expected a list at {field}, but received a {}",
                    json_type_name(&other)
                )));
            }
        };
        path.push(field.clone());
        let rule = self.rule(path);
        let key = match rule.smp {
            SmpList::MergeByKey(k) => Some(k),
            _ => None,
        };
        if let Some(p) = &patch_list {
            validate_set_element_order(p, &order, key)?;
        }
        let merged = match (original_list.clone(), patch_list) {
            (Some(o), None) => o,
            (None, Some(p)) => self.materialize_list(p, path)?,
            (Some(o), Some(p)) => self.merge_list(o, p, path)?,
            (None, None) => {
                path.pop();
                return Ok(());
            }
        };
        let merged = if rule.smp == SmpList::Replace {
            merged
        } else {
            let (in_order, server_only) = partition(merged, &order, key)?;
            let server_order = original_list.unwrap_or_default();
            normalize_element_order(in_order, server_only, &order, &server_order, key)?
        };
        path.pop();
        original.insert(field, Value::Array(merged));
        Ok(())
    }

    fn merge_list(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        path: &mut Vec<String>,
    ) -> Result<Vec<Value>, PatchError> {
        match self.rule(path).smp {
            SmpList::Replace => self.materialize_atomic_list(patch, path),
            SmpList::MergePrimitives => self.merge_slice(original, patch, None, path),
            SmpList::MergeByKey(k) => self.merge_slice(original, patch, Some(k), path),
        }
    }

    fn merge_slice(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        key: Option<&str>,
        path: &mut Vec<String>,
    ) -> Result<Vec<Value>, PatchError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        if element_kind(&[&original, &patch])? != ElemKind::Object {
            let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
            for v in original.iter().chain(&patch) {
                if !merged.contains(v) {
                    merged.push(v.clone());
                }
            }
            let (in_patch, server_only) = partition(merged, &patch, None)?;
            return normalize_element_order(in_patch, server_only, &patch, &original, None);
        }
        let Some(key) = key else {
            return Err(PatchError::MergeFailed(format!(
                "cannot merge lists without merge key for {}",
                path.join(".")
            )));
        };
        let (original, patch) = self.apply_special_elements(original, patch, key, path)?;
        let mut merged = original.clone();
        for item in &patch {
            let wanted = merge_key_value(item, key)?;
            let mut found = None;
            for (i, v) in merged.iter().enumerate() {
                let Value::Object(m) = v else {
                    return Err(PatchError::MergeFailed(format!(
                        "value for key {i} is not a map."
                    )));
                };
                if m.get(key) == Some(wanted) {
                    found = Some(i);
                    break;
                }
            }
            let Value::Object(patch_map) = item else {
                return Err(PatchError::MergeFailed(format!(
                    "patch element {item} is not a map"
                )));
            };
            match found {
                Some(i) => {
                    let current = match merged[i].take() {
                        Value::Object(m) => m,
                        _ => Map::new(),
                    };
                    merged[i] = Value::Object(self.merge_map(current, patch_map.clone(), path)?);
                }
                None => merged.push(Value::Object(self.merge_map(
                    Map::new(),
                    patch_map.clone(),
                    path,
                )?)),
            }
        }
        let (in_patch, server_only) = partition(merged, &patch, Some(key))?;
        normalize_element_order(in_patch, server_only, &patch, &original, Some(key))
    }

    /// Handles `$patch` elements of a keyed list: deletions apply to `original`, a
    /// `replace` element makes the rest of the patch the whole list.
    fn apply_special_elements(
        &self,
        mut original: Vec<Value>,
        patch: Vec<Value>,
        key: &str,
        path: &mut Vec<String>,
    ) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
        let mut plain = Vec::new();
        let mut replace = false;
        for item in patch {
            let Some(directive) = item.get(DIRECTIVE) else {
                plain.push(item);
                continue;
            };
            match directive.as_str() {
                Some("delete") => {
                    let wanted = merge_key_value(&item, key)?.clone();
                    original.retain(|v| v.get(key) != Some(&wanted));
                }
                Some("replace") => replace = true,
                Some("merge") => {
                    return Err(PatchError::MergeFailed(
                        "merging lists cannot yet be specified in the patch".to_string(),
                    ));
                }
                _ => {
                    return Err(PatchError::MergeFailed(format!(
                        "unknown patch type: {directive} in map: {item}"
                    )));
                }
            }
        }
        if replace {
            let items = self.materialize_atomic_list(plain, path)?;
            return Ok((items, Vec::new()));
        }
        Ok((original, plain))
    }

    /// A patch value placed where the original has nothing: merged into emptiness,
    /// which drops `null`s and directives.
    fn materialize(&self, v: Value, path: &mut Vec<String>) -> Result<Value, PatchError> {
        Ok(match v {
            Value::Object(m) => Value::Object(self.merge_map(Map::new(), m, path)?),
            Value::Array(items) => Value::Array(self.materialize_list(items, path)?),
            other => other,
        })
    }

    fn materialize_list(
        &self,
        items: Vec<Value>,
        path: &mut Vec<String>,
    ) -> Result<Vec<Value>, PatchError> {
        match self.rule(path).smp {
            SmpList::Replace => self.materialize_atomic_list(items, path),
            SmpList::MergePrimitives => self.merge_slice(Vec::new(), items, None, path),
            SmpList::MergeByKey(k) => self.merge_slice(Vec::new(), items, Some(k), path),
        }
    }

    fn materialize_atomic_list(
        &self,
        items: Vec<Value>,
        path: &mut Vec<String>,
    ) -> Result<Vec<Value>, PatchError> {
        items
            .into_iter()
            .map(|v| match v {
                Value::Object(m) => Ok(Value::Object(self.merge_map(Map::new(), m, path)?)),
                other => Ok(other),
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------
// Field sets (the FieldsV1 encoding of managed fields).

/// A set of field paths as a tree. Path elements are kept in their FieldsV1 string
/// form: `f:<name>`, `k:<json object>`, `v:<json value>`, `i:<index>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct FieldSet {
    member: bool,
    children: BTreeMap<String, FieldSet>,
}

type FieldPath = Vec<String>;

impl FieldSet {
    fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    fn insert(&mut self, path: &[String]) {
        let mut node = self;
        for pe in path {
            node = node.children.entry(pe.clone()).or_default();
        }
        node.member = true;
    }

    fn node(&self, path: &[String]) -> Option<&FieldSet> {
        let mut node = self;
        for pe in path {
            node = node.children.get(pe)?;
        }
        Some(node)
    }

    fn contains(&self, path: &[String]) -> bool {
        self.node(path).is_some_and(|n| n.member)
    }

    /// Whether the path or anything below it is a member (empty nodes are never kept).
    fn covers(&self, path: &[String]) -> bool {
        self.node(path).is_some_and(|n| !n.is_empty())
    }

    fn remove_member(&mut self, path: &[String]) {
        match path.split_first() {
            None => self.member = false,
            Some((first, rest)) => {
                if let Some(child) = self.children.get_mut(first) {
                    child.remove_member(rest);
                    if child.is_empty() {
                        self.children.remove(first);
                    }
                }
            }
        }
    }

    fn remove_subtree(&mut self, path: &[String]) {
        match path.split_first() {
            None => *self = Self::default(),
            Some((first, [])) => {
                self.children.remove(first);
            }
            Some((first, rest)) => {
                if let Some(child) = self.children.get_mut(first) {
                    child.remove_subtree(rest);
                    if child.is_empty() {
                        self.children.remove(first);
                    }
                }
            }
        }
    }

    /// Adds `tree` as the subtree at `path` (nothing when it is empty).
    fn graft(&mut self, path: &[String], tree: FieldSet) {
        if tree.is_empty() {
            return;
        }
        let mut node = self;
        for pe in path {
            node = node.children.entry(pe.clone()).or_default();
        }
        match node.is_empty() {
            true => *node = tree,
            false => node.union_with(&tree),
        }
    }

    fn union_with(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (pe, child) in &other.children {
            self.children
                .entry(pe.clone())
                .or_default()
                .union_with(child);
        }
    }

    /// Every member path, parents before children.
    fn members(&self) -> Vec<FieldPath> {
        fn walk(node: &FieldSet, prefix: &mut FieldPath, out: &mut Vec<FieldPath>) {
            if node.member {
                out.push(prefix.clone());
            }
            for (pe, child) in &node.children {
                prefix.push(pe.clone());
                walk(child, prefix, out);
                prefix.pop();
            }
        }
        let mut out = Vec::new();
        walk(self, &mut Vec::new(), &mut out);
        out
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        if self.member && !self.children.is_empty() {
            m.insert(".".to_string(), Value::Object(Map::new()));
        }
        for (pe, child) in &self.children {
            m.insert(pe.clone(), child.to_json());
        }
        Value::Object(m)
    }

    fn from_json(v: &Value) -> Option<FieldSet> {
        let Value::Object(m) = v else {
            return None;
        };
        let mut set = FieldSet::default();
        for (k, child) in m {
            if k == "." {
                set.member = true;
                continue;
            }
            let mut child = FieldSet::from_json(child)?;
            if child.children.is_empty() {
                child.member = true;
            }
            set.children.insert(k.clone(), child);
        }
        Some(set)
    }
}

fn pe_field(name: &str) -> String {
    format!("f:{name}")
}

fn pe_value(v: &Value) -> String {
    format!("v:{v}")
}

fn pe_key(mut fields: Vec<(&str, Value)>) -> String {
    fields.sort_by(|a, b| a.0.cmp(b.0));
    let mut m = Map::new();
    for (name, v) in fields {
        m.insert(name.to_string(), v);
    }
    format!("k:{}", Value::Object(m))
}

/// The key path element of a list-map item, filling defaulted key fields.
fn item_key(item: &Value, keys: &[MapKey]) -> Result<String, String> {
    let Value::Object(m) = item else {
        return Err(format!(
            "associative list with keys has an element that is not a map: {item}"
        ));
    };
    let mut fields = Vec::with_capacity(keys.len());
    for k in keys {
        match (m.get(k.field), k.default) {
            (Some(v), _) if !v.is_null() => fields.push((k.field, v.clone())),
            (_, Some(default)) => fields.push((k.field, Value::String(default.to_string()))),
            _ => {
                return Err(format!(
                    "associative list with keys has an element that omits key field \"{}\" (and doesn't have default value)",
                    k.field
                ));
            }
        }
    }
    Ok(pe_key(fields))
}

/// A field path as kube-apiserver prints it in conflicts (`.spec.ports[port=80,protocol="TCP"]`).
fn path_string(path: &[String]) -> String {
    let mut out = String::new();
    for pe in path {
        if let Some(f) = pe.strip_prefix("f:") {
            out.push('.');
            out.push_str(f);
        } else if let Some(k) = pe.strip_prefix("k:") {
            let parts: Vec<String> = match serde_json::from_str::<Map<String, Value>>(k) {
                Ok(m) => m.iter().map(|(n, v)| format!("{n}={v}")).collect(),
                Err(_) => vec![k.to_string()],
            };
            out.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(v) = pe.strip_prefix("v:") {
            out.push_str(&format!("[={v}]"));
        } else if let Some(i) = pe.strip_prefix("i:") {
            out.push_str(&format!("[{i}]"));
        } else {
            out.push_str(pe);
        }
    }
    out
}

/// The field names along a path, which select list strategies.
fn names_of(path: &[String]) -> Vec<String> {
    path.iter()
        .filter_map(|pe| pe.strip_prefix("f:"))
        .map(str::to_string)
        .collect()
}

/// Fields the apiserver never records in managed fields.
const STRIPPED_FIELDS: &[&[&str]] = &[
    &["apiVersion"],
    &["kind"],
    &["metadata"],
    &["metadata", "name"],
    &["metadata", "namespace"],
    &["metadata", "creationTimestamp"],
    &["metadata", "selfLink"],
    &["metadata", "uid"],
    &["metadata", "clusterName"],
    &["metadata", "generation"],
    &["metadata", "managedFields"],
    &["metadata", "resourceVersion"],
];

/// Metadata an apply configuration may carry but that apply ignores.
const IGNORED_CONFIG_METADATA: &[&str] = &[
    "managedFields",
    "resourceVersion",
    "uid",
    "creationTimestamp",
];

fn strip_meta(set: &mut FieldSet) {
    for path in STRIPPED_FIELDS {
        let path: FieldPath = path.iter().map(|n| pe_field(n)).collect();
        set.remove_member(&path);
    }
}

// ---------------------------------------------------------------------------
// Walking objects with the apply schema.

#[derive(Default)]
struct Comparison {
    added: FieldSet,
    modified: FieldSet,
    removed: FieldSet,
}

struct Walker<'a> {
    kind: &'a str,
    /// Apply configurations must be well formed; live objects are read leniently.
    strict: bool,
}

impl Walker<'_> {
    fn list(&self, names: &[String]) -> SsaList {
        list_rule(self.kind, names).ssa
    }

    fn atomic_object(&self, names: &[String]) -> bool {
        is_atomic_object(self.kind, names)
    }

    fn field_set(&self, v: &Value) -> Result<FieldSet, String> {
        let mut set = FieldSet::default();
        self.walk(v, &mut Vec::new(), &mut Vec::new(), &mut set)?;
        Ok(set)
    }

    /// Adds the members of `v` (at `elems`) to `set`: leaves, empty objects, list items.
    fn walk(
        &self,
        v: &Value,
        names: &mut Vec<String>,
        elems: &mut FieldPath,
        set: &mut FieldSet,
    ) -> Result<(), String> {
        match v {
            Value::Object(m) if !self.atomic_object(names) => {
                for (k, child) in m {
                    if child.is_null() && !self.strict {
                        continue;
                    }
                    names.push(k.clone());
                    elems.push(pe_field(k));
                    match child {
                        Value::Object(cm) if cm.is_empty() => set.insert(elems),
                        Value::Object(_) | Value::Array(_) => {
                            self.walk(child, names, elems, set)?
                        }
                        _ => set.insert(elems),
                    }
                    names.pop();
                    elems.pop();
                }
                Ok(())
            }
            Value::Array(items) => self.walk_list(items, names, elems, set),
            _ => {
                set.insert(elems);
                Ok(())
            }
        }
    }

    fn walk_list(
        &self,
        items: &[Value],
        names: &mut Vec<String>,
        elems: &mut FieldPath,
        set: &mut FieldSet,
    ) -> Result<(), String> {
        match self.list(names) {
            SsaList::Atomic => set.insert(elems),
            SsaList::Set => {
                if items.iter().any(|v| v.is_object() || v.is_array()) {
                    if self.strict {
                        return Err(format!(
                            "{}: expected a list of scalars",
                            path_string(elems)
                        ));
                    }
                    set.insert(elems);
                    return Ok(());
                }
                for item in items {
                    elems.push(pe_value(item));
                    set.insert(elems);
                    elems.pop();
                }
            }
            SsaList::Map(keys) => {
                let mut seen = HashSet::new();
                for item in items {
                    let pe = match item_key(item, keys) {
                        Ok(pe) => pe,
                        Err(e) if self.strict => {
                            return Err(format!("{}: {e}", path_string(elems)));
                        }
                        Err(_) => continue,
                    };
                    if !seen.insert(pe.clone()) {
                        if self.strict {
                            let mut dup = elems.clone();
                            dup.push(pe);
                            return Err(format!("duplicate entries for key {}", path_string(&dup)));
                        }
                        continue;
                    }
                    elems.push(pe);
                    set.insert(elems);
                    self.walk(item, names, elems, set)?;
                    elems.pop();
                }
            }
        }
        Ok(())
    }

    /// The path element of a list item under the list at `names`.
    fn element_pe(&self, item: &Value, index: usize, names: &[String]) -> Option<String> {
        match self.list(names) {
            SsaList::Set => Some(pe_value(item)),
            SsaList::Map(keys) => item_key(item, keys).ok(),
            SsaList::Atomic => Some(format!("i:{index}")),
        }
    }

    fn find_item(&self, items: &[Value], names: &[String], pe: &str) -> Option<usize> {
        (0..items.len()).find(|&i| self.element_pe(&items[i], i, names).as_deref() == Some(pe))
    }

    fn get<'v>(&self, v: &'v Value, path: &[String]) -> Option<&'v Value> {
        let mut cur = v;
        for (i, pe) in path.iter().enumerate() {
            cur = match cur {
                Value::Object(m) => m.get(pe.strip_prefix("f:")?)?,
                Value::Array(items) => &items[self.find_item(items, &names_of(&path[..i]), pe)?],
                _ => return None,
            };
        }
        Some(cur)
    }

    fn get_mut<'v>(&self, v: &'v mut Value, path: &[String]) -> Option<&'v mut Value> {
        let mut cur = v;
        for (i, pe) in path.iter().enumerate() {
            cur = match cur {
                Value::Object(m) => m.get_mut(pe.strip_prefix("f:")?)?,
                Value::Array(items) => {
                    let idx = self.find_item(items, &names_of(&path[..i]), pe)?;
                    items.get_mut(idx)?
                }
                _ => return None,
            };
        }
        Some(cur)
    }

    fn remove(&self, v: &mut Value, path: &[String]) -> bool {
        let Some((last, parent_path)) = path.split_last() else {
            return false;
        };
        match self.get_mut(v, parent_path) {
            Some(Value::Object(m)) => last
                .strip_prefix("f:")
                .is_some_and(|f| m.remove(f).is_some()),
            Some(Value::Array(items)) => {
                match self.find_item(items, &names_of(parent_path), last) {
                    Some(idx) => {
                        items.remove(idx);
                        true
                    }
                    None => false,
                }
            }
            _ => false,
        }
    }

    /// Compares two versions of an object field by field. `null` counts as absent.
    /// With `mark_new_nodes`, newly created lists and Go maps are recorded as members.
    fn diff(
        &self,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        names: &mut Vec<String>,
        elems: &mut FieldPath,
        cmp: &mut Comparison,
        mark_new_nodes: bool,
    ) {
        let lhs = lhs.filter(|v| !v.is_null());
        let rhs = rhs.filter(|v| !v.is_null());
        match (lhs, rhs) {
            (None, None) => {}
            // Equal subtrees add, change and remove nothing; comparing them is much cheaper
            // than walking them (most writes change a small part of an object).
            (Some(l), Some(r)) if l == r => {}
            (Some(_), None) => cmp.removed.insert(elems),
            (None, Some(r)) => self.added(r, names, elems, cmp, mark_new_nodes),
            (Some(Value::Object(l)), Some(Value::Object(r))) if !self.atomic_object(names) => {
                for k in l.keys().chain(r.keys().filter(|k| !l.contains_key(*k))) {
                    names.push(k.clone());
                    elems.push(pe_field(k));
                    self.diff(l.get(k), r.get(k), names, elems, cmp, mark_new_nodes);
                    names.pop();
                    elems.pop();
                }
            }
            (Some(Value::Array(l)), Some(Value::Array(r))) => {
                self.diff_list(l, r, names, elems, cmp, mark_new_nodes);
            }
            (Some(l), Some(r)) => {
                if l != r {
                    cmp.modified.insert(elems);
                }
            }
        }
    }

    /// Records everything in a value that is new, as members of `cmp.added`.
    fn added(
        &self,
        r: &Value,
        names: &mut Vec<String>,
        elems: &mut FieldPath,
        cmp: &mut Comparison,
        mark_new_nodes: bool,
    ) {
        cmp.added
            .graft(elems, self.added_tree(r, names, mark_new_nodes));
    }

    /// The members a new value adds, as a tree rooted at the value: built bottom-up, so
    /// that a whole new object costs one pass instead of one walk from the root per field.
    fn added_tree(&self, r: &Value, names: &mut Vec<String>, mark_new_nodes: bool) -> FieldSet {
        let mut set = FieldSet::default();
        match r {
            Value::Null => {}
            Value::Object(m) if m.is_empty() => set.member = true,
            Value::Object(m) if !self.atomic_object(names) => {
                set.member = mark_new_nodes && is_go_map(names);
                for (k, child) in m {
                    names.push(k.clone());
                    let sub = self.added_tree(child, names, mark_new_nodes);
                    names.pop();
                    if !sub.is_empty() {
                        set.children.insert(pe_field(k), sub);
                    }
                }
            }
            Value::Array(items) => match self.index_items(items, names) {
                None => set.member = true,
                Some(indexed) => {
                    set.member = mark_new_nodes;
                    for (pe, item) in indexed {
                        let mut sub = match item.is_object() {
                            true => self.added_tree(item, names, mark_new_nodes),
                            false => FieldSet::default(),
                        };
                        sub.member = true;
                        set.children.entry(pe).or_default().union_with(&sub);
                    }
                }
            },
            _ => set.member = true,
        }
        set
    }

    fn diff_list(
        &self,
        l: &[Value],
        r: &[Value],
        names: &mut Vec<String>,
        elems: &mut FieldPath,
        cmp: &mut Comparison,
        mark_new_nodes: bool,
    ) {
        let (Some(left), Some(right)) = (self.index_items(l, names), self.index_items(r, names))
        else {
            if l != r {
                cmp.modified.insert(elems);
            }
            return;
        };
        let left_by_pe: HashMap<&str, &Value> =
            left.iter().map(|(pe, v)| (pe.as_str(), *v)).collect();
        let right_pes: HashSet<&str> = right.iter().map(|(pe, _)| pe.as_str()).collect();
        for (pe, item) in &right {
            elems.push(pe.clone());
            match left_by_pe.get(pe.as_str()) {
                Some(old) => self.diff(Some(old), Some(item), names, elems, cmp, mark_new_nodes),
                None => {
                    cmp.added.insert(elems);
                    if item.is_object() {
                        self.added(item, names, elems, cmp, mark_new_nodes);
                    }
                }
            }
            elems.pop();
        }
        for (pe, _) in &left {
            if !right_pes.contains(pe.as_str()) {
                elems.push(pe.clone());
                cmp.removed.insert(elems);
                elems.pop();
            }
        }
    }

    /// Items of a set or list-map keyed by path element (first of duplicates wins);
    /// `None` for atomic lists and lists whose items cannot be keyed.
    fn index_items<'v>(
        &self,
        items: &'v [Value],
        names: &[String],
    ) -> Option<Vec<(String, &'v Value)>> {
        let list = self.list(names);
        if list == SsaList::Atomic {
            return None;
        }
        let mut seen = HashSet::new();
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            if list == SsaList::Set && (item.is_object() || item.is_array()) {
                return None;
            }
            let pe = self.element_pe(item, i, names)?;
            if seen.insert(pe.clone()) {
                out.push((pe, item));
            }
        }
        Some(out)
    }

    /// Merges an apply configuration into the live object: objects merge deeply,
    /// sets and list-maps merge per item, everything else is replaced.
    fn merge(
        &self,
        lhs: Option<&Value>,
        rhs: &Value,
        names: &mut Vec<String>,
    ) -> Result<Value, String> {
        match (lhs, rhs) {
            (Some(Value::Object(l)), Value::Object(r)) if !self.atomic_object(names) => {
                let mut out = l.clone();
                for (k, rv) in r {
                    names.push(k.clone());
                    let merged = self.merge(l.get(k).filter(|v| !v.is_null()), rv, names)?;
                    names.pop();
                    if merged.is_null() {
                        out.remove(k);
                    } else {
                        out.insert(k.clone(), merged);
                    }
                }
                Ok(Value::Object(out))
            }
            (Some(Value::Array(l)), Value::Array(r)) => match self.list(names) {
                SsaList::Atomic => Ok(without_nulls(rhs)),
                SsaList::Set => self.merge_items(l, r, names, |v, _| Ok(pe_value(v))),
                SsaList::Map(keys) => self.merge_items(l, r, names, |v, _| item_key(v, keys)),
            },
            (_, r) => Ok(without_nulls(r)),
        }
    }

    /// Merges associative lists keeping both orders where possible (a port of
    /// structured-merge-diff's list merge): live-only items stay where they were,
    /// applied items follow the configuration's order.
    fn merge_items(
        &self,
        l: &[Value],
        r: &[Value],
        names: &mut Vec<String>,
        pe_of: impl Fn(&Value, usize) -> Result<String, String>,
    ) -> Result<Value, String> {
        let rhs_pes: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, v)| pe_of(v, i))
            .collect::<Result<_, _>>()?;
        let lhs_pes: Vec<Option<String>> = l
            .iter()
            .enumerate()
            .map(|(i, v)| pe_of(v, i).ok())
            .collect();
        let mut observed_lhs: HashMap<&str, usize> = HashMap::new();
        for (i, pe) in lhs_pes.iter().enumerate() {
            if let Some(pe) = pe {
                observed_lhs.entry(pe.as_str()).or_insert(i);
            }
        }
        let observed_rhs: HashSet<&str> = rhs_pes.iter().map(String::as_str).collect();
        let mut shared: VecDeque<&str> = rhs_pes
            .iter()
            .map(String::as_str)
            .filter(|pe| observed_lhs.contains_key(pe))
            .collect();
        let mut next_shared = shared.pop_front();
        let mut merged_rhs: HashSet<&str> = HashSet::new();
        let mut out = Vec::with_capacity(l.len() + r.len());
        let (mut li, mut ri) = (0, 0);
        while li < l.len() || ri < r.len() {
            let lpe = lhs_pes.get(li).and_then(|p| p.as_deref());
            if li < l.len() && ri < r.len() {
                if lpe == Some(rhs_pes[ri].as_str()) {
                    merged_rhs.insert(rhs_pes[ri].as_str());
                    push_non_null(&mut out, self.merge(Some(&l[li]), &r[ri], names)?);
                    li += 1;
                    ri += 1;
                    next_shared = shared.pop_front();
                    continue;
                }
                if let Some(pe) = lpe
                    && observed_rhs.contains(pe)
                    && next_shared.is_some_and(|s| s != pe)
                {
                    li += 1;
                    continue;
                }
            }
            if li < l.len() {
                match lpe {
                    Some(pe) if observed_rhs.contains(pe) => {
                        if merged_rhs.contains(pe) {
                            li += 1;
                            continue;
                        }
                    }
                    _ => {
                        out.push(l[li].clone());
                        li += 1;
                        continue;
                    }
                }
            }
            if ri < r.len() {
                let pe = rhs_pes[ri].as_str();
                merged_rhs.insert(pe);
                let live = observed_lhs.get(pe).map(|&i| &l[i]);
                push_non_null(&mut out, self.merge(live, &r[ri], names)?);
                ri += 1;
                if next_shared == Some(pe) {
                    next_shared = shared.pop_front();
                }
            }
        }
        Ok(Value::Array(out))
    }
}

fn push_non_null(out: &mut Vec<Value>, v: Value) {
    if !v.is_null() {
        out.push(v);
    }
}

/// A copy of `v` without `null` object fields.
fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

// ---------------------------------------------------------------------------
// metadata.managedFields

const APPLY: &str = "Apply";
const UPDATE: &str = "Update";

#[derive(Debug, Clone)]
struct ManagedEntry {
    manager: String,
    operation: String,
    api_version: String,
    time: Option<String>,
    subresource: String,
    set: FieldSet,
}

impl ManagedEntry {
    fn is_apply_by(&self, manager: &str, subresource: &str) -> bool {
        self.operation == APPLY && self.manager == manager && self.subresource == subresource
    }

    /// The manager as the apiserver prints it in conflicts.
    fn describe(&self) -> String {
        let mut out = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            out.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == UPDATE {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }

    /// Whether `v` is an entry [`Self::parse`] accepts, checked in place.
    fn is_valid(v: &Value) -> bool {
        let operation = EntryHeader::of(v).operation;
        (operation == APPLY || operation == UPDATE) && v.get("fieldsV1").is_some_and(fields_valid)
    }

    fn parse(v: &Value) -> Option<ManagedEntry> {
        let text = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let operation = text("operation");
        if operation != APPLY && operation != UPDATE {
            return None;
        }
        Some(ManagedEntry {
            manager: text("manager"),
            operation,
            api_version: text("apiVersion"),
            time: v.get("time").and_then(Value::as_str).map(str::to_string),
            subresource: text("subresource"),
            set: FieldSet::from_json(v.get("fieldsV1")?)?,
        })
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), Value::String(self.manager.clone()));
        m.insert("operation".into(), Value::String(self.operation.clone()));
        m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::String(t.clone()));
        }
        m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        m.insert("fieldsV1".into(), self.set.to_json());
        if !self.subresource.is_empty() {
            m.insert(
                "subresource".into(),
                Value::String(self.subresource.clone()),
            );
        }
        Value::Object(m)
    }
}

fn parse_managed_fields(v: Option<&Value>) -> Vec<ManagedEntry> {
    match v {
        Some(Value::Array(entries)) => entries.iter().filter_map(ManagedEntry::parse).collect(),
        _ => Vec::new(),
    }
}

fn take_managed_fields(obj: &mut Value) -> Option<Value> {
    obj.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("managedFields"))
}

/// Writes the entries in the apiserver's order (operation, time, manager, version).
fn write_managed_fields(obj: &mut Value, entries: Vec<ManagedEntry>) {
    write_entries(obj, entries.into_iter().map(Entry::Parsed).collect());
}

/// One `metadata.managedFields` entry of an update: parsed when the write changes it,
/// kept as written otherwise. Most writes change one manager's fields, and parsing and
/// rendering every other entry again cost more than the rest of the bookkeeping.
enum Entry {
    /// A valid entry ([`ManagedEntry::parse`] accepts it), unchanged.
    Kept(Value),
    /// An entry to render.
    Parsed(ManagedEntry),
}

impl Entry {
    /// (operation, time, manager, apiVersion, subresource): the apiserver's order.
    fn order(&self) -> (&str, Option<&str>, &str, &str, &str) {
        match self {
            Entry::Kept(v) => {
                let h = EntryHeader::of(v);
                (h.operation, h.time, h.manager, h.api_version, h.subresource)
            }
            Entry::Parsed(e) => (
                &e.operation,
                e.time.as_deref(),
                &e.manager,
                &e.api_version,
                &e.subresource,
            ),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Entry::Kept(v) => v
                .get("fieldsV1")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty),
            Entry::Parsed(e) => e.set.is_empty(),
        }
    }

    fn into_json(self) -> Value {
        match self {
            Entry::Kept(v) => v,
            Entry::Parsed(e) => e.to_json(),
        }
    }
}

fn write_entries(obj: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|e| !e.is_empty());
    entries.sort_by(|a, b| a.order().cmp(&b.order()));
    let Some(obj) = obj.as_object_mut() else {
        return;
    };
    if entries.is_empty() {
        if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
            meta.remove("managedFields");
        }
        return;
    }
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        meta.insert(
            "managedFields".into(),
            Value::Array(entries.into_iter().map(Entry::into_json).collect()),
        );
    }
}

/// Who wrote a managedFields entry, how and when, read in place.
struct EntryHeader<'a> {
    manager: &'a str,
    operation: &'a str,
    api_version: &'a str,
    subresource: &'a str,
    time: Option<&'a str>,
}

impl<'a> EntryHeader<'a> {
    fn of(v: &'a Value) -> EntryHeader<'a> {
        let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
        EntryHeader {
            manager: text("manager"),
            operation: text("operation"),
            api_version: text("apiVersion"),
            subresource: text("subresource"),
            time: v.get("time").and_then(Value::as_str),
        }
    }

    fn is_update_by(&self, manager: &str, api_version: &str, subresource: &str) -> bool {
        self.operation == UPDATE
            && self.manager == manager
            && self.api_version == api_version
            && self.subresource == subresource
    }
}

/// Whether `v` is a FieldsV1 set [`FieldSet::from_json`] reads.
fn fields_valid(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| m.iter().all(|(k, child)| k == "." || fields_valid(child)))
}

/// The FieldsV1 node at `path`, if the set reaches it.
fn fields_node<'a>(fields: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter()
        .try_fold(fields, |node, pe| node.get(pe.as_str()))
}

/// Whether a FieldsV1 node is a member itself (a leaf, or marked with `.`).
fn fields_member(node: &Value) -> bool {
    node.as_object()
        .is_some_and(|m| m.is_empty() || m.contains_key("."))
}

// ---------------------------------------------------------------------------
// Server-side apply and update tracking.

/// Applies `applied`, an apply configuration of `kind`, for `manager` on top of
/// `existing` (`None` creates) and returns the object to store, with
/// `metadata.managedFields` updated. Fields of the configuration that another manager
/// owns and whose value would change are conflicts unless `force`, which moves their
/// ownership to `manager`. Fields `manager` applied before and no longer applies are
/// removed unless another manager owns them. `now` is the RFC 3339 time recorded in
/// the manager's entry when the object changes.
pub fn server_side_apply(
    existing: Option<&Value>,
    applied: &Value,
    kind: &str,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, ApplyError> {
    server_side_apply_subresource(existing, applied, kind, manager, "", force, now)
}

/// [`server_side_apply`] through a subresource endpoint (`subresource` is e.g. `status`;
/// empty for the main resource). Each manager has one apply entry per subresource, so
/// applying status does not prune what the same manager applied to the main resource.
/// The caller drops the fields the endpoint resets (spec for `status`, status otherwise).
pub fn server_side_apply_subresource(
    existing: Option<&Value>,
    applied: &Value,
    kind: &str,
    manager: &str,
    subresource: &str,
    force: bool,
    now: &str,
) -> Result<Value, ApplyError> {
    if manager.is_empty() {
        return Err(ApplyError::MissingFieldManager);
    }
    let Value::Object(config) = applied else {
        return Err(ApplyError::InvalidConfig(format!(
            "an apply configuration must be an object, not {}",
            json_type_name(applied)
        )));
    };
    let api_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ApplyError::InvalidConfig("apiVersion must be set in an apply configuration".into())
        })?
        .to_string();
    match config.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            return Err(ApplyError::InvalidConfig(
                "kind must be set in an apply configuration".into(),
            ));
        }
        Some(k) if k != kind => {
            return Err(ApplyError::InvalidConfig(format!(
                "the apply configuration is a {k}, but the object is a {kind}"
            )));
        }
        Some(_) => {}
    }
    let mut config = Value::Object(config.clone());
    if let Some(Value::Object(meta)) = config.get_mut("metadata") {
        for field in IGNORED_CONFIG_METADATA {
            meta.remove(*field);
        }
    }

    let strict = Walker { kind, strict: true };
    let lenient = Walker {
        kind,
        strict: false,
    };
    let mut applied_set = strict
        .field_set(&config)
        .map_err(ApplyError::InvalidConfig)?;
    strip_meta(&mut applied_set);

    let mut live = existing
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    if !live.is_object() {
        return Err(ApplyError::InvalidConfig(
            "the existing object is not a JSON object".into(),
        ));
    }
    let mut entries = parse_managed_fields(take_managed_fields(&mut live).as_ref());
    if existing.is_some() && entries.is_empty() {
        // Objects written without field tracking are owned by a stand-in updater.
        let mut set = lenient.field_set(&live).unwrap_or_default();
        strip_meta(&mut set);
        entries.push(ManagedEntry {
            manager: "before-first-apply".into(),
            operation: UPDATE.into(),
            api_version: live
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or(&api_version)
                .to_string(),
            time: None,
            subresource: String::new(),
            set,
        });
    }
    let mine = entries
        .iter()
        .position(|e| e.is_apply_by(manager, subresource));
    let mut owned_by_others = FieldSet::default();
    for (i, e) in entries.iter().enumerate() {
        if Some(i) != mine {
            owned_by_others.union_with(&e.set);
        }
    }

    let mut merged = lenient
        .merge(Some(&live), &config, &mut Vec::new())
        .map_err(ApplyError::InvalidConfig)?;

    if let Some(last) = mine.map(|i| entries[i].set.clone()) {
        let mut owned_now = applied_set.clone();
        owned_now.union_with(&owned_by_others);
        prune(&lenient, &mut merged, &last, &owned_now);
    }

    let mut cmp = Comparison::default();
    lenient.diff(
        Some(&live),
        Some(&merged),
        &mut Vec::new(),
        &mut Vec::new(),
        &mut cmp,
        false,
    );
    let mut changed = cmp.added;
    changed.union_with(&cmp.modified);

    let mut conflicts = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if Some(i) == mine {
            continue;
        }
        for path in e.set.members() {
            if changed.contains(&path) {
                conflicts.push((i, path));
            }
        }
    }
    if !conflicts.is_empty() && !force {
        let mut list: Vec<ApplyConflict> = conflicts
            .iter()
            .map(|(i, path)| ApplyConflict {
                manager: entries[*i].manager.clone(),
                field: path_string(path),
                description: entries[*i].describe(),
            })
            .collect();
        list.sort_by(|a, b| (&a.description, &a.field).cmp(&(&b.description, &b.field)));
        return Err(ApplyError::Conflict(list));
    }
    for (i, path) in &conflicts {
        entries[*i].set.remove_member(path);
    }
    let removed = cmp.removed.members();
    for (i, e) in entries.iter_mut().enumerate() {
        if Some(i) != mine {
            for path in &removed {
                e.set.remove_subtree(path);
            }
        }
    }

    let object_changed = merged != live;
    match mine {
        Some(i) => {
            let entry = &mut entries[i];
            entry.set = applied_set;
            entry.api_version = api_version;
            if object_changed || entry.time.is_none() {
                entry.time = Some(now.to_string());
            }
        }
        None => entries.push(ManagedEntry {
            manager: manager.to_string(),
            operation: APPLY.into(),
            api_version,
            time: Some(now.to_string()),
            subresource: subresource.to_string(),
            set: applied_set,
        }),
    }
    write_managed_fields(&mut merged, entries);
    Ok(merged)
}

/// Removes from `merged` what the applier owned (`last`) and nobody owns now.
fn prune(walker: &Walker<'_>, merged: &mut Value, last: &FieldSet, owned_now: &FieldSet) {
    for path in last.members() {
        if owned_now.covers(&path) {
            continue;
        }
        walker.remove(merged, &path);
        // Drop objects and lists the removal emptied, unless someone owns inside them.
        let mut ancestor = path;
        while ancestor.len() > 1 {
            ancestor.pop();
            if !ancestor.last().is_some_and(|pe| pe.starts_with("f:"))
                || owned_now.covers(&ancestor)
            {
                break;
            }
            let empty = match walker.get(merged, &ancestor) {
                Some(Value::Object(m)) => m.is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                _ => false,
            };
            if !empty {
                break;
            }
            walker.remove(merged, &ancestor);
        }
    }
}

/// Records in `new.metadata.managedFields` the fields an ordinary write (create,
/// update, non-apply patch) by `manager` set or changed, as an `Update` entry for
/// `operation_api_version` (the request's `group/version`); other managers lose
/// ownership of those fields, and of fields the write removed. A request object whose
/// `managedFields` is `[]` or `[{}]` clears them. `old` is `None` on create.
pub fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    operation_api_version: &str,
    now: &str,
) {
    record_update_subresource(old, new, manager, "", operation_api_version, now);
}

/// [`record_update`] for a write through a subresource endpoint (e.g. `status`), which
/// gets its own entry per manager.
pub fn record_update_subresource(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: &str,
    operation_api_version: &str,
    now: &str,
) {
    if !new.is_object() {
        return;
    }
    // Taken out for the comparison below and written back at the end.
    let requested = take_managed_fields(new);
    if let Some(Value::Array(list)) = &requested
        && (list.is_empty() || (list.len() == 1 && list[0] == Value::Object(Map::new())))
    {
        return;
    }
    // The entries as written: the request's when it carries valid ones, else the old
    // object's.
    let mut raw: Vec<Value> = match requested {
        Some(Value::Array(list)) => list.into_iter().filter(ManagedEntry::is_valid).collect(),
        _ => Vec::new(),
    };
    if raw.is_empty()
        && let Some(Value::Array(list)) = old.and_then(|o| o.pointer("/metadata/managedFields"))
    {
        raw = list
            .iter()
            .filter(|v| ManagedEntry::is_valid(v))
            .cloned()
            .collect();
    }
    let kind = new
        .get("kind")
        .or_else(|| old.and_then(|o| o.get("kind")))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    // The old object is compared as it is, not copied without its managedFields on every
    // write: their removal shows as one removed path that no entry owns.
    let empty = Value::Object(Map::new());
    let before = old.unwrap_or(&empty);

    let walker = Walker {
        kind: &kind,
        strict: false,
    };
    let mut cmp = Comparison::default();
    walker.diff(
        Some(before),
        Some(new),
        &mut Vec::new(),
        &mut Vec::new(),
        &mut cmp,
        true,
    );
    let mut current = cmp.added;
    current.union_with(&cmp.modified);
    strip_meta(&mut current);

    // Every entry in `raw` is valid: its header alone tells which one is this writer's.
    let mine = raw
        .iter()
        .position(|v| EntryHeader::of(v).is_update_by(manager, operation_api_version, subresource));
    // Paths are listed only when another entry may lose them (never on a create).
    let others = raw.len() - usize::from(mine.is_some());
    let changed = match others {
        0 => Vec::new(),
        _ => current.members(),
    };
    let removed = match raw.is_empty() {
        true => Vec::new(),
        false => cmp.removed.members(),
    };
    let mut entries = Vec::with_capacity(raw.len() + 1);
    for (i, v) in raw.into_iter().enumerate() {
        let is_mine = Some(i) == mine;
        let fields = v.get("fieldsV1").unwrap_or(&Value::Null);
        let touched = (is_mine && !current.is_empty())
            || removed.iter().any(|p| fields_node(fields, p).is_some())
            || (!is_mine
                && changed
                    .iter()
                    .any(|p| fields_node(fields, p).is_some_and(fields_member)));
        if !touched {
            entries.push(Entry::Kept(v));
            continue;
        }
        let Some(mut e) = ManagedEntry::parse(&v) else {
            continue;
        };
        for path in &removed {
            e.set.remove_subtree(path);
        }
        if is_mine {
            e.set.union_with(&current);
            if !current.is_empty() {
                e.time = Some(now.to_string());
            }
        } else {
            for path in &changed {
                e.set.remove_member(path);
            }
        }
        entries.push(Entry::Parsed(e));
    }
    if mine.is_none() && !current.is_empty() {
        entries.push(Entry::Parsed(ManagedEntry {
            manager: manager.to_string(),
            operation: UPDATE.into(),
            api_version: operation_api_version.to_string(),
            time: Some(now.to_string()),
            subresource: subresource.to_string(),
            set: current,
        }));
    }
    write_entries(new, entries);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    const T0: &str = "2025-01-01T00:00:00Z";
    const T1: &str = "2025-01-01T00:01:00Z";

    #[test]
    fn merge_patch_rfc7386_examples() {
        // RFC 7386 appendix A: (original, patch, result)
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (json!({"a": "foo"}), json!(null), json!(null)),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (original, patch, expected) in cases {
            let mut target = original.clone();
            merge_patch(&mut target, &patch);
            assert_eq!(target, expected, "{original} + {patch}");
        }
    }

    #[test]
    fn json_patch_operations_and_failures() {
        let doc = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 1, "list": [1, 2]}});
        let ok_cases = [
            (
                json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]),
                json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 3, "list": [1, 2]}}),
            ),
            (
                json!([{"op": "add", "path": "/spec/list/-", "value": 3}, {"op": "remove", "path": "/metadata/labels/x"}]),
                json!({"metadata": {"name": "a", "labels": {}}, "spec": {"replicas": 1, "list": [1, 2, 3]}}),
            ),
            (
                json!([{"op": "test", "path": "/metadata/name", "value": "a"}, {"op": "copy", "from": "/metadata/name", "path": "/spec/name"}]),
                json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 1, "list": [1, 2], "name": "a"}}),
            ),
        ];
        for (patch, expected) in ok_cases {
            assert_eq!(json_patch(&doc, &patch).unwrap(), expected, "{patch}");
        }
        let err = json_patch(
            &doc,
            &json!([{"op": "test", "path": "/spec/replicas", "value": 2}]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::TestFailed {
                path: "/spec/replicas".into()
            }
        );
        assert_eq!(err.status_code(), 422);
        let err =
            json_patch(&doc, &json!([{"op": "remove", "path": "/spec/missing"}])).unwrap_err();
        assert!(matches!(err, PatchError::Unprocessable(_)), "{err:?}");
        let err = json_patch(&doc, &json!({"op": "add"})).unwrap_err();
        assert!(matches!(err, PatchError::BadRequest(_)), "{err:?}");
        assert_eq!(err.status_code(), 400);
    }

    fn pod(containers: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}})
    }

    fn containers_of(v: &Value) -> Value {
        v.pointer("/spec/containers")
            .cloned()
            .unwrap_or(Value::Null)
    }

    #[test]
    fn strategic_merge_on_pod_containers() {
        let original = pod(json!([
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
            {"name": "b", "image": "b:1"}
        ]));
        // (patch containers, expected containers)
        let cases = [
            // Merge by name: only the image of "a" changes, "b" stays.
            (
                json!([{"name": "a", "image": "a:2"}]),
                json!([
                    {"name": "a", "image": "a:2", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
                    {"name": "b", "image": "b:1"}
                ]),
            ),
            // A new item goes before the server-only items, as upstream orders it.
            (
                json!([{"name": "c", "image": "c:1"}]),
                json!([
                    {"name": "c", "image": "c:1"},
                    {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
                    {"name": "b", "image": "b:1"}
                ]),
            ),
            // env merges by name; `$patch: delete` removes one entry; null deletes a field.
            (
                json!([{"name": "a", "image": null, "env": [{"name": "X", "$patch": "delete"}, {"name": "Z", "value": "3"}]}]),
                json!([
                    {"name": "a", "env": [{"name": "Z", "value": "3"}, {"name": "Y", "value": "2"}]},
                    {"name": "b", "image": "b:1"}
                ]),
            ),
            // `$patch: delete` on a container.
            (
                json!([{"name": "b", "$patch": "delete"}]),
                json!([{"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}]),
            ),
            // `$patch: replace` element: the rest of the patch list is the whole list.
            (
                json!([{"$patch": "replace"}, {"name": "d", "image": "d:1"}]),
                json!([{"name": "d", "image": "d:1"}]),
            ),
        ];
        for (patch_containers, expected) in cases {
            let patch = json!({"spec": {"containers": patch_containers}});
            let out = strategic_merge_patch(&original, &patch, "Pod").unwrap();
            assert_eq!(containers_of(&out), expected, "{patch}");
        }
    }

    #[test]
    fn strategic_merge_set_element_order() {
        let original = pod(json!([{"name": "a"}, {"name": "b"}]));
        let patch = json!({"spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "c"}, {"name": "a"}],
            "containers": [{"name": "c", "image": "c:1"}]
        }});
        let out = strategic_merge_patch(&original, &patch, "Pod").unwrap();
        assert_eq!(
            containers_of(&out),
            json!([{"name": "b"}, {"name": "c", "image": "c:1"}, {"name": "a"}])
        );
        let bad = json!({"spec": {
            "$setElementOrder/containers": [{"name": "a"}],
            "containers": [{"name": "c"}]
        }});
        let err = strategic_merge_patch(&original, &bad, "Pod").unwrap_err();
        assert!(
            err.to_string().starts_with("The order in patch list"),
            "{err}"
        );
    }

    #[test]
    fn strategic_merge_map_directives() {
        let original = json!({"kind": "Deployment", "metadata": {"name": "d", "labels": {"a": "1", "b": "2"}},
            "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
        // (patch, expected)
        let cases = [
            (
                json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}}),
                json!({"kind": "Deployment", "metadata": {"name": "d", "labels": {"c": "3"}},
                    "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
            ),
            (
                json!({"metadata": {"labels": {"$patch": "delete"}}}),
                json!({"kind": "Deployment", "metadata": {"name": "d", "labels": {}},
                    "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
            ),
            (
                json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
                json!({"kind": "Deployment", "metadata": {"name": "d", "labels": {"a": "1", "b": "2"}},
                    "spec": {"strategy": {"type": "Recreate"}}}),
            ),
            (
                json!({"metadata": {"labels": {"a": null, "new": {"x": null, "y": "z"}}}}),
                json!({"kind": "Deployment", "metadata": {"name": "d", "labels": {"b": "2", "new": {"y": "z"}}},
                    "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
            ),
        ];
        for (patch, expected) in cases {
            assert_eq!(
                strategic_merge_patch(&original, &patch, "Deployment").unwrap(),
                expected,
                "{patch}"
            );
        }
        let err = strategic_merge_patch(
            &original,
            &json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 2}}}}),
            "Deployment",
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::BadRequest("invalid patch format of retainKeys".into())
        );
        let err = strategic_merge_patch(
            &original,
            &json!({"metadata": {"labels": {"$patch": "merge"}}}),
            "Deployment",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("unknown patch type: merge in map"),
            "{err}"
        );
        assert_eq!(err.status_code(), 500);
        let err = strategic_merge_patch(
            &pod(json!([{"name": "a"}])),
            &json!({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}),
            "Pod",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "merging lists cannot yet be specified in the patch"
        );
    }

    #[test]
    fn strategic_merge_primitive_lists() {
        let original =
            json!({"kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["a", "b"]}});
        let cases = [
            (
                json!({"metadata": {"finalizers": ["b", "c"]}}),
                json!(["a", "b", "c"]),
            ),
            (
                json!({"metadata": {"finalizers": ["c"]}}),
                json!(["c", "a", "b"]),
            ),
            (
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
                json!(["b"]),
            ),
            (
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "$setElementOrder/finalizers": ["b", "c"], "finalizers": ["c"]}}),
                json!(["b", "c"]),
            ),
            (json!({"metadata": {"finalizers": null}}), Value::Null),
        ];
        for (patch, expected) in cases {
            let out = strategic_merge_patch(&original, &patch, "ConfigMap").unwrap();
            assert_eq!(
                out.pointer("/metadata/finalizers")
                    .cloned()
                    .unwrap_or(Value::Null),
                expected,
                "{patch}"
            );
        }
        let err = strategic_merge_patch(
            &original,
            &json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}),
            "ConfigMap",
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::BadRequest("invalid patch format of primitive list".into())
        );
    }

    #[test]
    fn strategic_merge_list_strategies_per_kind() {
        // (kind, original, patch, pointer, expected)
        let cases = [
            // Tolerations have no merge key: replaced whole.
            (
                "Pod",
                json!({"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}}),
                json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists", "value": null}]}}),
                "/spec/tolerations",
                json!([{"key": "b", "operator": "Exists"}]),
            ),
            // Node taints are atomic for strategic merge upstream as well.
            (
                "Node",
                json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}),
                json!({"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}}),
                "/spec/taints",
                json!([{"key": "b", "effect": "NoExecute"}]),
            ),
            // Conditions merge by type.
            (
                "Pod",
                json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]}}),
                json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
                "/status/conditions",
                json!([{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]),
            ),
            (
                "Node",
                json!({"status": {"conditions": [{"type": "Ready", "status": "True"}], "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}),
                json!({"status": {"addresses": [{"type": "Hostname", "address": "n1"}]}}),
                "/status/addresses",
                json!([{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "10.0.0.1"}]),
            ),
            // Container statuses are atomic.
            (
                "Pod",
                json!({"status": {"containerStatuses": [{"name": "a", "ready": true}, {"name": "b", "ready": true}]}}),
                json!({"status": {"containerStatuses": [{"name": "a", "ready": false}]}}),
                "/status/containerStatuses",
                json!([{"name": "a", "ready": false}]),
            ),
            // Pod templates of workloads.
            (
                "Deployment",
                json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b"}], "volumes": [{"name": "v", "emptyDir": {}}]}}}}),
                json!({"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}}}),
                "/spec/template/spec/containers",
                json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}]),
            ),
            (
                "CronJob",
                json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80}]}]}}}}}}),
                json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]}}}}}}),
                "/spec/jobTemplate/spec/template/spec/containers",
                json!([{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]),
            ),
            (
                "Service",
                json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}),
                json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}),
                "/spec/ports",
                json!([{"port": 80, "targetPort": 9090}, {"port": 443}]),
            ),
            (
                "ConfigMap",
                json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "2", "$patch": "delete"}]}}),
                "/metadata/ownerReferences",
                json!([{"uid": "1", "name": "a"}]),
            ),
            // A list the original lacks is cleaned of directives on the way in.
            (
                "Pod",
                json!({"spec": {}}),
                json!({"spec": {"volumes": [{"name": "v", "configMap": {"name": "c", "optional": null}}, {"name": "w", "$patch": "delete"}]}}),
                "/spec/volumes",
                json!([{"name": "v", "configMap": {"name": "c"}}]),
            ),
        ];
        for (kind, original, patch, pointer, expected) in cases {
            let out = strategic_merge_patch(&original, &patch, kind).unwrap();
            assert_eq!(
                out.pointer(pointer).cloned().unwrap_or(Value::Null),
                expected,
                "{kind} {patch}"
            );
        }
    }

    #[test]
    fn strategic_merge_errors_and_support() {
        assert!(supports_strategic_merge("Pod"));
        assert!(supports_strategic_merge("Deployment"));
        assert!(!supports_strategic_merge("Widget"));
        let err = strategic_merge_patch(&json!({}), &json!({}), "Widget").unwrap_err();
        assert_eq!(err.status_code(), 415);
        let err = strategic_merge_patch(&json!({}), &json!([1]), "Pod").unwrap_err();
        assert_eq!(err.status_code(), 400);
        let err = strategic_merge_patch(
            &pod(json!([{"name": "a"}])),
            &json!({"spec": {"containers": [{"image": "x"}]}}),
            "Pod",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("does not contain declared merge key: name"),
            "{err}"
        );
        let err = strategic_merge_patch(
            &pod(json!([{"name": "a"}])),
            &json!({"spec": {"containers": [["x"]]}}),
            "Pod",
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Unprocessable("lists of lists are not supported".into())
        );
        let err = strategic_merge_patch(
            &pod(json!([{"name": "a"}])),
            &json!({"spec": {"containers": ["x"]}}),
            "Pod",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("list element types are not identical"),
            "{err}"
        );
    }

    fn deployment(replicas: Option<u32>, containers: Value) -> Value {
        let mut d = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"spec": {"containers": containers}}}
        });
        if let Some(r) = replicas {
            d["spec"]["replicas"] = json!(r);
        }
        d
    }

    fn entry<'v>(obj: &'v Value, manager: &str, operation: &str) -> Option<&'v Value> {
        obj.pointer("/metadata/managedFields")?
            .as_array()?
            .iter()
            .find(|e| e["manager"] == manager && e["operation"] == operation)
    }

    /// The managers of an object's managedFields entries, in their order.
    fn managers(obj: &Value) -> Vec<&str> {
        obj.pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| e["manager"].as_str())
            .collect()
    }

    fn owns(obj: &Value, manager: &str, operation: &str, pointer: &str) -> bool {
        entry(obj, manager, operation)
            .and_then(|e| e["fieldsV1"].pointer(pointer))
            .is_some()
    }

    #[test]
    fn apply_create_records_fields_v1() {
        let mut config = deployment(
            Some(2),
            json!([{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}]),
        );
        config["metadata"]["resourceVersion"] = json!("7");
        config["metadata"]["uid"] = json!("not-mine");
        config["metadata"]["finalizers"] = json!(["example.com/f"]);
        let out = server_side_apply(None, &config, "Deployment", "tool", false, T0).unwrap();
        assert_eq!(out["spec"]["replicas"], json!(2));
        assert!(out.pointer("/metadata/resourceVersion").is_none());
        assert!(out.pointer("/metadata/uid").is_none());
        let managed = out["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(managed.len(), 1);
        assert_eq!(
            managed[0],
            json!({
                "manager": "tool",
                "operation": "Apply",
                "apiVersion": "apps/v1",
                "time": T0,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {"f:finalizers": {"v:\"example.com/f\"": {}}, "f:labels": {"f:app": {}}},
                    "f:spec": {
                        "f:replicas": {},
                        "f:selector": {},
                        "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                            ".": {},
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                        }}}}
                    }
                }
            })
        );
    }

    #[test]
    fn apply_by_same_manager_removes_dropped_fields() {
        let first = deployment(
            Some(2),
            json!([{"name": "app", "image": "nginx"}, {"name": "sidecar", "image": "envoy"}]),
        );
        let live = server_side_apply(None, &first, "tool", "tool", false, T0);
        assert!(
            matches!(live, Err(ApplyError::InvalidConfig(_))),
            "kind must match"
        );
        let live = server_side_apply(None, &first, "Deployment", "tool", false, T0).unwrap();
        let second = deployment(None, json!([{"name": "app", "image": "nginx"}]));
        let out = server_side_apply(Some(&live), &second, "Deployment", "tool", false, T1).unwrap();
        assert!(out.pointer("/spec/replicas").is_none(), "{out}");
        assert_eq!(
            out.pointer("/spec/template/spec/containers").unwrap(),
            &json!([{"name": "app", "image": "nginx"}])
        );
        assert!(!owns(&out, "tool", "Apply", "/f:spec/f:replicas"));
        assert_eq!(entry(&out, "tool", "Apply").unwrap()["time"], json!(T1));
        // Re-applying the same configuration changes nothing, not even the time.
        let again = server_side_apply(
            Some(&out),
            &second,
            "Deployment",
            "tool",
            false,
            "2030-01-01T00:00:00Z",
        )
        .unwrap();
        assert_eq!(again, out);
    }

    #[test]
    fn apply_prunes_set_items_and_emptied_lists() {
        let with = |finalizers: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": finalizers}, "data": {"k": "v"}});
        let live =
            server_side_apply(None, &with(json!(["a", "b"])), "ConfigMap", "m", false, T0).unwrap();
        let out = server_side_apply(
            Some(&live),
            &with(json!(["b"])),
            "ConfigMap",
            "m",
            false,
            T1,
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}});
        let out = server_side_apply(Some(&out), &config, "ConfigMap", "m", false, T1).unwrap();
        assert!(out.pointer("/metadata/finalizers").is_none(), "{out}");
        assert_eq!(out["data"], json!({"k": "v"}));
    }

    #[test]
    fn apply_keeps_fields_another_manager_owns() {
        let config = deployment(Some(2), json!([{"name": "app", "image": "nginx"}]));
        let live = server_side_apply(None, &config, "Deployment", "a", false, T0).unwrap();
        // Manager b applies the same replicas: shared ownership, no conflict.
        let b_config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 2}});
        let live = server_side_apply(Some(&live), &b_config, "Deployment", "b", false, T1).unwrap();
        assert!(owns(&live, "a", "Apply", "/f:spec/f:replicas"));
        assert!(owns(&live, "b", "Apply", "/f:spec/f:replicas"));
        // a stops applying replicas: b still owns them, so they stay.
        let out = server_side_apply(
            Some(&live),
            &deployment(None, json!([{"name": "app", "image": "nginx"}])),
            "Deployment",
            "a",
            false,
            T1,
        )
        .unwrap();
        assert_eq!(out["spec"]["replicas"], json!(2));
        assert!(!owns(&out, "a", "Apply", "/f:spec/f:replicas"));
        assert!(owns(&out, "b", "Apply", "/f:spec/f:replicas"));
    }

    #[test]
    fn apply_conflicts_between_managers_and_force() {
        let config = deployment(Some(2), json!([{"name": "app", "image": "nginx:1"}]));
        let live = server_side_apply(None, &config, "Deployment", "a", false, T0).unwrap();
        let b_config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}}});
        let err =
            server_side_apply(Some(&live), &b_config, "Deployment", "b", false, T1).unwrap_err();
        let ApplyError::Conflict(conflicts) = &err else {
            panic!("expected a conflict, got {err:?}")
        };
        let fields: Vec<&str> = conflicts.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                ".spec.replicas",
                ".spec.template.spec.containers[name=\"app\"].image"
            ]
        );
        assert!(
            conflicts
                .iter()
                .all(|c| c.manager == "a" && c.message() == "conflict with \"a\"")
        );
        assert_eq!(err.status_code(), 409);
        assert_eq!(
            err.to_string(),
            "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.replicas\n- .spec.template.spec.containers[name=\"app\"].image"
        );
        let one = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 3}});
        let err = server_side_apply(Some(&live), &one, "Deployment", "b", false, T1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
        );

        let forced =
            server_side_apply(Some(&live), &b_config, "Deployment", "b", true, T1).unwrap();
        assert_eq!(forced["spec"]["replicas"], json!(3));
        assert_eq!(
            forced
                .pointer("/spec/template/spec/containers/0/image")
                .unwrap(),
            "nginx:2"
        );
        assert!(!owns(&forced, "a", "Apply", "/f:spec/f:replicas"));
        assert!(owns(&forced, "b", "Apply", "/f:spec/f:replicas"));
        assert!(owns(&forced, "a", "Apply", "/f:metadata/f:labels/f:app"));
        // a gave up replicas; applying its old config without them leaves b's value alone.
        let out = server_side_apply(
            Some(&forced),
            &deployment(None, json!([])),
            "Deployment",
            "a",
            false,
            T1,
        )
        .unwrap();
        assert_eq!(out["spec"]["replicas"], json!(3));
        assert_eq!(
            out.pointer("/spec/template/spec/containers").unwrap(),
            &json!([{"name": "app", "image": "nginx:2"}])
        );
    }

    #[test]
    fn apply_merges_keyed_lists_per_manager() {
        let a = deployment(Some(1), json!([{"name": "app", "image": "nginx"}]));
        let live = server_side_apply(None, &a, "Deployment", "a", false, T0).unwrap();
        let b = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [{"name": "proxy", "image": "envoy"}]}}}});
        let live = server_side_apply(Some(&live), &b, "Deployment", "b", false, T1).unwrap();
        assert_eq!(
            live.pointer("/spec/template/spec/containers").unwrap(),
            &json!([{"name": "app", "image": "nginx"}, {"name": "proxy", "image": "envoy"}])
        );
        // a drops its container: only b's stays.
        let out = server_side_apply(
            Some(&live),
            &deployment(Some(1), json!([])),
            "Deployment",
            "a",
            false,
            T1,
        )
        .unwrap();
        assert_eq!(
            out.pointer("/spec/template/spec/containers").unwrap(),
            &json!([{"name": "proxy", "image": "envoy"}])
        );
    }

    #[test]
    fn apply_conflicts_with_updaters_and_untracked_objects() {
        let mut created = deployment(Some(1), json!([{"name": "app", "image": "nginx"}]));
        record_update(None, &mut created, "kubectl-create", "apps/v1", T0);
        let e = entry(&created, "kubectl-create", "Update").unwrap();
        assert_eq!(e["apiVersion"], json!("apps/v1"));
        assert_eq!(
            e["fieldsV1"]["f:metadata"]["f:labels"],
            json!({".": {}, "f:app": {}})
        );
        let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 5}});
        let err = server_side_apply(Some(&created), &config, "Deployment", "tool", false, T1)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"kubectl-create\" using apps/v1: .spec.replicas"
        );

        let untracked = deployment(Some(1), json!([]));
        let err = server_side_apply(Some(&untracked), &config, "Deployment", "tool", false, T1)
            .unwrap_err();
        let ApplyError::Conflict(c) = err else {
            panic!("expected a conflict")
        };
        assert_eq!(c[0].description, "\"before-first-apply\" using apps/v1");
    }

    #[test]
    fn apply_custom_resources_and_invalid_configs() {
        let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"items": [{"name": "a"}], "size": {"cpu": 1}}});
        let out = server_side_apply(None, &widget, "Widget", "ctl", false, T0).unwrap();
        assert_eq!(
            entry(&out, "ctl", "Apply").unwrap()["fieldsV1"],
            json!({"f:spec": {"f:items": {}, "f:size": {"f:cpu": {}}}})
        );
        let merged = server_side_apply(
            Some(&out),
            &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"items": [{"name": "b"}], "size": {"cpu": 1}}}),
            "Widget",
            "ctl",
            false,
            T1,
        )
        .unwrap();
        assert_eq!(merged["spec"]["items"], json!([{"name": "b"}]));

        let no_name = deployment(None, json!([{"image": "nginx"}]));
        let err = server_side_apply(None, &no_name, "Deployment", "tool", false, T0).unwrap_err();
        assert!(
            err.to_string().contains("omits key field \"name\""),
            "{err}"
        );
        assert_eq!(err.status_code(), 400);
        let dup = deployment(None, json!([{"name": "a"}, {"name": "a"}]));
        let err = server_side_apply(None, &dup, "Deployment", "tool", false, T0).unwrap_err();
        assert!(
            err.to_string().starts_with("duplicate entries for key"),
            "{err}"
        );
        assert_eq!(
            server_side_apply(None, &widget, "Widget", "", false, T0).unwrap_err(),
            ApplyError::MissingFieldManager
        );
        let err = server_side_apply(None, &json!({"kind": "Widget"}), "Widget", "ctl", false, T0)
            .unwrap_err();
        assert!(matches!(err, ApplyError::InvalidConfig(_)));
    }

    #[test]
    fn record_update_moves_ownership_and_resets() {
        let config = deployment(Some(2), json!([{"name": "app", "image": "nginx"}]));
        let live = server_side_apply(None, &config, "Deployment", "tool", false, T0).unwrap();
        // A controller scales the deployment and writes status.
        let mut scaled = live.clone();
        scaled["spec"]["replicas"] = json!(4);
        scaled["status"] =
            json!({"replicas": 4, "conditions": [{"type": "Available", "status": "True"}]});
        record_update(Some(&live), &mut scaled, "hpa", "apps/v1", T1);
        assert!(!owns(&scaled, "tool", "Apply", "/f:spec/f:replicas"));
        assert!(owns(&scaled, "hpa", "Update", "/f:spec/f:replicas"));
        assert_eq!(
            entry(&scaled, "hpa", "Update").unwrap()["fieldsV1"]["f:status"],
            json!({"f:conditions": {".": {}, "k:{\"type\":\"Available\"}": {".": {}, "f:status": {}, "f:type": {}}}, "f:replicas": {}})
        );
        assert_eq!(entry(&scaled, "hpa", "Update").unwrap()["time"], json!(T1));
        // Applying replicas again now conflicts with the updater.
        let err = server_side_apply(
            Some(&scaled),
            &deployment(Some(3), json!([{"name": "app", "image": "nginx"}])),
            "Deployment",
            "tool",
            false,
            T1,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"hpa\" using apps/v1: .spec.replicas"
        );
        // An update that removes a field takes it away from everyone.
        let mut unlabeled = scaled.clone();
        unlabeled["metadata"]["labels"] = json!({});
        record_update(Some(&scaled), &mut unlabeled, "kubectl-edit", "apps/v1", T1);
        assert!(!owns(
            &unlabeled,
            "tool",
            "Apply",
            "/f:metadata/f:labels/f:app"
        ));
        // An update that changes nothing records nothing.
        let mut same = unlabeled.clone();
        record_update(Some(&unlabeled), &mut same, "noop", "apps/v1", T1);
        assert!(entry(&same, "noop", "Update").is_none());
        // Sending managedFields: [] (or [{}]) clears them.
        for reset in [json!([]), json!([{}])] {
            let mut cleared = unlabeled.clone();
            cleared["metadata"]["managedFields"] = reset;
            record_update(Some(&unlabeled), &mut cleared, "kubectl", "apps/v1", T1);
            assert!(cleared.pointer("/metadata/managedFields").is_none());
        }
    }

    #[test]
    fn record_update_on_create_lists_every_field() {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": { "name": "p", "namespace": "ns", "labels": { "app": "web" },
                "finalizers": ["a/b"] },
            "spec": {
                "containers": [{ "name": "app", "image": "nginx", "args": ["-x", "-y"],
                    "ports": [{ "containerPort": 80 }],
                    "env": [{ "name": "A", "value": "1" }],
                    "resources": {} }],
                "nodeName": null,
            },
        });
        record_update(None, &mut pod, "kubectl", "v1", T0);
        let entry = entry(&pod, "kubectl", "Update").unwrap();
        assert_eq!(
            entry["fieldsV1"],
            json!({
                "f:metadata": {
                    "f:finalizers": { ".": {}, "v:\"a/b\"": {} },
                    "f:labels": { ".": {}, "f:app": {} },
                },
                "f:spec": { "f:containers": { ".": {}, "k:{\"name\":\"app\"}": {
                    ".": {}, "f:args": {}, "f:image": {}, "f:name": {},
                    "f:env": { ".": {}, "k:{\"name\":\"A\"}": { ".": {}, "f:name": {}, "f:value": {} } },
                    "f:ports": { ".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                        ".": {}, "f:containerPort": {} } },
                    "f:resources": {},
                } } },
            })
        );
        assert_eq!(entry["time"], json!(T0));
    }

    #[test]
    fn updates_keep_the_entries_they_do_not_touch() {
        let entry_a = json!({"manager": "a", "operation": "Update", "apiVersion": "v1",
            "time": T0, "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:x": {}, "f:y": {}}}});
        let entry_b = json!({"manager": "b", "operation": "Update", "apiVersion": "v1",
            "time": T0, "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}});
        let live = json!({"apiVersion": "v1", "kind": "Widget",
            "metadata": {"name": "w", "managedFields": [entry_a.clone(), entry_b]},
            "spec": {"x": 1, "y": 2}, "status": {"phase": "A"}});

        // "b" changes its own field: "a" is kept as written, "b" gets the new time.
        let mut next = live.clone();
        next["status"]["phase"] = json!("B");
        record_update(Some(&live), &mut next, "b", "v1", T1);
        assert_eq!(entry(&next, "a", "Update").unwrap(), &entry_a);
        assert_eq!(entry(&next, "b", "Update").unwrap()["time"], json!(T1));

        // "b" changes a field "a" owns: it moves to "b"; "a" keeps the rest.
        let mut moved = next.clone();
        moved["spec"]["x"] = json!(5);
        record_update(Some(&next), &mut moved, "b", "v1", T1);
        assert!(!owns(&moved, "a", "Update", "/f:spec/f:x"));
        assert!(owns(&moved, "a", "Update", "/f:spec/f:y"));
        assert!(owns(&moved, "b", "Update", "/f:spec/f:x"));

        // "c" removes the last field "a" owns: the emptied entry goes away.
        let mut removed = moved.clone();
        removed["spec"].as_object_mut().unwrap().remove("y");
        record_update(Some(&moved), &mut removed, "c", "v1", T1);
        assert!(entry(&removed, "a", "Update").is_none());
        assert_eq!(managers(&removed), ["b"]);

        // Entries that cannot be read are dropped, as before.
        let mut odd = live.clone();
        odd["metadata"]["managedFields"] = json!([entry_a.clone(),
            {"manager": "z", "operation": "Other", "fieldsV1": {}},
            {"manager": "y", "operation": "Update", "fieldsV1": {"f:spec": 1}}]);
        let mut written = odd.clone();
        written["status"]["phase"] = json!("C");
        record_update(Some(&odd), &mut written, "b", "v1", T1);
        assert_eq!(managers(&written), ["a", "b"]);
    }

    #[test]
    fn status_applies_have_their_own_entry() {
        let widget = |body: Value| {
            let mut w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
            if let (Value::Object(w), Value::Object(body)) = (&mut w, body) {
                w.extend(body);
            }
            w
        };
        let live = server_side_apply(
            None,
            &widget(json!({"spec": {"size": 1}})),
            "Widget",
            "ctrl",
            false,
            T0,
        )
        .unwrap();
        let status = widget(json!({"status": {"ready": true}}));
        let out = server_side_apply_subresource(
            Some(&live),
            &status,
            "Widget",
            "ctrl",
            "status",
            false,
            T1,
        )
        .unwrap();
        assert_eq!(
            out["spec"]["size"],
            json!(1),
            "the main-resource apply is not pruned"
        );
        assert_eq!(out["status"]["ready"], json!(true));
        let status_entry = out["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["subresource"] == "status")
            .unwrap();
        assert_eq!(
            status_entry["fieldsV1"],
            json!({"f:status": {"f:ready": {}}})
        );
        let err = server_side_apply_subresource(
            Some(&out),
            &widget(json!({"status": {"ready": false}})),
            "Widget",
            "other",
            "status",
            false,
            T1,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"ctrl\" with subresource \"status\": .status.ready"
        );
        let mut updated = out.clone();
        updated["status"]["ready"] = json!(false);
        record_update_subresource(
            Some(&out),
            &mut updated,
            "kubelet",
            "status",
            "example.com/v1",
            T1,
        );
        assert!(owns(&updated, "kubelet", "Update", "/f:status/f:ready"));
        assert_eq!(
            entry(&updated, "kubelet", "Update").unwrap()["subresource"],
            json!("status")
        );
    }

    #[test]
    fn managed_entries_are_sorted_and_field_sets_round_trip() {
        let fields = json!({
            "f:metadata": {"f:finalizers": {".": {}, "v:\"a\"": {}}},
            "f:spec": {"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}}, "f:type": {}}
        });
        let set = FieldSet::from_json(&fields).unwrap();
        assert_eq!(set.to_json(), fields);
        let members: Vec<String> = set.members().iter().map(|p| path_string(p)).collect();
        assert_eq!(
            members,
            vec![
                ".metadata.finalizers",
                ".metadata.finalizers[=\"a\"]",
                ".spec.ports[port=80,protocol=\"TCP\"]",
                ".spec.ports[port=80,protocol=\"TCP\"].port",
                ".spec.type"
            ]
        );
        let mut svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "ClusterIP"}});
        record_update(None, &mut svc, "z-creator", "v1", T1);
        let applied = server_side_apply(
            Some(&svc),
            &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}),
            "Service",
            "a-applier",
            false,
            T0,
        )
        .unwrap();
        let order: Vec<(&str, &str)> = applied["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["manager"].as_str().unwrap(),
                    e["operation"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(order, vec![("a-applier", "Apply"), ("z-creator", "Update")]);
        assert!(owns(
            &applied,
            "a-applier",
            "Apply",
            "/f:spec/f:ports/k:{\"port\":80,\"protocol\":\"TCP\"}/f:port"
        ));
    }
}
