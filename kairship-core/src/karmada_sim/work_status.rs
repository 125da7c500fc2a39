//! Karmada's work status controller (karmada-io/karmada
//! `pkg/controllers/status/work_status_controller.go`): what each member holds for a Work,
//! watched through the member informers, recorded in the Work's `status.manifestStatuses`
//! (identifier, reflected status, health).

use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::execution::member_resource;
use super::execution_space::is_ready;
use super::informers::{Pending, key, version};
use super::interpreter;
use super::karmada::Karmada;
use super::objects::*;

/// The manifest identifier (`workv1alpha1.ResourceIdentifier`; empty group and namespace
/// omitted, `resource` left empty as Karmada leaves it).
pub fn identifier(manifest: &Value, ordinal: usize) -> Value {
    let api_version = text(manifest, "/apiVersion");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let mut id = json!({
        "ordinal": ordinal, "version": version, "kind": text(manifest, "/kind"),
        "resource": "", "name": text(manifest, "/metadata/name"),
    });
    if !group.is_empty() {
        id["group"] = json!(group);
    }
    let ns = text(manifest, "/metadata/namespace");
    if !ns.is_empty() {
        id["namespace"] = json!(ns);
    }
    id
}

/// The manifest status of what the member holds.
pub fn manifest_status(manifest: &Value, ordinal: usize, observed: &Value) -> Value {
    let mut s = json!({"identifier": identifier(manifest, ordinal), "health": interpreter::health(observed)});
    if let Some(status) = interpreter::reflect_status(observed) {
        s["status"] = status;
    }
    s
}

/// One pass over the applied Works `pending` names.
pub async fn pass(k: &Karmada, pending: &Pending) -> Result<bool, String> {
    let mut again = false;
    for object in k.works.pending(pending) {
        if object.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let applied = object.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Applied" && c["status"] == "True");
        if !applied {
            continue;
        }
        // The Work and what the member holds for it.
        let cluster = object
            .metadata
            .namespace
            .as_deref()
            .unwrap_or_default()
            .trim_start_matches("karmada-es-")
            .to_owned();
        let mut observed = Vec::new();
        for manifest in object.data["spec"]["workload"]["manifests"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let found = match member_resource(manifest) {
                Some((resource, _)) => {
                    k.members.informer(&cluster, &resource).await.and_then(|i| {
                        i.get(
                            text(manifest, "/metadata/namespace"),
                            text(manifest, "/metadata/name"),
                        )
                    })
                }
                None => None,
            };
            observed.push(found.map(|o| version(&o)));
        }
        let fingerprint = format!("{}|{observed:?}", version(&object));
        let memo_key = key(&object);
        if k.memo.unchanged("work-status", &memo_key, &fingerprint) {
            continue;
        }
        let work = k.works.value(&object);
        match sync(k, &work).await {
            // Recorded only once every manifest was seen: the member informers start lazily.
            Ok(()) if observed.iter().all(Option::is_some) => {
                k.memo.record("work-status", &memo_key, fingerprint)
            }
            Ok(()) => {}
            Err(why) => {
                tracing::debug!(work = %text(&work, "/metadata/name"), reason = %why, "work status controller");
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
    let Some(cluster) = k.clusters.get_value("", cluster_name).filter(is_ready) else {
        return Ok(());
    };
    k.members.client(&k.client, &cluster, &k.shutdown).await?;
    let mut statuses = Vec::new();
    for (i, manifest) in work["spec"]["workload"]["manifests"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some((resource, _)) = member_resource(manifest) else {
            continue;
        };
        let Some(informer) = k.members.informer(cluster_name, &resource).await else {
            continue;
        };
        let Some(observed) = informer.get_value(
            text(manifest, "/metadata/namespace"),
            text(manifest, "/metadata/name"),
        ) else {
            continue;
        };
        if label(&observed, WORK_PERMANENT_ID) != label(work, WORK_PERMANENT_ID) {
            continue;
        }
        statuses.push(manifest_status(manifest, i, &observed));
    }
    let next = Value::Array(statuses);
    if work["status"]["manifestStatuses"] == next
        || (next == json!([]) && work["status"]["manifestStatuses"].is_null())
    {
        return Ok(());
    }
    let api: Api<DynamicObject> = Api::namespaced_with(k.client.clone(), space, &works());
    api.patch_status(
        text(work, "/metadata/name"),
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": {"manifestStatuses": next}})),
    )
    .await
    .map(|_| ())
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_the_recorded_ones() {
        // kairship-core/tests/data/karmada-v1.19/works-karmada-es-msb.json.
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop", "namespace": "demo"}});
        assert_eq!(
            identifier(&d, 0),
            json!({"group": "apps", "kind": "Deployment", "name": "shop",
            "namespace": "demo", "ordinal": 0, "resource": "", "version": "v1"})
        );
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}});
        assert_eq!(
            identifier(&ns, 0),
            json!({"kind": "Namespace", "name": "demo", "ordinal": 0, "resource": "", "version": "v1"})
        );
        let observed = json!({"kind": "Namespace", "status": {"phase": "Active"}});
        assert_eq!(
            manifest_status(&ns, 0, &observed)["status"],
            json!({"phase": "Active"})
        );
        assert_eq!(manifest_status(&ns, 0, &observed)["health"], "Healthy");
    }
}
