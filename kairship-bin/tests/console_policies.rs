//! The console's policy form in a real Chromium against `kairship sandbox`: the admin fills a
//! PropagationPolicy dividing a Deployment's replicas 2:1 over `a-east` and `a-west`, previews
//! its YAML (nothing created) and its placement (the API's preview), creates it, and finds in
//! Karmada (read with kube-rs) exactly the spec the form said; the sandbox's Karmada schedules
//! the Deployment per the weights. A field set outside the form (an annotation,
//! `spec.activationPreference`) survives an edit of a weight with the form, and the new weights
//! reach the members. An OverridePolicy made with the form changes a member's image. The viewer
//! sees no form and their POST is refused; a POST without the CSRF token is refused.
//! Screenshots go to `$TMPDIR/kairship-console-screenshots/`.
//!
//! Needs `chromium` and `chromedriver` on PATH; without them the test prints a notice and
//! passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails.
#![allow(clippy::unwrap_used)]

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::{Api, Client};
use reqwest::StatusCode;
use serde_json::{Value, json};

mod support;

use support::*;

const NEW: &str = "/ui/instances/karmada-a/policies/new";

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn policies(karmada: &Client, plural: &str, kind: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        karmada.clone(),
        "demo",
        &resource("policy.karmada.io", "v1alpha1", kind, plural),
    )
}

async fn policy_spec(karmada: &Client, plural: &str, kind: &str, name: &str) -> Option<Value> {
    let got = policies(karmada, plural, kind)
        .get_opt(name)
        .await
        .unwrap()?;
    Some(got.data["spec"].clone())
}

