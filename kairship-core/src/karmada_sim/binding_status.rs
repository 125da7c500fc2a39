//! Karmada's binding status controllers (karmada-io/karmada
//! `pkg/controllers/status/rb_status_controller.go`, `crb_status_controller.go`, with
//! `pkg/util/helper/workstatus.go` `AggregateResourceBindingWorkStatus`): each binding's
//! Works summed up in `status.aggregatedStatus` (one item per cluster, by name) and the
//! `FullyApplied` condition, then the template's status aggregated from them
//! (`updateResourceStatus`).

use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::core::DynamicObject;
use serde_json::{Map, Value, json};

use super::events::{EventType, ObjectRef, component};
use super::informers::{Pending, key, version, works_by_binding};
use super::interpreter;
use super::karmada::Karmada;
use super::objects::*;

/// `FullyAppliedSuccessMessage`.
pub const FULLY_APPLIED: &str = "All works have been successfully applied";
/// `FullyAppliedFailedMessage`.
pub const NOT_FULLY_APPLIED: &str =
    "Failed to apply all works, see status.aggregatedStatus for details";

/// The binding's `aggregatedStatus` from its Works (`assembleWorkStatus`).
pub fn aggregated_status(binding: &Value, works: &[&Value]) -> Vec<Value> {
    let resource = &binding["spec"]["resource"];
    let mut items: Vec<Value> = works
        .iter()
        .filter(|w| !w["metadata"]["deletionTimestamp"].is_string())
        .map(|w| {
            let cluster = text(w, "/metadata/namespace").trim_start_matches("karmada-es-");
            let applied = w["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == "Applied");
            let ok = applied.is_some_and(|c| c["status"] == "True");
            let mut item = json!({"clusterName": cluster, "applied": ok, "health": "Unknown"});
            if !ok {
                if let Some(m) = applied
                    .and_then(|c| c["message"].as_str())
                    .filter(|m| !m.is_empty())
                {
                    item["appliedMessage"] = json!(m);
                }
                return item;
            }
            // The manifest status of the template's object.
            let found = w["status"]["manifestStatuses"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|s| {
                    let id = &s["identifier"];
                    let api_version = match id["group"].as_str().filter(|g| !g.is_empty()) {
                        Some(g) => format!("{g}/{}", text(id, "/version")),
                        None => text(id, "/version").to_owned(),
                    };
                    api_version == text(resource, "/apiVersion")
                        && id["kind"] == resource["kind"]
                        && id["name"] == resource["name"]
                        && text(id, "/namespace") == text(resource, "/namespace")
                });
            if let Some(s) = found {
                if let Some(status) = s.get("status").filter(|v| !v.is_null()) {
                    item["status"] = status.clone();
                }
                item["health"] = s["health"].clone();
            }
            item
        })
        .collect();
    items.sort_by(|a, b| text(a, "/clusterName").cmp(text(b, "/clusterName")));
    items
}

/// `generateFullyAppliedCondition`: every scheduled cluster reports applied.
pub fn fully_applied(binding: &Value, items: &[Value]) -> Value {
    let clusters: Vec<&str> = binding["spec"]["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| text(c, "/name"))
        .collect();
    let all = !clusters.is_empty()
        && clusters.iter().all(|c| {
            items
                .iter()
                .any(|i| i["clusterName"] == *c && i["applied"] == true)
        });
    if all {
        json!({"type": "FullyApplied", "status": "True", "reason": "FullyAppliedSuccess",
            "message": FULLY_APPLIED, "lastTransitionTime": now()})
    } else {
        json!({"type": "FullyApplied", "status": "False", "reason": "FullyAppliedFailed",
            "message": NOT_FULLY_APPLIED, "lastTransitionTime": now()})
    }
}

/// One pass over the bindings `pending` names.
pub async fn pass(k: &Karmada, pending: &Pending) -> Result<bool, String> {
    let by_binding = works_by_binding(&k.works);
    let mut again = false;
    for (informer, id_key) in [(&k.rbs, RB_PERMANENT_ID), (&k.crbs, CRB_PERMANENT_ID)] {
        for object in informer.pending(pending) {
            if object.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let Some(id) = object.metadata.labels.as_ref().and_then(|l| l.get(id_key)) else {
                continue;
            };
            let mine = by_binding.get(id).cloned().unwrap_or_default();
            let resource = &object.data["spec"]["resource"];
            let template = template_kind(text(resource, "/apiVersion"), text(resource, "/kind"))
                .and_then(|kind| k.templates.iter().find(|(t, _)| *t == kind))
                .and_then(|(_, i)| i.get(text(resource, "/namespace"), text(resource, "/name")))
                .map(|t| version(&t));
            let mut works: Vec<String> = mine.iter().map(|w| version(w)).collect();
            works.sort();
            let fingerprint = format!("{}|{template:?}|{}", version(&object), works.join(","));
            let memo_key = key(&object);
            if k.memo.unchanged("binding-status", &memo_key, &fingerprint) {
                continue;
            }
            let binding = informer.value(&object);
            let values: Vec<Value> = mine.iter().map(|w| k.works.value(w)).collect();
            let refs: Vec<&Value> = values.iter().collect();
            match sync(k, &binding, &refs).await {
                Ok(()) => k.memo.record("binding-status", &memo_key, fingerprint),
                Err(why) => {
                    tracing::debug!(binding = %text(&binding, "/metadata/name"), reason = %why, "binding status controller");
                    again = true;
                }
            }
        }
    }
    Ok(again)
}

async fn sync(k: &Karmada, binding: &Value, works: &[&Value]) -> Result<(), String> {
    // Nothing to report before the scheduler placed it (its Works come after that).
    let scheduled = binding["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Scheduled");
    if !scheduled && works.is_empty() {
        return Ok(());
    }
    let items = aggregated_status(binding, works);
    let condition = fully_applied(binding, &items);
    let status = &binding["status"];
    let same_condition = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| {
            c["type"] == "FullyApplied"
                && c["status"] == condition["status"]
                && c["reason"] == condition["reason"]
        });
    let current_items = status["aggregatedStatus"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !same_condition || current_items != items {
        let cluster_scoped = binding["kind"] == "ClusterResourceBinding";
        let api: Api<DynamicObject> = if cluster_scoped {
            Api::all_with(k.client.clone(), &cluster_resource_bindings())
        } else {
            Api::namespaced_with(
                k.client.clone(),
                text(binding, "/metadata/namespace"),
                &resource_bindings(),
            )
        };
        // The resourceVersion makes a write from a stale view fail rather than drop the
        // scheduler's condition.
        let patch = json!({"metadata": {"resourceVersion": binding["metadata"]["resourceVersion"]}, "status": {
            "aggregatedStatus": items,
            "conditions": set_condition(&status["conditions"], condition),
        }});
        let written = api
            .patch_status(
                text(binding, "/metadata/name"),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(|e| e.to_string());
        // `AggregateResourceBindingWorkStatus` (and its ClusterResourceBinding twin).
        let (event_type, reason, message) = match &written {
            Ok(_) if cluster_scoped => (
                EventType::Normal,
                "AggregateStatusSucceed",
                format!(
                    "Update ClusterResourceBinding({}) with AggregatedStatus successfully.",
                    text(binding, "/metadata/name")
                ),
            ),
            Ok(_) => (
                EventType::Normal,
                "AggregateStatusSucceed",
                format!(
                    "Update ResourceBinding({}/{}) with AggregatedStatus successfully.",
                    text(binding, "/metadata/namespace"),
                    text(binding, "/metadata/name")
                ),
            ),
            Err(e) => (EventType::Warning, "AggregateStatusFailed", e.clone()),
        };
        k.events.record_about(
            component::BINDING_STATUS,
            ObjectRef::of(binding),
            event_type,
            reason,
            message,
        );
        written?;
    }
    aggregate_into_template(k, binding, &items).await
}

/// Writes the template's aggregated status (`updateResourceStatus`).
async fn aggregate_into_template(
    k: &Karmada,
    binding: &Value,
    items: &[Value],
) -> Result<(), String> {
    let resource = &binding["spec"]["resource"];
    let Some(kind) = template_kind(text(resource, "/apiVersion"), text(resource, "/kind")) else {
        return Ok(());
    };
    let Some(informer) = k.templates.iter().find(|(t, _)| *t == kind).map(|(_, i)| i) else {
        return Ok(());
    };
    let ns = text(resource, "/namespace");
    let name = text(resource, "/name");
    let Some(template) = informer.get_value(ns, name) else {
        return Ok(());
    };
    let Some(next) = interpreter::aggregate_status(&template, items) else {
        return Ok(());
    };
    // `updateResourceStatus` writes (and records) only a status that changed.
    let changed = template.get("status").unwrap_or(&Value::Null) != &next;
    // A merge patch replacing the status: fields gone are set to null.
    let mut status = next.as_object().cloned().unwrap_or_default();
    for key in template["status"]
        .as_object()
        .map(Map::keys)
        .into_iter()
        .flatten()
    {
        status.entry(key.clone()).or_insert(Value::Null);
    }
    let api: Api<DynamicObject> = if kind.namespaced {
        Api::namespaced_with(k.client.clone(), ns, &kind.resource())
    } else {
        Api::all_with(k.client.clone(), &kind.resource())
    };
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": status})),
    )
    .await
    .map_err(|e| e.to_string())?;
    if changed {
        k.events.record_about(
            component::BINDING_STATUS,
            ObjectRef::of(&template),
            EventType::Normal,
            "AggregateStatusSucceed",
            "Update Resource with AggregatedStatus successfully.",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_items_follow_the_works() {
        let binding = json!({"spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "shop", "namespace": "demo"},
            "clusters": [{"name": "msb", "replicas": 3}, {"name": "mreal", "replicas": 1}]}});
        let ok = json!({"metadata": {"namespace": "karmada-es-msb"}, "status": {
            "conditions": [{"type": "Applied", "status": "True"}],
            "manifestStatuses": [{"identifier": {"group": "apps", "version": "v1", "kind": "Deployment", "name": "shop", "namespace": "demo", "ordinal": 0},
                                  "health": "Healthy", "status": {"replicas": 3}}]}});
        let failed = json!({"metadata": {"namespace": "karmada-es-mreal"}, "status": {
            "conditions": [{"type": "Applied", "status": "False", "message": "boom"}]}});
        let items = aggregated_status(&binding, &[&ok, &failed]);
        assert_eq!(
            items,
            vec![
                json!({"clusterName": "mreal", "applied": false, "appliedMessage": "boom", "health": "Unknown"}),
                json!({"clusterName": "msb", "applied": true, "health": "Healthy", "status": {"replicas": 3}}),
            ]
        );
        assert_eq!(
            fully_applied(&binding, &items)["reason"],
            "FullyAppliedFailed"
        );
        let items = aggregated_status(&binding, &[&ok]);
        assert_eq!(fully_applied(&binding, &items)["status"], "False");
        let one = json!({"spec": {"clusters": [{"name": "msb"}]}});
        assert_eq!(fully_applied(&one, &items)["message"], FULLY_APPLIED);
    }
}
