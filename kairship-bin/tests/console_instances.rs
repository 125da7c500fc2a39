//! Creating and deleting instances from the console in a real Chromium against
//! `kairship sandbox`: the admin adopts a third instance by pasting a kubeconfig (a bad one is
//! refused with the API's message and creates nothing) and sees it RUNNING in the list;
//! provisions one through the operator options (a bad version is refused) and sees it listed
//! with its state; deleting an instance with members shows the API's safe-delete refusal; the
//! viewer sees no create or delete control, and its forged POSTs are refused (no CSRF token:
//! 403 before the API is asked; its own token: the API's 403). Screenshots are written to
//! `$TMPDIR/kairship-console-screenshots/`.
//!
//! Needs `chromium` and `chromedriver` on PATH; without them the test prints a notice and
//! passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

mod support;

use support::*;

/// Reloads the instance list until `name`'s row shows a state `ok` accepts; returns it.
async fn wait_row_state(
    browser: &Browser,
    base: &str,
    name: &str,
    ok: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + LIMIT;
    loop {
        browser.goto(&format!("{base}/ui/instances")).await;
        browser.find("tr[data-instance]").await;
        let state = browser
            .script(
                "const r = document.querySelector(`tr[data-instance='${arguments[0]}']`);\
                 return r ? r.querySelector('td:nth-child(2)').innerText.trim() : null;",
                json!([name]),
            )
            .await;
        if let Some(s) = state.as_str()
            && ok(s)
        {
            return s.to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "{name} never showed the state expected; last: {state}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Puts `text` into the textarea `css` (as a paste does: all at once).
async fn paste(browser: &Browser, css: &str, text: &str) {
    browser.find(css).await;
    browser
        .script(
            "document.querySelector(arguments[0]).value = arguments[1];",
            json!([css, text]),
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_are_adopted_provisioned_and_deleted_from_the_console() {
    let Some(fixture) = SignedIn::start(
        "instances_are_adopted_provisioned_and_deleted_from_the_console",
        "console-instances",
    )
    .await
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
    // The sandbox writes each instance's own kubeconfig: karmada-a's is adopted once more.
    let kubeconfig = std::fs::read_to_string(dir.join("karmada-a.kubeconfig")).unwrap();
    let server_line = kubeconfig
        .lines()
        .find(|l| l.trim_start().starts_with("server:"))
        .unwrap()
        .trim()
        .to_owned();

    browser.click("#new-instance").await;
    browser.wait_url("/ui/new-instance").await;
    for form in ["#adopt-paste", "#adopt-secret", "#provision"] {
        browser.find(form).await;
    }
    browser.screenshot(&shots, "new-instance").await;

    // A pasted text that is no kubeconfig: the API's message, nothing created, not echoed.
    browser.type_into("#paste-name", "karmada-c").await;
    paste(
        &browser,
        "#kubeconfig",
        "server: https://nowhere.example\n  - [",
    )
    .await;
    browser.click("#adopt-pasted").await;
    let refused = browser.text("#adopt-paste .error").await;
    assert!(
        refused.contains("InvalidArgument") && refused.contains("kubeconfig"),
        "{refused}"
    );
    assert!(!browser.source().await.contains("nowhere.example"));
    let (status, _) = rest_get(&base, &admin, "/instances/karmada-c").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    browser.screenshot(&shots, "new-instance-refused").await;

    // The real kubeconfig: the instance page, then RUNNING in the list.
    browser.goto(&format!("{base}/ui/new-instance")).await;
    browser.type_into("#paste-name", "karmada-c").await;
    browser
        .type_into("#paste-alias", "Adopted from the console")
        .await;
    paste(&browser, "#kubeconfig", &kubeconfig).await;
    browser.click("#adopt-pasted").await;
    browser.wait_url("/ui/instances/karmada-c").await;
    assert!(!browser.source().await.contains(&server_line));
    wait_row_state(&browser, &base, "karmada-c", |s| s == "RUNNING").await;
    let (status, rest) = rest_get(&base, &admin, "/instances/karmada-c").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(rest["spec"]["mode"], "Adopt");
    assert_eq!(
        rest["spec"]["kubeconfigSecretRef"]["name"],
        "karmada-c-kubeconfig"
    );
    assert_eq!(rest["spec"]["alias"], "Adopted from the console");

    // Provision: a bad version is the API's error; then the defaults plus one component.
    browser.goto(&format!("{base}/ui/new-instance")).await;
    browser.type_into("#provision-name", "edge").await;
    let version = browser.find("#karmadaVersion").await;
    browser
        .call("POST", &format!("/element/{version}/clear"), json!({}))
        .await;
    browser.type_into("#karmadaVersion", "1.14").await;
    browser.click("#provision-submit").await;
    let refused = browser.text("#provision .error").await;
    assert!(
        refused.contains("InvalidArgument") && refused.contains("1.14"),
        "{refused}"
    );
    let (status, _) = rest_get(&base, &admin, "/instances/edge").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    browser.goto(&format!("{base}/ui/new-instance")).await;
    browser.type_into("#provision-name", "edge").await;
    browser.click("#component-karmadaSearch").await;
    browser.screenshot(&shots, "new-instance-provision").await;
    browser.click("#provision-submit").await;
    browser.wait_url("/ui/instances/edge").await;
    let (status, rest) = rest_get(&base, &admin, "/instances/edge").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        rest["spec"]["provision"],
        json!({"karmadaVersion": "v1.14.0", "hostNamespace": "edge", "components": ["karmadaSearch"]})
    );
    // Listed with the state its controllers give it (the sandbox runs no karmada-operator).
    let deadline = Instant::now() + LIMIT;
    let state = loop {
        let (_, rest) = rest_get(&base, &admin, "/instances/edge").await;
        if let Some(state) = rest["status"]["state"].as_str() {
            break state.to_owned();
        }
        assert!(Instant::now() < deadline, "edge never got a state: {rest}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    wait_row_state(&browser, &base, "edge", |s| s == state).await;
    browser.screenshot(&shots, "instances-created").await;

    // Deleting an instance whose Karmada has members: the API's safe-delete refusal.
    browser.goto(&format!("{base}/ui/instances")).await;
    browser.click("tr[data-instance=karmada-c] a.delete").await;
    browser.click("#confirm-delete").await;
    let refused = browser.text(".error").await;
    assert!(
        refused.contains("FailedPrecondition") && refused.contains("a-east, a-west"),
        "{refused}"
    );
    browser.screenshot(&shots, "delete-refused").await;
    let (status, rest) = rest_get(&base, &admin, "/instances/karmada-c").await;
    assert_eq!(status, StatusCode::OK);
    assert!(rest["metadata"]["deletionTimestamp"].is_null(), "{rest}");

    // The viewer: no create or delete controls, and forged POSTs refused.
    browser.sign_out().await;
    browser.sign_in(&base, &viewer).await;
    browser.find("tr[data-instance]").await;
    assert!(browser.find_all("#new-instance, a.delete").await.is_empty());
    browser.goto(&format!("{base}/ui/new-instance")).await;
    let denied = browser.text(".error").await;
    assert!(denied.contains("PermissionDenied"), "{denied}");
    assert!(
        browser
            .find_all("#kubeconfig, #provision-submit")
            .await
            .is_empty()
    );
    browser.screenshot(&shots, "viewer-new-instance").await;
    let cookie = browser.session_cookie().await.expect("a session cookie");
    let csrf = browser.csrf().await;
    let form = "mode=provision&name=forged&karmadaVersion=v1.14.0";
    for (body, status, says) in [
        (form.to_owned(), StatusCode::FORBIDDEN, "CSRF"),
        (
            format!("{form}&_csrf={csrf}"),
            StatusCode::FORBIDDEN,
            "PermissionDenied",
        ),
    ] {
        let (got, page) = post_form(&format!("{base}/ui/new-instance"), &cookie, &body).await;
        assert_eq!(got, status);
        assert!(page.contains(says), "{page}");
    }
    let (status, _) = post_form(
        &format!("{base}/ui/instances/edge/delete"),
        &cookie,
        &format!("_csrf={csrf}"),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = rest_get(&base, &admin, "/instances/forged").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, rest) = rest_get(&base, &admin, "/instances/edge").await;
    assert_eq!(status, StatusCode::OK);
    assert!(rest["metadata"]["deletionTimestamp"].is_null(), "{rest}");
    browser.quit().await;
    eprintln!("screenshots in {}", shots.display());
}
