//! The console's member-cluster pages in a real Chromium against `kairship sandbox`: the
//! admin joins the sandbox's spare member cluster through the join page (uploading its
//! kubeconfig file) and sees it listed and Ready; an unjoin while a ResourceBinding schedules to it
//! shows the API's refusal, and the force option unjoins it; the viewer sees no join or
//! unjoin controls. Screenshots go to `$TMPDIR/kairship-console-screenshots/`.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use serde_json::json;

mod support;

use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_and_unjoin_a_member_in_chromium() {
    let Some(fixture) =
        SignedIn::start("join_and_unjoin_a_member_in_chromium", "console-members").await
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
    let kubeconfig = std::fs::read_to_string(dir.join("member-spare.kubeconfig")).unwrap();
    let members = format!("{base}/ui/instances/karmada-a/members");

    browser.goto(&members).await;
    browser.click("#join-push").await;
    browser.wait_url("/ui/instances/karmada-a/join").await;
    browser.type_into("#name", "spare").await;
    browser.type_into("#labels", "env=demo").await;
    browser.type_into("#region", "eu").await;
    // Upload the kubeconfig file: the page's script reads it into the text area.
    let kubeconfig_path = dir.join("member-spare.kubeconfig");
    browser
        .type_into("#kubeconfig-file", &kubeconfig_path.display().to_string())
        .await;
    let deadline = Instant::now() + LIMIT;
    loop {
        let value = browser
            .script(
                "return document.getElementById('kubeconfig').value;",
                json!([]),
            )
            .await;
        if value == kubeconfig.as_str() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the file never reached the text area"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    browser.screenshot(&shots, "member-join").await;
    browser.click("#join").await;
    browser.wait_url("/ui/instances/karmada-a/members").await;
    // The page never shows the kubeconfig's token.
    let token_line = kubeconfig
        .lines()
        .find(|l| l.trim_start().starts_with("token:"))
        .map(|l| l.trim().trim_start_matches("token:").trim().to_owned());
    // Listed, and Ready once the emulated cluster-status controller probed it.
    let deadline = Instant::now() + LIMIT;
    loop {
        browser.goto(&members).await;
        let state = browser
            .script(
                "const r = document.querySelector('tr[data-cluster=\"spare\"] .ready'); return r ? r.innerText : null;",
                json!([]),
            )
            .await;
        if state == "Ready" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "spare never became Ready: {state}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    if let Some(token) = token_line {
        assert!(!browser.source().await.contains(&token));
    }
    browser.screenshot(&shots, "members").await;

    // A binding still schedules to it: the unjoin shows the API's refusal.
    let http = reqwest::Client::new();
    let created = http
        .post(format!(
            "{base}{P}/instances/karmada-a/namespaces/demo/resources/work.karmada.io/v1alpha2/resourcebindings"
        ))
        .bearer_auth(&admin)
        .json(&json!({
            "metadata": {"name": "pinned-deployment"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "pinned", "namespace": "demo"},
                     "clusters": [{"name": "spare", "replicas": 1}]}
        }))
        .send()
        .await
        .unwrap();
    assert!(
        created.status().is_success(),
        "{}",
        created.text().await.unwrap()
    );
    browser.click("tr[data-cluster=\"spare\"] a.unjoin").await;
    browser.wait_url("/members/spare/unjoin").await;
    browser.click("#confirm-unjoin").await;
    let refusal = browser
        .wait_text("div.error", |t| {
            t.contains("ResourceBinding demo/pinned-deployment")
        })
        .await;
    assert!(refusal.contains("FailedPrecondition"), "{refusal}");
    browser.screenshot(&shots, "member-unjoin-refused").await;
    browser.click("#force").await;
    browser.click("#confirm-unjoin").await;
    browser.wait_url("/ui/instances/karmada-a/members").await;
    assert!(
        browser
            .find_all("tr[data-cluster=\"spare\"]")
            .await
            .is_empty()
    );

    // The viewer sees the members without any control.
    browser.click("#signout").await;
    browser.wait_url("/ui/signin").await;
    browser.sign_in(&base, &viewer).await;
    browser.goto(&members).await;
    browser.find("#members").await;
    assert!(browser.find_all("#join-push").await.is_empty());
    assert!(browser.find_all("a.unjoin").await.is_empty());
    browser.screenshot(&shots, "viewer-members").await;
    browser.quit().await;
}
