//! A member's workloads, promote with a preview, and the kubeconfig download, in a real
//! Chromium against `kairship sandbox`.
//!
//! A Deployment created directly on member a-east (with a ConfigMap it mounts and a Secret
//! its environment reads) is listed on the member's workloads page as member-only, next to
//! the sample Deployment Karmada propagated there; a workload created on the member while the
//! page is open appears without a reload. **Promote** shows the API's dry run (the ConfigMap,
//! the Secret without its value, the Deployment and the PropagationPolicy) and creates nothing
//! in Karmada (read there with kube-rs); confirming creates them, links to the workload's page
//! in the instance, and the member's list then shows it promoted; promoting it again shows the
//! API's refusal. A forged promote POST (no or a wrong CSRF token) is refused with 403, and so
//! is the viewer's own, while the viewer sees no Promote control. The kubeconfig page's POST
//! answers a file (`<instance>.kubeconfig`, not cached) that kube-rs uses to list the
//! instance's namespaces through Kairship. The real kubectl lists them with a kubeconfig
//! downloaded from the same page of `kairship sandbox --tls` (kubectl sends a kubeconfig's
//! token over HTTPS only; the file carries the CA to trust).
//!
//! kubectl is found as `kube_sandbox::testing::kubectl` says; without it that test prints a
//! notice and passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI).
//!
//! Needs `chromium` and `chromedriver` on PATH; without them the test prints a notice and
//! passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use http::StatusCode;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

mod support;

use support::*;

/// The Secret's value: it must never reach a page.
const SECRET_VALUE: &str = "orders-db-password-5e1f";

fn deployment(name: &str, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "demo", "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image}]}
            }
        }
    })
}

/// Creates, on the member only, Deployment `orders` mounting ConfigMap `orders-config` and
/// reading Secret `orders-db` into its environment.
async fn create_on_member(member: &kube::Client) {
    // Karmada's namespace sync made `demo` on the member when the sandbox started.
    let namespaces: kube::Api<Namespace> = kube::Api::all(member.clone());
    let deadline = Instant::now() + LIMIT;
    while namespaces.get_opt("demo").await.unwrap().is_none() {
        assert!(Instant::now() < deadline, "no namespace demo on the member");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let pp = PostParams::default();
    let config_map: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "orders-config", "namespace": "demo"},
        "data": {"mode": "member"}
    }))
    .unwrap();
    kube::Api::<ConfigMap>::namespaced(member.clone(), "demo")
        .create(&pp, &config_map)
        .await
        .unwrap();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "orders-db", "namespace": "demo"},
        "stringData": {"password": SECRET_VALUE}
    }))
    .unwrap();
    kube::Api::<Secret>::namespaced(member.clone(), "demo")
        .create(&pp, &secret)
        .await
        .unwrap();
    let mut orders = deployment("orders", "shop/orders:1.4");
    let spec = &mut orders["spec"]["template"]["spec"];
    spec["volumes"] = json!([{"name": "config", "configMap": {"name": "orders-config"}}]);
    spec["containers"][0]["volumeMounts"] = json!([{"name": "config", "mountPath": "/etc/orders"}]);
    spec["containers"][0]["env"] = json!([{"name": "DB_PASSWORD",
        "valueFrom": {"secretKeyRef": {"name": "orders-db", "key": "password"}}}]);
    kube::Api::<Deployment>::namespaced(member.clone(), "demo")
        .create(&pp, &serde_json::from_value(orders).unwrap())
        .await
        .unwrap();
}

fn propagation_policies() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("policy.karmada.io", "v1alpha1", "PropagationPolicy"),
        "propagationpolicies",
    )
}

