//! The top-down mappers: how a virtual object of the computing cluster becomes its
//! physical copy in the worker cluster, and how a physical pod's status flows back up.
//!
//! Everything here is a plain function of its inputs (no I/O, no clock, no session):
//! reconcilers read both clusters, call these mappers and write the difference.
//! - [`ResourceMapper`], implemented by [`TopDownMapper`] for Pod, ConfigMap, Secret,
//!   PersistentVolumeClaim and PersistentVolume;
//! - [`pod`]: which virtual pods are mapped ([`should_map`]), the physical pod, and what it
//!   needs copied first ([`dependencies`]);
//! - [`config`]: ConfigMap and Secret copies;
//! - [`volume`]: PersistentVolumeClaim and PersistentVolume copies (bound claims only);
//! - [`status`]: physical pod status -> virtual pod status, and `PhysicalPodLost`;
//! - [`token`]: the worker Secret that carries a pod's service-account tokens;
//! - [`network`]: the computing cluster's DNS and API server for mapped pods;
//! - [`service`]: Services of `serviceNamespaces` and their EndpointSlices in the worker;
//! - [`event`]: worker Events about physical pods and claims -> Events about the virtual
//!   objects, counted;
//! - [`patch`]: the JSON merge patch between two versions of an object;
//! - [`ownership`]: whether an existing physical object belongs to a given virtual object,
//!   so that a name collision is reported instead of overwritten.

pub mod config;
pub mod ephemeral;
pub mod event;
pub mod network;
pub mod patch;
pub mod pod;
pub mod scheduling;
pub mod service;
pub mod status;
pub mod token;
pub mod volume;

use std::collections::BTreeMap;

use kube::api::ObjectMeta;

use crate::crd::ClusterBinding;
use crate::labels;

pub use config::{
    CopyUpdate, config_map_physical_name, config_map_update, physical_config_map, physical_secret,
    secret_physical_name, secret_update,
};
pub use ephemeral::ephemeral_containers_update;
pub use network::{
    ApiServerAddress, InClusterNetwork, ServiceAddressError, api_server_address,
    apply_in_cluster_network, service_address,
};
pub use pod::{
    Dependencies, Need, SkipReason, dependencies, physical_ephemeral_containers, physical_node_of,
    physical_pod, physical_pod_name, physical_pod_reference, physical_pod_update, reference_patch,
    should_map,
};
pub use service::{
    NotReflected, physical_endpoint_slice, physical_service, physical_service_update,
    reflected_service_of, service_physical_name, slice_service,
};
pub use status::{gate_readiness, lost_pod_status, virtual_pod_status};
pub use token::{
    TOKEN_REFRESH_AT, TokenProjection, TokenRequestSpec, token_refresh_at, token_refresh_due,
    token_secret, token_secret_name,
};
pub use volume::{physical_pv, physical_pvc, pv_physical_name, pv_secret_refs, pvc_physical_name};

/// Annotation on physical pods: name of the virtual node their virtual pod is bound to
/// (read by the rewritten downward API `spec.nodeName` references).
pub const VIRTUAL_NODE_NAME: &str = "kubeocean.io/virtual-node-name";
/// Annotation on physical ConfigMaps, Secrets, PVCs and PVs: namespace of the virtual object
/// (empty for PersistentVolumes).
pub const VIRTUAL_NAMESPACE: &str = "kubeocean.io/virtual-namespace";
/// Annotation on physical ConfigMaps, Secrets, PVCs and PVs: name of the virtual object.
pub const VIRTUAL_NAME: &str = "kubeocean.io/virtual-name";
/// Annotation on physical ConfigMaps, Secrets, PVCs and PVs: UID of the virtual object
/// **(ours)**; copies written without it are recognised by namespace and name.
pub const VIRTUAL_UID: &str = "kubeocean.io/virtual-uid";
pub use crate::labels::{PHYSICAL_NAME, PHYSICAL_NAMESPACE};

/// Namespaces whose pods are never mapped.
pub const SYSTEM_NAMESPACES: [&str; 3] = ["kube-system", "kube-public", "kube-node-lease"];

