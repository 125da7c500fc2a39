//! Karmada's execution controller (karmada-io/karmada
//! `pkg/controllers/execution/execution_controller.go` with `pkg/util/objectwatcher/`): each
//! Work's manifests applied to its member (created, or updated when they differ, keeping what
//! the member owns: `RetainClusterFields`), the `Applied` and `Dispatching` conditions set, and a
//! deleted Work's objects removed from the member before its finalizer goes. A member object
//! not managed by Karmada is only taken over with `conflict-resolution: overwrite`.

use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject};
use kube::{Api, Client};
use serde_json::{Value, json};

use super::events::{EventType, ObjectRef, component};
use super::execution_space::{EXECUTION_FINALIZER, is_ready, without_finalizer};
use super::informers::{Pending, generation, key, version};
use super::karmada::Karmada;
use super::objects::*;

/// The API resource and scope of a manifest's kind on a member.
pub fn member_resource(manifest: &Value) -> Option<(ApiResource, bool)> {
    let api_version = text(manifest, "/apiVersion");
    let kind = text(manifest, "/kind");
    if api_version == "v1" && kind == "Namespace" {
        return Some((namespaces(), false));
    }
    template_kind(api_version, kind).map(|k| (k.resource(), k.namespaced))
}

fn member_api(member: &Client, manifest: &Value) -> Option<Api<DynamicObject>> {
    let (resource, namespaced) = member_resource(manifest)?;
    Some(if namespaced {
        Api::namespaced_with(
            member.clone(),
            text(manifest, "/metadata/namespace"),
            &resource,
        )
    } else {
        Api::all_with(member.clone(), &resource)
    })
}

