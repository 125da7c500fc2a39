//! The console's member-cluster pages in a real Chromium against `kairship sandbox`: the
//! admin joins the sandbox's spare member cluster through the join page (uploading its
//! kubeconfig file) and sees it listed and Ready; an unjoin while a ResourceBinding schedules to it
//! shows the API's refusal, and the force option unjoins it; the viewer sees no join or
//! unjoin controls. A member's page, its edit form and its nodes: the admin adds a label,
//! removes another and adds a taint, and the Cluster in the instance then holds exactly that;
//! a malformed label key shows the API's message with the form kept; the nodes page lists
//! the nodes the member's own API server holds; the viewer sees no edit control, and their
//! POST, like a forged one without the CSRF token, is refused. Screenshots go to
//! `$TMPDIR/kairship-console-screenshots/`.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use reqwest::StatusCode;
use serde_json::{Value, json};

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
    // Listed, and Ready once the emulated cluster-status controller probed it: the list
    // refreshes itself, the document is not reloaded.
    browser.mark_document().await;
    let deadline = Instant::now() + LIMIT;
    loop {
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
    assert!(
        browser.document_kept().await,
        "the member list was reloaded instead of refreshed"
    );
    if let Some(token) = token_line {
        assert!(!browser.source().await.contains(&token));
    }
    browser.screenshot(&shots, "members").await;

    // A binding still schedules to it: the unjoin shows the API's refusal.
    rest_create(
        &base,
        &admin,
        "/instances/karmada-a/namespaces/demo/resources/work.karmada.io/v1alpha2/resourcebindings",
        json!({
            "metadata": {"name": "pinned-deployment"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "pinned", "namespace": "demo"},
                     "clusters": [{"name": "spare", "replicas": 1}]}
        }),
    )
    .await;
    browser.click("tr[data-cluster=\"spare\"] a.unjoin").await;
    browser.wait_url("/members/spare/unjoin").await;
    // The confirmation's first field has the focus, so the keyboard starts there.
    let focused = browser
        .script(
            "return document.activeElement && document.activeElement.id;",
            json!([]),
        )
        .await;
    assert_eq!(focused, "force");
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
    browser.sign_out().await;
    browser.sign_in(&base, &viewer).await;
    browser.goto(&members).await;
    browser.find("#members").await;
    assert!(browser.find_all("#join-push").await.is_empty());
    assert!(browser.find_all("a.unjoin").await.is_empty());
    browser.screenshot(&shots, "viewer-members").await;
    browser.quit().await;
}

/// The `Cluster` `cluster` as the instance `instance` holds it.
async fn cluster_object(dir: &std::path::Path, instance: &str, cluster: &str) -> Value {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster"),
        "clusters",
    );
    let clusters: kube::Api<DynamicObject> =
        kube::Api::all_with(client_of(dir, instance).await, &resource);
    serde_json::to_value(clusters.get(cluster).await.unwrap()).unwrap()
}

