//! Checks and completes object bodies before they are written: the accepted top-level
//! fields, policies given as YAML/JSON text, and `apiVersion`/`kind`/`metadata.name`/
//! `metadata.namespace` consistent with the URL.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::ApiError;
use super::resources::PatchType;
use super::types::KubeObject;

/// Who the body must describe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expected<'a> {
    /// `group/version` (or `v1`).
    pub api_version: &'a str,
    /// Kind.
    pub kind: &'a str,
    /// The namespace of the URL; `None` for cluster-scoped objects.
    pub namespace: Option<&'a str>,
    /// The name of the URL (updates); `None` for creates.
    pub name: Option<&'a str>,
}

/// How a JSON value's type reads in error messages (`an object`, `a string`, ...).
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Checks that `body` is a JSON object whose top-level fields are among those of
/// [`KubeObject`] (`apiVersion`, `kind`, `metadata`, `spec`, `status`, `data`, `binaryData`,
/// `stringData`, `type`, `immutable`).
pub fn check_shape(body: &Value) -> Result<(), ApiError> {
    if !body.is_object() {
        return Err(ApiError::invalid(format!(
            "the body must be a JSON object, not {}",
            type_name(body)
        )));
    }
    KubeObject::deserialize(body)
        .map(drop)
        .map_err(|e| ApiError::invalid(format!("body: {e}")))
}

/// A policy body given as `{"data": "<the policy as YAML or JSON text>"}` becomes the policy
/// object; any other body is returned as is.
pub fn expand_policy_text(body: Value) -> Result<Value, ApiError> {
    let text = match &body {
        Value::Object(map) if map.len() == 1 => match map.get("data") {
            Some(Value::String(text)) => text,
            _ => return Ok(body),
        },
        _ => return Ok(body),
    };
    // YAML 1.2 is a superset of JSON, so one parser reads both.
    let parsed: Value = serde_saphyr::from_str(text)
        .map_err(|e| ApiError::invalid_field("data", format!("not a YAML or JSON policy: {e}")))?;
    if !parsed.is_object() {
        return Err(ApiError::invalid_field(
            "data",
            format!("the policy must be an object, not {}", type_name(&parsed)),
        ));
    }
    Ok(parsed)
}

fn check_string_field(
    object: &mut Map<String, Value>,
    field: &str,
    expected: &str,
) -> Result<(), ApiError> {
    match object.get(field) {
        None | Some(Value::Null) => {
            object.insert(field.to_owned(), Value::String(expected.to_owned()));
            Ok(())
        }
        Some(Value::String(s)) if s == expected => Ok(()),
        Some(other) => Err(ApiError::invalid_field(
            field,
            format!("is {other}, expected {expected:?}"),
        )),
    }
}

/// Checks `body` against `expected` and fills in what the URL implies: `apiVersion`, `kind`,
/// `metadata.namespace` and (for updates) `metadata.name`.
pub fn prepare(body: Value, expected: &Expected<'_>) -> Result<Value, ApiError> {
    // The top-level fields of the kinds the API knows are those of `KubeObject`; other
    // resources (RBAC roles, StorageClasses, ...) have their own, which their server judges.
    if super::fields::schema_for(expected.api_version, expected.kind).is_some() {
        check_shape(&body)?;
    }
    let Value::Object(mut object) = body else {
        return Err(ApiError::invalid(format!(
            "the body must be a JSON object, not {}",
            type_name(&body)
        )));
    };
    check_string_field(&mut object, "apiVersion", expected.api_version)?;
    check_string_field(&mut object, "kind", expected.kind)?;
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if metadata.is_null() {
        *metadata = Value::Object(Map::new());
    }
    let Value::Object(metadata) = metadata else {
        return Err(ApiError::invalid_field(
            "metadata",
            format!("must be an object, not {}", type_name(metadata)),
        ));
    };
    match expected.namespace {
        Some(ns) => check_string_field(metadata, "namespace", ns)
            .map_err(|e| rename(e, "metadata.namespace"))?,
        None => {
            if let Some(ns) = metadata.get("namespace").filter(|v| !is_empty(v)) {
                return Err(ApiError::invalid_field(
                    "metadata.namespace",
                    format!("is {ns}, but {} objects have no namespace", expected.kind),
                ));
            }
        }
    }
    match expected.name {
        Some(name) => {
            check_string_field(metadata, "name", name).map_err(|e| rename(e, "metadata.name"))?
        }
        None => {
            let named = ["name", "generateName"]
                .iter()
                .any(|f| metadata.get(*f).is_some_and(|v| !is_empty(v)));
            if !named {
                return Err(ApiError::invalid_field(
                    "metadata.name",
                    "is required (or metadata.generateName)",
                ));
            }
        }
    }
    Ok(Value::Object(object))
}

