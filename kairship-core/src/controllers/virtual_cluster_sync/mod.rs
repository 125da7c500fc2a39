//! virtual-cluster-sync: registers each instance with the read backend. With Clusterpedia, a
//! `PediaCluster` named `kairship-<instance>` reading through a kubeconfig Secret in
//! Clusterpedia's namespace; with the embedded cache there is nothing to create. Deleting the
//! instance unregisters it ([`cleanup`], called by the lifecycle controller).

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
use pedia_cluster::{default_sync_resources, pedia_cluster, pedia_cluster_up_to_date};

/// Controller name (metrics, events).
pub const NAME: &str = "virtual-cluster-sync";

/// How often a registration is refreshed (kubeconfig rotation) without any change.
const RESYNC: Duration = Duration::from_secs(60);

/// Reconciles one Instance.
pub async fn reconcile(instance: Arc<Instance>, ctx: Arc<Context>) -> Result<Action, Error> {
    if instance.is_deleting() {
        return Ok(Action::await_change());
    }
    let name = instance.name_any();
    let (registered, why, message, requeue) = match &ctx.config.read_backend {
        ReadBackend::Embedded => (
            true,
            reason::REGISTERED,
            "read through the embedded cache".to_owned(),
            Action::await_change(),
        ),
        ReadBackend::Clusterpedia { namespace } => {
            match register(&ctx, &instance, namespace).await? {
                Ok(()) => (
                    true,
                    reason::REGISTERED,
                    format!("registered as PediaCluster {}", pedia_cluster_name(&name)),
                    Action::requeue(RESYNC),
                ),
                Err(missing) => (
                    false,
                    reason::WAITING_FOR_CREDENTIALS,
                    missing,
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
    })
    .await?;
    Ok(requeue)
}

/// Ensures the kubeconfig Secret and the `PediaCluster`; `Ok(Err(what is missing))` while the
/// instance has no kubeconfig yet.
async fn register(
    ctx: &Context,
    instance: &Instance,
    namespace: &str,
) -> Result<Result<(), String>, Error> {
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
    let mut desired = pedia_cluster(&name, default_sync_resources());
    desired.metadata.owner_references = Some(owner);
    let current = pedias
        .get_opt(&pedia_name)
        .await
        .map_err(Error::kube("read PediaCluster", &pedia_name))?;
    if !current.is_some_and(|c| pedia_cluster_up_to_date(&c, &desired)) {
        pedias
            .patch(
                &pedia_name,
                &PatchParams::apply(MANAGER_NAME).force(),
                &Patch::Apply(&desired),
            )
            .await
            .map_err(Error::kube("apply PediaCluster", &pedia_name))?;
    }
    Ok(Ok(()))
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
