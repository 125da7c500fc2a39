//! The built-in workload kinds are validated as kube-apiserver v1.36 validates them, through
//! every write path that stores them (create, replace, every patch type, server-side apply,
//! `/scale`): 422 Invalid with `Kind.group "name" is invalid: <field>: <error>` (a bracketed
//! list when there are several), and one `details.causes` entry per error, in upstream's order,
//! its message without the field. Valid workloads, including a Job whose selector the apiserver
//! generates, are still stored.

#![allow(clippy::unwrap_used)]

mod common;

use common::{raw, targets};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}
            }
        }
    })
}

fn status_of(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("not an API error: {other:?}"),
    }
}

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

#[tokio::test]
async fn a_deployment_with_negative_replicas_is_refused_with_the_apiservers_status() {
    for t in targets().await {
        let body = serde_json::to_vec(&deployment("web", -1)).unwrap();
        let (code, status) = raw(&t.client, "POST", DEPLOYMENTS, "application/json", body).await;
        assert_eq!(code, 422, "{}", t.how);
        assert_eq!(
            status,
            json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Deployment.apps \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "reason": "Invalid",
                "details": {
                    "name": "web", "group": "apps", "kind": "Deployment",
                    "causes": [{
                        "reason": "FieldValueInvalid",
                        "message": "Invalid value: -1: must be greater than or equal to 0",
                        "field": "spec.replicas"
                    }]
                },
                "code": 422
            }),
            "{}",
            t.how
        );
        let (code, _) = raw(
            &t.client,
            "GET",
            &format!("{DEPLOYMENTS}/web"),
            "application/json",
            vec![],
        )
        .await;
        assert_eq!(code, 404, "nothing stored ({})", t.how);
    }
}

#[tokio::test]
async fn several_errors_are_listed_in_upstreams_order_after_the_label_errors() {
    for t in targets().await {
        // Sent as JSON without a selector (a typed client would send an empty one).
        let sloppy = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "sloppy", "labels": {"tier": "-x"}},
            "spec": {
                "template": {
                    "metadata": {"labels": {"app": "sloppy"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "web"}]}
                }
            }
        });
        let (code, status) = raw(
            &t.client,
            "POST",
            DEPLOYMENTS,
            "application/json",
            serde_json::to_vec(&sloppy).unwrap(),
        )
        .await;
        assert_eq!(code, 422, "{}", t.how);
        let status: kube::core::Status = serde_json::from_value(status).unwrap();
        let label = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        let expected = [
            (
                "FieldValueInvalid",
                "metadata.labels",
                format!("Invalid value: \"-x\": {label}"),
            ),
            (
                "FieldValueRequired",
                "spec.selector",
                "Required value".to_string(),
            ),
            (
                "FieldValueInvalid",
                "spec.template.metadata.labels",
                "Invalid value: {\"app\":\"sloppy\"}: `selector` does not match template `labels`"
                    .into(),
            ),
            (
                "FieldValueRequired",
                "spec.template.spec.containers[0].image",
                "Required value".into(),
            ),
            (
                "FieldValueNotSupported",
                "spec.template.spec.restartPolicy",
                "Unsupported value: \"Never\": supported values: \"Always\"".into(),
            ),
        ];
        assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
        let summary: Vec<String> = expected
            .iter()
            .map(|(_, field, msg)| format!("{field}: {msg}"))
            .collect();
        assert_eq!(
            status.message,
            format!(
                "Deployment.apps \"sloppy\" is invalid: [{}]",
                summary.join(", ")
            ),
            "{}",
            t.how
        );
        let causes: Vec<(String, String, String)> = status
            .details
            .unwrap()
            .causes
            .into_iter()
            .map(|c| (c.reason, c.field, c.message))
            .collect();
        let expected: Vec<(String, String, String)> = expected
            .into_iter()
            .map(|(r, f, m)| (r.to_string(), f.to_string(), m))
            .collect();
        assert_eq!(causes, expected, "{}", t.how);
    }
}

