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

/// The `imagePullPolicy` kube gives a container without one (`SetDefaults_Container`):
/// `Always` for the tag `latest`, which an image without tag or digest has, else
/// `IfNotPresent`.
fn default_pull_policy(image: &str) -> &'static str {
    let (name, digest) = match image.split_once('@') {
        Some((name, _)) => (name, true),
        None => (image, false),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let tag = match last.split_once(':') {
        Some((_, tag)) => tag,
        None if digest => "",
        None => "latest",
    };
    if tag == "latest" {
        "Always"
    } else {
        "IfNotPresent"
    }
}

/// `SetDefaults_ObjectFieldSelector` of the `fieldRef` in `map`, if any.
fn default_field_ref(map: &mut Map<String, Value>) {
    if let Some(field_ref) = map.get_mut("fieldRef").and_then(Value::as_object_mut) {
        set_default(field_ref, "apiVersion", json!("v1"));
    }
}

/// `SetDefaults_HTTPGetAction` (and the declarative `grpc.service` default) of a probe's or a
/// lifecycle hook's handler.
fn default_handler(handler: &mut Map<String, Value>) {
    if let Some(get) = handler.get_mut("httpGet").and_then(Value::as_object_mut) {
        if get.get("path").is_none_or(|p| p.is_null() || p == "") {
            get.insert("path".into(), json!("/"));
        }
        set_default(get, "scheme", json!("HTTP"));
    }
    if let Some(grpc) = handler.get_mut("grpc").and_then(Value::as_object_mut) {
        set_default(grpc, "service", json!(""));
    }
}

/// A container's defaults: `SetDefaults_Container`, the port protocol, `fieldRef` API
/// versions, `SetDefaults_Probe` and the handlers of probes and lifecycle hooks.
fn default_container(c: &mut Map<String, Value>) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    set_default(c, "imagePullPolicy", json!(default_pull_policy(image)));
    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json!("File"));
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(p, "protocol", json!("TCP"));
        }
    }
    if let Some(env) = c.get_mut("env").and_then(Value::as_array_mut) {
        for from in env
            .iter_mut()
            .filter_map(|e| e.get_mut("valueFrom"))
            .filter_map(Value::as_object_mut)
        {
            default_field_ref(from);
            if let Some(file) = from.get_mut("fileKeyRef").and_then(Value::as_object_mut) {
                set_default(file, "optional", json!(false));
            }
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = c.get_mut(probe).and_then(Value::as_object_mut) {
            for (key, value) in [
                ("timeoutSeconds", 1),
                ("periodSeconds", 10),
                ("successThreshold", 1),
                ("failureThreshold", 3),
            ] {
                if probe.get(key).is_none_or(|v| v.is_null() || v == 0) {
                    probe.insert(key.into(), json!(value));
                }
            }
            default_handler(probe);
        }
    }
    if let Some(lifecycle) = c.get_mut("lifecycle").and_then(Value::as_object_mut) {
        for hook in ["postStart", "preStop"] {
            if let Some(hook) = lifecycle.get_mut(hook).and_then(Value::as_object_mut) {
                default_handler(hook);
            }
        }
    }
}

