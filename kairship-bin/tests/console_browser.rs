//! The console's resource browser in a real Chromium against `kairship sandbox`: from an
//! instance's overview to its resources by group, a custom resource's objects (Karmada's
//! PropagationPolicy) with a malformed label selector shown as the API's error, an object's
//! events, owner and propagation (the sample ConfigMap's binding clusters), a Secret whose
//! value is in no page until revealed, a YAML edit refused for a conflict with another field
//! manager and then forced (the instance really holds the new value), and a delete confirmed
//! by typing the name (the object is gone). Forged POSTs are refused for every new action:
//! without the CSRF token (403 before the API is asked), and with the viewer's own session and
//! token (403), and the viewer sees no write control.
//!
//! Needs `chromium` and `chromedriver` on PATH; without them the test prints a notice and
//! passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails.
#![allow(clippy::unwrap_used)]

use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::{Value, json};

mod support;

use support::*;

const INSTANCE_NS: &str = "/instances/karmada-a/namespaces/demo/resources";
const UI: &str = "/ui/instances/karmada-a/resources";
/// The Secret's value, which no page may hold until it is revealed.
const SECRET_VALUE: &str = "s3cr3t-hunter2-value";

/// The names of the objects the list shows, in its order.
async fn object_names(browser: &Browser) -> Value {
    browser
        .script(
            "return [...document.querySelectorAll('#objects tr[data-name]')].map(r => r.dataset.name);",
            json!([]),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_browser_in_chromium() {
    let Some(fixture) = SignedIn::start("resource_browser_in_chromium", "console-browser").await
    else {
        return;
    };
    let SignedIn {
        base,
        admin,
        viewer,
        shots,
        browser,
        ..
    } = fixture;
    let http = reqwest::Client::new();

    // What the test browses, made through the REST API: a Secret; a ConfigMap applied by
    // field manager "ops"; a ConfigMap it owns; an event about it.
    let encoded = base64::engine::general_purpose::STANDARD.encode(SECRET_VALUE);
    rest_create(
        &base,
        &admin,
        &format!("{INSTANCE_NS}/core/v1/secrets"),
        json!({"metadata": {"name": "db-credentials"}, "type": "Opaque",
            "data": {"password": encoded}}),
    )
    .await;
    let settings = rest_apply(
        &base,
        &admin,
        &format!("{INSTANCE_NS}/core/v1/configmaps/settings?fieldManager=ops"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: demo\ndata:\n  mode: blue\n",
    )
    .await;
    rest_create(
        &base,
        &admin,
        &format!("{INSTANCE_NS}/core/v1/configmaps"),
        json!({"metadata": {"name": "settings-part", "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "settings",
            "uid": settings["metadata"]["uid"]}]}, "data": {"part": "1"}}),
    )
    .await;
    rest_create(
        &base,
        &admin,
        &format!("{INSTANCE_NS}/core/v1/events"),
        json!({
            "metadata": {"name": "settings.changed"},
            "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": "settings", "namespace": "demo"},
            "type": "Normal", "reason": "SettingsReviewed", "message": "mode reviewed",
            "lastTimestamp": "2026-01-01T00:00:00Z"
        }),
    )
    .await;

    // From the overview to the index, to a custom resource's objects.
    browser
        .goto(&format!("{base}/ui/instances/karmada-a"))
        .await;
    browser.click("#resources").await;
    browser.find("#resource-groups").await;
    let groups = browser.text("#resource-groups").await;
    for group in ["policy.karmada.io", "work.karmada.io", "apps", "core"] {
        assert!(groups.contains(group), "{group} missing: {groups}");
    }
    browser.screenshot(&shots, "browser-index").await;
    // Any resource the instance serves opens by group, version and plural.
    browser.type_into("#open input[name=group]", "core").await;
    browser.type_into("#open input[name=version]", "v1").await;
    browser
        .type_into("#open input[name=resource]", "ServiceAccounts")
        .await;
    browser.click("#open button").await;
    browser
        .wait_url("/ui/instances/karmada-a/resources/core/v1/serviceaccounts")
        .await;
    browser.find("#objects").await;
    browser.goto(&format!("{base}{UI}")).await;
    browser
        .click("tr[data-resource=propagationpolicies] a")
        .await;
    let table = browser
        .wait_text("#objects", |t| t.contains("demo-spread"))
        .await;
    assert!(
        table.contains("Deployment/web") && table.contains("ConfigMap/web-config"),
        "{table}"
    );
    browser.screenshot(&shots, "browser-policies").await;
    // A malformed selector is the API's error on the page (400), not a failure.
    browser.type_into("#selector", "app in (").await;
    browser.click("#apply-filter").await;
    let error = browser
        .wait_text(".error", |t| t.contains("labelSelector"))
        .await;
    assert!(error.contains("InvalidArgument"), "{error}");
    let cookie = browser.session_cookie().await.expect("a session cookie");
    let refused = http
        .get(format!(
            "{base}{UI}/policy.karmada.io/v1alpha1/propagationpolicies?selector=app%20in%20("
        ))
        .header("cookie", format!("kairship_session={cookie}"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    // Search by name and a good selector, in the namespace and in a list of namespaces.
    browser
        .goto(&format!(
            "{base}{UI}/core/v1/configmaps?ns=demo&q=Settings&selector=!nope"
        ))
        .await;
    let rows = object_names(&browser).await;
    assert_eq!(rows, json!(["settings", "settings-part"]));
    browser
        .goto(&format!(
            "{base}{UI}/core/v1/configmaps?ns=default,demo&q=Settings&sort=name&dir=desc"
        ))
        .await;
    let rows = object_names(&browser).await;
    assert_eq!(rows, json!(["settings-part", "settings"]));

    // An object's page: the policy's YAML.
    browser
        .goto(&format!(
            "{base}{UI}/policy.karmada.io/v1alpha1/propagationpolicies"
        ))
        .await;
    browser.click("tr[data-name=demo-spread] a.object").await;
    let yaml = browser.text("#yaml").await;
    assert!(yaml.contains("resourceSelectors"), "{yaml}");

    // Propagation of a ConfigMap: its binding's clusters and their status.
    browser
        .goto(&format!("{base}{UI}/core/v1/configmaps/web-config?ns=demo"))
        .await;
    browser.find("#propagation").await;
    let deadline = std::time::Instant::now() + LIMIT;
    loop {
        let placement = browser.text("#propagation").await;
        if placement.contains("a-east") && placement.contains("a-west") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "web-config is shown placed as: {placement}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        browser
            .goto(&format!("{base}{UI}/core/v1/configmaps/web-config?ns=demo"))
            .await;
    }
    let binding = browser.text("#binding").await;
    assert_eq!(binding, "web-config-configmap");
    browser.screenshot(&shots, "browser-propagation").await;

    // Owners are linked; events about the object are shown.
    browser
        .goto(&format!(
            "{base}{UI}/core/v1/configmaps/settings-part?ns=demo"
        ))
        .await;
    browser.click("#owners a").await;
    browser
        .wait_url("/core/v1/configmaps/settings?ns=demo")
        .await;
    let events = browser.text("#events").await;
    assert!(events.contains("SettingsReviewed"), "{events}");
    // A cluster-scoped owner (the namespace) is reached from a namespaced object too.
    let namespace = rest_json(
        &base,
        &admin,
        "/instances/karmada-a/resources/core/v1/namespaces/demo",
    )
    .await;
    rest_create(
        &base,
        &admin,
        &format!("{INSTANCE_NS}/core/v1/configmaps"),
        json!({"metadata": {"name": "namespace-part", "ownerReferences": [{
            "apiVersion": "v1", "kind": "Namespace", "name": "demo",
            "uid": namespace["metadata"]["uid"]}]}}),
    )
    .await;
    browser
        .goto(&format!(
            "{base}{UI}/core/v1/configmaps/namespace-part?ns=demo"
        ))
        .await;
    browser.click("#owners a").await;
    browser.wait_text("h1", |t| t == "Namespace demo").await;

    // A Secret: keys and sizes, the value in no page until revealed.
    browser
        .goto(&format!("{base}{UI}/core/v1/secrets?ns=demo"))
        .await;
    let table = browser.text("#objects").await;
    assert!(
        table.contains(&format!("password ({} bytes)", SECRET_VALUE.len())),
        "{table}"
    );
    for page in [
        format!("{base}{UI}/core/v1/secrets?ns=demo"),
        format!("{base}{UI}/core/v1/secrets/db-credentials?ns=demo"),
        format!("{base}{UI}/core/v1/secrets/db-credentials/edit?ns=demo"),
    ] {
        browser.goto(&page).await;
        browser.find("main").await;
        let source = browser.source().await;
        assert!(
            !source.contains(SECRET_VALUE) && !source.contains(&encoded),
            "{page}: {source}"
        );
    }
    browser
        .goto(&format!(
            "{base}{UI}/core/v1/secrets/db-credentials?ns=demo"
        ))
        .await;
    browser.screenshot(&shots, "browser-secret").await;
    browser.click("#reveal").await;
    let values = browser.text("#secret-values").await;
    assert!(values.contains(SECRET_VALUE), "{values}");
    // Reloading shows the page without the values again.
    browser
        .goto(&format!(
            "{base}{UI}/core/v1/secrets/db-credentials?ns=demo"
        ))
        .await;
    browser.find("#reveal").await;
    assert!(!browser.source().await.contains(SECRET_VALUE));

    // Edit as YAML: the field "ops" applied conflicts; force takes it over.
    browser
        .goto(&format!("{base}{UI}/core/v1/configmaps/settings?ns=demo"))
        .await;
    browser.click("#edit").await;
    browser.find("#apply-form").await;
    browser
        .script(
            "const t = document.querySelector('#yaml'); t.value = t.value.replace('blue', 'green');",
            json!([]),
        )
        .await;
    browser.click("#apply").await;
    let conflicts = browser.text("#conflicts").await;
    assert!(
        conflicts.contains("\"ops\"") && conflicts.contains(".data.mode"),
        "{conflicts}"
    );
    browser.screenshot(&shots, "browser-conflict").await;
    let (_, held) = rest_get(
        &base,
        &admin,
        &format!("{INSTANCE_NS}/core/v1/configmaps/settings"),
    )
    .await;
    assert_eq!(held["data"]["mode"], "blue");
    browser.click("#force").await;
    browser
        .wait_url("/core/v1/configmaps/settings?ns=demo")
        .await;
    let (_, held) = rest_get(
        &base,
        &admin,
        &format!("{INSTANCE_NS}/core/v1/configmaps/settings"),
    )
    .await;
    assert_eq!(held["data"]["mode"], "green");
    let managers: Vec<&str> = held["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(managers.contains(&"kairship-console"), "{managers:?}");
    assert!(browser.text("#yaml").await.contains("green"));

    // Forged POSTs without the CSRF token, with the admin's own session: refused, nothing done.
    let cookie = browser.session_cookie().await.expect("a session cookie");
    let object = format!("{base}{UI}/core/v1/configmaps/settings");
    let yaml = form_value(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: demo\ndata:\n  mode: forged\n",
    );
    for (url, form) in [
        (
            format!("{object}/apply?ns=demo"),
            format!("yaml={yaml}&force=true"),
        ),
        (
            format!("{object}/delete?ns=demo"),
            "confirm=settings".to_owned(),
        ),
        (
            format!("{base}{UI}/core/v1/secrets/db-credentials/reveal?ns=demo"),
            String::new(),
        ),
    ] {
        let (status, page) = post_form(&url, &cookie, &form).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{url}");
        assert!(
            page.contains("CSRF") && !page.contains(SECRET_VALUE),
            "{page}"
        );
    }
    let (_, held) = rest_get(
        &base,
        &admin,
        &format!("{INSTANCE_NS}/core/v1/configmaps/settings"),
    )
    .await;
    assert_eq!(held["data"]["mode"], "green");

    // Delete: the page names the object; a wrong name is refused; the right one deletes.
    browser.click("#delete").await;
    let what = browser.text("#delete-what").await;
    assert!(
        what.contains("ConfigMap demo/settings") && what.contains("karmada-a"),
        "{what}"
    );
    browser.screenshot(&shots, "browser-delete").await;
    browser.type_into("#confirm", "setting").await;
    browser.click("#confirm-delete").await;
    browser.wait_text(".error", |t| t.contains("confirm")).await;
    let (status, _) = rest_get(
        &base,
        &admin,
        &format!("{INSTANCE_NS}/core/v1/configmaps/settings"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    browser.type_into("#confirm", "settings").await;
    browser.click("#confirm-delete").await;
    browser.wait_url("/core/v1/configmaps?ns=demo").await;
    let (status, _) = rest_get(
        &base,
        &admin,
        &format!("{INSTANCE_NS}/core/v1/configmaps/settings"),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The viewer: no write control; its own session and CSRF token do not make a write.
    browser.sign_out().await;
    browser.sign_in(&base, &viewer).await;
    let page = format!("{base}{UI}/core/v1/configmaps/web-config?ns=demo");
    browser.goto(&page).await;
    browser.find("#yaml").await;
    assert!(
        browser
            .find_all("#edit, #delete, #apply, #confirm-delete")
            .await
            .is_empty()
    );
    browser.screenshot(&shots, "browser-viewer").await;
    let cookie = browser.session_cookie().await.expect("a session cookie");
    let csrf = browser.csrf().await;
    let object = format!("{base}{UI}/core/v1/configmaps/web-config");
    let yaml = form_value(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n  namespace: demo\ndata:\n  greeting: forged\n",
    );
    for (url, form) in [
        (
            format!("{object}/apply?ns=demo"),
            format!("yaml={yaml}&_csrf={csrf}"),
        ),
        (
            format!("{object}/apply?ns=demo"),
            format!("yaml={yaml}&force=true&_csrf={csrf}"),
        ),
        (
            format!("{object}/delete?ns=demo"),
            format!("confirm=web-config&_csrf={csrf}"),
        ),
    ] {
        let (status, page) = post_form(&url, &cookie, &form).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{url}");
        assert!(page.contains("PermissionDenied"), "{page}");
    }
    for url in [
        format!("{object}/edit?ns=demo"),
        format!("{object}/delete?ns=demo"),
    ] {
        let resp = http
            .get(&url)
            .header("cookie", format!("kairship_session={cookie}"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{url}");
    }
    // Revealing is a read, as the API allows it to whoever may read the Secret; without the
    // CSRF token even that is refused.
    let reveal = format!("{base}{UI}/core/v1/secrets/db-credentials/reveal?ns=demo");
    let (status, page) = post_form(&reveal, &cookie, "").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(!page.contains(SECRET_VALUE));
    let (rest_status, _) = rest_get(
        &base,
        &viewer,
        &format!("{INSTANCE_NS}/core/v1/secrets/db-credentials"),
    )
    .await;
    let (status, page) = post_form(&reveal, &cookie, &format!("_csrf={csrf}")).await;
    assert_eq!(status, rest_status, "reveal answers as the REST read does");
    assert_eq!(page.contains(SECRET_VALUE), rest_status == StatusCode::OK);
    let (_, held) = rest_get(
        &base,
        &admin,
        &format!("{INSTANCE_NS}/core/v1/configmaps/web-config"),
    )
    .await;
    assert_eq!(held["data"]["greeting"], "hello from Kairship");
    browser.assert_same_origin(&base).await;
    browser.quit().await;
    eprintln!("screenshots in {}", shots.display());
}
