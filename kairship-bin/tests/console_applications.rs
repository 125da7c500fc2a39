//! The console's create-application form and Job/CronJob buttons in a real Chromium against
//! `kairship sandbox`: the admin fills the form, previews it (a dry run: nothing is created,
//! as the REST API shows), creates it, and the REST API then shows every object with the
//! right references; the admin restarts a Job and pauses a CronJob from their pages; the
//! viewer sees no form and no buttons; forged POSTs are refused (no CSRF token: 403 before the
//! API is asked; the viewer's own token: the API's 403). Screenshots are written to
//! `$TMPDIR/kairship-console-screenshots/`.
//!
//! Needs `chromium` and `chromedriver` on PATH; without them the test prints a notice and
//! passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails.
#![allow(clippy::unwrap_used)]

use reqwest::StatusCode;
use serde_json::json;

mod support;

use support::*;

const NS_PATH: &str = "/instances/karmada-a/namespaces/demo";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_application_form_and_job_buttons_in_chromium() {
    let Some(fixture) = SignedIn::start(
        "create_application_form_and_job_buttons_in_chromium",
        "console-apps",
    )
    .await
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

    browser
        .goto(&format!("{base}/ui/instances/karmada-a"))
        .await;
    browser.click("#new-application").await;
    browser.find("#app-form").await;
    assert!(browser.url().await.contains("/applications/new?ns=demo"));
    for (field, value) in [
        ("#name", "shop"),
        ("#image", "nginx:1.27"),
        ("#replicas", "4"),
        ("#port", "80"),
        ("#target_port", "8080"),
        ("#clusters", "a-east, a-west"),
        ("#weights", "a-east=3, a-west=1"),
        ("#override_cluster_1", "a-east"),
        ("#override_image_1", "registry.example/shop/nginx:1.28"),
        ("#override_replicas_1", "3"),
        ("#override_cluster_2", "a-west"),
        ("#override_replicas_2", "1"),
    ] {
        browser.type_into(field, value).await;
    }
    browser.screenshot(&shots, "application-form").await;

    // Preview: the dry run's objects, nothing created.
    browser.click("#app-preview").await;
    browser
        .wait_text("#app-result", |t| t.contains("nothing was created"))
        .await;
    let kinds = browser
        .script(
            "return [...document.querySelectorAll('#app-objects tr[data-kind]')].map(r => r.dataset.kind);",
            json!([]),
        )
        .await;
    assert_eq!(
        kinds,
        json!([
            "Deployment",
            "Service",
            "PropagationPolicy",
            "OverridePolicy",
            "OverridePolicy"
        ])
    );
    browser.assert_same_origin(&base).await;
    browser
        .script(
            "document.getElementById('app-result').scrollIntoView(); return null;",
            json!([]),
        )
        .await;
    browser.screenshot(&shots, "application-preview").await;
    for path in [
        "deployments/shop",
        "services/shop",
        "propagationpolicies/shop",
        "overridepolicies/shop-a-east",
        "overridepolicies/shop-a-west",
    ] {
        let (status, body) = rest_get(&base, &admin, &format!("{NS_PATH}/{path}")).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "{path} after the preview: {body}"
        );
    }

    // Preview placement: where Karmada's rules put the 4 replicas (weights 3:1), the form
    // posted with its CSRF token and sent back as typed.
    browser.click("#app-placement").await;
    browser
        .wait_text("#app-result", |t| t.contains("Where Karmada would place"))
        .await;
    let placed = browser
        .script(
            "return [...document.querySelectorAll('#placement tr.chosen')].map(r => [r.dataset.cluster, r.querySelector('.replicas').textContent]);",
            json!([]),
        )
        .await;
    assert_eq!(placed, json!([["a-east", "3"], ["a-west", "1"]]));
    browser
        .script(
            "document.getElementById('app-result').scrollIntoView(); return null;",
            json!([]),
        )
        .await;
    browser.screenshot(&shots, "application-placement").await;

    // Create: the form kept what was typed.
    browser.click("#app-create").await;
    browser
        .wait_text("#app-result", |t| t.contains("Created."))
        .await;
    browser
        .script(
            "document.getElementById('app-result').scrollIntoView(); return null;",
            json!([]),
        )
        .await;
    browser.screenshot(&shots, "application-created").await;
    let (_, deployment) = rest_get(&base, &admin, &format!("{NS_PATH}/deployments/shop")).await;
    let pod_labels = deployment["spec"]["template"]["metadata"]["labels"].clone();
    assert_eq!(pod_labels, json!({"app": "shop"}), "{deployment}");
    assert_eq!(deployment["spec"]["replicas"], 4);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
    let (_, service) = rest_get(&base, &admin, &format!("{NS_PATH}/services/shop")).await;
    assert_eq!(service["spec"]["selector"], pod_labels);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], 8080);
    let (_, policy) = rest_get(
        &base,
        &admin,
        &format!("{NS_PATH}/propagationpolicies/shop"),
    )
    .await;
    assert_eq!(
        policy["spec"]["resourceSelectors"],
        json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "shop"},
               {"apiVersion": "v1", "kind": "Service", "name": "shop"}])
    );
    assert_eq!(
        policy["spec"]["placement"]["clusterAffinity"]["clusterNames"],
        json!(["a-east", "a-west"])
    );
    assert_eq!(
        policy["spec"]["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"],
        json!([{"targetCluster": {"clusterNames": ["a-east"]}, "weight": 3},
               {"targetCluster": {"clusterNames": ["a-west"]}, "weight": 1}])
    );
    for (cluster, image, replicas) in [("a-east", Some("shop/nginx"), 3), ("a-west", None, 1)] {
        let (_, op) = rest_get(
            &base,
            &admin,
            &format!("{NS_PATH}/overridepolicies/shop-{cluster}"),
        )
        .await;
        assert_eq!(
            op["spec"]["resourceSelectors"],
            json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "shop"}])
        );
        let rule = &op["spec"]["overrideRules"][0];
        assert_eq!(rule["targetCluster"]["clusterNames"], json!([cluster]));
        assert_eq!(
            rule["overriders"]["plaintext"],
            json!([{"path": "/spec/replicas", "operator": "replace", "value": replicas}])
        );
        assert_eq!(
            rule["overriders"]["imageOverrider"][1]["value"].as_str(),
            image,
            "{op}"
        );
    }

    // A Job and a CronJob, and their buttons.
    let status = rest_create(
        &base,
        &admin,
        &format!("{NS_PATH}/jobs"),
        json!({"metadata": {"name": "once"}, "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let status = rest_create(
        &base,
        &admin,
        &format!("{NS_PATH}/cronjobs"),
        json!({"metadata": {"name": "tick"}, "spec": {"schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // The sandbox runs Jobs: restart once this one has finished.
    let finished = || async {
        let (_, job) = rest_get(&base, &admin, &format!("{NS_PATH}/jobs/once")).await;
        job["status"]["active"].as_i64().unwrap_or(0) == 0
    };
    kube_sandbox::testing::wait::eventually("the job finishes", finished).await;
    let (_, old) = rest_get(&base, &admin, &format!("{NS_PATH}/jobs/once")).await;
    let old_uid = old["metadata"]["uid"].as_str().unwrap().to_owned();
    browser
        .goto(&format!("{base}/ui/instances/karmada-a"))
        .await;
    browser.click("#batch").await;
    browser.click("#jobs a").await;
    browser.click("#job-restart").await;
    browser
        .wait_text("#job-facts .uid", |t| !t.is_empty() && t != old_uid)
        .await;
    let (_, new) = rest_get(&base, &admin, &format!("{NS_PATH}/jobs/once")).await;
    assert_ne!(new["metadata"]["uid"], old_uid.as_str());
    assert_eq!(
        browser.text("#job-facts .uid").await,
        new["metadata"]["uid"].as_str().unwrap()
    );
    browser.screenshot(&shots, "job").await;
    browser
        .goto(&format!(
            "{base}/ui/instances/karmada-a/namespaces/demo/cronjobs/tick"
        ))
        .await;
    browser.click("#cronjob-pause").await;
    browser.wait_text("#cronjob-state", |t| t == "Paused").await;
    let (_, cronjob) = rest_get(&base, &admin, &format!("{NS_PATH}/cronjobs/tick")).await;
    assert_eq!(cronjob["spec"]["suspend"], true);
    browser.find("#cronjob-resume").await;
    browser.screenshot(&shots, "cronjob").await;

    // A forged POST with the admin's own cookie but no CSRF token is refused, nothing made.
    let cookie = browser.session_cookie().await.expect("a session cookie");
    let form = "kind=Deployment&name=forged&namespace=demo&image=nginx&clusters=a-east&op=create";
    let (status, _) = post_form(
        &format!("{base}/ui/instances/karmada-a/applications/new"),
        &cookie,
        form,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = rest_get(&base, &admin, &format!("{NS_PATH}/deployments/forged")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The viewer: no form, no buttons.
    browser.sign_out().await;
    browser.sign_in(&base, &viewer).await;
    browser
        .goto(&format!("{base}/ui/instances/karmada-a"))
        .await;
    browser.find("#clusters").await;
    assert!(browser.find_all("#new-application").await.is_empty());
    browser
        .goto(&format!(
            "{base}/ui/instances/karmada-a/applications/new?ns=demo"
        ))
        .await;
    browser.find(".notice").await;
    assert!(browser.find_all("#app-form, #app-create").await.is_empty());
    browser.screenshot(&shots, "viewer-application").await;
    // With the viewer's own session and CSRF token, the API refuses and says so.
    let cookie = browser.session_cookie().await.expect("a session cookie");
    let csrf = browser.csrf().await;
    let (status, page) = post_form(
        &format!("{base}/ui/instances/karmada-a/applications/new"),
        &cookie,
        &format!("{form}&_csrf={csrf}"),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(page.contains("PermissionDenied"), "{page}");
    let (status, _) = rest_get(&base, &admin, &format!("{NS_PATH}/deployments/forged")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for (page, control) in [
        ("jobs/once", "#job-restart"),
        ("cronjobs/tick", "#cronjob-resume"),
    ] {
        browser
            .goto(&format!(
                "{base}/ui/instances/karmada-a/namespaces/demo/{page}"
            ))
            .await;
        browser.find("#yaml").await;
        assert!(browser.find_all(control).await.is_empty(), "{page}");
    }
    browser.quit().await;
    eprintln!("screenshots in {}", shots.display());
}
