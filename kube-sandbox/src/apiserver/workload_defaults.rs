//! The defaults kube-apiserver gives workload kinds (`apps/v1` and `batch/v1` `SetDefaults_*`)
//! and their pod templates: what `kubectl get -o yaml` shows and what `kubectl rollout status`
//! reads (a StatefulSet or DaemonSet without `updateStrategy.type: RollingUpdate` has no rollout
//! status). Jobs also get their generated selector and labels on creation.

use serde_json::{Map, Value, json};

fn set_default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.into(), value);
    }
}

/// The object at `key` of `map`, made an object if missing.
fn object<'m>(map: &'m mut Map<String, Value>, key: &str) -> Option<&'m mut Map<String, Value>> {
    let value = map.entry(key).or_insert_with(|| json!({}));
    if value.is_null() {
        *value = json!({});
    }
    value.as_object_mut()
}

/// Pod template defaults (`SetDefaults_PodSpec` and the container defaults);
/// `restart_policy` is left alone for Jobs, whose templates must name theirs.
fn default_template(template: Option<&mut Value>, restart_policy: bool) {
    let Some(spec) = template
        .and_then(Value::as_object_mut)
        .and_then(|t| object(t, "spec"))
    else {
        return;
    };
    if restart_policy {
        set_default(spec, "restartPolicy", json!("Always"));
    }
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "securityContext", json!({}));
    for list in ["containers", "initContainers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers.iter_mut().filter_map(Value::as_object_mut) {
                let image = c.get("image").and_then(Value::as_str).unwrap_or("");
                let latest = !image.contains(':') || image.ends_with(":latest");
                let policy = if latest { "Always" } else { "IfNotPresent" };
                set_default(c, "imagePullPolicy", json!(policy));
                set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
                set_default(c, "terminationMessagePolicy", json!("File"));
                if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
                    for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                        set_default(p, "protocol", json!("TCP"));
                    }
                }
            }
        }
    }
}

/// Applies the defaults of a workload kind to `obj` (create and update alike); `creating`
/// adds a Job's generated selector and labels.
pub fn apply(group: &str, plural: &str, obj: &mut Value, creating: bool) {
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(spec) = obj.as_object_mut().and_then(|o| object(o, "spec")) else {
        return;
    };
    match (group, plural) {
        ("apps", "deployments") => {
            set_default(spec, "replicas", json!(1));
            if let Some(strategy) = object(spec, "strategy") {
                set_default(strategy, "type", json!("RollingUpdate"));
                if strategy["type"] == "RollingUpdate"
                    && let Some(rolling) = object(strategy, "rollingUpdate")
                {
                    set_default(rolling, "maxSurge", json!("25%"));
                    set_default(rolling, "maxUnavailable", json!("25%"));
                }
            }
            set_default(spec, "revisionHistoryLimit", json!(10));
            set_default(spec, "progressDeadlineSeconds", json!(600));
            default_template(spec.get_mut("template"), true);
        }
        ("apps", "replicasets") => {
            set_default(spec, "replicas", json!(1));
            default_template(spec.get_mut("template"), true);
        }
        ("apps", "statefulsets") => {
            set_default(spec, "replicas", json!(1));
            set_default(spec, "podManagementPolicy", json!("OrderedReady"));
            if let Some(strategy) = object(spec, "updateStrategy") {
                set_default(strategy, "type", json!("RollingUpdate"));
                if strategy["type"] == "RollingUpdate"
                    && let Some(rolling) = object(strategy, "rollingUpdate")
                {
                    set_default(rolling, "partition", json!(0));
                }
            }
            set_default(spec, "revisionHistoryLimit", json!(10));
            if let Some(retention) = object(spec, "persistentVolumeClaimRetentionPolicy") {
                set_default(retention, "whenDeleted", json!("Retain"));
                set_default(retention, "whenScaled", json!("Retain"));
            }
            default_template(spec.get_mut("template"), true);
        }
        ("apps", "daemonsets") => {
            if let Some(strategy) = object(spec, "updateStrategy") {
                set_default(strategy, "type", json!("RollingUpdate"));
                if strategy["type"] == "RollingUpdate"
                    && let Some(rolling) = object(strategy, "rollingUpdate")
                {
                    set_default(rolling, "maxUnavailable", json!(1));
                    set_default(rolling, "maxSurge", json!(0));
                }
            }
            set_default(spec, "revisionHistoryLimit", json!(10));
            default_template(spec.get_mut("template"), true);
        }
        ("batch", "jobs") => {
            if spec.get("completions").is_none_or(Value::is_null)
                && spec.get("parallelism").is_none_or(Value::is_null)
            {
                spec.insert("completions".into(), json!(1));
            }
            set_default(spec, "parallelism", json!(1));
            set_default(spec, "backoffLimit", json!(6));
            set_default(spec, "completionMode", json!("NonIndexed"));
            set_default(spec, "suspend", json!(false));
            set_default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
            let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
            if creating && !manual && !uid.is_empty() {
                // The Job's own selector (upstream `generateSelector`).
                spec.insert(
                    "selector".into(),
                    json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
                );
                if let Some(template) = spec.get_mut("template").and_then(Value::as_object_mut)
                    && let Some(metadata) = object(template, "metadata")
                    && let Some(labels) = object(metadata, "labels")
                {
                    for (k, v) in [
                        ("batch.kubernetes.io/controller-uid", &uid),
                        ("batch.kubernetes.io/job-name", &name),
                        ("controller-uid", &uid),
                        ("job-name", &name),
                    ] {
                        labels.insert(k.into(), json!(v));
                    }
                }
            }
            default_template(spec.get_mut("template"), false);
        }
        ("batch", "cronjobs") => {
            set_default(spec, "concurrencyPolicy", json!("Allow"));
            set_default(spec, "suspend", json!(false));
            set_default(spec, "successfulJobsHistoryLimit", json!(3));
            set_default(spec, "failedJobsHistoryLimit", json!(1));
            if let Some(template) = spec
                .get_mut("jobTemplate")
                .and_then(Value::as_object_mut)
                .and_then(|t| object(t, "spec"))
            {
                default_template(template.get_mut("template"), false);
            }
        }
        _ => {}
    }
}