#[tokio::test]
async fn every_write_path_of_a_stored_deployment_is_validated() {
    let negative = "Deployment.apps \"web\" is invalid: spec.replicas: Invalid value: -2: must be greater than or equal to 0";
    for t in targets().await {
        let deployments: Api<Deployment> = Api::namespaced(t.client.clone(), "default");
        let created = deployments
            .create(
                &PostParams::default(),
                &serde_json::from_value(deployment("web", 1)).unwrap(),
            )
            .await
            .unwrap();

        // PUT.
        let mut replaced = created.clone();
        replaced.spec.as_mut().unwrap().replicas = Some(-2);
        let status = status_of(
            deployments
                .replace("web", &PostParams::default(), &replaced)
                .await
                .unwrap_err(),
        );
        assert_eq!(status.message, negative, "replace ({})", t.how);

        // Merge, strategic merge and JSON patches, and server-side apply.
        let patches: Vec<(&str, Patch<Value>)> = vec![
            ("merge", Patch::Merge(json!({"spec": {"replicas": -2}}))),
            (
                "strategic",
                Patch::Strategic(json!({"spec": {"replicas": -2}})),
            ),
            (
                "json",
                Patch::Json(
                    serde_json::from_value(
                        json!([{"op": "replace", "path": "/spec/replicas", "value": -2}]),
                    )
                    .unwrap(),
                ),
            ),
            ("apply", Patch::Apply(deployment("web", -2))),
        ];
        for (what, patch) in patches {
            let params = match patch {
                Patch::Apply(_) => PatchParams::apply("validation-test").force(),
                _ => PatchParams::default(),
            };
            let status = status_of(deployments.patch("web", &params, &patch).await.unwrap_err());
            assert_eq!(status.message, negative, "{what} patch ({})", t.how);
        }

        // The scale subresource validates the Scale.
        let status = status_of(
            deployments
                .patch_scale(
                    "web",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"replicas": -2}})),
                )
                .await
                .unwrap_err(),
        );
        assert_eq!(
            status.message,
            "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -2: must be greater than or equal to 0",
            "scale ({})",
            t.how
        );

        // The selector cannot change.
        let status = status_of(
            deployments
                .patch(
                    "web",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {
                        "selector": {"matchLabels": {"app": "web", "v": "2"}},
                        "template": {"metadata": {"labels": {"v": "2"}}}
                    }})),
                )
                .await
                .unwrap_err(),
        );
        assert_eq!(
            status.message,
            "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"v\":\"2\"}}: field is immutable",
            "{}",
            t.how
        );

        // Valid writes still go through, and nothing invalid was stored.
        deployments
            .patch_scale(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": 3}})),
            )
            .await
            .unwrap();
        let stored = deployments.get("web").await.unwrap();
        assert_eq!(stored.spec.unwrap().replicas, Some(3), "{}", t.how);
    }
}

