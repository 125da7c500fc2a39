//! `metadata.labels` is validated on every write of every kind, as kube-apiserver's
//! `ValidateObjectMeta` does (`ValidateLabels`: `IsQualifiedName` for keys,
//! `IsValidLabelValue` for values): 422 Invalid, one cause per problem, each on the field
//! `metadata.labels`, with the apiserver's wording.

#![allow(clippy::unwrap_used)]

mod common;

use common::{raw, targets};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};

const VALUE_PROBLEM: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const KEY_PROBLEM: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

fn slice(labels: Value) -> EndpointSlice {
    serde_json::from_value(json!({
        "metadata": {"name": "db-abcde", "labels": labels},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.7"]}],
    }))
    .unwrap()
}

/// The `Status` of a failed request.
fn status_of(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("not an API error: {other:?}"),
    }
}

#[tokio::test]
async fn an_endpointslice_with_a_slash_in_a_label_value_is_invalid() {
    for t in targets().await {
        let slices: Api<EndpointSlice> = Api::namespaced(t.client.clone(), "default");
        let status = status_of(
            slices
                .create(
                    &PostParams::default(),
                    &slice(json!({
                        "kubernetes.io/service-name": "db",
                        "endpointslice.kubernetes.io/managed-by": "kubeocean.io/syncer",
                    })),
                )
                .await
                .unwrap_err(),
        );
        assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
        assert_eq!(
            status.message,
            format!(
                "EndpointSlice.discovery.k8s.io \"db-abcde\" is invalid: metadata.labels: Invalid value: \"kubeocean.io/syncer\": {VALUE_PROBLEM}"
            ),
            "{}",
            t.how
        );
        let details = status.details.unwrap();
        assert_eq!(details.kind, "EndpointSlice");
        assert_eq!(details.group, "discovery.k8s.io");
        let causes: Vec<(String, String, String)> = details
            .causes
            .into_iter()
            .map(|c| (c.reason, c.field, c.message))
            .collect();
        assert_eq!(
            causes,
            vec![(
                "FieldValueInvalid".to_owned(),
                "metadata.labels".to_owned(),
                format!("Invalid value: \"kubeocean.io/syncer\": {VALUE_PROBLEM}"),
            )]
        );

        // A valid value is stored; making it invalid by update or patch is refused too.
        let created = slices
            .create(
                &PostParams::default(),
                &slice(json!({"endpointslice.kubernetes.io/managed-by": "kubeocean.io-syncer"})),
            )
            .await
            .unwrap();
        let mut replaced = created.clone();
        replaced.metadata.labels.as_mut().unwrap().insert(
            "endpointslice.kubernetes.io/managed-by".to_owned(),
            "kubeocean.io/syncer".to_owned(),
        );
        let status = status_of(
            slices
                .replace("db-abcde", &PostParams::default(), &replaced)
                .await
                .unwrap_err(),
        );
        assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
        assert!(status.message.contains("metadata.labels"), "{status:?}");
        let status = status_of(
            slices
                .patch(
                    "db-abcde",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"labels": {"-bad": "x"}}})),
                )
                .await
                .unwrap_err(),
        );
        assert_eq!(
            status.message,
            format!(
                "EndpointSlice.discovery.k8s.io \"db-abcde\" is invalid: metadata.labels: Invalid value: \"-bad\": {KEY_PROBLEM}"
            )
        );
        let stored = slices.get("db-abcde").await.unwrap();
        assert_eq!(stored.metadata.labels, created.metadata.labels, "unchanged");
    }
}

#[tokio::test]
async fn every_problem_of_every_label_is_a_cause_in_key_order() {
    for t in targets().await {
        // Over raw HTTP, as kubectl sends it: a key with two slashes, a key too long, and a
        // value too long and ending in '-'.
        let long_value = format!("{}-", "v".repeat(63));
        let long_name = format!("example.com/{}", "n".repeat(64));
        let body = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "labels": {
                "a/b/c": "ok",
                long_name.clone(): "ok",
                "zone": long_value.clone(),
            }},
        });
        let (code, status) = raw(
            &t.client,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            "application/json",
            serde_json::to_vec(&body).unwrap(),
        )
        .await;
        assert_eq!(code, 422, "{}: {status}", t.how);
        let causes: Vec<(String, String)> = status["details"]["causes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                assert_eq!(c["field"], "metadata.labels");
                assert_eq!(c["reason"], "FieldValueInvalid");
                let message = c["message"].as_str().unwrap();
                let (value, detail) = message
                    .strip_prefix("Invalid value: \"")
                    .unwrap()
                    .split_once("\": ")
                    .unwrap();
                let (value, detail) = (value.to_owned(), detail.to_owned());
                (value, detail)
            })
            .collect();
        let two_slashes = "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
        assert_eq!(
            causes,
            vec![
                ("a/b/c".to_owned(), two_slashes.to_owned()),
                (
                    long_name.clone(),
                    "name part must be no more than 63 bytes".to_owned()
                ),
                (
                    long_value.clone(),
                    "must be no more than 63 bytes".to_owned()
                ),
                (long_value.clone(), VALUE_PROBLEM.to_owned()),
            ],
            "{}",
            t.how
        );
        let message = status["message"].as_str().unwrap();
        assert!(
            message.starts_with(
                "ConfigMap \"cm\" is invalid: [metadata.labels: Invalid value: \"a/b/c\": "
            ),
            "{message}"
        );

        // Valid keys and values, the empty value included, are accepted.
        let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
        let ok: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "ok", "labels": {
            "app": "", "kubeocean.io/proxier_port": "10300", "A.b_c-D": "x.Y_z-9",
            "kubeocean.io/physical-node-innerip": "10.0.0.1",
        }}}))
        .unwrap();
        cms.create(&PostParams::default(), &ok).await.unwrap();
    }
}

#[tokio::test]
async fn custom_resources_report_label_problems_before_schema_problems() {
    for t in targets().await {
        let crds: Api<
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        > = Api::all(t.client.clone());
        let crd = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "size": {"type": "integer", "maximum": 10}}}}}}}]},
        }))
        .unwrap();
        crds.create(&PostParams::default(), &crd).await.unwrap();
        let gvk = GroupVersionKind::gvk("example.com", "v1", "Gadget");
        let ar = ApiResource::from_gvk_with_plural(&gvk, "gadgets");
        let gadgets: Api<DynamicObject> = Api::namespaced_with(t.client.clone(), "default", &ar);
        let gadget: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "Gadget",
            "metadata": {"name": "g", "labels": {"owner": "team/a"}},
            "spec": {"size": 11},
        }))
        .unwrap();
        let status = status_of(
            gadgets
                .create(&PostParams::default(), &gadget)
                .await
                .unwrap_err(),
        );
        assert_eq!(status.code, 422, "{}", t.how);
        let fields: Vec<String> = status
            .details
            .unwrap()
            .causes
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(fields, ["metadata.labels", "spec.size"], "{}", t.how);
    }
}