/// What instance karmada-a holds of the promotion: (ConfigMap, Secret, Deployment, policy).
async fn held_by_karmada(karmada: &kube::Client) -> [bool; 4] {
    let ns = "demo";
    [
        kube::Api::<ConfigMap>::namespaced(karmada.clone(), ns)
            .get_opt("orders-config")
            .await
            .unwrap()
            .is_some(),
        kube::Api::<Secret>::namespaced(karmada.clone(), ns)
            .get_opt("orders-db")
            .await
            .unwrap()
            .is_some(),
        kube::Api::<Deployment>::namespaced(karmada.clone(), ns)
            .get_opt("orders")
            .await
            .unwrap()
            .is_some(),
        kube::Api::<DynamicObject>::namespaced_with(karmada.clone(), ns, &propagation_policies())
            .get_opt("orders-deployment-promoted")
            .await
            .unwrap()
            .is_some(),
    ]
}

/// The `(kind, name)` rows of the promote page's object table.
async fn promote_rows(browser: &Browser) -> Vec<(String, String)> {
    let rows = browser
        .script(
            "return [...document.querySelectorAll('#promote-objects tbody tr')]\
               .map(r => [r.dataset.kind, r.dataset.name]);",
            json!([]),
        )
        .await;
    serde_json::from_value(rows).unwrap()
}