/// Annotations of a virtual object that describe its mapping in this computing cluster and
/// are therefore never copied to the physical object.
const NOT_COPIED_ANNOTATIONS: [&str; 14] = [
    labels::EXPECTED_METADATA,
    labels::PHYSICAL_POD_NAMESPACE,
    labels::PHYSICAL_POD_NAME,
    labels::PHYSICAL_POD_UID,
    labels::VIRTUAL_POD_NAMESPACE,
    labels::VIRTUAL_POD_NAME,
    labels::VIRTUAL_POD_UID,
    labels::LAST_SYNC_TIME,
    VIRTUAL_NODE_NAME,
    VIRTUAL_NAMESPACE,
    VIRTUAL_NAME,
    VIRTUAL_UID,
    PHYSICAL_NAME,
    PHYSICAL_NAMESPACE,
];

/// What a binding decides about mapping, read once from its ClusterBinding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindingSettings {
    /// Name of the ClusterBinding.
    pub name: String,
    /// `clusterID` of the worker cluster.
    pub cluster_id: String,
    /// Worker namespace that receives every mapped object.
    pub mount_namespace: String,
    /// Priority class of physical pods.
    pub pod_priority_class_name: String,
    /// Pin physical pods with `spec.nodeName` instead of node affinity.
    pub direct_scheduling: bool,
    /// Map DaemonSet pods even without the opt-in annotation.
    pub running_daemonset_by_default: bool,
}

impl BindingSettings {
    /// The settings of `binding`; fails when it has no name or no `mountNamespace`.
    pub fn from_binding(binding: &ClusterBinding) -> Result<Self, MapError> {
        let name = binding.metadata.name.clone().unwrap_or_default();
        if name.is_empty() {
            return Err(MapError::UnnamedBinding);
        }
        let mount_namespace = match binding.spec.mount_namespace.as_deref() {
            Some(ns) if !ns.is_empty() => ns.to_owned(),
            _ => return Err(MapError::NoMountNamespace { binding: name }),
        };
        Ok(BindingSettings {
            cluster_id: binding.spec.cluster_id.clone(),
            mount_namespace,
            pod_priority_class_name: binding.spec.pod_priority_class_name().to_owned(),
            direct_scheduling: binding.spec.direct_scheduling,
            running_daemonset_by_default: binding.spec.running_daemonset_by_default,
            name,
        })
    }
}

/// Everything a mapping needs besides the virtual object itself.
#[derive(Clone, Copy, Debug)]
pub struct MappingContext<'a> {
    /// The binding the syncer serves.
    pub binding: &'a BindingSettings,
    /// Physical node behind the virtual node the pod is bound to, when it is one of this
    /// binding's virtual nodes (see [`physical_node_of`]). Only pods use it.
    pub physical_node_name: Option<&'a str>,
    /// Name of the worker Secret (in the mount namespace) holding the service-account token
    /// requested for the pod (see [`token_secret`]). Only pods that project a
    /// service-account token need it.
    pub token_secret_name: Option<&'a str>,
}

impl<'a> MappingContext<'a> {
    /// A context for objects other than pods (no node, no token).
    pub fn new(binding: &'a BindingSettings) -> Self {
        MappingContext {
            binding,
            physical_node_name: None,
            token_secret_name: None,
        }
    }
}

/// Why a virtual object could not be mapped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    /// The ClusterBinding has no name.
    #[error("the ClusterBinding has no name")]
    UnnamedBinding,
    /// The ClusterBinding has no `mountNamespace`.
    #[error("ClusterBinding {binding} has no mountNamespace")]
    NoMountNamespace {
        /// Binding name.
        binding: String,
    },
    /// The virtual object has no name.
    #[error("virtual {kind} in namespace {namespace:?} has no name")]
    Unnamed {
        /// Object kind.
        kind: &'static str,
        /// Its namespace.
        namespace: String,
    },
    /// The pod is not bound to a virtual node of this binding.
    #[error("virtual pod {namespace}/{name} has no physical node to run on")]
    NoPhysicalNode {
        /// Pod namespace.
        namespace: String,
        /// Pod name.
        name: String,
    },
    /// The pod projects a service-account token but no token Secret was given.
    #[error(
        "virtual pod {namespace}/{name} projects a service-account token but its token Secret is not known yet"
    )]
    NoTokenSecret {
        /// Pod namespace.
        namespace: String,
        /// Pod name.
        name: String,
    },
    /// A PersistentVolumeClaim or PersistentVolume is not bound, so it is not mapped.
    #[error("virtual {kind} {name} is not bound")]
    NotBound {
        /// `PersistentVolumeClaim` or `PersistentVolume`.
        kind: &'static str,
        /// `namespace/name` of a claim, name of a volume.
        name: String,
    },
}

