//! Virtual pod -> physical pod: which pods are mapped, what the physical pod looks like and
//! what must exist in the worker before it is created.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    Affinity, EnvFromSource, EnvVar, EphemeralContainer, LocalObjectReference, Node, NodeAffinity,
    NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectFieldSelector, Pod, PodSpec,
    PodStatus, Volume,
};
use kube::api::ObjectMeta;

use super::token::{TokenRequestSpec, replace_token_projections, token_request_spec};
use super::{
    BindingSettings, MapError, MappingContext, ResourceMapper, SYSTEM_NAMESPACES, TopDownMapper,
    VIRTUAL_NODE_NAME, copied_annotations, namespaced_identity, physical_labels,
};
use crate::labels;
use crate::naming::{is_dns1123_label, physical_name, virtual_node_name};
use crate::syncer::metadata::{ExpectedMetadata, merge_map};

/// Value of [`labels::RUNNING_DAEMONSET`] that opts a DaemonSet pod in.
pub const RUNNING_DAEMONSET_OPT_IN: &str = "true";
/// Node field that pins physical pods with node affinity.
const NODE_NAME_FIELD: &str = "metadata.name";

/// Why a virtual pod gets no physical copy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkipReason {
    /// The pod is not bound to a node yet.
    #[error("the pod is not scheduled")]
    NotScheduled,
    /// The pod is bound to a node that is not a virtual node of this binding.
    #[error("node {node} is not a virtual node of this binding")]
    NotOnThisBinding {
        /// The pod's node.
        node: String,
    },
    /// The pod runs in a system namespace.
    #[error("namespace {namespace} is a system namespace")]
    SystemNamespace {
        /// The namespace.
        namespace: String,
    },
    /// The pod belongs to a DaemonSet that has not opted in.
    #[error("DaemonSet pods are mapped only with annotation kubeocean.io/running-daemonset=true")]
    DaemonSet,
    /// The pod is being deleted.
    #[error("the pod is being deleted")]
    Deleting,
    /// The pod has finished (Succeeded or Failed): it must not run again.
    #[error("the pod has finished with phase {phase}")]
    Finished {
        /// Its phase.
        phase: String,
    },
}

/// Whether a referenced object must exist before the pod starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Need {
    /// The pod cannot start without it: wait until it is copied.
    Required,
    /// Marked `optional` (or an image pull secret): copy it if it exists, never wait.
    Optional,
}

/// What must be copied to the worker before a pod is created, by virtual name (all in the
/// pod's namespace).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dependencies {
    /// ConfigMaps.
    pub config_maps: BTreeMap<String, Need>,
    /// Secrets.
    pub secrets: BTreeMap<String, Need>,
    /// PersistentVolumeClaims (always required).
    pub pvcs: BTreeSet<String>,
    /// Service-account tokens to request, when the pod projects any.
    pub service_account_token: Option<TokenRequestSpec>,
}

impl Dependencies {
    fn add(map: &mut BTreeMap<String, Need>, name: &str, need: Need) {
        let entry = map.entry(name.to_owned()).or_insert(need);
        // Required wins over optional.
        *entry = (*entry).min(need);
    }
}

/// The physical node behind virtual node `vnode` when it is one of `binding`'s virtual
/// nodes (by its `kubeocean.io/*` labels and name).
pub fn physical_node_of<'n>(vnode: &'n Node, binding: &BindingSettings) -> Option<&'n str> {
    let node_labels = vnode.metadata.labels.as_ref()?;
    let label = |key: &str| node_labels.get(key).map(String::as_str);
    if label(labels::MANAGED_BY) != Some(labels::MANAGED_BY_VALUE) {
        return None;
    }
    let ours = match label(labels::CLUSTER_BINDING) {
        Some(name) => name == binding.name,
        None => label(labels::PHYSICAL_CLUSTER_ID) == Some(binding.cluster_id.as_str()),
    };
    let physical = label(labels::PHYSICAL_NODE_NAME).filter(|n| !n.is_empty())?;
    let named_so = vnode.metadata.name.as_deref()
        == Some(virtual_node_name(&binding.cluster_id, physical).as_str());
    (ours && named_so).then_some(physical)
}

/// Whether virtual pod `pod` gets a physical copy: bound to a virtual node of this binding
/// (`ctx.physical_node_name` names that node's physical node), not in a system namespace,
/// not being deleted, not finished, and not a DaemonSet pod unless opted in (binding
/// `runningDaemonsetByDefault` or annotation `kubeocean.io/running-daemonset: "true"`).
pub fn should_map(pod: &Pod, ctx: &MappingContext<'_>) -> Result<(), SkipReason> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    if SYSTEM_NAMESPACES.contains(&namespace) {
        return Err(SkipReason::SystemNamespace {
            namespace: namespace.to_owned(),
        });
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return Err(SkipReason::Deleting);
    }
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
        .ok_or(SkipReason::NotScheduled)?;
    let on_this_binding = ctx
        .physical_node_name
        .is_some_and(|physical| virtual_node_name(&ctx.binding.cluster_id, physical) == node);
    if !on_this_binding {
        return Err(SkipReason::NotOnThisBinding {
            node: node.to_owned(),
        });
    }
    if let Some(phase) = pod.status.as_ref().and_then(|s| s.phase.as_deref())
        && matches!(phase, "Succeeded" | "Failed")
    {
        return Err(SkipReason::Finished {
            phase: phase.to_owned(),
        });
    }
    if is_daemonset_pod(&pod.metadata) && !ctx.binding.running_daemonset_by_default {
        let opted_in = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(labels::RUNNING_DAEMONSET))
            .is_some_and(|v| v == RUNNING_DAEMONSET_OPT_IN);
        if !opted_in {
            return Err(SkipReason::DaemonSet);
        }
    }
    Ok(())
}

fn is_daemonset_pod(meta: &ObjectMeta) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|owner| owner.kind == "DaemonSet")
}

/// The workload a virtual pod belongs to, as upstream labels physical pods with it
/// (`virtual_pod_controller.go` `getWorkloadInfo`): from the first owner reference, the
/// owner's kind in lower case and its name; `("pod", None)` without owner. A ReplicaSet
/// owned by a Deployment counts as that Deployment: upstream reads the ReplicaSet's owner,
/// we take the Deployment's name from the ReplicaSet's, which the Deployment controller
/// writes as `<deployment>-<pod-template-hash>` (the hash is the pod's label of that name),
/// so no ReplicaSet has to be watched.
pub fn workload_of(pod: &Pod) -> (String, Option<String>) {
    let meta = &pod.metadata;
    let Some(owner) = meta.owner_references.iter().flatten().next() else {
        return ("pod".to_owned(), None);
    };
    let name = Some(owner.name.clone()).filter(|n| !n.is_empty());
    if owner.kind == "ReplicaSet" {
        let hash = meta
            .labels
            .as_ref()
            .and_then(|l| l.get(POD_TEMPLATE_HASH))
            .filter(|h| !h.is_empty());
        let deployment = hash.and_then(|hash| {
            owner
                .name
                .strip_suffix(hash.as_str())?
                .strip_suffix('-')
                .filter(|d| !d.is_empty())
        });
        if let Some(deployment) = deployment {
            return ("deployment".to_owned(), Some(deployment.to_owned()));
        }
    }
    (owner.kind.to_lowercase(), name)
}

