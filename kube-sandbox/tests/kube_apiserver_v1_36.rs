//! The sandbox answers as a real kube-apiserver v1.36 does, checked against what one answered
//! (`testdata/kube-apiserver-v1.36/`) or, where the recording has no answer, against what the
//! kubernetes source writes (cited at each case).

#![allow(clippy::unwrap_used)]

mod common;

use common::{eventually, raw, targets};
use kube_sandbox::{Cluster, ClusterOptions, UserInfo};
use serde_json::{Value, json};
use std::collections::BTreeSet;

const RECORDED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/kube-apiserver-v1.36");

fn recorded(path: &str) -> Value {
    let text = std::fs::read_to_string(format!("{RECORDED}/{path}")).unwrap();
    serde_json::from_str(&text).unwrap()
}

async fn get(client: &kube::Client, path: &str) -> (u16, Value) {
    raw(client, "GET", path, "application/json", Vec::new()).await
}

async fn send(client: &kube::Client, method: &str, path: &str, body: Value) -> (u16, Value) {
    raw(
        client,
        method,
        path,
        "application/json",
        body.to_string().into_bytes(),
    )
    .await
}

#[tokio::test]
async fn version_reports_v1_36_with_the_emulation_and_compatibility_versions() {
    for t in targets().await {
        let (code, version) = get(&t.client, "/version").await;
        assert_eq!(code, 200);
        // staging/src/k8s.io/component-base/compatibility/version.go, effectiveVersion.Info.
        for (key, want) in [
            ("major", "1"),
            ("minor", "36"),
            ("emulationMajor", "1"),
            ("emulationMinor", "36"),
            ("minCompatibilityMajor", "1"),
            ("minCompatibilityMinor", "35"),
            ("gitVersion", "v1.36.2"),
        ] {
            assert_eq!(version[key], want, "{}: {key} in {version}", t.how);
        }
    }
}

/// The group versions of the recorded `GET /apis` (without the recording run's CRDs) and core.
fn recorded_group_versions() -> BTreeSet<String> {
    let apis = recorded("discovery/apis.json");
    let crd_groups = ["kairship.io", "cloud.tencent.com"];
    let mut out: BTreeSet<String> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| !crd_groups.contains(&g["name"].as_str().unwrap()))
        .flat_map(|g| g["versions"].as_array().unwrap().clone())
        .map(|v| v["groupVersion"].as_str().unwrap().to_owned())
        .collect();
    out.insert("v1".to_owned());
    out
}

