//! virtual-cluster-sync: registers each instance with the read backend. With Clusterpedia, a
//! `PediaCluster` named `kairship-<instance>` reading through a kubeconfig Secret in
//! Clusterpedia's namespace; with the embedded cache there is nothing to create. Deleting the
//! instance unregisters it ([`cleanup`], called by the lifecycle controller).
//!
//! Condition `Registered` says the registration exists; with Clusterpedia,
//! [`READ_BACKEND_READY`] says whether the backend serves the instance: it mirrors the PediaCluster's readiness
//! in Clusterpedia's words ([`pedia_cluster::pedia_readiness`]), so a PediaCluster Clusterpedia
//! refused (say, `authenticationFrom` without the `ClusterAuthenticationFromSecret` gate)
//! shows on the Instance instead of every read silently going to Karmada.

pub mod pedia_cluster;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use kube_kit::client::is_not_found;

use super::connection::{Lookup, lookup_kubeconfig};
use kube_kit::conditions::set_condition;

use super::status::update_status;
use super::{Context, Error, MANAGER_NAME, ReadBackend};
use crate::instance::{
    DEFAULT_KUBECONFIG_KEY, INSTANCE_LABEL, Instance, MANAGED_BY_LABEL, MANAGED_BY_VALUE,
    condition_type, reason,
};
use crate::models::pedia::PediaCluster;
use crate::naming::{pedia_cluster_name, pedia_kubeconfig_secret_name};
use pedia_cluster::{
    PediaReadiness, pedia_cluster, pedia_cluster_up_to_date, pedia_readiness, sync_resources_for,
};

/// Controller name (metrics, events).
pub const NAME: &str = "virtual-cluster-sync";

/// How often a registration is refreshed (kubeconfig rotation) without any change.
const RESYNC: Duration = Duration::from_secs(60);

/// Instance condition: the read backend serves the instance (Clusterpedia: its PediaCluster
/// is Ready).
pub const READ_BACKEND_READY: &str = "ReadBackendReady";

/// Reconciles one Instance.
pub async fn reconcile(instance: Arc<Instance>, ctx: Arc<Context>) -> Result<Action, Error> {
    if instance.is_deleting() {
        return Ok(Action::await_change());
    }
    let name = instance.name_any();
    let (registered, why, message, serving, requeue) = match &ctx.config.read_backend {
        ReadBackend::Embedded => (
            true,
            reason::REGISTERED,
            "read through the embedded cache".to_owned(),
            None,
            Action::await_change(),
        ),
        ReadBackend::Clusterpedia { namespace } => {
            match register(&ctx, &instance, namespace).await? {
                // Clusterpedia's verdict is polled until it is Ready: nothing here watches it.
                Ok(readiness) => {
                    let requeue = if readiness.ready {
                        RESYNC
                    } else {
                        ctx.config.probe_interval
                    };
                    (
                        true,
                        reason::REGISTERED,
                        format!("registered as PediaCluster {}", pedia_cluster_name(&name)),
                        Some(readiness),
                        Action::requeue(requeue),
                    )
                }
                Err(missing) => (
                    false,
                    reason::WAITING_FOR_CREDENTIALS,
                    missing.clone(),
                    Some(PediaReadiness {
                        ready: false,
                        reason: reason::WAITING_FOR_CREDENTIALS.to_owned(),
                        message: missing,
                    }),
                    Action::requeue(ctx.config.probe_interval),
                ),
            }
        }
    };
    update_status(&ctx.instances(), &name, |fresh, status| {
        set_condition(
            &mut status.conditions,
            condition_type::REGISTERED,
            registered,
            why,
            &message,
            fresh.metadata.generation,
            jiff::Timestamp::now(),
        );
        if let Some(serving) = &serving {
            set_condition(
                &mut status.conditions,
                READ_BACKEND_READY,
                serving.ready,
                &serving.reason,
                &serving.message,
                fresh.metadata.generation,
                jiff::Timestamp::now(),
            );
        }
    })
    .await?;
    Ok(requeue)
}

