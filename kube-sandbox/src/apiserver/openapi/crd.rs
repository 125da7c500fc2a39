//! A CRD version's OpenAPI definitions and paths, built as kube-apiserver's CRD OpenAPI
//! builder does: the schema named `<reversed group>.<version>.<Kind>` with
//! `x-kubernetes-group-version-kind`, standard `apiVersion`/`kind`/`metadata`, a `<Kind>List`,
//! and the operations of a built-in kind retargeted (no protobuf, no strategic merge patch).
//! The v2 form drops what Swagger 2.0 cannot say (`nullable`, `oneOf`, `anyOf`, `not`).

use crate::apiserver::resources::ResourceType;
use serde_json::{Map, Value, json};

const API_VERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DESCRIPTION: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_METADATA_DESCRIPTION: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// Which document form a definition or path is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// OpenAPI 3.0 (`#/components/schemas/`).
    V3,
    /// Swagger 2.0 (`#/definitions/`).
    V2,
}

impl Form {
    fn reference(self, name: &str) -> String {
        match self {
            Form::V3 => format!("#/components/schemas/{name}"),
            Form::V2 => format!("#/definitions/{name}"),
        }
    }

    /// A property that refers to a definition, with a description.
    fn ref_property(self, name: &str, description: &str) -> Value {
        match self {
            Form::V3 => {
                json!({"description": description, "allOf": [{"$ref": self.reference(name)}]})
            }
            Form::V2 => json!({"description": description, "$ref": self.reference(name)}),
        }
    }
}

/// `cloud.tencent.com` -> `com.tencent.cloud`.
fn reversed_group(group: &str) -> String {
    group.split('.').rev().collect::<Vec<_>>().join(".")
}

/// The definition name of a CRD's kind in a version.
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    format!("{}.{version}.{kind}", reversed_group(group))
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "kind": kind, "version": version}])
}

/// Drops what Swagger 2.0 cannot express, everywhere in a CRD schema.
fn to_v2(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.remove("nullable") == Some(Value::Bool(true)) {
                map.remove("type");
            }
            for key in ["oneOf", "anyOf", "not"] {
                map.remove(key);
            }
            for value in map.values_mut() {
                to_v2(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(to_v2),
        _ => {}
    }
}

/// The kind's and the list's definitions for one served version, if it has a schema.
pub fn definitions(rt: &ResourceType, version: &str, form: Form) -> Vec<(String, Value)> {
    let Some(schema) = rt.schema(version) else {
        return Vec::new();
    };
    let name = definition_name(&rt.group, version, &rt.kind);
    let mut kind_schema = schema.clone();
    if form == Form::V2 {
        to_v2(&mut kind_schema);
    }
    if let Some(map) = kind_schema.as_object_mut() {
        map.entry("type").or_insert(json!("object"));
        let properties = map
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(props) = properties.as_object_mut() {
            props.insert(
                "apiVersion".into(),
                json!({"description": API_VERSION_DESCRIPTION, "type": "string"}),
            );
            props.insert(
                "kind".into(),
                json!({"description": KIND_DESCRIPTION, "type": "string"}),
            );
            props.insert(
                "metadata".into(),
                form.ref_property(
                    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                    METADATA_DESCRIPTION,
                ),
            );
        }
        map.insert(
            "x-kubernetes-group-version-kind".into(),
            gvk(&rt.group, version, &rt.kind),
        );
    }
    let list_kind = &rt.list_kind;
    let list = json!({
        "description": format!("{list_kind} is a list of {}", rt.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": API_VERSION_DESCRIPTION, "type": "string"},
            "items": {
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", rt.plural),
                "type": "array",
                "items": {"$ref": form.reference(&name)},
            },
            "kind": {"description": KIND_DESCRIPTION, "type": "string"},
            "metadata": form.ref_property("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta", LIST_METADATA_DESCRIPTION),
        },
        "x-kubernetes-group-version-kind": gvk(&rt.group, version, list_kind),
    });
    vec![
        (name, kind_schema),
        (definition_name(&rt.group, version, list_kind), list),
    ]
}

/// `cloud.tencent.com` + `v1beta1` -> `CloudTencentComV1beta1` (operation ids).
fn camel_group_version(group: &str, version: &str) -> String {
    let mut out = String::new();
    for part in group.split(['.', '-']).chain(std::iter::once(version)) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    out
}

/// `cloud.tencent.com` + `v1beta1` -> `cloudTencentCom_v1beta1` (tags).
fn tag(group: &str, version: &str) -> String {
    let camel = camel_group_version(group, "");
    let mut chars = camel.chars();
    let lower: String = match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    };
    format!("{lower}_{version}")
}

/// The built-in paths whose operations CRD paths are made from (Deployment's: a namespaced
/// kind with status and scale).
const TEMPLATE_PREFIX: &str = "/apis/apps/v1";

/// Removes protobuf and strategic merge patch media types, which custom resources lack.
fn drop_unsupported_media_types(value: &mut Value) {
    let unsupported = |s: &str| {
        s.starts_with("application/vnd.kubernetes.protobuf")
            || s == "application/strategic-merge-patch+json"
    };
    match value {
        Value::Object(map) => {
            map.retain(|k, _| !unsupported(k));
            for v in map.values_mut() {
                drop_unsupported_media_types(v);
            }
        }
        Value::Array(items) => {
            items.retain(|v| !v.as_str().is_some_and(unsupported));
            items.iter_mut().for_each(drop_unsupported_media_types);
        }
        _ => {}
    }
}

