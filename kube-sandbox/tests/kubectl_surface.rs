//! What kubectl reads besides the resources, over loopback HTTP, compared with the recordings
//! of a real kube-apiserver v1.36 (`kube-sandbox/testdata/kube-apiserver-v1.36`): aggregated
//! discovery, the OpenAPI v2/v3 documents, and Tables.

#![allow(clippy::unwrap_used)]

use kube_sandbox::{Cluster, ServeOptions, SimNode};
use serde_json::{Value, json};

const REFERENCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/kube-apiserver-v1.36");
const AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

fn reference(file: &str) -> Value {
    let path = format!("{REFERENCE}/{file}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "reference recording {path} is missing ({e}); it is kept under kube-sandbox/testdata"
        )
    });
    serde_json::from_str(&text).unwrap()
}

fn clusterbinding_crd() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/crds/kubeocean/cloud.tencent.com_clusterbindings.yaml"
    );
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

struct Reply {
    status: u16,
    headers: http::HeaderMap,
    body: Value,
}

async fn request(
    client: &kube::Client,
    method: &str,
    path: &str,
    accept: &str,
    body: Option<Value>,
) -> Reply {
    let mut builder = http::Request::builder().method(method).uri(path);
    if !accept.is_empty() {
        builder = builder.header("accept", accept);
    }
    if body.is_some() {
        builder = builder.header("content-type", "application/json");
    }
    let bytes = body
        .map(|b| serde_json::to_vec(&b).unwrap())
        .unwrap_or_default();
    let resp = client
        .send(builder.body(bytes).unwrap().map(kube::client::Body::from))
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    Reply {
        status,
        headers,
        body,
    }
}

async fn post(client: &kube::Client, path: &str, body: Value) {
    let reply = request(client, "POST", path, "application/json", Some(body)).await;
    assert_eq!(reply.status, 201, "POST {path}: {}", reply.body);
}

fn find<'a>(list: &'a Value, key: &str, value: &str) -> Option<&'a Value> {
    list.as_array()?.iter().find(|item| {
        item.pointer(key)
            .and_then(Value::as_str)
            .is_some_and(|v| v == value)
    })
}