/// [`prepare`] after applying the request's `fieldValidation` ([`super::fields`]) to
/// `body`: what every write that carries an object goes through, REST and gRPC alike.
pub fn prepare_write(body: Value, expected: &Expected<'_>) -> Result<Value, ApiError> {
    let body = super::fields::enforce(body, expected.api_version, expected.kind)?;
    prepare(body, expected)
}

/// The patch of a patch call, checked: a JSON patch is an array of operations, the others an
/// object; an apply patch is the intended object, prepared as [`prepare_write`] prepares a
/// body.
pub fn prepare_patch(
    patch_type: PatchType,
    patch: Value,
    expected: &Expected<'_>,
) -> Result<kube::api::Patch<Value>, ApiError> {
    use kube::api::Patch;
    match patch_type {
        PatchType::Json => {
            if !patch.is_array() {
                return Err(ApiError::invalid_field(
                    "patch",
                    format!(
                        "a JSON patch is an array of operations, not {}",
                        type_name(&patch)
                    ),
                ));
            }
            serde_json::from_value(patch)
                .map(Patch::Json)
                .map_err(|e| ApiError::invalid_field("patch", format!("not a JSON patch: {e}")))
        }
        PatchType::Merge | PatchType::Strategic if !patch.is_object() => {
            Err(ApiError::invalid_field(
                "patch",
                format!("a merge patch is a JSON object, not {}", type_name(&patch)),
            ))
        }
        PatchType::Merge => Ok(Patch::Merge(patch)),
        PatchType::Strategic => Ok(Patch::Strategic(patch)),
        PatchType::Apply => prepare_write(patch, expected).map(Patch::Apply),
    }
}

/// Longest accepted object name (a DNS-1123 subdomain).
pub const MAX_NAME_LEN: usize = 253;