fn labels_of(cluster: &Value) -> BTreeMap<String, String> {
    serde_json::from_value(cluster["metadata"]["labels"].clone()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_a_member_and_list_its_nodes_in_chromium() {
    let Some(fixture) = SignedIn::start(
        "edit_a_member_and_list_its_nodes_in_chromium",
        "console-member-edit",
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
    let ui = format!("{base}/ui/instances/karmada-a/members/a-east");

    // Two labels to start from, set through the REST API.
    let http = reqwest::Client::new();
    let set = http
        .patch(format!("{base}{P}/instances/karmada-a/clusters/a-east"))
        .bearer_auth(&admin)
        .json(&json!({"labels": {"env": "old", "team": "blue"}}))
        .send()
        .await
        .unwrap();
    assert!(set.status().is_success(), "{}", set.text().await.unwrap());
    let before = labels_of(&cluster_object(&dir, "karmada-a", "a-east").await);
    assert_eq!(before.get("env").map(String::as_str), Some("old"));

    // The member list links the member's page, which shows its facts and resource use.
    browser
        .goto(&format!("{base}/ui/instances/karmada-a/members"))
        .await;
    browser.click("tr[data-cluster=\"a-east\"] a.member").await;
    browser
        .wait_url("/ui/instances/karmada-a/members/a-east")
        .await;
    browser.wait_text("#ready", |t| t == "Ready").await;
    assert_eq!(browser.text("#mode").await, "Push");
    assert!(browser.text("#labels").await.contains("env=old"));
    assert_eq!(browser.find_all("#resources meter").await.len(), 3);
    assert!(browser.text("#conditions").await.contains("Ready"));
    browser.screenshot(&shots, "member").await;

    // Edit: remove env, add tier=gold, add a taint.
    browser.click("#edit").await;
    browser.wait_url("/members/a-east/edit").await;
    assert_eq!(browser.value_of("#label-key-0").await, "env");
    assert_eq!(browser.value_of("#label-key-1").await, "team");
    browser.click("#label-remove-0").await;
    browser.type_into("#label-key-2", "tier").await;
    browser.type_into("#label-value-2", "gold").await;
    browser.type_into("#taint-key-0", "dedicated").await;
    browser.type_into("#taint-value-0", "gpu").await;
    browser
        .click("#taint-effect-0 option[value=\"NoExecute\"]")
        .await;
    // One more taint row, added without a script, keeps what was typed.
    browser.click("#add-taint").await;
    browser.find("#taint-key-1").await;
    assert_eq!(browser.value_of("#taint-key-0").await, "dedicated");
    assert_eq!(browser.value_of("#label-key-2").await, "tier");
    browser.screenshot(&shots, "member-edit").await;
    browser.click("#save").await;
    browser
        .wait_url("/ui/instances/karmada-a/members/a-east")
        .await;
    let labels = browser
        .wait_text("#labels", |t| t.contains("tier=gold"))
        .await;
    assert!(!labels.contains("env="), "{labels}");
    assert_eq!(
        browser
            .find_all("#taints tr[data-taint=\"dedicated=gpu:NoExecute\"]")
            .await
            .len(),
        1
    );

    // The instance's Cluster holds exactly that.
    let after = cluster_object(&dir, "karmada-a", "a-east").await;
    let mut want = before.clone();
    want.remove("env");
    want.insert("tier".into(), "gold".into());
    assert_eq!(labels_of(&after), want);
    // Karmada's Cluster strategy times a NoExecute taint (`mutateClusterTaints`).
    let mut taints = after["spec"]["taints"].clone();
    let added = taints[0]["timeAdded"].take();
    assert!(
        added
            .as_str()
            .is_some_and(|t| t.parse::<jiff::Timestamp>().is_ok()),
        "{after}"
    );
    taints[0].as_object_mut().unwrap().remove("timeAdded");
    assert_eq!(
        taints,
        json!([{"key": "dedicated", "value": "gpu", "effect": "NoExecute"}])
    );

    // A malformed label key: the API's message above the form, which keeps what was sent.
    browser.goto(&format!("{ui}/edit")).await;
    browser.type_into("#label-key-2", "bad key!").await;
    browser.type_into("#region", "eu-north").await;
    // Enter in a field saves (it does not add a row).
    browser.type_into("#label-value-2", "x\u{E007}").await;
    let refusal = browser
        .wait_text("div.error", |t| t.contains("is not a valid label"))
        .await;
    assert!(refusal.contains("InvalidArgument"), "{refusal}");
    assert!(refusal.contains("bad key!"), "{refusal}");
    assert_eq!(browser.value_of("#label-key-2").await, "bad key!");
    assert_eq!(browser.value_of("#label-value-2").await, "x");
    assert_eq!(browser.value_of("#region").await, "eu-north");
    browser.screenshot(&shots, "member-edit-refused").await;
    let unchanged = cluster_object(&dir, "karmada-a", "a-east").await;
    assert_eq!(labels_of(&unchanged), want);
    assert!(unchanged["spec"].get("region").is_none());

    // The nodes page lists the nodes the member's own API server holds.
    browser.goto(&ui).await;
    browser.click("#nodes").await;
    browser.wait_url("/members/a-east/nodes").await;
    let nodes: kube::Api<Node> = kube::Api::all(client_of(&dir, "a-east").await);
    let held = nodes.list(&ListParams::default()).await.unwrap();
    assert!(!held.items.is_empty());
    let mut want_rows = Vec::new();
    for node in &held.items {
        let status = node.status.clone().unwrap_or_default();
        let ready = status
            .conditions
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        want_rows.push(json!([
            node.metadata.name.clone().unwrap(),
            if ready { "Ready" } else { "NotReady" },
            status.node_info.map(|i| i.kubelet_version).unwrap(),
            status
                .allocatable
                .as_ref()
                .and_then(|a| a.get("cpu"))
                .map(|q| q.0.clone())
                .unwrap(),
        ]));
    }
    want_rows.sort_by_key(|r| r[0].as_str().unwrap().to_owned());
    let rows = browser
        .script(
            "return [...document.querySelectorAll('#nodes tr[data-node]')].map(r => [\
               r.dataset.node, r.querySelector('.status').innerText, \
               r.querySelector('.kubelet').innerText, r.querySelector('.cpu').innerText]);",
            json!([]),
        )
        .await;
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), want_rows.len(), "{rows:?}");
    for (row, want) in rows.iter().zip(&want_rows) {
        assert_eq!(row[0], want[0]);
        assert_eq!(row[1], want[1]);
        assert_eq!(row[2], want[2]);
        // The CPU cell is "<requested> / <allocatable>".
        let cpu = row[3].as_str().unwrap();
        assert!(
            cpu.ends_with(&format!("/ {}", want[3].as_str().unwrap())),
            "{cpu} vs {want}"
        );
    }
    browser.screenshot(&shots, "member-nodes").await;

    // A forged POST without the CSRF token, with the admin's own session: refused.
    let cookie = browser.session_cookie().await.expect("a session cookie");
    let forged = "label-key-0=forged&label-value-0=yes";
    assert_eq!(
        post_form(&format!("{ui}/edit"), &cookie, forged).await.0,
        StatusCode::FORBIDDEN
    );

    // The viewer: no edit control, a notice instead of the form, and their POST refused.
    browser.sign_out().await;
    browser.sign_in(&base, &viewer).await;
    browser.goto(&ui).await;
    browser.wait_text("#ready", |t| t == "Ready").await;
    assert!(browser.find_all("#edit").await.is_empty());
    // The page is live: a change made elsewhere appears without a reload.
    let set = http
        .patch(format!("{base}{P}/instances/karmada-a/clusters/a-east"))
        .bearer_auth(&admin)
        .json(&json!({"provider": "acme"}))
        .send()
        .await
        .unwrap();
    assert!(set.status().is_success(), "{}", set.text().await.unwrap());
    browser.wait_text("#provider", |t| t == "acme").await;
    assert!(browser.url().await.ends_with("/members/a-east"));
    browser.goto(&format!("{ui}/edit")).await;
    browser
        .wait_text("div.notice", |t| {
            t.contains("may not change member clusters")
        })
        .await;
    assert!(browser.find_all("#save").await.is_empty());
    let cookie = browser.session_cookie().await.expect("a session cookie");
    let csrf = browser.csrf().await;
    assert_eq!(
        post_form(
            &format!("{ui}/edit"),
            &cookie,
            &format!("{forged}&_csrf={csrf}")
        )
        .await
        .0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        labels_of(&cluster_object(&dir, "karmada-a", "a-east").await),
        want
    );
    browser.quit().await;
}
