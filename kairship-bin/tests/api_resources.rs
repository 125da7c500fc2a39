//! What an instance serves (`ListApiResources`) against `kairship sandbox`, over real HTTP:
//! REST and gRPC answer the same list, and it is the instance's own discovery (read here from
//! the instance directly, through its legacy documents `/api`, `/apis` and each group version);
//! a CRD created in the instance is listed within seconds, without a restart, and its objects
//! can be read by the viewer; who may not read an instance is refused (403 /
//! `PermissionDenied`); the commands of docs/kairship/api.md's "What an instance serves" run as
//! written (the port aside) with curl and jq and print what the page says. In Chromium, the
//! console's resource index lists the instance's groups, shows a CRD created while the page is
//! open (its groups refresh every 5 s), filters, and opens the new resource.
//!
//! curl and jq, chromium and chromedriver are found on PATH; without them the tests that need
//! them print a notice and pass, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kairship_core::grpc::pb;
use kube::Client;
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{
    LIMIT, P, SignedIn, client_of, curl_and_jq_or_skip, free_port, run_bash, sh_block_after,
    start_sandbox,
};

const INSTANCE: &str = "karmada-a";

/// A group version (`group`, `version`, whether it is preferred) and its resources by plural.
type GroupVersion = ((String, String, bool), BTreeMap<String, Value>);
type Discovered = Vec<GroupVersion>;

/// `GET path` of the REST API as `token`: status and body.
async fn rest(
    http: &reqwest::Client,
    base: &str,
    token: Option<&str>,
    path: &str,
) -> (StatusCode, Value) {
    let mut req = http.get(format!("{base}{P}{path}"));
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// `ListApiResources` over gRPC as `token`.
async fn grpc_list(
    base: &str,
    token: &str,
    instance: &str,
) -> Result<pb::ApiResourceList, tonic::Status> {
    let channel = tonic::transport::Endpoint::from_shared(base.to_owned())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = pb::kairship_service_client::KairshipServiceClient::new(channel);
    let mut request = tonic::Request::new(pb::ListApiResourcesRequest {
        instance: instance.to_owned(),
    });
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    client
        .list_api_resources(request)
        .await
        .map(|r| r.into_inner())
}

/// One resource as compared: verbs, short names, categories and subresources sorted.
fn summary(r: &Value) -> Value {
    let sorted = |v: &Value| {
        let mut list: Vec<String> = v
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        list.sort();
        json!(list)
    };
    json!({
        "kind": r["kind"], "namespaced": r["namespaced"], "singular": r["singular"],
        "verbs": sorted(&r["verbs"]), "shortNames": sorted(&r["shortNames"]),
        "categories": sorted(&r["categories"]), "subresources": sorted(&r["subresources"]),
    })
}

/// The instance's discovery read directly from its legacy documents: the group versions in
/// order (core first, then `/apis`'s groups, each preferred version first) with whether each
/// is preferred, and each group version's resources by plural.
async fn legacy_discovery(client: &Client) -> Discovered {
    async fn get(client: &Client, path: &str) -> Value {
        let req = http::Request::get(path).body(Vec::new()).unwrap();
        serde_json::from_str(&client.request_text(req).await.unwrap()).unwrap()
    }
    let mut versions: Vec<(String, String, bool, String)> = Vec::new();
    let core = get(client, "/api").await;
    for (i, v) in core["versions"].as_array().unwrap().iter().enumerate() {
        let v = v.as_str().unwrap();
        versions.push(("core".into(), v.into(), i == 0, format!("/api/{v}")));
    }
    let apis = get(client, "/apis").await;
    for g in apis["groups"].as_array().unwrap() {
        let name = g["name"].as_str().unwrap();
        let preferred = g["preferredVersion"]["version"].as_str().unwrap();
        let mut listed: Vec<&str> = vec![preferred];
        for v in g["versions"].as_array().unwrap() {
            let v = v["version"].as_str().unwrap();
            if !listed.contains(&v) {
                listed.push(v);
            }
        }
        for v in listed {
            versions.push((
                name.into(),
                v.into(),
                v == preferred,
                format!("/apis/{name}/{v}"),
            ));
        }
    }
    let mut out = Vec::new();
    for (group, version, preferred, path) in versions {
        let list = get(client, &path).await;
        let mut resources: BTreeMap<String, Value> = BTreeMap::new();
        let entries = list["resources"].as_array().unwrap();
        for r in entries
            .iter()
            .filter(|r| !r["name"].as_str().unwrap().contains('/'))
        {
            let plural = r["name"].as_str().unwrap();
            let subresources: Vec<&str> = entries
                .iter()
                .filter_map(|s| {
                    s["name"]
                        .as_str()
                        .unwrap()
                        .strip_prefix(&format!("{plural}/"))
                })
                .collect();
            let mut r = r.clone();
            r["subresources"] = json!(subresources);
            r["singular"] = r["singularName"].clone();
            resources.insert(plural.to_owned(), summary(&r));
        }
        out.push(((group, version, preferred), resources));
    }
    out
}

/// The answer of `ListApiResources` in the same shape as [`legacy_discovery`].
fn by_group_version(answer: &Value) -> Discovered {
    let mut out: Discovered = Vec::new();
    for r in answer["items"].as_array().unwrap() {
        let key = (
            r["group"].as_str().unwrap().to_owned(),
            r["version"].as_str().unwrap().to_owned(),
            r["preferred"].as_bool().unwrap(),
        );
        if out.last().map(|(k, _)| k) != Some(&key) {
            out.push((key.clone(), BTreeMap::new()));
        }
        let resources = &mut out.last_mut().unwrap().1;
        resources.insert(r["resource"].as_str().unwrap().to_owned(), summary(r));
    }
    out
}

fn crd(group: &str, plural: &str, kind: &str, short: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind,
                      "shortNames": [short], "categories": ["all"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}
    })
}

