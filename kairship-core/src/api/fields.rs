//! `fieldValidation` on writes that carry an object, as kube-apiserver does it: unknown fields
//! (at any depth, found from the kind's schema) are rejected (`Strict`, our default), dropped
//! with one warning each (`Warn`), or dropped silently (`Ignore`).
//!
//! The mode and the warnings travel with the request in a task-local scope
//! ([`with_field_validation`]), as kube-apiserver carries them in the request context: a
//! transport that sets no scope (gRPC) gets `Strict`, and the service trait keeps its shape.

use std::cell::RefCell;
use std::future::Future;
use std::sync::LazyLock;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResourceExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, BAD_REQUEST_TYPE};
use crate::instance::Instance;

/// What to do with fields the object's kind does not have (kube-apiserver's `fieldValidation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub enum FieldValidation {
    /// Reject the request (400) naming every unknown field.
    #[default]
    Strict,
    /// Drop the unknown fields and name each in a `Warning: 299` response header.
    Warn,
    /// Drop the unknown fields silently.
    Ignore,
}

/// Query parameters of writes that carry an object (create, replace, join).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct WriteOptions {
    /// Fields the object's kind does not have, at any depth: `Strict` (default) rejects the
    /// request naming them, `Warn` drops them with a `Warning` header each, `Ignore` drops
    /// them.
    #[serde(default)]
    #[param(inline)]
    pub field_validation: Option<FieldValidation>,
}

struct Scope {
    mode: FieldValidation,
    warnings: RefCell<Vec<String>>,
}

tokio::task_local! {
    static SCOPE: Scope;
}

/// Runs `call` (one service call) with `mode`, returning its output and the warnings it
/// recorded.
pub async fn with_field_validation<F: Future>(
    mode: FieldValidation,
    call: F,
) -> (F::Output, Vec<String>) {
    let scope = Scope {
        mode,
        warnings: RefCell::new(Vec::new()),
    };
    SCOPE
        .scope(scope, async move {
            let output = call.await;
            let warnings = SCOPE.with(|s| s.warnings.take());
            (output, warnings)
        })
        .await
}

/// The mode of the current request; `Strict` outside any scope.
pub fn current_mode() -> FieldValidation {
    SCOPE.try_with(|s| s.mode).unwrap_or_default()
}

fn record_warnings(warnings: Vec<String>) {
    // Outside a scope nobody can carry warnings back; the fields are dropped all the same.
    let _ = SCOPE.try_with(|s| s.warnings.borrow_mut().extend(warnings));
}

/// The warning text for one unknown field, as kube-apiserver words it.
pub fn unknown_field_warning(path: &str) -> String {
    format!("unknown field {path:?}")
}

/// Applies `mode` to the unknown fields of `body` under `schema`: the body to write (without
/// unknown fields unless rejected) and the warnings to send.
pub fn check_fields(
    schema: &Value,
    mut body: Value,
    mode: FieldValidation,
) -> Result<(Value, Vec<String>), ApiError> {
    let unknown = kube_kit::fields::drop_unknown_fields(schema, &mut body);
    if unknown.is_empty() {
        return Ok((body, Vec::new()));
    }
    match mode {
        FieldValidation::Strict => {
            let listed: Vec<String> = unknown.iter().map(|p| unknown_field_warning(p)).collect();
            let violations: Vec<Value> = unknown
                .iter()
                .map(|p| json!({"field": p, "description": "unknown field"}))
                .collect();
            Err(
                ApiError::invalid(format!("strict decoding error: {}", listed.join(", ")))
                    .with_detail(json!({"@type": BAD_REQUEST_TYPE, "fieldViolations": violations})),
            )
        }
        FieldValidation::Warn => Ok((
            body,
            unknown.iter().map(|p| unknown_field_warning(p)).collect(),
        )),
        FieldValidation::Ignore => Ok((body, Vec::new())),
    }
}

/// Applies the current request's mode to `body`, an `api_version`/`kind` object; kinds
/// without a schema pass unchanged (the server they are written to judges them).
pub fn enforce(body: Value, api_version: &str, kind: &str) -> Result<Value, ApiError> {
    let Some(schema) = schema_for(api_version, kind) else {
        return Ok(body);
    };
    if !body.is_object() {
        return Ok(body);
    }
    let (body, warnings) = check_fields(schema, body, current_mode())?;
    record_warnings(warnings);
    Ok(body)
}

/// The schema of a type that derives `JsonSchema` (k8s-openapi's built-in kinds), as JSON.
fn derived<T: schemars::JsonSchema>() -> Value {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    // A schema that cannot be written as JSON checks nothing rather than everything.
    serde_json::to_value(schema).unwrap_or(Value::Bool(true))
}