/// Checks a name taken from a URL or request (`field` names it in the error): 1 to 253
/// characters of `a-z`, `0-9`, `-` and `.`, starting and ending with a letter or digit, so
/// that it can only ever address one object.
pub fn check_name(field: &str, name: &str) -> Result<(), ApiError> {
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && edge_ok(name.chars().next())
        && edge_ok(name.chars().last());
    if valid {
        Ok(())
    } else {
        Err(ApiError::invalid_field(
            field,
            format!(
                "{name:?} is not a valid name (lower-case letters, digits, '-' and '.', \
                 starting and ending with a letter or digit, at most {MAX_NAME_LEN} characters)"
            ),
        ))
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// Re-labels an `invalid_field` error of a nested field.
fn rename(err: ApiError, field: &str) -> ApiError {
    let message = err
        .message
        .split_once(": ")
        .map_or(err.message.as_str(), |(_, rest)| rest)
        .to_owned();
    ApiError::invalid_field(field, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Code;
    use serde_json::json;

    const DEPLOY: Expected<'static> = Expected {
        api_version: "apps/v1",
        kind: "Deployment",
        namespace: Some("team-a"),
        name: None,
    };

    #[test]
    fn shape_table() {
        let cases = [
            (json!({"metadata": {"name": "x"}, "spec": {}}), None),
            (
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {}, "type": "Opaque",
                       "data": {}, "stringData": {}, "immutable": true}),
                None,
            ),
            (json!({"binaryData": {}, "status": {}}), None),
            (
                json!({"metadata": {}, "spek": {}}),
                Some("unknown field `spek`"),
            ),
            (json!([1, 2]), Some("not an array")),
            (json!("text"), Some("not a string")),
            (json!(null), Some("not null")),
            (json!({"kind": 5}), Some("invalid type")),
        ];
        for (body, want) in cases {
            let got = check_shape(&body);
            match want {
                None => assert!(got.is_ok(), "{body}: {got:?}"),
                Some(text) => {
                    let err = got.unwrap_err();
                    assert_eq!(err.code, Code::InvalidArgument);
                    assert!(err.message.contains(text), "{body}: {}", err.message);
                }
            }
        }
    }

    #[test]
    fn prepare_fills_and_checks_identity() {
        let ok = prepare(json!({"metadata": {"name": "web"}, "spec": {}}), &DEPLOY).unwrap();
        assert_eq!(ok["apiVersion"], "apps/v1");
        assert_eq!(ok["kind"], "Deployment");
        assert_eq!(ok["metadata"]["namespace"], "team-a");

        let update = Expected {
            name: Some("web"),
            ..DEPLOY
        };
        let filled = prepare(json!({"spec": {}}), &update).unwrap();
        assert_eq!(filled["metadata"]["name"], "web");

        let cluster_scoped = Expected {
            api_version: "policy.karmada.io/v1alpha1",
            kind: "ClusterPropagationPolicy",
            namespace: None,
            name: None,
        };
        let cases: Vec<(Value, &Expected, &str)> = vec![
            (json!({"spec": {}}), &DEPLOY, "metadata.name: is required"),
            (
                json!({"apiVersion": "apps/v2", "metadata": {"name": "a"}}),
                &DEPLOY,
                "apiVersion: is \"apps/v2\"",
            ),
            (
                json!({"kind": "Service", "metadata": {"name": "a"}}),
                &DEPLOY,
                "kind: is \"Service\"",
            ),
            (
                json!({"metadata": {"name": "a", "namespace": "other"}}),
                &DEPLOY,
                "metadata.namespace: is \"other\", expected \"team-a\"",
            ),
            (
                json!({"metadata": {"name": "other"}}),
                &update,
                "metadata.name: is \"other\", expected \"web\"",
            ),
            (
                json!({"metadata": []}),
                &DEPLOY,
                "metadata: must be an object",
            ),
            (
                json!({"metadata": {"name": "p", "namespace": "x"}}),
                &cluster_scoped,
                "have no namespace",
            ),
        ];
        for (body, expected, want) in cases {
            let err = prepare(body.clone(), expected).unwrap_err();
            assert_eq!(err.code, Code::InvalidArgument, "{body}");
            assert!(err.message.contains(want), "{body}: {}", err.message);
        }
        let generated = prepare(json!({"metadata": {"generateName": "web-"}}), &DEPLOY).unwrap();
        assert_eq!(generated["metadata"]["namespace"], "team-a");
        let policy = prepare(json!({"metadata": {"name": "p"}}), &cluster_scoped).unwrap();
        assert!(policy["metadata"].get("namespace").is_none());
    }

    #[test]
    fn name_table() {
        let long = "a".repeat(MAX_NAME_LEN + 1);
        for (name, ok) in [
            ("web", true),
            ("web-1.example", true),
            ("0abc", true),
            ("", false),
            ("Web", false),
            ("-web", false),
            ("web-", false),
            ("..", false),
            ("a/b", false),
            ("web:pause", false),
            (long.as_str(), false),
        ] {
            let got = check_name("name", name);
            assert_eq!(got.is_ok(), ok, "{name:?}");
            if let Err(err) = got {
                assert!(err.message.starts_with("name: "), "{}", err.message);
            }
        }
    }

    #[test]
    fn policy_text_is_parsed_as_yaml_or_json() {
        let yaml = "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: p\nspec:\n  resourceSelectors:\n  - apiVersion: apps/v1\n    kind: Deployment\n";
        let parsed = expand_policy_text(json!({"data": yaml})).unwrap();
        assert_eq!(parsed["metadata"]["name"], "p");
        assert_eq!(parsed["spec"]["resourceSelectors"][0]["kind"], "Deployment");

        let text = r#"{"metadata": {"name": "q"}, "spec": {}}"#;
        let parsed = expand_policy_text(json!({"data": text})).unwrap();
        assert_eq!(parsed["metadata"]["name"], "q");

        let plain = json!({"metadata": {"name": "r"}, "spec": {}});
        assert_eq!(expand_policy_text(plain.clone()).unwrap(), plain);
        // A ConfigMap-like body with a data map is not policy text.
        let map = json!({"data": {"k": "v"}});
        assert_eq!(expand_policy_text(map.clone()).unwrap(), map);

        for (bad, want) in [
            (json!({"data": "- a\n- b\n"}), "must be an object"),
            (
                json!({"data": "key: [unclosed"}),
                "not a YAML or JSON policy",
            ),
        ] {
            let err = expand_policy_text(bad).unwrap_err();
            assert_eq!(err.code, Code::InvalidArgument);
            assert!(err.message.starts_with("data: "), "{}", err.message);
            assert!(err.message.contains(want), "{}", err.message);
        }
    }
}
