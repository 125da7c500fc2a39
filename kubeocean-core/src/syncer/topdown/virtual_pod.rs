//! The VirtualPod reconciler: a virtual pod bound to one of this binding's virtual nodes gets
//! its physical pod once everything it needs is copied; label, annotation, image and
//! `activeDeadlineSeconds` changes follow; deleting the virtual pod deletes the physical one
//! and then lets the virtual pod go (as a kubelet would); a physical pod that vanished behind
//! our back fails the virtual pod with `PhysicalPodLost`. The PhysicalPod reconciler records
//! the mapping on the virtual pod right after the create.
//!
//! Every step can be repeated: the physical name is deterministic, the mapping is recorded
//! on both objects, and a 409 on create is resolved by ownership (adopt ours, report others).

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::events::EventType;
use kube::{Api, Resource, ResourceExt};
use kube_kit::controller::object_key as key_of;
use kube_kit::slim::Slim;
use tokio::time::Instant;

use super::error::{
    Created, Side, TopDownError, create_or_read, describe_owner, request, request_opt,
};
use super::mapping::apply_in_cluster_network;
use super::mapping::{
    Dependencies, MapError, MappingContext, Need, Ownership, SkipReason, dependencies,
    ephemeral_containers_update, lost_pod_status, ownership, physical_node_of, physical_pod,
    physical_pod_name, physical_pod_reference, physical_pod_update, reference_patch, should_map,
    token_secret_name,
};
use super::state::{TopDown, recorded_physical, safety_recheck};
use super::store::{object_key, split_key};
use super::{token_refresh, virtual_copy, virtual_volume};
use crate::syncer::context::Context;

/// Name of this reconciler in metrics and logs.
pub const NAME: &str = "virtual-pod";
/// Event reason: a pod waits for a ConfigMap, Secret or claim that does not exist yet.
pub const REASON_DEPENDENCY_MISSING: &str = "DependencyMissing";
/// Event reason: a pod waits for a claim that is not Bound.
pub const REASON_CLAIM_NOT_BOUND: &str = "VolumeClaimNotBound";
/// Event reason: the physical pod vanished.
pub const REASON_PHYSICAL_POD_LOST: &str = super::mapping::status::PHYSICAL_POD_LOST;

/// What a virtual pod waits for before it can be mapped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Waiting {
    /// Required objects that do not exist (`Kind namespace/name`).
    pub missing: Vec<String>,
    /// Claims that exist but are not Bound (`namespace/name`).
    pub unbound: Vec<String>,
}

impl Waiting {
    /// Whether nothing is awaited.
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty() && self.unbound.is_empty()
    }
}

/// The virtual objects of `deps` that are missing from the stores (`exists` answers for a
/// kind and name); optional references never wait.
pub fn missing_dependencies(
    namespace: &str,
    deps: &Dependencies,
    exists: impl Fn(&str, &str) -> bool,
) -> Vec<String> {
    let mut missing = Vec::new();
    for (kind, refs) in [("ConfigMap", &deps.config_maps), ("Secret", &deps.secrets)] {
        for (name, need) in refs {
            if *need == Need::Required && !exists(kind, name) {
                missing.push(format!("{kind} {namespace}/{name}"));
            }
        }
    }
    for claim in &deps.pvcs {
        if !exists("PersistentVolumeClaim", claim) {
            missing.push(format!("PersistentVolumeClaim {namespace}/{claim}"));
        }
    }
    missing
}

/// The Event note for a pod that waits.
pub fn waiting_note(waiting: &Waiting) -> String {
    let mut parts = Vec::new();
    if !waiting.missing.is_empty() {
        parts.push(format!(
            "waiting for {} to exist",
            waiting.missing.join(", ")
        ));
    }
    if !waiting.unbound.is_empty() {
        parts.push(format!(
            "PersistentVolumeClaim {} not Bound (only bound claims are mapped)",
            waiting.unbound.join(", ")
        ));
    }
    format!(
        "{}; the pod is mapped to the worker cluster once this is resolved",
        parts.join("; ")
    )
}