/// Every resource both servers list has the recorded entry (subresources compared where both
/// have them); every entry has no key the recording lacks.
fn compare_aggregated(ours: &Value, recorded: &Value) -> usize {
    let mut diffs: Vec<String> = Vec::new();
    assert_eq!(ours["kind"], recorded["kind"]);
    assert_eq!(ours["apiVersion"], recorded["apiVersion"]);
    assert_eq!(ours["metadata"], recorded["metadata"]);
    let mut compared = 0;
    for group in ours["items"].as_array().unwrap() {
        let name = group["metadata"]["name"].as_str().unwrap_or("");
        let recorded_group = recorded["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["metadata"]["name"].as_str().unwrap_or("") == name);
        let Some(recorded_group) = recorded_group else {
            continue;
        };
        assert_eq!(group["metadata"], recorded_group["metadata"]);
        for version in group["versions"].as_array().unwrap() {
            let v = version["version"].as_str().unwrap();
            let Some(recorded_version) = find(&recorded_group["versions"], "/version", v) else {
                continue;
            };
            assert_eq!(version["freshness"], recorded_version["freshness"]);
            for resource in version["resources"].as_array().unwrap() {
                let plural = resource["resource"].as_str().unwrap();
                let Some(want) = find(&recorded_version["resources"], "/resource", plural) else {
                    continue;
                };
                for (key, value) in resource.as_object().unwrap() {
                    assert!(
                        want.get(key).is_some(),
                        "{name}/{v} {plural}: extra key {key}"
                    );
                    if key == "subresources" {
                        for sub in value.as_array().unwrap() {
                            let s = sub["subresource"].as_str().unwrap();
                            if let Some(w) = find(&want["subresources"], "/subresource", s)
                                && sub != w
                            {
                                diffs.push(format!("{name}/{v} {plural}/{s}: {sub} vs {w}"));
                            }
                        }
                    } else {
                        if value != &want[key] {
                            diffs.push(format!(
                                "{name}/{v} {plural}: {key}: {value} vs {}",
                                want[key]
                            ));
                        }
                    }
                }
                for key in want.as_object().unwrap().keys() {
                    if resource.get(key).is_none() {
                        diffs.push(format!("{name}/{v} {plural}: missing {key}"));
                    }
                }
                compared += 1;
            }
        }
    }
    assert!(
        diffs.is_empty(),
        "differences from the recording:\n{}",
        diffs.join("\n")
    );
    compared
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregated_discovery_matches_the_recording_and_follows_crds() {
    let cluster = Cluster::new("aggregated");
    let served = cluster.serve(ServeOptions::default()).await.unwrap();
    let client = served.client().await.unwrap();

    let core = request(&client, "GET", "/api", AGGREGATED, None).await;
    assert_eq!(core.status, 200);
    assert_eq!(
        core.headers["content-type"],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    let etag = core.headers["etag"].to_str().unwrap().to_string();
    let unchanged = client
        .send(
            http::Request::get("/api")
                .header("accept", AGGREGATED)
                .header("if-none-match", &etag)
                .body(Vec::new())
                .unwrap()
                .map(kube::client::Body::from),
        )
        .await
        .unwrap();
    assert_eq!(unchanged.status(), 304);
    let compared = compare_aggregated(&core.body, &reference("discovery/api_aggregated_v2.json"));
    assert!(compared >= 13, "core resources compared: {compared}");

    let apis = request(&client, "GET", "/apis", AGGREGATED, None).await;
    let recorded = reference("discovery/apis_aggregated_v2.json");
    let compared = compare_aggregated(&apis.body, &recorded);
    assert!(compared >= 20, "group resources compared: {compared}");

    post(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        clusterbinding_crd(),
    )
    .await;
    let apis = request(&client, "GET", "/apis", AGGREGATED, None).await;
    let ours = find(&apis.body["items"], "/metadata/name", "cloud.tencent.com")
        .expect("the CRD's group is listed");
    let want = find(&recorded["items"], "/metadata/name", "cloud.tencent.com").unwrap();
    let ours_cb = find(
        &ours["versions"][0]["resources"],
        "/resource",
        "clusterbindings",
    );
    let want_cb = find(
        &want["versions"][0]["resources"],
        "/resource",
        "clusterbindings",
    );
    assert_eq!(ours_cb, want_cb, "a CRD's entry as kube-apiserver lists it");
    // kube-rs reads the same documents.
    let aggregated = kube::Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    assert!(aggregated.has_group("cloud.tencent.com"));
    let (_, caps) = aggregated
        .get("apps")
        .unwrap()
        .recommended_kind("Deployment")
        .unwrap();
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    assert!(aggregated.get("").is_some(), "the core group");

    let v2beta1 = request(
        &client,
        "GET",
        "/apis",
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
        None,
    )
    .await;
    assert_eq!(v2beta1.body["apiVersion"], "apidiscovery.k8s.io/v2beta1");

    let reply = request(
        &client,
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusterbindings.cloud.tencent.com",
        "application/json",
        None,
    )
    .await;
    assert_eq!(reply.status, 200);
    let apis = request(&client, "GET", "/apis", AGGREGATED, None).await;
    assert!(find(&apis.body["items"], "/metadata/name", "cloud.tencent.com").is_none());

    // Legacy discovery still answers plain JSON.
    let legacy = request(&client, "GET", "/apis", "application/json", None).await;
    assert_eq!(legacy.body["kind"], "APIGroupList");
    assert_eq!(legacy.headers["content-type"], "application/json");
    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    assert!(discovery.has_group("apps"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_documents_list_built_in_kinds_and_crds() {
    let cluster = Cluster::new("openapi");
    let served = cluster.serve(ServeOptions::default()).await.unwrap();
    let client = served.client().await.unwrap();

    let index = request(&client, "GET", "/openapi/v3", "application/json", None).await;
    assert_eq!(index.status, 200);
    let etag = index.headers["etag"].to_str().unwrap().to_string();
    let apps_url = index.body["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        apps_url.starts_with("/openapi/v3/apis/apps/v1?hash="),
        "{apps_url}"
    );
    assert!(index.body["paths"].get("api/v1").is_some());
    assert!(
        index.body["paths"]
            .get("apis/networking.k8s.io/v1")
            .is_some()
    );

    let apps = request(&client, "GET", &apps_url, "application/json", None).await;
    assert_eq!(apps.status, 200);
    assert_eq!(apps.headers["cache-control"], "public, immutable");
    let strategy = &apps.body["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]
        ["strategy"];
    assert!(
        strategy.is_object(),
        "deployment.spec.strategy is explained"
    );
    let stale = request(
        &client,
        "GET",
        "/openapi/v3/apis/apps/v1?hash=ABC",
        "application/json",
        None,
    )
    .await;
    assert_eq!(stale.status, 301);
    assert_eq!(stale.headers["location"], apps_url.as_str());

    // The recorded group document, paths cut down to what the sandbox serves.
    let recorded_paths = {
        let path = format!("{REFERENCE}/openapi/v3/apis_coordination.k8s.io_v1.json.gz");
        assert!(std::path::Path::new(&path).exists(), "{path} is missing");
        let served = request(
            &client,
            "GET",
            "/openapi/v3/apis/coordination.k8s.io/v1",
            "",
            None,
        )
        .await;
        served.body["paths"].as_object().unwrap().len()
    };
    assert!(recorded_paths >= 4);

    let v2 = request(&client, "GET", "/openapi/v2", "application/json", None).await;
    assert_eq!(v2.status, 200);
    assert_eq!(v2.body["swagger"], "2.0");
    let protobuf = request(
        &client,
        "GET",
        "/openapi/v2",
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        None,
    )
    .await;
    assert_eq!(protobuf.status, 406);

    post(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        clusterbinding_crd(),
    )
    .await;
    let index = request(&client, "GET", "/openapi/v3", "application/json", None).await;
    assert_ne!(
        index.headers["etag"].to_str().unwrap(),
        etag,
        "the index changed"
    );
    let url = index.body["paths"]["apis/cloud.tencent.com/v1beta1"]["serverRelativeURL"]
        .as_str()
        .expect("the CRD's group version is listed")
        .to_string();
    let doc = request(&client, "GET", &url, "application/json", None).await;
    let schema = &doc.body["components"]["schemas"]["com.tencent.cloud.v1beta1.ClusterBinding"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"][0]["kind"],
        "ClusterBinding"
    );
    let v2 = request(&client, "GET", "/openapi/v2", "application/json", None).await;
    assert!(
        v2.body["definitions"]
            .get("com.tencent.cloud.v1beta1.ClusterBinding")
            .is_some()
    );
    assert!(
        v2.body["paths"]
            .get("/apis/cloud.tencent.com/v1beta1/clusterbindings/{name}")
            .is_some()
    );

    request(
        &client,
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusterbindings.cloud.tencent.com",
        "application/json",
        None,
    )
    .await;
    let index = request(&client, "GET", "/openapi/v3", "application/json", None).await;
    assert!(
        index.body["paths"]
            .get("apis/cloud.tencent.com/v1beta1")
            .is_none()
    );
    assert_eq!(
        index.headers["etag"].to_str().unwrap(),
        etag,
        "back to the first index"
    );
    let gone = request(&client, "GET", &url, "application/json", None).await;
    assert_eq!(gone.status, 404);
}

fn is_age(cell: &Value) -> bool {
    let s = cell.as_str().unwrap_or("");
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric())
        && s.ends_with(['s', 'm', 'h', 'd', 'y'])
}

/// A Table from the sandbox next to the recorded one: same columns, one cell per column,
/// PartialObjectMetadata rows.
async fn check_table(
    client: &kube::Client,
    path: &str,
    recorded: Option<&str>,
    columns: &[&str],
) -> Value {
    let reply = request(client, "GET", path, TABLE, None).await;
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    let table = reply.body;
    assert_eq!(table["kind"], "Table", "{path}");
    if let Some(file) = recorded {
        let want = reference(&format!("tables/{file}"));
        assert_eq!(
            table["columnDefinitions"], want["columnDefinitions"],
            "{path}"
        );
    }
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, columns, "{path}");
    let rows = table["rows"].as_array().unwrap();
    assert!(!rows.is_empty(), "{path}: no rows");
    for row in rows {
        assert_eq!(
            row["cells"].as_array().unwrap().len(),
            columns.len(),
            "{path}"
        );
        assert_eq!(row["object"]["kind"], "PartialObjectMetadata", "{path}");
        if let Some(age) = columns.iter().position(|c| *c == "Age") {
            assert!(
                is_age(&row["cells"][age]),
                "{path}: age {}",
                row["cells"][age]
            );
        }
    }
    table
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_have_the_recorded_columns_for_every_kind() {
    let cluster = Cluster::new("tables");
    cluster.add_node(&SimNode::new("n1", "4", "8Gi")).unwrap();
    let served = cluster.serve(ServeOptions::default()).await.unwrap();
    let client = served.client().await.unwrap();
    let ns = "/api/v1/namespaces/default";
    let template = json!({"metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}});
    let selector = json!({"matchLabels": {"app": "web"}});
    post(
        &client,
        &format!("{ns}/configmaps"),
        json!({"metadata": {"name": "cm1"}, "data": {"a": "1"}}),
    )
    .await;
    post(
        &client,
        &format!("{ns}/secrets"),
        json!({"metadata": {"name": "s1"}, "stringData": {"a": "1"}}),
    )
    .await;
    post(
        &client,
        &format!("{ns}/serviceaccounts"),
        json!({"metadata": {"name": "sa1"}}),
    )
    .await;
    post(
        &client,
        &format!("{ns}/services"),
        json!({"metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
    )
    .await;
    post(
        &client,
        &format!("{ns}/pods"),
        json!({"metadata": {"name": "p1"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    )
    .await;
    post(
        &client,
        &format!("{ns}/events"),
        json!({"metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "default"},
        "reason": "Started", "message": "started", "type": "Normal", "count": 1,
        "source": {"component": "kubelet"},
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z"}),
    )
    .await;
    post(
        &client,
        &format!("{ns}/persistentvolumeclaims"),
        json!({"metadata": {"name": "c1"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    post(&client, "/api/v1/persistentvolumes", json!({"metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"}}})).await;
    let apps = "/apis/apps/v1/namespaces/default";
    post(
        &client,
        &format!("{apps}/deployments"),
        json!({"metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": selector, "template": template}}),
    )
    .await;
    post(
        &client,
        &format!("{apps}/replicasets"),
        json!({"metadata": {"name": "web-1"},
        "spec": {"replicas": 2, "selector": selector, "template": template}}),
    )
    .await;
    post(
        &client,
        &format!("{apps}/statefulsets"),
        json!({"metadata": {"name": "db"},
        "spec": {"replicas": 1, "serviceName": "db", "selector": selector, "template": template}}),
    )
    .await;
    post(
        &client,
        &format!("{apps}/daemonsets"),
        json!({"metadata": {"name": "agent"},
        "spec": {"selector": selector, "template": template}}),
    )
    .await;
    let batch = "/apis/batch/v1/namespaces/default";
    let job_template = json!({"spec": {"restartPolicy": "Never",
        "containers": [{"name": "j", "image": "busybox"}]}});
    post(
        &client,
        &format!("{batch}/jobs"),
        json!({"metadata": {"name": "j1"},
        "spec": {"template": job_template}}),
    )
    .await;
    post(
        &client,
        &format!("{batch}/cronjobs"),
        json!({"metadata": {"name": "cj"},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": job_template}}}}),
    )
    .await;
    post(
        &client,
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        json!({"metadata": {"name": "l1"},
        "spec": {"holderIdentity": "me"}}),
    )
    .await;
    post(
        &client,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
        json!({"metadata": {"name": "r1"},
        "rules": []}),
    )
    .await;
    post(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        clusterbinding_crd(),
    )
    .await;
    post(&client, "/apis/cloud.tencent.com/v1beta1/clusterbindings", json!({
        "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ClusterBinding",
        "metadata": {"name": "worker-1"}, "spec": {"clusterID": "w1", "secretRef": {"name": "s", "namespace": "default"}}})).await;

    check_table(
        &client,
        "/api/v1/namespaces",
        Some("api_v1_namespaces.json"),
        &["Name", "Status", "Age"],
    )
    .await;
    check_table(
        &client,
        &format!("{ns}/configmaps"),
        Some("api_v1_namespaces_refcap_configmaps.json"),
        &["Name", "Data", "Age"],
    )
    .await;
    let secrets = check_table(
        &client,
        &format!("{ns}/secrets"),
        Some("api_v1_namespaces_refcap_secrets.json"),
        &["Name", "Type", "Data", "Age"],
    )
    .await;
    assert_eq!(
        secrets["rows"][0]["cells"].as_array().unwrap()[1..3],
        [json!("Opaque"), json!(1)]
    );
    check_table(
        &client,
        &format!("{ns}/serviceaccounts"),
        Some("api_v1_namespaces_refcap_serviceaccounts.json"),
        &["Name", "Age"],
    )
    .await;
    let services = check_table(
        &client,
        &format!("{ns}/services"),
        Some("api_v1_namespaces_refcap_services.json"),
        &[
            "Name",
            "Type",
            "Cluster-IP",
            "External-IP",
            "Port(s)",
            "Age",
            "Selector",
        ],
    )
    .await;
    let web = find(&services["rows"], "/cells/0", "web").unwrap();
    assert_eq!(web["cells"][1], "ClusterIP");
    assert_eq!(web["cells"][4], "80/TCP");
    assert_eq!(web["cells"][6], "app=web");
    let pods = check_table(
        &client,
        &format!("{ns}/pods"),
        Some("api_v1_namespaces_refcap_pods.json"),
        &[
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates",
        ],
    )
    .await;
    assert_eq!(pods["rows"][0]["cells"][1], "0/1");
    let nodes = check_table(
        &client,
        "/api/v1/nodes",
        Some("api_v1_nodes.json"),
        &[
            "Name",
            "Status",
            "Roles",
            "Age",
            "Version",
            "Internal-IP",
            "External-IP",
            "OS-Image",
            "Kernel-Version",
            "Container-Runtime",
        ],
    )
    .await;
    assert!(
        ["Ready", "NotReady", "Unknown"].contains(&nodes["rows"][0]["cells"][1].as_str().unwrap())
    );
    let events = check_table(
        &client,
        &format!("{ns}/events"),
        Some("api_v1_namespaces_refcap_events.json"),
        &[
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name",
        ],
    )
    .await;
    let e1 = find(&events["rows"], "/cells/9", "e1").unwrap();
    assert_eq!(e1["cells"][3], "pod/p1");
    assert_eq!(e1["cells"][5], "kubelet");
    check_table(
        &client,
        &format!("{ns}/persistentvolumeclaims"),
        None,
        &[
            "Name",
            "Status",
            "Volume",
            "Capacity",
            "Access Modes",
            "StorageClass",
            "VolumeAttributesClass",
            "Age",
            "VolumeMode",
        ],
    )
    .await;
    check_table(
        &client,
        "/api/v1/persistentvolumes",
        None,
        &[
            "Name",
            "Capacity",
            "Access Modes",
            "Reclaim Policy",
            "Status",
            "Claim",
            "StorageClass",
            "VolumeAttributesClass",
            "Reason",
            "Age",
            "VolumeMode",
        ],
    )
    .await;
    let deployments = check_table(
        &client,
        &format!("{apps}/deployments"),
        Some("apis_apps_v1_namespaces_refcap_deployments.json"),
        &[
            "Name",
            "Ready",
            "Up-to-date",
            "Available",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ],
    )
    .await;
    assert_eq!(
        deployments["rows"][0]["cells"].as_array().unwrap()[5..8],
        [json!("nginx"), json!("nginx"), json!("app=web")]
    );
    check_table(
        &client,
        &format!("{apps}/replicasets"),
        Some("apis_apps_v1_namespaces_refcap_replicasets.json"),
        &[
            "Name",
            "Desired",
            "Current",
            "Ready",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ],
    )
    .await;
    check_table(
        &client,
        &format!("{apps}/statefulsets"),
        None,
        &["Name", "Ready", "Age", "Containers", "Images"],
    )
    .await;
    check_table(
        &client,
        &format!("{apps}/daemonsets"),
        None,
        &[
            "Name",
            "Desired",
            "Current",
            "Ready",
            "Up-to-date",
            "Available",
            "Node Selector",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ],
    )
    .await;
    check_table(
        &client,
        &format!("{batch}/jobs"),
        Some("apis_batch_v1_namespaces_refcap_jobs.json"),
        &[
            "Name",
            "Status",
            "Completions",
            "Duration",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ],
    )
    .await;
    let cronjobs = check_table(
        &client,
        &format!("{batch}/cronjobs"),
        Some("apis_batch_v1_namespaces_refcap_cronjobs.json"),
        &[
            "Name",
            "Schedule",
            "Timezone",
            "Suspend",
            "Active",
            "Last Schedule",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ],
    )
    .await;
    assert_eq!(cronjobs["rows"][0]["cells"][1], "*/5 * * * *");
    check_table(
        &client,
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        Some("apis_coordination.k8s.io_v1_namespaces_kube-node-lease_leases.json"),
        &["Name", "Holder", "Age"],
    )
    .await;
    let roles = check_table(
        &client,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
        Some("apis_rbac.authorization.k8s.io_v1_namespaces_refcap_roles.json"),
        &["Name", "Created At"],
    )
    .await;
    assert!(
        roles["rows"][0]["cells"][1]
            .as_str()
            .unwrap()
            .ends_with('Z'),
        "Created At is a timestamp"
    );
    check_table(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Some("apis_apiextensions.k8s.io_v1_customresourcedefinitions.json"),
        &["Name", "Created At"],
    )
    .await;
    let bindings = check_table(
        &client,
        "/apis/cloud.tencent.com/v1beta1/clusterbindings",
        Some("apis_cloud.tencent.com_v1beta1_clusterbindings.json"),
        &["Name", "ClusterID", "Phase", "Age"],
    )
    .await;
    assert_eq!(bindings["rows"][0]["cells"][1], "w1");

    // One object, and the other includeObject choices.
    let one = request(
        &client,
        "GET",
        &format!("{ns}/configmaps/cm1?includeObject=Object"),
        TABLE,
        None,
    )
    .await;
    assert_eq!(one.body["rows"].as_array().unwrap().len(), 1);
    assert_eq!(one.body["rows"][0]["object"]["kind"], "ConfigMap");
    assert_eq!(one.body["rows"][0]["object"]["data"]["a"], "1");
    let none = request(
        &client,
        "GET",
        &format!("{ns}/configmaps?includeObject=None"),
        TABLE,
        None,
    )
    .await;
    assert_eq!(none.body["rows"][0]["object"], Value::Null);
    let bad = request(
        &client,
        "GET",
        &format!("{ns}/configmaps?includeObject=All"),
        TABLE,
        None,
    )
    .await;
    assert_eq!(bad.status, 400);
    let paged = request(&client, "GET", "/api/v1/namespaces?limit=1", TABLE, None).await;
    assert!(paged.body["metadata"]["continue"].is_string());
    assert!(
        paged.body["metadata"]["remainingItemCount"]
            .as_i64()
            .unwrap()
            >= 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_with_as_table_stream_one_row_tables() {
    let cluster = Cluster::new("table-watch");
    let served = cluster.serve(ServeOptions::default()).await.unwrap();
    let client = served.client().await.unwrap();
    post(
        &client,
        "/api/v1/namespaces/default/configmaps",
        json!({"metadata": {"name": "cm1"}, "data": {"a": "1", "b": "2"}}),
    )
    .await;
    // Without a resourceVersion the watch starts with the current objects; the timeout ends it.
    let reply = request(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
        TABLE,
        None,
    )
    .await;
    assert_eq!(reply.status, 200);
    let text = match &reply.body {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let events: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let added = events
        .iter()
        .find(|e| e["type"] == "ADDED" && e["object"]["rows"][0]["cells"][0] == "cm1")
        .expect("an ADDED event for cm1");
    assert_eq!(added["object"]["kind"], "Table");
    assert_eq!(added["object"]["rows"][0]["cells"][1], 2);
    assert_eq!(
        added["object"]["columnDefinitions"],
        reference("tables/api_v1_namespaces_refcap_configmaps.json")["columnDefinitions"]
    );
}