/// `(cluster, replicas)` of the binding of Deployment `weighted`, once scheduled.
async fn scheduled(karmada: &Client) -> Vec<(String, i64)> {
    let bindings: Api<DynamicObject> = Api::namespaced_with(
        karmada.clone(),
        "demo",
        &resource(
            "work.karmada.io",
            "v1alpha2",
            "ResourceBinding",
            "resourcebindings",
        ),
    );
    let Some(binding) = bindings.get_opt("weighted-deployment").await.unwrap() else {
        return Vec::new();
    };
    let mut out: Vec<(String, i64)> = binding.data["spec"]["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or_default().to_owned(),
                c["replicas"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    out.sort();
    out
}

/// `(replicas, image)` of Deployment `weighted` on a member, when it is there.
async fn on_member(member: &Client) -> Option<(i64, String)> {
    let deployments: Api<Deployment> = Api::namespaced(member.clone(), "demo");
    let d = deployments.get_opt("weighted").await.unwrap()?;
    let spec = d.spec.unwrap_or_default();
    let image = spec
        .template
        .spec
        .and_then(|s| s.containers.first().and_then(|c| c.image.clone()))
        .unwrap_or_default();
    Some((i64::from(spec.replicas.unwrap_or(1)), image))
}

async fn set_value(browser: &Browser, id: &str, value: &str) {
    // Selects are set as a keyboard user would leave them; text inputs are typed into.
    let element = browser.find(&format!("#{id}")).await;
    let tag = browser
        .call("GET", &format!("/element/{element}/name"), Value::Null)
        .await;
    if tag == "select" {
        browser
            .script(
                "const e = document.getElementById(arguments[0]); e.value = arguments[1]; return e.value;",
                json!([id, value]),
            )
            .await;
    } else {
        browser
            .call("POST", &format!("/element/{element}/clear"), json!({}))
            .await;
        browser.type_into(&format!("#{id}"), value).await;
    }
}

async fn scroll_to(browser: &Browser, id: &str) {
    browser
        .script(
            "document.getElementById(arguments[0]).scrollIntoView(); return null;",
            json!([id]),
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_form_creates_previews_and_edits_in_chromium() {
    let Some(fixture) = SignedIn::start(
        "policy_form_creates_previews_and_edits_in_chromium",
        "console-policies",
    )
    .await
    else {
        return;
    };
    let SignedIn {
        dir,
        base,
        viewer,
        shots,
        browser,
        ..
    } = fixture;
    let karmada = client_of(&dir, "karmada-a").await;
    let east = client_of(&dir, "a-east").await;
    let west = client_of(&dir, "a-west").await;

    // The workload the policy will select: 3 replicas, not selected by the sample policy.
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "weighted", "namespace": "demo", "labels": {"app": "weighted"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "weighted"}},
            "template": {"metadata": {"labels": {"app": "weighted"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}
    }))
    .unwrap();
    Api::<Deployment>::namespaced(karmada.clone(), "demo")
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();

    // From the PropagationPolicies list to the form.
    browser
        .goto(&format!(
            "{base}/ui/instances/karmada-a/resources/policy.karmada.io/v1alpha1/propagationpolicies?ns=demo"
        ))
        .await;
    browser.click("#new-policy").await;
    browser.find("#policy-form").await;
    assert!(
        browser
            .url()
            .await
            .ends_with("/policies/new?kind=PropagationPolicy&ns=demo")
    );
    for (id, value) in [
        ("name", "weighted"),
        ("sel-0-api", "apps/v1"),
        ("sel-0-kind", "Deployment"),
        ("sel-0-name", "weighted"),
        ("cluster-names", "a-east, a-west"),
        ("weight-0-clusters", "a-east"),
        ("weight-0-weight", "2"),
        ("weight-1-clusters", "a-west"),
        ("weight-1-weight", "1"),
    ] {
        set_value(&browser, id, value).await;
    }
    assert_eq!(
        browser
            .script(
                "return document.getElementById('namespace').value;",
                json!([])
            )
            .await,
        "demo"
    );
    browser
        .script("window.scrollTo(0, 0); return null;", json!([]))
        .await;
    browser.screenshot(&shots, "policy-form").await;

    // Preview YAML: the object, nothing created.
    browser.click("#policy-yaml").await;
    let yaml = browser
        .wait_text("#policy-yaml-preview", |t| t.contains("PropagationPolicy"))
        .await;
    let previewed: Value = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(
        previewed["spec"],
        json!({
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "weighted"}],
            "placement": {
                "clusterAffinity": {"clusterNames": ["a-east", "a-west"]},
                "replicaScheduling": {"replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": [
                        {"targetCluster": {"clusterNames": ["a-east"]}, "weight": 2},
                        {"targetCluster": {"clusterNames": ["a-west"]}, "weight": 1}]}}},
            "priority": 0, "preemption": "Never", "conflictResolution": "Abort"
        }),
        "{yaml}"
    );
    scroll_to(&browser, "policy-result").await;
    browser.screenshot(&shots, "policy-yaml").await;
    assert!(
        policy_spec(
            &karmada,
            "propagationpolicies",
            "PropagationPolicy",
            "weighted"
        )
        .await
        .is_none(),
        "the YAML preview created the policy"
    );

    // Preview placement: the API's preview of the form's placement for the Deployment.
    browser.click("#policy-placement").await;
    browser
        .wait_text("#policy-result", |t| {
            t.contains("Where Karmada would place")
        })
        .await;
    let placed = browser
        .script(
            "return [...document.querySelectorAll('#placement tr.chosen')].map(r => [r.dataset.cluster, r.querySelector('.replicas').textContent]);",
            json!([]),
        )
        .await;
    assert_eq!(placed, json!([["a-east", "2"], ["a-west", "1"]]));
    // The form came back as typed.
    assert_eq!(
        browser
            .script(
                "return document.getElementById('weight-0-weight').value;",
                json!([])
            )
            .await,
        "2"
    );
    scroll_to(&browser, "policy-result").await;
    browser.screenshot(&shots, "policy-placement").await;

    // Create: Karmada holds exactly the previewed spec (plus the CRD's schedulerName default).
    browser.click("#policy-create").await;
    browser
        .wait_url("/policies/PropagationPolicy/weighted/edit?ns=demo&done=created")
        .await;
    browser
        .wait_text(".notice", |t| t.contains("Created."))
        .await;
    let mut stored = policy_spec(
        &karmada,
        "propagationpolicies",
        "PropagationPolicy",
        "weighted",
    )
    .await
    .expect("the policy was created");
    let defaults: Vec<String> = stored
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| previewed["spec"].get(k.as_str()).is_none())
        .cloned()
        .collect();
    assert!(
        defaults.iter().all(|k| k == "schedulerName"),
        "fields nobody asked for: {defaults:?}"
    );
    for key in &defaults {
        stored.as_object_mut().unwrap().remove(key);
    }
    assert_eq!(stored, previewed["spec"]);

    // The sandbox's Karmada divides the 3 replicas 2:1.
    let want = vec![("a-east".to_owned(), 2), ("a-west".to_owned(), 1)];
    kube_sandbox::testing::wait::eventually("the binding follows the weights 2:1", || async {
        scheduled(&karmada).await == want
    })
    .await;
    kube_sandbox::testing::wait::eventually("the members run 2 and 1 replicas", || async {
        on_member(&east).await.map(|d| d.0) == Some(2)
            && on_member(&west).await.map(|d| d.0) == Some(1)
    })
    .await;

    // Set outside the form: an annotation and activationPreference.
    policies(&karmada, "propagationpolicies", "PropagationPolicy")
        .patch(
            "weighted",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"team": "platform"}},
                "spec": {"activationPreference": "Lazy"}})),
        )
        .await
        .unwrap();

    // Edit with the form, from the policy's page: a-west's weight 1 becomes 4 (2:4 = 1:2).
    browser
        .goto(&format!(
            "{base}/ui/instances/karmada-a/resources/policy.karmada.io/v1alpha1/propagationpolicies/weighted?ns=demo"
        ))
        .await;
    browser.click("#edit-form").await;
    browser.find("#policy-form").await;
    let kept = browser.text("#policy-kept").await;
    assert!(kept.contains("/spec/activationPreference"), "{kept}");
    assert_eq!(
        browser
            .script(
                "return document.getElementById('weight-1-clusters').value;",
                json!([])
            )
            .await,
        "a-west"
    );
    set_value(&browser, "weight-1-weight", "4").await;
    browser.click("#policy-save").await;
    browser
        .wait_url("/policies/PropagationPolicy/weighted/edit?ns=demo&done=saved")
        .await;
    let edited = policies(&karmada, "propagationpolicies", "PropagationPolicy")
        .get("weighted")
        .await
        .unwrap();
    assert_eq!(
        edited.data["spec"]["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"]
            [1],
        json!({"targetCluster": {"clusterNames": ["a-west"]}, "weight": 4})
    );
    assert_eq!(edited.data["spec"]["activationPreference"], "Lazy");
    assert_eq!(
        edited.metadata.annotations.unwrap_or_default().get("team"),
        Some(&"platform".to_owned())
    );
    let want = vec![("a-east".to_owned(), 1), ("a-west".to_owned(), 2)];
    kube_sandbox::testing::wait::eventually("the binding follows the weights 1:2", || async {
        scheduled(&karmada).await == want
    })
    .await;
    kube_sandbox::testing::wait::eventually("the members run 1 and 2 replicas", || async {
        on_member(&east).await.map(|d| d.0) == Some(1)
            && on_member(&west).await.map(|d| d.0) == Some(2)
    })
    .await;

    // An OverridePolicy with the form: a-east runs the image with tag 1.28.
    browser
        .goto(&format!("{base}{NEW}?kind=OverridePolicy&ns=demo"))
        .await;
    browser.find("#policy-form").await;
    for (id, value) in [
        ("name", "weighted-tag"),
        ("sel-0-api", "apps/v1"),
        ("sel-0-kind", "Deployment"),
        ("sel-0-name", "weighted"),
        ("rule-0-clusters", "a-east"),
        ("rule-0-image-0-component", "Tag"),
        ("rule-0-image-0-operator", "replace"),
        ("rule-0-image-0-value", "1.28"),
    ] {
        set_value(&browser, id, value).await;
    }
    browser.screenshot(&shots, "policy-override-form").await;
    browser.click("#policy-create").await;
    browser
        .wait_url("/policies/OverridePolicy/weighted-tag/edit?ns=demo&done=created")
        .await;
    let op = policy_spec(
        &karmada,
        "overridepolicies",
        "OverridePolicy",
        "weighted-tag",
    )
    .await
    .expect("the override policy was created");
    assert_eq!(
        op["overrideRules"],
        json!([{"targetCluster": {"clusterNames": ["a-east"]}, "overriders": {
            "imageOverrider": [{"component": "Tag", "operator": "replace", "value": "1.28"}]}}])
    );
    kube_sandbox::testing::wait::eventually("a-east runs nginx:1.28", || async {
        on_member(&east).await.map(|d| d.1) == Some("nginx:1.28".into())
    })
    .await;
    assert_eq!(
        on_member(&west).await.map(|d| d.1),
        Some("nginx:1.27".into())
    );

    // A POST with the admin's cookie but no CSRF token: 403, nothing created.
    let cookie = browser.session_cookie().await.expect("a session cookie");
    let edit =
        format!("{base}/ui/instances/karmada-a/policies/PropagationPolicy/weighted/edit?ns=demo");

    // A save from a form filled before someone else's change: the API's refusal above the
    // form as sent, the stored policy unchanged.
    let admin_csrf = browser.csrf().await;
    let (status, page) = post_form(
        &edit,
        &cookie,
        &format!(
            "_csrf={admin_csrf}&resource_version=1&sel_0_api=apps%2Fv1&sel_0_kind=Deployment&sel_0_name=weighted\
             &cluster_names=a-east&weight_0_clusters=a-east&weight_0_weight=7&scheduling=Divided&op=save"
        ),
    )
    .await;
    assert_eq!(status, StatusCode::PRECONDITION_FAILED);
    assert!(page.contains("FailedPrecondition"), "{page}");
    assert!(
        page.find("role=\"alert\"").unwrap() < page.find("id=\"policy-form\"").unwrap(),
        "{page}"
    );
    assert!(page.contains("name=\"weight_0_weight\" id=\"weight-0-weight\" value=\"7\""));
    let form =
        "name=forged&namespace=demo&sel_0_api=v1&sel_0_kind=ConfigMap&sel_0_name=x&op=create";
    let (status, _) = post_form(
        &format!("{base}{NEW}?kind=PropagationPolicy"),
        &cookie,
        form,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = post_form(
        &edit,
        &cookie,
        "weight_0_clusters=a-east&weight_0_weight=9&op=save",
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // The viewer: a notice instead of the form, and their own POST refused.
    browser.sign_out().await;
    browser.sign_in(&base, &viewer).await;
    browser
        .goto(&format!("{base}/ui/instances/karmada-a?ns=demo"))
        .await;
    browser.find("#clusters").await;
    assert!(browser.find_all("#new-policy").await.is_empty());
    for url in [
        format!("{base}{NEW}?kind=PropagationPolicy&ns=demo"),
        edit.clone(),
    ] {
        browser.goto(&url).await;
        browser.find(".notice").await;
        assert!(
            browser
                .find_all("#policy-form, #policy-create, #policy-save, select, textarea")
                .await
                .is_empty(),
            "{url}"
        );
    }
    browser.screenshot(&shots, "policy-viewer").await;
    let cookie = browser.session_cookie().await.expect("a session cookie");
    let csrf = browser.csrf().await;
    for (url, body) in [
        (
            format!("{base}{NEW}?kind=PropagationPolicy"),
            format!("{form}&_csrf={csrf}"),
        ),
        (
            edit.clone(),
            format!("weight_0_clusters=a-east&weight_0_weight=9&op=save&_csrf={csrf}"),
        ),
    ] {
        let (status, page) = post_form(&url, &cookie, &body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{url}");
        assert!(page.contains("PermissionDenied"), "{page}");
        assert!(!page.contains("id=\"policy-form\""), "{page}");
    }
    assert!(
        policy_spec(
            &karmada,
            "propagationpolicies",
            "PropagationPolicy",
            "forged"
        )
        .await
        .is_none()
    );
    let unchanged = policy_spec(
        &karmada,
        "propagationpolicies",
        "PropagationPolicy",
        "weighted",
    )
    .await
    .unwrap();
    assert_eq!(
        unchanged["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"][0]["weight"],
        2
    );
    browser.quit().await;
    eprintln!("screenshots in {}", shots.display());
}