/// `group/version resource` -> (kind, scope, verbs, short names, categories, subresources with
/// their verbs) of an aggregated discovery document.
fn resources_of(doc: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for group in doc["items"].as_array().unwrap() {
        let name = group["metadata"]["name"].as_str().unwrap_or("");
        for version in group["versions"].as_array().unwrap() {
            let gv = match name {
                "" => version["version"].as_str().unwrap().to_owned(),
                g => format!("{g}/{}", version["version"].as_str().unwrap()),
            };
            for r in version["resources"].as_array().unwrap() {
                let sorted = |v: &Value| {
                    let mut list: Vec<Value> = v.as_array().cloned().unwrap_or_default();
                    list.sort_by_key(Value::to_string);
                    Value::Array(list)
                };
                let subresources: Vec<Value> = r["subresources"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .map(|s| json!([s["subresource"], sorted(&s["verbs"])]))
                    .collect();
                out.push((
                    format!("{gv} {}", r["resource"].as_str().unwrap()),
                    json!({
                        "kind": r["responseKind"]["kind"],
                        "scope": r["scope"],
                        "verbs": sorted(&r["verbs"]),
                        "shortNames": sorted(&r["shortNames"]),
                        "categories": sorted(&r["categories"]),
                        "subresources": sorted(&Value::Array(subresources)),
                    }),
                ));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[tokio::test]
async fn discovery_serves_the_group_versions_and_resources_of_kube_apiserver_v1_36() {
    let cluster = Cluster::new("discovery");
    let client = cluster.client();
    let (code, apis) = get(&client, "/apis").await;
    assert_eq!(code, 200);
    let mut served: BTreeSet<String> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["versions"].as_array().unwrap().clone())
        .map(|v| v["groupVersion"].as_str().unwrap().to_owned())
        .collect();
    served.insert("v1".to_owned());
    let want = recorded_group_versions();
    assert_eq!(want.len(), 22);
    assert_eq!(served, want);
    // In kube-apiserver's priority order, preferred version first.
    let names = |list: &Value| -> Vec<(String, String)> {
        list["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["name"].as_str().unwrap().to_owned(),
                    g["preferredVersion"]["version"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                )
            })
            .filter(|(g, _)| g != "kairship.io" && g != "cloud.tencent.com")
            .collect()
    };
    assert_eq!(names(&apis), names(&recorded("discovery/apis.json")));

    // Every resource with its kind, scope, verbs, names and subresources, as recorded.
    let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let mut mine = Vec::new();
    for path in ["/api", "/apis"] {
        let req = http::Request::builder()
            .uri(path)
            .header("accept", accept)
            .body(Vec::new())
            .unwrap();
        let body = client.request_text(req).await.unwrap();
        mine.extend(resources_of(&serde_json::from_str(&body).unwrap()));
    }
    let mut real = resources_of(&recorded("discovery/api_aggregated_v2.json"));
    real.extend(
        resources_of(&recorded("discovery/apis_aggregated_v2.json"))
            .into_iter()
            .filter(|(key, _)| {
                !key.starts_with("kairship.io/") && !key.starts_with("cloud.tencent.com/")
            }),
    );
    real.sort_by(|a, b| a.0.cmp(&b.0));
    mine.sort_by(|a, b| a.0.cmp(&b.0));
    let real_keys: Vec<&String> = real.iter().map(|(k, _)| k).collect();
    let mine_keys: Vec<&String> = mine.iter().map(|(k, _)| k).collect();
    assert_eq!(mine_keys, real_keys);
    for ((key, mine), (_, real)) in mine.iter().zip(&real) {
        assert_eq!(mine, real, "{key}");
    }
}

/// `GET path` with the aggregated discovery `Accept` kubectl sends first.
async fn aggregated(client: &kube::Client, path: &str) -> Value {
    let req = http::Request::builder()
        .uri(path)
        .header(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        )
        .body(Vec::new())
        .unwrap();
    serde_json::from_str(&client.request_text(req).await.unwrap()).unwrap()
}

/// The aggregated documents are the recorded ones as a whole and in their order (groups and
/// versions by priority, resources by name, every field), the recording's CRD group
/// `cloud.tencent.com` included once its CRDs are created (from this repository's copies of
/// them); only the recording's other CRD group, `kairship.io`, is left out.
#[tokio::test]
async fn aggregated_discovery_is_the_recorded_document_in_its_order() {
    let cluster = Cluster::new("aggregated-order");
    let client = cluster.client();
    for file in [
        "cloud.tencent.com_clusterbindings.yaml",
        "cloud.tencent.com_resourceleasingpolicies.yaml",
    ] {
        let path = format!(
            "{}/../deploy/crds/kubeocean/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let crd: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let (code, body) = send(
            &client,
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            crd,
        )
        .await;
        assert_eq!(code, 201, "{file}: {body}");
    }
    eventually("the CRDs' group is served", || async {
        aggregated(&client, "/apis").await["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["metadata"]["name"] == "cloud.tencent.com")
    })
    .await;
    let outline = |doc: &Value| -> Vec<String> {
        let mut out = Vec::new();
        for g in doc["items"].as_array().unwrap() {
            for v in g["versions"].as_array().unwrap() {
                let resources: Vec<&str> = v["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["resource"].as_str().unwrap())
                    .collect();
                out.push(format!(
                    "{}/{}: {}",
                    g["metadata"]["name"].as_str().unwrap_or(""),
                    v["version"].as_str().unwrap(),
                    resources.join(" ")
                ));
            }
        }
        out
    };
    for (path, file) in [
        ("/api", "discovery/api_aggregated_v2.json"),
        ("/apis", "discovery/apis_aggregated_v2.json"),
    ] {
        let mut want = recorded(file);
        want["items"]
            .as_array_mut()
            .unwrap()
            .retain(|g| g["metadata"]["name"] != "kairship.io");
        let ours = aggregated(&client, path).await;
        // The order first, readably; then every field.
        assert_eq!(outline(&ours), outline(&want), "{path}");
        for (mine, theirs) in ours["items"]
            .as_array()
            .unwrap()
            .iter()
            .zip(want["items"].as_array().unwrap())
        {
            assert_eq!(mine, theirs, "{path}: {}", theirs["metadata"]);
        }
        assert_eq!(ours, want, "{path}");
    }
}

#[tokio::test]
async fn paths_under_no_served_group_version_are_a_plain_page_not_found() {
    for t in targets().await {
        // staging/src/k8s.io/apiserver/pkg/server/handler.go: the director hands paths no
        // group version serves to the NotFoundHandler (Go's http.NotFound).
        for path in [
            "/apis/nope.io/v1/foos",
            "/apis/nope.io",
            "/apis/apps/v9",
            "/apis/apps/v9/deployments",
            "/nothing/here",
        ] {
            let (code, body) = get(&t.client, path).await;
            assert_eq!(code, 404, "{}: {path}", t.how);
            assert_eq!(
                body,
                Value::String("404 page not found\n".into()),
                "{}: {path}",
                t.how
            );
        }
        // Under a served group version, go-restful's service error is a NotFound Status
        // (apimachinery NewGenericServerResponse), with empty details.
        let (code, status) = get(&t.client, "/api/v1/namespaces/default/gizmos").await;
        assert_eq!(code, 404);
        assert_eq!(status["reason"], "NotFound");
        assert_eq!(
            status["message"],
            "the server could not find the requested resource"
        );
        assert_eq!(status["details"], json!({}));
    }
}

#[tokio::test]
async fn forbidden_answers_carry_details_and_name_the_resource_as_kube_apiserver_does() {
    let cluster = Cluster::new("forbidden");
    cluster
        .auth()
        .add_token("nobody-token", UserInfo::new("nobody", &[]));
    let nobody = cluster.client_with_token("nobody-token");
    // As the Karmada recording shows a real member answering a forbidden node list.
    let (code, status) = get(&nobody, "/api/v1/nodes").await;
    assert_eq!(code, 403);
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "nodes is forbidden: User \"nobody\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"
    );
    assert_eq!(status["details"], json!({"kind": "nodes"}));
    let (code, status) = get(&nobody, "/api/v1/namespaces/default/pods/web/log").await;
    assert_eq!(code, 403);
    assert_eq!(
        status["message"],
        "pods \"web\" is forbidden: User \"nobody\" cannot get resource \"pods/log\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(status["details"], json!({"name": "web", "kind": "pods"}));
    let (code, status) = get(&nobody, "/apis/apps/v1/namespaces/default/deployments/d").await;
    assert_eq!(code, 403);
    assert_eq!(
        status["details"],
        json!({"name": "d", "group": "apps", "kind": "deployments"})
    );
}

#[tokio::test]
async fn access_reviews_answer_with_metadata_and_leave_out_an_empty_reason() {
    let cluster = Cluster::new("reviews");
    cluster
        .auth()
        .add_token("nobody-token", UserInfo::new("nobody", &[]));
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}}});
    let path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    // Denied without an opinion: `reason` is `omitempty` in SubjectAccessReviewStatus.
    let (code, denied) = send(
        &cluster.client_with_token("nobody-token"),
        "POST",
        path,
        review.clone(),
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(denied["metadata"], json!({}));
    assert_eq!(denied["status"], json!({"allowed": false}));
    // system:masters is allowed by the privileged-group authorizer, which gives no reason.
    let (_, admin) = send(&cluster.client(), "POST", path, review.clone()).await;
    assert_eq!(admin["status"], json!({"allowed": true}));
    // RBAC says which binding allowed it (plugin/pkg/auth/authorizer/rbac/rbac.go).
    let admin = cluster.client();
    send(
        &admin,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        json!({
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]}),
    )
    .await;
    send(&admin, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", json!({
        "metadata": {"name": "read-pods"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pod-reader"},
        "subjects": [{"kind": "User", "name": "nobody"}]})).await;
    let (_, allowed) = send(
        &cluster.client_with_token("nobody-token"),
        "POST",
        path,
        review,
    )
    .await;
    assert_eq!(
        allowed["status"],
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"read-pods/default\" of ClusterRole \"pod-reader\" to User \"nobody\""})
    );
}