/// The physical node of the virtual node `pod` is bound to, when it is one of ours.
pub(crate) fn physical_node(ctx: &Context, td: &TopDown, pod: &Pod) -> Option<String> {
    let node = pod.spec.as_ref()?.node_name.as_deref()?;
    let vnode = ctx.computing_index().vnode(node)?;
    physical_node_of(&vnode, &td.settings).map(str::to_owned)
}

fn map_error(pod: &Pod) -> impl Fn(MapError) -> TopDownError + '_ {
    move |source| TopDownError::Map {
        kind: "Pod",
        name: object_key(
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default(),
        ),
        source,
    }
}

/// Reconciles virtual pod `key` (`namespace/name`).
pub(crate) async fn reconcile(
    ctx: &Context,
    td: &TopDown,
    key: &str,
) -> Result<Option<Instant>, TopDownError> {
    let Some(pod) = td.virtual_pod(key) else {
        return Ok(None);
    };
    let physical_node = physical_node(ctx, td, &pod);
    let recorded = recorded_physical(&pod, &td.settings.mount_namespace);
    if physical_node.is_none() && recorded.is_none() {
        return Ok(None);
    }
    let physical_name = physical_pod_name(&pod).map_err(map_error(&pod))?;
    if pod.metadata.deletion_timestamp.is_some() {
        return finish_deletion(ctx, td, &pod, &physical_name).await;
    }

    let deps = dependencies(&pod);
    let token_secret = match deps.service_account_token {
        Some(_) => Some(token_secret_name(&pod).map_err(map_error(&pod))?),
        None => None,
    };
    let mapping = MappingContext {
        binding: &td.settings,
        physical_node_name: physical_node.as_deref(),
        token_secret_name: token_secret.as_deref(),
    };
    match should_map(&pod, &mapping) {
        Ok(()) => {}
        Err(SkipReason::Finished { .. }) => {
            // Its token Secret is no longer needed.
            td.tokens.add(key);
            return Ok(None);
        }
        Err(_) => return Ok(None),
    }

    if let Some((_, uid)) = &recorded
        && td
            .physical_pod(&physical_name)
            .and_then(|p| p.metadata.uid.clone())
            .as_ref()
            != Some(uid)
        && !physical_pod_exists(ctx, td, &physical_name, uid).await?
    {
        mark_lost(ctx, td, &pod).await?;
        return Ok(None);
    }

    // Lost before the mapping reached the virtual pod: only this process saw it (after a
    // restart the pod is mapped again).
    if recorded.is_none()
        && td.physical_pod(&physical_name).is_none()
        && pod
            .metadata
            .uid
            .as_deref()
            .is_some_and(|uid| td.lost_before_record(uid))
    {
        mark_lost(ctx, td, &pod).await?;
        return Ok(None);
    }

    let waiting = ensure_dependencies(ctx, td, &pod, &deps).await?;
    if !waiting.is_empty() {
        let reason = if waiting.missing.is_empty() {
            REASON_CLAIM_NOT_BOUND
        } else {
            REASON_DEPENDENCY_MISSING
        };
        let note = waiting_note(&waiting);
        tracing::info!(pod = %key, "{note}");
        td.publish(ctx, &pod.object_ref(&()), EventType::Warning, reason, &note)
            .await;
        // The watch of the awaited object queues the pod again.
        return Ok(None);
    }
    if let Some(spec) = &deps.service_account_token {
        token_refresh::ensure(ctx, td, &pod, spec).await?;
    }

    let mut desired = physical_pod(&pod, &mapping).map_err(map_error(&pod))?;
    with_in_cluster_network(ctx, td, &pod, &mut desired);
    let physical = match td.physical_pod(&physical_name) {
        Some(existing) => follow(ctx, td, &pod, &desired, &existing).await?,
        None => create(ctx, td, key, &pod, desired).await?,
    };
    let Some(physical) = physical else {
        // A physical pod of an earlier virtual pod of that name is still there; the
        // PhysicalPod reconciler removes it.
        td.physical_pods.add(&physical_name);
        return Ok(Some(Instant::now() + ctx.config.retry_interval));
    };
    // The PhysicalPod reconciler records the mapping on the virtual pod, so that the next
    // physical pod is created without waiting for that write.
    if reference_patch(&pod, &physical_pod_reference(&physical)).is_some() {
        td.physical_pods.add(&physical_name);
    }
    Ok(None)
}