#[tokio::test]
async fn each_workload_kind_refuses_what_kube_apiserver_refuses() {
    let container = json!([{"name": "c", "image": "busybox"}]);
    // (collection path, body, Status message)
    let cases = vec![
        (
            "/api/v1/namespaces/default/pods",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 70000}]}]}}),
            "Pod \"p\" is invalid: [spec.containers[0].image: Required value, spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive]",
        ),
        (
            "/apis/apps/v1/namespaces/default/replicasets",
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
                "spec": {"selector": {"matchLabels": {"app": "rs"}},
                    "template": {"metadata": {"labels": {"app": "other"}}, "spec": {"containers": container}}}}),
            "ReplicaSet.apps \"rs\" is invalid: spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`",
        ),
        (
            "/apis/apps/v1/namespaces/default/statefulsets",
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
                "spec": {"podManagementPolicy": "Random", "selector": {"matchLabels": {"app": "db"}},
                    "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": container}}}}),
            "StatefulSet.apps \"db\" is invalid: spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
        ),
        (
            "/apis/apps/v1/namespaces/default/daemonsets",
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
                "spec": {"selector": {"matchLabels": {"app": "agent"}},
                    "template": {"metadata": {"labels": {"app": "agent"}},
                        "spec": {"containers": [{"name": "Agent", "image": "busybox"}]}}}}),
            "DaemonSet.apps \"agent\" is invalid: spec.template.spec.containers[0].name: Invalid value: \"Agent\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ),
        (
            "/apis/batch/v1/namespaces/default/jobs",
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
                "spec": {"backoffLimit": -1, "template": {"spec": {"containers": container}}}}),
            "Job.batch \"pi\" is invalid: [spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0, spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"]",
        ),
        (
            "/apis/batch/v1/namespaces/default/cronjobs",
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
                "spec": {"schedule": "*/5 * * *",
                    "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": container}}}}}}),
            "CronJob.batch \"tick\" is invalid: spec.schedule: Invalid value: \"*/5 * * *\": expected exactly 5 fields, found 4: */5 * * *",
        ),
    ];
    for t in targets().await {
        for (path, body, message) in &cases {
            let (code, status) = raw(
                &t.client,
                "POST",
                path,
                "application/json",
                serde_json::to_vec(body).unwrap(),
            )
            .await;
            assert_eq!(code, 422, "{path} ({}): {status}", t.how);
            assert_eq!(status["message"], *message, "{path} ({})", t.how);
            assert_eq!(status["reason"], "Invalid");
            assert_eq!(status["details"]["kind"], body["kind"]);
        }
    }
}

#[tokio::test]
async fn valid_workloads_of_every_kind_are_stored() {
    for t in targets().await {
        let c = t.client.clone();
        let template = |app: &str, restart: &str| {
            json!({"metadata": {"labels": {"app": app}},
                "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 8080, "name": "http"}]}]}})
        };
        Api::<Deployment>::namespaced(c.clone(), "default")
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "d"}, "spec": {
                    "replicas": 0, "minReadySeconds": 5, "progressDeadlineSeconds": 60,
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                    "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["d"]}]},
                    "template": template("d", "Always")}}))
                .unwrap(),
            )
            .await
            .unwrap();
        Api::<ReplicaSet>::namespaced(c.clone(), "default")
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "rs"}, "spec": {
                    "selector": {"matchLabels": {"app": "rs"}}, "template": template("rs", "Always")}}))
                .unwrap(),
            )
            .await
            .unwrap();
        Api::<StatefulSet>::namespaced(c.clone(), "default")
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "db"}, "spec": {
                    "serviceName": "db", "updateStrategy": {"type": "OnDelete"},
                    "selector": {"matchLabels": {"app": "db"}}, "template": template("db", "Always")}}))
                .unwrap(),
            )
            .await
            .unwrap();
        Api::<DaemonSet>::namespaced(c.clone(), "default")
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "agent"}, "spec": {
                    "selector": {"matchLabels": {"app": "agent"}}, "template": template("agent", "")}}))
                .unwrap(),
            )
            .await
            .unwrap();
        // No selector: the apiserver generates one from the Job's uid.
        let job = Api::<Job>::namespaced(c.clone(), "default")
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "pi"}, "spec": {
                    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl:5"}]}}}}))
                .unwrap(),
            )
            .await
            .unwrap();
        let uid = job.metadata.uid.clone().unwrap();
        assert_eq!(
            job.spec.unwrap().selector.unwrap().match_labels.unwrap()["batch.kubernetes.io/controller-uid"],
            uid
        );
        // Updating the Job keeps its generated selector valid.
        Api::<Job>::namespaced(c.clone(), "default")
            .patch(
                "pi",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
            )
            .await
            .unwrap();
        Api::<CronJob>::namespaced(c.clone(), "default")
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "tick"}, "spec": {
                    "schedule": "@hourly",
                    "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}}))
                .unwrap(),
            )
            .await
            .unwrap();
        Api::<Pod>::namespaced(c.clone(), "default")
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}))
                .unwrap(),
            )
            .await
            .unwrap();
    }
}