#[tokio::test]
async fn namespaces_carry_their_name_label_and_stay_terminating_until_emptied() {
    for t in targets().await {
        let c = &t.client;
        let (code, ns) = send(
            c,
            "POST",
            "/api/v1/namespaces",
            json!({"metadata": {"name": "t1", "labels": {"team": "a"}}}),
        )
        .await;
        assert_eq!(code, 201, "{ns}");
        // pkg/apis/core/v1/defaults.go, SetDefaults_Namespace.
        assert_eq!(
            ns["metadata"]["labels"],
            json!({"team": "a", "kubernetes.io/metadata.name": "t1"})
        );
        // Set again on every write, whatever the request says.
        let mut changed = ns.clone();
        changed["metadata"]["labels"] = json!({"kubernetes.io/metadata.name": "other"});
        let (code, updated) = send(c, "PUT", "/api/v1/namespaces/t1", changed).await;
        assert_eq!(code, 200, "{updated}");
        assert_eq!(
            updated["metadata"]["labels"],
            json!({"kubernetes.io/metadata.name": "t1"})
        );
        let (_, default) = get(c, "/api/v1/namespaces/default").await;
        assert_eq!(
            default["metadata"]["labels"]["kubernetes.io/metadata.name"],
            "default"
        );

        // Content with a finalizer holds the namespace in Terminating.
        let (code, _) = send(
            c,
            "POST",
            "/api/v1/namespaces/t1/configmaps",
            json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
        )
        .await;
        assert_eq!(code, 201);
        let (code, deleted) = raw(c, "DELETE", "/api/v1/namespaces/t1", "", Vec::new()).await;
        // staging/src/k8s.io/apiserver/pkg/endpoints/handlers/delete.go: 200 unless
        // orphanDependents=false was asked.
        assert_eq!(code, 200, "{}: {deleted}", t.how);
        assert_eq!(deleted["status"]["phase"], "Terminating");
        assert_eq!(deleted["spec"]["finalizers"], json!(["kubernetes"]));
        eventually("the content is being deleted", || async {
            let (_, cm) = get(c, "/api/v1/namespaces/t1/configmaps/held").await;
            cm["metadata"]["deletionTimestamp"].is_string()
        })
        .await;
        // pkg/controller/namespace/deletion/status_condition_utils.go names what holds it.
        eventually("the namespace says what holds it", || async {
            let (_, ns) = get(c, "/api/v1/namespaces/t1").await;
            ns["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "NamespaceFinalizersRemaining")
            })
        })
        .await;
        let (code, ns) = get(c, "/api/v1/namespaces/t1").await;
        assert_eq!(code, 200);
        assert_eq!(ns["status"]["phase"], "Terminating");
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        let condition = |kind: &str| {
            ns["status"]["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == kind)
                .cloned()
                .unwrap()
        };
        assert_eq!(
            condition("NamespaceContentRemaining")["message"],
            "Some resources are remaining: configmaps. has 1 resource instances"
        );
        assert_eq!(
            condition("NamespaceFinalizersRemaining")["message"],
            "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
        );
        assert_eq!(
            condition("NamespaceDeletionDiscoveryFailure")["status"],
            "False"
        );
        // plugin/pkg/admission/namespace/lifecycle: no new content while terminating.
        let (code, status) = send(
            c,
            "POST",
            "/api/v1/namespaces/t1/configmaps",
            json!({"metadata": {"name": "late"}}),
        )
        .await;
        assert_eq!(code, 403);
        assert_eq!(
            status["message"],
            "configmaps \"late\" is forbidden: unable to create new content in namespace t1 because it is being terminated"
        );
        assert_eq!(
            status["details"],
            json!({"name": "late", "kind": "configmaps"})
        );
        // Released, the content goes and the namespace with it.
        let (code, _) = raw(
            c,
            "PATCH",
            "/api/v1/namespaces/t1/configmaps/held",
            "application/merge-patch+json",
            br#"{"metadata":{"finalizers":null}}"#.to_vec(),
        )
        .await;
        assert_eq!(code, 200);
        eventually("the emptied namespace is gone", || async {
            get(c, "/api/v1/namespaces/t1").await.0 == 404
        })
        .await;
    }
}