/// Points the physical pod at the computing cluster's DNS and API server, as far as their
/// Services are known (a missing one is reported on the binding, see
/// [`super::service_reflection`]).
fn with_in_cluster_network(ctx: &Context, td: &TopDown, pod: &Pod, physical: &mut Pod) {
    let (network, _) = td.in_cluster_network(&ctx.config);
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    if let Some(spec) = physical.spec.as_mut() {
        apply_in_cluster_network(spec, namespace, name, &network);
    }
}

/// Checks the dependencies in the stores and copies those that exist; returns what the pod
/// still waits for.
async fn ensure_dependencies(
    ctx: &Context,
    td: &TopDown,
    pod: &Pod,
    deps: &Dependencies,
) -> Result<Waiting, TopDownError> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let (config_maps, secrets, claims) = {
        let stores = td.stores();
        let get_all = |names: &mut dyn Iterator<Item = &String>, kind: &str| {
            names
                .filter_map(|name| {
                    let key = object_key(namespace, name);
                    match kind {
                        "ConfigMap" => stores.config_maps.get(&key).map(Found::ConfigMap),
                        "Secret" => stores.secrets.get(&key).map(Found::Secret),
                        _ => stores.pvcs.get(&key).map(Found::Claim),
                    }
                })
                .collect::<Vec<_>>()
        };
        (
            get_all(&mut deps.config_maps.keys(), "ConfigMap"),
            get_all(&mut deps.secrets.keys(), "Secret"),
            get_all(&mut deps.pvcs.iter(), "PersistentVolumeClaim"),
        )
    };
    let present = |kind: &str, name: &str| {
        let found = match kind {
            "ConfigMap" => &config_maps,
            "Secret" => &secrets,
            _ => &claims,
        };
        found.iter().any(|f| f.name() == name)
    };
    let mut waiting = Waiting {
        missing: missing_dependencies(namespace, deps, present),
        unbound: Vec::new(),
    };
    if !waiting.missing.is_empty() {
        return Ok(waiting);
    }
    for found in config_maps.iter().chain(&secrets) {
        match found {
            Found::ConfigMap(cm) => virtual_copy::ensure_copy(ctx, td, cm.as_ref()).await?,
            Found::Secret(secret) => virtual_copy::ensure_copy(ctx, td, secret.as_ref()).await?,
            Found::Claim(_) => {}
        }
    }
    for found in &claims {
        if let Found::Claim(claim) = found {
            match virtual_volume::ensure_claim(ctx, td, claim).await? {
                virtual_volume::ClaimState::Ready => {}
                virtual_volume::ClaimState::NotBound => waiting
                    .unbound
                    .push(object_key(namespace, &claim.name_any())),
                virtual_volume::ClaimState::Missing(what) => waiting.missing.push(what),
            }
        }
    }
    Ok(waiting)
}

/// A dependency found in the stores.
enum Found {
    ConfigMap(std::sync::Arc<k8s_openapi::api::core::v1::ConfigMap>),
    Secret(std::sync::Arc<k8s_openapi::api::core::v1::Secret>),
    Claim(std::sync::Arc<k8s_openapi::api::core::v1::PersistentVolumeClaim>),
}

impl Found {
    fn name(&self) -> String {
        match self {
            Found::ConfigMap(o) => o.name_any(),
            Found::Secret(o) => o.name_any(),
            Found::Claim(o) => o.name_any(),
        }
    }
}

