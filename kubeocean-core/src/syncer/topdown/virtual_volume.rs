//! The VirtualVolume reconciler: a Bound virtual claim that a pod needs is copied to the
//! mount namespace with its volume (the volume first, then the claim pre-bound to it, and
//! the Secrets the volume's CSI source reads before both); claims that are not Bound are not
//! mapped. Once no pod that has not finished needs the claim, both copies are deleted (the
//! volume copy is `Retain`: no storage is released).

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{DeleteParams, PostParams, Preconditions};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::{Created, Side, TopDownError, create_or_read, request};
use super::mapping::is_copy_of;
use super::mapping::{MapError, MappingContext, physical_pv, physical_pvc, pv_secret_refs};
use super::state::TopDown;
use super::store::{CopyKey, object_key};
use super::virtual_copy::{check_owner, ensure_copy};
use crate::labels;
use crate::naming::physical_name;
use crate::syncer::context::Context;

/// Where a claim stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimState {
    /// Its copies exist.
    Ready,
    /// It is not Bound in the computing cluster: not mapped.
    NotBound,
    /// Something it needs does not exist (`Kind namespace/name`).
    Missing(String),
}

fn map_error(kind: &'static str, name: String) -> impl Fn(MapError) -> TopDownError {
    move |source| TopDownError::Map {
        kind,
        name: name.clone(),
        source,
    }
}

/// Makes the copies of a Bound claim exist (its CSI Secrets, its volume, then itself).
pub(crate) async fn ensure_claim(
    ctx: &Context,
    td: &TopDown,
    claim: &PersistentVolumeClaim,
) -> Result<ClaimState, TopDownError> {
    let mapping = MappingContext::new(&td.settings);
    let claim_key = kube_kit::controller::object_key(claim);
    let desired_claim = match physical_pvc(claim, &mapping) {
        Ok(desired) => desired,
        Err(MapError::NotBound { .. }) => return Ok(ClaimState::NotBound),
        Err(err) => return Err(map_error("PersistentVolumeClaim", claim_key)(err)),
    };
    let volume_name = claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.clone())
        .unwrap_or_default();
    let Some(volume) = td.stores().pvs.get(&volume_name) else {
        return Ok(ClaimState::Missing(format!(
            "PersistentVolume {volume_name}"
        )));
    };
    for (namespace, name) in pv_secret_refs(&volume) {
        let secret = td.stores().secrets.get(&object_key(&namespace, &name));
        match secret {
            Some(secret) => ensure_copy(ctx, td, secret.as_ref()).await?,
            None => return Ok(ClaimState::Missing(format!("Secret {namespace}/{name}"))),
        }
    }
    let mut desired_volume = match physical_pv(&volume, &mapping) {
        Ok(desired) => desired,
        Err(MapError::NotBound { .. }) => return Ok(ClaimState::NotBound),
        Err(err) => return Err(map_error("PersistentVolume", volume_name)(err)),
    };
    // Volumes are cluster-scoped: the binding label tells ours from other bindings'.
    desired_volume
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(labels::CLUSTER_BINDING.to_owned(), td.settings.name.clone());
    let volumes: Api<PersistentVolume> = Api::all(ctx.worker.clone());
    let stored = td.stores().physical_pvs.get(&desired_volume.name_any());
    let written = ensure_object(
        ctx,
        &volumes,
        &volume.metadata,
        &desired_volume,
        stored.as_deref(),
        "PersistentVolume",
        desired_volume.name_any(),
    )
    .await?;
    if let Some(written) = written {
        td.stores_mut().physical_pvs.remember(written);
    }
    let claims: Api<PersistentVolumeClaim> =
        Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace);
    let claim_physical_key = td.physical_key(&desired_claim.name_any());
    let stored = td.stores().physical_pvcs.get(&claim_physical_key);
    let written = ensure_object(
        ctx,
        &claims,
        &claim.metadata,
        &desired_claim,
        stored.as_deref(),
        "PersistentVolumeClaim",
        claim_physical_key,
    )
    .await?;
    if let Some(written) = written {
        td.stores_mut().physical_pvcs.remember(written);
    }
    Ok(ClaimState::Ready)
}

/// Creates `desired` unless a copy for the same virtual object exists (claims and volumes
/// are not updated: their specs are immutable once bound). Returns what was written.
#[allow(clippy::too_many_arguments)]
async fn ensure_object<K>(
    ctx: &Context,
    api: &Api<K>,
    virtual_meta: &kube::api::ObjectMeta,
    desired: &K,
    stored: Option<&K>,
    kind: &'static str,
    physical_key: String,
) -> Result<Option<K>, TopDownError>
where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    if let Some(stored) = stored {
        check_owner(kind, &physical_key, stored.meta(), virtual_meta)?;
        return Ok(None);
    }
    let name = desired.name_any();
    let created = create_or_read(
        ctx.config.request_timeout,
        kind,
        &physical_key,
        api.create(&PostParams::default(), desired),
        || api.get(&name),
    )
    .await?;
    match created {
        Created::New(created) => Ok(Some(created)),
        Created::Existing(found, _) => {
            check_owner(kind, &physical_key, found.meta(), virtual_meta)?;
            Ok(Some(found))
        }
    }
}

/// Copies or collects one claim (and its volume).
pub(crate) async fn reconcile(
    ctx: &Context,
    td: &TopDown,
    copy: &CopyKey,
) -> Result<(), TopDownError> {
    let needed = td.copy_needed(copy);
    let claim = td.stores().pvcs.get(&copy.object_key());
    if let (Some(claim), true) = (&claim, needed) {
        ensure_claim(ctx, td, claim).await?;
        return Ok(());
    }
    let physical_claim_name = physical_name(&copy.namespace, &copy.name);
    let (existing_claim, volumes) = {
        let stores = td.stores();
        let existing = stores
            .physical_pvcs
            .get(&td.physical_key(&physical_claim_name));
        // The volume copies bound to this claim copy.
        let volumes: Vec<(String, Option<String>)> = stores
            .physical_pvs
            .values()
            .filter(|pv| {
                pv.spec
                    .as_ref()
                    .and_then(|s| s.claim_ref.as_ref())
                    .is_some_and(|c| {
                        c.namespace.as_deref() == Some(td.settings.mount_namespace.as_str())
                            && c.name.as_deref() == Some(physical_claim_name.as_str())
                    })
            })
            .map(|pv| (pv.name_any(), pv.metadata.uid.clone()))
            .collect();
        (existing, volumes)
    };
    if let Some(existing) = existing_claim
        && is_copy_of(&existing.metadata, &copy.namespace, &copy.name)
    {
        let api: Api<PersistentVolumeClaim> =
            Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace);
        delete(
            ctx,
            &api,
            &existing.name_any(),
            existing.metadata.uid.clone(),
            "PersistentVolumeClaim",
            td.physical_key(&physical_claim_name),
        )
        .await?;
        tracing::info!(copy = %copy, "physical claim removed: no longer needed");
    }
    let api: Api<PersistentVolume> = Api::all(ctx.worker.clone());
    for (name, uid) in volumes {
        delete(ctx, &api, &name, uid, "PersistentVolume", name.clone()).await?;
    }
    Ok(())
}

async fn delete<K>(
    ctx: &Context,
    api: &Api<K>,
    name: &str,
    uid: Option<String>,
    kind: &'static str,
    physical_key: String,
) -> Result<(), TopDownError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
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
        kind,
        &physical_key,
        api.delete(name, &params),
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(err) if matches!(err.code(), Some(404 | 409)) => Ok(()),
        Err(err) => Err(err),
    }
}
