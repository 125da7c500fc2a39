//! The audit trail over real HTTP: a sandbox host keeps the AuditRecords, a sandbox Karmada
//! instance takes the writes, and the API server (REST, gRPC, the console and the native
//! proxy) records each write it makes exactly once, failures with their code, Secrets without
//! their values; rotation keeps the newest records; `GET audit` filters, exports JSON lines
//! and shows a caller only the instances it may read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/api.rs"]
mod api_fixture;
mod common;

use std::time::Duration;

use api_fixture::{ADMIN, ApiEnv, P, VIEWER};
use async_trait::async_trait;
use http::StatusCode;
use kairship_core::access::{AccessError, Authorizer, Caller, InstanceResource, Verb};
use kairship_core::audit::log::rotate_once;
use kairship_core::audit::{AuditRecord, Retention};
use kairship_core::console::html::url_segment;
use kairship_core::grpc::{convert as grpc_convert, pb};
use kube::Api;
use kube::api::ListParams;
use serde_json::{Value, json};

const INSTANCE: &str = "k-audit";

fn keep_all() -> Retention {
    Retention {
        max_age: Duration::from_secs(24 * 3600),
        max_records: 10_000,
    }
}

/// The AuditRecords stored on the host, as the host answers them.
async fn stored(env: &ApiEnv) -> Vec<AuditRecord> {
    let api: Api<AuditRecord> = Api::namespaced(env.host.client(), "default");
    api.list(&ListParams::default()).await.unwrap().items
}