/// The pod label the Deployment controller sets to the hash in its ReplicaSets' names.
const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// Labels upstream's record of a physical pod leaves out (`filterVirtualPodLabels`, and
/// the ones `buildPhysicalPodLabels` adds): ours too, so that after a roll-back upstream's
/// merge does not take them for keys removed from the virtual pod.
const UNRECORDED_POD_LABELS: [&str; 4] = [
    labels::MANAGED_BY,
    labels::VIRTUAL_NAMESPACE_LABEL,
    labels::WORKLOAD_TYPE,
    labels::WORKLOAD_NAME,
];
/// Annotations upstream's record of a physical pod leaves out (the bookkeeping
/// `buildPhysicalPodAnnotations` adds), for the same reason.
const UNRECORDED_POD_ANNOTATIONS: [&str; 5] = [
    labels::EXPECTED_METADATA,
    labels::VIRTUAL_POD_NAMESPACE,
    labels::VIRTUAL_POD_NAME,
    labels::VIRTUAL_POD_UID,
    VIRTUAL_NODE_NAME,
];

/// What is recorded in a physical pod's `kubeocean.io/expected-metadata`: the labels and
/// annotations copied from the virtual pod, as upstream records them
/// (`buildPhysicalPodAnnotations`). The keys left out are set on every write anyway, so the
/// three-way merge never needs the record to remove them.
fn pod_record(
    pod_labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> ExpectedMetadata {
    let keep = |unrecorded: &[&str], map: &BTreeMap<String, String>| {
        map.iter()
            .filter(|(k, _)| !unrecorded.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    ExpectedMetadata {
        labels: keep(&UNRECORDED_POD_LABELS, pod_labels),
        annotations: keep(&UNRECORDED_POD_ANNOTATIONS, annotations),
        ..ExpectedMetadata::default()
    }
}

/// Name of the physical pod of `pod`.
pub fn physical_pod_name(pod: &Pod) -> Result<String, MapError> {
    let (namespace, name) = namespaced_identity(&pod.metadata, "Pod")?;
    Ok(physical_name(namespace, name))
}

/// What `pod` needs copied to the worker first: every ConfigMap, Secret and claim it
/// references (volumes, projected sources, env, envFrom, image pull secrets, in every
/// container kind) and the service-account tokens it projects.
pub fn dependencies(pod: &Pod) -> Dependencies {
    let mut deps = Dependencies::default();
    let Some(spec) = pod.spec.as_ref() else {
        return deps;
    };
    // The walk is shared with the rewrite, which needs `&mut`; a copy keeps one walker.
    let mut scratch = spec.clone();
    visit_references(&mut scratch, &mut |kind, name, need| match kind {
        RefKind::ConfigMap => Dependencies::add(&mut deps.config_maps, name, need),
        RefKind::Secret => Dependencies::add(&mut deps.secrets, name, need),
        RefKind::Claim => {
            deps.pvcs.insert(name.clone());
        }
    });
    deps.service_account_token = token_request_spec(spec);
    deps
}

/// The physical pod of virtual pod `pod`: in the mount namespace under its physical name,
/// labelled managed-by Kubeocean, annotated with its virtual pod and node, pinned to the
/// physical node, every ConfigMap/Secret/claim reference renamed to its physical copy,
/// downward API references to the pod's identity redirected to the virtual identity,
/// projected service-account tokens read from the token Secret, no worker service-account
/// token, the binding's priority class. Ephemeral containers cannot be set at creation;
/// see [`physical_ephemeral_containers`].
pub fn physical_pod(pod: &Pod, ctx: &MappingContext<'_>) -> Result<Pod, MapError> {
    let (namespace, name) = namespaced_identity(&pod.metadata, "Pod")?;
    let physical_node = ctx
        .physical_node_name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| MapError::NoPhysicalNode {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })?;
    let mut spec = pod.spec.clone().unwrap_or_default();

    visit_references(&mut spec, &mut |_, reference, _| {
        *reference = physical_name(namespace, reference);
    });
    visit_field_paths(&mut spec);
    replace_token_projections(&mut spec, ctx.token_secret_name).ok_or_else(|| {
        MapError::NoTokenSecret {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    })?;
    spec.ephemeral_containers = None;
    // Gate conditions are set on the virtual pod; in the worker nobody would set them and
    // the physical pod would never become Ready.
    spec.readiness_gates = None;

    // The computing cluster already chose the node: pin it and drop every constraint that
    // speaks of virtual nodes or would let the worker's scheduler decide otherwise.
    spec.node_selector = None;
    spec.topology_spread_constraints = None;
    spec.scheduler_name = None;
    if ctx.binding.direct_scheduling {
        spec.node_name = Some(physical_node.to_owned());
        spec.affinity = None;
    } else {
        spec.node_name = None;
        spec.affinity = Some(pin_to_node(physical_node));
    }

    // Priority comes from the binding's class; a stale value or policy would be rejected.
    spec.priority_class_name = Some(ctx.binding.pod_priority_class_name.clone());
    spec.priority = None;
    spec.preemption_policy = None;

    // Never run with a worker service-account identity.
    spec.service_account_name = None;
    spec.service_account = None;
    spec.automount_service_account_token = Some(false);

    // The pod's hostname would otherwise be its physical name.
    if spec.hostname.is_none() {
        spec.hostname = hostname_for(name);
    }

    let mut annotations = copied_annotations(&pod.metadata);
    for (key, value) in [
        (labels::VIRTUAL_POD_NAMESPACE, namespace),
        (labels::VIRTUAL_POD_NAME, name),
        (
            labels::VIRTUAL_POD_UID,
            pod.metadata.uid.as_deref().unwrap_or_default(),
        ),
        (
            VIRTUAL_NODE_NAME,
            pod.spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .unwrap_or_default(),
        ),
    ] {
        annotations.insert(key.to_owned(), value.to_owned());
    }
    let mut pod_labels = physical_labels(&pod.metadata);
    // Upstream's labels of physical pods (`buildPhysicalPodLabels`), which worker quotas,
    // monitoring and chargeback select on. A workload name too long for a label value is
    // left out (upstream's create would be refused).
    let (workload_type, workload_name) = workload_of(pod);
    for (key, value) in [
        (labels::VIRTUAL_NAMESPACE_LABEL, Some(namespace.to_owned())),
        (labels::WORKLOAD_TYPE, Some(workload_type)),
        (labels::WORKLOAD_NAME, workload_name),
    ] {
        if let Some(value) = value.filter(|v| !v.is_empty() && labels::is_label_value(v)) {
            pod_labels.insert(key.to_owned(), value);
        }
    }
    // Recorded so that later updates can tell keys removed from the virtual pod from keys
    // that others added to the physical pod.
    let written = pod_record(&pod_labels, &annotations);
    annotations.insert(
        labels::EXPECTED_METADATA.to_owned(),
        written.to_annotation(),
    );

    Ok(Pod {
        metadata: ObjectMeta {
            name: Some(physical_name(namespace, name)),
            namespace: Some(ctx.binding.mount_namespace.clone()),
            labels: Some(pod_labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    })
}

/// The annotations of `reference` that the virtual pod lacks or has with another value, as
/// a merge patch; `None` when it already has them all.
pub fn reference_patch(
    pod: &Pod,
    reference: &BTreeMap<String, String>,
) -> Option<serde_json::Value> {
    let have = pod.metadata.annotations.as_ref();
    let differs = reference
        .iter()
        .any(|(k, v)| have.and_then(|a| a.get(k)) != Some(v));
    differs.then(|| serde_json::json!({ "metadata": { "annotations": reference } }))
}

/// The annotations that record, on a virtual pod, which physical pod runs it.
pub fn physical_pod_reference(physical: &Pod) -> BTreeMap<String, String> {
    let meta = &physical.metadata;
    [
        (labels::PHYSICAL_POD_NAMESPACE, &meta.namespace),
        (labels::PHYSICAL_POD_NAME, &meta.name),
        (labels::PHYSICAL_POD_UID, &meta.uid),
    ]
    .into_iter()
    .filter_map(|(key, value)| Some((key.to_owned(), value.clone()?)))
    .collect()
}

/// The existing physical pod updated to follow `desired` (what [`physical_pod`] returns for
/// the virtual pod now), or `None` when it already does. Only what Kubernetes lets a pod
/// change is followed: labels and annotations (three-way merge against what was written
/// last, kept in `kubeocean.io/expected-metadata`, so keys others add survive), container
/// images, and `activeDeadlineSeconds` (set or lowered, never raised).
pub fn physical_pod_update(desired: &Pod, existing: &Pod) -> Option<Pod> {
    let empty = BTreeMap::new();
    let existing_annotations = existing.metadata.annotations.as_ref();
    let last = ExpectedMetadata::from_annotations(existing_annotations);
    let want_labels = desired.metadata.labels.clone().unwrap_or_default();
    let mut want_annotations = desired.metadata.annotations.clone().unwrap_or_default();
    want_annotations.remove(labels::EXPECTED_METADATA);

    let mut updated = existing.clone();
    let current_labels = existing.metadata.labels.as_ref().unwrap_or(&empty);
    let merged_labels = merge_map(current_labels, &last.labels, &want_labels);
    let mut merged_annotations = merge_map(
        existing_annotations.unwrap_or(&empty),
        &last.annotations,
        &want_annotations,
    );
    let written = pod_record(&want_labels, &want_annotations);
    merged_annotations.insert(
        labels::EXPECTED_METADATA.to_owned(),
        written.to_annotation(),
    );
    updated.metadata.labels = Some(merged_labels);
    updated.metadata.annotations = Some(merged_annotations);

    if let (Some(want), Some(spec)) = (desired.spec.as_ref(), updated.spec.as_mut()) {
        if let Some(deadline) = want.active_deadline_seconds
            && spec
                .active_deadline_seconds
                .is_none_or(|current| deadline < current)
        {
            spec.active_deadline_seconds = Some(deadline);
        }
        let want_images: BTreeMap<&str, &str> = want
            .containers
            .iter()
            .chain(want.init_containers.iter().flatten())
            .filter_map(|c| Some((c.name.as_str(), c.image.as_deref()?)))
            .collect();
        for container in spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
        {
            if let Some(image) = want_images.get(container.name.as_str()) {
                container.image = Some((*image).to_owned());
            }
        }
    }
    (updated != *existing).then_some(updated)
}

/// The virtual pod's ephemeral containers as the physical pod must have them (references
/// renamed, downward API redirected), to be written through the `ephemeralcontainers`
/// subresource; `None` when it has none.
pub fn physical_ephemeral_containers(
    pod: &Pod,
) -> Result<Option<Vec<EphemeralContainer>>, MapError> {
    let (namespace, _) = namespaced_identity(&pod.metadata, "Pod")?;
    let Some(containers) = pod
        .spec
        .as_ref()
        .and_then(|s| s.ephemeral_containers.clone())
    else {
        return Ok(None);
    };
    let mut spec = PodSpec {
        ephemeral_containers: Some(containers),
        ..PodSpec::default()
    };
    visit_references(&mut spec, &mut |_, reference, _| {
        *reference = physical_name(namespace, reference);
    });
    visit_field_paths(&mut spec);
    Ok(spec.ephemeral_containers)
}

/// Required node affinity on the node's name: the physical node and nothing else.
fn pin_to_node(node: &str) -> Affinity {
    Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_fields: Some(vec![NodeSelectorRequirement {
                        key: NODE_NAME_FIELD.to_owned(),
                        operator: "In".to_owned(),
                        values: Some(vec![node.to_owned()]),
                    }]),
                    match_expressions: None,
                }],
            }),
            preferred_during_scheduling_ignored_during_execution: None,
        }),
        pod_affinity: None,
        pod_anti_affinity: None,
    }
}

