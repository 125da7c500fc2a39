//! The StatefulSet controller: pods `<set>-0 .. <set>-(N-1)` with stable hostnames,
//! PersistentVolumeClaims from `volumeClaimTemplates` (`<claim>-<set>-<ordinal>`),
//! OrderedReady (one pod at a time, each once the previous is Running and Ready; scale down
//! from the highest ordinal) or Parallel, RollingUpdate from the highest ordinal down to the
//! partition, and status with current and update revisions (`<set>-<hash>`).

use super::Pass;
use super::objects::{
    PodName, Writer, at, controller_ref, int_at, is_available, is_deleting, is_ready, is_terminal,
    name_of, namespace_of, owned_by, pod_from_template, str_at, uid_of,
};
use super::rollout::controller_revision_hash;
use crate::apiserver::resources::GroupResource;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The field manager of its writes.
pub const NAME: &str = "statefulset-controller";
/// The label carrying the revision a pod was made from.
pub const REVISION_LABEL: &str = "controller-revision-hash";

/// Syncs every StatefulSet.
pub fn sync_all(pass: &Pass) {
    let writer = Writer {
        state: pass.state,
        manager: NAME,
    };
    for set in pass.list("apps", "statefulsets") {
        if !is_deleting(&set) {
            sync(pass, &writer, &set);
        }
    }
}

/// The ordinal of a pod named `<set>-<n>`.
pub fn ordinal(set_name: &str, pod_name: &str) -> Option<i64> {
    pod_name
        .strip_prefix(set_name)?
        .strip_prefix('-')?
        .parse()
        .ok()
        .filter(|n: &i64| *n >= 0)
}

fn sync(pass: &Pass, w: &Writer, set: &Value) {
    let name = name_of(set);
    let namespace = namespace_of(set);
    let desired = int_at(set, &["spec", "replicas"]).unwrap_or(1).max(0);
    let parallel = str_at(set, &["spec", "podManagementPolicy"]) == "Parallel";
    let template = at(set, &["spec", "template"]).cloned().unwrap_or(json!({}));
    // Upstream hashes with the collision count, 0 when the status has none.
    let collisions = int_at(set, &["status", "collisionCount"]).map_or(0, |c| c as u32);
    let update_revision = format!(
        "{name}-{}",
        controller_revision_hash(&template, Some(collisions))
    );
    let current_revision = match str_at(set, &["status", "currentRevision"]) {
        "" => update_revision.clone(),
        r => r.to_string(),
    };
    let all_pods = pass.pods_in(namespace);
    let pods: BTreeMap<i64, &Value> = owned_by(&all_pods, uid_of(set))
        .into_iter()
        .filter_map(|p| Some((ordinal(name, name_of(p))?, p)))
        .collect();
    let healthy = |p: &Value| is_ready(p) && !is_deleting(p);
    let revision_of = |p: &Value| str_at(p, &["metadata", "labels", REVISION_LABEL]).to_string();

    // Replicas in order: create the missing, replace the finished.
    let mut waiting = false;
    for i in 0..desired {
        match pods.get(&i) {
            None => {
                create_pod(w, set, &template, i, &update_revision);
                if !parallel {
                    waiting = true;
                    break;
                }
            }
            Some(pod) if is_terminal(pod) && !is_deleting(pod) => {
                delete_pod(w, set, pod);
                if !parallel {
                    waiting = true;
                    break;
                }
            }
            Some(pod) if !healthy(pod) && !parallel => {
                waiting = true;
                break;
            }
            Some(_) => {}
        }
    }
    // Condemned pods go from the highest ordinal; one at a time when ordered.
    let condemned: Vec<&Value> = pods.range(desired..).rev().map(|(_, p)| *p).collect();
    if !waiting {
        for pod in &condemned {
            if is_deleting(pod) {
                if !parallel {
                    waiting = true;
                    break;
                }
                continue;
            }
            delete_pod(w, set, pod);
            if !parallel {
                waiting = true;
                break;
            }
        }
    }
    // Rolling update: from the highest ordinal down to the partition, one pod at a time, once
    // every pod is healthy.
    let rolling = str_at(set, &["spec", "updateStrategy", "type"]) != "OnDelete";
    let all_healthy = (0..desired).all(|i| pods.get(&i).is_some_and(|p| healthy(p)));
    if rolling && !waiting && condemned.is_empty() && all_healthy {
        let partition = int_at(
            set,
            &["spec", "updateStrategy", "rollingUpdate", "partition"],
        )
        .unwrap_or(0);
        if let Some(pod) = (partition..desired)
            .rev()
            .filter_map(|i| pods.get(&i))
            .find(|p| revision_of(p) != update_revision)
        {
            delete_pod(w, set, pod);
        }
    }

    // Status.
    let live: Vec<&Value> = pods.values().copied().filter(|p| !is_deleting(p)).collect();
    let min_ready = int_at(set, &["spec", "minReadySeconds"]).unwrap_or(0);
    let count = |f: &dyn Fn(&Value) -> bool| live.iter().filter(|p| f(p)).count() as i64;
    let replicas = live.len() as i64;
    let ready = count(&|p| is_ready(p));
    let updated = count(&|p| revision_of(p) == update_revision);
    let mut current = count(&|p| revision_of(p) == current_revision);
    let mut current_revision = current_revision;
    if rolling && updated == replicas && ready == replicas && replicas == desired {
        current_revision = update_revision.clone();
        current = updated;
    }
    let status = json!({
        "observedGeneration": int_at(set, &["metadata", "generation"]).unwrap_or(0),
        "replicas": replicas,
        "readyReplicas": ready,
        "currentReplicas": current,
        "updatedReplicas": updated,
        "availableReplicas": count(&|p| is_available(p, min_ready, pass.now)),
        "currentRevision": current_revision,
        "updateRevision": update_revision,
        "collisionCount": collisions,
    });
    if let Err(e) = w.set_status("apps", "statefulsets", set, status) {
        tracing::debug!(statefulset = name, "cannot write status: {e}");
    }
}

