//! Kubernetes protobuf over loopback HTTP, as kubectl speaks it: create bodies of built-in
//! kinds, answers when only protobuf is accepted (objects, lists, errors, watch), and the
//! errors of bodies the server cannot read.

#![allow(clippy::unwrap_used)]

use bytes::Bytes;
use kube_sandbox::protobuf::{self, MAGIC, MEDIA_TYPE};
use kube_sandbox::{Cluster, ServeOptions, Served};
use serde_json::{Value, json};

const KUBECTL_ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

struct Answer {
    status: u16,
    content_type: String,
    warnings: Vec<String>,
    body: Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    fn protobuf(&self) -> Value {
        assert_eq!(self.content_type, MEDIA_TYPE);
        protobuf::decode_object(&self.body).unwrap()
    }
}

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    accept: &str,
    body: Vec<u8>,
) -> Answer {
    let mut req = http::Request::builder().method(method).uri(path);
    if !content_type.is_empty() {
        req = req.header("content-type", content_type);
    }
    if !accept.is_empty() {
        req = req.header("accept", accept);
    }
    let resp = client
        .send(req.body(body).unwrap().map(kube::client::Body::from))
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .map(|c| c.to_str().unwrap().to_string())
        .unwrap_or_default();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|w| w.to_str().unwrap().to_string())
        .collect();
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    Answer {
        status,
        content_type,
        warnings,
        body,
    }
}

async fn served() -> (Cluster, Served, kube::Client) {
    let cluster = Cluster::new("protobuf");
    let served = cluster.serve(ServeOptions::default()).await.unwrap();
    let client = served.client().await.unwrap();
    (cluster, served, client)
}

fn pb(value: &Value) -> Vec<u8> {
    protobuf::encode_object(value).unwrap().unwrap().to_vec()
}

/// What the server fills in on create, left out to compare two creates.
fn without_server_fields(mut value: Value) -> Value {
    let meta = value["metadata"].as_object_mut().unwrap();
    for key in [
        "name",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
        "generation",
    ] {
        meta.remove(key);
    }
    if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
        labels.remove("kubernetes.io/metadata.name");
    }
    // Cluster IPs and the like are assigned per object.
    if let Some(spec) = value.get_mut("spec").and_then(Value::as_object_mut) {
        for key in ["clusterIP", "clusterIPs"] {
            spec.remove(key);
        }
    }
    if let Some(spec) = value.pointer_mut("/spec/template/metadata/labels") {
        spec.as_object_mut()
            .unwrap()
            .remove("batch.kubernetes.io/controller-uid");
        spec.as_object_mut().unwrap().remove("controller-uid");
    }
    if let Some(selector) = value.pointer_mut("/spec/selector/matchLabels") {
        selector
            .as_object_mut()
            .unwrap()
            .remove("batch.kubernetes.io/controller-uid");
    }
    value.as_object_mut().unwrap().remove("status");
    value
}

fn objects(name: &str) -> Vec<(&'static str, Value)> {
    vec![
        (
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "x"}},
                "data": {"k": "v", "empty": ""}, "binaryData": {"b": "AAEC/w=="}}),
        ),
        (
            "/api/v1/namespaces/default/secrets",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": "Opaque",
                "data": {"bin": "AP8QgA==", "text": "aGVsbG8="}}),
        ),
        (
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "annotations": {"a": "b"}},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "30%", "maxUnavailable": 0}},
                    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                        "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
                            "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}]}],
                        "terminationGracePeriodSeconds": 0,
                        "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}]}}}}),
        ),
        (
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"team": "a"}}}),
        ),
        (
            "/api/v1/namespaces/default/services",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}, {"name": "named", "port": 81, "targetPort": "web"}]}}),
        ),
        (
            "/apis/batch/v1/namespaces/default/jobs",
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                "spec": {"completions": 3, "parallelism": 1, "backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", "true"]}]}}}}),
        ),
        (
            "/api/v1/namespaces/default/events",
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "Started",
                "firstTimestamp": "2026-01-02T03:04:05Z", "lastTimestamp": "2026-01-02T03:04:06Z",
                "eventTime": "2026-01-02T03:04:05.123456Z", "count": 2, "type": "Normal", "reportingComponent": "x", "reportingInstance": "y"}),
        ),
    ]
}