/// The virtual pod name as a hostname, cut to a DNS label the way the kubelet does; `None`
/// when it cannot be one (the kubelet's default then applies).
fn hostname_for(name: &str) -> Option<String> {
    let cut: String = name
        .chars()
        .take(crate::naming::DNS_LABEL_MAX_LEN)
        .collect();
    let trimmed = cut.trim_end_matches(['-', '.']);
    is_dns1123_label(trimmed).then(|| trimmed.to_owned())
}

/// Kind of a reference from a pod to another object of its namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RefKind {
    ConfigMap,
    Secret,
    Claim,
}

/// Calls `f` on every ConfigMap, Secret and claim name the spec references.
fn visit_references(spec: &mut PodSpec, f: &mut impl FnMut(RefKind, &mut String, Need)) {
    let need = |optional: Option<bool>| {
        if optional.unwrap_or(false) {
            Need::Optional
        } else {
            Need::Required
        }
    };
    for volume in spec.volumes.iter_mut().flatten() {
        visit_volume(volume, f, &need);
    }
    for container in spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
    {
        visit_env(
            container.env.as_mut(),
            container.env_from.as_mut(),
            f,
            &need,
        );
    }
    for container in spec.ephemeral_containers.iter_mut().flatten() {
        visit_env(
            container.env.as_mut(),
            container.env_from.as_mut(),
            f,
            &need,
        );
    }
    for secret in spec.image_pull_secrets.iter_mut().flatten() {
        if !secret.name.is_empty() {
            // The kubelet pulls without a missing pull secret rather than failing.
            f(RefKind::Secret, &mut secret.name, Need::Optional);
        }
    }
}

fn visit_volume(
    volume: &mut Volume,
    f: &mut impl FnMut(RefKind, &mut String, Need),
    need: &impl Fn(Option<bool>) -> Need,
) {
    if let Some(cm) = volume.config_map.as_mut() {
        f(RefKind::ConfigMap, &mut cm.name, need(cm.optional));
    }
    if let Some(secret) = volume.secret.as_mut()
        && let Some(name) = secret.secret_name.as_mut()
    {
        f(RefKind::Secret, name, need(secret.optional));
    }
    if let Some(claim) = volume.persistent_volume_claim.as_mut() {
        f(RefKind::Claim, &mut claim.claim_name, Need::Required);
    }
    for source in volume
        .projected
        .iter_mut()
        .flat_map(|p| p.sources.iter_mut().flatten())
    {
        if let Some(cm) = source.config_map.as_mut() {
            f(RefKind::ConfigMap, &mut cm.name, need(cm.optional));
        }
        if let Some(secret) = source.secret.as_mut() {
            f(RefKind::Secret, &mut secret.name, need(secret.optional));
        }
    }
    // Volume plugins that read credentials from a Secret of the pod's namespace.
    let mut plugin_secrets: Vec<&mut LocalObjectReference> = Vec::new();
    plugin_secrets.extend(
        volume
            .csi
            .as_mut()
            .and_then(|v| v.node_publish_secret_ref.as_mut()),
    );
    plugin_secrets.extend(volume.cephfs.as_mut().and_then(|v| v.secret_ref.as_mut()));
    plugin_secrets.extend(volume.cinder.as_mut().and_then(|v| v.secret_ref.as_mut()));
    plugin_secrets.extend(
        volume
            .flex_volume
            .as_mut()
            .and_then(|v| v.secret_ref.as_mut()),
    );
    plugin_secrets.extend(volume.iscsi.as_mut().and_then(|v| v.secret_ref.as_mut()));
    plugin_secrets.extend(volume.rbd.as_mut().and_then(|v| v.secret_ref.as_mut()));
    plugin_secrets.extend(
        volume
            .storageos
            .as_mut()
            .and_then(|v| v.secret_ref.as_mut()),
    );
    plugin_secrets.extend(volume.scale_io.as_mut().map(|v| &mut v.secret_ref));
    for secret in plugin_secrets {
        if !secret.name.is_empty() {
            f(RefKind::Secret, &mut secret.name, Need::Required);
        }
    }
    if let Some(azure) = volume.azure_file.as_mut()
        && !azure.secret_name.is_empty()
    {
        f(RefKind::Secret, &mut azure.secret_name, Need::Required);
    }
}

