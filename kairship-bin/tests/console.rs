//! The web console in a real Chromium, driven over the W3C WebDriver protocol (chromedriver)
//! against `kairship sandbox` run as a child process: sign-in as the admin and the viewer,
//! the instance list against the REST API's numbers, write controls only for who may write,
//! CSRF refusals, a restart seen live, a bad manifest's error from the API, HTML escaping,
//! sign-out, and no request leaving the Kairship origin. Screenshots of each page are written
//! to `$TMPDIR/kairship-console-screenshots/`.
//!
//! Needs `chromium` and `chromedriver` on PATH (Debian: `apt-get install chromium
//! chromium-driver`); without them the browser test prints a notice and passes, unless
//! `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails.
#![allow(clippy::unwrap_used)]

use reqwest::StatusCode;
use serde_json::{Value, json};

mod support;

use support::*;

/// What the REST API says of each instance the token may see: name -> the list's cells.
async fn rest_rows(base: &str, token: &str) -> Vec<(String, Vec<String>)> {
    let list = rest_json(base, token, "/instances").await;
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let s = &i["status"]["summary"];
            let pair = |p: &str| {
                format!(
                    "{}/{}",
                    s.pointer(&format!("{p}/readyNum")).unwrap(),
                    s.pointer(&format!("{p}/totalNum")).unwrap()
                )
            };
            let policies = s["policyTotalNum"]["propagationpolicies"].as_i64().unwrap()
                + s["policyTotalNum"]["overridepolicies"].as_i64().unwrap();
            (
                i["metadata"]["name"].as_str().unwrap().to_owned(),
                vec![
                    i["status"]["state"].as_str().unwrap().to_owned(),
                    i["status"]["karmadaVersion"].as_str().unwrap().to_owned(),
                    pair("/clusterSummary"),
                    pair("/nodeSummary"),
                    pair("/workloadSummary/deployments"),
                    policies.to_string(),
                    format!(
                        "{} / {}",
                        s["resourceSummary"]["allocated"]["cpu"].as_str().unwrap(),
                        s["resourceSummary"]["allocatable"]["cpu"].as_str().unwrap()
                    ),
                ],
            )
        })
        .collect()
}

/// The same cells as the console's instance list shows them.
async fn page_rows(browser: &Browser) -> Vec<(String, Vec<String>)> {
    let rows = browser
        .script(
            "return [...document.querySelectorAll('tr[data-instance]')].map(r => [\
               r.dataset.instance,\
               ['td:nth-child(2)', '.karmada-version', '.clusters', '.nodes', '.workloads',\
                '.policies', '.cpu .bar-text'].map(c => r.querySelector(c).innerText.trim())]);",
            json!([]),
        )
        .await;
    serde_json::from_value(rows).unwrap()
}