/// Maps one kind of virtual object to its physical copy.
pub trait ResourceMapper<K> {
    /// What flows back up from the physical object (`()` when nothing does).
    type Status;

    /// Name of the physical copy of `virtual_obj`.
    fn physical_name(&self, virtual_obj: &K) -> Result<String, MapError>;

    /// The physical object to create (or to compare with the existing one).
    fn to_physical(&self, virtual_obj: &K, ctx: &MappingContext<'_>) -> Result<K, MapError>;

    /// What the virtual object's status should become given its physical copy; `None` for
    /// kinds whose status does not flow back up.
    fn status_to_virtual(&self, physical: &K, virtual_obj: &K) -> Option<Self::Status>;
}

/// The top-down mapper of every kind Kubeocean copies to workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TopDownMapper;

/// Whether an existing physical object belongs to a virtual object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// Its back-reference names the virtual object: safe to update.
    Ours,
    /// Made by Kubeocean for another virtual object (possibly an earlier object of the same
    /// name, whose UID differs): a conflict unless that owner is gone.
    Foreign(BackReference),
    /// Not made by Kubeocean: a conflict, never overwritten.
    Unowned,
}

/// The virtual object a physical object says it belongs to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackReference {
    /// Virtual namespace (empty for cluster-scoped objects).
    pub namespace: Option<String>,
    /// Virtual name.
    pub name: Option<String>,
    /// Virtual UID.
    pub uid: Option<String>,
}

/// The back-reference recorded on a physical object: pod keys first, then the keys of other
/// kinds.
pub fn back_reference(physical: &ObjectMeta) -> BackReference {
    let get = |pod_key: &str, other_key: &str| {
        let annotations = physical.annotations.as_ref()?;
        annotations
            .get(pod_key)
            .or_else(|| annotations.get(other_key))
            .cloned()
    };
    BackReference {
        namespace: get(labels::VIRTUAL_POD_NAMESPACE, VIRTUAL_NAMESPACE),
        name: get(labels::VIRTUAL_POD_NAME, VIRTUAL_NAME),
        uid: get(labels::VIRTUAL_POD_UID, VIRTUAL_UID),
    }
}

/// Whether the existing physical object `physical` belongs to the virtual object whose
/// metadata is `virtual_obj`. A recorded UID decides; a copy without one (written by an
/// older syncer) is ours when it carries our label and names the same namespace and name.
pub fn ownership(physical: &ObjectMeta, virtual_obj: &ObjectMeta) -> Ownership {
    let recorded = back_reference(physical);
    let managed = is_managed(physical);
    if !managed && recorded == BackReference::default() {
        return Ownership::Unowned;
    }
    let same_identity = recorded.namespace.as_deref().unwrap_or_default()
        == virtual_obj.namespace.as_deref().unwrap_or_default()
        && recorded.name.is_some()
        && recorded.name == virtual_obj.name;
    let ours = match (&recorded.uid, &virtual_obj.uid) {
        (Some(recorded_uid), Some(uid)) => recorded_uid == uid && !uid.is_empty(),
        (None, _) => managed && same_identity,
        (Some(_), None) => false,
    };
    if ours {
        Ownership::Ours
    } else {
        Ownership::Foreign(recorded)
    }
}

pub use crate::labels::is_managed;

/// Whether the physical object `physical` is a copy of the virtual `namespace/name` (an
/// earlier object of that name included): labelled ours and pointing back at it.
pub fn is_copy_of(physical: &ObjectMeta, namespace: &str, name: &str) -> bool {
    let annotations = physical.annotations.as_ref();
    let get = |key: &str| annotations.and_then(|a| a.get(key)).map(String::as_str);
    is_managed(physical)
        && get(VIRTUAL_NAMESPACE) == Some(namespace)
        && get(VIRTUAL_NAME) == Some(name)
}

/// Labels of a physical copy: the virtual labels plus `kubeocean.io/managed-by=kubeocean`.
pub fn physical_labels(virtual_obj: &ObjectMeta) -> BTreeMap<String, String> {
    let mut out = virtual_obj.labels.clone().unwrap_or_default();
    out.insert(
        labels::MANAGED_BY.to_owned(),
        labels::MANAGED_BY_VALUE.to_owned(),
    );
    out
}

