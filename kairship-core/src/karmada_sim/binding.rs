//! Karmada's binding controllers (karmada-io/karmada `pkg/controllers/binding/`
//! `binding_controller.go`, `cluster_resource_binding_controller.go`, `common.go`
//! `ensureWork`) with `pkg/controllers/ctrlutil/work.go` `CreateOrUpdateWork`: for each
//! scheduled binding, one Work per target cluster in `karmada-es-<cluster>` holding the template
//! pruned, with the cluster's replicas and overrides, labelled and annotated as Karmada does;
//! Works of clusters no longer targeted removed; a deleted binding's Works removed before its
//! finalizer.

use std::collections::BTreeSet;
use std::sync::Arc;

use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::detector::selector_priority;
use super::events::{EventType, ObjectRef, component};
use super::execution_space::{EXECUTION_FINALIZER, execution_space, without_finalizer};
use super::informers::{Pending, generation, key, version, versions, works_by_binding};
use super::interpreter;
use super::karmada::Karmada;
use super::objects::*;
use super::overrides;
use crate::models::cluster::Cluster;

/// Sets `resourcetemplate.karmada.io/managed-annotations` and `managed-labels` and the Work's
/// permanent id on `manifest` (`SetLabelsAndAnnotationsForWorkload`).
pub fn record_managed(manifest: &mut Value, work_id: &str) {
    meta_map(manifest, "labels").insert(WORK_PERMANENT_ID.into(), json!(work_id));
    let mut keys: BTreeSet<String> = manifest["metadata"]["annotations"]
        .as_object()
        .map(|a| a.keys().cloned().collect())
        .unwrap_or_default();
    keys.insert(MANAGED_ANNOTATIONS.into());
    keys.insert(MANAGED_LABELS.into());
    let annotations = keys.into_iter().collect::<Vec<_>>().join(",");
    let labels = manifest["metadata"]["labels"]
        .as_object()
        .map(|l| l.keys().cloned().collect::<Vec<_>>().join(","))
        .unwrap_or_default();
    let map = meta_map(manifest, "annotations");
    map.insert(MANAGED_ANNOTATIONS.into(), json!(annotations));
    map.insert(MANAGED_LABELS.into(), json!(labels));
}

/// The Work's manifest: `template` for `cluster` with `replicas` (when the binding divides
/// them) and the overrides, labelled and annotated for the binding and the Work.
#[allow(clippy::too_many_arguments)]
pub fn manifest_for(
    template: &Value,
    binding: &Value,
    cluster: &Cluster,
    replicas: Option<i32>,
    policies: &[&Value],
    work_name: &str,
    work_namespace: &str,
    work_id: &str,
) -> Result<(Value, overrides::Applied), String> {
    let mut manifest = template.clone();
    interpreter::prune(&mut manifest);
    if let Some(n) = replicas {
        interpreter::revise_replicas(&mut manifest, n);
    }
    // Overrides come last (`ApplyOverridePolicies`).
    let applied = overrides::apply(&mut manifest, policies, cluster)?;
    let cluster_scoped = binding["kind"] == "ClusterResourceBinding";
    let (id_key, id) = if cluster_scoped {
        (
            CRB_PERMANENT_ID,
            label(binding, CRB_PERMANENT_ID).unwrap_or_default(),
        )
    } else {
        (
            RB_PERMANENT_ID,
            label(binding, RB_PERMANENT_ID).unwrap_or_default(),
        )
    };
    let labels = meta_map(&mut manifest, "labels");
    labels.insert(id_key.into(), json!(id));
    labels.insert(MANAGED.into(), json!("true"));
    let generation = template["metadata"]["generation"].as_i64().unwrap_or(0);
    let conflict = conflict_resolution(template, binding);
    let annotations = meta_map(&mut manifest, "annotations");
    if generation > 0 {
        annotations.insert(TEMPLATE_GENERATION.into(), json!(generation.to_string()));
    }
    if cluster_scoped {
        annotations.insert(CRB_NAME.into(), json!(text(binding, "/metadata/name")));
    } else {
        annotations.insert(
            RB_NAMESPACE.into(),
            json!(text(binding, "/metadata/namespace")),
        );
        annotations.insert(RB_NAME.into(), json!(text(binding, "/metadata/name")));
    }
    annotations.insert(TEMPLATE_UID.into(), json!(text(template, "/metadata/uid")));
    annotations.insert(WORK_NAME.into(), json!(work_name));
    annotations.insert(WORK_NAMESPACE.into(), json!(work_namespace));
    annotations.insert(CONFLICT_RESOLUTION.into(), json!(conflict));
    record_managed(&mut manifest, work_id);
    Ok((manifest, applied))
}