#[tokio::test]
async fn every_namespace_gets_the_kube_root_ca_config_map() {
    let cluster = Cluster::with_options(
        "root-ca",
        ClusterOptions {
            workload_controllers: true,
            ..Default::default()
        },
    );
    let served = cluster.serve(Default::default()).await.unwrap();
    let c = served.client().await.unwrap();
    let ca = cluster.pki().unwrap().ca_pem().to_owned();
    // pkg/controller/certificates/rootcacertpublisher/publisher.go.
    let description = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";
    send(
        &c,
        "POST",
        "/api/v1/namespaces",
        json!({"metadata": {"name": "fresh"}}),
    )
    .await;
    for ns in [
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "fresh",
    ] {
        let path = format!("/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt");
        eventually(&format!("kube-root-ca.crt in {ns}"), || async {
            get(&c, &path).await.0 == 200
        })
        .await;
        let (_, cm) = get(&c, &path).await;
        assert_eq!(cm["data"], json!({"ca.crt": ca}));
        assert_eq!(
            cm["metadata"]["annotations"],
            json!({"kubernetes.io/description": description})
        );
        assert_eq!(
            cm["metadata"]["managedFields"][0]["manager"],
            "kube-controller-manager"
        );
    }
    // Changed or deleted, it is put back.
    let path = "/api/v1/namespaces/fresh/configmaps/kube-root-ca.crt";
    raw(
        &c,
        "PATCH",
        path,
        "application/merge-patch+json",
        br#"{"data":{"ca.crt":"mine","extra":"x"}}"#.to_vec(),
    )
    .await;
    eventually("the edited ConfigMap is repaired", || async {
        get(&c, path).await.1["data"] == json!({"ca.crt": ca})
    })
    .await;
    raw(&c, "DELETE", path, "", Vec::new()).await;
    eventually("the deleted ConfigMap is back", || async {
        get(&c, path).await.0 == 200
    })
    .await;
}