/// The virtual annotations that are copied to a physical object: all but the mapping
/// bookkeeping of either side.
fn copied_annotations(virtual_obj: &ObjectMeta) -> BTreeMap<String, String> {
    virtual_obj
        .annotations
        .iter()
        .flatten()
        .filter(|(key, _)| !NOT_COPIED_ANNOTATIONS.contains(&key.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Whether two versions of a virtual object have the same annotations as far as their
/// physical object is concerned (the mapping bookkeeping aside), without copying them.
pub fn same_copied_annotations(a: &ObjectMeta, b: &ObjectMeta) -> bool {
    fn copied(meta: &ObjectMeta) -> impl Iterator<Item = (&String, &String)> {
        meta.annotations
            .iter()
            .flatten()
            .filter(|(key, _)| !NOT_COPIED_ANNOTATIONS.contains(&key.as_str()))
    }
    copied(a).eq(copied(b))
}

/// Annotations of a physical ConfigMap, Secret, PVC or PV: the copied virtual ones plus the
/// back-reference (namespace, name, UID).
fn object_annotations(virtual_obj: &ObjectMeta) -> BTreeMap<String, String> {
    let mut out = copied_annotations(virtual_obj);
    out.insert(
        VIRTUAL_NAMESPACE.to_owned(),
        virtual_obj.namespace.clone().unwrap_or_default(),
    );
    out.insert(
        VIRTUAL_NAME.to_owned(),
        virtual_obj.name.clone().unwrap_or_default(),
    );
    if let Some(uid) = virtual_obj.uid.as_ref().filter(|u| !u.is_empty()) {
        out.insert(VIRTUAL_UID.to_owned(), uid.clone());
    }
    out
}

/// Namespace and name of a namespaced virtual object, or [`MapError::Unnamed`].
fn namespaced_identity<'m>(
    meta: &'m ObjectMeta,
    kind: &'static str,
) -> Result<(&'m str, &'m str), MapError> {
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    match meta.name.as_deref() {
        Some(name) if !name.is_empty() => Ok((namespace, name)),
        _ => Err(MapError::Unnamed {
            kind,
            namespace: namespace.to_owned(),
        }),
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::BindingSettings;

    /// A binding as most tests use it.
    pub fn settings() -> BindingSettings {
        BindingSettings {
            name: "cb-a".into(),
            cluster_id: "c1".into(),
            mount_namespace: "kubeocean-worker".into(),
            pod_priority_class_name: "kubeocean-default".into(),
            direct_scheduling: false,
            running_daemonset_by_default: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::ClusterBindingSpec;

    fn meta(
        namespace: &str,
        name: &str,
        uid: Option<&str>,
        labels: &[(&str, &str)],
        annotations: &[(&str, &str)],
    ) -> ObjectMeta {
        let map = |pairs: &[(&str, &str)]| {
            (!pairs.is_empty()).then(|| {
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            })
        };
        ObjectMeta {
            namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
            name: Some(name.to_owned()),
            uid: uid.map(str::to_owned),
            labels: map(labels),
            annotations: map(annotations),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn copied_annotations_compare_without_the_mapping_record() {
        let with = |annotations: &[(&str, &str)]| meta("ns", "p", None, &[], annotations);
        let cases = [
            ("none", with(&[]), with(&[]), true),
            ("same", with(&[("a", "1")]), with(&[("a", "1")]), true),
            (
                "record added",
                with(&[("a", "1")]),
                with(&[("a", "1"), (labels::PHYSICAL_POD_UID, "u")]),
                true,
            ),
            (
                "record only",
                with(&[]),
                with(&[(labels::PHYSICAL_POD_NAME, "x")]),
                true,
            ),
            (
                "value changed",
                with(&[("a", "1")]),
                with(&[("a", "2")]),
                false,
            ),
            (
                "user annotation added",
                with(&[]),
                with(&[("a", "1")]),
                false,
            ),
        ];
        for (case, a, b, want) in cases {
            assert_eq!(same_copied_annotations(&a, &b), want, "{case}");
            assert_eq!(same_copied_annotations(&b, &a), want, "{case} (reversed)");
        }
    }

    #[test]
    fn ownership_cases() {
        let managed = [(labels::MANAGED_BY, labels::MANAGED_BY_VALUE)];
        let virtual_pod = meta("default", "web-0", Some("uid-1"), &[], &[]);
        let virtual_cm = meta("default", "cfg", Some("uid-cm"), &[], &[]);
        let virtual_pv = meta("", "pv-1", Some("uid-pv"), &[], &[]);
        fn pod_ref(uid: &str) -> [(&'static str, &str); 3] {
            [
                (labels::VIRTUAL_POD_NAMESPACE, "default"),
                (labels::VIRTUAL_POD_NAME, "web-0"),
                (labels::VIRTUAL_POD_UID, uid),
            ]
        }
        let foreign_pod = BackReference {
            namespace: Some("default".into()),
            name: Some("web-0".into()),
            uid: Some("uid-old".into()),
        };
        // (case, existing physical metadata, virtual metadata, expected)
        let table: Vec<(&str, ObjectMeta, &ObjectMeta, Ownership)> = vec![
            (
                "pod with matching uid",
                meta("w", "p", None, &managed, &pod_ref("uid-1")),
                &virtual_pod,
                Ownership::Ours,
            ),
            (
                "pod of an earlier virtual pod with the same name",
                meta("w", "p", None, &managed, &pod_ref("uid-old")),
                &virtual_pod,
                Ownership::Foreign(foreign_pod),
            ),
            (
                "user's own pod",
                meta("w", "p", None, &[("app", "x")], &[]),
                &virtual_pod,
                Ownership::Unowned,
            ),
            (
                "configmap with uid",
                meta(
                    "w",
                    "c",
                    None,
                    &managed,
                    &[
                        (VIRTUAL_NAMESPACE, "default"),
                        (VIRTUAL_NAME, "cfg"),
                        (VIRTUAL_UID, "uid-cm"),
                    ],
                ),
                &virtual_cm,
                Ownership::Ours,
            ),
            (
                "configmap copied without uid, same identity",
                meta(
                    "w",
                    "c",
                    None,
                    &managed,
                    &[(VIRTUAL_NAMESPACE, "default"), (VIRTUAL_NAME, "cfg")],
                ),
                &virtual_cm,
                Ownership::Ours,
            ),
            (
                "configmap of another namespace",
                meta(
                    "w",
                    "c",
                    None,
                    &managed,
                    &[(VIRTUAL_NAMESPACE, "other"), (VIRTUAL_NAME, "cfg")],
                ),
                &virtual_cm,
                Ownership::Foreign(BackReference {
                    namespace: Some("other".into()),
                    name: Some("cfg".into()),
                    uid: None,
                }),
            ),
            (
                "labelled ours but no back-reference",
                meta("w", "c", None, &managed, &[]),
                &virtual_cm,
                Ownership::Foreign(BackReference::default()),
            ),
            (
                "back-reference without our label and without uid",
                meta(
                    "w",
                    "c",
                    None,
                    &[],
                    &[(VIRTUAL_NAMESPACE, "default"), (VIRTUAL_NAME, "cfg")],
                ),
                &virtual_cm,
                Ownership::Foreign(BackReference {
                    namespace: Some("default".into()),
                    name: Some("cfg".into()),
                    uid: None,
                }),
            ),
            (
                "cluster-scoped volume",
                meta(
                    "",
                    "pv-x",
                    None,
                    &managed,
                    &[
                        (VIRTUAL_NAMESPACE, ""),
                        (VIRTUAL_NAME, "pv-1"),
                        (VIRTUAL_UID, "uid-pv"),
                    ],
                ),
                &virtual_pv,
                Ownership::Ours,
            ),
        ];
        for (case, physical, virtual_obj, want) in table {
            assert_eq!(ownership(&physical, virtual_obj), want, "{case}");
        }
    }

    #[test]
    fn binding_settings_from_cluster_binding() {
        let mut cb = ClusterBinding::new(
            "cb-a",
            ClusterBindingSpec {
                cluster_id: "c1".into(),
                mount_namespace: Some("worker-ns".into()),
                direct_scheduling: true,
                ..ClusterBindingSpec::default()
            },
        );
        let got = BindingSettings::from_binding(&cb).unwrap();
        assert_eq!(got.mount_namespace, "worker-ns");
        assert_eq!(got.pod_priority_class_name, "kubeocean-default");
        assert!(got.direct_scheduling);
        assert!(!got.running_daemonset_by_default);

        cb.spec.mount_namespace = Some(String::new());
        assert_eq!(
            BindingSettings::from_binding(&cb),
            Err(MapError::NoMountNamespace {
                binding: "cb-a".into()
            })
        );
    }
}
