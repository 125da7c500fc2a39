//! The ServiceReflection reconciler **(ours)**: a Service of one of the binding's
//! `serviceNamespaces` gets a copy in the worker's mount namespace, with the same ClusterIP
//! when the worker accepts it, and its EndpointSlices mirrored
//! ([`super::mapping::service`]); a Service deleted, or a namespace dropped from
//! `serviceNamespaces`, or the binding leaving, removes the copies. A Service that cannot
//! be reflected (ExternalName, no port) gets a Warning Event and nothing in the worker.
//!
//! The key [`NETWORK_KEY`] checks instead the two Services mapped pods need (the computing
//! cluster's DNS and API server, see [`super::mapping::network`]) and reports them on the
//! binding's `InClusterNetworkReady` condition.

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::events::EventType;
use kube::{Api, Resource};
use kube_kit::conditions::condition;
use tokio::time::Instant;

use super::error::{Side, TopDownError, request, request_opt};
use super::mapping::service::{
    NotReflected, needs_recreate, physical_endpoint_slice, physical_service,
    physical_service_update, reflected_service_of, service_physical_name, slice_differs,
    slice_service, without_cluster_ip,
};
use super::state::TopDown;
use super::store::split_key;
use crate::crd::ClusterBinding;
use crate::syncer::binding::update_binding_conditions;
use crate::syncer::context::Context;

/// Name of this reconciler in metrics and logs.
pub const NAME: &str = "service-reflection";
/// Queue key of the in-cluster network check (no Service key is empty).
pub const NETWORK_KEY: &str = "";
/// Condition on the ClusterBinding: the Services mapped pods need exist.
pub const CONDITION_IN_CLUSTER_NETWORK: &str = "InClusterNetworkReady";
/// Condition reason and Warning Event reason: one of those Services is missing or unusable.
pub const REASON_SERVICE_MISSING: &str = "InClusterServiceMissing";
/// Condition reason: both Services were found.
pub const REASON_SERVICES_FOUND: &str = "ServicesFound";
/// Event reason on a virtual Service that is not reflected.
pub const REASON_NOT_REFLECTED: &str = "ServiceNotReflected";
/// Event reason on a virtual Service whose ClusterIP the worker refused.
pub const REASON_CLUSTER_IP_NOT_PRESERVED: &str = "ClusterIPNotPreserved";

/// Reconciles one key of the ServiceReflection queue.
pub(crate) async fn reconcile(
    ctx: &Context,
    td: &TopDown,
    key: &str,
) -> Result<Option<Instant>, TopDownError> {
    if key == NETWORK_KEY {
        check_network(ctx, td).await;
        return Ok(None);
    }
    let (namespace, name) = split_key(key);
    let binding = ctx.computing_index().binding();
    let wanted = binding.as_deref().is_some_and(|b| reflects(b, namespace));
    let physical_name = service_physical_name(namespace, name);
    let ours = |meta: &kube::api::ObjectMeta| {
        reflected_service_of(meta).is_some_and(|(ns, n)| ns == namespace && n == name)
    };
    let (service, slices, existing, existing_slices) = {
        let stores = td.stores();
        let existing = stores
            .physical_services
            .get(&td.physical_key(&physical_name))
            .filter(|s| ours(&s.metadata));
        let existing_slices: Vec<EndpointSlice> = stores
            .physical_endpoint_slices
            .values()
            .filter(|s| ours(&s.metadata))
            .map(|s| (**s).clone())
            .collect();
        if !wanted && existing.is_none() && existing_slices.is_empty() {
            // Most Services of the computing cluster: not reflected, nothing to remove.
            return Ok(None);
        }
        let service = stores.services.get(key);
        let slices: Vec<EndpointSlice> = match wanted {
            true => stores
                .endpoint_slices
                .values()
                .filter(|s| {
                    s.metadata.namespace.as_deref() == Some(namespace)
                        && slice_service(s) == Some(name)
                })
                .map(|s| (**s).clone())
                .collect(),
            false => Vec::new(),
        };
        (service, slices, existing, existing_slices)
    };

    let desired = match (&service, wanted) {
        (Some(service), true) => match physical_service(service, &td.settings) {
            Ok(desired) => Some(desired),
            Err(refused) => {
                let note = match &refused {
                    NotReflected::Map(err) => err.to_string(),
                    other => format!(
                        "Service {key} of serviceNamespaces: {other}; nothing is created in the worker"
                    ),
                };
                tracing::info!(service = %key, "{note}");
                td.publish(
                    ctx,
                    &service.object_ref(&()),
                    EventType::Warning,
                    REASON_NOT_REFLECTED,
                    &note,
                )
                .await;
                None
            }
        },
        _ => None,
    };
    let Some(desired) = desired else {
        remove(ctx, td, existing.as_deref(), &existing_slices).await?;
        return Ok(None);
    };
    let Some(service) = service else {
        return Ok(None);
    };

    ensure_service(ctx, td, &service, desired, existing.as_deref()).await?;
    let wanted_slices: Vec<EndpointSlice> = slices
        .iter()
        .map(|s| physical_endpoint_slice(s, name, &td.settings))
        .collect::<Result<_, _>>()
        .map_err(|source| TopDownError::Map {
            kind: "EndpointSlice",
            name: key.to_owned(),
            source,
        })?;
    sync_slices(ctx, td, wanted_slices, existing_slices).await?;
    Ok(None)
}

