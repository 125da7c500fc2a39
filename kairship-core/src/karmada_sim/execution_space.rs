//! What Karmada does around a member's execution space, emulated for kube-sandbox instances,
//! so that removing a member behaves as in a real instance:
//!
//! - the cluster controller puts its finalizer `karmada.io/cluster-controller` on every
//!   Cluster and creates the execution space `karmada-es-<name>`
//!   (karmada-io/karmada `pkg/controllers/cluster/cluster_controller.go`, `syncCluster`,
//!   `createExecutionSpace`);
//! - once a Cluster is being deleted, the Works of its execution space go: when the Cluster is
//!   Ready, the execution controller first deletes from the member each object the Work
//!   applied, identified by the Work's `work.karmada.io/permanent-id` label
//!   (`pkg/controllers/execution/execution_controller.go`, `tryDeleteWorkload`), then drops
//!   its finalizer `karmada.io/execution-controller`; when the Cluster is not Ready, the
//!   finalizer is dropped without touching the member (the objects stay there, orphaned);
//! - when the execution space is empty, the cluster controller deletes it
//!   (`removeExecutionSpace`), then releases the Cluster;
//! - the cluster controller marks a quiet Pull member's `Ready` `Unknown`
//!   (`tryUpdateClusterHealth`, [`super::cluster_health`]), and keeps the scheduling taints of
//!   a Cluster in step with its Ready condition (`taintClusterByCondition`,
//!   [`super::cluster_taints`]);
//! - it records the Events Karmada's records for all of this (`CreateExecutionSpaceSucceed`,
//!   `TaintClusterSucceed`, `RemoveExecutionSpaceSucceed`).
//!
//! Scheduling, propagation and applying Works are not emulated.

use std::time::Duration;

use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Api, Client};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::cluster_health::{Graces, update_pull_health};
use super::cluster_passes::{clusters, on_cluster_changes};
use super::cluster_status;
use super::cluster_taints::{taints_for, taints_message};
use super::events::{EventRecorder, EventType, ObjectRef, component};

/// The cluster controller's finalizer on Clusters.
pub const CLUSTER_FINALIZER: &str = "karmada.io/cluster-controller";
/// The execution controller's finalizer on Works.
pub const EXECUTION_FINALIZER: &str = "karmada.io/execution-controller";
/// Label tying an applied object to its Work (on the Work and on the object).
pub const PERMANENT_ID_LABEL: &str = "work.karmada.io/permanent-id";

/// The execution space of member `cluster`.
pub fn execution_space(cluster: &str) -> String {
    format!("karmada-es-{cluster}")
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn works() -> ApiResource {
    resource("work.karmada.io", "v1alpha1", "Work", "works")
}

fn namespaces() -> ApiResource {
    resource("", "v1", "Namespace", "namespaces")
}

fn finalizers(object: &Value) -> Vec<String> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The finalizers of `object` with `finalizer` added (`None`: it has it already).
pub fn with_finalizer(object: &Value, finalizer: &str) -> Option<Vec<String>> {
    let mut all = finalizers(object);
    if all.iter().any(|f| f == finalizer) {
        return None;
    }
    all.push(finalizer.to_owned());
    Some(all)
}

/// The finalizers of `object` without `finalizer` (`None`: it does not have it).
pub fn without_finalizer(object: &Value, finalizer: &str) -> Option<Vec<String>> {
    let all = finalizers(object);
    let kept: Vec<String> = all.iter().filter(|f| *f != finalizer).cloned().collect();
    (kept.len() != all.len()).then_some(kept)
}

/// Whether a Cluster's Ready condition is True.
pub fn is_ready(cluster: &Value) -> bool {
    cluster
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// Whether the member's object `found` was applied by the Work `work`: both carry the same
/// permanent id (the execution controller leaves any other object alone).
pub fn applied_by(work: &Value, found: &Value) -> bool {
    let pointer = format!("/metadata/labels/{}", PERMANENT_ID_LABEL.replace('/', "~1"));
    let id = work.pointer(&pointer).and_then(Value::as_str);
    id.is_some() && found.pointer(&pointer).and_then(Value::as_str) == id
}

async fn set_finalizers(
    api: &Api<DynamicObject>,
    name: &str,
    finalizers: Vec<String>,
) -> Result<(), kube::Error> {
    let patch = json!({"metadata": {"finalizers": finalizers}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|_| ())
}

/// Deletes from the member what `work` applied there.
async fn delete_applied(member: &Client, work: &Value) -> Result<(), String> {
    for manifest in work
        .pointer("/spec/workload/manifests")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let api_version = manifest["apiVersion"].as_str().unwrap_or_default();
        let kind = manifest["kind"].as_str().unwrap_or_default();
        let Some(name) = manifest.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, _) = kube::discovery::pinned_kind(member, &gvk)
            .await
            .map_err(|e| format!("{kind}: {e}"))?;
        let api: Api<DynamicObject> = match manifest
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
        {
            Some(ns) => Api::namespaced_with(member.clone(), ns, &resource),
            None => Api::all_with(member.clone(), &resource),
        };
        let found = match api.get_opt(name).await {
            Ok(Some(found)) => serde_json::to_value(found).unwrap_or(Value::Null),
            Ok(None) => continue,
            Err(e) => return Err(format!("{kind} {name}: {e}")),
        };
        if !applied_by(work, &found) {
            continue;
        }
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(format!("{kind} {name}: {e}")),
        }
    }
    Ok(())
}