/// `desired` with what the member keeps (`RetainClusterFields`, `retain.go`): its
/// resourceVersion, the labels and annotations Karmada does not manage, finalizers, a
/// Service's cluster IPs, a Pod's node, a Job's generated selector, a PVC's volume.
pub fn retain(desired: &Value, observed: &Value) -> Value {
    let mut out = desired.clone();
    out["metadata"]["resourceVersion"] = observed["metadata"]["resourceVersion"].clone();
    for (field, managed_key) in [
        ("labels", MANAGED_LABELS),
        ("annotations", MANAGED_ANNOTATIONS),
    ] {
        let managed: Vec<&str> = annotation(desired, managed_key)
            .unwrap_or_default()
            .split(',')
            .collect();
        for (k, v) in observed["metadata"][field]
            .as_object()
            .into_iter()
            .flatten()
        {
            if !managed.contains(&k.as_str()) && out["metadata"][field].get(k).is_none() {
                meta_map(&mut out, field).insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(f) = observed["metadata"].get("finalizers") {
        out["metadata"]["finalizers"] = f.clone();
    }
    let keep = |out: &mut Value, pointer: &str| {
        if let Some(v) = observed.pointer(pointer)
            && let Some((parent, last)) = pointer.rsplit_once('/')
            && let Some(p) = out.pointer_mut(parent).and_then(Value::as_object_mut)
        {
            p.insert(last.to_owned(), v.clone());
        }
    };
    match text(desired, "/kind") {
        "Service" => {
            for p in [
                "/spec/clusterIP",
                "/spec/clusterIPs",
                "/spec/healthCheckNodePort",
            ] {
                keep(&mut out, p);
            }
        }
        "Pod" => keep(&mut out, "/spec/nodeName"),
        "PersistentVolumeClaim" => keep(&mut out, "/spec/volumeName"),
        "Job" => {
            keep(&mut out, "/spec/selector");
            keep(&mut out, "/spec/template/metadata/labels");
        }
        _ => {}
    }
    out
}

/// Applies one manifest: `Ok(())` once the member holds it.
async fn apply(
    member: &Client,
    cluster: &str,
    manifest: &Value,
    managed: Option<&Value>,
) -> Result<(), String> {
    if let Some(current) = managed
        && contains(current, manifest)
    {
        return Ok(());
    }
    let api = member_api(member, manifest)
        .ok_or_else(|| format!("kind {} is not propagated", text(manifest, "/kind")))?;
    let name = text(manifest, "/metadata/name");
    let observed = match api.get_opt(name).await {
        Ok(found) => found.map(|o| json_of(&o)),
        Err(e) => return Err(e.to_string()),
    };
    let Some(observed) = observed else {
        let object: DynamicObject =
            serde_json::from_value(manifest.clone()).map_err(|e| e.to_string())?;
        return match api.create(&PostParams::default(), &object).await {
            Ok(_) => Ok(()),
            Err(e) => Err(e.to_string()),
        };
    };
    // `allowUpdate`: only what Karmada manages, unless told to overwrite.
    if label(&observed, MANAGED) != Some("true")
        && annotation(manifest, CONFLICT_RESOLUTION) != Some("overwrite")
    {
        return Err(format!(
            "resource(kind={}, {}/{}) already exists in the cluster {} and the {} strategy value is empty, Karmada will not manage this resource",
            text(manifest, "/kind"),
            text(manifest, "/metadata/namespace"),
            name,
            cluster,
            CONFLICT_RESOLUTION
        ));
    }
    let desired = retain(manifest, &observed);
    if contains(&observed, &desired) {
        return Ok(());
    }
    let object: DynamicObject = serde_json::from_value(desired).map_err(|e| e.to_string())?;
    api.replace(name, &PostParams::default(), &object)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Deletes from the member what the Work applied (`tryDeleteWorkload`).
async fn delete_applied(member: &Client, work: &Value) -> Result<(), String> {
    for manifest in work["spec"]["workload"]["manifests"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let Some(api) = member_api(member, manifest) else {
            continue;
        };
        let name = text(manifest, "/metadata/name");
        let found = match api.get_opt(name).await {
            Ok(Some(found)) => json_of(&found),
            Ok(None) => continue,
            Err(e) => return Err(e.to_string()),
        };
        if !super::execution_space::applied_by(work, &found) {
            continue;
        }
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

fn conditions(work: &Value, applied: Result<(), String>) -> Value {
    let now = now();
    let dispatching = json!({"type": "Dispatching", "status": "True", "reason": "Dispatching",
        "message": "Work is being dispatched to member clusters.", "lastTransitionTime": now});
    let applied = match applied {
        Ok(()) => json!({"type": "Applied", "status": "True", "reason": "AppliedSuccessful",
            "message": "Manifest has been successfully applied", "lastTransitionTime": now}),
        Err(m) => json!({"type": "Applied", "status": "False", "reason": "AppliedFailed",
            "message": m, "lastTransitionTime": now}),
    };
    let with_dispatching = set_condition(&work["status"]["conditions"], dispatching);
    set_condition(&with_dispatching, applied)
}

/// One pass over the Works `pending` names (every Work after a resync or a Cluster change).
pub async fn pass(k: &Karmada, pending: &Pending) -> Result<bool, String> {
    let mut again = false;
    for object in k.works.pending(pending) {
        // A Work's own status writes do not change what is applied; its cluster's do.
        let ns = object.metadata.namespace.as_deref().unwrap_or_default();
        let cluster = k
            .clusters
            .get("", ns.trim_start_matches("karmada-es-"))
            .map(|c| version(&c));
        let fingerprint = format!("{}|{cluster:?}", generation(&object));
        let memo_key = key(&object);
        if k.memo.unchanged("execution", &memo_key, &fingerprint) {
            continue;
        }
        let work = k.works.value(&object);
        match sync(k, &work).await {
            Ok(()) => k.memo.record("execution", &memo_key, fingerprint),
            Err(why) => {
                tracing::debug!(work = %text(&work, "/metadata/name"), reason = %why, "execution controller");
                again = true;
            }
        }
    }
    Ok(again)
}

async fn sync(k: &Karmada, work: &Value) -> Result<(), String> {
    let space = text(work, "/metadata/namespace");
    let Some(cluster_name) = space.strip_prefix("karmada-es-") else {
        return Ok(());
    };
    let api: Api<DynamicObject> = Api::namespaced_with(k.client.clone(), space, &works());
    let name = text(work, "/metadata/name");
    let cluster = k.clusters.get_value("", cluster_name);
    if work["metadata"]["deletionTimestamp"].is_string() {
        let Some(kept) = without_finalizer(work, EXECUTION_FINALIZER) else {
            return Ok(());
        };
        // A cluster being removed is execution_space's to clean up.
        match &cluster {
            Some(c) if c["metadata"]["deletionTimestamp"].is_string() => return Ok(()),
            Some(c)
                if is_ready(c) && work["spec"]["preserveResourcesOnDeletion"] != json!(true) =>
            {
                let member = k.members.client(&k.client, c, &k.shutdown).await?;
                delete_applied(&member, work).await?;
            }
            _ => {}
        }
        let patch = json!({"metadata": {"finalizers": kept}});
        return match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e.to_string()),
        };
    }
    if work["spec"]["suspendDispatching"] == json!(true) {
        return Ok(());
    }
    let Some(cluster) = cluster.filter(is_ready) else {
        // `cluster(%s) not ready`: tried again when it is.
        return Ok(());
    };
    let member = k.members.client(&k.client, &cluster, &k.shutdown).await?;
    let manifests: Vec<Value> = work["spec"]["workload"]["manifests"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut errors = Vec::new();
    for manifest in &manifests {
        let managed = match member_resource(manifest) {
            Some((resource, _)) => {
                k.members
                    .informer(cluster_name, &resource)
                    .await
                    .and_then(|i| {
                        i.get_value(
                            text(manifest, "/metadata/namespace"),
                            text(manifest, "/metadata/name"),
                        )
                    })
            }
            None => None,
        };
        let applied = apply(&member, cluster_name, manifest, managed.as_ref()).await;
        record_applied(k, manifest, cluster_name, applied.as_ref().err());
        if let Err(e) = applied {
            errors.push(e);
        }
    }
    record_synced(k, work, cluster_name, errors.is_empty());
    let outcome = if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "Failed to apply all manifests ({}/{}): {}",
            manifests.len() - errors.len(),
            manifests.len(),
            errors.join(", ")
        ))
    };
    let failed = outcome.is_err();
    let next = conditions(work, outcome.clone());
    let unchanged = next.as_array().into_iter().flatten().all(|c| {
        work["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|o| {
                o["type"] == c["type"]
                    && o["status"] == c["status"]
                    && o["reason"] == c["reason"]
                    && o["message"] == c["message"]
            })
    });
    if !unchanged {
        api.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"conditions": next}})),
        )
        .await
        .map_err(|e| e.to_string())?;
    }
    if failed {
        Err(outcome.err().unwrap_or_default())
    } else {
        Ok(())
    }
}

