//! An instance's edit page in a real Chromium against `kairship sandbox`: from the overview of
//! `karmada-a` the admin follows **Edit**, changes the display name and the deletion policy
//! and saves; the Instance on the host (read with kube-rs) then holds exactly those changes,
//! with an annotation and a label set outside the form kept. An annotation added elsewhere
//! (kube-rs) while a form is open is kept by its save; a form opened before a change made
//! elsewhere to what it shows (the display name) is refused on save with the API's message
//! above the form as sent;
//! a deletion policy the API does not know and, on a provisioned instance, a malformed Karmada
//! version show the API's message; the provisioning settings are edited with the new-instance
//! form's fields while the host namespace, not offered, is kept. The overview's **Delete**
//! reaches the confirmation page. POSTs without or with a wrong CSRF token, and the viewer's
//! own, are refused with 403 and change nothing, and the viewer sees neither Edit nor Delete.
//! Screenshots go to `$TMPDIR/kairship-console-screenshots/`.
//!
//! Needs `chromium` and `chromedriver` on PATH; without them the test prints a notice and
//! passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use reqwest::StatusCode;
use serde_json::{Value, json};

mod support;

use support::*;

/// The host's Instances, as kube-rs reads them with the sandbox's `host.kubeconfig`.
async fn host_instances(dir: &Path) -> kube::Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kairship.io", "v1alpha1", "Instance"),
        "instances",
    );
    kube::Api::all_with(client_of(dir, "host").await, &resource)
}

/// What a user may change of an Instance and what must stay: its spec, labels and
/// annotations (the status and the resourceVersion move on their own).
async fn held(instances: &kube::Api<DynamicObject>, name: &str) -> Value {
    let object = serde_json::to_value(instances.get(name).await.unwrap()).unwrap();
    json!({
        "spec": object["spec"],
        "labels": object["metadata"]["labels"],
        "annotations": object["metadata"]["annotations"],
    })
}