/// `mergeConflictResolution`: the template's own annotation when valid, else the binding's.
fn conflict_resolution(template: &Value, binding: &Value) -> String {
    match annotation(template, CONFLICT_RESOLUTION) {
        Some(v @ ("overwrite" | "abort")) => v.to_owned(),
        _ => match text(binding, "/spec/conflictResolution") {
            "Overwrite" => "overwrite".to_owned(),
            _ => "abort".to_owned(),
        },
    }
}

/// The OverridePolicies (then ClusterOverridePolicies) selecting `template`, each list in
/// Karmada's order: implicit priority ascending, then name (`getOverridersFromOverridePolicies`).
fn override_policies(k: &Karmada, template: &Value) -> (Vec<Value>, Vec<Value>) {
    let ns = text(template, "/metadata/namespace");
    let select = |list: Vec<Value>, namespaced: bool| {
        let mut picked: Vec<(u8, String, Value)> = list
            .into_iter()
            .filter(|p| !namespaced || text(p, "/metadata/namespace") == ns)
            .filter_map(|p| {
                let policy_ns = if namespaced {
                    text(&p, "/metadata/namespace").to_owned()
                } else {
                    String::new()
                };
                let priority = match p["spec"]["resourceSelectors"].as_array() {
                    // No selector: every template of the namespace.
                    None => 1,
                    Some(s) if s.is_empty() => 1,
                    Some(s) => s
                        .iter()
                        .map(|s| selector_priority(template, s, &policy_ns))
                        .max()
                        .unwrap_or(0),
                };
                (priority > 0).then(|| (priority, text(&p, "/metadata/name").to_owned(), p))
            })
            .collect();
        picked.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        picked.into_iter().map(|(_, _, p)| p).collect::<Vec<_>>()
    };
    (select(k.cops.values(), false), select(k.ops.values(), true))
}

fn work_api(k: &Karmada, cluster: &str) -> Api<DynamicObject> {
    Api::namespaced_with(k.client.clone(), &execution_space(cluster), &works())
}

/// One pass over the bindings `pending` names (every binding after a resync or a change of
/// an override policy or a Cluster).
pub async fn pass(k: &Karmada, pending: &Pending) -> Result<bool, String> {
    let by_binding = works_by_binding(&k.works);
    let shared = format!(
        "{}|{}|{}",
        versions(&k.ops),
        versions(&k.cops),
        versions(&k.clusters)
    );
    let mut again = false;
    for informer in [&k.rbs, &k.crbs] {
        for object in informer.pending(pending) {
            let id = object
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(RB_PERMANENT_ID).or_else(|| l.get(CRB_PERMANENT_ID)))
                .cloned()
                .unwrap_or_default();
            let mine: Vec<Arc<DynamicObject>> = by_binding.get(&id).cloned().unwrap_or_default();
            let resource = &object.data["spec"]["resource"];
            let template = template_kind(text(resource, "/apiVersion"), text(resource, "/kind"))
                .and_then(|kind| k.templates.iter().find(|(t, _)| *t == kind))
                .and_then(|(_, i)| i.get(text(resource, "/namespace"), text(resource, "/name")))
                .map(|t| version(&t));
            let mut works: Vec<String> = mine.iter().map(|w| generation(w)).collect();
            works.sort();
            let fingerprint = format!(
                "{}|{template:?}|{shared}|{}",
                version(&object),
                works.join(",")
            );
            let memo_key = key(&object);
            if k.memo.unchanged("binding", &memo_key, &fingerprint) {
                continue;
            }
            let binding = informer.value(&object);
            let works: Vec<Value> = mine.iter().map(|w| k.works.value(w)).collect();
            match sync(k, &binding, &works).await {
                Ok(()) => k.memo.record("binding", &memo_key, fingerprint),
                Err(why) => {
                    tracing::debug!(binding = %text(&binding, "/metadata/name"), reason = %why, "binding controller");
                    again = true;
                }
            }
        }
    }
    Ok(again)
}

fn binding_id(binding: &Value) -> (&'static str, String) {
    if binding["kind"] == "ClusterResourceBinding" {
        (
            CRB_PERMANENT_ID,
            label(binding, CRB_PERMANENT_ID)
                .unwrap_or_default()
                .to_owned(),
        )
    } else {
        (
            RB_PERMANENT_ID,
            label(binding, RB_PERMANENT_ID)
                .unwrap_or_default()
                .to_owned(),
        )
    }
}