#[tokio::test]
async fn protobuf_creates_store_what_json_creates_store() {
    let (_cluster, _served, client) = served().await;
    let json_objects = objects("from-json");
    let pb_objects = objects("from-protobuf");
    for ((path, json_body), (_, pb_body)) in json_objects.iter().zip(&pb_objects) {
        let kind = json_body["kind"].as_str().unwrap();
        let by_json = send(
            &client,
            "POST",
            path,
            "application/json",
            "application/json",
            json_body.to_string().into_bytes(),
        )
        .await;
        assert_eq!(by_json.status, 201, "{kind}: {:?}", by_json.body);
        let by_pb = send(
            &client,
            "POST",
            path,
            MEDIA_TYPE,
            KUBECTL_ACCEPT,
            pb(pb_body),
        )
        .await;
        assert_eq!(by_pb.status, 201, "{kind}: {:?}", by_pb.body);
        // kubectl accepts JSON too, and JSON is what the sandbox prefers.
        assert!(by_pb.content_type.starts_with("application/json"));
        assert!(by_pb.warnings.is_empty(), "{kind}: {:?}", by_pb.warnings);
        let created = by_pb.json();
        assert_eq!(created["metadata"]["name"], "from-protobuf", "{kind}");
        let read_back = |name: &str| {
            let path = format!("{path}/{name}");
            let client = client.clone();
            async move { send(&client, "GET", &path, "", "application/json", vec![]).await }
        };
        let a = read_back("from-json").await.json();
        let b = read_back("from-protobuf").await.json();
        // Defaults derived from the name (a Job's `job-name` labels) differ by the name only.
        let a: serde_json::Value = serde_json::from_str(
            &without_server_fields(a)
                .to_string()
                .replace("from-json", "from-protobuf"),
        )
        .unwrap();
        assert_eq!(a, without_server_fields(b), "{kind}");
    }
    // Binary Secret data survives byte for byte.
    let secret = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/secrets/from-protobuf",
        "",
        "",
        vec![],
    )
    .await
    .json();
    assert_eq!(secret["data"]["bin"], "AP8QgA==");
    let event = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/events/from-protobuf",
        "",
        "",
        vec![],
    )
    .await
    .json();
    assert_eq!(event["eventTime"], "2026-01-02T03:04:05.123456Z");
    assert_eq!(event["firstTimestamp"], "2026-01-02T03:04:05Z");
}

/// Pointer fields (`*int32`, `*int64` in Go) whose zero kube-apiserver refuses: Go's encoder
/// leaves a nil pointer out, so kubectl never sends them unset as 0.
const POINTERS_INVALID_AT_ZERO: [&str; 4] = [
    "activeDeadlineSeconds",
    "progressDeadlineSeconds",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
];

