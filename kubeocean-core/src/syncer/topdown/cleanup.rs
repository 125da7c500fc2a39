//! Leaving a worker: once the ClusterBinding is being deleted (or is gone) and the bottom-up
//! side has drained every virtual node, everything the syncer created for the binding is
//! removed from the worker: pods, ConfigMap/Secret copies, token Secrets, claims, reflected
//! Services and EndpointSlices in the mount namespace, and the volumes labelled with the
//! binding.
//! [`remaining_physical_objects`] tells the manager when that is done.

use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolume, PersistentVolumeClaim, Pod, Secret, Service,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::error::{Side, TopDownError, request};
use super::state::TopDown;
use crate::labels;
use crate::syncer::context::Context;

/// Name of this reconciler in metrics and logs.
pub const NAME: &str = "cleanup";

fn managed_selector() -> String {
    format!("{}={}", labels::MANAGED_BY, labels::MANAGED_BY_VALUE)
}

/// How many Pods, ConfigMaps, Secrets and PersistentVolumeClaims labelled
/// `kubeocean.io/managed-by=kubeocean` remain in `mount_namespace` of the worker. The
/// manager releases a deleted binding's finalizer once this is 0 (and no virtual node of
/// the binding remains).
pub async fn remaining_physical_objects(
    worker: &Client,
    mount_namespace: &str,
) -> Result<usize, kube::Error> {
    let params = ListParams::default().labels(&managed_selector());
    let pods = Api::<Pod>::namespaced(worker.clone(), mount_namespace)
        .list(&params)
        .await?;
    let config_maps = Api::<ConfigMap>::namespaced(worker.clone(), mount_namespace)
        .list(&params)
        .await?;
    let secrets = Api::<Secret>::namespaced(worker.clone(), mount_namespace)
        .list(&params)
        .await?;
    let claims = Api::<PersistentVolumeClaim>::namespaced(worker.clone(), mount_namespace)
        .list(&params)
        .await?;
    let services = Api::<Service>::namespaced(worker.clone(), mount_namespace)
        .list(&params)
        .await?;
    let slices = Api::<EndpointSlice>::namespaced(worker.clone(), mount_namespace)
        .list(&params)
        .await?;
    Ok(pods.items.len()
        + config_maps.items.len()
        + secrets.items.len()
        + claims.items.len()
        + services.items.len()
        + slices.items.len())
}

/// Whether the binding is leaving: deleted, or being deleted.
fn leaving(ctx: &Context) -> bool {
    ctx.computing_index()
        .binding()
        .is_none_or(|b| b.metadata.deletion_timestamp.is_some())
}

async fn delete_all<K>(
    ctx: &Context,
    api: Api<K>,
    kind: &'static str,
    where_: &str,
    selector: &str,
) -> Result<(), TopDownError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let deleted = request(
        ctx.config.request_timeout,
        Side::Worker,
        "delete every",
        kind,
        where_,
        api.delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(selector),
        ),
    )
    .await;
    match deleted {
        Ok(_) => Ok(()),
        Err(err) if err.code() == Some(404) => Ok(()),
        Err(err) => Err(err),
    }
}

/// Deletes the reflected Services one by one (Services have no `deletecollection`).
async fn delete_services(
    ctx: &Context,
    api: Api<Service>,
    selector: &str,
) -> Result<(), TopDownError> {
    let timeout = ctx.config.request_timeout;
    let listed = request(
        timeout,
        Side::Worker,
        "list",
        "Service",
        "the mount namespace",
        api.list(&ListParams::default().labels(selector)),
    )
    .await?;
    for service in listed.items {
        let name = service.metadata.name.unwrap_or_default();
        let deleted = request(
            timeout,
            Side::Worker,
            "delete",
            "Service",
            &name,
            api.delete(&name, &DeleteParams::default()),
        )
        .await;
        match deleted {
            Ok(_) => {}
            Err(err) if err.code() == Some(404) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// One cleanup pass; returns when to look again while objects remain.
pub(crate) async fn reconcile(
    ctx: &Context,
    td: &TopDown,
) -> Result<Option<Instant>, TopDownError> {
    if !leaving(ctx) || ctx.computing_index().vnode_count() > 0 {
        return Ok(None);
    }
    let namespace = td.settings.mount_namespace.as_str();
    let managed = managed_selector();
    let in_namespace = format!("namespace {namespace}");
    let worker = &ctx.worker;
    delete_all(
        ctx,
        Api::<Pod>::namespaced(worker.clone(), namespace),
        "Pod",
        &in_namespace,
        &managed,
    )
    .await?;
    delete_all(
        ctx,
        Api::<ConfigMap>::namespaced(worker.clone(), namespace),
        "ConfigMap",
        &in_namespace,
        &managed,
    )
    .await?;
    delete_all(
        ctx,
        Api::<Secret>::namespaced(worker.clone(), namespace),
        "Secret",
        &in_namespace,
        &managed,
    )
    .await?;
    delete_all(
        ctx,
        Api::<PersistentVolumeClaim>::namespaced(worker.clone(), namespace),
        "PersistentVolumeClaim",
        &in_namespace,
        &managed,
    )
    .await?;
    delete_all(
        ctx,
        Api::<EndpointSlice>::namespaced(worker.clone(), namespace),
        "EndpointSlice",
        &in_namespace,
        &managed,
    )
    .await?;
    delete_services(
        ctx,
        Api::<Service>::namespaced(worker.clone(), namespace),
        &managed,
    )
    .await?;
    let volumes = format!("{managed},{}={}", labels::CLUSTER_BINDING, td.settings.name);
    delete_all(
        ctx,
        Api::<PersistentVolume>::all(worker.clone()),
        "PersistentVolume",
        "the cluster",
        &volumes,
    )
    .await?;
    let remaining = request(
        ctx.config.request_timeout,
        Side::Worker,
        "count the objects left in",
        "Namespace",
        namespace,
        remaining_physical_objects(worker, namespace),
    )
    .await?;
    if remaining > 0 {
        // Pods terminate gracefully; look again.
        return Ok(Some(Instant::now() + ctx.config.retry_interval));
    }
    tracing::info!(binding = %td.settings.name, namespace, "every physical object of the binding removed");
    Ok(None)
}