/// The reference to a Cluster its events are about.
fn cluster_ref(cluster: &Value) -> Option<ObjectRef> {
    let mut typed = cluster.clone();
    typed["apiVersion"] = json!("cluster.karmada.io/v1alpha1");
    typed["kind"] = json!("Cluster");
    ObjectRef::of(&typed)
}

/// One pass over the execution space of the deleted `cluster`; `Ok(true)` once the Cluster
/// could be released.
async fn remove_execution_space(
    karmada: &Client,
    cluster: &Value,
    events: &EventRecorder,
) -> Result<bool, String> {
    let name = cluster
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let space = execution_space(name);
    let works_api: Api<DynamicObject> = Api::namespaced_with(karmada.clone(), &space, &works());
    let listed = match works_api.list(&ListParams::default()).await {
        Ok(list) => list.items,
        // No Work type served: nothing was ever applied.
        Err(kube::Error::Api(s)) if s.code == 404 => Vec::new(),
        Err(e) => return Err(format!("listing the Works of {space}: {e}")),
    };
    let member = if is_ready(cluster) && !listed.is_empty() {
        Some(cluster_status::member_client(karmada, cluster).await?)
    } else {
        None
    };
    for work in &listed {
        let Some(work_name) = work.metadata.name.clone() else {
            continue;
        };
        let value = serde_json::to_value(work).unwrap_or(Value::Null);
        if let Some(member) = &member {
            delete_applied(member, &value).await?;
        }
        if let Some(kept) = without_finalizer(&value, EXECUTION_FINALIZER) {
            set_finalizers(&works_api, &work_name, kept)
                .await
                .map_err(|e| format!("work {space}/{work_name}: {e}"))?;
        }
        match works_api.delete(&work_name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(format!("work {space}/{work_name}: {e}")),
        }
    }
    if !listed.is_empty() {
        return Ok(false);
    }
    let spaces: Api<DynamicObject> = Api::all_with(karmada.clone(), &namespaces());
    match spaces.get_opt(&space).await {
        Ok(None) => {}
        Ok(Some(ns)) => {
            if ns.metadata.deletion_timestamp.is_none()
                && spaces
                    .delete(&space, &DeleteParams::default())
                    .await
                    .is_ok()
            {
                events.record_about(
                    component::CLUSTER,
                    cluster_ref(cluster),
                    EventType::Normal,
                    "RemoveExecutionSpaceSucceed",
                    format!("Removed execution space for cluster({name})."),
                );
            }
            return Ok(false);
        }
        Err(e) => return Err(format!("namespace {space}: {e}")),
    }
    let cluster_api: Api<DynamicObject> = Api::all_with(karmada.clone(), &clusters());
    if let Some(kept) = without_finalizer(cluster, CLUSTER_FINALIZER) {
        set_finalizers(&cluster_api, name, kept)
            .await
            .map_err(|e| format!("cluster {name}: {e}"))?;
    }
    Ok(true)
}