/// `syncToClusters`' event per manifest, on the resource template.
fn record_applied(k: &Karmada, manifest: &Value, cluster: &str, failed: Option<&String>) {
    let about = ObjectRef::of_manifest(manifest);
    let object = about.as_ref().map(ObjectRef::key).unwrap_or_default();
    let (event_type, reason, message) = match failed {
        None => (
            EventType::Normal,
            "SyncSucceed",
            format!(
                "Successfully applied resource({}/{}) to cluster {cluster}",
                text(manifest, "/metadata/namespace"),
                text(manifest, "/metadata/name")
            ),
        ),
        Some(e) => (
            EventType::Warning,
            "SyncFailed",
            format!(
                "Failed to create or update resource({object}) in member cluster({cluster}): {e}"
            ),
        ),
    };
    k.events
        .record_about(component::EXECUTION, about, event_type, reason, message);
}

/// `syncWork`'s event on the Work.
fn record_synced(k: &Karmada, work: &Value, cluster: &str, synced: bool) {
    let ns = text(work, "/metadata/namespace");
    let name = text(work, "/metadata/name");
    let (event_type, reason, message) = if synced {
        (
            EventType::Normal,
            "SyncSucceed",
            format!("Sync work({ns}/{name}) to cluster({cluster}) successful."),
        )
    } else {
        (
            EventType::Warning,
            "SyncFailed",
            format!("Failed to sync work({ns}/{name}) to cluster({cluster})"),
        )
    };
    k.events.record_about(
        component::EXECUTION,
        ObjectRef::of(work),
        event_type,
        reason,
        message,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_keep_what_the_member_owns() {
        let desired = json!({"kind": "Service", "metadata": {"name": "s", "labels": {"a": "1"},
            "annotations": {MANAGED_LABELS: "a", MANAGED_ANNOTATIONS: "x"}}, "spec": {"ports": [{"port": 80}]}});
        let observed = json!({"kind": "Service", "metadata": {"name": "s", "resourceVersion": "9",
            "labels": {"a": "0", "member": "m"}, "annotations": {"other": "o"}},
            "spec": {"clusterIP": "10.0.0.3", "clusterIPs": ["10.0.0.3"], "ports": [{"port": 81}]}});
        let out = retain(&desired, &observed);
        assert_eq!(out["metadata"]["resourceVersion"], "9");
        assert_eq!(out["metadata"]["labels"], json!({"a": "1", "member": "m"}));
        assert_eq!(out["metadata"]["annotations"]["other"], "o");
        assert_eq!(out["spec"]["clusterIP"], "10.0.0.3");
        assert_eq!(out["spec"]["ports"], json!([{"port": 80}]));
    }
}