fn visit_env(
    env: Option<&mut Vec<EnvVar>>,
    env_from: Option<&mut Vec<EnvFromSource>>,
    f: &mut impl FnMut(RefKind, &mut String, Need),
    need: &impl Fn(Option<bool>) -> Need,
) {
    for var in env.into_iter().flatten() {
        let Some(source) = var.value_from.as_mut() else {
            continue;
        };
        if let Some(cm) = source.config_map_key_ref.as_mut() {
            f(RefKind::ConfigMap, &mut cm.name, need(cm.optional));
        }
        if let Some(secret) = source.secret_key_ref.as_mut() {
            f(RefKind::Secret, &mut secret.name, need(secret.optional));
        }
    }
    for source in env_from.into_iter().flatten() {
        if let Some(cm) = source.config_map_ref.as_mut() {
            f(RefKind::ConfigMap, &mut cm.name, need(cm.optional));
        }
        if let Some(secret) = source.secret_ref.as_mut() {
            f(RefKind::Secret, &mut secret.name, need(secret.optional));
        }
    }
}

/// Redirects downward API references to the pod's own identity (which differs in the
/// worker) to the annotations that carry the virtual identity.
fn visit_field_paths(spec: &mut PodSpec) {
    let mut selectors: Vec<&mut ObjectFieldSelector> = Vec::new();
    for volume in spec.volumes.iter_mut().flatten() {
        let direct = volume
            .downward_api
            .as_mut()
            .into_iter()
            .flat_map(|d| d.items.iter_mut().flatten());
        selectors.extend(direct.filter_map(|item| item.field_ref.as_mut()));
        let projected = volume
            .projected
            .as_mut()
            .into_iter()
            .flat_map(|p| p.sources.iter_mut().flatten())
            .filter_map(|s| s.downward_api.as_mut())
            .flat_map(|d| d.items.iter_mut().flatten());
        selectors.extend(projected.filter_map(|item| item.field_ref.as_mut()));
    }
    let container_envs = spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
        .filter_map(|c| c.env.as_mut());
    let ephemeral_envs = spec
        .ephemeral_containers
        .iter_mut()
        .flatten()
        .filter_map(|c| c.env.as_mut());
    for env in container_envs.chain(ephemeral_envs) {
        selectors.extend(
            env.iter_mut()
                .filter_map(|v| v.value_from.as_mut())
                .filter_map(|s| s.field_ref.as_mut()),
        );
    }
    for selector in selectors {
        let annotation = match selector.field_path.as_str() {
            "metadata.name" => labels::VIRTUAL_POD_NAME,
            "metadata.namespace" => labels::VIRTUAL_POD_NAMESPACE,
            "metadata.uid" => labels::VIRTUAL_POD_UID,
            "spec.nodeName" => VIRTUAL_NODE_NAME,
            _ => continue,
        };
        selector.field_path = format!("metadata.annotations['{annotation}']");
    }
}

impl ResourceMapper<Pod> for TopDownMapper {
    type Status = PodStatus;

    fn physical_name(&self, virtual_obj: &Pod) -> Result<String, MapError> {
        physical_pod_name(virtual_obj)
    }

    fn to_physical(&self, virtual_obj: &Pod, ctx: &MappingContext<'_>) -> Result<Pod, MapError> {
        physical_pod(virtual_obj, ctx)
    }

    fn status_to_virtual(&self, physical: &Pod, virtual_obj: &Pod) -> Option<PodStatus> {
        let physical_status = physical.status.as_ref()?;
        let virtual_status = virtual_obj.status.clone().unwrap_or_default();
        let mut status = super::status::virtual_pod_status(physical_status, &virtual_status);
        let gates = virtual_obj
            .spec
            .as_ref()
            .and_then(|s| s.readiness_gates.as_deref());
        super::status::gate_readiness(&mut status, gates.unwrap_or_default());
        Some(status)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        ConfigMapEnvSource, ConfigMapKeySelector, ConfigMapProjection, ConfigMapVolumeSource,
        Container, DownwardAPIProjection, DownwardAPIVolumeFile, EnvVarSource, KeyToPath,
        PersistentVolumeClaimVolumeSource, ProjectedVolumeSource, SecretEnvSource,
        SecretKeySelector, SecretProjection, SecretVolumeSource, ServiceAccountTokenProjection,
        VolumeProjection,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};

    use super::super::test_support::settings;
    use super::super::token::{TokenProjection, token_key};
    use super::*;

    const NS: &str = "team-a";
    const VNODE_PHYSICAL: &str = "worker-1";

    fn phys(name: &str) -> String {
        physical_name(NS, name)
    }

