//! The VirtualCopy reconciler (ConfigMaps and Secrets): a copy is made in the mount
//! namespace when a pod needs it (see `ensure_copy`, called before the pod is created),
//! kept in step with its virtual object, and deleted once no pod that has not finished
//! needs it, or its virtual object is gone. A worker object of the target name that is not
//! ours is reported, never overwritten. Claims are handled by [`super::virtual_volume`].

use std::fmt::Debug;
use std::sync::Arc;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{DeleteParams, ObjectMeta, PostParams, Preconditions};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::{Created, Side, TopDownError, create_or_read, describe_owner, request};
use super::mapping::{
    CopyUpdate, MapError, MappingContext, Ownership, config_map_update, is_copy_of, ownership,
    physical_config_map, physical_secret, secret_update,
};
use super::state::{Stores, TopDown};
use super::store::{CopyKey, CopyKind, ObjectStore};
use crate::naming::physical_name;
use crate::syncer::context::Context;

/// Name of this reconciler in metrics and logs.
pub const NAME: &str = "virtual-copy";

/// A kind copied to the worker as is (ConfigMap, Secret).
pub trait Copied:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Serialize
    + DeserializeOwned
    + Debug
    + Send
    + Sync
    + 'static
{
    /// Which kind.
    const KIND: CopyKind;
    /// The physical copy of `virtual_obj`.
    fn desired(virtual_obj: &Self, ctx: &MappingContext<'_>) -> Result<Self, MapError>;
    /// How to bring `existing` in step with `desired`.
    fn update(desired: &Self, existing: &Self) -> CopyUpdate<Self>;
    /// The virtual objects of this kind.
    fn virtual_store(stores: &Stores) -> &ObjectStore<Self>;
    /// The physical copies of this kind.
    fn physical_store(stores: &Stores) -> &ObjectStore<Self>;
    /// The physical copies of this kind, for writing.
    fn physical_store_mut(stores: &mut Stores) -> &mut ObjectStore<Self>;
}

impl Copied for ConfigMap {
    const KIND: CopyKind = CopyKind::ConfigMap;
    fn desired(virtual_obj: &Self, ctx: &MappingContext<'_>) -> Result<Self, MapError> {
        physical_config_map(virtual_obj, ctx)
    }
    fn update(desired: &Self, existing: &Self) -> CopyUpdate<Self> {
        config_map_update(desired, existing)
    }
    fn virtual_store(stores: &Stores) -> &ObjectStore<Self> {
        &stores.config_maps
    }
    fn physical_store(stores: &Stores) -> &ObjectStore<Self> {
        &stores.physical_config_maps
    }
    fn physical_store_mut(stores: &mut Stores) -> &mut ObjectStore<Self> {
        &mut stores.physical_config_maps
    }
}

impl Copied for Secret {
    const KIND: CopyKind = CopyKind::Secret;
    fn desired(virtual_obj: &Self, ctx: &MappingContext<'_>) -> Result<Self, MapError> {
        physical_secret(virtual_obj, ctx)
    }
    fn update(desired: &Self, existing: &Self) -> CopyUpdate<Self> {
        secret_update(desired, existing)
    }
    fn virtual_store(stores: &Stores) -> &ObjectStore<Self> {
        &stores.secrets
    }
    fn physical_store(stores: &Stores) -> &ObjectStore<Self> {
        &stores.physical_secrets
    }
    fn physical_store_mut(stores: &mut Stores) -> &mut ObjectStore<Self> {
        &mut stores.physical_secrets
    }
}

/// Whether `existing` may be written for the virtual object `virtual_obj`: ours, or a copy
/// of an earlier object of the same name (which is gone, the name now being another's).
pub(crate) fn check_owner(
    kind: &'static str,
    physical_key: &str,
    existing: &ObjectMeta,
    virtual_obj: &ObjectMeta,
) -> Result<(), TopDownError> {
    let namespace = virtual_obj.namespace.as_deref().unwrap_or_default();
    let name = virtual_obj.name.as_deref().unwrap_or_default();
    match ownership(existing, virtual_obj) {
        Ownership::Ours => Ok(()),
        Ownership::Foreign(_) if is_copy_of(existing, namespace, name) => Ok(()),
        other => Err(TopDownError::Conflict {
            kind,
            physical: physical_key.to_owned(),
            owner: describe_owner(&other),
            wanted: format!("{kind} {}", super::store::object_key(namespace, name)),
        }),
    }
}

/// Makes the physical copy of `virtual_obj` exist and match it.
pub(crate) async fn ensure_copy<K: Copied>(
    ctx: &Context,
    td: &TopDown,
    virtual_obj: &K,
) -> Result<(), TopDownError> {
    let kind = K::KIND.as_str();
    let desired =
        K::desired(virtual_obj, &MappingContext::new(&td.settings)).map_err(|source| {
            TopDownError::Map {
                kind,
                name: super::store::object_key(
                    virtual_obj.meta().namespace.as_deref().unwrap_or_default(),
                    &virtual_obj.name_any(),
                ),
                source,
            }
        })?;
    let name = desired.name_any();
    let physical_key = td.physical_key(&name);
    let existing = K::physical_store(&td.stores()).get(&physical_key);
    let existing = match existing {
        Some(existing) => existing,
        None => {
            let api: Api<K> = Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace);
            let created = create_or_read(
                ctx.config.request_timeout,
                kind,
                &physical_key,
                api.create(&PostParams::default(), &desired),
                || api.get(&name),
            )
            .await?;
            match created {
                Created::New(created) => {
                    K::physical_store_mut(&mut td.stores_mut()).remember(created);
                    return Ok(());
                }
                Created::Existing(found, _) => {
                    K::physical_store_mut(&mut td.stores_mut()).remember(found.clone());
                    Arc::new(found)
                }
            }
        }
    };
    check_owner(kind, &physical_key, existing.meta(), virtual_obj.meta())?;
    let api: Api<K> = Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace);
    match K::update(&desired, &existing) {
        CopyUpdate::InStep => Ok(()),
        CopyUpdate::Update(updated) => {
            let written = request(
                ctx.config.request_timeout,
                Side::Worker,
                "update",
                kind,
                &physical_key,
                api.replace(&name, &PostParams::default(), &updated),
            )
            .await?;
            K::physical_store_mut(&mut td.stores_mut()).remember(written);
            Ok(())
        }
        CopyUpdate::Recreate => {
            delete_physical::<K>(ctx, td, &name, existing.meta().uid.clone()).await?;
            let created = request(
                ctx.config.request_timeout,
                Side::Worker,
                "create",
                kind,
                &physical_key,
                api.create(&PostParams::default(), &desired),
            )
            .await?;
            K::physical_store_mut(&mut td.stores_mut()).remember(created);
            Ok(())
        }
    }
}

