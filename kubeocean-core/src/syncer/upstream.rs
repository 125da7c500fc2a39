//! Releasing the finalizers upstream Kubeocean left (see [`crate::upgrade`]): a guarded
//! finalizer write, and the one sweep over the virtual ConfigMaps, Secrets, PVCs and PVs that
//! upstream's syncer held with `kubeocean.io/finalizer-<clusterID>` and marked with its
//! labels and annotations.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolume, PersistentVolumeClaim, Secret};
use kube::api::{ListParams, ObjectMeta, Patch, PatchParams};
use kube::{Api, Client, Resource, ResourceExt};
use kube_kit::client::is_not_found;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::context::Context;

use crate::upgrade::release_synced_patch;

/// Sets the finalizers of the object `meta` describes (as read) to `wanted` with a guarded
/// JSON patch: it fails (409/422) if they changed meanwhile, and the caller retries on fresh
/// data. An object gone meanwhile is fine.
pub async fn set_finalizers<K>(
    api: &Api<K>,
    meta: &ObjectMeta,
    wanted: &[String],
) -> Result<(), kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let patch = kube_kit::finalizer::set_patch(meta.finalizers.as_deref(), wanted);
    let name = meta.name.clone().unwrap_or_default();
    match api
        .patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(err) if is_not_found(&err) => Ok(()),
        Err(err) => Err(err),
    }
}

/// Removes `kubeocean.io/finalizer-<cluster_id>`, and upstream's labels and annotations of
/// its copies, from every virtual ConfigMap, Secret, PVC and PV of the computing cluster
/// that upstream copied for `cluster_id`; returns how many were released. Our syncer never
/// adds them, so one sweep per session is enough.
pub async fn release_synced_finalizers(
    computing: &Client,
    cluster_id: &str,
) -> Result<usize, kube::Error> {
    let c = computing;
    let released = release_all::<ConfigMap>(c, cluster_id, |c, ns| {
        Api::namespaced(c.clone(), &ns.unwrap_or_default())
    })
    .await?
        + release_all::<Secret>(c, cluster_id, |c, ns| {
            Api::namespaced(c.clone(), &ns.unwrap_or_default())
        })
        .await?
        + release_all::<PersistentVolumeClaim>(c, cluster_id, |c, ns| {
            Api::namespaced(c.clone(), &ns.unwrap_or_default())
        })
        .await?
        + release_all::<PersistentVolume>(c, cluster_id, |c, _| Api::all(c.clone())).await?;
    Ok(released)
}

/// Releases upstream's copy of every object of kind `K` made for `cluster_id` (its
/// finalizer, labels and annotations, [`release_synced_patch`]); `api_for` gives the Api to
/// write one object with (namespaced or not). A write that meets a newer object fails (the
/// patch is guarded by its resourceVersion) and the sweep is retried.
async fn release_all<K>(
    client: &Client,
    cluster_id: &str,
    api_for: impl Fn(&Client, Option<String>) -> Api<K>,
) -> Result<usize, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let listed = Api::<K>::all(client.clone())
        .list_metadata(&ListParams::default())
        .await?;
    let mut released = 0;
    for object in listed.items {
        let Some(patch) = release_synced_patch(&object.metadata, cluster_id) else {
            continue;
        };
        let api = api_for(client, object.namespace());
        match api
            .patch(
                &object.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => {}
            Err(err) if is_not_found(&err) => {}
            Err(err) => return Err(err),
        }
        released += 1;
    }
    Ok(released)
}

/// [`release_synced_finalizers`] for the session's binding, retried every `retry_interval`
/// (doubling up to `max_retry_interval`) until it succeeds or `token` is cancelled.
pub async fn run_release(ctx: Arc<Context>, cluster_id: String, token: CancellationToken) {
    let mut wait = ctx.config.retry_interval;
    loop {
        match release_synced_finalizers(&ctx.computing, &cluster_id).await {
            Ok(0) => return,
            Ok(released) => {
                tracing::info!(binding = %ctx.config.binding_name, released, "released upstream Kubeocean's finalizers of virtual copies");
                return;
            }
            Err(err) => {
                tracing::warn!(binding = %ctx.config.binding_name, error = %err, "cannot release upstream Kubeocean's finalizers of virtual copies; retrying");
            }
        }
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
        wait = (wait * 2).min(ctx.config.max_retry_interval);
    }
}