/// Whether `binding` reflects the Services of `namespace`.
fn reflects(binding: &ClusterBinding, namespace: &str) -> bool {
    binding.metadata.deletion_timestamp.is_none()
        && binding
            .spec
            .service_namespaces
            .iter()
            .any(|n| n == namespace)
}

fn services_api(ctx: &Context, td: &TopDown) -> Api<Service> {
    Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace)
}

fn slices_api(ctx: &Context, td: &TopDown) -> Api<EndpointSlice> {
    Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace)
}

/// Creates or updates the worker Service.
async fn ensure_service(
    ctx: &Context,
    td: &TopDown,
    service: &Service,
    desired: Service,
    existing: Option<&Service>,
) -> Result<(), TopDownError> {
    let api = services_api(ctx, td);
    let timeout = ctx.config.request_timeout;
    let name = desired.metadata.name.clone().unwrap_or_default();
    let physical_key = td.physical_key(&name);
    if let Some(existing) = existing {
        if needs_recreate(&desired, existing) {
            delete(
                ctx,
                td,
                "Service",
                &name,
                api.delete(&name, &DeleteParams::default()),
            )
            .await?;
        } else {
            if let Some(update) = physical_service_update(&desired, existing) {
                let updated = request(
                    timeout,
                    Side::Worker,
                    "update",
                    "Service",
                    &physical_key,
                    api.replace(&name, &PostParams::default(), &update),
                )
                .await?;
                td.stores_mut().physical_services.remember(updated);
            }
            return Ok(());
        }
    }
    let asked_ip = desired
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.clone())
        .filter(|ip| ip != "None");
    let created = request(
        timeout,
        Side::Worker,
        "create",
        "Service",
        &physical_key,
        api.create(&PostParams::default(), &desired),
    )
    .await;
    let created = match created {
        Ok(created) => created,
        // The worker refused the computing cluster's ClusterIP (taken, or outside its
        // Service range): let it allocate one, and say what that means.
        Err(err) if asked_ip.is_some() && err.code() == Some(422) => {
            let created = request(
                timeout,
                Side::Worker,
                "create",
                "Service",
                &physical_key,
                api.create(&PostParams::default(), &without_cluster_ip(desired)),
            )
            .await?;
            let note = format!(
                "the worker refused ClusterIP {} for the reflected Service {physical_key} ({err}); it got {}: \
                 mapped pods reach it by that address or through its endpoints, not by the computing cluster's Service name",
                asked_ip.unwrap_or_default(),
                created
                    .spec
                    .as_ref()
                    .and_then(|s| s.cluster_ip.as_deref())
                    .unwrap_or("no address"),
            );
            td.publish(
                ctx,
                &service.object_ref(&()),
                EventType::Warning,
                REASON_CLUSTER_IP_NOT_PRESERVED,
                &note,
            )
            .await;
            created
        }
        Err(err) => return Err(err),
    };
    td.stores_mut().physical_services.remember(created);
    Ok(())
}

