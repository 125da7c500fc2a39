//! The fleet search over real HTTP: three sandbox Karmada instances registered on a sandbox
//! host, Deployments created through the API, and `GET search` (and gRPC `Search`) answered
//! from the router's caches: a fuzzy name finds a Deployment in the instances that hold it and
//! nothing from the instance the viewer may not read; labels and namespaces filter; bad input
//! is a 400 naming the parameter.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/api.rs"]
mod api_fixture;
mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use api_fixture::{ADMIN, ApiEnv, P, VIEWER};
use async_trait::async_trait;
use http::StatusCode;
use kairship_core::access::{AccessError, Authorizer, Caller, InstanceResource, Verb};
use kairship_core::grpc::pb;
use serde_json::{Value, json};

const A: &str = "k-search-a";
const B: &str = "k-search-b";
/// The instance the viewer may not read.
const C: &str = "k-search-c";

/// `admin` may do everything; `viewer` may read the instances `A` and `B` only.
struct ViewerReadsTwo;

#[async_trait]
impl Authorizer for ViewerReadsTwo {
    async fn allowed(
        &self,
        caller: &Caller,
        verb: Verb,
        _: InstanceResource,
        instance: Option<&str>,
    ) -> Result<bool, AccessError> {
        Ok(caller.user == "admin" || (!verb.is_write() && matches!(instance, Some(A) | Some(B))))
    }
}