async fn restarted_at(base: &str, token: &str, name: &str) -> Value {
    let d = rest_json(
        base,
        token,
        &format!("/instances/karmada-a/namespaces/demo/deployments/{name}"),
    )
    .await;
    d["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_in_chromium() {
    let Some(env) = SignedIn::start("console_in_chromium", "console").await else {
        return;
    };
    let (base, admin, viewer) = (env.base.clone(), env.admin.clone(), env.viewer.clone());
    let shots = env.shots.clone();
    let browser = &env.browser;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();

    // A Deployment whose annotation and label-like text carry markup: it must render as text.
    let evil = "<script>window.__injected = 1</script>";
    let created = http
        .post(format!(
            "{base}{P}/instances/karmada-a/namespaces/demo/deployments"
        ))
        .bearer_auth(&admin)
        .json(&json!({
            "metadata": {"name": "markup", "annotations": {"note": evil}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "markup"}},
                "template": {"metadata": {"labels": {"app": "markup"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(
        created.status(),
        StatusCode::OK,
        "{}",
        created.text().await.unwrap()
    );

    // The admin (signed in by the fixture before the Deployment above was created): both
    // instances, with the numbers the REST API gives.
    browser.goto(&format!("{base}/ui/instances")).await;
    browser.find("tr[data-instance]").await;
    let want = rest_rows(&base, &admin).await;
    assert_eq!(want.len(), 2, "{want:?}");
    assert_eq!(page_rows(browser).await, want);
    assert_eq!(browser.find_all("a.delete").await.len(), 2);
    // The sandbox's admin may also create instances (console_instances.rs adopts one).
    browser.find("#new-instance").await;
    browser.assert_same_origin(&base).await;
    browser.screenshot(&shots, "instances").await;
    let admin_cookie = browser.session_cookie().await.expect("a session cookie");

    // Search narrows the list without a reload.
    browser
        .script("window.__page = 'kept'; return null;", json!([]))
        .await;
    browser.type_into("#q", "-b").await;
    browser
        .wait_text("#instances tbody", |t| {
            t.contains("karmada-b") && !t.contains("karmada-a")
        })
        .await;
    assert_eq!(
        browser.script("return window.__page;", json!([])).await,
        "kept"
    );

    // The overview: clusters, workloads with their placement, policies.
    browser
        .goto(&format!("{base}/ui/instances/karmada-a"))
        .await;
    let clusters = browser.text("#clusters").await;
    assert!(
        clusters.contains("a-east") && clusters.contains("a-west"),
        "{clusters}"
    );
    let workloads = browser.text("#workloads").await;
    assert!(
        workloads.contains("web") && workloads.contains("api"),
        "{workloads}"
    );
    let policies = browser.text("#propagation").await;
    assert!(policies.contains("demo-spread"), "{policies}");
    browser.assert_same_origin(&base).await;
    browser.screenshot(&shots, "overview").await;

    // Markup in an object renders as text.
    browser
        .goto(&format!(
            "{base}/ui/instances/karmada-a/namespaces/demo/workloads/markup"
        ))
        .await;
    assert!(browser.text("#yaml").await.contains(evil));
    assert_eq!(
        browser
            .script("return window.__injected === undefined;", json!([]))
            .await,
        true
    );

    // Forged POSTs with the admin's own cookie: no CSRF token, a wrong one.
    let restart = format!("{base}/ui/instances/karmada-a/namespaces/demo/workloads/web/restart");
    let before = restarted_at(&base, &admin, "web").await;
    for form in ["", "_csrf=0123456789abcdef"] {
        let (status, body) = post_form(&restart, &admin_cookie, form).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{form}: {body}");
        assert!(body.contains("CSRF"), "{body}");
    }
    assert_eq!(restarted_at(&base, &admin, "web").await, before);

    // The admin restarts `web`: the page shows the new rollout without reloading.
    browser
        .goto(&format!(
            "{base}/ui/instances/karmada-a/namespaces/demo/workloads/web"
        ))
        .await;
    assert_eq!(browser.text("#restarted-at").await, "never");
    browser
        .script("window.__page = 'kept'; return null;", json!([]))
        .await;
    browser.click("#action-restart").await;
    let shown = browser.wait_text("#restarted-at", |t| t != "never").await;
    assert_eq!(
        Value::String(shown),
        restarted_at(&base, &admin, "web").await
    );
    assert_eq!(
        browser.script("return window.__page;", json!([])).await,
        "kept",
        "the page was not reloaded"
    );
    browser.assert_same_origin(&base).await;
    browser.screenshot(&shots, "workload").await;

    // Create from YAML: a manifest with an unknown field gets the API's own error, inline.
    browser
        .goto(&format!("{base}/ui/instances/karmada-a/create?ns=demo"))
        .await;
    let bad = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: bad\nspec:\n  bogus: 1\n  selector: {matchLabels: {app: bad}}\n  template:\n    metadata: {labels: {app: bad}}\n    spec:\n      containers: [{name: c, image: nginx}]\n";
    browser
        .script(
            "document.getElementById('yaml').value = arguments[0]; return null;",
            json!([bad]),
        )
        .await;
    browser.click("#create").await;
    let shown = browser
        .wait_text("#create-result .error", |t| !t.is_empty())
        .await;
    let rest: Value = http
        .post(format!(
            "{base}{P}/instances/karmada-a/namespaces/demo/deployments"
        ))
        .bearer_auth(&admin)
        .json(&serde_saphyr::from_str::<Value>(bad).unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let message = rest["message"].as_str().unwrap();
    assert!(message.contains("spec.bogus"), "{rest}");
    assert!(shown.contains(message), "{shown} lacks the API's {message}");
    browser.screenshot(&shots, "create").await;

    // Deleting an instance with members: the API's safe-delete refusal, on the page.
    browser.goto(&format!("{base}/ui/instances")).await;
    browser.click("tr[data-instance=karmada-a] a.delete").await;
    browser.click("#confirm-delete").await;
    let refused = browser.text(".error").await;
    assert!(
        refused.contains("FailedPrecondition") && refused.contains("a-east, a-west"),
        "{refused}"
    );

    // Sign-out ends the session: the old cookie no longer opens a page.
    browser.goto(&format!("{base}/ui/instances")).await;
    browser.sign_out().await;
    let old = http
        .get(format!("{base}/ui/instances"))
        .header("cookie", format!("kairship_session={admin_cookie}"))
        .send()
        .await
        .unwrap();
    assert_eq!(old.status(), StatusCode::SEE_OTHER);
    assert_eq!(old.headers()["location"], "/ui/signin");
    browser.screenshot(&shots, "signin").await;

    // The viewer: one instance, its numbers, and no write controls anywhere.
    browser.sign_in(&base, &viewer).await;
    browser.find("tr[data-instance]").await;
    let want = rest_rows(&base, &viewer).await;
    assert_eq!(want.len(), 1, "{want:?}");
    assert_eq!(page_rows(browser).await, want);
    assert!(browser.find_all("a.delete, #new-instance").await.is_empty());
    browser.screenshot(&shots, "viewer-instances").await;
    browser
        .goto(&format!(
            "{base}/ui/instances/karmada-a/namespaces/demo/workloads/web"
        ))
        .await;
    browser.find("#workload-clusters").await;
    assert!(
        browser
            .find_all("#actions, #action-restart")
            .await
            .is_empty()
    );
    browser
        .goto(&format!("{base}/ui/instances/karmada-a"))
        .await;
    browser.find("#clusters").await;
    assert!(browser.find_all("#create-yaml").await.is_empty());
    let viewer_cookie = browser.session_cookie().await.expect("a session cookie");
    let csrf = browser.csrf().await;
    // Forged POSTs are refused before the API is asked; with the right token, the API's
    // refusal is what the viewer reads.
    for form in ["", "_csrf=wrong"] {
        let (status, _) = post_form(&restart, &viewer_cookie, form).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{form}");
    }
    let (status, body) = post_form(&restart, &viewer_cookie, &format!("_csrf={csrf}")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("PermissionDenied"), "{body}");
    let viewer_rest = http
        .post(format!(
            "{base}{P}/instances/karmada-a/namespaces/demo/deployments/web:restart"
        ))
        .bearer_auth(&viewer)
        .send()
        .await
        .unwrap();
    let api_message = viewer_rest.json::<Value>().await.unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        body.contains(&kairship_core::console::html::escape(&api_message)),
        "{body} lacks the API's {api_message}"
    );
    browser.quit().await;
    eprintln!("screenshots in {}", shots.display());
}

/// The session cookie's flags, over plain HTTP and over TLS (`Secure`), without a browser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_cookie_flags_and_tls() {
    kube_kit::client::install_crypto_provider();
    let dir = std::env::temp_dir().join(format!("kairship-console-tls-{}", std::process::id()));
    let port = free_port();
    let _sandbox = start_sandbox(&dir, port, &["--tls"]);
    let http = tls_client(&dir);
    let base = format!("https://127.0.0.1:{port}");
    let admin = std::fs::read_to_string(dir.join("admin.token")).unwrap();

    // A bad token: no session, the API's message.
    let r = http
        .post(format!("{base}/ui/signin"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("token=not-a-token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().get("set-cookie").is_none());

    // A cross-site sign-in is refused.
    let r = http
        .post(format!("{base}/ui/signin"))
        .header("origin", "https://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={admin}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);

    let r = http
        .post(format!("{base}/ui/signin"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={admin}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    let parts: Vec<&str> = cookie.split("; ").collect();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/ui", "Secure"] {
        assert!(parts.contains(&flag), "{flag} missing from {cookie}");
    }
    assert!(
        !cookie.contains(admin.trim()),
        "the token never goes to the browser"
    );
    let csp = r.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'self'"), "{csp}");
    let id = parts[0].strip_prefix("kairship_session=").unwrap();
    let page = http
        .get(format!("{base}/ui/instances"))
        .header("cookie", format!("kairship_session={id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().await.unwrap().contains("karmada-b"));
}