/// `schema` with `apiVersion`, `kind` and a full `metadata` (CRD schemas leave metadata open,
/// kube-apiserver still decodes it strictly).
fn with_object_fields(mut schema: Value) -> Value {
    let mut meta = derived::<ObjectMeta>();
    let defs = meta
        .as_object_mut()
        .and_then(|m| {
            m.remove("$schema");
            m.remove("$defs")
        })
        .unwrap_or_else(|| json!({}));
    if let Some(root) = schema.as_object_mut() {
        if let (Some(target), Value::Object(defs)) = (
            root.entry("$defs")
                .or_insert_with(|| json!({}))
                .as_object_mut(),
            defs,
        ) {
            target.extend(defs);
        }
        let properties = root.entry("properties").or_insert_with(|| json!({}));
        if let Some(properties) = properties.as_object_mut() {
            properties.insert("apiVersion".into(), json!({"type": "string"}));
            properties.insert("kind".into(), json!({"type": "string"}));
            properties.insert("metadata".into(), meta);
        }
    }
    schema
}

/// The `openAPIV3Schema` of `version` in a CRD given as YAML; `None` if it has none.
fn crd_schema(yaml: &str, version: &str) -> Option<Value> {
    let crd: Value = serde_saphyr::from_str(yaml).ok()?;
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(version))?
        .pointer("/schema/openAPIV3Schema")
        .cloned()
}

fn karmada_policy(yaml: &str) -> Value {
    // An unreadable embedded CRD is a build defect the tests catch; at run time, check nothing.
    crd_schema(yaml, "v1alpha1").map_or(Value::Bool(true), with_object_fields)
}

