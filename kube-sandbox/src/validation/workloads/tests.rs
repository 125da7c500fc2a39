use serde_json::{Value, json};

use super::validate;

/// `field: body` of every error, as the Status message lists them.
fn messages(group: &str, plural: &str, obj: &Value, old: Option<&Value>) -> Vec<String> {
    validate(group, plural, obj, old)
        .into_iter()
        .map(|e| format!("{}: {}", e.field, e.error_body()))
        .collect()
}

/// A valid, defaulted Deployment with `spec` merged over it.
fn deployment(patch: Value) -> Value {
    let mut d = json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"restartPolicy": "Always", "containers": [{"name": "web", "image": "nginx:1.27"}]}
            }
        }
    });
    merge(&mut d["spec"], patch);
    d
}

/// JSON merge patch (RFC 7386).
fn merge(target: &mut Value, patch: Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = json!({});
            }
            for (k, v) in p {
                if v.is_null() {
                    if let Some(t) = target.as_object_mut() {
                        t.remove(&k);
                    }
                } else {
                    merge(&mut target[&k], v);
                }
            }
        }
        other => *target = other,
    }
}

#[test]
fn deployment_rules_as_validate_deployment_spec() {
    let dns = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    let table: Vec<(Value, Vec<String>)> = vec![
        (json!({}), vec![]),
        (
            json!({"replicas": -1}),
            vec!["spec.replicas: Invalid value: -1: must be greater than or equal to 0".into()],
        ),
        (
            json!({"selector": null}),
            vec![
                "spec.selector: Required value".into(),
                "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`".into(),
            ],
        ),
        (
            json!({"selector": {"matchLabels": null}}),
            vec!["spec.selector: Invalid value: {}: empty selector is invalid for deployment".into()],
        ),
        (
            json!({"selector": {"matchLabels": {"app": "api"}}}),
            vec!["spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`".into()],
        ),
        (
            json!({"template": {"metadata": {"labels": null}}}),
            vec!["spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`".into()],
        ),
        (
            json!({"template": {"spec": {"containers": []}}}),
            vec!["spec.template.spec.containers: Required value".into()],
        ),
        (
            json!({"template": {"spec": {"restartPolicy": "Never"}}}),
            vec!["spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"".into()],
        ),
        (
            json!({"template": {"spec": {"restartPolicy": "Sometimes"}}}),
            vec![
                "spec.template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"".into(),
                "spec.template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\"".into(),
            ],
        ),
        (
            json!({"template": {"spec": {"containers": [
                {"name": "Web_1", "image": "nginx", "ports": [{"containerPort": 70000}, {"containerPort": 0, "name": "http"}, {"containerPort": 80, "name": "http"}]},
                {"name": "web-2"},
                {"name": "web-2", "image": "x", "ports": [{"containerPort": 80, "protocol": "HTTP"}]}
            ]}}}),
            vec![
                format!("spec.template.spec.containers[0].name: Invalid value: \"Web_1\": {dns}"),
                "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive".into(),
                "spec.template.spec.containers[0].ports[1].containerPort: Required value".into(),
                "spec.template.spec.containers[0].ports[2].name: Duplicate value: \"http\"".into(),
                "spec.template.spec.containers[1].image: Required value".into(),
                "spec.template.spec.containers[2].ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".into(),
                "spec.template.spec.containers[2].name: Duplicate value: \"web-2\"".into(),
            ],
        ),
        (
            json!({"strategy": {"type": "Blue"}}),
            vec!["spec.strategy: Unsupported value: {\"Type\":\"Blue\",\"RollingUpdate\":{\"MaxUnavailable\":\"25%\",\"MaxSurge\":\"25%\"}}: supported values: \"Recreate\", \"RollingUpdate\"".into()],
        ),
        (
            // Only RollingUpdate gets default bounds: an unset one is a zero IntOrString.
            json!({"strategy": {"type": "Blue", "rollingUpdate": {"maxSurge": null}}}),
            vec!["spec.strategy: Unsupported value: {\"Type\":\"Blue\",\"RollingUpdate\":{\"MaxUnavailable\":\"25%\",\"MaxSurge\":0}}: supported values: \"Recreate\", \"RollingUpdate\"".into()],
        ),
        (
            json!({"strategy": {"type": "Recreate"}}),
            vec!["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'".into()],
        ),
        (
            json!({"strategy": {"type": "Recreate", "rollingUpdate": null}}),
            vec![],
        ),
        (
            json!({"strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}}}),
            vec!["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"0%\": may not be 0 when `maxSurge` is 0".into()],
        ),
        (
            json!({"strategy": {"rollingUpdate": {"maxSurge": -1, "maxUnavailable": "150%"}}}),
            vec![
                "spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0".into(),
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%".into(),
            ],
        ),
        (
            json!({"strategy": {"rollingUpdate": {"maxUnavailable": "lots"}}}),
            vec!["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"lots\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')".into()],
        ),
        (
            json!({"minReadySeconds": 700, "revisionHistoryLimit": -2}),
            vec![
                "spec.revisionHistoryLimit: Invalid value: -2: must be greater than or equal to 0".into(),
                "spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds".into(),
            ],
        ),
        (
            json!({"progressDeadlineSeconds": -1}),
            vec![
                "spec.progressDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0".into(),
                "spec.progressDeadlineSeconds: Invalid value: -1: must be greater than minReadySeconds".into(),
            ],
        ),
        (
            json!({"template": {"spec": {"activeDeadlineSeconds": 5}}}),
            vec!["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported".into()],
        ),
        (
            json!({"selector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}),
            vec![
                "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'".into(),
                "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\"}]}: invalid label selector".into(),
            ],
        ),
    ];
    for (patch, want) in table {
        let obj = deployment(patch.clone());
        assert_eq!(messages("apps", "deployments", &obj, None), want, "{patch}");
    }
}

#[test]
fn selectors_of_deployments_replicasets_and_daemonsets_are_immutable() {
    let old = deployment(json!({}));
    let new = deployment(
        json!({"selector": {"matchLabels": {"app": "web", "tier": "x"}}, "template": {"metadata": {"labels": {"tier": "x"}}}}),
    );
    let want = vec!["spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"tier\":\"x\"}}: field is immutable".to_string()];
    assert_eq!(messages("apps", "deployments", &new, Some(&old)), want);
    assert_eq!(messages("apps", "replicasets", &new, Some(&old)), want);
    // The same selector written as an empty map is no change.
    let same = deployment(json!({"selector": {"matchExpressions": []}}));
    assert_eq!(
        messages("apps", "deployments", &same, Some(&old)),
        Vec::<String>::new()
    );
}

#[test]
fn replicasets_statefulsets_and_daemonsets() {
    let rs = deployment(
        json!({"strategy": null, "progressDeadlineSeconds": null, "selector": {"matchLabels": null}, "replicas": -3}),
    );
    assert_eq!(
        messages("apps", "replicasets", &rs, None),
        vec![
            "spec.replicas: Invalid value: -3: must be greater than or equal to 0",
            "spec.selector: Invalid value: {}: empty selector is invalid for deployment",
        ]
    );
    let sts = deployment(json!({"strategy": null, "progressDeadlineSeconds": null,
        "podManagementPolicy": "Random", "updateStrategy": {"type": "OnDelete", "rollingUpdate": {"partition": 1}},
        "serviceName": "web_svc", "selector": {"matchLabels": {"app": "db"}}, "template": {"spec": {"restartPolicy": "OnFailure"}}}));
    assert_eq!(
        messages("apps", "statefulsets", &sts, None),
        vec![
            "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'".to_string(),
            "spec.updateStrategy.rollingUpdate: Invalid value: {\"Partition\":1,\"MaxUnavailable\":null}: only allowed for updateStrategy 'RollingUpdate'".into(),
            "spec.serviceName: Invalid value: \"web_svc\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".into(),
            "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`".into(),
            "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"".into(),
        ]
    );
    let old =
        deployment(json!({"strategy": null, "progressDeadlineSeconds": null, "serviceName": "db"}));
    let renamed = deployment(
        json!({"strategy": null, "progressDeadlineSeconds": null, "serviceName": "db2", "replicas": 3}),
    );
    assert_eq!(
        messages("apps", "statefulsets", &renamed, Some(&old)),
        vec![
            "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
        ]
    );
    let scaled = deployment(
        json!({"strategy": null, "progressDeadlineSeconds": null, "serviceName": "db", "replicas": 3}),
    );
    assert_eq!(
        messages("apps", "statefulsets", &scaled, Some(&old)),
        Vec::<String>::new()
    );

    let ds = deployment(
        json!({"strategy": null, "progressDeadlineSeconds": null, "replicas": null, "revisionHistoryLimit": null,
        "selector": null, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}}),
    );
    assert_eq!(
        messages("apps", "daemonsets", &ds, None),
        vec![
            "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0",
        ]
    );
    let ds = deployment(
        json!({"strategy": null, "progressDeadlineSeconds": null, "replicas": null,
        "updateStrategy": {"type": "Rolling"}}),
    );
    assert_eq!(
        messages("apps", "daemonsets", &ds, None),
        vec![
            "spec.updateStrategy: Unsupported value: {\"Type\":\"Rolling\",\"RollingUpdate\":null}: supported values: \"RollingUpdate\", \"OnDelete\""
        ]
    );
}

fn job(patch: Value) -> Value {
    let mut j = json!({
        "metadata": {"name": "pi", "uid": "u1"},
        "spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
            "template": {
                "metadata": {"labels": {"batch.kubernetes.io/controller-uid": "u1", "job-name": "pi"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl:5"}]}
            }
        }
    });
    merge(&mut j["spec"], patch);
    j
}

#[test]
fn jobs_as_validate_job_spec() {
    let table: Vec<(Value, Vec<&str>)> = vec![
        (json!({}), vec![]),
        (
            json!({"parallelism": -1, "completions": -2, "backoffLimit": -3, "activeDeadlineSeconds": -4}),
            vec![
                "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
                "spec.completions: Invalid value: -2: must be greater than or equal to 0",
                "spec.activeDeadlineSeconds: Invalid value: -4: must be greater than or equal to 0",
                "spec.backoffLimit: Invalid value: -3: must be greater than or equal to 0",
            ],
        ),
        (
            json!({"template": {"spec": {"restartPolicy": null}}}),
            vec![
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            ],
        ),
        (
            json!({"template": {"spec": {"restartPolicy": "Always"}}}),
            vec![
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            ],
        ),
        (
            json!({"template": {"spec": {"restartPolicy": "OnFailure"}}}),
            vec![],
        ),
        (
            json!({"selector": {"matchLabels": {"app": "other"}}}),
            vec![
                "spec.template.metadata.labels: Invalid value: {\"batch.kubernetes.io/controller-uid\":\"u1\",\"job-name\":\"pi\"}: `selector` does not match template `labels`",
            ],
        ),
        (
            // A missing selector selects nothing, so the template's labels do not match either.
            json!({"selector": null}),
            vec![
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: {\"batch.kubernetes.io/controller-uid\":\"u1\",\"job-name\":\"pi\"}: `selector` does not match template `labels`",
            ],
        ),
        (
            json!({"completionMode": "Indexed", "completions": null}),
            vec!["spec.completions: Required value: when completion mode is Indexed"],
        ),
    ];
    for (patch, want) in table {
        let obj = job(patch.clone());
        assert_eq!(messages("batch", "jobs", &obj, None), want, "{patch}");
    }
}

#[test]
fn cronjobs_as_validate_cron_job_spec() {
    let cron = |spec: Value| json!({"metadata": {"name": "tick"}, "spec": spec});
    let template = json!({"spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}});
    let ok = cron(
        json!({"schedule": "*/5 * * * *", "concurrencyPolicy": "Allow", "jobTemplate": template}),
    );
    assert_eq!(
        messages("batch", "cronjobs", &ok, None),
        Vec::<String>::new()
    );
    let bad = cron(json!({
        "schedule": "every minute", "concurrencyPolicy": "Sometimes", "startingDeadlineSeconds": -5,
        "successfulJobsHistoryLimit": -1,
        "jobTemplate": {"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    }));
    assert_eq!(
        messages("batch", "cronjobs", &bad, None),
        vec![
            "spec.schedule: Invalid value: \"every minute\": expected exactly 5 fields, found 2: every minute",
            "spec.startingDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0",
            "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
            "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            "spec.jobTemplate.spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: `selector` will be auto-generated",
            "spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
        ]
    );
    let tz = cron(json!({"schedule": "CRON_TZ=UTC 0 * * * *", "jobTemplate": template}));
    assert_eq!(
        messages("batch", "cronjobs", &tz, None),
        vec![
            "spec.schedule: Invalid value: \"CRON_TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
        ]
    );
    let long = json!({"metadata": {"name": "a".repeat(53)}, "spec": {"schedule": "@hourly", "jobTemplate": template}});
    assert_eq!(
        messages("batch", "cronjobs", &long, None),
        vec![format!(
            "metadata.name: Invalid value: \"{}\": must be no more than 52 characters",
            "a".repeat(53)
        )]
    );
    assert_eq!(
        messages("batch", "cronjobs", &long, Some(&long)),
        Vec::<String>::new()
    );
}

#[test]
fn pods_on_create_only() {
    let pod = json!({"metadata": {"name": "p"}, "spec": {
        "restartPolicy": "Sometimes",
        "activeDeadlineSeconds": 0,
        "nodeSelector": {"zone": "-bad"},
        "initContainers": [{"name": "app", "image": "busybox"}],
        "containers": [{"name": "app", "image": "nginx", "env": [{"value": "x"}], "imagePullPolicy": "Sometimes"}]
    }});
    assert_eq!(
        messages("", "pods", &pod, None),
        vec![
            "spec.containers[0].env[0].name: Required value",
            "spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
            "spec.initContainers[0].name: Duplicate value: \"app\"",
            "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
            "spec.nodeSelector: Invalid value: \"-bad\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
        ]
    );
    assert_eq!(messages("", "pods", &pod, Some(&pod)), Vec::<String>::new());
    let empty = json!({"metadata": {"name": "p"}, "spec": {"containers": []}});
    assert_eq!(
        messages("", "pods", &empty, None),
        vec!["spec.containers: Required value"]
    );
}
