//! The console's events page in a real Chromium against `kairship sandbox`: the Events the
//! instance's Karmada records about the sample application, filtered by object, and a
//! scheduling failure appearing on the Warning filter while the page is open (its refresh),
//! with a refused filter value shown as the API's message.
//!
//! Needs `chromium` and `chromedriver` on PATH; without them the test prints a notice and
//! passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails.
#![allow(clippy::unwrap_used)]

use serde_json::json;

mod support;

use support::*;

/// The Object column of the events table.
async fn objects(s: &SignedIn) -> Vec<String> {
    let cells = s
        .browser
        .script(
            "return [...document.querySelectorAll('#events tbody tr')].map(r => r.cells[3].textContent);",
            json!([]),
        )
        .await;
    cells
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_events_page_filters_and_follows_karmadas_events() {
    let Some(s) = SignedIn::start(
        "the_events_page_filters_and_follows_karmadas_events",
        "console-events",
    )
    .await
    else {
        return;
    };
    let page = format!("{}/ui/instances/karmada-a/events", s.base);

    // The sample Deployment `web`: the scheduler's and the binding controller's events.
    s.browser.goto(&format!("{page}?ns=demo&name=web")).await;
    let shown = s
        .browser
        .wait_text("#events-live", |t| {
            t.contains("ScheduleBindingSucceed") && t.contains("SyncWorkSucceed")
        })
        .await;
    assert!(shown.contains("default-scheduler"), "{shown}");
    let objects = objects(&s).await;
    assert!(!objects.is_empty());
    assert!(
        objects.iter().all(|o| o.ends_with("/demo/web")),
        "only events about web: {objects:?}"
    );
    s.browser.screenshot(&s.shots, "events").await;

    // Warnings only: none yet about `lost`; a policy placing it nowhere makes the scheduler
    // record one, and the open page shows it on its next refresh.
    s.browser
        .goto(&format!("{page}?ns=demo&type=Warning&name=lost"))
        .await;
    s.browser
        .wait_text("#events-live", |t| t.contains("No events match."))
        .await;
    rest_create(
        &s.base,
        &s.admin,
        "/instances/karmada-a/namespaces/demo/resources/apps/v1/deployments",
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "lost", "labels": {"app": "lost"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "lost"}},
                "template": {"metadata": {"labels": {"app": "lost"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}}),
    )
    .await;
    rest_create(
        &s.base,
        &s.admin,
        "/instances/karmada-a/namespaces/demo/resources/policy.karmada.io/v1alpha1/propagationpolicies",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "lost"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "lost"}],
                "placement": {"clusterAffinity": {"clusterNames": ["nowhere"]}}}}),
    )
    .await;
    let warned = s
        .browser
        .wait_text("#events-live", |t| t.contains("ScheduleBindingFailed"))
        .await;
    assert!(
        warned.contains("did not match the placement cluster affinity constraint"),
        "{warned}"
    );
    let types = s
        .browser
        .script(
            "return [...document.querySelectorAll('#events tbody tr')].map(r => r.cells[1].textContent);",
            json!([]),
        )
        .await;
    assert!(
        types.as_array().unwrap().iter().all(|t| t == "Warning"),
        "{types}"
    );

    // A value that would change the field selector: the API's message, nothing listed.
    s.browser
        .goto(&format!("{page}?name=web%2Creason%3Dx"))
        .await;
    let refused = s.browser.text("main").await;
    assert!(refused.contains("is not a name"), "{refused}");
    assert!(objects_empty(&s).await, "{refused}");
    s.browser.quit().await;
}

async fn objects_empty(s: &SignedIn) -> bool {
    objects(s).await.is_empty()
}