/// Creates the physical pod; a 409 is resolved by ownership. `None`: a physical pod of an
/// earlier virtual pod of that name is in the way.
async fn create(
    ctx: &Context,
    td: &TopDown,
    key: &str,
    pod: &Pod,
    desired: Pod,
) -> Result<Option<Pod>, TopDownError> {
    let name = desired.name_any();
    let physical_key = td.physical_key(&name);
    // Answers are read without managedFields: nothing here needs them.
    let desired = Slim(desired);
    let api: Api<Slim<Pod>> = Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace);
    let timeout = ctx.config.request_timeout;
    let created = create_or_read(
        timeout,
        "Pod",
        &physical_key,
        api.create(&PostParams::default(), &desired),
        || api.get(&name),
    )
    .await;
    if let Some(metrics) = &ctx.config.metrics {
        metrics
            .topdown()
            .create_attempted(&td.settings.name, created.is_err());
    }
    let created = created?;
    match created {
        Created::New(created) => {
            let created = created.into_inner();
            tracing::debug!(pod = %key, physical = %name, "physical pod created");
            if let Some(metrics) = &ctx.config.metrics {
                let latency = td
                    .take_first_seen(key)
                    .map(|at| at.elapsed())
                    .unwrap_or_default();
                metrics.topdown().pod_created(&td.settings.name, latency);
            }
            td.remember_physical_pod(created.clone());
            Ok(Some(created))
        }
        Created::Existing(existing, _) => {
            let existing = existing.into_inner();
            td.remember_physical_pod(existing.clone());
            follow(ctx, td, pod, &desired.0, &existing).await
        }
    }
}

/// Brings an existing physical pod in step when it is ours; refuses one that is not.
async fn follow(
    ctx: &Context,
    td: &TopDown,
    pod: &Pod,
    desired: &Pod,
    existing: &Pod,
) -> Result<Option<Pod>, TopDownError> {
    let name = existing.name_any();
    match ownership(&existing.metadata, &pod.metadata) {
        Ownership::Ours => {}
        Ownership::Foreign(owner)
            if owner.namespace == pod.metadata.namespace && owner.name == pod.metadata.name =>
        {
            return Ok(None);
        }
        other => {
            return Err(TopDownError::Conflict {
                kind: "Pod",
                physical: td.physical_key(&name),
                owner: describe_owner(&other),
                wanted: format!("Pod {}", key_of(pod)),
            });
        }
    }
    let api: Api<Pod> = Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace);
    let mut current = existing.clone();
    if let Some(update) = physical_pod_update(desired, existing) {
        current = request(
            ctx.config.request_timeout,
            Side::Worker,
            "update",
            "Pod",
            &td.physical_key(&name),
            api.replace(&name, &PostParams::default(), &update),
        )
        .await?;
        td.remember_physical_pod(current.clone());
    }
    // `kubectl debug` on the virtual pod: only the subresource can add them.
    if let Some(containers) = ephemeral_containers_update(pod, &current).map_err(map_error(pod))? {
        let patch = serde_json::json!({ "spec": { "ephemeralContainers": containers } });
        current = request(
            ctx.config.request_timeout,
            Side::Worker,
            "add ephemeral containers to",
            "Pod",
            &td.physical_key(&name),
            api.patch_ephemeral_containers(&name, &PatchParams::default(), &Patch::Merge(&patch)),
        )
        .await?;
        tracing::info!(pod = %key_of(pod), physical = %name, "ephemeral containers added to the physical pod");
        td.remember_physical_pod(current.clone());
    }
    Ok(Some(current))
}

