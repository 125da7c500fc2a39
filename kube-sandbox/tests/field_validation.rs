//! `fieldValidation` over loopback HTTP, as kube-apiserver applies it: unknown fields of a
//! built-in kind and of a custom resource, in JSON, YAML and protobuf bodies, for create,
//! update, merge patch and server-side apply, under the default (`Warn`), `Strict` and
//! `Ignore`.

#![allow(clippy::unwrap_used)]

use kube_sandbox::protobuf::{self, MAGIC, MEDIA_TYPE};
use kube_sandbox::{Cluster, ServeOptions};
use serde_json::{Value, json};

struct Answer {
    status: u16,
    warnings: Vec<String>,
    body: Value,
}

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Answer {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .header("accept", "application/json")
        .body(body)
        .unwrap();
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|w| w.to_str().unwrap().to_string())
        .collect();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    Answer {
        status,
        warnings,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

const WIDGET_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}
}"#;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    ConfigMap,
    Widget,
}

impl Kind {
    fn collection(self) -> &'static str {
        match self {
            Kind::ConfigMap => "/api/v1/namespaces/default/configmaps",
            Kind::Widget => "/apis/example.com/v1/namespaces/default/widgets",
        }
    }

    /// The object with two unknown fields, and their paths as kube-apiserver reports them.
    fn with_unknown(self, name: &str) -> (Value, [&'static str; 2]) {
        match self {
            Kind::ConfigMap => (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "bogusMeta": 1},
                    "data": {"a": "b"}, "bogusTop": true}),
                ["bogusTop", "metadata.bogusMeta"],
            ),
            Kind::Widget => (
                json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "bogusMeta": 1},
                    "spec": {"size": 3, "bogus": 1}}),
                ["metadata.bogusMeta", "spec.bogus"],
            ),
        }
    }

    fn clean(self, name: &str) -> Value {
        match self {
            Kind::ConfigMap => {
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}})
            }
            Kind::Widget => {
                json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": 3}})
            }
        }
    }

    /// A merge patch adding the two unknown fields.
    fn patch(self) -> Value {
        match self {
            Kind::ConfigMap => json!({"metadata": {"bogusMeta": 1}, "bogusTop": true}),
            Kind::Widget => json!({"metadata": {"bogusMeta": 1}, "spec": {"bogus": 1}}),
        }
    }
}

