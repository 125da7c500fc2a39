//! The instance lifecycle: the finalizer, the operator's `Karmada` object for Provision-mode
//! instances, and safe delete (refused while member clusters remain unless forced; the Karmada
//! install released per `deletionPolicy`; registrations and roles removed).

pub mod decision;

use std::sync::Arc;

use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use kube_kit::client::is_not_found;
use kube_kit::finalizer;

use super::connection::{connect, find_kubeconfig};
use kube_kit::conditions::{remove_condition, set_condition};

use super::status::update_status;
use super::{Context, Error, MANAGER_NAME, instance_registry, virtual_cluster_sync};
use crate::instance::{FINALIZER, Instance, InstanceMode, InstancePhase, condition_type, reason};
use crate::models::cluster::Cluster;
use crate::models::operator::Karmada;
use decision::{DeletionDecision, deletion_decision, operator_karmada};

/// Controller name (metrics, events).
pub const NAME: &str = "instance-lifecycle";

/// How often a healthy instance is looked at again without any change.
const RESYNC: std::time::Duration = std::time::Duration::from_secs(300);

/// Reconciles one Instance.
pub async fn reconcile(instance: Arc<Instance>, ctx: Arc<Context>) -> Result<Action, Error> {
    let api = ctx.instances();
    if instance.is_deleting() {
        if !instance.has_finalizer() {
            return Ok(Action::await_change());
        }
        return delete(&instance, &ctx).await;
    }
    if !instance.has_finalizer() {
        finalizer::add(&api, &instance, FINALIZER)
            .await
            .map_err(Error::kube(
                "update finalizers of Instance",
                &instance.name_any(),
            ))?;
    }
    if instance.spec.mode == InstanceMode::Provision {
        ensure_operator_karmada(&ctx, &instance).await?;
    }
    Ok(Action::requeue(RESYNC))
}

/// Creates or updates the operator's `Karmada` object of a Provision-mode instance.
async fn ensure_operator_karmada(ctx: &Context, instance: &Instance) -> Result<(), Error> {
    let Some(provision) = &instance.spec.provision else {
        return Ok(());
    };
    let name = instance.name_any();
    let desired = operator_karmada(&name, provision);
    let karmada_name = desired.metadata.name.clone().unwrap_or_default();
    let object = format!("{}/{karmada_name}", provision.host_namespace);
    let api: Api<Karmada> = Api::namespaced(ctx.host.clone(), &provision.host_namespace);
    let existing = api
        .get_opt(&karmada_name)
        .await
        .map_err(Error::kube("read Karmada", &object))?;
    let up_to_date = existing.as_ref().is_some_and(|k| {
        k.spec.components == desired.spec.components
            && k.spec.private_registry == desired.spec.private_registry
            && k.spec.feature_gates == desired.spec.feature_gates
    });
    if !up_to_date {
        api.patch(
            &karmada_name,
            &PatchParams::apply(MANAGER_NAME).force(),
            &Patch::Apply(&desired),
        )
        .await
        .map_err(Error::kube("apply Karmada", &object))?;
    }
    Ok(())
}

/// Member clusters of `instance`, by a bounded list in the instance itself; `None` when it
/// does not answer. Never from the watch cache: a cache keeps its last list while its watch
/// fails, so an unreachable instance would seem to have the members it last had (none, for
/// an instance that had none), and deletion must not proceed on that.
async fn member_count(ctx: &Context, instance: &Instance) -> Option<usize> {
    let name = instance.name_any();
    let timeout = ctx.config.request_timeout;
    let kubeconfig = find_kubeconfig(&ctx.host, instance, timeout).await.ok()??;
    let connection = connect(&name, &kubeconfig, timeout).await.ok()?;
    let clusters: Api<Cluster> = Api::all(connection.client);
    let params = ListParams::default();
    match tokio::time::timeout(timeout, clusters.list_metadata(&params)).await {
        Ok(Ok(list)) => Some(list.items.len()),
        // No Cluster API at all: the instance cannot have members.
        Ok(Err(err)) if is_not_found(&err) => Some(0),
        _ => None,
    }
}

async fn delete(instance: &Instance, ctx: &Context) -> Result<Action, Error> {
    let name = instance.name_any();
    let api = ctx.instances();
    let members = member_count(ctx, instance).await;
    match deletion_decision(instance, members) {
        DeletionDecision::Blocked { reason, message } => {
            let wrote = update_status(&api, &name, |fresh, status| {
                set_condition(
                    &mut status.conditions,
                    condition_type::DELETION_BLOCKED,
                    true,
                    reason,
                    &message,
                    fresh.metadata.generation,
                    jiff::Timestamp::now(),
                );
                status.phase = Some(InstancePhase::DeletionBlocked);
            })
            .await?;
            if wrote {
                ctx.writes.lifecycle.inc();
                tracing::info!(instance = %name, %message, "deletion refused");
            }
            Ok(Action::requeue(ctx.config.deletion_recheck))
        }
        DeletionDecision::Proceed {
            release_karmada,
            forced,
        } => {
            if forced {
                tracing::warn!(instance = %name, "deleting although member clusters may remain ({})", reason::FORCED);
            }
            update_status(&api, &name, |_, status| {
                remove_condition(&mut status.conditions, condition_type::DELETION_BLOCKED);
                status.phase = Some(InstancePhase::Deleting);
            })
            .await?;
            virtual_cluster_sync::cleanup(ctx, &name).await?;
            instance_registry::cleanup(ctx, &name).await?;
            if release_karmada && let Some(provision) = &instance.spec.provision {
                let karmadas: Api<Karmada> =
                    Api::namespaced(ctx.host.clone(), &provision.host_namespace);
                let karmada_name = crate::naming::operator_karmada_name(&name);
                match karmadas
                    .delete(&karmada_name, &DeleteParams::default())
                    .await
                {
                    Ok(_) => {}
                    Err(err) if is_not_found(&err) => {}
                    Err(source) => {
                        return Err(Error::Kube {
                            action: "delete Karmada",
                            object: format!("{}/{karmada_name}", provision.host_namespace),
                            source,
                        });
                    }
                }
            }
            ctx.workers.stop(&name);
            finalizer::remove(&api, instance, FINALIZER)
                .await
                .map_err(Error::kube("update finalizers of Instance", &name))?;
            Ok(Action::await_change())
        }
    }
}
