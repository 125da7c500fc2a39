//! The console's "create from YAML" in a real Chromium against `kairship sandbox`, for any
//! kind the instance serves: a CRD is created in instance `karmada-a` with kube-rs, then a
//! custom resource of it is created from its list's **Create** link (the form prefilled with a
//! skeleton) and read back with kube-rs, exactly as written; a bare `cluster.karmada.io`
//! Cluster made from the members page's link appears in `ListClusters` and on the members
//! page (removed after); a paste of a ConfigMap and a Service creates both, each linked to its
//! page; a paste whose second document the API refuses keeps the first, shows the API's
//! message and keeps the form as sent; an unknown kind names what is near and creates nothing.
//! The viewer sees no Create control and gets a notice instead of the form, and their POST,
//! like a forged one without the CSRF token, is refused with 403.
//!
//! Needs `chromium` and `chromedriver` on PATH; without them the test prints a notice and
//! passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::{Api, Client};
use reqwest::StatusCode;
use serde_json::json;

mod support;

use support::*;

const CREATE: &str = "/ui/instances/karmada-a/create";

fn api(
    client: &Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    Api::namespaced_with(client.clone(), "demo", &resource)
}

/// Whether `api` holds `name`.
async fn holds(api: &Api<DynamicObject>, name: &str) -> bool {
    api.get_opt(name).await.unwrap().is_some()
}

