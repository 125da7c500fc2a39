//! The workload pages of StatefulSets, DaemonSets and Jobs in a real Chromium against `kairship
//! sandbox`: a StatefulSet and a DaemonSet propagated to the two members of `karmada-a` show
//! each member's status and pods as the members themselves hold them (read with each member's
//! own kubeconfig); the placement picture carries the ResourceBinding's numbers, and draws a
//! cluster the policy could use that got no replica as an empty bar; the StatefulSet is scaled
//! and the DaemonSet restarted through their pages (seen in Karmada through the REST API); the
//! resource browser's rows lead to these pages; forged POSTs and the viewer's are refused, and
//! the viewer sees no action control. A Job divided over both members: the namespace's Jobs
//! list follows its completions without a reload, and its page shows each member's active,
//! succeeded and failed pods as the member's Job counts them.
//!
//! Needs `chromium` and `chromedriver` on PATH; without them the test prints a notice and
//! passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{DaemonSet, StatefulSet};
use reqwest::StatusCode;
use serde_json::{Value, json};

mod support;

use support::*;

const MEMBERS: [&str; 2] = ["a-east", "a-west"];
/// The instance's namespaced REST resources of `demo`.
const DEMO: &str = "/instances/karmada-a/namespaces/demo";
/// The console's pages of `demo`.
const PAGES: &str = "/ui/instances/karmada-a/namespaces/demo";

fn labelled(kind: &str, name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["selector"] = json!({"matchLabels": {"app": name}});
    spec["template"] = json!({
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": name, "image": "nginx:1.27"}]}
    });
    json!({"apiVersion": "apps/v1", "kind": kind,
        "metadata": {"name": name, "namespace": "demo", "labels": {"app": name}},
        "spec": spec})
}

fn rows_of(value: Value) -> Vec<Vec<String>> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .collect()
}

/// The page's per-cluster table: cluster -> the text of each cell of class `classes`, a
/// number shown as `–` (not reported) read as 0.
async fn clusters_shown(browser: &Browser, classes: &[&str]) -> BTreeMap<String, Vec<String>> {
    let rows = browser
        .script(
            "return [...document.querySelectorAll('#workload-clusters tr[data-cluster]')].map(r =>\
               [r.dataset.cluster].concat(arguments[0].map(c => {\
                 const cell = r.querySelector('td.' + c); return cell ? cell.textContent : null; })));",
            json!([classes]),
        )
        .await;
    rows_of(rows)
        .into_iter()
        .map(|mut r| {
            let cluster = r.remove(0);
            let numbers = r
                .into_iter()
                .map(|n| if n == "–" { "0".to_owned() } else { n })
                .collect();
            (cluster, numbers)
        })
        .collect()
}

/// The placement picture's bars: cluster -> (scheduled, ready, placed, title).
async fn bars_shown(browser: &Browser) -> BTreeMap<String, Vec<String>> {
    let rows = browser
        .script(
            "return [...document.querySelectorAll('#placement-picture g[data-cluster]')].map(g =>\
               [g.dataset.cluster, g.dataset.scheduled, g.dataset.ready, g.dataset.placed,\
                g.querySelector('title').textContent]);",
            json!([]),
        )
        .await;
    rows_of(rows)
        .into_iter()
        .map(|mut r| (r.remove(0), r))
        .collect()
}

