//! Karmada's namespace sync controller (karmada-io/karmada
//! `pkg/controllers/namespace/namespace_sync_controller.go`): every namespace but the reserved
//! ones and `default` goes to every member as a Work `<namespace>-<hash>` owned by the
//! Namespace, so that what is propagated into it finds it there.

use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use super::binding::record_managed;
use super::detector::reserved_namespace;
use super::execution_space::{EXECUTION_FINALIZER, execution_space};
use super::interpreter;
use super::karmada::Karmada;
use super::objects::*;

/// Whether `namespace` is propagated (`namespaceShouldBeSynced`).
pub fn synced(namespace: &Value) -> bool {
    let name = text(namespace, "/metadata/name");
    !reserved_namespace(name)
        && name != "default"
        && label(namespace, "namespace.karmada.io/skip-auto-propagation") != Some("true")
        && !namespace["metadata"]["deletionTimestamp"].is_string()
}

/// The Work manifest of `namespace` (`buildWorks`, then `CreateOrUpdateWork`).
pub fn manifest(namespace: &Value, work_name: &str, work_namespace: &str, work_id: &str) -> Value {
    let mut m = namespace.clone();
    interpreter::prune(&mut m);
    meta_map(&mut m, "labels").insert(MANAGED.into(), json!("true"));
    let a = meta_map(&mut m, "annotations");
    a.insert(TEMPLATE_UID.into(), json!(text(namespace, "/metadata/uid")));
    a.insert(WORK_NAME.into(), json!(work_name));
    a.insert(WORK_NAMESPACE.into(), json!(work_namespace));
    record_managed(&mut m, work_id);
    m
}

/// One pass over every namespace and member.
pub async fn pass(k: &Karmada) -> Result<bool, String> {
    let clusters: Vec<String> = k
        .clusters
        .values()
        .iter()
        .filter(|c| !c["metadata"]["deletionTimestamp"].is_string())
        .map(|c| text(c, "/metadata/name").to_owned())
        .collect();
    let mut errors = Vec::new();
    for ns in k.namespaces.values().iter().filter(|n| synced(n)) {
        let name = work_name("Namespace", text(ns, "/metadata/name"), "");
        for cluster in &clusters {
            let space = execution_space(cluster);
            let api: Api<DynamicObject> = Api::namespaced_with(k.client.clone(), &space, &works());
            let existing = k.works.get_value(&space, &name);
            let work_id = existing
                .as_ref()
                .and_then(|w| label(w, WORK_PERMANENT_ID))
                .map(str::to_owned)
                .unwrap_or_else(permanent_id);
            let spec = json!({"workload": {"manifests": [manifest(ns, &name, &space, &work_id)]}});
            let result = match existing {
                Some(w) if w["spec"]["workload"] == spec["workload"] => Ok(()),
                Some(_) => api
                    .patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(&json!({"spec": spec})),
                    )
                    .await
                    .map(|_| ()),
                None => {
                    // The execution space comes from the cluster controller; wait for it.
                    if k.namespaces.get("", &space).is_none() {
                        continue;
                    }
                    let body = json!({
                        "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                        "metadata": {
                            "name": name, "namespace": space,
                            "finalizers": [EXECUTION_FINALIZER],
                            "labels": {WORK_PERMANENT_ID: work_id},
                            "ownerReferences": [{"apiVersion": "v1", "kind": "Namespace",
                                "name": text(ns, "/metadata/name"), "uid": text(ns, "/metadata/uid"),
                                "controller": true, "blockOwnerDeletion": true}],
                        },
                        "spec": spec,
                    });
                    match serde_json::from_value::<DynamicObject>(body) {
                        Ok(o) => match api.create(&PostParams::default(), &o).await {
                            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                            other => other.map(|_| ()),
                        },
                        Err(e) => {
                            errors.push(e.to_string());
                            continue;
                        }
                    }
                }
            };
            if let Err(e) = result {
                errors.push(format!("{space}/{name}: {e}"));
            }
        }
    }
    if errors.is_empty() {
        Ok(false)
    } else {
        Err(errors.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_manifest_is_the_recorded_one() {
        // kairship-core/tests/data/karmada-v1.19/works-karmada-es-msb.json, Work demo-6654f4c4f6.
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "demo", "uid": "u", "resourceVersion": "3", "creationTimestamp": "t",
                         "labels": {"kubernetes.io/metadata.name": "demo"}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
        let m = manifest(&ns, "demo-6654f4c4f6", "karmada-es-msb", "id");
        assert_eq!(
            m,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "annotations": {
                MANAGED_ANNOTATIONS: "resourcetemplate.karmada.io/managed-annotations,resourcetemplate.karmada.io/managed-labels,resourcetemplate.karmada.io/uid,work.karmada.io/name,work.karmada.io/namespace",
                MANAGED_LABELS: "karmada.io/managed,kubernetes.io/metadata.name,work.karmada.io/permanent-id",
                TEMPLATE_UID: "u", WORK_NAME: "demo-6654f4c4f6", WORK_NAMESPACE: "karmada-es-msb"},
            "labels": {MANAGED: "true", "kubernetes.io/metadata.name": "demo", WORK_PERMANENT_ID: "id"},
            "name": "demo"}, "spec": {"finalizers": ["kubernetes"]}})
        );
        assert!(synced(&ns));
        assert!(!synced(&json!({"metadata": {"name": "default"}})));
        assert!(!synced(&json!({"metadata": {"name": "karmada-es-x"}})));
    }
}