fn management_of(name: &str) -> String {
    format!("#member-workloads tr[data-name=\"{name}\"] td.management")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promote_a_member_workload_after_its_preview_in_chromium() {
    let Some(s) = SignedIn::start(
        "promote_a_member_workload_after_its_preview_in_chromium",
        "console-promote",
    )
    .await
    else {
        return;
    };
    let b = &s.browser;
    let member = client_of(&s.dir, "a-east").await;
    let karmada = client_of(&s.dir, "karmada-a").await;
    create_on_member(&member).await;

    // From the member list to the member's workloads, filtered to Deployments of demo.
    b.goto(&format!("{}/ui/instances/karmada-a/members", s.base))
        .await;
    b.click("tr[data-cluster=\"a-east\"] a.member-workloads")
        .await;
    b.wait_url("/ui/instances/karmada-a/members/a-east/workloads")
        .await;
    b.type_into("#ns", "demo").await;
    b.click("#kind option[value=\"deployments\"]").await;
    b.click("#filter").await;
    b.wait_url("/members/a-east/workloads?ns=demo&kind=deployments")
        .await;
    let orders = b
        .wait_text(&management_of("orders"), |t| t.contains("member-only"))
        .await;
    assert!(!orders.contains("propagated"), "{orders}");
    // The sample Deployment is there because Karmada propagated it.
    b.wait_text(&management_of("web"), |t| t.contains("propagated"))
        .await;
    let row = b.text("#member-workloads tr[data-name=\"orders\"]").await;
    assert!(row.contains("shop/orders:1.4"), "{row}");
    assert!(
        b.find_all("#member-workloads tr[data-kind=\"jobs\"]")
            .await
            .is_empty()
    );
    // Live: a workload made on the member now appears without a reload.
    kube::Api::<Deployment>::namespaced(member.clone(), "demo")
        .create(
            &PostParams::default(),
            &serde_json::from_value(deployment("late", "shop/late:1")).unwrap(),
        )
        .await
        .unwrap();
    b.wait_text(&management_of("late"), |t| t.contains("member-only"))
        .await;
    b.screenshot(&s.shots, "member-workloads").await;

    // The workload's page, then the dry run: what would be created, and nothing created.
    b.click("#member-workloads tr[data-name=\"orders\"] a")
        .await;
    b.wait_url("/members/a-east/namespaces/demo/workloads/deployments/orders")
        .await;
    let containers = b.text("#member-workload-containers").await;
    assert!(containers.contains("shop/orders:1.4"), "{containers}");
    assert!(b.text("#yaml").await.contains("orders-config"));
    b.click("#promote").await;
    b.find("#promote-confirm").await;
    let rows = promote_rows(b).await;
    let want: Vec<(String, String)> = [
        ("ConfigMap", "orders-config"),
        ("Secret", "orders-db"),
        ("Deployment", "orders"),
        ("PropagationPolicy", "orders-deployment-promoted"),
    ]
    .iter()
    .map(|(k, n)| ((*k).to_owned(), (*n).to_owned()))
    .collect();
    assert_eq!(rows, want);
    let source = b.source().await;
    assert!(source.contains("conflictResolution: Overwrite"), "{source}");
    assert!(
        !source.contains(SECRET_VALUE),
        "the Secret's value is in the preview"
    );
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(SECRET_VALUE);
    assert!(
        !source.contains(&encoded),
        "the Secret's data is in the preview"
    );
    b.screenshot(&s.shots, "promote-preview").await;
    assert_eq!(held_by_karmada(&karmada).await, [false; 4]);

    // Cancel goes back and creates nothing; then the real promotion.
    b.click("#promote-cancel").await;
    b.wait_url("/workloads/deployments/orders").await;
    assert_eq!(held_by_karmada(&karmada).await, [false; 4]);
    b.click("#promote").await;
    b.click("#promote-confirm").await;
    b.find("#karmada-page").await;
    assert_eq!(held_by_karmada(&karmada).await, [true; 4]);
    let policy = kube::Api::<DynamicObject>::namespaced_with(
        karmada.clone(),
        "demo",
        &propagation_policies(),
    )
    .get("orders-deployment-promoted")
    .await
    .unwrap();
    assert_eq!(
        policy.data["spec"]["placement"]["clusterAffinity"]["clusterNames"],
        json!(["a-east"])
    );
    b.screenshot(&s.shots, "promote-done").await;
    b.click("#karmada-page").await;
    b.wait_url("/ui/instances/karmada-a/namespaces/demo/workloads/orders")
        .await;

    // Karmada takes over the member's copy: the list shows it promoted.
    b.goto(&format!(
        "{}/ui/instances/karmada-a/members/a-east/workloads?ns=demo",
        s.base
    ))
    .await;
    b.wait_text(&management_of("orders"), |t| t.contains("promoted"))
        .await;

    // Promoting it again: the API's refusal, shown.
    let workload = format!(
        "{}/ui/instances/karmada-a/members/a-east/namespaces/demo/workloads/deployments/orders",
        s.base
    );
    b.goto(&workload).await;
    b.click("#promote").await;
    let refusal = b
        .wait_text("div.error", |t| t.contains("already exists"))
        .await;
    assert!(refusal.contains("AlreadyExists"), "{refusal}");

    // Forged POSTs: no token, another token.
    let promote_url = format!("{workload}/promote");
    let late_promote = promote_url.replace("/orders/promote", "/late/promote");
    let cookie = b.session_cookie().await.unwrap();
    for form in ["op=preview", "op=promote&_csrf=not-the-token"] {
        let (status, page) = post_form(&late_promote, &cookie, form).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{form}: {page}");
    }
    assert!(
        kube::Api::<Deployment>::namespaced(karmada.clone(), "demo")
            .get_opt("late")
            .await
            .unwrap()
            .is_none()
    );

    // The kubeconfig page, and its file used by kube-rs through Kairship.
    b.goto(&format!("{}/ui/instances/karmada-a", s.base)).await;
    b.click("#kubeconfig").await;
    b.wait_url("/ui/instances/karmada-a/kubeconfig").await;
    b.find("#kubeconfig-download").await;
    b.screenshot(&s.shots, "kubeconfig").await;
    // The form's own POST, sent by the page as the button would (a download is not visible
    // to WebDriver): its fields, CSRF token included, and the answer's headers.
    let answer = b
        .call(
            "POST",
            "/execute/async",
            json!({"script": "const done = arguments[arguments.length - 1];\
                const form = document.getElementById('kubeconfig-download').form;\
                fetch(form.action, {method: 'POST', body: new URLSearchParams(new FormData(form))})\
                  .then(async r => done([r.status, r.headers.get('content-disposition'),\
                                         r.headers.get('cache-control'), await r.text()]))\
                  .catch(e => done([0, String(e), '', '']));",
                "args": []}),
        )
        .await;
    assert_eq!(answer[0], 200, "{answer}");
    assert_eq!(answer[1], "attachment; filename=\"karmada-a.kubeconfig\"");
    assert_eq!(answer[2], "no-store");
    let file = answer[3].as_str().unwrap();
    assert!(
        file.contains(s.admin.trim()),
        "the file holds the user's own token"
    );
    assert!(!b.source().await.contains(s.admin.trim()));
    let config = kube::config::Kubeconfig::from_yaml(file).unwrap();
    let config = kube::Config::from_custom_kubeconfig(config, &Default::default())
        .await
        .unwrap();
    assert!(
        config
            .cluster_url
            .path()
            .ends_with("/instances/karmada-a/proxy"),
        "{}",
        config.cluster_url
    );
    let through_kairship = kube::Client::try_from(config).unwrap();
    let names: Vec<String> = kube::Api::<Namespace>::all(through_kairship)
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.iter().any(|n| n == "demo"), "{names:?}");
    // A forged download is refused like any POST.
    let (status, _) = post_form(
        &format!("{}/ui/instances/karmada-a/kubeconfig", s.base),
        &cookie,
        "server=",
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // The viewer: no Promote control, and their own POST (with their token) is refused.
    b.sign_out().await;
    b.sign_in(&s.base, &s.viewer).await;
    let late = workload.replace("/orders", "/late");
    b.goto(&late).await;
    b.find("#member-workload-status").await;
    assert!(b.find_all("#promote").await.is_empty());
    let viewer_cookie = b.session_cookie().await.unwrap();
    let token = b.csrf().await;
    for op in ["preview", "promote"] {
        let (status, page) = post_form(
            &late_promote,
            &viewer_cookie,
            &format!("op={op}&_csrf={token}"),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{op}: {page}");
    }
    assert!(
        kube::Api::<Deployment>::namespaced(karmada.clone(), "demo")
            .get_opt("late")
            .await
            .unwrap()
            .is_none()
    );
    b.quit().await;
}

/// The real kubectl with a kubeconfig downloaded from the console page: over HTTPS (`kairship
/// sandbox --tls`), where kubectl sends the token, its file carrying the CA to trust.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_uses_the_kubeconfig_downloaded_from_the_console() {
    let Some(binary) = kube_sandbox::testing::kubectl::kubectl_or_skip(
        "kubectl_uses_the_kubeconfig_downloaded_from_the_console",
    ) else {
        return;
    };
    kube_kit::client::install_crypto_provider();
    let dir = std::env::temp_dir().join(format!(
        "kairship-console-kubeconfig-{}",
        std::process::id()
    ));
    let port = free_port();
    let sandbox = start_sandbox(&dir, port, &["--tls"]);
    let http = tls_client(&dir);
    let base = format!("https://127.0.0.1:{port}");
    let admin = std::fs::read_to_string(dir.join("admin.token")).unwrap();
    let signed_in = http
        .post(format!("{base}/ui/signin"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={}", form_value(admin.trim())))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let url = format!("{base}/ui/instances/karmada-a/kubeconfig");
    let form = http
        .get(&url)
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let answer = http
        .post(&url)
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("_csrf={}&server=", form_value(&csrf_in(&form))))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(
        answer.headers()["content-disposition"],
        "attachment; filename=\"karmada-a.kubeconfig\""
    );
    assert_eq!(answer.headers()["cache-control"], "no-store");
    let file = answer.text().await.unwrap();
    assert!(file.contains(&format!("server: {base}/")), "{file}");
    assert!(file.contains("certificate-authority-data"));
    let path = dir.join("downloaded.kubeconfig");
    std::fs::write(&path, &file).unwrap();
    let kubectl = kube_sandbox::testing::kubectl::Kubectl::new(binary, &path);
    let namespaces = kubectl.ok(&["get", "namespaces", "-o", "name"]);
    assert!(
        namespaces.lines().any(|l| l == "namespace/demo"),
        "{namespaces}"
    );
    drop(sandbox);
}