/// Deletes physical object `name` of the mount namespace if it still has `uid`.
pub(crate) async fn delete_physical<K: Copied>(
    ctx: &Context,
    td: &TopDown,
    name: &str,
    uid: Option<String>,
) -> Result<(), TopDownError> {
    let api: Api<K> = Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid,
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match request(
        ctx.config.request_timeout,
        Side::Worker,
        "delete",
        K::KIND.as_str(),
        &td.physical_key(name),
        api.delete(name, &params),
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(err) if matches!(err.code(), Some(404 | 409)) => Ok(()),
        Err(err) => Err(err),
    }
}

/// Reconciles the copy of one ConfigMap or Secret (claims: [`super::virtual_volume`]).
pub(crate) async fn reconcile(
    ctx: &Context,
    td: &TopDown,
    copy: &CopyKey,
) -> Result<(), TopDownError> {
    match copy.kind {
        CopyKind::ConfigMap => sync::<ConfigMap>(ctx, td, copy).await,
        CopyKind::Secret => sync::<Secret>(ctx, td, copy).await,
        CopyKind::PersistentVolumeClaim => Ok(()),
    }
}

/// Copies or collects one ConfigMap or Secret.
async fn sync<K: Copied>(ctx: &Context, td: &TopDown, copy: &CopyKey) -> Result<(), TopDownError> {
    let needed = td.copy_needed(copy);
    let (virtual_obj, existing) = {
        let stores = td.stores();
        let physical = td.physical_key(&physical_name(&copy.namespace, &copy.name));
        (
            K::virtual_store(&stores).get(&copy.object_key()),
            K::physical_store(&stores).get(&physical),
        )
    };
    if let (Some(virtual_obj), true) = (&virtual_obj, needed) {
        return ensure_copy(ctx, td, virtual_obj.as_ref()).await;
    }
    if let Some(existing) = existing
        && is_copy_of(existing.meta(), &copy.namespace, &copy.name)
    {
        delete_physical::<K>(ctx, td, &existing.name_any(), existing.meta().uid.clone()).await?;
        tracing::info!(copy = %copy, "physical copy removed: no longer needed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::mapping::{VIRTUAL_NAME, VIRTUAL_NAMESPACE, VIRTUAL_UID};
    use super::*;
    use crate::labels;
    use std::collections::BTreeMap;

    fn meta(labelled: bool, annotations: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            name: Some("x".into()),
            labels: labelled.then(|| {
                BTreeMap::from([(
                    labels::MANAGED_BY.to_owned(),
                    labels::MANAGED_BY_VALUE.to_owned(),
                )])
            }),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn copies_are_recognised_by_label_and_back_reference() {
        let back = [(VIRTUAL_NAMESPACE, "ns"), (VIRTUAL_NAME, "cfg")];
        assert!(is_copy_of(&meta(true, &back), "ns", "cfg"));
        assert!(!is_copy_of(&meta(false, &back), "ns", "cfg"));
        assert!(!is_copy_of(&meta(true, &back), "ns", "other"));
        assert!(!is_copy_of(&meta(true, &[]), "ns", "cfg"));
    }

    #[test]
    fn owners_are_checked_before_writing() {
        let virtual_obj = ObjectMeta {
            namespace: Some("ns".into()),
            name: Some("cfg".into()),
            uid: Some("new".into()),
            ..ObjectMeta::default()
        };
        let earlier = meta(
            true,
            &[
                (VIRTUAL_NAMESPACE, "ns"),
                (VIRTUAL_NAME, "cfg"),
                (VIRTUAL_UID, "old"),
            ],
        );
        assert!(check_owner("ConfigMap", "w/x", &earlier, &virtual_obj).is_ok());
        let another = meta(true, &[(VIRTUAL_NAMESPACE, "ns"), (VIRTUAL_NAME, "else")]);
        let err = check_owner("ConfigMap", "w/x", &another, &virtual_obj).unwrap_err();
        assert_eq!(err.reason(), "NameConflict");
        assert!(err.to_string().contains("belongs to ns/else"), "{err}");
        let unowned = meta(false, &[]);
        let err = check_owner("ConfigMap", "w/x", &unowned, &virtual_obj).unwrap_err();
        assert!(
            err.to_string().contains("no kubeocean.io/managed-by label"),
            "{err}"
        );
    }
}