/// What the binding says of each cluster: cluster -> (scheduled, ready) as the picture draws
/// them (`ready` read from the member's status by `ready_field`; a DaemonSet's scheduled is
/// its member's `desiredNumberScheduled`).
fn bars_of_binding(binding: &Value, ready_field: &str) -> BTreeMap<String, (String, String)> {
    let mut out = BTreeMap::new();
    let aggregated = binding["status"]["aggregatedStatus"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for c in binding["spec"]["clusters"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap().to_owned();
        let status = aggregated
            .iter()
            .find(|a| a["clusterName"] == name.as_str())
            .map(|a| a["status"].clone())
            .unwrap_or(Value::Null);
        let scheduled = if ready_field == "numberReady" {
            status["desiredNumberScheduled"].as_i64()
        } else {
            c["replicas"].as_i64()
        };
        let show = |n: Option<i64>| n.map(|n| n.to_string()).unwrap_or_default();
        out.insert(name, (show(scheduled), show(status[ready_field].as_i64())));
    }
    out
}

/// Waits until the page at `url` shows what `held` reads from the members (the per-cluster
/// cells of `classes`) and the pods of `app` they run, every one running on a node. The page
/// refreshes its own parts.
async fn until_page_shows<F, Fut>(
    browser: &Browser,
    dir: &std::path::Path,
    (url, app): (&str, &str),
    classes: &[&str],
    held: F,
) where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<BTreeMap<String, Vec<String>>>>,
{
    let deadline = Instant::now() + LIMIT;
    browser.goto(url).await;
    browser.find("#pods").await;
    loop {
        let members = held().await;
        let shown = clusters_shown(browser, classes).await;
        let pods = pods_held(dir, &MEMBERS, app).await;
        let pods_page = pods_shown(browser).await;
        let running =
            !pods.is_empty() && pods.iter().all(|p| p[2] == "Running" && !p[3].is_empty());
        if members.as_ref() == Some(&shown) && running && pods == pods_page {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{url} shows {shown:?} and pods {pods_page:?}; the members hold {members:?} and {pods:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statefulset_and_daemonset_pages_in_chromium() {
    let Some(s) = SignedIn::start(
        "statefulset_and_daemonset_pages_in_chromium",
        "console-workloads",
    )
    .await
    else {
        return;
    };
    let (base, admin, browser, dir) = (&s.base, &s.admin, &s.browser, &s.dir);

    // A StatefulSet of 3 replicas, one of 1 and a DaemonSet, divided over both members.
    let objects = format!("{DEMO}/resources/apps/v1");
    rest_create(
        base,
        admin,
        &format!("{objects}/statefulsets"),
        labelled(
            "StatefulSet",
            "db",
            json!({"replicas": 3, "serviceName": "db"}),
        ),
    )
    .await;
    rest_create(
        base,
        admin,
        &format!("{objects}/statefulsets"),
        labelled(
            "StatefulSet",
            "solo",
            json!({"replicas": 1, "serviceName": "solo"}),
        ),
    )
    .await;
    rest_create(
        base,
        admin,
        &format!("{objects}/daemonsets"),
        labelled("DaemonSet", "agent", json!({})),
    )
    .await;
    rest_create(
        base,
        admin,
        &format!("{DEMO}/propagationpolicies"),
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "kinds", "namespace": "demo"},
            "spec": {
                "resourceSelectors": [
                    {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
                    {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "solo"},
                    {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent"}],
                "placement": {
                    "clusterAffinity": {"clusterNames": MEMBERS},
                    "replicaScheduling": {"replicaSchedulingType": "Divided",
                        "replicaDivisionPreference": "Weighted"}}}}),
    )
    .await;

    // The StatefulSet: each member's replicas, ready, current and updated as the member has
    // them, and its pods.
    let db_page = format!("{base}{PAGES}/statefulsets/db");
    let statefulset_classes = ["replicas", "ready", "current", "updated"];
    until_page_shows(
        browser,
        dir,
        (&db_page, "db"),
        &statefulset_classes,
        || async {
            let mut out = BTreeMap::new();
            for member in MEMBERS {
                let sets: kube::Api<StatefulSet> =
                    kube::Api::namespaced(client_of(dir, member).await, "demo");
                let Ok(set) = sets.get("db").await else {
                    return None;
                };
                let st = set.status.unwrap_or_default();
                let want = set.spec.and_then(|s| s.replicas).unwrap_or(1);
                if st.ready_replicas.unwrap_or(0) != want {
                    return None;
                }
                let n = |v: Option<i32>| v.unwrap_or(0).to_string();
                out.insert(
                    member.to_owned(),
                    vec![
                        st.replicas.to_string(),
                        n(st.ready_replicas),
                        n(st.current_replicas),
                        n(st.updated_replicas),
                    ],
                );
            }
            Some(out)
        },
    )
    .await;
    let pods = pods_shown(browser).await;
    assert_eq!(pods.len(), 3, "{pods:?}");
    assert_eq!(browser.text("#policy").await, "demo/kinds");

    // The placement picture: the binding's replicas per cluster, and the ready ones.
    let binding_path = format!("{DEMO}/resources/work.karmada.io/v1alpha2/resourcebindings");
    let deadline = Instant::now() + LIMIT;
    loop {
        let (_, binding) = rest_get(base, admin, &format!("{binding_path}/db-statefulset")).await;
        let want = bars_of_binding(&binding, "readyReplicas");
        let bars = bars_shown(browser).await;
        let drawn: BTreeMap<String, (String, String)> = bars
            .iter()
            .map(|(c, b)| (c.clone(), (b[0].clone(), b[1].clone())))
            .collect();
        if drawn == want {
            for (cluster, b) in &bars {
                let (scheduled, ready) = &want[cluster];
                assert_eq!(b[2], "true");
                assert!(
                    b[3].starts_with(&format!("{cluster}: {ready} of {scheduled} ready")),
                    "{b:?}"
                );
            }
            let total: i64 = want.values().map(|(s, _)| s.parse::<i64>().unwrap()).sum();
            assert_eq!(total, 3, "{want:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the picture draws {drawn:?}, the binding says {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    browser.screenshot(&s.shots, "workload-statefulset").await;

    // The resource browser's object page draws the same picture; its list row leads here.
    browser
        .goto(&format!(
            "{base}/ui/instances/karmada-a/resources/apps/v1/statefulsets?ns=demo"
        ))
        .await;
    browser.click("tr[data-name=db] a.workload-page").await;
    browser.wait_url("/namespaces/demo/statefulsets/db").await;
    browser
        .goto(&format!(
            "{base}/ui/instances/karmada-a/resources/apps/v1/statefulsets/db?ns=demo"
        ))
        .await;
    browser.find("#propagation #placement-picture").await;
    let (_, binding) = rest_get(base, admin, &format!("{binding_path}/db-statefulset")).await;
    let want = bars_of_binding(&binding, "readyReplicas");
    let drawn: BTreeMap<String, (String, String)> = bars_shown(browser)
        .await
        .into_iter()
        .map(|(c, b)| (c, (b[0].clone(), b[1].clone())))
        .collect();
    assert_eq!(drawn, want);

    // One replica goes to one member: the other, which the policy could use, is drawn empty.
    browser
        .goto(&format!("{base}{PAGES}/statefulsets/solo"))
        .await;
    let deadline = Instant::now() + LIMIT;
    let (given, empty) = loop {
        let bars = bars_shown(browser).await;
        let given: Vec<&String> = bars
            .iter()
            .filter(|(_, b)| b[2] == "true")
            .map(|(c, _)| c)
            .collect();
        let empty: Vec<&String> = bars
            .iter()
            .filter(|(_, b)| b[2] == "false")
            .map(|(c, _)| c)
            .collect();
        if given.len() == 1 && empty.len() == 1 {
            break (given[0].clone(), empty[0].clone());
        }
        assert!(Instant::now() < deadline, "the picture of solo: {bars:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let (_, binding) = rest_get(base, admin, &format!("{binding_path}/solo-statefulset")).await;
    let scheduled: Vec<&str> = binding["spec"]["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(scheduled, [given.as_str()]);
    let mut both = [given, empty];
    both.sort();
    assert_eq!(both, MEMBERS);
    let picture = browser.find("#placement-picture").await;
    let png = browser
        .call(
            "GET",
            &format!("/element/{picture}/screenshot"),
            Value::Null,
        )
        .await;
    use base64::Engine as _;
    std::fs::write(
        s.shots.join("placement-picture.png"),
        base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap())
            .unwrap(),
    )
    .unwrap();

    // The DaemonSet: each member's desired, current, ready, updated and available nodes.
    let agent_page = format!("{base}{PAGES}/daemonsets/agent");
    let daemonset_classes = ["desired", "current", "ready", "updated", "available"];
    until_page_shows(
        browser,
        dir,
        (&agent_page, "agent"),
        &daemonset_classes,
        || async {
            let mut out = BTreeMap::new();
            for member in MEMBERS {
                let sets: kube::Api<DaemonSet> =
                    kube::Api::namespaced(client_of(dir, member).await, "demo");
                let Ok(set) = sets.get("agent").await else {
                    return None;
                };
                let st = set.status.unwrap_or_default();
                if st.desired_number_scheduled == 0
                    || st.number_ready != st.desired_number_scheduled
                {
                    return None;
                }
                let n = |v: Option<i32>| v.unwrap_or(0).to_string();
                out.insert(
                    member.to_owned(),
                    vec![
                        st.desired_number_scheduled.to_string(),
                        st.current_number_scheduled.to_string(),
                        st.number_ready.to_string(),
                        n(st.updated_number_scheduled),
                        n(st.number_available),
                    ],
                );
            }
            Some(out)
        },
    )
    .await;
    // One pod per node: 3 on a-east, 2 on a-west.
    let pods = pods_shown(browser).await;
    let on = |m: &str| pods.iter().filter(|p| p[0] == m).count();
    assert_eq!((on("a-east"), on("a-west")), (3, 2), "{pods:?}");
    let (_, binding) = rest_get(base, admin, &format!("{binding_path}/agent-daemonset")).await;
    let want = bars_of_binding(&binding, "numberReady");
    let deadline = Instant::now() + LIMIT;
    loop {
        let drawn: BTreeMap<String, (String, String)> = bars_shown(browser)
            .await
            .into_iter()
            .map(|(c, b)| (c, (b[0].clone(), b[1].clone())))
            .collect();
        if drawn == want {
            break;
        }
        assert!(Instant::now() < deadline, "drawn {drawn:?}, bound {want:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    browser.screenshot(&s.shots, "workload-daemonset").await;

    // Forged POSTs (the admin's session, no CSRF token): refused before anything is done.
    let cookie = browser.session_cookie().await.expect("a session cookie");
    for url in [format!("{db_page}/scale"), format!("{agent_page}/restart")] {
        let (status, page) = post_form(&url, &cookie, "replicas=7").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{url}");
        assert!(page.contains("CSRF"), "{page}");
    }
    let (_, agent) = rest_get(base, admin, &format!("{objects}/daemonsets/agent")).await;
    assert!(
        agent["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
            .is_null(),
        "{agent}"
    );

    // Restart the DaemonSet through its page: the template annotation, in Karmada.
    browser.click("#action-restart").await;
    let restarted = browser.wait_text("#restarted-at", |t| t != "never").await;
    let (_, agent) = rest_get(base, admin, &format!("{objects}/daemonsets/agent")).await;
    assert_eq!(
        agent["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"],
        restarted.as_str()
    );

    // Scale the StatefulSet through its page: spec.replicas in Karmada.
    browser.goto(&db_page).await;
    browser.find("#action-scale").await;
    browser
        .script(
            "document.querySelector('#replicas').value = '4';",
            json!([]),
        )
        .await;
    browser.click("#action-scale").await;
    let scaled = || async {
        let (_, db) = rest_get(base, admin, &format!("{objects}/statefulsets/db")).await;
        db["spec"]["replicas"] == 4
    };
    kube_sandbox::testing::wait::eventually("the StatefulSet is scaled to 4", scaled).await;
    browser.wait_text("#ready", |t| t.ends_with("/4")).await;

    // A Job divided over both members: the namespace's Jobs list follows its completions
    // without a reload, and its page shows each member's counts as the member holds them.
    rest_create(
        base,
        admin,
        &format!("{DEMO}/resources/batch/v1/jobs"),
        json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "crunch", "namespace": "demo"},
            "spec": {"parallelism": 2, "completions": 2, "template": {
                "metadata": {"annotations": {"sandbox.kube/run-seconds": "1"}},
                "spec": {"restartPolicy": "Never",
                    "containers": [{"name": "crunch", "image": "busybox:1.36",
                        "command": ["sh", "-c", "echo done"]}]}}}}),
    )
    .await;
    rest_create(
        base,
        admin,
        &format!("{DEMO}/propagationpolicies"),
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "crunch", "namespace": "demo"},
            "spec": {
                "resourceSelectors": [{"apiVersion": "batch/v1", "kind": "Job", "name": "crunch"}],
                "placement": {
                    "clusterAffinity": {"clusterNames": MEMBERS},
                    "replicaScheduling": {"replicaSchedulingType": "Divided",
                        "replicaDivisionPreference": "Weighted"}}}}),
    )
    .await;
    browser.goto(&format!("{base}{PAGES}/batch")).await;
    browser.find("#jobs tr[data-job=crunch]").await;
    browser.mark_document().await;
    // Karmada divides the parallelism only (`reviseJobReplica`): each member runs its own
    // completions, and Karmada's Job sums the members' counts.
    let deadline = Instant::now() + LIMIT;
    let succeeded = loop {
        let (_, job) = rest_get(
            base,
            admin,
            &format!("{DEMO}/resources/batch/v1/jobs/crunch"),
        )
        .await;
        let shown = browser.text("#jobs tr[data-job=crunch] td.succeeded").await;
        let complete = job["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Complete" && c["status"] == "True");
        let succeeded = job["status"]["succeeded"].as_i64().unwrap_or(0).to_string();
        if complete && shown == succeeded {
            break succeeded;
        }
        assert!(
            Instant::now() < deadline,
            "the Jobs list shows {shown} succeeded; Karmada's Job: {}",
            job["status"]
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(
        browser.document_kept().await,
        "the Jobs list was reloaded instead of refreshed"
    );
    browser.click("#jobs tr[data-job=crunch] a").await;
    browser.wait_url("/namespaces/demo/jobs/crunch").await;
    let job_classes = ["active", "succeeded", "failed"];
    let deadline = Instant::now() + LIMIT;
    loop {
        let mut held = BTreeMap::new();
        let mut complete = true;
        for member in MEMBERS {
            let jobs: kube::Api<k8s_openapi::api::batch::v1::Job> =
                kube::Api::namespaced(client_of(dir, member).await, "demo");
            let Ok(job) = jobs.get("crunch").await else {
                complete = false;
                continue;
            };
            let wanted = job.spec.and_then(|s| s.completions).unwrap_or(1);
            let st = job.status.unwrap_or_default();
            complete &= st.succeeded.unwrap_or(0) == wanted;
            let n = |v: Option<i32>| v.unwrap_or(0).to_string();
            held.insert(
                member.to_owned(),
                vec![n(st.active), n(st.succeeded), n(st.failed)],
            );
        }
        let shown = clusters_shown(browser, &job_classes).await;
        if complete && shown == held {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the Job page shows {shown:?}; the members hold {held:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Each member's share of the parallelism, as the binding schedules it.
    let (_, binding) = rest_get(base, admin, &format!("{binding_path}/crunch-job")).await;
    let scheduled: BTreeMap<String, String> = binding["spec"]["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["replicas"].as_i64().unwrap_or(0).to_string(),
            )
        })
        .collect();
    let shown: BTreeMap<String, String> = clusters_shown(browser, &["scheduled"])
        .await
        .into_iter()
        .map(|(c, mut v)| (c, v.remove(0)))
        .collect();
    assert_eq!(shown, scheduled);
    assert_eq!(browser.text("#succeeded").await, succeeded);
    browser.screenshot(&s.shots, "workload-job").await;
    let job_page = format!("{base}{PAGES}/jobs/crunch");
    let (status, page) = post_form(&format!("{job_page}/restart"), &cookie, "").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(page.contains("CSRF"), "{page}");

    // The viewer: no action control; their own session and CSRF token make no write.
    browser.sign_out().await;
    browser.sign_in(base, &s.viewer).await;
    for page in [&db_page, &agent_page, &job_page] {
        browser.goto(page).await;
        browser.find("#workload-clusters").await;
        assert!(
            browser
                .find_all("#actions, #action-scale, #action-restart, #job-actions")
                .await
                .is_empty(),
            "{page}"
        );
    }
    let cookie = browser.session_cookie().await.expect("a session cookie");
    let csrf = browser.csrf().await;
    for url in [
        format!("{db_page}/scale"),
        format!("{agent_page}/restart"),
        format!("{job_page}/restart"),
    ] {
        let (status, page) = post_form(&url, &cookie, &format!("replicas=1&_csrf={csrf}")).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{url}");
        assert!(page.contains("PermissionDenied"), "{page}");
    }
    let (_, db) = rest_get(base, admin, &format!("{objects}/statefulsets/db")).await;
    assert_eq!(db["spec"]["replicas"], 4, "{db}");
    browser.assert_same_origin(base).await;
    browser.quit().await;
    eprintln!("screenshots in {}", s.shots.display());
}