/// Sets every unset scalar field of every message present to its zero value, as Go's
/// protobuf encoder writes a non-pointer field whether it was set or not.
fn zero_filled(msg: &mut prost_reflect::DynamicMessage) {
    use prost_reflect::{Kind, ReflectMessage, Value};
    for field in msg.descriptor().fields() {
        if field.is_map() || POINTERS_INVALID_AT_ZERO.contains(&field.json_name()) {
            continue;
        }
        if msg.has_field(&field) {
            match msg.get_field_mut(&field) {
                Value::Message(inner) => zero_filled(inner),
                Value::List(items) => {
                    for item in items {
                        if let Value::Message(inner) = item {
                            zero_filled(inner);
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        if field.is_list() {
            continue;
        }
        let zero = match field.kind() {
            Kind::String => Value::String(String::new()),
            Kind::Int32 => Value::I32(0),
            Kind::Int64 => Value::I64(0),
            Kind::Bool => Value::Bool(false),
            _ => continue,
        };
        msg.set_field(&field, zero);
    }
}

fn has_empty_string(value: &Value) -> bool {
    match value {
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.iter().any(has_empty_string),
        Value::Object(map) => map.values().any(has_empty_string),
        _ => false,
    }
}

#[tokio::test]
async fn bodies_with_every_go_zero_value_create_the_same_objects() {
    use prost::Message as _;
    let (_cluster, _served, client) = served().await;
    for (path, value) in objects("zeros") {
        let kind = value["kind"].as_str().unwrap();
        let api_version = value["apiVersion"].as_str().unwrap();
        let desc = protobuf::message_for(api_version, kind).unwrap();
        let mut msg = protobuf::convert::json_to_message(&desc, &value).unwrap();
        zero_filled(&mut msg);
        let body = protobuf::envelope(api_version, kind, &msg.encode_to_vec()).unwrap();
        let created = send(
            &client,
            "POST",
            path,
            MEDIA_TYPE,
            KUBECTL_ACCEPT,
            body.to_vec(),
        )
        .await;
        assert_eq!(created.status, 201, "{kind}: {:?}", created.body);
        let stored = send(&client, "GET", &format!("{path}/zeros"), "", "", vec![])
            .await
            .json();
        // `data: {"empty": ""}` is a value the object really has.
        let mut without_data = stored.clone();
        without_data.as_object_mut().unwrap().remove("data");
        assert!(!has_empty_string(&without_data), "{kind}: {stored}");
        // A namespace also carries its name label (SetDefaults_Namespace).
        let mut labels = value["metadata"]["labels"].clone();
        if kind == "Namespace" {
            labels["kubernetes.io/metadata.name"] = json!("zeros");
        }
        assert_eq!(stored["metadata"]["labels"], labels, "{kind}");
        assert_eq!(
            stored["spec"]["replicas"], value["spec"]["replicas"],
            "{kind}"
        );
        if kind == "Service" {
            assert_eq!(stored["spec"]["ports"][0]["targetPort"], 8080);
            assert!(
                stored["spec"]["ports"][0].get("nodePort").is_none(),
                "{stored}"
            );
        }
        if kind == "Deployment" {
            assert_eq!(stored["metadata"]["generation"], 1, "{stored}");
            assert_eq!(
                stored["spec"]["template"]["spec"]["containers"][0]["image"],
                "nginx:1.27"
            );
        }
    }
}

/// Bytes written field by field from the upstream field numbers, not by the server's own
/// encoder: ConfigMap{metadata(1){name(1)}, data(2){key(1), value(2)}}.
fn hand_encoded_configmap(name: &str) -> Vec<u8> {
    fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(number << 3) | 2, u8::try_from(bytes.len()).unwrap()];
        out.extend_from_slice(bytes);
        out
    }
    let meta = field(1, name.as_bytes());
    let entry = [field(1, b"k"), field(2, b"hand")].concat();
    let configmap = [field(1, &meta), field(2, &entry)].concat();
    let type_meta = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
    let unknown = [field(1, &type_meta), field(2, &configmap)].concat();
    [MAGIC, &unknown].concat()
}

#[tokio::test]
async fn answers_are_protobuf_when_only_protobuf_is_accepted() {
    let (_cluster, _served, client) = served().await;
    let path = "/api/v1/namespaces/default/configmaps";
    let created = send(
        &client,
        "POST",
        path,
        MEDIA_TYPE,
        MEDIA_TYPE,
        hand_encoded_configmap("hand"),
    )
    .await;
    assert_eq!(created.status, 201);
    let created = created.protobuf();
    assert_eq!(created["kind"], "ConfigMap");
    assert_eq!(created["data"], json!({"k": "hand"}));
    assert!(created["metadata"]["uid"].is_string());

    let got = send(
        &client,
        "GET",
        &format!("{path}/hand"),
        "",
        MEDIA_TYPE,
        vec![],
    )
    .await;
    let as_json = send(&client, "GET", &format!("{path}/hand"), "", "", vec![]).await;
    assert!(got.body.starts_with(MAGIC));
    assert_eq!(got.protobuf(), as_json.json());

    let list = send(&client, "GET", path, "", MEDIA_TYPE, vec![])
        .await
        .protobuf();
    assert_eq!(list["kind"], "ConfigMapList");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"hand"), "{names:?}");
    assert!(list["metadata"]["resourceVersion"].is_string());

    let missing = send(
        &client,
        "GET",
        &format!("{path}/nope"),
        "",
        MEDIA_TYPE,
        vec![],
    )
    .await;
    assert_eq!(missing.status, 404);
    let status = missing.protobuf();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["code"], 404);
    assert_eq!(status["details"]["name"], "nope");

    // Documents that are no API object stay JSON, as kube-apiserver serves `/version`.
    let version = send(&client, "GET", "/version", "", MEDIA_TYPE, vec![]).await;
    assert_eq!(version.status, 200);
    assert!(version.json()["gitVersion"].is_string());

    // DeleteOptions in protobuf, as client-go's typed clients send them.
    let options = pb(
        &json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background", "dryRun": ["All"]}),
    );
    let dry_run = send(
        &client,
        "DELETE",
        &format!("{path}/hand"),
        MEDIA_TYPE,
        MEDIA_TYPE,
        options,
    )
    .await;
    assert!(dry_run.status < 300, "{}", dry_run.status);
    assert_eq!(dry_run.protobuf()["metadata"]["name"], "hand");
    let still_there = send(&client, "GET", &format!("{path}/hand"), "", "", vec![]).await;
    assert_eq!(
        still_there.status, 200,
        "dryRun in the protobuf DeleteOptions was honoured"
    );

    // A watch: length-prefixed WatchEvent frames.
    let watch = send(
        &client,
        "GET",
        &format!("{path}?watch=true&timeoutSeconds=1&fieldSelector=metadata.name%3Dhand"),
        "",
        "application/vnd.kubernetes.protobuf;stream=watch",
        vec![],
    )
    .await;
    assert_eq!(watch.status, 200);
    assert_eq!(watch.content_type, protobuf::WATCH_MEDIA_TYPE);
    let len = u32::from_be_bytes(watch.body[..4].try_into().unwrap()) as usize;
    let event = protobuf::decode_watch_event(&watch.body[4..4 + len]).unwrap();
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["metadata"]["name"], "hand");
    assert_eq!(event["object"]["data"]["k"], "hand");
}