/// Ensures the kubeconfig Secret and the `PediaCluster`, and says what Clusterpedia reports of
/// it; `Ok(Err(what is missing))` while the instance has no kubeconfig yet.
async fn register(
    ctx: &Context,
    instance: &Instance,
    namespace: &str,
) -> Result<Result<PediaReadiness, String>, Error> {
    let name = instance.name_any();
    let kubeconfig =
        match lookup_kubeconfig(&ctx.host, instance, ctx.config.request_timeout).await? {
            Lookup::Found(kubeconfig) => kubeconfig,
            Lookup::Missing(missing) => return Ok(Err(missing)),
        };
    let owner = instance
        .controller_owner_ref(&())
        .into_iter()
        .collect::<Vec<_>>();
    let labels = BTreeMap::from([
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
        (INSTANCE_LABEL.to_owned(), name.clone()),
    ]);
    let secret_name = pedia_kubeconfig_secret_name(&name);
    let secrets: Api<Secret> = Api::namespaced(ctx.host.clone(), namespace);
    let object = format!("{namespace}/{secret_name}");
    let data = BTreeMap::from([(
        DEFAULT_KUBECONFIG_KEY.to_owned(),
        ByteString(kubeconfig.yaml.into_bytes()),
    )]);
    let existing = secrets
        .get_opt(&secret_name)
        .await
        .map_err(Error::kube("read Secret", &object))?;
    if existing.and_then(|s| s.data) != Some(data.clone()) {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(secret_name.clone()),
                namespace: Some(namespace.to_owned()),
                labels: Some(labels.clone()),
                owner_references: Some(owner.clone()),
                ..ObjectMeta::default()
            },
            data: Some(data),
            type_: Some("Opaque".to_owned()),
            ..Secret::default()
        };
        secrets
            .patch(
                &secret_name,
                &PatchParams::apply(MANAGER_NAME).force(),
                &Patch::Apply(&secret),
            )
            .await
            .map_err(Error::kube("apply Secret", &object))?;
    }
    let pedia_name = pedia_cluster_name(&name);
    let pedias: Api<PediaCluster> = Api::all(ctx.host.clone());
    let sync = sync_resources_for(instance.metadata.annotations.as_ref());
    let mut desired = pedia_cluster(&name, sync);
    desired.metadata.owner_references = Some(owner);
    let current = pedias
        .get_opt(&pedia_name)
        .await
        .map_err(Error::kube("read PediaCluster", &pedia_name))?;
    let cluster = match current.filter(|c| pedia_cluster_up_to_date(c, &desired)) {
        Some(current) => current,
        None => pedias
            .patch(
                &pedia_name,
                &PatchParams::apply(MANAGER_NAME).force(),
                &Patch::Apply(&desired),
            )
            .await
            .map_err(Error::kube("apply PediaCluster", &pedia_name))?,
    };
    Ok(Ok(pedia_readiness(&cluster)))
}

/// Unregisters `instance` from the read backend; absent objects are fine.
pub async fn cleanup(ctx: &Context, instance: &str) -> Result<(), Error> {
    let ReadBackend::Clusterpedia { namespace } = &ctx.config.read_backend else {
        return Ok(());
    };
    let pedia_name = pedia_cluster_name(instance);
    let pedias: Api<PediaCluster> = Api::all(ctx.host.clone());
    delete_if_present(&pedias, &pedia_name, "delete PediaCluster").await?;
    let secrets: Api<Secret> = Api::namespaced(ctx.host.clone(), namespace);
    delete_if_present(
        &secrets,
        &pedia_kubeconfig_secret_name(instance),
        "delete Secret",
    )
    .await
}

/// Deletes `name`, treating "not found" as done.
pub async fn delete_if_present<K>(
    api: &Api<K>,
    name: &str,
    action: &'static str,
) -> Result<(), Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(err) if is_not_found(&err) => Ok(()),
        Err(source) => Err(Error::Kube {
            action,
            object: name.to_owned(),
            source,
        }),
    }
}