/// Replaces the text of the input `css`.
async fn retype(browser: &Browser, css: &str, text: &str) {
    let e = browser.find(css).await;
    browser
        .call("POST", &format!("/element/{e}/clear"), json!({}))
        .await;
    browser.type_into(css, text).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_an_instance_in_chromium() {
    let Some(fixture) =
        SignedIn::start("edit_an_instance_in_chromium", "console-instance-edit").await
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
    let instances = host_instances(&dir).await;
    let overview = format!("{base}/ui/instances/karmada-a");
    let edit = format!("{overview}/edit");

    // Set outside the form: an annotation and a label.
    instances
        .patch(
            "karmada-a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {
                "annotations": {"example.com/owner": "platform"},
                "labels": {"tier": "gold"}}})),
        )
        .await
        .unwrap();
    let before = held(&instances, "karmada-a").await;
    assert_eq!(before["spec"]["mode"], "Adopt");
    assert_eq!(before["spec"]["deletionPolicy"], "Retain");

    // The overview's Edit opens the form filled from the stored Instance.
    browser.goto(&overview).await;
    browser.click("#edit-instance").await;
    browser.wait_url("/ui/instances/karmada-a/edit").await;
    assert_eq!(browser.text("#mode").await, "Adopt");
    assert_eq!(browser.value_of("#alias").await, "");
    assert_eq!(browser.value_of("#deletionPolicy").await, "Retain");
    assert_eq!(
        browser.value_of("#secretName").await,
        before["spec"]["kubeconfigSecretRef"]["name"]
    );
    assert_eq!(browser.value_of("#secretKey").await, "kubeconfig");
    browser.type_into("#alias", "Karmada A (Europe)").await;
    browser
        .click("#deletionPolicy option[value=\"Delete\"]")
        .await;
    browser.screenshot(&shots, "instance-edit").await;
    browser.click("#save").await;
    browser.wait_url("/ui/instances/karmada-a").await;
    assert_eq!(browser.text("#alias").await, "Karmada A (Europe)");
    assert_eq!(browser.text("#deletion-policy").await, "Delete");

    // Exactly those two fields changed.
    let after = held(&instances, "karmada-a").await;
    let mut want = before.clone();
    want["spec"]["alias"] = json!("Karmada A (Europe)");
    want["spec"]["deletionPolicy"] = json!("Delete");
    assert_eq!(after, want);

    // A change made meanwhile to what the form does not show (an annotation): the save goes
    // through, and keeps it.
    browser.goto(&edit).await;
    assert_eq!(browser.value_of("#alias").await, "Karmada A (Europe)");
    instances
        .patch(
            "karmada-a",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"example.com/changed": "meanwhile"}}}),
            ),
        )
        .await
        .unwrap();
    let mut want = held(&instances, "karmada-a").await;
    retype(&browser, "#alias", "Karmada A").await;
    browser.click("#save").await;
    browser.wait_url("/ui/instances/karmada-a").await;
    want["spec"]["alias"] = json!("Karmada A");
    assert_eq!(held(&instances, "karmada-a").await, want);

    // A form made stale by a change in between to what it shows: refused, shown above the
    // form as sent.
    browser.goto(&edit).await;
    assert_eq!(browser.value_of("#alias").await, "Karmada A");
    instances
        .patch(
            "karmada-a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"alias": "Renamed meanwhile"}})),
        )
        .await
        .unwrap();
    let changed_meanwhile = held(&instances, "karmada-a").await;
    retype(&browser, "#alias", "Stale edit").await;
    browser.click("#save").await;
    let refusal = browser
        .wait_text("div.error", |t| t.contains("modified"))
        .await;
    assert!(refusal.contains("FailedPrecondition"), "{refusal}");
    assert!(
        browser
            .url()
            .await
            .ends_with("/ui/instances/karmada-a/edit")
    );
    assert_eq!(browser.value_of("#alias").await, "Stale edit");
    browser.screenshot(&shots, "instance-edit-stale").await;
    assert_eq!(held(&instances, "karmada-a").await, changed_meanwhile);

    // A deletion policy the API does not know: its message, nothing changed.
    browser.goto(&edit).await;
    browser
        .script(
            "const o = document.querySelector('#deletionPolicy option[value=Retain]');\
             o.value = 'Sometimes'; o.selected = true;",
            json!([]),
        )
        .await;
    browser.click("#save").await;
    let refusal = browser
        .wait_text("div.error", |t| t.contains("Sometimes"))
        .await;
    assert!(refusal.contains("InvalidArgument"), "{refusal}");
    assert_eq!(held(&instances, "karmada-a").await, changed_meanwhile);

    // A provisioned instance: its provisioning settings, the host namespace kept.
    rest_create(
        &base,
        &admin,
        "/instances",
        json!({"apiVersion": "kairship.io/v1alpha1", "kind": "Instance",
            "metadata": {"name": "edge", "annotations": {"example.com/owner": "edge-team"}},
            "spec": {"mode": "Provision", "deletionPolicy": "Retain",
                "provision": {"karmadaVersion": "v1.14.0", "hostNamespace": "karmada-edge",
                    "components": ["karmadaSearch"], "featureGates": {"Failover": true}}}}),
    )
    .await;
    // Its controllers first add their finalizer and a state: a form opened before that would
    // be stale.
    let deadline = std::time::Instant::now() + LIMIT;
    loop {
        let edge = serde_json::to_value(instances.get("edge").await.unwrap()).unwrap();
        let protected = edge["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == "kairship.io/instance-protection"));
        if protected && edge["status"]["state"].is_string() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "edge never got its finalizer and a state: {edge}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let provisioned = held(&instances, "edge").await;
    let edge_edit = format!("{base}/ui/instances/edge/edit");
    browser.goto(&edge_edit).await;
    assert_eq!(browser.text("#host-namespace").await, "karmada-edge");
    assert_eq!(browser.value_of("#karmadaVersion").await, "v1.14.0");
    assert_eq!(browser.value_of("#featureGates").await, "Failover=true");
    retype(&browser, "#karmadaVersion", "1.15").await;
    browser.click("#save").await;
    let refusal = browser.wait_text("div.error", |t| t.contains("1.15")).await;
    assert!(
        refusal.contains("InvalidArgument") && refusal.contains("vMAJOR.MINOR.PATCH"),
        "{refusal}"
    );
    assert_eq!(browser.value_of("#karmadaVersion").await, "1.15");
    browser.screenshot(&shots, "instance-edit-refused").await;
    assert_eq!(held(&instances, "edge").await, provisioned);
    browser.goto(&edge_edit).await;
    retype(&browser, "#karmadaVersion", "v1.15.0").await;
    browser.click("#component-karmadaDescheduler").await;
    retype(&browser, "#imageTags", "etcd=3.5.16-0").await;
    browser.click("#save").await;
    browser.wait_url("/ui/instances/edge").await;
    let mut want = provisioned.clone();
    want["spec"]["provision"]["karmadaVersion"] = json!("v1.15.0");
    want["spec"]["provision"]["components"] = json!(["karmadaDescheduler", "karmadaSearch"]);
    want["spec"]["provision"]["imageTags"] = json!({"etcd": "3.5.16-0"});
    assert_eq!(held(&instances, "edge").await, want);

    // The overview's Delete reaches the confirmation page (nothing is deleted here).
    browser.goto(&overview).await;
    browser.click("#delete-instance").await;
    browser.wait_url("/ui/instances/karmada-a/delete").await;
    browser.find("#confirm-delete").await;

    // Forged POSTs: no CSRF token, a wrong one.
    let cookie = browser.session_cookie().await.expect("a session cookie");
    let version = instances
        .get("karmada-a")
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let forged = format!(
        "alias=forged&deletionPolicy=Retain&secretNamespace=kairship-system&secretName=forged&resource_version={version}"
    );
    for body in [forged.clone(), format!("{forged}&_csrf=not-the-token")] {
        let (status, page) = post_form(&edit, &cookie, &body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
        assert!(page.contains("CSRF"), "{page}");
    }
    assert_eq!(held(&instances, "karmada-a").await, changed_meanwhile);

    // The viewer: neither Edit nor Delete, a notice instead of the form, their POST refused.
    browser.sign_out().await;
    browser.sign_in(&base, &viewer).await;
    browser.goto(&overview).await;
    browser.find("#members").await;
    assert!(
        browser
            .find_all("#edit-instance, #delete-instance")
            .await
            .is_empty()
    );
    browser.goto(&edit).await;
    browser
        .wait_text("div.notice", |t| t.contains("may not change this instance"))
        .await;
    assert!(browser.find_all("#save, #alias").await.is_empty());
    browser.screenshot(&shots, "viewer-instance-edit").await;
    let cookie = browser.session_cookie().await.expect("a session cookie");
    let csrf = browser.csrf().await;
    let (status, page) = post_form(&edit, &cookie, &format!("{forged}&_csrf={csrf}")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
    assert!(page.contains("PermissionDenied"), "{page}");
    assert_eq!(held(&instances, "karmada-a").await, changed_meanwhile);
    browser.quit().await;
    eprintln!("screenshots in {}", shots.display());
}