#[tokio::test]
async fn bodies_the_server_cannot_read_get_a_status() {
    let (_cluster, _served, client) = served().await;
    let path = "/api/v1/namespaces/default/configmaps";
    let good = pb(
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}),
    );
    let mut garbage = MAGIC.to_vec();
    garbage.extend_from_slice(&[0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]);
    let gizmo = protobuf::envelope("v1", "Gizmo", b"").unwrap().to_vec();
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "text/plain",
            b"hello".to_vec(),
            415,
            "accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        ),
        (
            MEDIA_TYPE,
            good[..good.len() - 12].to_vec(),
            400,
            "malformed protobuf",
        ),
        (MEDIA_TYPE, garbage, 400, "malformed protobuf"),
        (
            MEDIA_TYPE,
            b"{\"kind\": \"ConfigMap\"}".to_vec(),
            400,
            "magic prefix",
        ),
        (
            MEDIA_TYPE,
            gizmo,
            400,
            "no kind \"Gizmo\" is registered for version \"v1\"",
        ),
    ];
    for (content_type, body, code, message) in cases {
        let answer = send(&client, "POST", path, content_type, "", body).await;
        assert_eq!(answer.status, code, "{message}");
        let status = answer.json();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["code"], code);
        assert!(
            status["message"].as_str().unwrap().contains(message),
            "{status}"
        );
    }
    // A ConfigMap body sent to the secrets collection is the usual kind mismatch.
    let answer = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/secrets",
        MEDIA_TYPE,
        "",
        good.clone(),
    )
    .await;
    assert_eq!(answer.status, 400);
    // Nothing was stored by any of them.
    let list = send(&client, "GET", path, "", "", vec![]).await.json();
    assert_eq!(list["items"], json!([]));
}

const GADGET_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "gadgets.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced",
    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}
}"#;

#[tokio::test]
async fn custom_resources_have_no_protobuf() {
    let (_cluster, _served, client) = served().await;
    let crd: Value = serde_json::from_str(GADGET_CRD).unwrap();
    // A CRD itself is a built-in kind: protobuf works for it.
    let created = send(
        &client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        MEDIA_TYPE,
        KUBECTL_ACCEPT,
        pb(&crd),
    )
    .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let path = "/apis/example.com/v1/namespaces/default/gadgets";
    let gadget = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"size": 1}});
    let mut found = false;
    for _ in 0..100 {
        let list = send(&client, "GET", path, "", "", vec![]).await;
        if list.status == 200 {
            found = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(found, "the gadgets resource is served");
    let body = protobuf::envelope("example.com/v1", "Gadget", b"\x0a\x03\x0a\x01g")
        .unwrap()
        .to_vec();
    let answer = send(&client, "POST", path, MEDIA_TYPE, KUBECTL_ACCEPT, body).await;
    assert_eq!(answer.status, 415);
    let status = answer.json();
    assert_eq!(status["reason"], "UnsupportedMediaType");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .ends_with("accepted media types include: application/json, application/yaml")
    );
    // Only protobuf accepted: 406 before anything is created.
    let answer = send(
        &client,
        "POST",
        path,
        "application/json",
        MEDIA_TYPE,
        gadget.to_string().into_bytes(),
    )
    .await;
    assert_eq!(answer.status, 406);
    let status = answer.protobuf();
    assert_eq!(status["reason"], "NotAcceptable");
    let list = send(&client, "GET", path, "", "", vec![]).await.json();
    assert_eq!(list["items"], json!([]));
    // JSON and protobuf accepted: JSON.
    let answer = send(
        &client,
        "POST",
        path,
        "application/json",
        KUBECTL_ACCEPT,
        gadget.to_string().into_bytes(),
    )
    .await;
    assert_eq!(answer.status, 201);
    assert_eq!(answer.json()["spec"]["size"], 1);
}