/// A volume's defaults: an `emptyDir` when no source is set (`SetDefaults_Volume`), file
/// modes 0644 of the ConfigMap, Secret, downward API and projected sources, the unset
/// `hostPath` type, `fieldRef` API versions, token lifetimes and claim volume modes.
fn default_volume(v: &mut Map<String, Value>) {
    if v.keys().all(|k| k == "name") {
        v.insert("emptyDir".into(), json!({}));
    }
    for source in ["configMap", "secret", "downwardAPI", "projected"] {
        if let Some(source) = v.get_mut(source).and_then(Value::as_object_mut) {
            set_default(source, "defaultMode", json!(420));
        }
    }
    if let Some(host_path) = v.get_mut("hostPath").and_then(Value::as_object_mut) {
        set_default(host_path, "type", json!(""));
    }
    if let Some(items) = v
        .get_mut("downwardAPI")
        .and_then(|d| d.get_mut("items"))
        .and_then(Value::as_array_mut)
    {
        items
            .iter_mut()
            .filter_map(Value::as_object_mut)
            .for_each(default_field_ref);
    }
    if let Some(sources) = v
        .get_mut("projected")
        .and_then(|p| p.get_mut("sources"))
        .and_then(Value::as_array_mut)
    {
        for source in sources.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(token) = source
                .get_mut("serviceAccountToken")
                .and_then(Value::as_object_mut)
            {
                set_default(token, "expirationSeconds", json!(3600));
            }
            if let Some(items) = source
                .get_mut("downwardAPI")
                .and_then(|d| d.get_mut("items"))
                .and_then(Value::as_array_mut)
            {
                items
                    .iter_mut()
                    .filter_map(Value::as_object_mut)
                    .for_each(default_field_ref);
            }
        }
    }
    if let Some(claim) = v
        .get_mut("ephemeral")
        .and_then(|e| e.get_mut("volumeClaimTemplate"))
        .and_then(|t| t.get_mut("spec"))
        .and_then(Value::as_object_mut)
    {
        set_default(claim, "volumeMode", json!("Filesystem"));
    }
}

/// Pod template defaults as kube-apiserver v1.36 stores them (kubernetes
/// `pkg/apis/core/v1/defaults.go`, the pod-spec paths of `SetObjectDefaults_Deployment` in
/// `pkg/apis/apps/v1/zz_generated.defaults.go`, and the `serviceAccount` that converting
/// through the internal type copies from `serviceAccountName`); `restart_policy` is left alone
/// for Jobs, whose templates must name theirs.
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
    let account = ["serviceAccountName", "serviceAccount"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_str))
        .find(|a| !a.is_empty())
        .map(str::to_owned);
    if let Some(account) = account {
        spec.insert("serviceAccountName".into(), json!(account));
        spec.insert("serviceAccount".into(), json!(account));
    }
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            containers
                .iter_mut()
                .filter_map(Value::as_object_mut)
                .for_each(default_container);
        }
    }
    if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        volumes
            .iter_mut()
            .filter_map(Value::as_object_mut)
            .for_each(default_volume);
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
    fn pull_policy_follows_the_image_tag() {
        // SetDefaults_Container: `latest` (also the tag of an untagged image) pulls always.
        let cases = [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("registry.example:5000/shop/nginx", "Always"),
            ("registry.example:5000/shop/nginx:1.28", "IfNotPresent"),
            ("nginx@sha256:0123", "IfNotPresent"),
            ("nginx:latest@sha256:0123", "Always"),
        ];
        for (image, want) in cases {
            assert_eq!(default_pull_policy(image), want, "{image}");
        }
    }

    #[test]
    fn probes_volumes_and_field_refs_get_upstream_defaults() {
        let mut d = json!({"spec": {"template": {"spec": {"serviceAccountName": "api",
            "containers": [{"name": "c", "image": "i:1",
                "env": [{"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                "livenessProbe": {"httpGet": {"port": 80}},
                "readinessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 5}}],
            "volumes": [{"name": "a"}, {"name": "b", "configMap": {"name": "cm"}},
                {"name": "h", "hostPath": {"path": "/x"}}]}}}});
        apply("apps", "deployments", &mut d, true);
        let pod = &d["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccount"], "api");
        let c = &pod["containers"][0];
        assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(
            c["livenessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c["readinessProbe"]["periodSeconds"], 5);
        assert_eq!(pod["volumes"][0], json!({"name": "a", "emptyDir": {}}));
        assert_eq!(pod["volumes"][1]["configMap"]["defaultMode"], 420);
        assert_eq!(pod["volumes"][2]["hostPath"]["type"], "");
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