/// Whether the physical pod `name` with `uid` exists, asking the worker when the store does
/// not have it (it may be behind).
async fn physical_pod_exists(
    ctx: &Context,
    td: &TopDown,
    name: &str,
    uid: &str,
) -> Result<bool, TopDownError> {
    let api: Api<Pod> = Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace);
    let found = request_opt(
        ctx.config.request_timeout,
        Side::Worker,
        "get",
        "Pod",
        &td.physical_key(name),
        api.get(name),
    )
    .await?;
    match found {
        Some(p) if p.metadata.uid.as_deref() == Some(uid) => {
            td.remember_physical_pod(p);
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Fails the virtual pod: its physical pod is gone for good.
async fn mark_lost(ctx: &Context, td: &TopDown, pod: &Pod) -> Result<(), TopDownError> {
    let status = lost_pod_status(
        &pod.status.clone().unwrap_or_default(),
        ctx.config.clock.now(),
    );
    super::pod_status::write_status(ctx, td, pod, &status, None).await?;
    if let Some(metrics) = &ctx.config.metrics {
        metrics.topdown().pod_failed(&td.settings.name);
    }
    let note =
        "the physical pod of this pod no longer exists in the worker cluster; the pod is Failed";
    tracing::warn!(pod = %key_of(pod), "{note}");
    td.publish(
        ctx,
        &pod.object_ref(&()),
        EventType::Warning,
        REASON_PHYSICAL_POD_LOST,
        note,
    )
    .await;
    Ok(())
}

/// A virtual pod being deleted: delete its physical pod (with the virtual pod's grace
/// period), and once that is gone, its token Secret and then the virtual pod itself (grace
/// 0, as a kubelet confirms a pod it stopped).
async fn finish_deletion(
    ctx: &Context,
    td: &TopDown,
    pod: &Pod,
    physical_name: &str,
) -> Result<Option<Instant>, TopDownError> {
    let timeout = ctx.config.request_timeout;
    let physical_key = td.physical_key(physical_name);
    let workers: Api<Pod> = Api::namespaced(ctx.worker.clone(), &td.settings.mount_namespace);
    let physical = match td.physical_pod(physical_name) {
        Some(p) => Some((*p).clone()),
        None => {
            let found = request_opt(
                timeout,
                Side::Worker,
                "get",
                "Pod",
                &physical_key,
                workers.get(physical_name),
            )
            .await?;
            if let Some(p) = &found {
                td.remember_physical_pod(p.clone());
            }
            found
        }
    };
    if let Some(physical) = physical
        && ownership(&physical.metadata, &pod.metadata) == Ownership::Ours
    {
        if physical.metadata.deletion_timestamp.is_some() {
            // Its deletion event brings the pod back here.
            return Ok(Some(safety_recheck(ctx)));
        }
        let params = DeleteParams {
            grace_period_seconds: pod
                .metadata
                .deletion_grace_period_seconds
                .and_then(|g| u32::try_from(g).ok()),
            preconditions: Some(Preconditions {
                uid: physical.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let deleted = request(
            timeout,
            Side::Worker,
            "delete",
            "Pod",
            &physical_key,
            workers.delete(physical_name, &params),
        )
        .await;
        match deleted {
            Ok(either) => {
                if let Some(still_there) = either.left() {
                    td.remember_physical_pod(still_there);
                    return Ok(Some(safety_recheck(ctx)));
                }
            }
            // Gone already (404), or replaced by another pod of that name (409).
            Err(err) if matches!(err.code(), Some(404 | 409)) => {}
            Err(err) => return Err(err),
        }
    }
    token_refresh::remove(ctx, td, pod).await?;

    let key = key_of(pod);
    let (namespace, name) = split_key(&key);
    let api: Api<Pod> = Api::namespaced(ctx.computing.clone(), namespace);
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: pod.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match request(
        timeout,
        Side::Computing,
        "delete",
        "Pod",
        &key,
        api.delete(name, &params),
    )
    .await
    {
        Ok(_) => {}
        Err(err) if matches!(err.code(), Some(404 | 409)) => {}
        Err(err) => return Err(err),
    }
    tracing::debug!(pod = %key, "virtual pod released");
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::super::state::lost_before_record;
    use super::*;
    use crate::labels;
    use serde_json::json;
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn a_physical_pod_deleted_before_the_record_is_lost_only_for_its_live_owner() {
        let physical: Pod = serde_json::from_value(json!({ "metadata": { "name": "p",
            "namespace": "w", "annotations": { labels::VIRTUAL_POD_NAMESPACE: "ns",
                labels::VIRTUAL_POD_NAME: "web", labels::VIRTUAL_POD_UID: "u1" } } }))
        .unwrap();
        let owner = |uid: &str, extra: serde_json::Value| -> Pod {
            let mut pod = json!({ "metadata": { "name": "web", "namespace": "ns", "uid": uid },
                "status": { "phase": "Pending" } });
            if let (Some(pod), Some(extra)) = (pod.as_object_mut(), extra.as_object()) {
                for (k, v) in extra {
                    pod.insert(k.clone(), v.clone());
                }
            }
            serde_json::from_value(pod).unwrap()
        };
        let recorded = json!({ "metadata": { "name": "web", "namespace": "ns", "uid": "u1",
            "annotations": { labels::PHYSICAL_POD_NAMESPACE: "w",
                labels::PHYSICAL_POD_NAME: "p", labels::PHYSICAL_POD_UID: "p1" } } });
        let deleting = json!({ "metadata": { "name": "web", "namespace": "ns", "uid": "u1",
            "deletionTimestamp": "2026-01-01T00:00:00Z" } });
        let table: [(&str, Option<Pod>, Option<&str>); 6] = [
            (
                "live, unrecorded owner",
                Some(owner("u1", json!({}))),
                Some("u1"),
            ),
            ("no owner in the store", None, None),
            (
                "owner replaced (other uid)",
                Some(owner("u2", json!({}))),
                None,
            ),
            (
                "mapping recorded (the VirtualPod reconciler checks it)",
                Some(owner("u1", recorded)),
                None,
            ),
            (
                "owner being deleted (the syncer deletes the physical pod)",
                Some(owner("u1", deleting)),
                None,
            ),
            (
                "owner finished",
                Some(owner("u1", json!({ "status": { "phase": "Succeeded" } }))),
                None,
            ),
        ];
        for (case, owner, want) in table {
            assert_eq!(
                lost_before_record(&physical, owner.as_ref(), "w").as_deref(),
                want,
                "{case}"
            );
        }
    }

    #[test]
    fn missing_required_dependencies_are_listed() {
        let deps = Dependencies {
            config_maps: BTreeMap::from([
                ("cfg".to_owned(), Need::Required),
                ("opt".to_owned(), Need::Optional),
            ]),
            secrets: BTreeMap::from([("creds".to_owned(), Need::Required)]),
            pvcs: BTreeSet::from(["data".to_owned()]),
            service_account_token: None,
        };
        // (objects present as (kind, name), what is reported missing)
        type Case<'a> = (&'a [(&'a str, &'a str)], Vec<&'a str>);
        let table: [Case; 3] = [
            (
                &[],
                vec![
                    "ConfigMap ns/cfg",
                    "Secret ns/creds",
                    "PersistentVolumeClaim ns/data",
                ],
            ),
            (
                &[("ConfigMap", "cfg"), ("Secret", "creds")],
                vec!["PersistentVolumeClaim ns/data"],
            ),
            (
                &[
                    ("ConfigMap", "cfg"),
                    ("Secret", "creds"),
                    ("PersistentVolumeClaim", "data"),
                ],
                vec![],
            ),
        ];
        for (present, want) in table {
            let got = missing_dependencies("ns", &deps, |kind, name| {
                present.iter().any(|(k, n)| *k == kind && *n == name)
            });
            assert_eq!(got, want, "present {present:?}");
        }
    }

    #[test]
    fn waiting_notes_name_what_is_awaited() {
        let note = waiting_note(&Waiting {
            missing: vec!["ConfigMap ns/cfg".into()],
            unbound: vec!["ns/data".into()],
        });
        assert!(
            note.contains("waiting for ConfigMap ns/cfg to exist"),
            "{note}"
        );
        assert!(
            note.contains("PersistentVolumeClaim ns/data not Bound"),
            "{note}"
        );
    }

    #[test]
    fn references_are_recorded_once() {
        let mut pod: Pod = serde_json::from_value(json!({
            "metadata": { "name": "p", "namespace": "ns", "annotations": { "keep": "me" } },
        }))
        .unwrap();
        let reference = BTreeMap::from([
            (labels::PHYSICAL_POD_NAMESPACE.to_owned(), "w".to_owned()),
            (labels::PHYSICAL_POD_NAME.to_owned(), "p-x".to_owned()),
            (labels::PHYSICAL_POD_UID.to_owned(), "u1".to_owned()),
        ]);
        let patch = reference_patch(&pod, &reference).unwrap();
        assert_eq!(
            patch["metadata"]["annotations"][labels::PHYSICAL_POD_UID],
            "u1"
        );
        assert!(recorded_physical(&pod, "w").is_none());
        pod.metadata
            .annotations
            .as_mut()
            .unwrap()
            .extend(reference.clone());
        assert_eq!(reference_patch(&pod, &reference), None);
        assert_eq!(
            recorded_physical(&pod, "w"),
            Some(("p-x".to_owned(), "u1".to_owned()))
        );
        assert_eq!(recorded_physical(&pod, "other"), None);
    }
}
