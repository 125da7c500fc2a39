//! Virtual ConfigMaps and Secrets -> their physical copies in the mount namespace.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::ObjectMeta;

use super::{
    MapError, MappingContext, ResourceMapper, TopDownMapper, namespaced_identity,
    object_annotations, physical_labels,
};
use crate::naming::physical_name;

/// Secret type of service-account token Secrets, which the worker's token controller would
/// manage (and delete, the service account not existing there).
pub const SERVICE_ACCOUNT_TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
/// Type that replaces [`SERVICE_ACCOUNT_TOKEN_TYPE`] in physical copies.
pub const OPAQUE_TYPE: &str = "Opaque";
/// Annotations that tie a service-account token Secret to its service account.
const SERVICE_ACCOUNT_ANNOTATIONS: [&str; 2] = [
    "kubernetes.io/service-account.name",
    "kubernetes.io/service-account.uid",
];

/// Name of the physical copy of a virtual ConfigMap.
pub fn config_map_physical_name(config_map: &ConfigMap) -> Result<String, MapError> {
    let (namespace, name) = namespaced_identity(&config_map.metadata, "ConfigMap")?;
    Ok(physical_name(namespace, name))
}

/// Name of the physical copy of a virtual Secret.
pub fn secret_physical_name(secret: &Secret) -> Result<String, MapError> {
    let (namespace, name) = namespaced_identity(&secret.metadata, "Secret")?;
    Ok(physical_name(namespace, name))
}

/// Metadata of a physical ConfigMap or Secret copy.
fn copy_metadata(virtual_obj: &ObjectMeta, name: String, ctx: &MappingContext<'_>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(ctx.binding.mount_namespace.clone()),
        labels: Some(physical_labels(virtual_obj)),
        annotations: Some(object_annotations(virtual_obj)),
        ..ObjectMeta::default()
    }
}

/// The physical copy of a virtual ConfigMap: data, binary data and immutability copied.
pub fn physical_config_map(
    config_map: &ConfigMap,
    ctx: &MappingContext<'_>,
) -> Result<ConfigMap, MapError> {
    let name = config_map_physical_name(config_map)?;
    Ok(ConfigMap {
        metadata: copy_metadata(&config_map.metadata, name, ctx),
        data: config_map.data.clone(),
        binary_data: config_map.binary_data.clone(),
        immutable: config_map.immutable,
    })
}

/// The physical copy of a virtual Secret: data, type and immutability copied, except that a
/// service-account token Secret becomes `Opaque` (without its service-account annotations).
pub fn physical_secret(secret: &Secret, ctx: &MappingContext<'_>) -> Result<Secret, MapError> {
    let name = secret_physical_name(secret)?;
    let mut metadata = copy_metadata(&secret.metadata, name, ctx);
    let mut type_ = secret.type_.clone();
    if type_.as_deref() == Some(SERVICE_ACCOUNT_TOKEN_TYPE) {
        type_ = Some(OPAQUE_TYPE.to_owned());
        if let Some(annotations) = metadata.annotations.as_mut() {
            annotations.retain(|key, _| !SERVICE_ACCOUNT_ANNOTATIONS.contains(&key.as_str()));
        }
    }
    Ok(Secret {
        metadata,
        data: secret.data.clone(),
        string_data: secret.string_data.clone(),
        type_,
        immutable: secret.immutable,
    })
}

/// What to do to an existing physical copy so that it matches the desired one.
#[derive(Clone, Debug, PartialEq)]
pub enum CopyUpdate<K> {
    /// It already matches.
    InStep,
    /// Replace it with this object (the existing one with the desired content; it keeps the
    /// existing `resourceVersion`, so a concurrent change makes the write fail instead of
    /// being lost).
    Update(K),
    /// It cannot be changed in place (immutable, or a different Secret type): delete it and
    /// create the desired one.
    Recreate,
}

/// How to bring the existing physical ConfigMap in step with `desired` (from
/// [`physical_config_map`]).
pub fn config_map_update(desired: &ConfigMap, existing: &ConfigMap) -> CopyUpdate<ConfigMap> {
    let mut updated = existing.clone();
    updated.metadata.labels = desired.metadata.labels.clone();
    updated.metadata.annotations = desired.metadata.annotations.clone();
    updated.data = desired.data.clone();
    updated.binary_data = desired.binary_data.clone();
    updated.immutable = desired.immutable;
    let content_changed = updated.data != existing.data
        || updated.binary_data != existing.binary_data
        || updated.immutable != existing.immutable;
    decide(
        updated,
        existing,
        existing.immutable == Some(true) && content_changed,
    )
}

