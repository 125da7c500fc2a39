//! The console with the keyboard only, in a real Chromium against `kairship sandbox`: every key
//! is sent as a W3C WebDriver key action to whatever has the focus (no clicks, no element
//! typed into directly). From the instance list a user tabs to an instance and opens it,
//! focuses the header's search with `/`, searches, tabs to a hit and opens it, and scales the
//! Deployment it leads to (the REST API then shows the new replicas); the skip link moves the
//! focus to the content; `?` lists the shortcuts and Esc closes them; `g r` and `g m` go to
//! the instance's resources and members, and no shortcut fires while typing in a field; a
//! delete confirmation has the focus on its field. Then the live parts: a resource list and an
//! object's page show a change made through the REST API without being reloaded (bounded
//! polling on the page's own refresh).
//!
//! Needs `chromium` and `chromedriver` on PATH; without them the test prints a notice and
//! passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;

use support::*;

const TAB: &str = "\u{E004}";
const ENTER: &str = "\u{E007}";
const ESCAPE: &str = "\u{E00C}";
const CONTROL: &str = "\u{E009}";

/// Presses and releases each key in turn, sent to the element with the focus.
async fn press(browser: &Browser, keys: &[&str]) {
    let mut actions = Vec::new();
    for key in keys {
        actions.push(json!({"type": "keyDown", "value": key}));
        actions.push(json!({"type": "keyUp", "value": key}));
    }
    browser
        .call(
            "POST",
            "/actions",
            json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]}),
        )
        .await;
    browser.call("DELETE", "/actions", Value::Null).await;
}

/// Types `text` character by character into whatever has the focus.
async fn type_keys(browser: &Browser, text: &str) {
    let chars: Vec<String> = text.chars().map(String::from).collect();
    let keys: Vec<&str> = chars.iter().map(String::as_str).collect();
    press(browser, &keys).await;
}

/// `id`, `href` and tag of the element with the focus.
async fn focused(browser: &Browser) -> Value {
    browser
        .script(
            "const e = document.activeElement; if (!e) return null; \
             return {id: e.id, href: e.getAttribute('href'), tag: e.tagName, \
                     value: e.value === undefined ? null : e.value, \
                     outline: getComputedStyle(e).outlineStyle};",
            json!([]),
        )
        .await
}

/// Presses Tab until the focused element satisfies `found` (at most 80 times), and returns it.
async fn tab_to(browser: &Browser, what: &str, found: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..80 {
        press(browser, &[TAB]).await;
        let f = focused(browser).await;
        if found(&f) {
            return f;
        }
    }
    panic!(
        "Tab never reached {what} on {}:\n{}",
        browser.url().await,
        browser.source().await
    );
}

fn href_ends(f: &Value, suffix: &str) -> bool {
    f["href"].as_str().is_some_and(|h| h.ends_with(suffix))
}

