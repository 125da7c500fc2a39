//! Bound virtual PersistentVolumeClaims and their PersistentVolumes -> physical copies.
//!
//! Only claims that are Bound in the computing cluster are mapped: the volume already
//! exists, so the worker gets a pre-bound pair (the PV first, then the claim naming it)
//! and never provisions anything.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, SecretReference,
};
use kube::api::ObjectMeta;

use super::{
    MapError, MappingContext, ResourceMapper, TopDownMapper, namespaced_identity,
    object_annotations, physical_labels,
};
use crate::naming::physical_name;

/// Phase of a bound claim or volume.
const BOUND: &str = "Bound";
/// Reclaim policy of physical volumes: deleting the copy must never delete the storage.
pub const RETAIN: &str = "Retain";
/// Binding and provisioning state that the computing cluster's controllers wrote; the
/// worker's controllers write their own.
const CONTROLLER_ANNOTATIONS: [&str; 6] = [
    "pv.kubernetes.io/bind-completed",
    "pv.kubernetes.io/bound-by-controller",
    "pv.kubernetes.io/migrated-to",
    "volume.kubernetes.io/selected-node",
    "volume.kubernetes.io/storage-provisioner",
    "volume.beta.kubernetes.io/storage-provisioner",
];

/// Name of the physical copy of a virtual claim.
pub fn pvc_physical_name(pvc: &PersistentVolumeClaim) -> Result<String, MapError> {
    let (namespace, name) = namespaced_identity(&pvc.metadata, "PersistentVolumeClaim")?;
    Ok(physical_name(namespace, name))
}

/// Name of the physical copy of a virtual volume (cluster-scoped: hashed as `/<name>`).
pub fn pv_physical_name(pv: &PersistentVolume) -> Result<String, MapError> {
    let (_, name) = namespaced_identity(&pv.metadata, "PersistentVolume")?;
    Ok(physical_name("", name))
}

fn annotations_without_controller_state(virtual_obj: &ObjectMeta) -> BTreeMap<String, String> {
    let mut out = object_annotations(virtual_obj);
    out.retain(|key, _| !CONTROLLER_ANNOTATIONS.contains(&key.as_str()));
    out
}

/// The physical copy of a Bound virtual claim: in the mount namespace, pre-bound to the
/// physical copy of its volume, with the same storage class as that copy (`""` rather than
/// none, so that the worker's default class is not applied), without data source or
/// selector (the volume already exists). [`MapError::NotBound`] otherwise.
pub fn physical_pvc(
    pvc: &PersistentVolumeClaim,
    ctx: &MappingContext<'_>,
) -> Result<PersistentVolumeClaim, MapError> {
    let (namespace, name) = namespaced_identity(&pvc.metadata, "PersistentVolumeClaim")?;
    let phase = pvc.status.as_ref().and_then(|s| s.phase.as_deref());
    let spec = pvc.spec.as_ref();
    let volume = spec
        .and_then(|s| s.volume_name.as_deref())
        .filter(|v| !v.is_empty());
    let (Some(BOUND), Some(volume)) = (phase, volume) else {
        return Err(MapError::NotBound {
            kind: "PersistentVolumeClaim",
            name: format!("{namespace}/{name}"),
        });
    };
    let mut spec = spec.cloned().unwrap_or_default();
    spec.volume_name = Some(physical_name("", volume));
    spec.storage_class_name = Some(spec.storage_class_name.unwrap_or_default());
    spec.data_source = None;
    spec.data_source_ref = None;
    spec.selector = None;
    Ok(PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(physical_name(namespace, name)),
            namespace: Some(ctx.binding.mount_namespace.clone()),
            labels: Some(physical_labels(&pvc.metadata)),
            annotations: Some(annotations_without_controller_state(&pvc.metadata)),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    })
}

/// The Secrets (virtual namespace and name) that a volume's CSI source reads, which must be
/// copied before the volume.
pub fn pv_secret_refs(pv: &PersistentVolume) -> Vec<(String, String)> {
    let Some(csi) = pv.spec.as_ref().and_then(|s| s.csi.as_ref()) else {
        return Vec::new();
    };
    [
        &csi.controller_publish_secret_ref,
        &csi.controller_expand_secret_ref,
        &csi.node_publish_secret_ref,
        &csi.node_stage_secret_ref,
        &csi.node_expand_secret_ref,
    ]
    .into_iter()
    .flatten()
    .filter_map(|r| Some((r.namespace.clone()?, r.name.clone()?)))
    .collect()
}