/// How to bring the existing physical Secret in step with `desired` (from
/// [`physical_secret`]).
pub fn secret_update(desired: &Secret, existing: &Secret) -> CopyUpdate<Secret> {
    let mut updated = existing.clone();
    updated.metadata.labels = desired.metadata.labels.clone();
    updated.metadata.annotations = desired.metadata.annotations.clone();
    updated.data = desired.data.clone();
    updated.string_data = desired.string_data.clone();
    updated.immutable = desired.immutable;
    let content_changed = updated.data != existing.data || updated.immutable != existing.immutable;
    let type_changed = desired.type_.as_deref().unwrap_or(OPAQUE_TYPE)
        != existing.type_.as_deref().unwrap_or(OPAQUE_TYPE);
    decide(
        updated,
        existing,
        type_changed || (existing.immutable == Some(true) && content_changed),
    )
}

fn decide<K: PartialEq>(updated: K, existing: &K, recreate: bool) -> CopyUpdate<K> {
    if recreate {
        CopyUpdate::Recreate
    } else if updated == *existing {
        CopyUpdate::InStep
    } else {
        CopyUpdate::Update(updated)
    }
}

impl ResourceMapper<ConfigMap> for TopDownMapper {
    type Status = ();

    fn physical_name(&self, virtual_obj: &ConfigMap) -> Result<String, MapError> {
        config_map_physical_name(virtual_obj)
    }

    fn to_physical(
        &self,
        virtual_obj: &ConfigMap,
        ctx: &MappingContext<'_>,
    ) -> Result<ConfigMap, MapError> {
        physical_config_map(virtual_obj, ctx)
    }

    fn status_to_virtual(&self, _physical: &ConfigMap, _virtual_obj: &ConfigMap) -> Option<()> {
        None
    }
}

impl ResourceMapper<Secret> for TopDownMapper {
    type Status = ();

    fn physical_name(&self, virtual_obj: &Secret) -> Result<String, MapError> {
        secret_physical_name(virtual_obj)
    }

    fn to_physical(
        &self,
        virtual_obj: &Secret,
        ctx: &MappingContext<'_>,
    ) -> Result<Secret, MapError> {
        physical_secret(virtual_obj, ctx)
    }

    fn status_to_virtual(&self, _physical: &Secret, _virtual_obj: &Secret) -> Option<()> {
        None
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::ByteString;

    use super::super::test_support::settings;
    use super::super::{VIRTUAL_NAME, VIRTUAL_NAMESPACE, VIRTUAL_UID};
    use super::*;
    use crate::labels;

    fn meta(name: &str, annotations: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            namespace: Some("team-a".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("42".into()),
            labels: Some([("app".to_owned(), "web".to_owned())].into()),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        }
    }

    fn check_metadata(got: &ObjectMeta, virtual_name: &str) {
        assert_eq!(
            got.name.as_deref(),
            Some(physical_name("team-a", virtual_name).as_str())
        );
        assert_eq!(got.namespace.as_deref(), Some("kubeocean-worker"));
        assert_eq!(got.resource_version, None);
        assert_eq!(got.uid, None);
        let got_labels = got.labels.as_ref().unwrap();
        assert_eq!(got_labels["app"], "web");
        assert_eq!(got_labels[labels::MANAGED_BY], labels::MANAGED_BY_VALUE);
        let annotations = got.annotations.as_ref().unwrap();
        assert_eq!(annotations[VIRTUAL_NAMESPACE], "team-a");
        assert_eq!(annotations[VIRTUAL_NAME], virtual_name);
        assert_eq!(annotations[VIRTUAL_UID], format!("uid-{virtual_name}"));
    }

    #[test]
    fn config_map_copy() {
        let binding = settings();
        let ctx = MappingContext::new(&binding);
        let virtual_cm = ConfigMap {
            metadata: meta(
                "settings",
                &[("note", "kept"), (super::super::PHYSICAL_NAME, "x")],
            ),
            data: Some(BTreeMap::from([("a".to_owned(), "1".to_owned())])),
            binary_data: Some(BTreeMap::from([(
                "b".to_owned(),
                ByteString(vec![0, 1, 2]),
            )])),
            immutable: Some(true),
        };
        let got = physical_config_map(&virtual_cm, &ctx).unwrap();
        check_metadata(&got.metadata, "settings");
        let annotations = got.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations["note"], "kept");
        assert!(!annotations.contains_key(super::super::PHYSICAL_NAME));
        assert_eq!(got.data, virtual_cm.data);
        assert_eq!(got.binary_data, virtual_cm.binary_data);
        assert_eq!(got.immutable, Some(true));
        assert_eq!(
            TopDownMapper.to_physical(&virtual_cm, &ctx).unwrap(),
            got,
            "trait and function agree"
        );
    }