fn deployment(name: &str, app: &str) -> Value {
    json!({"metadata": {"name": name, "labels": {"app": app}}, "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": app}},
        "template": {"metadata": {"labels": {"app": app}},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

/// Creates `body` as a Deployment in `namespace` of `instance` (retrying while the
/// instance's client connects).
async fn create(env: &ApiEnv, instance: &str, namespace: &str, body: Value) {
    let path = format!("{P}/instances/{instance}/namespaces/{namespace}/deployments");
    let mut last = None;
    for _ in 0..100 {
        let (status, answer) = env.call_as("POST", &path, ADMIN, Some(body.clone())).await;
        if status.is_success() {
            return;
        }
        last = Some((status, answer));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{instance}: {last:?}");
}

/// `GET search?{query}` as `token`, repeated (bounded) until every instance searched has a
/// synced cache and `done` holds; the last answer.
async fn search_until(
    env: &ApiEnv,
    token: &str,
    query: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let path = format!("{P}/search?{query}");
    let mut last = Value::Null;
    for _ in 0..200 {
        let (status, answer) = env.call_as("GET", &path, token, None).await;
        assert_eq!(status, StatusCode::OK, "{path}: {answer}");
        if answer["unavailable"].as_array().is_some_and(Vec::is_empty) && done(&answer) {
            return answer;
        }
        last = answer;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{path}: never settled: {last:#}");
}

/// `instance/namespace/name` of each hit, in order.
fn hits(answer: &Value) -> Vec<String> {
    answer["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            format!(
                "{}/{}/{}",
                h["instance"].as_str().unwrap(),
                h["namespace"].as_str().unwrap_or("-"),
                h["name"].as_str().unwrap()
            )
        })
        .collect()
}

/// Matching objects per instance.
fn totals(answer: &Value) -> BTreeMap<String, u64> {
    answer["totals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["instance"].as_str().unwrap().to_owned(),
                t["total"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_across_three_instances_keeps_to_what_the_caller_may_read() {
    let env = ApiEnv::builder(A)
        .callers(
            std::sync::Arc::new(api_fixture::Tokens),
            std::sync::Arc::new(ViewerReadsTwo),
        )
        .start()
        .await;
    let b = common::KarmadaInstance::start(B).await;
    common::register_adopted(&env.host.client(), B, &b).await;
    let c = common::KarmadaInstance::start(C).await;
    common::register_adopted(&env.host.client(), C, &c).await;

    create(&env, A, "default", deployment("checkout-web", "checkout")).await;
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(env.instance.client());
    namespaces
        .create(
            &kube::api::PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "shop"}})).unwrap(),
        )
        .await
        .unwrap();
    create(&env, A, "shop", deployment("checkout-api", "checkout")).await;
    create(&env, A, "default", deployment("inventory", "inventory")).await;
    create(&env, B, "default", deployment("checkout-web", "checkout")).await;
    create(&env, C, "default", deployment("checkout-web", "checkout")).await;

    // The admin finds the Deployment in all three instances (the first search starts the
    // caches, which are named unavailable until they have synced).
    let admin = search_until(&env, ADMIN, "kind=Deployment&name=CHECKOUT-W", |a| {
        a["pagination"]["total"] == 3
    })
    .await;
    assert_eq!(
        hits(&admin),
        [
            format!("{A}/default/checkout-web"),
            format!("{B}/default/checkout-web"),
            format!("{C}/default/checkout-web"),
        ]
    );

    // The viewer finds it in the two instances it may read, and nothing from the third.
    let viewer = search_until(&env, VIEWER, "kind=Deployment&name=checkout-w", |a| {
        a["pagination"]["total"] == 2
    })
    .await;
    assert_eq!(
        hits(&viewer),
        [
            format!("{A}/default/checkout-web"),
            format!("{B}/default/checkout-web")
        ]
    );
    assert_eq!(
        totals(&viewer),
        BTreeMap::from([(A.to_owned(), 1), (B.to_owned(), 1)])
    );
    let hit = &viewer["items"][0];
    assert_eq!(hit["apiVersion"], "apps/v1");
    assert_eq!(hit["kind"], "Deployment");
    assert_eq!(hit["labels"], json!({"app": "checkout"}));
    assert!(hit["creationTimestamp"].is_string(), "{hit}");
    assert!(hit.get("cluster").is_none(), "{hit}");

    // Naming the instance it may not read is refused.
    let (status, body) = env
        .call_as(
            "GET",
            &format!("{P}/search?kind=Deployment&instance={B},{C}"),
            VIEWER,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // Label selector, namespace and instance filters; sorting and paging.
    let labelled = search_until(
        &env,
        VIEWER,
        "kind=Deployment&labelSelector=app%3Dcheckout",
        |a| a["pagination"]["total"] == 3,
    )
    .await;
    assert_eq!(
        hits(&labelled),
        [
            format!("{A}/shop/checkout-api"),
            format!("{A}/default/checkout-web"),
            format!("{B}/default/checkout-web"),
        ]
    );
    let in_shop = search_until(&env, VIEWER, "kind=deployments&namespace=shop", |_| true).await;
    assert_eq!(hits(&in_shop), [format!("{A}/shop/checkout-api")]);
    let not_checkout = search_until(
        &env,
        VIEWER,
        &format!("kind=Deployment&labelSelector=app!%3Dcheckout&instance={A}"),
        |_| true,
    )
    .await;
    assert_eq!(hits(&not_checkout), [format!("{A}/default/inventory")]);
    assert_eq!(totals(&not_checkout), BTreeMap::from([(A.to_owned(), 1)]));
    let paged = search_until(
        &env,
        VIEWER,
        "group=apps&version=v1&resource=deployments&sortBy=namespace&sortDir=desc&pageSize=2&page=2",
        |_| true,
    )
    .await;
    assert_eq!(
        hits(&paged),
        [
            format!("{B}/default/checkout-web"),
            format!("{A}/default/checkout-web")
        ]
    );
    assert_eq!(paged["pagination"]["total"], 4);
    assert_eq!(paged["pagination"]["pages"], 2);

    // Bad input is a 400 naming it.
    for (query, named) in [
        (
            "kind=Deployment&labelSelector=app%20in%20(",
            "labelSelector",
        ),
        ("kind=Deploymnet", "Deploymnet"),
        ("kind=Deployment&cluster=member1", "cluster"),
        ("name=web", "kind"),
    ] {
        let (status, body) = env
            .call_as("GET", &format!("{P}/search?{query}"), VIEWER, None)
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(body["code"], 3, "{query}: {body}");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains(named), "{query}: {message}");
    }

    // gRPC answers the same.
    let mut grpc = env.grpc_as(VIEWER).await;
    let answer = grpc
        .search(pb::SearchRequest {
            kind: Some("Deployment".into()),
            name: Some("checkout-w".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let found: Vec<(String, String)> = answer
        .items
        .iter()
        .map(|h| (h.instance.clone(), h.name.clone()))
        .collect();
    assert_eq!(
        found,
        [
            (A.to_owned(), "checkout-web".to_owned()),
            (B.to_owned(), "checkout-web".to_owned()),
        ]
    );
    assert_eq!(answer.pagination.unwrap().total, 2);
    assert!(answer.unavailable.is_empty());
    let refused = grpc
        .search(pb::SearchRequest {
            kind: Some("Deployment".into()),
            label_selector: Some("app in (".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(
        refused.message().contains("labelSelector"),
        "{}",
        refused.message()
    );
}

/// Signs in to the console as `token`: the session cookie.
async fn console_cookie(env: &ApiEnv, token: &str) -> String {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let signin = http
        .post(format!("{}/ui/signin", env.base))
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(format!("token={token}"))
        .send()
        .await
        .unwrap();
    signin
        .headers()
        .get_all(http::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| v.split(';').next().map(str::to_owned))
        .expect("a session cookie")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_searches_from_the_header_box() {
    let env = ApiEnv::builder(A).with_console().start().await;
    create(&env, A, "default", deployment("checkout-web", "checkout")).await;
    let cookie = console_cookie(&env, ADMIN).await;
    let get = |path: String| {
        let (http, cookie) = (env.http.clone(), cookie.clone());
        let url = format!("{}{path}", env.base);
        async move {
            let resp = http
                .get(url)
                .header(http::header::COOKIE, cookie)
                .send()
                .await
                .unwrap();
            (resp.status(), resp.text().await.unwrap())
        }
    };
    // Every page's header carries the search box.
    let (status, instances) = get("/ui/instances".into()).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        instances.contains("action=\"/ui/search\"") && instances.contains("id=\"search-name\""),
        "{instances}"
    );
    // The box sends a name; the results page searches Deployments (bounded wait for the
    // cache the first search starts).
    let mut page = String::new();
    for _ in 0..200 {
        let (status, body) = get("/ui/search?name=CHECKOUT".into()).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        page = body;
        if page.contains("<table id=\"hits\"") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The hit links its workload page.
    assert!(
        page.contains(&format!(
            "href=\"/ui/instances/{A}/namespaces/default/workloads/checkout-web\" class=\"hit\">checkout-web</a>"
        )),
        "{page}"
    );
    assert!(page.contains(&format!("Per instance: {A} 1")), "{page}");
    assert!(!page.contains("not searched"), "{page}");
    // A malformed selector shows the API's message.
    let (status, bad) = get("/ui/search?labelSelector=app+in+(".into()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(bad.contains("labelSelector"), "{bad}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_that_cannot_be_read_is_named_unavailable_and_the_others_answer() {
    let env = ApiEnv::builder(A).start().await;
    // An instance whose apiserver does not answer (nothing listens on port 1).
    let down = "k-search-down";
    let kubeconfig =
        kube_sandbox::serve::kubeconfig_yaml(down, "http://127.0.0.1:1", None, "no-token");
    common::register_adopted_with(&env.host.client(), down, &kubeconfig).await;
    create(&env, A, "default", deployment("checkout-web", "checkout")).await;
    let path = format!("{P}/search?kind=Deployment&name=checkout");
    let mut last = Value::Null;
    for _ in 0..200 {
        let answer = env.ok_as_admin("GET", &path, None).await;
        let unavailable: Vec<&str> = answer["unavailable"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["instance"].as_str().unwrap())
            .collect();
        if answer["pagination"]["total"] == 1 && unavailable == [down] {
            assert_eq!(hits(&answer), [format!("{A}/default/checkout-web")]);
            assert_eq!(totals(&answer), BTreeMap::from([(A.to_owned(), 1)]));
            let reason = answer["unavailable"][0]["reason"].as_str().unwrap();
            assert!(!reason.is_empty(), "{answer}");
            return;
        }
        last = answer;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the search never settled: {last:#}");
}
