//! The console's member views in a real Chromium against `kairship sandbox`: the workload page
//! lists the pods of each member cluster (name, cluster, phase, node, restarts) as the member
//! clusters themselves hold them (read with each member's own kubeconfig), and shows events;
//! the overview shows the instance's recent events.
//!
//! Needs `chromium` and `chromedriver` on PATH; without them the test prints a notice and
//! passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

mod support;

use support::*;

/// Whether the page shows exactly what the members hold, every pod running on a node.
fn settled(held: &BTreeSet<Vec<String>>, rows: &BTreeSet<Vec<String>>) -> bool {
    let running = held.iter().all(|p| p[2] == "Running" && !p[3].is_empty());
    running && held.len() == 3 && rows == held
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workload_page_shows_the_pods_of_each_member_cluster() {
    let Some((chromium, chromedriver)) =
        browser_or_skip("the_workload_page_shows_the_pods_of_each_member_cluster")
    else {
        return;
    };
    kube_kit::client::install_crypto_provider();
    let tmp = std::env::temp_dir();
    let dir = tmp.join(format!("kairship-console-views-{}", std::process::id()));
    let shots = tmp.join("kairship-console-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let port = free_port();
    let _sandbox = start_sandbox(&dir, port, &[]);
    let base = format!("http://127.0.0.1:{port}");
    let admin = std::fs::read_to_string(dir.join("admin.token")).unwrap();

    // An event about Deployment web, as a controller of the instance would record it.
    rest_create(
        &base,
        &admin,
        "/instances/karmada-a/namespaces/demo/resources/core/v1/events",
        json!({
            "metadata": {"name": "web.scaled"},
            "involvedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "demo"},
            "type": "Normal", "reason": "ScalingReplicaSet", "message": "Scaled up replica set web to 3",
            "lastTimestamp": "2026-01-01T00:00:00Z"
        }),
    )
    .await;

    let browser = Browser::start(&chromium, &chromedriver).await;
    browser.sign_in(&base, &admin).await;
    let page = format!("{base}/ui/instances/karmada-a/namespaces/demo/workloads/web");
    // The members start the pods; the page is read again until it shows what they hold,
    // with every pod running on a node.
    let deadline = Instant::now() + LIMIT;
    let (held, rows) = loop {
        browser.goto(&page).await;
        browser.find("#pods").await;
        let held = pods_held(&dir, &["a-east", "a-west"], "web").await;
        let rows = pods_shown(&browser).await;
        if settled(&held, &rows) {
            break (held, rows);
        }
        assert!(
            Instant::now() < deadline,
            "the page shows {rows:?}, the members hold {held:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    // web's 3 replicas are divided 2 + 1 over the two members; with equal weights Karmada gives
    // the odd replica to one or the other as the template's uid decides
    // (pkg/util/helper/binding.go tieBreakerByUID).
    let east = rows.iter().filter(|r| r[0] == "a-east").count();
    let west = rows.iter().filter(|r| r[0] == "a-west").count();
    let mut split = [east, west];
    split.sort_unstable();
    assert_eq!((split, rows.len()), ([1, 2], 3), "{held:?}");
    let restarts = browser
        .script(
            "return [...document.querySelectorAll('#pods td.restarts')].map(c => c.textContent);",
            json!([]),
        )
        .await;
    assert_eq!(restarts, json!(["0", "0", "0"]));
    let events = browser.text("#events").await;
    assert!(
        // The 10 newest: the one recorded above, or Karmada's own about the template.
        events.contains("Deployment/web")
            && (events.contains("ScalingReplicaSet") || events.contains("SyncWorkSucceed")),
        "{events}"
    );
    browser.screenshot(&shots, "workload-pods").await;

    // Live: a pod deleted in a member is replaced there, and the page shows the replacement
    // without being reloaded.
    let gone = rows.iter().find(|r| r[0] == "a-west").unwrap()[1].clone();
    let west: kube::Api<Pod> = kube::Api::namespaced(client_of(&dir, "a-west").await, "demo");
    west.delete(&gone, &Default::default()).await.unwrap();
    let deadline = Instant::now() + LIMIT;
    loop {
        let held = pods_held(&dir, &["a-east", "a-west"], "web").await;
        let rows = pods_shown(&browser).await;
        if settled(&held, &rows) && !rows.iter().any(|r| r[1] == gone) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the page shows {rows:?}, the members hold {held:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // The overview shows the instance's recent events.
    browser
        .goto(&format!("{base}/ui/instances/karmada-a"))
        .await;
    // The newest are Karmada's own, as in a real instance (e.g. `SyncWorkSucceed`, on the
    // template and on its binding).
    browser
        .wait_text("#events", |t| {
            t.contains("Sync work of ResourceBinding(demo/web-deployment) successful.")
                || t.contains("Update ResourceBinding(demo/web-deployment) with AggregatedStatus successfully.")
        })
        .await;
    browser.assert_same_origin(&base).await;
    browser.quit().await;
}