    #[test]
    fn secret_copies_keep_or_convert_their_type() {
        let binding = settings();
        let ctx = MappingContext::new(&binding);
        let sa_annotations = [
            ("kubernetes.io/service-account.name", "builder"),
            ("kubernetes.io/service-account.uid", "sa-uid"),
        ];
        // (virtual type, expected physical type, virtual annotations)
        let table = [
            (Some("Opaque"), Some("Opaque"), &[][..]),
            (
                Some("kubernetes.io/dockerconfigjson"),
                Some("kubernetes.io/dockerconfigjson"),
                &[][..],
            ),
            (
                Some("kubernetes.io/tls"),
                Some("kubernetes.io/tls"),
                &[][..],
            ),
            (None, None, &[][..]),
            (
                Some(SERVICE_ACCOUNT_TOKEN_TYPE),
                Some(OPAQUE_TYPE),
                &sa_annotations[..],
            ),
        ];
        for (virtual_type, want_type, annotations) in table {
            let virtual_secret = Secret {
                metadata: meta("creds", annotations),
                data: Some(BTreeMap::from([(
                    "token".to_owned(),
                    ByteString(b"s3cr3t".to_vec()),
                )])),
                type_: virtual_type.map(str::to_owned),
                ..Secret::default()
            };
            let got = physical_secret(&virtual_secret, &ctx).unwrap();
            check_metadata(&got.metadata, "creds");
            assert_eq!(got.type_.as_deref(), want_type, "type {virtual_type:?}");
            assert_eq!(got.data, virtual_secret.data);
            let got_annotations = got.metadata.annotations.unwrap();
            for (key, _) in sa_annotations {
                assert!(!got_annotations.contains_key(key), "{key} dropped");
            }
        }
    }

    #[test]
    fn copies_follow_their_virtual_objects() {
        let binding = settings();
        let ctx = MappingContext::new(&binding);
        let cm = |value: &str, immutable: Option<bool>| ConfigMap {
            metadata: meta("settings", &[]),
            data: Some(BTreeMap::from([("a".to_owned(), value.to_owned())])),
            immutable,
            ..ConfigMap::default()
        };
        let stored = |virtual_cm: &ConfigMap| {
            let mut existing = physical_config_map(virtual_cm, &ctx).unwrap();
            existing.metadata.resource_version = Some("9".into());
            existing.metadata.uid = Some("phys".into());
            existing
        };
        let existing = stored(&cm("1", None));
        let desired = |virtual_cm: &ConfigMap| physical_config_map(virtual_cm, &ctx).unwrap();
        assert_eq!(
            config_map_update(&desired(&cm("1", None)), &existing),
            CopyUpdate::InStep
        );
        let CopyUpdate::Update(updated) = config_map_update(&desired(&cm("2", None)), &existing)
        else {
            panic!("an edited ConfigMap is updated");
        };
        assert_eq!(updated.data.as_ref().unwrap()["a"], "2");
        assert_eq!(updated.metadata.resource_version.as_deref(), Some("9"));
        let mut relabelled = cm("1", None);
        relabelled.metadata.labels = Some(BTreeMap::from([("app".into(), "api".into())]));
        assert!(matches!(
            config_map_update(&desired(&relabelled), &existing),
            CopyUpdate::Update(_)
        ));
        let frozen = stored(&cm("1", Some(true)));
        assert_eq!(
            config_map_update(&desired(&cm("2", Some(true))), &frozen),
            CopyUpdate::Recreate
        );
        assert_eq!(
            config_map_update(&desired(&cm("1", Some(true))), &frozen),
            CopyUpdate::InStep
        );

        let secret = |type_: &str, value: &[u8]| Secret {
            metadata: meta("creds", &[]),
            data: Some(BTreeMap::from([(
                "k".to_owned(),
                ByteString(value.to_vec()),
            )])),
            type_: Some(type_.to_owned()),
            ..Secret::default()
        };
        let existing = physical_secret(&secret("Opaque", b"1"), &ctx).unwrap();
        let desired = |s: &Secret| physical_secret(s, &ctx).unwrap();
        // (virtual type, value, expected decision kind)
        let table = [
            ("Opaque", &b"1"[..], "in step"),
            ("Opaque", &b"2"[..], "update"),
            (SERVICE_ACCOUNT_TOKEN_TYPE, &b"1"[..], "in step"),
            ("kubernetes.io/basic-auth", &b"1"[..], "recreate"),
        ];
        for (type_, value, want) in table {
            let got = match secret_update(&desired(&secret(type_, value)), &existing) {
                CopyUpdate::InStep => "in step",
                CopyUpdate::Update(_) => "update",
                CopyUpdate::Recreate => "recreate",
            };
            assert_eq!(got, want, "{type_} {value:?}");
        }
    }

    #[test]
    fn unnamed_objects_are_errors() {
        let binding = settings();
        let ctx = MappingContext::new(&binding);
        assert_eq!(
            physical_config_map(&ConfigMap::default(), &ctx),
            Err(MapError::Unnamed {
                kind: "ConfigMap",
                namespace: String::new()
            })
        );
        assert!(physical_secret(&Secret::default(), &ctx).is_err());
    }
}