/// Sets the group, version and kind of operations on the template kind.
fn retarget_gvk(value: &mut Value, group: &str, version: &str, kind: &str) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(gvk)) = map.get_mut("x-kubernetes-group-version-kind")
                && gvk.get("group").and_then(Value::as_str) == Some("apps")
            {
                gvk.insert("group".into(), json!(group));
                gvk.insert("version".into(), json!(version));
                gvk.insert("kind".into(), json!(kind));
            }
            for v in map.values_mut() {
                retarget_gvk(v, group, version, kind);
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| retarget_gvk(v, group, version, kind)),
        _ => {}
    }
}

/// A template path item retargeted to the CRD's kind in `version`.
fn retarget(item: &Value, rt: &ResourceType, version: &str) -> Option<Value> {
    let kind_name = definition_name(&rt.group, version, &rt.kind);
    let list_name = definition_name(&rt.group, version, &rt.list_kind);
    let mut text = serde_json::to_string(item).ok()?;
    text = text
        .replace(
            "io.k8s.api.apps.v1.DeploymentList\"",
            &format!("{list_name}\""),
        )
        .replace("io.k8s.api.apps.v1.Deployment\"", &format!("{kind_name}\""))
        .replace("AppsV1", &camel_group_version(&rt.group, version))
        .replace("\"apps_v1\"", &format!("\"{}\"", tag(&rt.group, version)))
        .replace("Deployment", &rt.kind);
    if !rt.namespaced {
        text = text.replace("Namespaced", "");
    }
    let mut item: Value = serde_json::from_str(&text).ok()?;
    retarget_gvk(&mut item, &rt.group, version, &rt.kind);
    drop_unsupported_media_types(&mut item);
    if !rt.namespaced {
        remove_namespace_parameter(&mut item);
    }
    Some(item)
}

fn remove_namespace_parameter(item: &mut Value) {
    if let Some(params) = item.get_mut("parameters").and_then(Value::as_array_mut) {
        params.retain(|p| {
            !(p.get("name").and_then(Value::as_str) == Some("namespace")
                || p.get("$ref")
                    .and_then(Value::as_str)
                    .is_some_and(|r| r.contains("/namespace-")))
        });
    }
}

/// The CRD's paths in one served version, made from the template document's
/// (`apis/apps/v1` for v3, the whole v2 document for v2; the references they contain are
/// rewritten by the name, so both forms work).
pub fn paths(rt: &ResourceType, version: &str, template: &Value) -> Vec<(String, Value)> {
    let Some(template_paths) = template.get("paths").and_then(Value::as_object) else {
        return Vec::new();
    };
    let base = format!("/apis/{}/{version}", rt.group);
    let scoped = if rt.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", rt.plural)
    } else {
        format!("{base}/{}", rt.plural)
    };
    let from = |suffix: &str| {
        template_paths.get(&format!(
            "{TEMPLATE_PREFIX}/namespaces/{{namespace}}/deployments{suffix}"
        ))
    };
    let mut out = Vec::new();
    let mut push = |path: String, item: Option<&Value>| {
        if let Some(item) = item.and_then(|i| retarget(i, rt, version)) {
            out.push((path, item));
        }
    };
    push(scoped.clone(), from(""));
    push(format!("{scoped}/{{name}}"), from("/{name}"));
    if rt.has_status() {
        push(format!("{scoped}/{{name}}/status"), from("/{name}/status"));
    }
    if rt.subresources.contains(&"scale") {
        push(format!("{scoped}/{{name}}/scale"), from("/{name}/scale"));
    }
    if rt.namespaced {
        push(
            format!("{base}/{}", rt.plural),
            template_paths.get(&format!("{TEMPLATE_PREFIX}/deployments")),
        );
    }
    out
}

/// Names of the definitions a value refers to (`$ref`), without the prefix.
pub fn references(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(r) = map.get("$ref").and_then(Value::as_str)
                && let Some(name) = r.rsplit('/').next()
            {
                out.push(name.to_string());
            }
            map.values().for_each(|v| references(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_kube_apiserver() {
        assert_eq!(
            definition_name("cloud.tencent.com", "v1beta1", "ClusterBinding"),
            "com.tencent.cloud.v1beta1.ClusterBinding"
        );
        assert_eq!(
            camel_group_version("cloud.tencent.com", "v1beta1"),
            "CloudTencentComV1beta1"
        );
        assert_eq!(
            tag("cloud.tencent.com", "v1beta1"),
            "cloudTencentCom_v1beta1"
        );
        assert_eq!(tag("kairship.io", "v1alpha1"), "kairshipIo_v1alpha1");
    }

    #[test]
    fn v2_schemas_lose_what_swagger_cannot_say() {
        let mut schema = json!({"type": "object", "properties": {
            "a": {"type": "string", "nullable": true},
            "b": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true},
            "c": {"type": "array", "items": {"type": "string", "nullable": false}}}});
        to_v2(&mut schema);
        assert_eq!(
            schema,
            json!({"type": "object", "properties": {
                "a": {},
                "b": {"x-kubernetes-int-or-string": true},
                "c": {"type": "array", "items": {"type": "string"}}}})
        );
    }
}