/// The physical copy of a virtual volume bound to a claim: cluster-scoped under its hashed
/// name, `claimRef` on the physical claim in the mount namespace, reclaim policy `Retain`,
/// CSI Secret references renamed to their copies in the mount namespace.
/// [`MapError::NotBound`] when the volume is not Bound to a claim.
pub fn physical_pv(
    pv: &PersistentVolume,
    ctx: &MappingContext<'_>,
) -> Result<PersistentVolume, MapError> {
    let (_, name) = namespaced_identity(&pv.metadata, "PersistentVolume")?;
    let not_bound = || MapError::NotBound {
        kind: "PersistentVolume",
        name: name.to_owned(),
    };
    if pv.status.as_ref().and_then(|s| s.phase.as_deref()) != Some(BOUND) {
        return Err(not_bound());
    }
    let mut spec = pv.spec.clone().unwrap_or_default();
    let claim = spec.claim_ref.as_ref().ok_or_else(not_bound)?;
    let (Some(claim_namespace), Some(claim_name)) = (&claim.namespace, &claim.name) else {
        return Err(not_bound());
    };
    let mount_namespace = &ctx.binding.mount_namespace;
    spec.claim_ref = Some(ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("PersistentVolumeClaim".to_owned()),
        namespace: Some(mount_namespace.clone()),
        name: Some(physical_name(claim_namespace, claim_name)),
        ..ObjectReference::default()
    });
    spec.persistent_volume_reclaim_policy = Some(RETAIN.to_owned());
    if let Some(csi) = spec.csi.as_mut() {
        for secret in [
            &mut csi.controller_publish_secret_ref,
            &mut csi.controller_expand_secret_ref,
            &mut csi.node_publish_secret_ref,
            &mut csi.node_stage_secret_ref,
            &mut csi.node_expand_secret_ref,
        ]
        .into_iter()
        .flatten()
        {
            rename_secret_ref(secret, mount_namespace);
        }
    }
    Ok(PersistentVolume {
        metadata: ObjectMeta {
            name: Some(physical_name("", name)),
            labels: Some(physical_labels(&pv.metadata)),
            annotations: Some(annotations_without_controller_state(&pv.metadata)),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    })
}

fn rename_secret_ref(secret: &mut SecretReference, mount_namespace: &str) {
    if let (Some(namespace), Some(name)) = (&secret.namespace, &secret.name) {
        secret.name = Some(physical_name(namespace, name));
        secret.namespace = Some(mount_namespace.to_owned());
    }
}

impl ResourceMapper<PersistentVolumeClaim> for TopDownMapper {
    type Status = ();

    fn physical_name(&self, virtual_obj: &PersistentVolumeClaim) -> Result<String, MapError> {
        pvc_physical_name(virtual_obj)
    }

    fn to_physical(
        &self,
        virtual_obj: &PersistentVolumeClaim,
        ctx: &MappingContext<'_>,
    ) -> Result<PersistentVolumeClaim, MapError> {
        physical_pvc(virtual_obj, ctx)
    }

    fn status_to_virtual(
        &self,
        _physical: &PersistentVolumeClaim,
        _virtual_obj: &PersistentVolumeClaim,
    ) -> Option<()> {
        None
    }
}

impl ResourceMapper<PersistentVolume> for TopDownMapper {
    type Status = ();

    fn physical_name(&self, virtual_obj: &PersistentVolume) -> Result<String, MapError> {
        pv_physical_name(virtual_obj)
    }

    fn to_physical(
        &self,
        virtual_obj: &PersistentVolume,
        ctx: &MappingContext<'_>,
    ) -> Result<PersistentVolume, MapError> {
        physical_pv(virtual_obj, ctx)
    }

    fn status_to_virtual(
        &self,
        _physical: &PersistentVolume,
        _virtual_obj: &PersistentVolume,
    ) -> Option<()> {
        None
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        CSIPersistentVolumeSource, PersistentVolumeClaimSpec, PersistentVolumeClaimStatus,
        PersistentVolumeSpec, PersistentVolumeStatus, TypedLocalObjectReference,
    };

    use super::super::test_support::settings;
    use super::super::{VIRTUAL_NAME, VIRTUAL_NAMESPACE};
    use super::*;
    use crate::labels;