/// A member Deployment as the recording's real member stored it, created the same way (by
/// `karmada-controller-manager`, with the defaults the template carried) in a sandbox with the
/// same controllers and no kubelet: the same status and managed fields.
#[tokio::test]
async fn deployment_status_and_managed_fields_match_a_real_member() {
    let real = recorded("objects/deployment-shop.json");
    let cluster = Cluster::with_options(
        "member",
        ClusterOptions {
            workload_controllers: true,
            kubelet: false,
            scheduler: false,
            ..Default::default()
        },
    );
    let c = cluster.client();
    send(
        &c,
        "POST",
        "/api/v1/namespaces",
        json!({"metadata": {"name": "demo"}}),
    )
    .await;
    let mut annotations = real["metadata"]["annotations"].clone();
    annotations
        .as_object_mut()
        .unwrap()
        .remove("deployment.kubernetes.io/revision");
    let body = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "shop", "labels": real["metadata"]["labels"], "annotations": annotations},
        "spec": real["spec"],
    });
    let (code, created) = send(
        &c,
        "POST",
        "/apis/apps/v1/namespaces/demo/deployments?fieldManager=karmada-controller-manager",
        body,
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let path = "/apis/apps/v1/namespaces/demo/deployments/shop";
    eventually("the rollout is reported", || async {
        let (_, d) = get(&c, path).await;
        d["status"]["replicas"] == 1
            && d["status"]["updatedReplicas"] == 1
            && d["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["reason"] == "ReplicaSetUpdated"))
    })
    .await;
    let (_, mine) = get(&c, path).await;

    // The status, but for times: the ReplicaSet is named by kube's own pod-template-hash
    // (`ReplicaSet "shop-57f5b57465" is progressing.`).
    let comparable = |status: &Value| {
        let mut status = status.clone();
        for condition in status["conditions"].as_array_mut().unwrap() {
            let condition = condition.as_object_mut().unwrap();
            condition.remove("lastUpdateTime");
            condition.remove("lastTransitionTime");
        }
        status
    };
    assert_eq!(comparable(&mine["status"]), comparable(&real["status"]));
    assert_eq!(
        mine["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );

    // The managed fields, but for times.
    let entries = |d: &Value| -> Vec<Value> {
        let mut list = d["metadata"]["managedFields"].as_array().unwrap().clone();
        for entry in &mut list {
            entry.as_object_mut().unwrap().remove("time");
        }
        list.sort_by_key(|e| e["manager"].to_string());
        list
    };
    let (mine, real) = (entries(&mine), entries(&real));
    assert_eq!(mine.len(), real.len(), "{mine:#?}");
    for (mine, real) in mine.iter().zip(&real) {
        assert_eq!(mine, real, "{}", real["manager"]);
    }
}

/// What structured-merge-diff records when a second manager takes over a field of the first:
/// the first keeps the map it created (`.`) with nothing in it (sigs.k8s.io/structured-merge-diff
/// `merge.Updater.update` removes only the taken-over paths from the other managers' sets).
#[tokio::test]
async fn a_manager_whose_field_another_takes_over_keeps_its_emptied_entry() {
    for t in targets().await {
        let c = &t.client;
        let (code, created) = send(
            c,
            "POST",
            "/api/v1/namespaces/default/configmaps?fieldManager=first",
            json!({"metadata": {"name": "shared"}, "data": {"k": "v"}}),
        )
        .await;
        assert_eq!(code, 201);
        assert_eq!(
            created["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:data": {".": {}, "f:k": {}}})
        );
        let mut changed = created.clone();
        changed["data"]["k"] = json!("w");
        let (code, updated) = send(
            c,
            "PUT",
            "/api/v1/namespaces/default/configmaps/shared?fieldManager=second",
            changed,
        )
        .await;
        assert_eq!(code, 200);
        let fields = |manager: &str| {
            updated["metadata"]["managedFields"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["manager"] == manager)
                .map(|e| e["fieldsV1"].clone())
        };
        assert_eq!(fields("first"), Some(json!({"f:data": {}})), "{}", t.how);
        assert_eq!(fields("second"), Some(json!({"f:data": {"f:k": {}}})));
    }
}

/// Service-account tokens are RS256 JWTs whose header names the key by kube's key id, and
/// they verify against the JWKS the issuer publishes (kubernetes `pkg/serviceaccount/jwt.go`:
/// `JWTTokenGenerator` signs with go-jose and no options, so the header is `alg` and `kid`
/// only; `keyIDFromPublicKey`; `pkg/serviceaccount/openidmetadata.go` for the documents).
#[tokio::test]
async fn service_account_tokens_are_rs256_and_verify_against_the_published_keys() {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    for t in targets().await {
        let (code, _) = send(
            &t.client,
            "POST",
            "/api/v1/namespaces/default/serviceaccounts",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "signer"}}),
        )
        .await;
        assert!(code == 201 || code == 409, "{}: {code}", t.how);
        let (code, request) = send(
            &t.client,
            "POST",
            "/api/v1/namespaces/default/serviceaccounts/signer/token",
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"audiences": ["https://kubernetes.default.svc.cluster.local"]}}),
        )
        .await;
        assert_eq!(code, 201, "{}: {request}", t.how);
        let token = request["status"]["token"].as_str().unwrap().to_string();
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["alg"], "RS256", "{}: {header}", t.how);
        assert_eq!(
            header.as_object().unwrap().len(),
            2,
            "alg and kid only: {header}"
        );

        let (code, jwks) = get(&t.client, "/openid/v1/jwks").await;
        assert_eq!(code, 200);
        let key = &jwks["keys"][0];
        assert_eq!(jwks["keys"].as_array().unwrap().len(), 1);
        assert_eq!(
            (&key["kty"], &key["alg"], &key["use"]),
            (&json!("RSA"), &json!("RS256"), &json!("sig"))
        );
        assert_eq!(header["kid"], key["kid"]);
        let n = URL_SAFE_NO_PAD.decode(key["n"].as_str().unwrap()).unwrap();
        let e = URL_SAFE_NO_PAD.decode(key["e"].as_str().unwrap()).unwrap();
        assert_eq!(n.len(), 256, "a 2048-bit modulus");
        assert_eq!(e, [1, 0, 1]);
        // The kid is the SHA-256 of the key's PKIX form, computed here independently.
        assert_eq!(
            key["kid"].as_str().unwrap(),
            kube_sandbox::apiserver::service_account_key::key_id(&n, &e)
        );
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        let public = ring::signature::RsaPublicKeyComponents { n: &n, e: &e };
        let signed = format!("{}.{}", parts[0], parts[1]);
        assert!(
            public
                .verify(
                    &ring::signature::RSA_PKCS1_2048_8192_SHA256,
                    signed.as_bytes(),
                    &signature
                )
                .is_ok()
        );
        let mut forged = signed.clone().into_bytes();
        forged.push(b'x');
        assert!(
            public
                .verify(
                    &ring::signature::RSA_PKCS1_2048_8192_SHA256,
                    &forged,
                    &signature
                )
                .is_err()
        );

        let (code, config) = get(&t.client, "/.well-known/openid-configuration").await;
        assert_eq!(code, 200);
        assert_eq!(
            config["issuer"],
            "https://kubernetes.default.svc.cluster.local"
        );
        assert_eq!(
            config["jwks_uri"],
            "https://kubernetes.default.svc.cluster.local/openid/v1/jwks"
        );
        assert_eq!(
            config["id_token_signing_alg_values_supported"],
            json!(["RS256"])
        );

        // The token authenticates as its service account.
        let (code, review) = send(
            &t.client,
            "POST",
            "/apis/authentication.k8s.io/v1/tokenreviews",
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                   "spec": {"token": token}}),
        )
        .await;
        assert_eq!(code, 201, "{review}");
        assert_eq!(review["status"]["authenticated"], true, "{review}");
        assert_eq!(
            review["status"]["user"]["username"],
            "system:serviceaccount:default:signer"
        );
    }
}