/// One pass over every Cluster of `karmada`, with the cluster controller's `graces`.
pub async fn sync_once(
    karmada: &Client,
    events: &EventRecorder,
    graces: Graces,
) -> Result<(), kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(karmada.clone(), &clusters());
    let spaces: Api<DynamicObject> = Api::all_with(karmada.clone(), &namespaces());
    for cluster in api.list(&ListParams::default()).await?.items {
        let Some(name) = cluster.metadata.name.clone() else {
            continue;
        };
        let value = serde_json::to_value(&cluster).unwrap_or(Value::Null);
        if cluster.metadata.deletion_timestamp.is_some() {
            if let Err(why) = remove_execution_space(karmada, &value, events).await {
                tracing::debug!(cluster = %name, reason = %why, "execution space not removed yet");
            }
            continue;
        }
        let space = execution_space(&name);
        if spaces.get_opt(&space).await?.is_none() {
            let body = DynamicObject::new(&space, &namespaces());
            match spaces.create(&PostParams::default(), &body).await {
                Ok(_) => events.record_about(
                    component::CLUSTER,
                    cluster_ref(&value),
                    EventType::Normal,
                    "CreateExecutionSpaceSucceed",
                    format!("Created execution space({space}) for cluster({name})."),
                ),
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
        update_pull_health(&api, &value, graces).await;
        taint_by_condition(&api, &value, events).await;
        if let Some(all) = with_finalizer(&value, CLUSTER_FINALIZER) {
            set_finalizers(&api, &name, all).await?;
        }
    }
    Ok(())
}

/// `taintClusterByCondition` with `updateClusterTaints`: written against the resourceVersion
/// read, so a taint someone set meanwhile is not lost (the next pass sees it).
async fn taint_by_condition(api: &Api<DynamicObject>, cluster: &Value, events: &EventRecorder) {
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let Some(taints) = taints_for(cluster, &now) else {
        return;
    };
    let name = cluster
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let patch = json!({
        "metadata": {"resourceVersion": cluster.pointer("/metadata/resourceVersion")},
        "spec": {"taints": taints},
    });
    let (event_type, reason, message) = match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => (
            EventType::Normal,
            "TaintClusterSucceed",
            format!("Taint cluster succeed: {}.", taints_message(&taints)),
        ),
        // A stale view: the next pass decides again.
        Err(kube::Error::Api(s)) if s.code == 409 => return,
        Err(e) => (EventType::Warning, "TaintClusterFailed", e.to_string()),
    };
    events.record_about(
        component::CLUSTER,
        cluster_ref(cluster),
        event_type,
        reason,
        message,
    );
}

/// Runs the emulation on `karmada` until `shutdown`: a pass on every change of a Cluster and
/// every `interval`.
pub async fn run(karmada: Client, interval: Duration, shutdown: CancellationToken) {
    run_with(karmada, interval, Graces::default(), shutdown).await;
}

/// [`run`] with other grace periods than Karmada's defaults.
pub async fn run_with(
    karmada: Client,
    interval: Duration,
    graces: Graces,
    shutdown: CancellationToken,
) {
    let events = EventRecorder::start(karmada.clone(), shutdown.clone());
    on_cluster_changes(karmada, interval, shutdown, "execution spaces", |k| {
        let events = events.clone();
        async move { sync_once(&k, &events, graces).await }
    })
    .await;
}

/// Starts [`run`] in the background.
pub fn spawn(
    karmada: Client,
    interval: Duration,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(karmada, interval, shutdown))
}

/// Starts [`run_with`] in the background.
pub fn spawn_with(
    karmada: Client,
    interval: Duration,
    graces: Graces,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run_with(karmada, interval, graces, shutdown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finalizers_are_added_and_dropped_once() {
        let none = json!({"metadata": {}});
        let ours = json!({"metadata": {"finalizers": ["other", CLUSTER_FINALIZER]}});
        assert_eq!(
            with_finalizer(&none, CLUSTER_FINALIZER),
            Some(vec![CLUSTER_FINALIZER.to_owned()])
        );
        assert_eq!(with_finalizer(&ours, CLUSTER_FINALIZER), None);
        assert_eq!(
            without_finalizer(&ours, CLUSTER_FINALIZER),
            Some(vec!["other".to_owned()])
        );
        assert_eq!(without_finalizer(&none, CLUSTER_FINALIZER), None);
    }

    #[test]
    fn only_what_a_work_applied_is_its_to_delete() {
        let work = json!({"metadata": {"labels": {PERMANENT_ID_LABEL: "p1"}}});
        for (found, mine) in [
            (
                json!({"metadata": {"labels": {PERMANENT_ID_LABEL: "p1"}}}),
                true,
            ),
            (
                json!({"metadata": {"labels": {PERMANENT_ID_LABEL: "p2"}}}),
                false,
            ),
            (json!({"metadata": {}}), false),
        ] {
            assert_eq!(applied_by(&work, &found), mine, "{found}");
        }
        assert!(!applied_by(&json!({}), &json!({"metadata": {}})));
        let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(is_ready(&ready));
        assert!(!is_ready(
            &json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
        ));
    }
}