/// Polls `ListApiResources` as `token` until `plural` is listed; its entry.
async fn await_listed(http: &reqwest::Client, base: &str, token: &str, plural: &str) -> Value {
    let deadline = Instant::now() + LIMIT;
    loop {
        let (status, answer) = rest(
            http,
            base,
            Some(token),
            &format!("/instances/{INSTANCE}/apiresources"),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        if let Some(found) = answer["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == plural)
        {
            return found.clone();
        }
        assert!(Instant::now() < deadline, "{plural} never listed: {answer}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_resources_are_the_instance_discovery_over_rest_and_grpc() {
    kube_kit::client::install_crypto_provider();
    let dir = std::env::temp_dir().join(format!("kairship-apiresources-{}", std::process::id()));
    let port = free_port();
    let sandbox = start_sandbox(&dir, port, &[]);
    let base = format!("http://127.0.0.1:{port}");
    let admin = std::fs::read_to_string(dir.join("admin.token")).unwrap();
    let viewer = std::fs::read_to_string(dir.join("viewer.token")).unwrap();
    let http = reqwest::Client::new();
    let path = format!("/instances/{INSTANCE}/apiresources");

    // The list is the instance's discovery: every group version in its order, each resource
    // with its kind, scope, verbs, names and subresources.
    let (status, answer) = rest(&http, &base, Some(&admin), &path).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let instance = client_of(&dir, INSTANCE).await;
    let served = legacy_discovery(&instance).await;
    let listed = by_group_version(&answer);
    let keys = |l: &[GroupVersion]| -> Vec<(String, String, bool)> {
        l.iter().map(|(k, _)| k.clone()).collect()
    };
    assert_eq!(keys(&listed), keys(&served));
    for ((key, mine), (_, theirs)) in listed.iter().zip(&served) {
        assert_eq!(mine, theirs, "{key:?}");
    }
    // Karmada's own groups are there, as this instance serves them.
    for group in ["policy.karmada.io", "work.karmada.io", "cluster.karmada.io"] {
        assert!(
            listed.iter().any(|((g, _, _), _)| g == group),
            "{group}: {:?}",
            keys(&listed)
        );
    }

    // gRPC answers the same list.
    let grpc = grpc_list(&base, &admin, INSTANCE).await.unwrap();
    let grpc = kairship_core::grpc::resources::api_resource_list_from_pb(grpc);
    assert_eq!(serde_json::to_value(&grpc).unwrap(), answer);

    // A CRD created in the instance is listed within seconds, and its objects can be read.
    let (status, made) = {
        let resp = http
            .post(format!("{base}{P}/instances/{INSTANCE}/resources/apiextensions.k8s.io/v1/customresourcedefinitions"))
            .bearer_auth(&admin)
            .json(&crd("example.io", "widgets", "Widget", "wd"))
            .send()
            .await
            .unwrap();
        (resp.status(), resp.json::<Value>().await.unwrap())
    };
    assert_eq!(status, StatusCode::OK, "{made}");
    let widgets = await_listed(&http, &base, &viewer, "widgets").await;
    assert_eq!(
        (
            &widgets["group"],
            &widgets["version"],
            &widgets["kind"],
            &widgets["namespaced"],
            &widgets["preferred"]
        ),
        (
            &json!("example.io"),
            &json!("v1"),
            &json!("Widget"),
            &json!(true),
            &json!(true)
        ),
        "{widgets}"
    );
    assert_eq!(
        (&widgets["shortNames"], &widgets["categories"]),
        (&json!(["wd"]), &json!(["all"]))
    );
    assert!(
        widgets["verbs"]
            .as_array()
            .unwrap()
            .contains(&json!("list")),
        "{widgets}"
    );
    let made = http
        .post(format!(
            "{base}{P}/instances/{INSTANCE}/namespaces/demo/resources/example.io/v1/widgets"
        ))
        .bearer_auth(&admin)
        .json(&json!({"metadata": {"name": "w1"}, "spec": {"size": 3}}))
        .send()
        .await
        .unwrap();
    assert!(made.status().is_success(), "{}", made.text().await.unwrap());
    let (status, objects) = rest(
        &http,
        &base,
        Some(&viewer),
        &format!("/instances/{INSTANCE}/namespaces/demo/resources/example.io/v1/widgets"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{objects}");
    assert_eq!(objects["items"][0]["spec"]["size"], 3, "{objects}");
    // Both transports still agree, the CRD included.
    let (_, answer) = rest(&http, &base, Some(&viewer), &path).await;
    let grpc = kairship_core::grpc::resources::api_resource_list_from_pb(
        grpc_list(&base, &viewer, INSTANCE).await.unwrap(),
    );
    assert_eq!(serde_json::to_value(&grpc).unwrap(), answer);

    // Who may not read the instance is refused; no token, no list; no such instance.
    let (status, refused) = rest(
        &http,
        &base,
        Some(&viewer),
        "/instances/karmada-b/apiresources",
    )
    .await;
    assert_eq!(
        (status, &refused["code"]),
        (StatusCode::FORBIDDEN, &json!(7)),
        "{refused}"
    );
    let grpc = grpc_list(&base, &viewer, "karmada-b").await.unwrap_err();
    assert_eq!(grpc.code(), tonic::Code::PermissionDenied, "{grpc:?}");
    assert_eq!(grpc.message(), refused["message"].as_str().unwrap());
    let (status, _) = rest(&http, &base, None, &path).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, missing) = rest(
        &http,
        &base,
        Some(&admin),
        "/instances/nowhere/apiresources",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
    drop(sandbox);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_resources_commands_of_the_docs_print_what_the_docs_say() {
    const TEST: &str = "api_resources_commands_of_the_docs_print_what_the_docs_say";
    if !curl_and_jq_or_skip(TEST) {
        return;
    }
    let work =
        std::env::temp_dir().join(format!("kairship-apiresources-docs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let port = free_port();
    let sandbox = start_sandbox(&work.join("kairship-sandbox"), port, &[]);
    let commands = sh_block_after(
        include_str!("../../docs/kairship/api.md"),
        "### What an instance serves",
        port,
    );
    let out = run_bash(&commands, &work, None);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "controllerrevisions\tControllerRevision\t",
            "daemonsets\tDaemonSet\tds",
            "deployments\tDeployment\tdeploy",
            "replicasets\tReplicaSet\trs",
            "statefulsets\tStatefulSet\tsts",
            "policy.karmada.io/v1alpha1 PropagationPolicy true",
            "example.com/v1 Backup bk",
            "403",
        ],
        "{out}"
    );
    drop(sandbox);
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_index_in_chromium_follows_the_instance_discovery() {
    let Some(fixture) = SignedIn::start(
        "resource_index_in_chromium_follows_the_instance_discovery",
        "console-index",
    )
    .await
    else {
        return;
    };
    let SignedIn {
        base,
        admin,
        shots,
        browser,
        ..
    } = fixture;
    let http = reqwest::Client::new();
    let ui = format!("{base}/ui/instances/{INSTANCE}/resources");
    browser.goto(&ui).await;
    let groups = browser.text("#resource-groups").await;
    // Built-in groups people browse first, Karmada's after the custom resources' place.
    let at = |needle: &str| {
        groups
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} missing: {groups}"))
    };
    assert!(
        at("Kubernetes") < at("apps") && at("apps") < at("Karmada"),
        "{groups}"
    );
    assert!(at("Karmada") < at("policy.karmada.io"), "{groups}");
    // Only what can be listed: bindings (create only) are not offered.
    assert!(
        browser
            .find_all("tr[data-resource=bindings]")
            .await
            .is_empty()
    );

    // A CRD created while the page is open appears there without a reload.
    let made = http
        .post(format!("{base}{P}/instances/{INSTANCE}/resources/apiextensions.k8s.io/v1/customresourcedefinitions"))
        .bearer_auth(&admin)
        .json(&crd("example.io", "gadgets", "Gadget", "gd"))
        .send()
        .await
        .unwrap();
    assert!(made.status().is_success(), "{}", made.text().await.unwrap());
    let text = browser
        .wait_text("#section-custom", |t| t.contains("Custom resources"))
        .await;
    assert!(text.contains("Custom resources"), "{text}");
    browser.find("tr[data-resource=gadgets]").await;
    // The filter narrows the groups to what matches (a short name here).
    browser.type_into("#resource-q", "gd").await;
    browser.click("#resource-filter button").await;
    let deadline = Instant::now() + LIMIT;
    loop {
        let rows = browser.find_all("#resource-groups tr[data-resource]").await;
        if rows.len() == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the filter left {} rows",
            rows.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    browser.screenshot(&shots, "browser-index-filter").await;
    // It opens from the index.
    browser.click("tr[data-resource=gadgets] a").await;
    browser
        .wait_url(&format!(
            "/ui/instances/{INSTANCE}/resources/example.io/v1/gadgets"
        ))
        .await;
    let table = browser.text("#objects").await;
    assert!(table.contains("No objects match."), "{table}");
    browser.quit().await;
}
