//! The EventReflection reconciler **(ours)**: the worker's Events about a physical pod or
//! claim of this binding become Events about its virtual object, with virtual names in the
//! message and alike Events counted as one ([`super::mapping::event`]). Keys are
//! `Pod/<physical name>` and `PersistentVolumeClaim/<physical name>`; Events about any other
//! object of the mount namespace (not ours, or another kind) have no key.
//!
//! Rate-limited per object: after a write, the object's Events are written again at most
//! once per [`WRITE_INTERVAL`], whatever the worker records meanwhile (its counts are summed
//! then). Everything is recomputed from the worker's Events and the stored virtual Events
//! (deterministic names), so a restarted syncer updates what it wrote.

use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use kube::api::PostParams;
use kube::{Api, Resource};
use tokio::time::Instant;

use super::error::{Side, TopDownError, request, request_opt};
pub use super::mapping::event::event_key;
use super::mapping::event::{ReflectedObject, event_differs, reflected_events};
use super::state::{TopDown, copied_from, owner_pod_key};
use super::store::object_key;
use crate::naming::virtual_node_name;
use crate::syncer::context::Context;

/// Name of this reconciler in metrics and logs.
pub const NAME: &str = "event-reflection";
/// Least time between two writes of one object's reflected Events.
pub const WRITE_INTERVAL: Duration = Duration::from_secs(1);

/// The physical object of `key` and its virtual object, when both are ours and known.
fn reflected_object(td: &TopDown, key: &str) -> Option<ReflectedObject> {
    let (kind, name) = key.split_once('/')?;
    let stores = td.stores();
    let physical_key = td.physical_key(name);
    let (physical_uid, mut virtual_ref, node) = match kind {
        "Pod" => {
            let pod = stores.physical_pods.get(&physical_key)?;
            let owner = stores.virtual_pods.get(&owner_pod_key(&pod.metadata)?)?;
            let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
            (pod.metadata.uid.clone()?, owner.object_ref(&()), node)
        }
        "PersistentVolumeClaim" => {
            let claim = stores.physical_pvcs.get(&physical_key)?;
            let (namespace, virtual_name) = copied_from(&claim.metadata)?;
            let owner = stores.pvcs.get(&object_key(&namespace, &virtual_name))?;
            (claim.metadata.uid.clone()?, owner.object_ref(&()), None)
        }
        _ => return None,
    };
    // The reference names the object, not one version of it.
    virtual_ref.resource_version = None;
    let nodes = node
        .map(|n| {
            let v = virtual_node_name(&td.settings.cluster_id, &n);
            (n, v)
        })
        .into_iter()
        .collect();
    Some(ReflectedObject {
        kind: kind.to_owned(),
        physical_namespace: td.settings.mount_namespace.clone(),
        physical_name: name.to_owned(),
        physical_uid,
        virtual_ref,
        nodes,
    })
}

/// Reconciles one key of the EventReflection queue.
pub(crate) async fn reconcile(
    ctx: &Context,
    td: &TopDown,
    key: &str,
) -> Result<Option<Instant>, TopDownError> {
    if let Some(next) = td.event_write_allowed_at(key, WRITE_INTERVAL)
        && next > Instant::now()
    {
        return Ok(Some(next));
    }
    let Some(object) = reflected_object(td, key) else {
        return Ok(None);
    };
    let desired = {
        let stores = td.stores();
        let about: Vec<&Event> = stores
            .physical_events
            .values()
            .map(|e| &**e)
            .filter(|e| object.is_about(e))
            .collect();
        reflected_events(&object, &about)
    };
    let namespace = object.virtual_ref.namespace.clone().unwrap_or_default();
    let api: Api<Event> = Api::namespaced(ctx.computing.clone(), &namespace);
    let timeout = ctx.config.request_timeout;
    let mut wrote = false;
    for event in desired {
        let name = event.metadata.name.clone().unwrap_or_default();
        let event_key = object_key(&namespace, &name);
        let stored = request_opt(
            timeout,
            Side::Computing,
            "get",
            "Event",
            &event_key,
            api.get(&name),
        )
        .await?;
        match stored {
            None => {
                let created = request(
                    timeout,
                    Side::Computing,
                    "create",
                    "Event",
                    &event_key,
                    api.create(&PostParams::default(), &event),
                )
                .await;
                match created {
                    Ok(_) => wrote = true,
                    // Written meanwhile (another replica's last moments): the next round
                    // compares.
                    Err(err) if err.code() == Some(409) => wrote = true,
                    Err(err) => return Err(err),
                }
            }
            Some(stored) if event_differs(&stored, &event) => {
                let mut update = event;
                update.metadata.resource_version = stored.metadata.resource_version.clone();
                update.metadata.uid = stored.metadata.uid.clone();
                request(
                    timeout,
                    Side::Computing,
                    "update",
                    "Event",
                    &event_key,
                    api.replace(&name, &PostParams::default(), &update),
                )
                .await?;
                wrote = true;
            }
            Some(_) => {}
        }
    }
    if wrote {
        td.record_event_write(key);
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_pods_and_claims_of_the_mount_namespace_have_keys() {
        let event = |kind: &str, namespace: &str| -> Event {
            serde_json::from_value(json!({
                "metadata": {"name": "e", "namespace": namespace},
                "involvedObject": {"kind": kind, "namespace": namespace, "name": "x"},
            }))
            .unwrap()
        };
        for (kind, namespace, want) in [
            ("Pod", "mount", Some("Pod/x")),
            (
                "PersistentVolumeClaim",
                "mount",
                Some("PersistentVolumeClaim/x"),
            ),
            ("Pod", "elsewhere", None),
            ("Node", "mount", None),
            ("ConfigMap", "mount", None),
        ] {
            assert_eq!(
                event_key(&event(kind, namespace), "mount").as_deref(),
                want,
                "{kind} in {namespace}"
            );
        }
    }
}
