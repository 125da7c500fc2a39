use super::*;
use crate::apiserver::resources::{builtin_types, type_from_crd};

fn crd_types() -> Vec<ResourceType> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/crds/kubeocean/cloud.tencent.com_clusterbindings.yaml"
    );
    let yaml = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let crd: Value = serde_saphyr::from_str(&yaml).unwrap();
    let mut types = builtin_types();
    types.push(type_from_crd(&crd).unwrap());
    types
}

/// Every `$ref` of a document names a definition it has.
fn assert_references_resolve(doc: &Value, pointer: &str, what: &str) {
    let defs = doc.pointer(pointer).and_then(Value::as_object).unwrap();
    let mut refs = Vec::new();
    crd::references(doc, &mut refs);
    for name in refs {
        // v2 parameters live in `#/parameters/`.
        if doc
            .pointer("/parameters")
            .and_then(|p| p.get(&name))
            .is_some()
        {
            continue;
        }
        assert!(
            defs.contains_key(&name),
            "{what}: dangling reference {name}"
        );
    }
}

fn patch_has_field_validation(item: &Value) -> bool {
    item["patch"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
}

#[test]
fn built_in_documents_keep_served_paths_only() {
    let docs = v3_documents(&builtin_types());
    let keys: Vec<&str> = docs.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        vec![
            "api/v1",
            "apis/apiextensions.k8s.io/v1",
            "apis/apps/v1",
            "apis/authentication.k8s.io/v1",
            "apis/authorization.k8s.io/v1",
            "apis/autoscaling/v2",
            "apis/batch/v1",
            "apis/coordination.k8s.io/v1",
            "apis/discovery.k8s.io/v1",
            "apis/events.k8s.io/v1",
            "apis/networking.k8s.io/v1",
            "apis/policy/v1",
            "apis/rbac.authorization.k8s.io/v1",
            "apis/scheduling.k8s.io/v1",
            "apis/storage.k8s.io/v1",
        ]
    );
    let apps = &docs["apis/apps/v1"];
    let deployment = &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
    assert!(patch_has_field_validation(deployment));
    assert!(
        apps["paths"]
            .get("/apis/apps/v1/controllerrevisions")
            .is_some()
    );
    let core = &docs["api/v1"];
    assert!(
        core["paths"]
            .get("/api/v1/namespaces/{namespace}/pods/{name}/status")
            .is_some()
    );
    assert!(
        core["paths"]
            .get("/api/v1/namespaces/{namespace}/podtemplates")
            .is_some()
    );
    for (key, doc) in &docs {
        assert_references_resolve(doc, "/components/schemas", key);
    }
    let strategy = &apps["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentStrategy"];
    assert!(strategy["properties"]["rollingUpdate"].is_object());
}