async fn sync(k: &Karmada, binding: &Value, works: &[Value]) -> Result<(), String> {
    let (id_key, id) = binding_id(binding);
    if id.is_empty() {
        return Ok(());
    }
    let mine: Vec<&Value> = works
        .iter()
        .filter(|w| label(w, id_key) == Some(id.as_str()))
        .collect();
    let targets: Vec<(String, i32)> = binding["spec"]["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                text(c, "/name").to_owned(),
                c["replicas"].as_i64().unwrap_or(0) as i32,
            )
        })
        .collect();
    let deleting = binding["metadata"]["deletionTimestamp"].is_string();
    // Works of clusters no longer targeted (`RemoveOrphanWorks`), or all when deleting.
    for w in &mine {
        let cluster = text(w, "/metadata/namespace").trim_start_matches("karmada-es-");
        if (deleting || !targets.iter().any(|(t, _)| t == cluster))
            && !w["metadata"]["deletionTimestamp"].is_string()
        {
            match work_api(k, cluster)
                .delete(text(w, "/metadata/name"), &DeleteParams::background())
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    if deleting {
        let finalizer = if binding["kind"] == "ClusterResourceBinding" {
            CLUSTER_BINDING_FINALIZER
        } else {
            BINDING_FINALIZER
        };
        if mine.is_empty()
            && let Some(kept) = without_finalizer(binding, finalizer)
        {
            let api: Api<DynamicObject> = if binding["kind"] == "ClusterResourceBinding" {
                Api::all_with(k.client.clone(), &cluster_resource_bindings())
            } else {
                Api::namespaced_with(
                    k.client.clone(),
                    text(binding, "/metadata/namespace"),
                    &resource_bindings(),
                )
            };
            let patch = json!({"metadata": {"finalizers": kept}});
            match api
                .patch(
                    text(binding, "/metadata/name"),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        return Ok(());
    }
    if targets.is_empty() {
        return Ok(());
    }
    let resource = &binding["spec"]["resource"];
    let Some(kind) = template_kind(text(resource, "/apiVersion"), text(resource, "/kind")) else {
        return Ok(());
    };
    let Some(informer) = k.templates.iter().find(|(t, _)| *t == kind).map(|(_, i)| i) else {
        return Ok(());
    };
    let Some(template) = informer.get_value(text(resource, "/namespace"), text(resource, "/name"))
    else {
        return Ok(());
    };
    if template["metadata"]["uid"] != resource["uid"] {
        return Ok(());
    }
    let (cops, ops) = override_policies(k, &template);
    let divided = binding["spec"]
        .get("replicas")
        .is_some_and(|r| !r.is_null());
    let name = work_name(
        text(&template, "/kind"),
        text(&template, "/metadata/name"),
        text(&template, "/metadata/namespace"),
    );
    let mut errors = Vec::new();
    for (cluster_name, replicas) in &targets {
        let Some(cluster) = k
            .clusters
            .get_value("", cluster_name)
            .and_then(|c| serde_json::from_value::<Cluster>(c).ok())
        else {
            continue;
        };
        let space = execution_space(cluster_name);
        let existing = mine
            .iter()
            .find(|w| text(w, "/metadata/namespace") == space && text(w, "/metadata/name") == name);
        let work_id = existing
            .and_then(|w| label(w, WORK_PERMANENT_ID))
            .map(str::to_owned)
            .unwrap_or_else(permanent_id);
        // ClusterOverridePolicies first, then OverridePolicies (`ApplyOverridePolicies`).
        let mut overridden = template.clone();
        let built = overrides::apply(&mut overridden, &cops.iter().collect::<Vec<_>>(), &cluster)
            .and_then(|cluster_applied| {
                let (manifest, applied) = manifest_for(
                    &overridden,
                    binding,
                    &cluster,
                    divided.then_some(*replicas),
                    &ops.iter().collect::<Vec<_>>(),
                    &name,
                    &space,
                    &work_id,
                )?;
                Ok((manifest, applied, cluster_applied))
            });
        let (manifest, applied, cluster_applied) = match built {
            Ok(built) => built,
            Err(e) => {
                errors.push(format!("{cluster_name}: {e}"));
                continue;
            }
        };
        record_overrides(k, &template, cluster_name, &cluster_applied, &applied);
        let mut annotations = serde_json::Map::new();
        if binding["kind"] == "ClusterResourceBinding" {
            annotations.insert(CRB_NAME.into(), json!(text(binding, "/metadata/name")));
        } else {
            annotations.insert(
                RB_NAMESPACE.into(),
                json!(text(binding, "/metadata/namespace")),
            );
            annotations.insert(RB_NAME.into(), json!(text(binding, "/metadata/name")));
        }
        annotations.insert(
            CONFLICT_RESOLUTION.into(),
            json!(conflict_resolution(&template, binding)),
        );
        if !applied.is_empty() {
            annotations.insert(
                APPLIED_OVERRIDES.into(),
                json!(Value::Array(applied).to_string()),
            );
        }
        if !cluster_applied.is_empty() {
            annotations.insert(
                APPLIED_CLUSTER_OVERRIDES.into(),
                json!(Value::Array(cluster_applied).to_string()),
            );
        }
        let spec = json!({
            "workload": {"manifests": [manifest]},
            "preserveResourcesOnDeletion": binding["spec"]["preserveResourcesOnDeletion"].as_bool().unwrap_or(false),
            "suspendDispatching": false,
        });
        let result = match existing {
            None => {
                let body = json!({
                    "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                    "metadata": {
                        "name": name, "namespace": space,
                        "finalizers": [EXECUTION_FINALIZER],
                        "labels": {id_key: id, WORK_PERMANENT_ID: work_id},
                        "annotations": annotations,
                    },
                    "spec": spec,
                });
                let object: DynamicObject =
                    serde_json::from_value(body).map_err(|e| e.to_string())?;
                match work_api(k, cluster_name)
                    .create(&PostParams::default(), &object)
                    .await
                {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                    Err(e) => Err(e.to_string()),
                }
            }
            Some(w) => {
                let mut patch = json!({});
                if w["spec"] != spec {
                    patch["spec"] = spec;
                }
                for (key, v) in &annotations {
                    if w["metadata"]["annotations"].get(key) != Some(v) {
                        patch["metadata"]["annotations"][key] = v.clone();
                    }
                }
                for key in [APPLIED_OVERRIDES, APPLIED_CLUSTER_OVERRIDES] {
                    if !annotations.contains_key(key) && annotation(w, key).is_some() {
                        patch["metadata"]["annotations"][key] = Value::Null;
                    }
                }
                if patch == json!({}) {
                    Ok(())
                } else {
                    work_api(k, cluster_name)
                        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                }
            }
        };
        if let Err(e) = result {
            errors.push(format!("{cluster_name}: {e}"));
        }
    }
    let outcome = if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    };
    // `syncBinding`: on the binding and on its template.
    let (event_type, reason, message) = match &outcome {
        Ok(()) if binding["kind"] == "ClusterResourceBinding" => (
            EventType::Normal,
            "SyncWorkSucceed",
            format!(
                "Sync work of ClusterResourceBinding({}) successful.",
                text(binding, "/metadata/name")
            ),
        ),
        Ok(()) => (
            EventType::Normal,
            "SyncWorkSucceed",
            format!(
                "Sync work of ResourceBinding({}/{}) successful.",
                text(binding, "/metadata/namespace"),
                text(binding, "/metadata/name")
            ),
        ),
        Err(e) => (EventType::Warning, "SyncWorkFailed", e.clone()),
    };
    for about in [ObjectRef::of(binding), ObjectRef::of(&template)] {
        k.events.record_about(
            component::BINDING,
            about,
            event_type,
            reason,
            message.clone(),
        );
    }
    outcome
}

/// The override manager's event per policy applied for `cluster` (`applyClusterOverrides`,
/// then `applyNamespacedOverrides`), on the template.
fn record_overrides(
    k: &Karmada,
    template: &Value,
    cluster: &str,
    cluster_applied: &overrides::Applied,
    applied: &overrides::Applied,
) {
    let about = ObjectRef::of(template);
    let namespace = text(template, "/metadata/namespace");
    for (list, cluster_scoped) in [(cluster_applied, true), (applied, false)] {
        let mut named = BTreeSet::new();
        for policy in list.iter().map(|a| text(a, "/policyName")) {
            // One event per policy, however many of its rules applied.
            if !named.insert(policy) {
                continue;
            }
            let message = if cluster_scoped {
                format!("Apply cluster override policy({policy}) for cluster({cluster}) succeed.")
            } else {
                format!(
                    "Apply override policy({namespace}/{policy}) for cluster({cluster}) succeed."
                )
            };
            k.events.record_about(
                component::OVERRIDE_MANAGER,
                about.clone(),
                EventType::Normal,
                "ApplyOverridePolicySucceed",
                message,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managed_keys_are_recorded_sorted() {
        let mut m =
            json!({"metadata": {"labels": {"b": "1", "a": "2"}, "annotations": {"z": "x"}}});
        record_managed(&mut m, "w1");
        assert_eq!(m["metadata"]["labels"][WORK_PERMANENT_ID], "w1");
        assert_eq!(
            m["metadata"]["annotations"][MANAGED_ANNOTATIONS],
            "resourcetemplate.karmada.io/managed-annotations,resourcetemplate.karmada.io/managed-labels,z"
        );
        assert_eq!(
            m["metadata"]["annotations"][MANAGED_LABELS],
            "a,b,work.karmada.io/permanent-id"
        );
    }

    #[test]
    fn conflict_resolution_prefers_the_template() {
        let b = json!({"spec": {"conflictResolution": "Overwrite"}});
        assert_eq!(conflict_resolution(&json!({}), &b), "overwrite");
        let t = json!({"metadata": {"annotations": {CONFLICT_RESOLUTION: "abort"}}});
        assert_eq!(conflict_resolution(&t, &b), "abort");
        assert_eq!(conflict_resolution(&json!({}), &json!({})), "abort");
    }
}