/// Creates, updates and deletes worker slices until they are `wanted`.
async fn sync_slices(
    ctx: &Context,
    td: &TopDown,
    wanted: Vec<EndpointSlice>,
    existing: Vec<EndpointSlice>,
) -> Result<(), TopDownError> {
    let api = slices_api(ctx, td);
    let timeout = ctx.config.request_timeout;
    for slice in &wanted {
        let name = slice.metadata.name.clone().unwrap_or_default();
        let physical_key = td.physical_key(&name);
        let written = match existing
            .iter()
            .find(|e| e.metadata.name == slice.metadata.name)
        {
            Some(current) if !slice_differs(slice, current) => continue,
            Some(current) => {
                let mut update = slice.clone();
                update.metadata.resource_version = current.metadata.resource_version.clone();
                request(
                    timeout,
                    Side::Worker,
                    "update",
                    "EndpointSlice",
                    &physical_key,
                    api.replace(&name, &PostParams::default(), &update),
                )
                .await?
            }
            None => {
                request(
                    timeout,
                    Side::Worker,
                    "create",
                    "EndpointSlice",
                    &physical_key,
                    api.create(&PostParams::default(), slice),
                )
                .await?
            }
        };
        td.stores_mut().physical_endpoint_slices.remember(written);
    }
    for stale in existing
        .iter()
        .filter(|e| !wanted.iter().any(|w| w.metadata.name == e.metadata.name))
    {
        let name = stale.metadata.name.clone().unwrap_or_default();
        delete(
            ctx,
            td,
            "EndpointSlice",
            &name,
            api.delete(&name, &DeleteParams::default()),
        )
        .await?;
    }
    Ok(())
}

/// Removes a reflected Service and its slices.
async fn remove(
    ctx: &Context,
    td: &TopDown,
    service: Option<&Service>,
    slices: &[EndpointSlice],
) -> Result<(), TopDownError> {
    sync_slices(ctx, td, Vec::new(), slices.to_vec()).await?;
    if let Some(service) = service {
        let name = service.metadata.name.clone().unwrap_or_default();
        let api = services_api(ctx, td);
        delete(
            ctx,
            td,
            "Service",
            &name,
            api.delete(&name, &DeleteParams::default()),
        )
        .await?;
    }
    Ok(())
}

async fn delete<T>(
    ctx: &Context,
    td: &TopDown,
    kind: &'static str,
    name: &str,
    call: impl Future<Output = Result<T, kube::Error>>,
) -> Result<(), TopDownError> {
    request_opt(
        ctx.config.request_timeout,
        Side::Worker,
        "delete",
        kind,
        &td.physical_key(name),
        call,
    )
    .await?;
    Ok(())
}

/// Reports on the binding whether the Services mapped pods need exist; a Warning Event when
/// that turns false.
async fn check_network(ctx: &Context, td: &TopDown) {
    let Some(binding) = ctx.computing_index().binding() else {
        return;
    };
    let (_, problems) = td.in_cluster_network(&ctx.config);
    let ok = problems.is_empty();
    let (reason, message) = if ok {
        (
            REASON_SERVICES_FOUND,
            format!(
                "mapped pods use the DNS of Service {} and the API server of Service {}",
                ctx.config.dns_service, ctx.config.api_server_service
            ),
        )
    } else {
        (
            REASON_SERVICE_MISSING,
            format!(
                "{}; pods mapped meanwhile keep the worker's DNS and API server for their lifetime (the syncer's \
                 --dns-service and --api-server-service name these Services)",
                problems.join("; ")
            ),
        )
    };
    let current = binding
        .status
        .as_ref()
        .and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == CONDITION_IN_CLUSTER_NETWORK)
        })
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()));
    let status = if ok { "True" } else { "False" };
    if current
        .as_ref()
        .is_some_and(|(s, r, m)| s == status && r == reason && *m == message)
    {
        return;
    }
    let written = update_binding_conditions(
        &ctx.computing,
        &td.settings.name,
        vec![condition(
            CONDITION_IN_CLUSTER_NETWORK,
            ok,
            reason,
            message.clone(),
            binding.metadata.generation,
            ctx.config.clock.now(),
        )],
    )
    .await;
    if let Err(err) = written {
        tracing::warn!(error = %err, "cannot report the in-cluster network on the binding");
    }
    if !ok {
        tracing::warn!(binding = %td.settings.name, "{message}");
        td.publish(
            ctx,
            &binding.object_ref(&()),
            EventType::Warning,
            REASON_SERVICE_MISSING,
            &message,
        )
        .await;
    }
}