/// Creates pod `<set>-<ordinal>` and the claims of its volumeClaimTemplates.
fn create_pod(w: &Writer, set: &Value, template: &Value, ordinal: i64, revision: &str) {
    let set_name = name_of(set);
    let namespace = namespace_of(set);
    let pod_name = format!("{set_name}-{ordinal}");
    let index = ordinal.to_string();
    let mut pod = pod_from_template(
        template,
        set,
        PodName::Exact(&pod_name),
        &[
            (REVISION_LABEL, revision),
            ("statefulset.kubernetes.io/pod-name", &pod_name),
            ("apps.kubernetes.io/pod-index", &index),
        ],
    );
    pod["spec"]["hostname"] = json!(pod_name);
    let service = str_at(set, &["spec", "serviceName"]);
    if !service.is_empty() {
        pod["spec"]["subdomain"] = json!(service);
    }
    let claims = at(set, &["spec", "volumeClaimTemplates"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let delete_with_set = str_at(
        set,
        &[
            "spec",
            "persistentVolumeClaimRetentionPolicy",
            "whenDeleted",
        ],
    ) == "Delete";
    for claim in &claims {
        let claim_name = name_of(claim);
        let pvc_name = format!("{claim_name}-{set_name}-{ordinal}");
        let mut volumes: Vec<Value> = at(&pod, &["spec", "volumes"])
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        volumes.retain(|v| v["name"] != claim_name);
        volumes.push(json!({"name": claim_name, "persistentVolumeClaim": {"claimName": pvc_name}}));
        pod["spec"]["volumes"] = json!(volumes);
        let exists = w
            .state
            .store
            .get(
                &GroupResource::new("", "persistentvolumeclaims"),
                namespace,
                &pvc_name,
            )
            .is_some();
        if !exists {
            let mut labels = at(claim, &["metadata", "labels"])
                .cloned()
                .filter(Value::is_object)
                .unwrap_or(json!({}));
            if let Some(selector) =
                at(set, &["spec", "selector", "matchLabels"]).and_then(Value::as_object)
            {
                for (k, v) in selector {
                    labels[k] = v.clone();
                }
            }
            let mut metadata = json!({"name": pvc_name, "labels": labels});
            if delete_with_set {
                metadata["ownerReferences"] = json!([controller_ref(set)]);
            }
            let body = json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": metadata,
                "spec": claim.get("spec").cloned().unwrap_or(json!({})),
            });
            match w.create("", "persistentvolumeclaims", namespace, body) {
                Ok(_) => w.event(
                    set,
                    "Normal",
                    "SuccessfulCreate",
                    &format!(
                        "create Claim {pvc_name} Pod {pod_name} in StatefulSet {set_name} success"
                    ),
                ),
                Err(e) => tracing::debug!(claim = pvc_name, "cannot create the claim: {e}"),
            }
        }
    }
    match w.create("", "pods", namespace, pod) {
        Ok(_) => w.event(
            set,
            "Normal",
            "SuccessfulCreate",
            &format!("create Pod {pod_name} in StatefulSet {set_name} successful"),
        ),
        Err(e) => tracing::debug!(pod = pod_name, "cannot create the pod: {e}"),
    }
}

/// Deletes one of the set's pods, with upstream's event.
fn delete_pod(w: &Writer, set: &Value, pod: &Value) {
    if w.delete("", "pods", pod).is_ok() {
        w.event(
            set,
            "Normal",
            "SuccessfulDelete",
            &format!(
                "delete Pod {} in StatefulSet {} successful",
                name_of(pod),
                name_of(set)
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_come_from_the_name_suffix() {
        let cases = [
            ("web", "web-0", Some(0)),
            ("web", "web-12", Some(12)),
            ("web", "web-x", None),
            ("web", "webby-1", None),
            ("web-1", "web-1-2", Some(2)),
            ("web", "web--1", None),
        ];
        for (set, pod, expected) in cases {
            assert_eq!(ordinal(set, pod), expected, "{pod}");
        }
    }
}