/// Whether a kind gets workload defaults.
pub fn applies_to(group: &str, plural: &str) -> bool {
    matches!(
        (group, plural),
        (
            "apps",
            "deployments" | "replicasets" | "statefulsets" | "daemonsets"
        ) | ("batch", "jobs" | "cronjobs")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployments_get_upstream_defaults() {
        let mut d = json!({"metadata": {"name": "web"}, "spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}}}});
        apply("apps", "deployments", &mut d, true);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}})
        );
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
        let pod = &d["spec"]["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(pod["containers"][0]["ports"][0]["protocol"], "TCP");
        // Recreate gets no rollingUpdate; set values stay.
        let mut r = json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}});
        apply("apps", "deployments", &mut r, false);
        assert_eq!(r["spec"]["replicas"], 0);
        assert_eq!(r["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn jobs_get_a_generated_selector_on_creation() {
        let mut j = json!({"metadata": {"name": "pi", "uid": "u1"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "perl:5"}]}}}});
        apply("batch", "jobs", &mut j, true);
        assert_eq!(j["spec"]["completions"], 1);
        assert_eq!(j["spec"]["parallelism"], 1);
        assert_eq!(j["spec"]["backoffLimit"], 6);
        assert_eq!(
            j["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
            "u1"
        );
        assert_eq!(
            j["spec"]["template"]["metadata"]["labels"]["job-name"],
            "pi"
        );
        assert_eq!(j["spec"]["template"]["spec"]["restartPolicy"], "Never");
        let mut parallel = json!({"spec": {"parallelism": 3}});
        apply("batch", "jobs", &mut parallel, false);
        assert!(parallel["spec"].get("completions").is_none());
    }

    #[test]
    fn statefulsets_and_daemonsets_roll_by_default() {
        let mut s = json!({"spec": {}});
        apply("apps", "statefulsets", &mut s, true);
        assert_eq!(
            s["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        assert_eq!(s["spec"]["podManagementPolicy"], "OrderedReady");
        let mut d = json!({"spec": {"updateStrategy": {"type": "OnDelete"}}});
        apply("apps", "daemonsets", &mut d, true);
        assert_eq!(d["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
    }
}