/// Waits (bounded) until `script` returns true in the page.
async fn wait_true(browser: &Browser, what: &str, script: &str, args: Value) {
    let deadline = Instant::now() + LIMIT;
    loop {
        if browser.script(script, args.clone()).await == true {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what} never happened on {}:\n{}",
            browser.url().await,
            browser.source().await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn rest_replicas(base: &str, token: &str) -> i64 {
    let deployment = rest_json(
        base,
        token,
        "/instances/karmada-a/namespaces/demo/deployments/web",
    )
    .await;
    deployment["spec"]["replicas"].as_i64().unwrap_or(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_with_the_keyboard_only() {
    let Some(fixture) = SignedIn::start("console_with_the_keyboard_only", "console-keyboard").await
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

    // The instance list, just signed in: the first Tab reaches the skip link, Enter moves the
    // focus to the content.
    browser.goto(&format!("{base}/ui/instances")).await;
    browser.find("#instances").await;
    press(&browser, &[TAB]).await;
    let skip = focused(&browser).await;
    assert_eq!(skip["id"], "skip-link", "{skip}");
    assert_eq!(skip["outline"], "solid", "a visible focus outline: {skip}");
    browser.screenshot(&shots, "keyboard-skip-link").await;
    press(&browser, &[ENTER]).await;
    assert_eq!(focused(&browser).await["id"], "main");

    // Tab from the content to the instance, Enter opens it.
    tab_to(&browser, "the karmada-a link", |f| {
        href_ends(f, "/ui/instances/karmada-a")
    })
    .await;
    press(&browser, &[ENTER]).await;
    browser.wait_url("/ui/instances/karmada-a").await;
    browser.find("#overview-live").await;

    // `?` lists the shortcuts; Esc closes the list.
    type_keys(&browser, "?").await;
    wait_true(
        &browser,
        "the shortcuts list opening",
        "return document.getElementById('shortcuts').open;",
        json!([]),
    )
    .await;
    let listed = browser.text("#shortcuts").await;
    for shortcut in [
        "focus the search box",
        "go to the resources of this instance",
    ] {
        assert!(listed.contains(shortcut), "{listed}");
    }
    browser.screenshot(&shots, "keyboard-shortcuts").await;
    press(&browser, &[ESCAPE]).await;
    wait_true(
        &browser,
        "the shortcuts list closing",
        "return !document.getElementById('shortcuts').open;",
        json!([]),
    )
    .await;

    // `/` focuses the search box; shortcuts are only letters there; Enter searches.
    type_keys(&browser, "/").await;
    assert_eq!(focused(&browser).await["id"], "search-name");
    type_keys(&browser, "gm").await;
    assert_eq!(
        focused(&browser).await["value"],
        "gm",
        "g m did not navigate"
    );
    assert!(browser.url().await.ends_with("/ui/instances/karmada-a"));
    press(&browser, &["\u{E003}", "\u{E003}"]).await;
    type_keys(&browser, "web").await;
    press(&browser, &[ENTER]).await;
    browser.wait_url("/ui/search?name=web").await;
    browser.find("#hits").await;

    // Tab to the hit in karmada-a; Enter opens the workload page.
    tab_to(&browser, "the web hit", |f| {
        href_ends(f, "/ui/instances/karmada-a/namespaces/demo/workloads/web")
    })
    .await;
    press(&browser, &[ENTER]).await;
    browser
        .wait_url("/ui/instances/karmada-a/namespaces/demo/workloads/web")
        .await;

    // Scale: Tab to the replicas field, replace the number, Enter.
    let before = rest_replicas(&base, &admin).await;
    let wanted = before + 2;
    tab_to(&browser, "the replicas field", |f| f["id"] == "replicas").await;
    // Control held while `a` is pressed: select all, then the new number replaces it.
    browser
        .call(
            "POST",
            "/actions",
            json!({"actions": [{"type": "key", "id": "keyboard", "actions": [
                {"type": "keyDown", "value": CONTROL}, {"type": "keyDown", "value": "a"},
                {"type": "keyUp", "value": "a"}, {"type": "keyUp", "value": CONTROL}]}]}),
        )
        .await;
    browser.call("DELETE", "/actions", Value::Null).await;
    type_keys(&browser, &wanted.to_string()).await;
    press(&browser, &[ENTER]).await;
    let deadline = Instant::now() + LIMIT;
    while rest_replicas(&base, &admin).await != wanted {
        assert!(
            Instant::now() < deadline,
            "the Deployment was not scaled to {wanted}:\n{}",
            browser.source().await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    browser
        .wait_text("#workload-live", |t| t.contains("Scaled to"))
        .await;
    browser.screenshot(&shots, "keyboard-scaled").await;

    // `g r` and `g m`: the resources and the members of the page's instance.
    tab_to(&browser, "a link, out of the field", |f| f["tag"] == "A").await;
    type_keys(&browser, "gr").await;
    browser.wait_url("/ui/instances/karmada-a/resources").await;
    browser.find("#resource-groups").await;
    type_keys(&browser, "gm").await;
    browser.wait_url("/ui/instances/karmada-a/members").await;
    type_keys(&browser, "gi").await;
    browser.wait_url("/ui/instances").await;

    // The live resource list: a ConfigMap made through the REST API appears in the open page,
    // which keeps its query, without a reload.
    let rest = "/instances/karmada-a/namespaces/demo/resources";
    let list =
        format!("{base}/ui/instances/karmada-a/resources/core/v1/configmaps?ns=demo&q=probe");
    browser.goto(&list).await;
    browser.find("#objects").await;
    browser.mark_document().await;
    rest_create(
        &base,
        &admin,
        &format!("{rest}/core/v1/configmaps"),
        json!({"metadata": {"name": "live-probe"}, "data": {"k": "1"}}),
    )
    .await;
    wait_true(
        &browser,
        "the new ConfigMap in the list",
        "return !!document.querySelector('#objects-live tr[data-name=\"live-probe\"]');",
        json!([]),
    )
    .await;
    assert!(browser.document_kept().await, "the list was reloaded");
    assert!(
        browser.url().await.ends_with("q=probe"),
        "the query is kept"
    );

    // The live object page: a label added through the REST API shows in its facts.
    browser
        .goto(&format!(
            "{base}/ui/instances/karmada-a/resources/core/v1/configmaps/live-probe?ns=demo"
        ))
        .await;
    browser.find("#facts").await;
    browser.mark_document().await;
    rest_apply(
        &base,
        &admin,
        &format!("{rest}/core/v1/configmaps/live-probe?fieldManager=ops"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: live-probe\n  namespace: demo\n  labels:\n    tier: live\n",
    )
    .await;
    browser
        .wait_text("#facts", |t| t.contains("tier=live"))
        .await;
    assert!(
        browser.document_kept().await,
        "the object page was reloaded"
    );
    browser.screenshot(&shots, "keyboard-live-object").await;

    // A confirmation page has the focus on its first field.
    browser
        .goto(&format!(
            "{base}/ui/instances/karmada-a/resources/core/v1/configmaps/live-probe/delete?ns=demo"
        ))
        .await;
    browser.find("#confirm").await;
    assert_eq!(focused(&browser).await["id"], "confirm");

    browser.quit().await;
}
