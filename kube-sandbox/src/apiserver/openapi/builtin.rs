//! The built-in kinds' OpenAPI documents, as a real kube-apiserver v1.36 serves them (gzipped
//! in `kube-sandbox/openapi/`), cut down to the paths the sandbox serves.

use crate::apiserver::resources::ResourceType;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::OnceLock;

/// `/openapi/v3/<key>` documents of the group versions the sandbox serves.
const V3: &[(&str, &[u8])] = &[
    (
        "api/v1",
        include_bytes!("../../../openapi/v3/api_v1.json.gz"),
    ),
    (
        "apis/apps/v1",
        include_bytes!("../../../openapi/v3/apis_apps_v1.json.gz"),
    ),
    (
        "apis/batch/v1",
        include_bytes!("../../../openapi/v3/apis_batch_v1.json.gz"),
    ),
    (
        "apis/coordination.k8s.io/v1",
        include_bytes!("../../../openapi/v3/apis_coordination.k8s.io_v1.json.gz"),
    ),
    (
        "apis/events.k8s.io/v1",
        include_bytes!("../../../openapi/v3/apis_events.k8s.io_v1.json.gz"),
    ),
    (
        "apis/rbac.authorization.k8s.io/v1",
        include_bytes!("../../../openapi/v3/apis_rbac.authorization.k8s.io_v1.json.gz"),
    ),
    (
        "apis/apiextensions.k8s.io/v1",
        include_bytes!("../../../openapi/v3/apis_apiextensions.k8s.io_v1.json.gz"),
    ),
    (
        "apis/storage.k8s.io/v1",
        include_bytes!("../../../openapi/v3/apis_storage.k8s.io_v1.json.gz"),
    ),
    (
        "apis/scheduling.k8s.io/v1",
        include_bytes!("../../../openapi/v3/apis_scheduling.k8s.io_v1.json.gz"),
    ),
    (
        "apis/authentication.k8s.io/v1",
        include_bytes!("../../../openapi/v3/apis_authentication.k8s.io_v1.json.gz"),
    ),
    (
        "apis/authorization.k8s.io/v1",
        include_bytes!("../../../openapi/v3/apis_authorization.k8s.io_v1.json.gz"),
    ),
    (
        "apis/autoscaling/v2",
        include_bytes!("../../../openapi/v3/apis_autoscaling_v2.json.gz"),
    ),
    (
        "apis/discovery.k8s.io/v1",
        include_bytes!("../../../openapi/v3/apis_discovery.k8s.io_v1.json.gz"),
    ),
    (
        "apis/networking.k8s.io/v1",
        include_bytes!("../../../openapi/v3/apis_networking.k8s.io_v1.json.gz"),
    ),
    (
        "apis/policy/v1",
        include_bytes!("../../../openapi/v3/apis_policy_v1.json.gz"),
    ),
];

/// `/openapi/v2`.
const V2: &[u8] = include_bytes!("../../../openapi/v2.json.gz");

fn gunzip(bytes: &[u8]) -> Value {
    let mut text = Vec::new();
    let decoded = flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut text)
        .ok()
        .and_then(|_| serde_json::from_slice(&text).ok());
    // The documents are part of the crate and checked by its tests.
    decoded.unwrap_or_default()
}

/// The recorded v3 documents by index key (`api/v1`, `apis/apps/v1`, ...).
pub fn v3_documents() -> &'static BTreeMap<String, Value> {
    static DOCS: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    DOCS.get_or_init(|| {
        V3.iter()
            .map(|(key, bytes)| (key.to_string(), gunzip(bytes)))
            .collect()
    })
}

/// The recorded v2 document.
pub fn v2_document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| gunzip(V2))
}

/// The index key of a group version: `api/v1` or `apis/<group>/<version>`.
pub fn gv_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// Whether the sandbox serves what an OpenAPI path addresses: the group version, the
/// resource and the subresource (`/api/v1/namespaces/{namespace}/pods/{name}/status`), or a
/// discovery path of a served group (`/api/`, `/apis/apps/`).
pub fn path_served(path: &str, types: &[ResourceType]) -> bool {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest): (&str, &str, &[&str]) = match segs.as_slice() {
        ["api"] | ["apis"] => return true,
        ["apis", g] => return types.iter().any(|t| t.group == *g),
        ["api", v, rest @ ..] => ("", v, rest),
        ["apis", g, v, rest @ ..] => (g, v, rest),
        _ => return false,
    };
    let in_gv = |t: &&ResourceType| t.group == group && t.versions.iter().any(|x| x == version);
    if rest.is_empty() {
        return types.iter().any(|t| in_gv(&t));
    }
    let rest = match rest {
        ["watch", tail @ ..] => tail,
        other => other,
    };
    let rest = match rest {
        ["namespaces", "{namespace}", tail @ ..] if !tail.is_empty() => tail,
        other => other,
    };
    let Some(resource) = rest.first() else {
        return false;
    };
    let Some(rt) = types.iter().filter(in_gv).find(|t| t.plural == *resource) else {
        return false;
    };
    match rest.get(2) {
        None => true,
        Some(sub) => rt.subresources.contains(sub),
    }
}

/// A copy of a document with only the served paths.
pub fn filtered(doc: &Value, types: &[ResourceType]) -> Value {
    let mut out = doc.clone();
    if let Some(paths) = out.get_mut("paths").and_then(Value::as_object_mut) {
        paths.retain(|path, _| path_served(path, types));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::resources::builtin_types;

    #[test]
    fn recorded_documents_decode() {
        let docs = v3_documents();
        assert_eq!(docs.len(), V3.len());
        for (key, doc) in docs {
            assert_eq!(doc["openapi"], "3.0.0", "{key}");
            assert!(
                doc["paths"].as_object().is_some_and(|p| !p.is_empty()),
                "{key}"
            );
        }
        assert_eq!(v2_document()["swagger"], "2.0");
    }

    #[test]
    fn only_served_paths_remain() {
        let types = builtin_types();
        let cases = [
            ("/api/v1/namespaces/{namespace}/pods", true),
            ("/api/v1/namespaces/{namespace}/pods/{name}/status", true),
            (
                "/api/v1/namespaces/{namespace}/pods/{name}/ephemeralcontainers",
                true,
            ),
            ("/api/v1/namespaces/{namespace}/pods/{name}/resize", true),
            (
                "/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}",
                true,
            ),
            ("/api/v1/watch/namespaces/{namespace}/pods/{name}", true),
            ("/api/v1/namespaces/{name}", true),
            ("/api/v1/namespaces/{name}/finalize", true),
            ("/api/v1/pods", true),
            ("/api/v1/podtemplates", true),
            ("/api/v1/", true),
            (
                "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale",
                true,
            ),
            ("/apis/apps/v1/controllerrevisions", true),
            ("/apis/networking.k8s.io/v1/ingresses", true),
            ("/apis/apps/", true),
            ("/apis/policy/", true),
            ("/apis/kairship.io/v1alpha1/instances", false),
            ("/apis/resource.k8s.io/v1beta2/deviceclasses", false),
            ("/version/", false),
        ];
        for (path, want) in cases {
            assert_eq!(path_served(path, &types), want, "{path}");
        }
    }
}