/// `kubectl create deployment web --image=nginx --replicas=2` on a real kube-apiserver v1.36
/// made the ReplicaSet `web-7887448d46` and pods `web-7887448d46-*` (the recorded tables): the
/// sandbox's deployment controller names them by the same hash (kubernetes
/// `pkg/controller/controller_utils.go`, `ComputeHash`).
#[tokio::test]
async fn a_deployment_gets_the_replica_set_name_kube_gives_it() {
    let recorded_sets = recorded("tables/apis_apps_v1_namespaces_refcap_replicasets.json");
    let recorded_name = recorded_sets["rows"][0]["cells"][0]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(recorded_name, "web-7887448d46");
    let recorded_pods = recorded("tables/api_v1_namespaces_refcap_pods.json");
    assert!(recorded_pods["rows"].as_array().unwrap().iter().any(|r| {
        r["cells"][0]
            .as_str()
            .unwrap()
            .starts_with("web-7887448d46-")
    }));
    let cluster = Cluster::with_options(
        "member",
        ClusterOptions {
            workload_controllers: true,
            ..Default::default()
        },
    );
    let c = cluster.client();
    send(
        &c,
        "POST",
        "/api/v1/namespaces",
        json!({"metadata": {"name": "refcap"}}),
    )
    .await;
    // The body kubectl v1.36 sends for `kubectl create deployment web --image=nginx --replicas=2`.
    let body = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "strategy": {},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}}},
        "status": {}
    });
    let (code, created) = send(
        &c,
        "POST",
        "/apis/apps/v1/namespaces/refcap/deployments?fieldManager=kubectl-create",
        body,
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let set_path = format!("/apis/apps/v1/namespaces/refcap/replicasets/{recorded_name}");
    eventually("the recorded ReplicaSet exists", || async {
        get(&c, &set_path).await.0 == 200
    })
    .await;
    let (_, set) = get(&c, &set_path).await;
    assert_eq!(
        set["metadata"]["labels"]["pod-template-hash"], "7887448d46",
        "{set}"
    );
    assert_eq!(
        set["spec"]["selector"]["matchLabels"],
        json!({"app": "web", "pod-template-hash": "7887448d46"})
    );
    let pods_path = "/api/v1/namespaces/refcap/pods?labelSelector=pod-template-hash%3D7887448d46";
    eventually("two pods labelled with the hash", || async {
        let (_, pods) = get(&c, pods_path).await;
        pods["items"].as_array().is_some_and(|items| {
            items.len() == 2
                && items.iter().all(|p| {
                    p["metadata"]["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("web-7887448d46-"))
                })
        })
    })
    .await;
}

/// kube-apiserver publishes the CA of the client certificates it accepts in
/// `kube-system/extension-apiserver-authentication` under `client-ca-file` (kubernetes
/// `pkg/controlplane/controller/clusterauthenticationtrust/cluster_authentication_trust_controller.go`,
/// `writeConfigMap`; the `requestheader-*` keys only with `--requestheader-client-ca-file`,
/// which the sandbox does not serve). A served sandbox accepts client certificates of its CA.
#[tokio::test]
async fn the_client_ca_is_published_for_extension_apiservers() {
    for t in targets().await {
        if t.served.is_none() {
            continue;
        }
        let path = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";
        let (code, config_map) = get(&t.client, path).await;
        assert_eq!(code, 200, "{}: {config_map}", t.how);
        let data = config_map["data"].as_object().unwrap();
        assert_eq!(
            data.keys().collect::<Vec<_>>(),
            ["client-ca-file"],
            "{config_map}"
        );
        let pki = t.cluster.pki().unwrap();
        assert_eq!(
            data["client-ca-file"].as_str().unwrap().trim(),
            pki.ca_pem().trim()
        );
    }
}