    fn pvc(phase: &str, volume: Option<&str>, class: Option<&str>) -> PersistentVolumeClaim {
        PersistentVolumeClaim {
            metadata: ObjectMeta {
                namespace: Some("team-a".into()),
                name: Some("data-web-0".into()),
                uid: Some("pvc-uid".into()),
                annotations: Some(
                    [
                        ("pv.kubernetes.io/bind-completed", "yes"),
                        ("volume.kubernetes.io/storage-provisioner", "csi.example"),
                        ("owner", "team-a"),
                    ]
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(PersistentVolumeClaimSpec {
                access_modes: Some(vec!["ReadWriteOnce".into()]),
                volume_name: volume.map(str::to_owned),
                storage_class_name: class.map(str::to_owned),
                data_source: Some(TypedLocalObjectReference {
                    api_group: Some("snapshot.storage.k8s.io".into()),
                    kind: "VolumeSnapshot".into(),
                    name: "snap".into(),
                }),
                ..PersistentVolumeClaimSpec::default()
            }),
            status: Some(PersistentVolumeClaimStatus {
                phase: Some(phase.into()),
                ..PersistentVolumeClaimStatus::default()
            }),
        }
    }

    fn pv(phase: &str, claim: Option<(&str, &str)>) -> PersistentVolume {
        let secret = |name: &str| {
            Some(SecretReference {
                namespace: Some("storage".into()),
                name: Some(name.into()),
            })
        };
        PersistentVolume {
            metadata: ObjectMeta {
                name: Some("pvc-1234".into()),
                uid: Some("pv-uid".into()),
                labels: Some([("zone".to_owned(), "a".to_owned())].into()),
                annotations: Some(
                    [
                        ("pv.kubernetes.io/provisioned-by", "csi.example"),
                        ("pv.kubernetes.io/bound-by-controller", "yes"),
                    ]
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(PersistentVolumeSpec {
                persistent_volume_reclaim_policy: Some("Delete".into()),
                storage_class_name: Some("fast".into()),
                claim_ref: claim.map(|(ns, name)| ObjectReference {
                    kind: Some("PersistentVolumeClaim".into()),
                    namespace: Some(ns.into()),
                    name: Some(name.into()),
                    uid: Some("pvc-uid".into()),
                    resource_version: Some("7".into()),
                    ..ObjectReference::default()
                }),
                csi: Some(CSIPersistentVolumeSource {
                    driver: "csi.example".into(),
                    volume_handle: "vol-1".into(),
                    node_publish_secret_ref: secret("publish"),
                    node_stage_secret_ref: secret("stage"),
                    ..CSIPersistentVolumeSource::default()
                }),
                ..PersistentVolumeSpec::default()
            }),
            status: Some(PersistentVolumeStatus {
                phase: Some(phase.into()),
                ..PersistentVolumeStatus::default()
            }),
        }
    }

    #[test]
    fn bound_claims_are_mapped_and_others_refused() {
        let binding = settings();
        let ctx = MappingContext::new(&binding);
        let not_bound = Err(MapError::NotBound {
            kind: "PersistentVolumeClaim",
            name: "team-a/data-web-0".into(),
        });
        // (case, claim, expected storage class or the error)
        let table = [
            (
                "bound with class",
                pvc("Bound", Some("pvc-1234"), Some("fast")),
                Ok("fast"),
            ),
            (
                "bound without class",
                pvc("Bound", Some("pvc-1234"), None),
                Ok(""),
            ),
            (
                "pending",
                pvc("Pending", None, Some("fast")),
                not_bound.clone(),
            ),
            (
                "pending with a volume name",
                pvc("Pending", Some("pvc-1234"), None),
                not_bound.clone(),
            ),
            (
                "lost",
                pvc("Lost", Some("pvc-1234"), None),
                not_bound.clone(),
            ),
            (
                "bound but no volume name",
                pvc("Bound", None, None),
                not_bound,
            ),
        ];
        for (case, claim, want) in table {
            let got = physical_pvc(&claim, &ctx);
            let class = match want {
                Ok(class) => class,
                Err(err) => {
                    assert_eq!(got, Err(err), "{case}");
                    continue;
                }
            };
            let got = got.unwrap();
            assert_eq!(
                got.metadata.name,
                Some(physical_name("team-a", "data-web-0")),
                "{case}"
            );
            assert_eq!(got.metadata.namespace.as_deref(), Some("kubeocean-worker"));
            assert_eq!(
                got.metadata.labels.as_ref().unwrap()[labels::MANAGED_BY],
                labels::MANAGED_BY_VALUE
            );
            let annotations = got.metadata.annotations.as_ref().unwrap();
            assert_eq!(annotations["owner"], "team-a");
            assert_eq!(annotations[VIRTUAL_NAME], "data-web-0");
            assert!(!annotations.contains_key("pv.kubernetes.io/bind-completed"));
            assert!(!annotations.contains_key("volume.kubernetes.io/storage-provisioner"));
            let spec = got.spec.unwrap();
            assert_eq!(
                spec.volume_name,
                Some(physical_name("", "pvc-1234")),
                "{case}"
            );
            assert_eq!(spec.storage_class_name.as_deref(), Some(class), "{case}");
            assert_eq!(spec.data_source, None);
            assert_eq!(spec.access_modes, Some(vec!["ReadWriteOnce".to_owned()]));
            assert!(got.status.is_none());
        }
    }

    #[test]
    fn bound_volumes_point_at_the_physical_claim() {
        let binding = settings();
        let ctx = MappingContext::new(&binding);
        let virtual_pv = pv("Bound", Some(("team-a", "data-web-0")));
        let got = physical_pv(&virtual_pv, &ctx).unwrap();
        assert_eq!(got.metadata.name, Some(physical_name("", "pvc-1234")));
        assert_eq!(got.metadata.namespace, None, "volumes are cluster-scoped");
        assert_eq!(
            pv_physical_name(&virtual_pv).unwrap(),
            physical_name("", "pvc-1234")
        );
        let annotations = got.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations[VIRTUAL_NAMESPACE], "");
        assert_eq!(annotations[VIRTUAL_NAME], "pvc-1234");
        assert_eq!(
            annotations["pv.kubernetes.io/provisioned-by"],
            "csi.example"
        );
        assert!(!annotations.contains_key("pv.kubernetes.io/bound-by-controller"));
        assert_eq!(got.metadata.labels.as_ref().unwrap()["zone"], "a");
        let spec = got.spec.unwrap();
        assert_eq!(
            spec.claim_ref,
            Some(ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("PersistentVolumeClaim".into()),
                namespace: Some("kubeocean-worker".into()),
                name: Some(physical_name("team-a", "data-web-0")),
                ..ObjectReference::default()
            })
        );
        assert_eq!(
            spec.persistent_volume_reclaim_policy.as_deref(),
            Some(RETAIN)
        );
        assert_eq!(spec.storage_class_name.as_deref(), Some("fast"));
        let csi = spec.csi.unwrap();
        assert_eq!(csi.volume_handle, "vol-1");
        assert_eq!(
            csi.node_publish_secret_ref,
            Some(SecretReference {
                namespace: Some("kubeocean-worker".into()),
                name: Some(physical_name("storage", "publish")),
            })
        );
        assert_eq!(
            csi.node_stage_secret_ref.unwrap().name,
            Some(physical_name("storage", "stage"))
        );
        assert!(got.status.is_none());
        assert_eq!(
            pv_secret_refs(&virtual_pv),
            vec![
                ("storage".to_owned(), "publish".to_owned()),
                ("storage".to_owned(), "stage".to_owned())
            ]
        );

        // The claim's volumeName and the volume's name agree.
        let claim = physical_pvc(&pvc("Bound", Some("pvc-1234"), Some("fast")), &ctx).unwrap();
        assert_eq!(claim.spec.unwrap().volume_name, got.metadata.name);
    }

    #[test]
    fn unbound_volumes_are_refused() {
        let binding = settings();
        let ctx = MappingContext::new(&binding);
        let not_bound = MapError::NotBound {
            kind: "PersistentVolume",
            name: "pvc-1234".into(),
        };
        for (case, volume) in [
            ("available", pv("Available", None)),
            (
                "pre-bound but available",
                pv("Available", Some(("team-a", "data"))),
            ),
            ("bound without claimRef", pv("Bound", None)),
            ("released", pv("Released", Some(("team-a", "data")))),
        ] {
            assert_eq!(physical_pv(&volume, &ctx), Err(not_bound.clone()), "{case}");
        }
        let mapper = TopDownMapper;
        assert_eq!(
            mapper.to_physical(&pv("Available", None), &ctx),
            Err(not_bound)
        );
    }
}