#[test]
fn crd_versions_get_definitions_and_paths() {
    let types = crd_types();
    let docs = v3_documents(&types);
    let doc = &docs["apis/cloud.tencent.com/v1beta1"];
    let schema = &doc["components"]["schemas"]["com.tencent.cloud.v1beta1.ClusterBinding"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"],
        json!([{"group": "cloud.tencent.com", "kind": "ClusterBinding", "version": "v1beta1"}])
    );
    assert!(schema["properties"]["spec"]["properties"]["clusterID"].is_object());
    assert_eq!(
        schema["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let list = &doc["components"]["schemas"]["com.tencent.cloud.v1beta1.ClusterBindingList"];
    assert_eq!(
        list["x-kubernetes-group-version-kind"][0]["kind"],
        "ClusterBindingList"
    );
    let paths = doc["paths"].as_object().unwrap();
    let mut names: Vec<&str> = paths.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        vec![
            "/apis/cloud.tencent.com/v1beta1/clusterbindings",
            "/apis/cloud.tencent.com/v1beta1/clusterbindings/{name}",
            "/apis/cloud.tencent.com/v1beta1/clusterbindings/{name}/status",
        ]
    );
    let item = &paths["/apis/cloud.tencent.com/v1beta1/clusterbindings/{name}"];
    assert!(patch_has_field_validation(item));
    assert_eq!(
        item["patch"]["operationId"],
        "patchCloudTencentComV1beta1ClusterBinding"
    );
    assert_eq!(item["patch"]["tags"], json!(["cloudTencentCom_v1beta1"]));
    assert_eq!(
        item["patch"]["x-kubernetes-group-version-kind"],
        json!({"group": "cloud.tencent.com", "version": "v1beta1", "kind": "ClusterBinding"})
    );
    let text = doc.to_string();
    assert!(
        !text.contains("protobuf"),
        "custom resources have no protobuf"
    );
    assert!(!text.contains("strategic-merge-patch"));
    assert!(
        !text.contains("Deployment"),
        "the template kind is fully replaced"
    );
    assert!(
        !item.to_string().contains("{namespace}"),
        "a cluster-scoped kind has no namespace parameter"
    );
    assert_references_resolve(doc, "/components/schemas", "crd v3");

    let v2 = v2_document(&types);
    let schema = &v2["definitions"]["com.tencent.cloud.v1beta1.ClusterBinding"];
    assert_eq!(
        schema["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let item = &v2["paths"]["/apis/cloud.tencent.com/v1beta1/clusterbindings/{name}"];
    assert!(
        item["patch"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| {
                p["name"] == "fieldValidation"
                    || p["$ref"]
                        .as_str()
                        .is_some_and(|r| r.starts_with("#/parameters/fieldValidation"))
            })
    );
    // The recording run's own CRDs are not the sandbox's.
    assert!(
        v2["paths"]
            .get("/apis/kairship.io/v1alpha1/instances")
            .is_none()
    );
    assert!(
        v2["paths"]
            .get("/apis/apps/v1/namespaces/{namespace}/deployments")
            .is_some()
    );
    assert_references_resolve(&v2, "/definitions", "v2");
}

#[test]
fn the_index_hash_follows_the_crds() {
    let plain = documents(builtin_types());
    let with_crd = documents(crd_types());
    let index: Value = serde_json::from_slice(&with_crd.index().body).unwrap();
    let url = index["paths"]["apis/cloud.tencent.com/v1beta1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    let hash = &with_crd.v3("apis/cloud.tencent.com/v1beta1").unwrap().etag;
    assert_eq!(
        url,
        format!("/openapi/v3/apis/cloud.tencent.com/v1beta1?hash={hash}")
    );
    assert_eq!(hash.len(), 128);
    assert_ne!(plain.index().etag, with_crd.index().etag);
    assert!(plain.v3("apis/cloud.tencent.com/v1beta1").is_none());
    // The built-in documents do not change with a CRD of another group.
    assert_eq!(
        plain.v3("apis/apps/v1").unwrap().etag,
        with_crd.v3("apis/apps/v1").unwrap().etag
    );
}

#[test]
fn requests_are_answered_as_kube_openapi_does() {
    let types = builtin_types;
    let get = |path: &str, hash: Option<&str>, accept: Option<&str>, inm: Option<&str>| {
        serve(
            types(),
            &OpenApiRequest {
                path,
                hash,
                accept,
                if_none_match: inm,
            },
        )
    };
    let etag = documents(types()).v3("apis/apps/v1").unwrap().etag.clone();
    let plain = get("v3/apis/apps/v1", None, Some("application/json"), None);
    assert_eq!(plain.status(), StatusCode::OK);
    assert_eq!(
        plain.headers()[header::ETAG],
        format!("\"{etag}\"").as_str()
    );
    assert!(plain.headers().get(header::CACHE_CONTROL).is_none());

    let cached = get("v3/apis/apps/v1", Some(&etag), None, None);
    assert_eq!(cached.status(), StatusCode::OK);
    assert_eq!(cached.headers()[header::CACHE_CONTROL], "public, immutable");
    assert!(cached.headers().get(header::EXPIRES).is_some());

    let stale = get("v3/apis/apps/v1", Some("0123"), None, None);
    assert_eq!(stale.status(), StatusCode::MOVED_PERMANENTLY);
    assert_eq!(
        stale.headers()[header::LOCATION],
        format!("/openapi/v3/apis/apps/v1?hash={etag}").as_str()
    );

    let unchanged = get("v3/apis/apps/v1", None, None, Some(&format!("\"{etag}\"")));
    assert_eq!(unchanged.status(), StatusCode::NOT_MODIFIED);

    let protobuf_only = Some("application/com.github.proto-openapi.spec.v3@v1.0+protobuf");
    assert_eq!(
        get("v3/apis/apps/v1", None, protobuf_only, None).status(),
        StatusCode::NOT_ACCEPTABLE
    );
    let v2_protobuf = Some("application/com.github.proto-openapi.spec.v2@v1.0+protobuf");
    assert_eq!(
        get("v2", None, v2_protobuf, None).status(),
        StatusCode::NOT_ACCEPTABLE
    );
    let v2 = get(
        "v2",
        None,
        Some("application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json"),
        None,
    );
    assert_eq!(v2.status(), StatusCode::OK);
    assert_eq!(
        get("v3/apis/nope/v1", None, None, None).status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(get("v4", None, None, None).status(), StatusCode::NOT_FOUND);
}