/// The schema of the objects of `api_version`/`kind` the API writes, if it has one.
pub fn schema_for(api_version: &str, kind: &str) -> Option<&'static Value> {
    macro_rules! once {
        ($build:expr) => {{
            static SCHEMA: LazyLock<Value> = LazyLock::new(|| $build);
            Some(&*SCHEMA)
        }};
    }
    match (api_version, kind) {
        ("apps/v1", "Deployment") => once!(derived::<Deployment>()),
        ("v1", "Service") => once!(derived::<Service>()),
        ("v1", "ConfigMap") => once!(derived::<ConfigMap>()),
        ("v1", "Secret") => once!(derived::<Secret>()),
        ("batch/v1", "Job") => once!(derived::<Job>()),
        ("batch/v1", "CronJob") => once!(derived::<CronJob>()),
        ("policy.karmada.io/v1alpha1", "PropagationPolicy") => once!(karmada_policy(include_str!(
            "../../crds/karmada/policy.karmada.io_propagationpolicies.yaml"
        ))),
        ("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy") => {
            once!(karmada_policy(include_str!(
                "../../crds/karmada/policy.karmada.io_clusterpropagationpolicies.yaml"
            )))
        }
        ("policy.karmada.io/v1alpha1", "OverridePolicy") => once!(karmada_policy(include_str!(
            "../../crds/karmada/policy.karmada.io_overridepolicies.yaml"
        ))),
        ("policy.karmada.io/v1alpha1", "ClusterOverridePolicy") => {
            once!(karmada_policy(include_str!(
                "../../crds/karmada/policy.karmada.io_clusteroverridepolicies.yaml"
            )))
        }
        ("kairship.io/v1alpha1", "Instance") => once!({
            let crd = Instance::crd();
            let schema = crd
                .spec
                .versions
                .first()
                .and_then(|v| v.schema.as_ref())
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .and_then(|s| serde_json::to_value(s).ok());
            schema.map_or(Value::Bool(true), with_object_fields)
        }),
        // Karmada's Cluster is served by its aggregated API server, which has no CRD to read:
        // its metadata is checked here, spec and status by that server.
        ("cluster.karmada.io/v1alpha1", "Cluster") => once!(with_object_fields(json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            },
        }))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Code;
    use crate::api::kinds::ResourceKind;

    fn unknown(api_version: &str, kind: &str, body: Value) -> Vec<String> {
        let schema = schema_for(api_version, kind).unwrap();
        kube_kit::fields::unknown_fields(schema, &body)
    }

    #[test]
    fn every_written_kind_has_a_schema_that_knows_its_fields() {
        for kind in ResourceKind::ALL {
            let schema = schema_for(kind.api_version(), kind.kind()).unwrap();
            assert!(schema.is_object(), "{kind:?}: {schema}");
            let body = json!({"apiVersion": kind.api_version(), "kind": kind.kind(),
                              "metadata": {"name": "a", "labels": {"x": "y"}, "bogusMeta": 1},
                              "bogusTop": 1});
            assert_eq!(
                kube_kit::fields::unknown_fields(schema, &body),
                ["bogusTop", "metadata.bogusMeta"],
                "{kind:?}"
            );
        }
    }

    #[test]
    fn nested_unknown_fields_per_kind_table() {
        let cases = [
            (
                "apps/v1",
                "Deployment",
                json!({"spec": {"bogus": 1, "replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                    "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                    "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
                        {"name": "c", "image": "nginx", "bogusC": 1,
                         "ports": [{"containerPort": 80}],
                         "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}}}),
                vec!["spec.bogus", "spec.template.spec.containers[0].bogusC"],
            ),
            (
                "v1",
                "Service",
                json!({"spec": {"ports": [{"port": 80, "targetPort": "http", "prot": "TCP"}]}}),
                vec!["spec.ports[0].prot"],
            ),
            (
                "v1",
                "ConfigMap",
                json!({"data": {"any": "key"}, "binaryData": {"b": "AA=="}}),
                vec![],
            ),
            (
                "v1",
                "Secret",
                json!({"type": "Opaque", "stringData": {"k": "v"}, "spec": {}}),
                vec!["spec"],
            ),
            (
                "batch/v1",
                "CronJob",
                json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {
                    "spec": {"containers": [{"name": "c", "envv": []}]}}}}}}),
                vec!["spec.jobTemplate.spec.template.spec.containers[0].envv"],
            ),
            (
                "policy.karmada.io/v1alpha1",
                "PropagationPolicy",
                json!({"spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "nme": "x"}],
                    "placement": {"clusterAffinity": {"clusterNames": ["m1"]}, "bogus": 1}}}),
                vec!["spec.placement.bogus", "spec.resourceSelectors[0].nme"],
            ),
            (
                "policy.karmada.io/v1alpha1",
                "ClusterOverridePolicy",
                json!({"spec": {"overrideRules": [{"overriders": {"plaintext": [
                    {"path": "/a", "operator": "add", "value": {"free": {"form": 1}}}]}}], "bogus": 1}}),
                vec!["spec.bogus"],
            ),
            (
                "kairship.io/v1alpha1",
                "Instance",
                json!({"spec": {"mode": "Adopt", "kubeconfigSecretRef": {"namespace": "a", "name": "b", "key": "c", "bogus": 1}, "bogus": 1}}),
                vec!["spec.bogus", "spec.kubeconfigSecretRef.bogus"],
            ),
            (
                "cluster.karmada.io/v1alpha1",
                "Cluster",
                json!({"metadata": {"nam": "x"}, "spec": {"anything": 1}}),
                vec!["metadata.nam"],
            ),
        ];
        for (api_version, kind, body, want) in cases {
            assert_eq!(unknown(api_version, kind, body), want, "{kind}");
        }
        assert!(schema_for("v1", "Pod").is_none());
    }

    #[test]
    fn modes_table() {
        let schema = schema_for("v1", "ConfigMap").unwrap();
        let body =
            json!({"metadata": {"name": "a", "bogusMeta": 1}, "data": {"k": "v"}, "spek": 1});
        let err = check_fields(schema, body.clone(), FieldValidation::Strict).unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument);
        assert_eq!(
            err.message,
            r#"strict decoding error: unknown field "metadata.bogusMeta", unknown field "spek""#
        );
        let (written, warnings) =
            check_fields(schema, body.clone(), FieldValidation::Warn).unwrap();
        assert_eq!(
            written,
            json!({"metadata": {"name": "a"}, "data": {"k": "v"}})
        );
        assert_eq!(
            warnings,
            [
                r#"unknown field "metadata.bogusMeta""#,
                r#"unknown field "spek""#
            ]
        );
        let (written, warnings) = check_fields(schema, body, FieldValidation::Ignore).unwrap();
        assert_eq!(
            written,
            json!({"metadata": {"name": "a"}, "data": {"k": "v"}})
        );
        assert!(warnings.is_empty());
        let clean = json!({"metadata": {"name": "a"}});
        let (written, _) = check_fields(schema, clean.clone(), FieldValidation::Strict).unwrap();
        assert_eq!(written, clean);
    }

    #[tokio::test]
    async fn the_scope_carries_the_mode_and_the_warnings() {
        assert_eq!(current_mode(), FieldValidation::Strict, "no scope: Strict");
        let body = json!({"metadata": {"name": "a"}, "spek": 1});
        assert!(enforce(body.clone(), "v1", "ConfigMap").is_err());
        let (written, warnings) = with_field_validation(FieldValidation::Warn, async {
            enforce(body.clone(), "v1", "ConfigMap")
        })
        .await;
        assert_eq!(written.unwrap(), json!({"metadata": {"name": "a"}}));
        assert_eq!(warnings, [r#"unknown field "spek""#]);
        let (strict, warnings) = with_field_validation(FieldValidation::Strict, async {
            enforce(body.clone(), "v1", "ConfigMap")
        })
        .await;
        assert!(strict.is_err());
        assert!(warnings.is_empty());
    }
}