/// The instance's member clusters through the REST API (`ListClusters`), by name.
async fn cluster_names(base: &str, token: &str) -> Vec<String> {
    let list = rest_json(base, token, "/instances/karmada-a/clusters").await;
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Replaces the form's YAML and presses Create.
async fn create(browser: &Browser, yaml: &str) {
    browser
        .script(
            "document.getElementById('yaml').value = arguments[0]; return null;",
            json!([yaml]),
        )
        .await;
    browser.click("#create").await;
}

/// The form's YAML as the page holds it.
async fn form_yaml(browser: &Browser) -> String {
    browser
        .script("return document.getElementById('yaml').value;", json!([]))
        .await
        .as_str()
        .unwrap()
        .to_owned()
}

/// `(text, href)` of every object the result lists as created.
async fn created(browser: &Browser) -> Vec<(String, String)> {
    let rows = browser
        .script(
            "return [...document.querySelectorAll('#created li a')]\
               .map(a => [a.innerText, a.getAttribute('href')]);",
            json!([]),
        )
        .await;
    serde_json::from_value(rows).unwrap()
}

const WIDGET: &str = "apiVersion: example.io/v1\nkind: Widget\nmetadata:\n  name: blue\n  labels:\n    team: ui\nspec:\n  size: 3\n  colors: [blue, green]\n";

const PAIR: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pair-config\ndata:\n  mode: paired\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: pair-svc\nspec:\n  selector:\n    app: pair\n  ports:\n  - port: 80\n    targetPort: 8080\n";

/// The first document is new; the second names the ConfigMap the pair created: the API
/// refuses it as AlreadyExists.
const REFUSED: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: before-refusal\ndata:\n  a: \"1\"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pair-config\ndata:\n  mode: again\n";

const UNKNOWN: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: never-made\n---\napiVersion: example.io/v1\nkind: Widgit\nmetadata:\n  name: odd\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_any_kind_from_yaml_in_chromium() {
    let Some(fixture) =
        SignedIn::start("create_any_kind_from_yaml_in_chromium", "console-create").await
    else {
        return;
    };
    let SignedIn {
        dir,
        base,
        admin,
        viewer,
        shots,
        browser,
        ..
    } = fixture;
    let http = reqwest::Client::new();
    let karmada = client_of(&dir, "karmada-a").await;

    // A CRD in the instance, made with kube-rs; the console learns of it from the instance's
    // discovery (ListApiResources), polled until the Widgets are served.
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {"group": "example.io", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .unwrap();
    Api::<CustomResourceDefinition>::all(karmada.clone())
        .create(&PostParams::default(), &crd)
        .await
        .unwrap();
    let deadline = Instant::now() + LIMIT;
    loop {
        let served = rest_json(&base, &admin, "/instances/karmada-a/apiresources").await;
        if served["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["resource"] == "widgets")
        {
            break;
        }
        assert!(Instant::now() < deadline, "widgets never served: {served}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The Widgets' list has a Create link opening the form with a skeleton of a Widget.
    browser
        .goto(&format!(
            "{base}/ui/instances/karmada-a/resources/example.io/v1/widgets?ns=demo"
        ))
        .await;
    browser.click("#create-object").await;
    browser.find("#yaml").await;
    assert_eq!(
        form_yaml(&browser).await,
        "apiVersion: example.io/v1\nkind: Widget\nmetadata:\n  name: new-widget\n  namespace: demo\n"
    );
    // The custom resource, without a namespace (the form's `demo`): its page in the resource
    // browser follows, and kube-rs reads exactly that object from the instance.
    create(&browser, WIDGET).await;
    browser
        .wait_url("/ui/instances/karmada-a/resources/example.io/v1/widgets/blue?ns=demo")
        .await;
    let widgets = api(&karmada, "example.io", "v1", "Widget", "widgets");
    let blue = widgets.get("blue").await.unwrap();
    let mut keys: Vec<&String> = blue.data.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["spec"], "{:?}", blue.data);
    assert_eq!(
        blue.data["spec"],
        json!({"size": 3, "colors": ["blue", "green"]})
    );
    assert_eq!(
        blue.metadata.labels.unwrap(),
        [("team".to_owned(), "ui".to_owned())].into()
    );
    assert_eq!(blue.metadata.namespace.as_deref(), Some("demo"));
    assert_eq!(blue.metadata.annotations.unwrap_or_default().len(), 0);

    // A bare Cluster from the members page's link: JoinCluster creates the object, the member
    // page follows, and ListClusters and the members page list it.
    browser
        .goto(&format!("{base}/ui/instances/karmada-a/members"))
        .await;
    browser.click("#create-cluster").await;
    browser.find("#yaml").await;
    assert_eq!(
        form_yaml(&browser).await,
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: new-cluster\nspec:\n  syncMode: Push\n"
    );
    create(
        &browser,
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: bare\n  labels:\n    made: console\nspec:\n  syncMode: Push\n",
    )
    .await;
    browser
        .wait_url("/ui/instances/karmada-a/members/bare")
        .await;
    assert!(
        cluster_names(&base, &admin)
            .await
            .contains(&"bare".to_owned())
    );
    browser
        .goto(&format!("{base}/ui/instances/karmada-a/members"))
        .await;
    browser.find("tr[data-cluster=bare]").await;
    let removed = http
        .delete(format!(
            "{base}{P}/instances/karmada-a/clusters/bare?force=true"
        ))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert!(
        removed.status().is_success(),
        "{}",
        removed.text().await.unwrap()
    );
    let deadline = Instant::now() + LIMIT;
    while cluster_names(&base, &admin)
        .await
        .contains(&"bare".to_owned())
    {
        assert!(
            Instant::now() < deadline,
            "the bare Cluster was never removed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Two documents: both created, in order, each linked to its page.
    let configmaps = api(&karmada, "", "v1", "ConfigMap", "configmaps");
    let services = api(&karmada, "", "v1", "Service", "services");
    browser.goto(&format!("{base}{CREATE}?ns=demo")).await;
    create(&browser, PAIR).await;
    browser
        .wait_text("#created", |t| t.contains("pair-svc"))
        .await;
    assert_eq!(
        created(&browser).await,
        [
            (
                "ConfigMap demo/pair-config".to_owned(),
                "/ui/instances/karmada-a/resources/core/v1/configmaps/pair-config?ns=demo"
                    .to_owned()
            ),
            (
                "Service demo/pair-svc".to_owned(),
                "/ui/instances/karmada-a/resources/core/v1/services/pair-svc?ns=demo".to_owned()
            ),
        ]
    );
    let pair = configmaps.get("pair-config").await.unwrap();
    assert_eq!(pair.data["data"], json!({"mode": "paired"}));
    let svc = services.get("pair-svc").await.unwrap();
    assert_eq!(svc.data["spec"]["ports"][0]["port"], 80);
    assert_eq!(svc.data["spec"]["selector"], json!({"app": "pair"}));
    // The link opens the object's page.
    browser.click("#created li a").await;
    browser
        .wait_url("/resources/core/v1/configmaps/pair-config?ns=demo")
        .await;

    // The second document refused: the first is created and listed, the API's message is
    // shown, and the form keeps what was sent.
    browser.goto(&format!("{base}{CREATE}?ns=demo")).await;
    create(&browser, REFUSED).await;
    let shown = browser
        .wait_text("#create-result .error", |t| !t.is_empty())
        .await;
    assert!(
        shown.contains("AlreadyExists") && shown.contains("pair-config"),
        "{shown}"
    );
    let which = browser.text("#refused-document").await;
    assert!(
        which.contains("document 2 of 2, ConfigMap demo/pair-config"),
        "{which}"
    );
    assert_eq!(
        created(&browser).await,
        [(
            "ConfigMap demo/before-refusal".to_owned(),
            "/ui/instances/karmada-a/resources/core/v1/configmaps/before-refusal?ns=demo"
                .to_owned()
        )]
    );
    assert_eq!(form_yaml(&browser).await, REFUSED);
    assert!(holds(&configmaps, "before-refusal").await);
    assert_eq!(
        configmaps.get("pair-config").await.unwrap().data["data"]["mode"],
        "paired",
        "the refused document changed nothing"
    );
    browser.screenshot(&shots, "create-any").await;
    // Without htmx (a plain form POST) the page comes back with the form as sent.
    let admin_cookie = browser.session_cookie().await.expect("a session cookie");
    let admin_csrf = browser.csrf().await;
    let refused_again = REFUSED.replace("before-refusal", "before-refusal-2");
    let (status, page) = post_form(
        &format!("{base}{CREATE}"),
        &admin_cookie,
        &format!(
            "namespace=demo&yaml={}&_csrf={admin_csrf}",
            form_value(&refused_again)
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{page}");
    assert!(page.contains("before-refusal-2") && page.contains("mode: again"));

    // An unknown kind: the message names what is near, and nothing is created (not even
    // the valid document before it).
    browser.goto(&format!("{base}{CREATE}?ns=demo")).await;
    create(&browser, UNKNOWN).await;
    let shown = browser
        .wait_text("#create-result .error", |t| !t.is_empty())
        .await;
    assert!(
        shown.contains(
            "document 2 of 2: kind Widgit is not served by karmada-a in example.io/v1; did you mean Widget (example.io/v1)?"
        ),
        "{shown}"
    );
    assert!(browser.find_all("#created").await.is_empty());
    assert!(!holds(&configmaps, "never-made").await);
    // A document without a kind says so.
    create(&browser, "apiVersion: v1\nmetadata:\n  name: kindless\n").await;
    browser
        .wait_text("#create-result .error", |t| t.contains("has no kind"))
        .await;

    // A Deployment the instance's API server finds invalid: its message, and each field it
    // names listed under it.
    create(
        &browser,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: negative\nspec:\n  replicas: -1\n  selector:\n    matchLabels: {app: negative}\n  template:\n    metadata:\n      labels: {app: negative}\n    spec:\n      containers: [{name: c, image: nginx}]\n",
    )
    .await;
    let violations = browser
        .wait_text("#create-result ul.violations", |t| !t.is_empty())
        .await;
    assert!(
        violations.contains("spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
        "{violations}"
    );

    // A forged POST without the CSRF token is refused before anything is created.
    let forged = form_value("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: forged\n");
    let (status, _) = post_form(
        &format!("{base}{CREATE}"),
        &admin_cookie,
        &format!("namespace=demo&yaml={forged}"),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(!holds(&configmaps, "forged").await);

    // The viewer: no Create link on the lists or the members page, a notice instead of the
    // form, and their own POST (with their session's CSRF token) refused with 403.
    browser.goto(&format!("{base}/ui/instances")).await;
    browser.sign_out().await;
    browser.sign_in(&base, &viewer).await;
    browser
        .goto(&format!(
            "{base}/ui/instances/karmada-a/resources/core/v1/configmaps?ns=demo"
        ))
        .await;
    browser.find("#filter").await;
    assert!(browser.find_all("#create-object").await.is_empty());
    browser
        .goto(&format!("{base}/ui/instances/karmada-a/members"))
        .await;
    browser.find("#members").await;
    assert!(browser.find_all("#create-cluster").await.is_empty());
    browser.goto(&format!("{base}{CREATE}?ns=demo")).await;
    browser.find(".notice").await;
    assert!(browser.find_all("#yaml, #create").await.is_empty());
    let cookie = browser.session_cookie().await.expect("a session cookie");
    let csrf = browser.csrf().await;
    let (status, page) = post_form(
        &format!("{base}{CREATE}"),
        &cookie,
        &format!("namespace=demo&yaml={forged}&_csrf={csrf}"),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
    assert!(!holds(&configmaps, "forged").await);
    browser.assert_same_origin(&base).await;
    browser.quit().await;
    eprintln!("screenshots in {}", shots.display());
}