/// Waits (bounded) until the host holds `count` records; returns them.
async fn wait_for_records(env: &ApiEnv, count: usize) -> Vec<AuditRecord> {
    let mut last = Vec::new();
    for _ in 0..200 {
        last = stored(env).await;
        if last.len() >= count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        last.len(),
        count,
        "records: {:#?}",
        last.iter().map(|r| &r.spec).collect::<Vec<_>>()
    );
    last
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

const FORM: &str = "application/x-www-form-urlencoded";

/// `pairs` as a form body.
fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", url_segment(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Signs in to the console as `token`: the session cookie and the CSRF token of a page.
async fn console_session(env: &ApiEnv, token: &str) -> (String, String) {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let signin = http
        .post(format!("{}/ui/signin", env.base))
        .header(http::header::CONTENT_TYPE, FORM)
        .body(form(&[("token", token)]))
        .send()
        .await
        .unwrap();
    let cookie = signin
        .headers()
        .get_all(http::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| v.split(';').next().map(str::to_owned))
        .expect("a session cookie");
    let page = http
        .get(format!("{}/ui/instances/{INSTANCE}/create", env.base))
        .header(http::header::COOKIE, &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let marker = "name=\"_csrf\" value=\"";
    let at = page.find(marker).expect("a CSRF field") + marker.len();
    let csrf = page[at..].split('"').next().unwrap().to_owned();
    (cookie, csrf)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_door_leaves_one_record_and_the_query_filters() {
    let env = ApiEnv::builder(INSTANCE)
        .with_proxy()
        .with_console()
        .with_audit(keep_all())
        .start()
        .await;
    let ns_path = format!("{P}/instances/{INSTANCE}/namespaces/default");

    // REST.
    let (status, body) = env
        .call_as(
            "POST",
            &format!("{ns_path}/configmaps"),
            ADMIN,
            Some(configmap("via-rest")),
        )
        .await;
    assert!(status.is_success(), "{status}: {body}");
    // gRPC.
    let mut grpc = env.grpc_as(ADMIN).await;
    grpc.create_resource(pb::CreateResourceRequest {
        instance: INSTANCE.into(),
        kind: pb::ResourceKind::Configmaps as i32,
        namespace: Some("default".into()),
        body: Some(grpc_convert::json_to_struct(configmap("via-grpc")).unwrap()),
    })
    .await
    .unwrap();
    // The console's create form.
    let (cookie, csrf) = console_session(&env, ADMIN).await;
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: via-console\ndata:\n  k: v\n";
    let answer = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(format!("{}/ui/instances/{INSTANCE}/create", env.base))
        .header(http::header::COOKIE, &cookie)
        .header(http::header::CONTENT_TYPE, FORM)
        .body(form(&[
            ("_csrf", csrf.as_str()),
            ("yaml", yaml),
            ("namespace", "default"),
        ]))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::SEE_OTHER);
    // The native proxy, as kubectl calls it.
    let proxied = env
        .http
        .post(format!(
            "{}{P}/instances/{INSTANCE}/proxy/api/v1/namespaces/default/configmaps",
            env.base
        ))
        .bearer_auth(ADMIN)
        .json(&configmap("via-proxy"))
        .send()
        .await
        .unwrap();
    assert_eq!(proxied.status(), StatusCode::CREATED);
    // Reads are not recorded.
    env.ok_as_admin("GET", &format!("{ns_path}/configmaps/via-rest"), None)
        .await;

    let records = wait_for_records(&env, 4).await;
    for (door, name) in [
        ("rest", "via-rest"),
        ("grpc", "via-grpc"),
        ("console", "via-console"),
        ("proxy", "via-proxy"),
    ] {
        let of_door: Vec<_> = records.iter().filter(|r| r.spec.door == door).collect();
        assert_eq!(of_door.len(), 1, "{door}: {records:#?}");
        let r = &of_door[0].spec;
        assert_eq!(
            (
                r.user.as_str(),
                r.acting_as.as_str(),
                r.instance.as_str(),
                r.verb.as_str(),
                r.code
            ),
            // The instance sees Kairship's own identity (the default WriteIdentity).
            ("admin", "kairship", INSTANCE, "create", 201),
            "{door}"
        );
        assert_eq!(
            (
                r.object.resource.as_str(),
                r.object.namespace.as_str(),
                r.object.name.as_str()
            ),
            ("configmaps", "default", name),
            "{door}"
        );
        assert_eq!(r.message, None, "{door}");
    }

    // The query: filters, paging, JSON lines, bad input.
    let list = |query: &'static str| {
        let env = &env;
        async move {
            let (status, body) = env
                .call_as("GET", &format!("{P}/audit{query}"), ADMIN, None)
                .await;
            assert_eq!(status, StatusCode::OK, "{query}: {body}");
            body
        }
    };
    let all = list("").await;
    assert_eq!(all["pagination"]["total"], 4);
    let times: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["time"].as_str().unwrap())
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {times:?}"
    );
    let proxy = list("?door=proxy").await;
    assert_eq!(proxy["pagination"]["total"], 1);
    assert_eq!(proxy["items"][0]["object"]["name"], "via-proxy");
    assert_eq!(list("?verb=delete").await["pagination"]["total"], 0);
    assert_eq!(list("?user=viewer").await["pagination"]["total"], 0);
    assert_eq!(
        list("?user=admin&verb=create&instance=k-audit").await["pagination"]["total"],
        4
    );
    assert_eq!(list("?instance=other").await["pagination"]["total"], 0);
    assert_eq!(
        list("?since=2000-01-01T00:00:00Z&until=2999-01-01T00:00:00Z").await["pagination"]["total"],
        4
    );
    assert_eq!(
        list("?since=2999-01-01T00:00:00Z").await["pagination"]["total"],
        0
    );
    let page = list("?page=2&pageSize=3").await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    assert_eq!(page["pagination"]["pages"], 2);

    let (status, text) = env
        .send_as("GET", &format!("{P}/audit?format=jsonl"), ADMIN, None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(lines[0], all["items"][0]);
    let by_accept = env
        .http
        .get(format!("{}{P}/audit?door=rest", env.base))
        .bearer_auth(ADMIN)
        .header(http::header::ACCEPT, "application/jsonl")
        .send()
        .await
        .unwrap();
    assert_eq!(
        by_accept.headers()[http::header::CONTENT_TYPE],
        "application/jsonl"
    );
    assert_eq!(by_accept.text().await.unwrap().lines().count(), 1);

    for (query, field) in [
        ("?since=yesterday", "since"),
        ("?door=window", "door"),
        ("?format=csv", "format"),
        ("?pageSize=0", "pageSize"),
    ] {
        let (status, body) = env
            .call_as("GET", &format!("{P}/audit{query}"), ADMIN, None)
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert!(
            body["message"].as_str().unwrap().contains(field),
            "{query}: {body}"
        );
    }

    // gRPC answers the same records.
    let grpc_list = grpc
        .list_audit(pb::ListAuditRequest {
            door: Some("grpc".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(grpc_list.items.len(), 1);
    assert_eq!(grpc_list.items[0].object.as_ref().unwrap().name, "via-grpc");
    assert_eq!(grpc_list.pagination.unwrap().total, 1);

    // The console's page lists them with the same filters.
    let page = reqwest::Client::new()
        .get(format!("{}/ui/audit?door=console", env.base))
        .header(http::header::COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let page = page.text().await.unwrap();
    assert!(page.contains("via-console"), "{page}");
    assert!(!page.contains("via-proxy"), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_writes_keep_their_code_and_secrets_keep_no_value() {
    let env = ApiEnv::builder(INSTANCE)
        .with_proxy()
        .with_audit(keep_all())
        .start()
        .await;
    let ns_path = format!("{P}/instances/{INSTANCE}/namespaces/default");

    // The instance refuses an invalid label value with 422 (REST answers InvalidArgument, 400);
    // the record keeps the instance's code and message.
    let invalid = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "bad", "labels": {"app": "not ok!"}}});
    let (status, body) = env
        .call_as(
            "POST",
            &format!("{ns_path}/configmaps"),
            ADMIN,
            Some(invalid),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    // A Secret's value is never recorded, created or refused.
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds"},
        "stringData": {"password": "hunter2-plain"},
        "data": {"token": "c2VjcmV0LXRva2VuLXZhbHVl"}});
    let (status, body) = env
        .call_as("POST", &format!("{ns_path}/secrets"), ADMIN, Some(secret))
        .await;
    assert!(status.is_success(), "{status}: {body}");
    let refused = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds-2", "labels": {"app": "hunter2-in-a-label!"}},
        "stringData": {"password": "hunter2-plain"}});
    let proxied = env
        .http
        .post(format!(
            "{}{P}/instances/{INSTANCE}/proxy/api/v1/namespaces/default/secrets",
            env.base
        ))
        .bearer_auth(ADMIN)
        .json(&refused)
        .send()
        .await
        .unwrap();
    assert_eq!(proxied.status(), StatusCode::UNPROCESSABLE_ENTITY);

    let records = wait_for_records(&env, 3).await;
    let failed = records
        .iter()
        .find(|r| r.spec.object.resource == "configmaps")
        .unwrap();
    assert_eq!(failed.spec.code, 422);
    assert_eq!(failed.spec.object.name, "bad");
    assert!(
        failed
            .spec
            .message
            .as_deref()
            .is_some_and(|m| !m.is_empty()),
        "{failed:?}"
    );
    let secrets: Vec<_> = records
        .iter()
        .filter(|r| r.spec.object.resource == "secrets")
        .collect();
    assert_eq!(
        secrets
            .iter()
            .map(|r| r.spec.code)
            .collect::<Vec<_>>()
            .len(),
        2
    );
    assert!(secrets.iter().any(|r| r.spec.code == 201));
    assert!(secrets.iter().any(|r| r.spec.code == 422));
    for record in &secrets {
        assert_eq!(record.spec.message, None);
        let stored = serde_json::to_string(record).unwrap();
        for value in [
            "hunter2",
            "c2VjcmV0LXRva2VuLXZhbHVl",
            "secret-token-value",
            "aHVudGVyMi1wbGFpbg",
        ] {
            assert!(!stored.contains(value), "{value} in {stored}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotation_by_count_keeps_the_newest() {
    let env = ApiEnv::builder(INSTANCE)
        .with_audit(keep_all())
        .start()
        .await;
    let ns_path = format!("{P}/instances/{INSTANCE}/namespaces/default");
    for i in 0..5 {
        let name = format!("cm-{i}");
        let (status, body) = env
            .call_as(
                "POST",
                &format!("{ns_path}/configmaps"),
                ADMIN,
                Some(configmap(&name)),
            )
            .await;
        assert!(status.is_success(), "{status}: {body}");
        // Records are stamped with the time of the answer; the next write is answered later.
        wait_for_records(&env, i + 1).await;
    }
    let trail = env.audit.as_ref().unwrap();
    // The count follows the create the host answered: wait (bounded) for it too.
    for _ in 0..200 {
        if trail.stored() == 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // What the API server's /metrics reports as kairship_audit_records_stored and _dropped.
    let mut registry = prometheus_client::registry::Registry::default();
    trail.register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains("kairship_audit_records_stored_total 5"),
        "{text}"
    );
    assert!(
        text.contains("kairship_audit_records_dropped_total 0"),
        "{text}"
    );
    let retention = Retention {
        max_age: Duration::from_secs(24 * 3600),
        max_records: 3,
    };
    assert_eq!(rotate_once(trail.records(), retention).await.unwrap(), 2);
    let mut kept: Vec<String> = stored(&env)
        .await
        .into_iter()
        .map(|r| r.spec.object.name)
        .collect();
    kept.sort();
    assert_eq!(kept, ["cm-2", "cm-3", "cm-4"]);
    // A second pass has nothing left to delete.
    assert_eq!(rotate_once(trail.records(), retention).await.unwrap(), 0);
}

/// `admin` may do everything; `viewer` may read the instance `k-audit` only.
struct ViewerReadsOne;

#[async_trait]
impl Authorizer for ViewerReadsOne {
    async fn allowed(
        &self,
        caller: &Caller,
        verb: Verb,
        _: InstanceResource,
        instance: Option<&str>,
    ) -> Result<bool, AccessError> {
        Ok(caller.user == "admin" || (!verb.is_write() && instance == Some(INSTANCE)))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_reads_only_the_audit_of_instances_it_may_read() {
    let env = ApiEnv::builder(INSTANCE)
        .callers(
            std::sync::Arc::new(api_fixture::Tokens),
            std::sync::Arc::new(ViewerReadsOne),
        )
        .with_audit(keep_all())
        .start()
        .await;
    let other = common::KarmadaInstance::start("k-other").await;
    common::register_adopted(&env.host.client(), "k-other", &other).await;
    for instance in [INSTANCE, "k-other"] {
        let path = format!("{P}/instances/{instance}/namespaces/default/configmaps");
        let mut created = false;
        // The second instance is served once its client is connected.
        for _ in 0..100 {
            let (status, _) = env
                .call_as("POST", &path, ADMIN, Some(configmap("seen")))
                .await;
            if status.is_success() {
                created = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(created, "{instance}");
    }
    wait_for_records(&env, 2).await;

    let admin = env.ok_as_admin("GET", &format!("{P}/audit"), None).await;
    assert_eq!(admin["pagination"]["total"], 2);
    let (status, viewer) = env
        .call_as("GET", &format!("{P}/audit"), VIEWER, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{viewer}");
    let instances: Vec<&str> = viewer["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["instance"].as_str().unwrap())
        .collect();
    assert_eq!(instances, [INSTANCE]);
    let (status, body) = env
        .call_as("GET", &format!("{P}/audit?instance=k-other"), VIEWER, None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
}