    fn env_cm(var: &str, cm: &str) -> EnvVar {
        EnvVar {
            name: var.into(),
            value_from: Some(EnvVarSource {
                config_map_key_ref: Some(ConfigMapKeySelector {
                    name: cm.into(),
                    key: "k".into(),
                    optional: None,
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }
    }

    fn env_secret(var: &str, secret: &str, optional: bool) -> EnvVar {
        EnvVar {
            name: var.into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: secret.into(),
                    key: "k".into(),
                    optional: optional.then_some(true),
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }
    }

    fn env_field(var: &str, path: &str) -> EnvVar {
        EnvVar {
            name: var.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    api_version: None,
                    field_path: path.into(),
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }
    }

    fn env_from(cm: &str, secret: &str) -> Vec<EnvFromSource> {
        vec![
            EnvFromSource {
                config_map_ref: Some(ConfigMapEnvSource {
                    name: cm.into(),
                    optional: None,
                }),
                ..EnvFromSource::default()
            },
            EnvFromSource {
                secret_ref: Some(SecretEnvSource {
                    name: secret.into(),
                    optional: None,
                }),
                prefix: Some("S_".into()),
                ..EnvFromSource::default()
            },
        ]
    }

    fn downward(path: &str, file: &str) -> DownwardAPIVolumeFile {
        DownwardAPIVolumeFile {
            path: file.into(),
            field_ref: Some(ObjectFieldSelector {
                api_version: Some("v1".into()),
                field_path: path.into(),
            }),
            ..DownwardAPIVolumeFile::default()
        }
    }

    /// A pod that uses every kind of reference.
    fn full_pod() -> Pod {
        let projected_sources = vec![
            VolumeProjection {
                service_account_token: Some(ServiceAccountTokenProjection {
                    audience: None,
                    expiration_seconds: Some(3607),
                    path: "token".into(),
                }),
                ..VolumeProjection::default()
            },
            VolumeProjection {
                config_map: Some(ConfigMapProjection {
                    name: "kube-root-ca.crt".into(),
                    items: Some(vec![KeyToPath {
                        key: "ca.crt".into(),
                        path: "ca.crt".into(),
                        mode: None,
                    }]),
                    optional: None,
                }),
                ..VolumeProjection::default()
            },
            VolumeProjection {
                downward_api: Some(DownwardAPIProjection {
                    items: Some(vec![downward("metadata.namespace", "namespace")]),
                }),
                ..VolumeProjection::default()
            },
        ];
        let extra_projection = vec![
            VolumeProjection {
                secret: Some(SecretProjection {
                    name: "proj-secret".into(),
                    items: None,
                    optional: None,
                }),
                ..VolumeProjection::default()
            },
            VolumeProjection {
                config_map: Some(ConfigMapProjection {
                    name: "proj-cm".into(),
                    items: None,
                    optional: Some(true),
                }),
                ..VolumeProjection::default()
            },
            VolumeProjection {
                downward_api: Some(DownwardAPIProjection {
                    items: Some(vec![downward("metadata.labels", "labels")]),
                }),
                ..VolumeProjection::default()
            },
            VolumeProjection {
                service_account_token: Some(ServiceAccountTokenProjection {
                    audience: Some("vault".into()),
                    expiration_seconds: Some(600),
                    path: "vault-token".into(),
                }),
                ..VolumeProjection::default()
            },
        ];
        let app = Container {
            name: "app".into(),
            image: Some("nginx".into()),
            env: Some(vec![
                env_cm("A", "env-cm"),
                env_secret("B", "env-secret", false),
                env_secret("C", "opt-secret", true),
                env_field("POD", "metadata.name"),
                env_field("NODE", "spec.nodeName"),
                env_field("IP", "status.podIP"),
                EnvVar {
                    name: "PLAIN".into(),
                    value: Some("x".into()),
                    ..EnvVar::default()
                },
            ]),
            env_from: Some(env_from("from-cm", "from-secret")),
            ..Container::default()
        };
        let init = Container {
            name: "init".into(),
            env: Some(vec![
                env_cm("I", "init-cm"),
                env_field("NS", "metadata.namespace"),
            ]),
            env_from: Some(env_from("init-from-cm", "init-from-secret")),
            ..Container::default()
        };
        let debug = EphemeralContainer {
            name: "debug".into(),
            env: Some(vec![
                env_secret("D", "eph-secret", false),
                env_field("UID", "metadata.uid"),
            ]),
            env_from: Some(env_from("eph-from-cm", "eph-from-secret")),
            ..EphemeralContainer::default()
        };
        Pod {
            metadata: ObjectMeta {
                namespace: Some(NS.into()),
                name: Some("web-0".into()),
                uid: Some("uid-web-0".into()),
                labels: Some([("app".to_owned(), "web".to_owned())].into()),
                annotations: Some(
                    [
                        ("team".to_owned(), "a".to_owned()),
                        (labels::PHYSICAL_POD_NAME.to_owned(), "stale".to_owned()),
                    ]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: Some(virtual_node_name("c1", VNODE_PHYSICAL)),
                service_account_name: Some("builder".into()),
                priority: Some(1000),
                priority_class_name: Some("high".into()),
                preemption_policy: Some("Never".into()),
                node_selector: Some([("disk".to_owned(), "ssd".to_owned())].into()),
                scheduler_name: Some("custom".into()),
                containers: vec![app],
                init_containers: Some(vec![init]),
                ephemeral_containers: Some(vec![debug]),
                image_pull_secrets: Some(vec![LocalObjectReference {
                    name: "registry".into(),
                }]),
                volumes: Some(vec![
                    Volume {
                        name: "cm".into(),
                        config_map: Some(ConfigMapVolumeSource {
                            name: "vol-cm".into(),
                            ..ConfigMapVolumeSource::default()
                        }),
                        ..Volume::default()
                    },
                    Volume {
                        name: "secret".into(),
                        secret: Some(SecretVolumeSource {
                            secret_name: Some("vol-secret".into()),
                            ..SecretVolumeSource::default()
                        }),
                        ..Volume::default()
                    },
                    Volume {
                        name: "data".into(),
                        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                            claim_name: "data-web-0".into(),
                            read_only: None,
                        }),
                        ..Volume::default()
                    },
                    Volume {
                        name: "kube-api-access-x7k2p".into(),
                        projected: Some(ProjectedVolumeSource {
                            default_mode: Some(420),
                            sources: Some(projected_sources),
                        }),
                        ..Volume::default()
                    },
                    Volume {
                        name: "mixed".into(),
                        projected: Some(ProjectedVolumeSource {
                            default_mode: None,
                            sources: Some(extra_projection),
                        }),
                        ..Volume::default()
                    },
                    Volume {
                        name: "podinfo".into(),
                        downward_api: Some(k8s_openapi::api::core::v1::DownwardAPIVolumeSource {
                            items: Some(vec![downward("metadata.name", "name")]),
                            default_mode: None,
                        }),
                        ..Volume::default()
                    },
                ]),
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: Some("Pending".into()),
                ..PodStatus::default()
            }),
        }
    }

    fn ctx<'a>(binding: &'a BindingSettings, token: Option<&'a str>) -> MappingContext<'a> {
        MappingContext {
            binding,
            physical_node_name: Some(VNODE_PHYSICAL),
            token_secret_name: token,
        }
    }

    fn annotation_path(key: &str) -> String {
        format!("metadata.annotations['{key}']")
    }

    #[test]
    fn full_pod_is_mapped_with_every_rewrite() {
        let binding = settings();
        let virtual_pod = full_pod();
        let got = physical_pod(&virtual_pod, &ctx(&binding, Some("tok-secret"))).unwrap();

        // Identity and metadata.
        assert_eq!(got.metadata.name.as_deref(), Some(phys("web-0").as_str()));
        assert_eq!(got.metadata.namespace.as_deref(), Some("kubeocean-worker"));
        let pod_labels = got.metadata.labels.as_ref().unwrap();
        assert_eq!(pod_labels["app"], "web");
        assert_eq!(pod_labels[labels::MANAGED_BY], labels::MANAGED_BY_VALUE);
        let annotations = got.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations["team"], "a");
        assert_eq!(annotations[labels::VIRTUAL_POD_NAMESPACE], NS);
        assert_eq!(annotations[labels::VIRTUAL_POD_NAME], "web-0");
        assert_eq!(annotations[labels::VIRTUAL_POD_UID], "uid-web-0");
        assert_eq!(annotations[VIRTUAL_NODE_NAME], "vnode-c1-worker-1");
        assert!(!annotations.contains_key(labels::PHYSICAL_POD_NAME));
        assert!(got.status.is_none());

        let spec = got.spec.unwrap();
        // Scheduling, priority, identity.
        assert_eq!(spec.node_name, None);
        assert_eq!(spec.affinity, Some(pin_to_node(VNODE_PHYSICAL)));
        assert_eq!(spec.node_selector, None);
        assert_eq!(spec.scheduler_name, None);
        assert_eq!(
            spec.priority_class_name.as_deref(),
            Some("kubeocean-default")
        );
        assert_eq!(spec.priority, None);
        assert_eq!(spec.preemption_policy, None);
        assert_eq!(spec.service_account_name, None);
        assert_eq!(spec.automount_service_account_token, Some(false));
        assert_eq!(spec.hostname.as_deref(), Some("web-0"));
        assert_eq!(spec.ephemeral_containers, None);
        assert_eq!(
            spec.image_pull_secrets,
            Some(vec![LocalObjectReference {
                name: phys("registry")
            }])
        );

        // Volumes.
        let volumes = spec.volumes.unwrap();
        assert_eq!(volumes[0].config_map.as_ref().unwrap().name, phys("vol-cm"));
        assert_eq!(
            volumes[1].secret.as_ref().unwrap().secret_name,
            Some(phys("vol-secret"))
        );
        assert_eq!(
            volumes[2]
                .persistent_volume_claim
                .as_ref()
                .unwrap()
                .claim_name,
            phys("data-web-0")
        );
        let access = volumes[3]
            .projected
            .as_ref()
            .unwrap()
            .sources
            .as_ref()
            .unwrap();
        assert_eq!(
            access[0],
            VolumeProjection {
                secret: Some(SecretProjection {
                    name: "tok-secret".into(),
                    items: Some(vec![KeyToPath {
                        key: "token".into(),
                        path: "token".into(),
                        mode: None
                    }]),
                    optional: None,
                }),
                ..VolumeProjection::default()
            }
        );
        assert_eq!(
            access[1].config_map.as_ref().unwrap().name,
            phys("kube-root-ca.crt")
        );
        assert_eq!(
            access[2]
                .downward_api
                .as_ref()
                .unwrap()
                .items
                .as_ref()
                .unwrap()[0]
                .field_ref
                .as_ref()
                .unwrap()
                .field_path,
            annotation_path(labels::VIRTUAL_POD_NAMESPACE)
        );
        let mixed = volumes[4]
            .projected
            .as_ref()
            .unwrap()
            .sources
            .as_ref()
            .unwrap();
        assert_eq!(mixed[0].secret.as_ref().unwrap().name, phys("proj-secret"));
        assert_eq!(mixed[1].config_map.as_ref().unwrap().name, phys("proj-cm"));
        // Labels are copied, so a label reference stays as it is.
        assert_eq!(
            mixed[2]
                .downward_api
                .as_ref()
                .unwrap()
                .items
                .as_ref()
                .unwrap()[0]
                .field_ref
                .as_ref()
                .unwrap()
                .field_path,
            "metadata.labels"
        );
        let vault = mixed[3].secret.as_ref().unwrap();
        assert_eq!(vault.name, "tok-secret");
        assert_eq!(
            vault.items.as_ref().unwrap()[0].key,
            token_key(Some("vault"))
        );
        assert_eq!(vault.items.as_ref().unwrap()[0].path, "vault-token");
        assert!(mixed.iter().all(|s| s.service_account_token.is_none()));
        assert_eq!(
            volumes[5]
                .downward_api
                .as_ref()
                .unwrap()
                .items
                .as_ref()
                .unwrap()[0]
                .field_ref
                .as_ref()
                .unwrap()
                .field_path,
            annotation_path(labels::VIRTUAL_POD_NAME)
        );

        // Containers.
        let app = &spec.containers[0];
        let env = app.env.as_ref().unwrap();
        let source = |i: usize| env[i].value_from.as_ref().unwrap();
        assert_eq!(
            source(0).config_map_key_ref.as_ref().unwrap().name,
            phys("env-cm")
        );
        assert_eq!(
            source(1).secret_key_ref.as_ref().unwrap().name,
            phys("env-secret")
        );
        assert_eq!(
            source(2).secret_key_ref.as_ref().unwrap().name,
            phys("opt-secret")
        );
        assert_eq!(
            source(3).field_ref.as_ref().unwrap().field_path,
            annotation_path(labels::VIRTUAL_POD_NAME)
        );
        assert_eq!(
            source(4).field_ref.as_ref().unwrap().field_path,
            annotation_path(VIRTUAL_NODE_NAME)
        );
        assert_eq!(
            source(5).field_ref.as_ref().unwrap().field_path,
            "status.podIP"
        );
        assert_eq!(env[6].value.as_deref(), Some("x"));
        let from = app.env_from.as_ref().unwrap();
        assert_eq!(
            from[0].config_map_ref.as_ref().unwrap().name,
            phys("from-cm")
        );
        assert_eq!(
            from[1].secret_ref.as_ref().unwrap().name,
            phys("from-secret")
        );
        assert_eq!(from[1].prefix.as_deref(), Some("S_"));
        let init = &spec.init_containers.unwrap()[0];
        let init_env = init.env.as_ref().unwrap();
        assert_eq!(
            init_env[0]
                .value_from
                .as_ref()
                .unwrap()
                .config_map_key_ref
                .as_ref()
                .unwrap()
                .name,
            phys("init-cm")
        );
        assert_eq!(
            init_env[1]
                .value_from
                .as_ref()
                .unwrap()
                .field_ref
                .as_ref()
                .unwrap()
                .field_path,
            annotation_path(labels::VIRTUAL_POD_NAMESPACE)
        );
        let init_from = init.env_from.as_ref().unwrap();
        assert_eq!(
            init_from[0].config_map_ref.as_ref().unwrap().name,
            phys("init-from-cm")
        );
        assert_eq!(
            init_from[1].secret_ref.as_ref().unwrap().name,
            phys("init-from-secret")
        );

        // The virtual pod itself is untouched.
        assert_eq!(virtual_pod, full_pod());
    }

    #[test]
    fn physical_pods_follow_metadata_image_and_deadline_changes() {
        let binding = settings();
        let map = |pod: &Pod| physical_pod(pod, &ctx(&binding, Some("t"))).unwrap();
        let mut created = map(&full_pod());
        // What the worker adds after creation.
        created.metadata.uid = Some("phys-uid".into());
        created
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("worker/added".into(), "1".into());
        created.spec.as_mut().unwrap().active_deadline_seconds = Some(600);
        assert_eq!(
            physical_pod_update(&map(&full_pod()), &created),
            None,
            "in step"
        );

        let edit = |f: &dyn Fn(&mut Pod)| {
            let mut pod = full_pod();
            f(&mut pod);
            physical_pod_update(&map(&pod), &created)
        };
        // Labels: changed, added, removed; keys others added survive.
        let got = edit(&|pod: &mut Pod| {
            let pod_labels = pod.metadata.labels.as_mut().unwrap();
            pod_labels.remove("app");
            pod_labels.insert("tier".into(), "front".into());
        })
        .unwrap();
        let got_labels = got.metadata.labels.as_ref().unwrap();
        assert!(!got_labels.contains_key("app"));
        assert_eq!(got_labels["tier"], "front");
        assert_eq!(got_labels["worker/added"], "1");
        assert_eq!(got_labels[labels::MANAGED_BY], labels::MANAGED_BY_VALUE);
        assert_eq!(got.metadata.uid.as_deref(), Some("phys-uid"));
        // Once written, the same desired state is in step.
        assert_eq!(
            physical_pod_update(
                &map(&{
                    let mut pod = full_pod();
                    let pod_labels = pod.metadata.labels.as_mut().unwrap();
                    pod_labels.remove("app");
                    pod_labels.insert("tier".into(), "front".into());
                    pod
                }),
                &got
            ),
            None
        );

        // Annotations.
        let got = edit(&|pod: &mut Pod| {
            pod.metadata
                .annotations
                .as_mut()
                .unwrap()
                .insert("team".into(), "b".into());
        })
        .unwrap();
        assert_eq!(got.metadata.annotations.as_ref().unwrap()["team"], "b");

        // activeDeadlineSeconds: lowered is followed, raised is not.
        // (virtual deadline, expected physical deadline or no update)
        for (deadline, want) in [
            (Some(300), Some(Some(300))),
            (Some(900), None),
            (None, None),
        ] {
            let got = edit(&|pod: &mut Pod| {
                pod.spec.as_mut().unwrap().active_deadline_seconds = deadline;
            });
            assert_eq!(
                got.map(|p| p.spec.unwrap().active_deadline_seconds),
                want,
                "deadline {deadline:?}"
            );
        }

        // Container images.
        let got = edit(&|pod: &mut Pod| {
            pod.spec.as_mut().unwrap().containers[0].image = Some("nginx:1.27".into());
        })
        .unwrap();
        assert_eq!(
            got.spec.unwrap().containers[0].image.as_deref(),
            Some("nginx:1.27")
        );
    }

    #[test]
    fn virtual_pods_record_their_physical_pod() {
        let binding = settings();
        let mut physical = physical_pod(&full_pod(), &ctx(&binding, Some("t"))).unwrap();
        physical.metadata.uid = Some("phys-uid".into());
        let got = physical_pod_reference(&physical);
        assert_eq!(got[labels::PHYSICAL_POD_NAMESPACE], "kubeocean-worker");
        assert_eq!(got[labels::PHYSICAL_POD_NAME], phys("web-0"));
        assert_eq!(got[labels::PHYSICAL_POD_UID], "phys-uid");
        // Before creation there is no UID to record.
        physical.metadata.uid = None;
        assert_eq!(physical_pod_reference(&physical).len(), 2);
    }

    #[test]
    fn ephemeral_containers_are_rewritten_for_the_subresource() {
        let got = physical_ephemeral_containers(&full_pod()).unwrap().unwrap();
        let env = got[0].env.as_ref().unwrap();
        assert_eq!(
            env[0]
                .value_from
                .as_ref()
                .unwrap()
                .secret_key_ref
                .as_ref()
                .unwrap()
                .name,
            phys("eph-secret")
        );
        assert_eq!(
            env[1]
                .value_from
                .as_ref()
                .unwrap()
                .field_ref
                .as_ref()
                .unwrap()
                .field_path,
            annotation_path(labels::VIRTUAL_POD_UID)
        );
        let from = got[0].env_from.as_ref().unwrap();
        assert_eq!(
            from[0].config_map_ref.as_ref().unwrap().name,
            phys("eph-from-cm")
        );
        assert_eq!(
            from[1].secret_ref.as_ref().unwrap().name,
            phys("eph-from-secret")
        );

        let mut plain = full_pod();
        plain.spec.as_mut().unwrap().ephemeral_containers = None;
        assert_eq!(physical_ephemeral_containers(&plain).unwrap(), None);
    }

    #[test]
    fn dependencies_of_the_full_pod() {
        let deps = dependencies(&full_pod());
        let required = |names: &[&str], optional: &[&str]| -> BTreeMap<String, Need> {
            names
                .iter()
                .map(|n| (n.to_string(), Need::Required))
                .chain(optional.iter().map(|n| (n.to_string(), Need::Optional)))
                .collect()
        };
        assert_eq!(
            deps.config_maps,
            required(
                &[
                    "vol-cm",
                    "kube-root-ca.crt",
                    "env-cm",
                    "from-cm",
                    "init-cm",
                    "init-from-cm",
                    "eph-from-cm"
                ],
                &["proj-cm"]
            )
        );
        assert_eq!(
            deps.secrets,
            required(
                &[
                    "vol-secret",
                    "proj-secret",
                    "env-secret",
                    "from-secret",
                    "init-from-secret",
                    "eph-secret",
                    "eph-from-secret"
                ],
                &["opt-secret", "registry"]
            )
        );
        assert_eq!(deps.pvcs, BTreeSet::from(["data-web-0".to_owned()]));
        assert_eq!(
            deps.service_account_token,
            Some(TokenRequestSpec {
                service_account_name: "builder".into(),
                tokens: vec![
                    TokenProjection {
                        key: "token".into(),
                        audience: None,
                        expiration_seconds: Some(3607),
                    },
                    TokenProjection {
                        key: token_key(Some("vault")),
                        audience: Some("vault".into()),
                        expiration_seconds: Some(600),
                    },
                ],
            })
        );
    }

    #[test]
    fn a_required_reference_wins_over_an_optional_one() {
        let mut pod = full_pod();
        let app = &mut pod.spec.as_mut().unwrap().containers[0];
        app.env
            .as_mut()
            .unwrap()
            .push(env_secret("E", "opt-secret", false));
        assert_eq!(dependencies(&pod).secrets["opt-secret"], Need::Required);
        assert_eq!(dependencies(&Pod::default()), Dependencies::default());
    }

    #[test]
    fn token_projection_without_token_secret_is_an_error() {
        let binding = settings();
        let err = physical_pod(&full_pod(), &ctx(&binding, None)).unwrap_err();
        assert_eq!(
            err,
            MapError::NoTokenSecret {
                namespace: NS.into(),
                name: "web-0".into()
            }
        );
        // Without token projections no Secret is needed.
        let mut pod = full_pod();
        pod.spec.as_mut().unwrap().volumes = None;
        assert!(physical_pod(&pod, &ctx(&binding, None)).is_ok());
        assert!(dependencies(&pod).service_account_token.is_none());
    }

    #[test]
    fn direct_scheduling_versus_affinity_and_priority_class() {
        // (direct scheduling, priority class, expected nodeName, expected affinity)
        let table = [
            (
                false,
                "kubeocean-default",
                None,
                Some(pin_to_node(VNODE_PHYSICAL)),
            ),
            (true, "batch-low", Some(VNODE_PHYSICAL.to_owned()), None),
        ];
        for (direct, class, node_name, affinity) in table {
            let mut binding = settings();
            binding.direct_scheduling = direct;
            binding.pod_priority_class_name = class.into();
            let mut pod = full_pod();
            pod.spec.as_mut().unwrap().affinity = Some(pin_to_node("vnode-elsewhere"));
            let spec = physical_pod(&pod, &ctx(&binding, Some("t")))
                .unwrap()
                .spec
                .unwrap();
            assert_eq!(spec.node_name, node_name, "direct={direct}");
            assert_eq!(spec.affinity, affinity, "direct={direct}");
            assert_eq!(spec.priority_class_name.as_deref(), Some(class));
        }
    }

    #[test]
    fn long_names_fit_the_63_character_rule() {
        let binding = settings();
        // (virtual pod name, expected hostname)
        let long = format!("{}-{}", "a".repeat(62), "b".repeat(40));
        let table: Vec<(String, Option<String>)> = vec![
            ("web-0".into(), Some("web-0".into())),
            (long.clone(), Some("a".repeat(62))),
            ("x".repeat(253), Some("x".repeat(63))),
            ("web.v2".into(), None),
        ];
        for (name, hostname) in table {
            let mut pod = full_pod();
            pod.metadata.name = Some(name.clone());
            pod.spec.as_mut().unwrap().volumes = None;
            let got = physical_pod(&pod, &ctx(&binding, None)).unwrap();
            let physical = got.metadata.name.unwrap();
            assert!(physical.len() <= 63, "{physical} for {name}");
            assert_eq!(physical, physical_name(NS, &name));
            assert_eq!(got.spec.unwrap().hostname, hostname, "hostname of {name}");
        }
        // A long referenced name is renamed to a 63-character physical name.
        let mut pod = full_pod();
        let long_cm = "c".repeat(200);
        pod.spec.as_mut().unwrap().volumes.as_mut().unwrap()[0]
            .config_map
            .as_mut()
            .unwrap()
            .name = long_cm.clone();
        let spec = physical_pod(&pod, &ctx(&binding, Some("t")))
            .unwrap()
            .spec
            .unwrap();
        let volumes = spec.volumes.unwrap();
        let renamed = &volumes[0].config_map.as_ref().unwrap().name;
        assert_eq!(renamed.len(), 63);
        assert_eq!(renamed, &physical_name(NS, &long_cm));
    }

    #[test]
    fn a_hostname_set_by_the_user_is_kept() {
        let binding = settings();
        let mut pod = full_pod();
        pod.spec.as_mut().unwrap().hostname = Some("db".into());
        let spec = physical_pod(&pod, &ctx(&binding, Some("t")))
            .unwrap()
            .spec
            .unwrap();
        assert_eq!(spec.hostname.as_deref(), Some("db"));
    }

    #[test]
    fn a_pod_without_physical_node_is_not_mapped() {
        let binding = settings();
        let context = MappingContext::new(&binding);
        assert_eq!(
            physical_pod(&full_pod(), &context),
            Err(MapError::NoPhysicalNode {
                namespace: NS.into(),
                name: "web-0".into()
            })
        );
    }

    fn daemonset_owner() -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: "DaemonSet".into(),
            name: "agent".into(),
            uid: "ds-uid".into(),
            controller: Some(true),
            ..OwnerReference::default()
        }
    }

    #[test]
    fn skip_decisions() {
        let vnode = virtual_node_name("c1", VNODE_PHYSICAL);
        let base = full_pod;
        let with = |f: &dyn Fn(&mut Pod)| {
            let mut pod = base();
            f(&mut pod);
            pod
        };
        let daemonset = |opt_in: Option<&str>| {
            with(&|pod: &mut Pod| {
                pod.metadata.owner_references = Some(vec![daemonset_owner()]);
                if let Some(value) = opt_in {
                    pod.metadata
                        .annotations
                        .as_mut()
                        .unwrap()
                        .insert(labels::RUNNING_DAEMONSET.into(), value.into());
                }
            })
        };
        // (case, pod, physical node known, runningDaemonsetByDefault, expected)
        type Case = (
            &'static str,
            Pod,
            Option<&'static str>,
            bool,
            Result<(), SkipReason>,
        );
        let table: Vec<Case> = vec![
            ("plain pod", base(), Some(VNODE_PHYSICAL), false, Ok(())),
            (
                "kube-system",
                with(&|p| p.metadata.namespace = Some("kube-system".into())),
                Some(VNODE_PHYSICAL),
                false,
                Err(SkipReason::SystemNamespace {
                    namespace: "kube-system".into(),
                }),
            ),
            (
                "kube-public",
                with(&|p| p.metadata.namespace = Some("kube-public".into())),
                Some(VNODE_PHYSICAL),
                false,
                Err(SkipReason::SystemNamespace {
                    namespace: "kube-public".into(),
                }),
            ),
            (
                "kube-node-lease",
                with(&|p| p.metadata.namespace = Some("kube-node-lease".into())),
                Some(VNODE_PHYSICAL),
                false,
                Err(SkipReason::SystemNamespace {
                    namespace: "kube-node-lease".into(),
                }),
            ),
            (
                "unscheduled",
                with(&|p| p.spec.as_mut().unwrap().node_name = None),
                Some(VNODE_PHYSICAL),
                false,
                Err(SkipReason::NotScheduled),
            ),
            (
                "node of no binding",
                base(),
                None,
                false,
                Err(SkipReason::NotOnThisBinding {
                    node: vnode.clone(),
                }),
            ),
            (
                "node of another physical node",
                base(),
                Some("worker-2"),
                false,
                Err(SkipReason::NotOnThisBinding {
                    node: vnode.clone(),
                }),
            ),
            (
                "real node",
                with(&|p| p.spec.as_mut().unwrap().node_name = Some(VNODE_PHYSICAL.into())),
                Some(VNODE_PHYSICAL),
                false,
                Err(SkipReason::NotOnThisBinding {
                    node: VNODE_PHYSICAL.into(),
                }),
            ),
            (
                "daemonset pod",
                daemonset(None),
                Some(VNODE_PHYSICAL),
                false,
                Err(SkipReason::DaemonSet),
            ),
            (
                "daemonset pod opted in by annotation",
                daemonset(Some("true")),
                Some(VNODE_PHYSICAL),
                false,
                Ok(()),
            ),
            (
                "daemonset pod with a false annotation",
                daemonset(Some("false")),
                Some(VNODE_PHYSICAL),
                false,
                Err(SkipReason::DaemonSet),
            ),
            (
                "daemonset pod, binding runs daemonsets",
                daemonset(None),
                Some(VNODE_PHYSICAL),
                true,
                Ok(()),
            ),
            (
                "being deleted",
                with(&|p| {
                    p.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
                }),
                Some(VNODE_PHYSICAL),
                false,
                Err(SkipReason::Deleting),
            ),
            (
                "failed after its physical pod was lost",
                with(&|p| p.status.as_mut().unwrap().phase = Some("Failed".into())),
                Some(VNODE_PHYSICAL),
                false,
                Err(SkipReason::Finished {
                    phase: "Failed".into(),
                }),
            ),
        ];
        for (case, pod, physical_node, run_daemonsets, want) in table {
            let mut binding = settings();
            binding.running_daemonset_by_default = run_daemonsets;
            let context = MappingContext {
                binding: &binding,
                physical_node_name: physical_node,
                token_secret_name: None,
            };
            assert_eq!(should_map(&pod, &context), want, "{case}");
        }
    }

    #[test]
    fn physical_node_of_virtual_nodes() {
        let binding = settings();
        let node = |name: &str, node_labels: &[(&str, &str)]| Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    node_labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            ..Node::default()
        };
        let ours = [
            (labels::MANAGED_BY, labels::MANAGED_BY_VALUE),
            (labels::CLUSTER_BINDING, "cb-a"),
            (labels::PHYSICAL_CLUSTER_ID, "c1"),
            (labels::PHYSICAL_NODE_NAME, "worker-1"),
        ];
        let other_binding = [
            (labels::MANAGED_BY, labels::MANAGED_BY_VALUE),
            (labels::CLUSTER_BINDING, "cb-b"),
            (labels::PHYSICAL_NODE_NAME, "worker-1"),
        ];
        let by_cluster_id = [
            (labels::MANAGED_BY, labels::MANAGED_BY_VALUE),
            (labels::PHYSICAL_CLUSTER_ID, "c1"),
            (labels::PHYSICAL_NODE_NAME, "worker-1"),
        ];
        let table = [
            ("ours", node("vnode-c1-worker-1", &ours), Some("worker-1")),
            (
                "other binding",
                node("vnode-c1-worker-1", &other_binding),
                None,
            ),
            (
                "by cluster id",
                node("vnode-c1-worker-1", &by_cluster_id),
                Some("worker-1"),
            ),
            (
                "name does not match",
                node("vnode-c1-worker-9", &ours),
                None,
            ),
            (
                "real node",
                node("worker-1", &[("kubernetes.io/hostname", "worker-1")]),
                None,
            ),
        ];
        for (case, vnode, want) in table {
            assert_eq!(physical_node_of(&vnode, &binding), want, "{case}");
        }
    }

    #[test]
    fn mapper_trait_for_pods() {
        let binding = settings();
        let pod = full_pod();
        let mapper = TopDownMapper;
        assert_eq!(
            ResourceMapper::<Pod>::physical_name(&mapper, &pod).unwrap(),
            phys("web-0")
        );
        let physical = mapper.to_physical(&pod, &ctx(&binding, Some("t"))).unwrap();
        assert_eq!(
            physical,
            physical_pod(&pod, &ctx(&binding, Some("t"))).unwrap()
        );
        // No physical status yet: nothing flows back.
        assert_eq!(mapper.status_to_virtual(&physical, &pod), None);
        let unnamed = Pod::default();
        assert!(matches!(
            ResourceMapper::<Pod>::physical_name(&mapper, &unnamed),
            Err(MapError::Unnamed { kind: "Pod", .. })
        ));
    }

    #[test]
    fn workload_of_table() {
        // (first owner kind and name, pod-template-hash label, expected type and name), as
        // upstream's `getWorkloadInfo` answers.
        type Owner<'a> = Option<(&'a str, &'a str)>;
        type Workload<'a> = (&'a str, Option<&'a str>);
        let cases: [(Owner, Option<&str>, Workload); 8] = [
            (None, None, ("pod", None)),
            (
                Some(("ReplicaSet", "web-7d9f8c6b5")),
                Some("7d9f8c6b5"),
                ("deployment", Some("web")),
            ),
            (
                Some(("ReplicaSet", "my-web-app-7d9f8c6b5")),
                Some("7d9f8c6b5"),
                ("deployment", Some("my-web-app")),
            ),
            // A ReplicaSet of no Deployment.
            (Some(("ReplicaSet", "rs")), None, ("replicaset", Some("rs"))),
            (
                Some(("ReplicaSet", "rs-abc")),
                Some("xyz"),
                ("replicaset", Some("rs-abc")),
            ),
            (
                Some(("StatefulSet", "db")),
                None,
                ("statefulset", Some("db")),
            ),
            (Some(("Job", "once")), None, ("job", Some("once"))),
            (Some(("MyKind", "x")), None, ("mykind", Some("x"))),
        ];
        for (owner, hash, (kind, name)) in cases {
            let mut meta = serde_json::json!({ "name": "p", "namespace": "ns" });
            if let Some((owner_kind, owner_name)) = owner {
                meta["ownerReferences"] = serde_json::json!([{ "apiVersion": "apps/v1",
                    "kind": owner_kind, "name": owner_name, "uid": "u" }]);
            }
            if let Some(hash) = hash {
                meta["labels"] = serde_json::json!({ "pod-template-hash": hash });
            }
            let pod: Pod = serde_json::from_value(serde_json::json!({ "metadata": meta })).unwrap();
            assert_eq!(
                workload_of(&pod),
                (kind.to_owned(), name.map(str::to_owned)),
                "{owner:?} {hash:?}"
            );
        }
    }
}