/// A YAML document of a JSON object (block style, as people write it).
fn yaml(value: &Value) -> String {
    fn write(value: &Value, indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        if let Value::Object(map) = value {
            for (k, v) in map {
                match v {
                    Value::Object(_) => {
                        out.push_str(&format!("{pad}{k}:\n"));
                        write(v, indent + 2, out);
                    }
                    scalar => out.push_str(&format!("{pad}{k}: {scalar}\n")),
                }
            }
        }
    }
    let mut out = String::new();
    write(value, 0, &mut out);
    out
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Body {
    Json,
    Yaml,
}

fn encode(body: Body, value: &Value) -> (&'static str, Vec<u8>) {
    match body {
        Body::Json => ("application/json", value.to_string().into_bytes()),
        Body::Yaml => ("application/yaml", yaml(value).into_bytes()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Create(Body),
    Update(Body),
    MergePatch,
    Apply,
}

#[tokio::test]
async fn unknown_fields_warn_fail_or_vanish_as_the_mode_says() {
    let cluster = Cluster::new("fields");
    let served = cluster.serve(ServeOptions::default()).await.unwrap();
    let client = served.client().await.unwrap();
    let crd = send(
        &client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        WIDGET_CRD.as_bytes().to_vec(),
    )
    .await;
    assert_eq!(crd.status, 201);
    for _ in 0..100 {
        let list = send(&client, "GET", Kind::Widget.collection(), "", vec![]).await;
        if list.status == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    let ops = [
        Op::Create(Body::Json),
        Op::Create(Body::Yaml),
        Op::Update(Body::Json),
        Op::Update(Body::Yaml),
        Op::MergePatch,
        Op::Apply,
    ];
    let mut n = 0;
    for kind in [Kind::ConfigMap, Kind::Widget] {
        for op in ops {
            for mode in [None, Some("Warn"), Some("Strict"), Some("Ignore")] {
                n += 1;
                let name = format!("o{n}");
                let case = format!("{kind:?} {op:?} {mode:?}");
                let query = match mode {
                    Some(m) => format!("?fieldValidation={m}"),
                    None => String::new(),
                };
                let (full, paths) = kind.with_unknown(&name);
                let item = format!("{}/{name}", kind.collection());
                if !matches!(op, Op::Create(_)) {
                    let created = send(
                        &client,
                        "POST",
                        kind.collection(),
                        "application/json",
                        kind.clean(&name).to_string().into_bytes(),
                    )
                    .await;
                    assert_eq!(created.status, 201, "{case}");
                }
                let answer = match op {
                    Op::Create(body) => {
                        let (ct, bytes) = encode(body, &full);
                        send(
                            &client,
                            "POST",
                            &format!("{}{query}", kind.collection()),
                            ct,
                            bytes,
                        )
                        .await
                    }
                    Op::Update(body) => {
                        let (ct, bytes) = encode(body, &full);
                        send(&client, "PUT", &format!("{item}{query}"), ct, bytes).await
                    }
                    Op::MergePatch => {
                        send(
                            &client,
                            "PATCH",
                            &format!("{item}{query}"),
                            "application/merge-patch+json",
                            kind.patch().to_string().into_bytes(),
                        )
                        .await
                    }
                    Op::Apply => {
                        let sep = if query.is_empty() { '?' } else { '&' };
                        send(
                            &client,
                            "PATCH",
                            &format!("{item}{query}{sep}fieldManager=test"),
                            "application/apply-patch+yaml",
                            yaml(&full).into_bytes(),
                        )
                        .await
                    }
                };
                match mode {
                    Some("Strict") => {
                        assert_eq!(answer.status, 400, "{case}: {}", answer.body);
                        assert_eq!(answer.body["reason"], "BadRequest", "{case}");
                        let message = answer.body["message"].as_str().unwrap();
                        for path in paths {
                            let named = if op == Op::Apply {
                                format!(".{path}: field not declared in schema")
                            } else {
                                format!("unknown field \"{path}\"")
                            };
                            assert!(message.contains(&named), "{case}: {message}");
                        }
                        if op != Op::Apply {
                            let k = match kind {
                                Kind::ConfigMap => "ConfigMap",
                                Kind::Widget => "Widget",
                            };
                            assert!(
                                message.starts_with(&format!(
                                    "{k} in version \"v1\" cannot be handled as a {k}: strict decoding error: "
                                )),
                                "{case}: {message}"
                            );
                        }
                    }
                    _ => {
                        assert!(answer.status < 300, "{case}: {}", answer.body);
                        let want: Vec<String> = if mode == Some("Ignore") {
                            vec![]
                        } else {
                            paths
                                .iter()
                                .map(|p| format!("299 - \"unknown field \\\"{p}\\\"\""))
                                .collect()
                        };
                        assert_eq!(answer.warnings, want, "{case}");
                    }
                }
                // Whatever happened, no unknown field is stored.
                let stored = send(&client, "GET", &item, "", vec![]).await;
                if stored.status == 200 {
                    let text = stored.body.to_string();
                    assert!(!text.contains("bogus"), "{case}: {text}");
                } else {
                    assert_eq!(mode, Some("Strict"), "{case}");
                    assert!(matches!(op, Op::Create(_)), "{case}");
                }
            }
        }
    }
}

/// A protobuf body names fields by number: one the schema lacks is dropped, in every mode,
/// as kube-apiserver's protobuf decoder drops it.
#[tokio::test]
async fn protobuf_bodies_lose_unknown_field_numbers_in_every_mode() {
    let cluster = Cluster::new("fields-protobuf");
    let served = cluster.serve(ServeOptions::default()).await.unwrap();
    let client = served.client().await.unwrap();
    for (i, mode) in [
        "",
        "?fieldValidation=Warn",
        "?fieldValidation=Strict",
        "?fieldValidation=Ignore",
    ]
    .iter()
    .enumerate()
    {
        let name = format!("p{i}");
        // ConfigMap{metadata(1){name(1)}, data(2){"a": "b"}, field 99 = 1}.
        let meta = [&[0x0a, name.len() as u8][..], name.as_bytes()].concat();
        let entry = [0x0a, 0x01, b'a', 0x12, 0x01, b'b'];
        let configmap = [
            &[0x0a, meta.len() as u8][..],
            &meta,
            &[0x12, entry.len() as u8],
            &entry,
            &[0x98, 0x06, 0x01],
        ]
        .concat();
        let type_meta = [&[0x0a, 0x02][..], b"v1", &[0x12, 0x09], b"ConfigMap"].concat();
        let unknown = [
            &[0x0a, type_meta.len() as u8][..],
            &type_meta,
            &[0x12, configmap.len() as u8],
            &configmap,
        ]
        .concat();
        let body = [MAGIC, &unknown].concat();
        let answer = send(
            &client,
            "POST",
            &format!("/api/v1/namespaces/default/configmaps{mode}"),
            MEDIA_TYPE,
            body,
        )
        .await;
        assert_eq!(answer.status, 201, "{mode}: {}", answer.body);
        assert!(answer.warnings.is_empty(), "{mode}");
        assert_eq!(answer.body["data"], json!({"a": "b"}));
        // And the same object written through the server's encoder reads the same.
        let again =
            protobuf::decode_object(&protobuf::encode_object(&answer.body).unwrap().unwrap())
                .unwrap();
        assert_eq!(again["data"], json!({"a": "b"}));
    }
}

/// A JSON object naming a field twice: the last one is kept, with a warning by default and a
/// 400 under `Strict`.
#[tokio::test]
async fn duplicate_json_fields_warn_or_fail() {
    let cluster = Cluster::new("fields-duplicates");
    let served = cluster.serve(ServeOptions::default()).await.unwrap();
    let client = served.client().await.unwrap();
    let body = |name: &str| {
        format!(
            r#"{{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {{"name": "{name}", "name": "{name}"}}, "data": {{"a": "first"}}, "data": {{"a": "last"}}}}"#
        )
        .into_bytes()
    };
    let path = "/api/v1/namespaces/default/configmaps";
    let warned = send(&client, "POST", path, "application/json", body("d1")).await;
    assert_eq!(warned.status, 201, "{}", warned.body);
    assert_eq!(
        warned.warnings,
        [
            "299 - \"duplicate field \\\"metadata.name\\\"\"",
            "299 - \"duplicate field \\\"data\\\"\""
        ]
    );
    assert_eq!(warned.body["data"]["a"], "last");
    let strict = send(
        &client,
        "POST",
        &format!("{path}?fieldValidation=Strict"),
        "application/json",
        body("d2"),
    )
    .await;
    assert_eq!(strict.status, 400);
    assert_eq!(
        strict.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"metadata.name\", duplicate field \"data\""
    );
    let ignored = send(
        &client,
        "POST",
        &format!("{path}?fieldValidation=Ignore"),
        "application/json",
        body("d3"),
    )
    .await;
    assert_eq!(ignored.status, 201);
    assert!(ignored.warnings.is_empty());
}
