//! What a real Karmada v1.19 answered (its answers transcribed into the cases below), held against
//! Kairship over real HTTP and gRPC: a sandbox host, a sandbox Karmada instance with
//! Karmada's Cluster strategy (`karmada_sim::cluster_strategy`) and cluster proxy, the API
//! server and, where deletion is concerned, the controller-manager.
//!
//! - zones: Karmada keeps them in `spec.zones` and refuses `zone` beside `zones`; a member's
//!   zone is set, changed and cleared through REST and gRPC, and placements by zone select it;
//! - an instance that cannot be reached is not deleted unless forced;
//! - an application into a namespace the instance does not hold creates it, as `:promote`;
//! - the typed routes serve PATCH as the generic ones do.

#![allow(clippy::unwrap_used)]

#[path = "common/api.rs"]
mod api_fixture;
mod common;

use std::sync::Arc;
use std::time::Duration;

use api_fixture::{ADMIN, AdminToken, ApiEnv, Everything, GrpcClient, P};
use common::{KarmadaInstance, ensure_namespace, eventually};
use http::StatusCode;
use kairship_core::grpc::pb;
use kairship_core::instance::{Instance, InstanceState};
use kairship_core::karmada_sim::{cluster_proxy, cluster_strategy};
use kairship_core::router::RouterConfig;
use kube::Api;
use kube::api::DeleteParams;
use serde_json::{Value, json};

const INSTANCE: &str = "k1";
const NS: &str = "demo";
const LIMIT: Duration = Duration::from_secs(20);

type Env = ApiEnv;

impl ApiEnv {
    async fn start() -> Env {
        let options = cluster_strategy::with_cluster_strategy(cluster_proxy::with_cluster_proxy(
            kube_sandbox::ClusterOptions::default(),
        ));
        ApiEnv::builder(INSTANCE)
            .instance(KarmadaInstance::start_with(INSTANCE, options).await)
            .callers(Arc::new(AdminToken), Arc::new(Everything))
            .user_agent("kairship-karmada-v1-19-test")
            .client_timings(Duration::from_secs(2), Duration::from_secs(30))
            .router(RouterConfig {
                read_your_writes_timeout: Duration::from_secs(2),
            })
            .start()
            .await
    }

    /// `method path` with `body` sent as `content_type`; the status and the JSON answer.
    async fn send(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut req = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .bearer_auth(ADMIN);
        if let Some(body) = body {
            req = req
                .header("content-type", content_type)
                .body(body.to_owned());
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let text = body.map(|b| b.to_string());
        self.send(method, path, "application/json", text.as_deref())
            .await
    }

    async fn ok(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.ok_as_admin(method, path, body).await
    }

    async fn grpc(&self) -> GrpcClient {
        self.grpc_as(ADMIN).await
    }
}

fn cluster_path(name: &str) -> String {
    format!("{P}/instances/{INSTANCE}/clusters/{name}")
}

/// `spec.zone` and `spec.zones` of a member as the instance stores it.
async fn stored_zones(env: &Env, name: &str) -> (Value, Value) {
    let api: Api<kube::core::DynamicObject> = Api::all_with(
        env.instance.client(),
        &kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster"),
            "clusters",
        ),
    );
    let cluster = api.get(name).await.unwrap();
    (
        cluster.data["spec"]["zone"].clone(),
        cluster.data["spec"]["zones"].clone(),
    )
}

#[tokio::test]
async fn the_emulated_karmada_answers_zone_writes_as_the_recorded_one() {
    let env = Env::start().await;
    let clusters = env.instance.client();
    let api: Api<kube::core::DynamicObject> = Api::all_with(
        clusters,
        &kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster"),
            "clusters",
        ),
    );
    let cluster: kube::core::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": "msb"},
        "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:19443", "zone": "eu-west-1a"}
    }))
    .unwrap();
    api.create(&Default::default(), &cluster).await.unwrap();
    // migrateZoneToZones: `zone` alone is stored as `zones`.
    assert_eq!(
        stored_zones(&env, "msb").await,
        (Value::Null, json!(["eu-west-1a"]))
    );
    // cluster-patch-zone-when-zones-set-error.json: a merge patch of `zone` while `zones`
    // is set.
    let err = api
        .patch(
            "msb",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"zone": "eu-west-1b"}})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    // Recorded: 422, reason Invalid, message `Cluster.cluster.karmada.io "msb" is invalid:
    // spec.spec: Invalid value: {<the spec>}: Zone and Zones cannot co-exist`.
    assert_eq!(status.code, 422);
    assert_eq!(status.reason, "Invalid");
    assert!(
        status.message.starts_with(
            "Cluster.cluster.karmada.io \"msb\" is invalid: spec.spec: Invalid value: "
        ) && status.message.ends_with(": Zone and Zones cannot co-exist"),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn zones_round_trip_and_placements_by_zone_select_them() {
    let env = Env::start().await;
    ensure_namespace(&env.instance.client(), NS).await;
    for name in ["m1", "m2"] {
        env.ok(
            "POST",
            &format!("{P}/instances/{INSTANCE}/clusters"),
            Some(json!({
                "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": name},
                "spec": {"syncMode": "Push", "apiEndpoint": format!("https://{name}:6443")}
            })),
        )
        .await;
    }

    // Set (REST), change (gRPC), clear (REST); read back through the API each time.
    env.ok(
        "PATCH",
        &cluster_path("m1"),
        Some(json!({"zone": "eu-west-1a"})),
    )
    .await;
    let read = env.ok("GET", &cluster_path("m1"), None).await;
    assert_eq!(read["spec"]["zones"], json!(["eu-west-1a"]), "{read}");
    assert!(read["spec"].get("zone").is_none(), "{read}");

    let mut grpc = env.grpc().await;
    let changed = grpc
        .update_member(pb::UpdateMemberRequest {
            instance: INSTANCE.into(),
            cluster: "m1".into(),
            zone: Some("eu-west-1b".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let changed = kairship_core::grpc::convert::struct_to_json(changed);
    assert_eq!(changed["spec"]["zones"], json!(["eu-west-1b"]), "{changed}");
    assert_eq!(
        stored_zones(&env, "m1").await,
        (Value::Null, json!(["eu-west-1b"]))
    );

    env.ok("PATCH", &cluster_path("m1"), Some(json!({"zone": ""})))
        .await;
    assert_eq!(stored_zones(&env, "m1").await, (Value::Null, Value::Null));
    let read = env.ok("GET", &cluster_path("m1"), None).await;
    assert!(read["spec"].get("zones").is_none(), "{read}");

    // Both members in zones; an application placed by zone with weights selects them.
    env.ok(
        "PATCH",
        &cluster_path("m1"),
        Some(json!({"zone": "eu-west-1a"})),
    )
    .await;
    env.ok(
        "PATCH",
        &cluster_path("m2"),
        Some(json!({"zone": "eu-west-1b"})),
    )
    .await;
    let application = json!({
        "workload": {"kind": "Deployment", "metadata": {"name": "shop"}, "spec": {
            "replicas": 4,
            "selector": {"matchLabels": {"app": "shop"}},
            "template": {"metadata": {"labels": {"app": "shop"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}},
        "placement": {"zones": ["eu-west-1a", "eu-west-1b"], "weights": {"m1": 3, "m2": 1}}
    });
    let created = env
        .ok(
            "POST",
            &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/applications"),
            Some(application.clone()),
        )
        .await;
    let policy = created["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "PropagationPolicy")
        .unwrap();
    assert_eq!(
        policy["spec"]["placement"]["clusterAffinity"]["fieldSelector"]["matchExpressions"],
        json!([{"key": "zone", "operator": "In", "values": ["eu-west-1a", "eu-west-1b"]}])
    );
    // A weight for a member outside the zones is refused with what the zones select.
    let mut outside = application;
    outside["workload"]["metadata"]["name"] = json!("cart");
    outside["placement"]["zones"] = json!(["eu-west-1a"]);
    let (status, err) = env
        .call(
            "POST",
            &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/applications"),
            Some(outside),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains(r#"cluster "m2" is not in the placement (it selects m1)"#),
        "{err}"
    );
}

#[tokio::test]
async fn an_application_into_a_missing_namespace_creates_it() {
    let env = Env::start().await;
    let app = |name: &str, dry_run: bool| {
        json!({
            "dryRun": dry_run,
            "workload": {"kind": "Deployment", "metadata": {"name": name}, "spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}},
            "service": {"ports": [{"port": 80}]},
            "placement": {"clusterNames": ["m1"]}
        })
    };
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.instance.client());

    // A dry run creates nothing, the namespace neither, and answers what it would create.
    let preview = env
        .ok(
            "POST",
            &format!("{P}/instances/{INSTANCE}/namespaces/fresh/applications"),
            Some(app("shop", true)),
        )
        .await;
    let kinds: Vec<&str> = preview["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["Namespace", "Deployment", "Service", "PropagationPolicy"]
    );
    assert!(namespaces.get_opt("fresh").await.unwrap().is_none());

    let created = env
        .ok(
            "POST",
            &format!("{P}/instances/{INSTANCE}/namespaces/fresh/applications"),
            Some(app("shop", false)),
        )
        .await;
    assert_eq!(created["objects"][0]["kind"], "Namespace");
    assert!(namespaces.get_opt("fresh").await.unwrap().is_some());
    let deployment = env
        .ok(
            "GET",
            &format!("{P}/instances/{INSTANCE}/namespaces/fresh/deployments/shop"),
            None,
        )
        .await;
    assert_eq!(deployment["metadata"]["namespace"], "fresh");

    // Into the namespace that now exists: no Namespace is created.
    let second = env
        .ok(
            "POST",
            &format!("{P}/instances/{INSTANCE}/namespaces/fresh/applications"),
            Some(app("cart", false)),
        )
        .await;
    assert_eq!(second["objects"][0]["kind"], "Deployment");

    // A failed call removes the Namespace it created with the rest: the instance refuses the
    // Service after the Namespace and the Deployment were created.
    let fault = env.instance.cluster.faults().add(kube_sandbox::FaultRule {
        resource: Some("services".into()),
        verbs: vec!["create".into()],
        action: kube_sandbox::FaultAction::Status(500),
    });
    let (status, err) = env
        .call(
            "POST",
            &format!("{P}/instances/{INSTANCE}/namespaces/other/applications"),
            Some(app("shop", false)),
        )
        .await;
    env.instance.cluster.faults().remove(fault);
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{err}");
    let message = err["message"].as_str().unwrap();
    assert!(
        message
            .contains("removed what this call had created: Deployment other/shop, Namespace other"),
        "{message}"
    );
    eventually("the namespace removed", LIMIT, || async {
        namespaces
            .get_opt("other")
            .await
            .unwrap()
            .is_none_or(|ns| ns.metadata.deletion_timestamp.is_some())
            .then_some(())
    })
    .await;
}

/// A typed route and the generic route of the same object.
fn typed_and_generic(kind_path: &str, generic_path: &str) -> [String; 2] {
    [
        format!("{P}/instances/{INSTANCE}/{kind_path}"),
        format!("{P}/instances/{INSTANCE}/{generic_path}"),
    ]
}

/// An answer without what differs between two writes of the same change.
fn stable(mut answer: Value) -> Value {
    if let Some(meta) = answer.get_mut("metadata").and_then(Value::as_object_mut) {
        for volatile in [
            "resourceVersion",
            "managedFields",
            "uid",
            "creationTimestamp",
            "generation",
            "name",
        ] {
            meta.remove(volatile);
        }
    }
    answer
}

#[tokio::test]
async fn typed_patch_answers_as_the_generic_one() {
    let env = Env::start().await;
    ensure_namespace(&env.instance.client(), NS).await;
    for name in ["typed", "generic"] {
        env.ok(
            "POST",
            &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/configmaps"),
            Some(json!({"metadata": {"name": name}, "data": {"a": "1"}})),
        )
        .await;
    }
    for name in ["typed", "generic"] {
        env.ok(
            "POST",
            &format!("{P}/instances/{INSTANCE}/clusterpropagationpolicies"),
            Some(
                json!({"metadata": {"name": name}, "spec": {"resourceSelectors": [
                {"apiVersion": "v1", "kind": "Namespace", "name": "x"}]}}),
            ),
        )
        .await;
    }
    let configmaps = |name: &str| {
        typed_and_generic(
            &format!("namespaces/{NS}/configmaps/{name}"),
            &format!("namespaces/{NS}/resources/core/v1/configmaps/{name}"),
        )
    };
    let cpps = |name: &str| {
        typed_and_generic(
            &format!("clusterpropagationpolicies/{name}"),
            &format!("resources/policy.karmada.io/v1alpha1/clusterpropagationpolicies/{name}"),
        )
    };
    // (paths of the typed and the generic object, query, content type, body)
    let cases: Vec<([String; 2], &str, &str, String)> = vec![
        (
            configmaps("{}"),
            "",
            "application/merge-patch+json",
            json!({"data": {"b": "2"}}).to_string(),
        ),
        (
            configmaps("{}"),
            "",
            "application/json-patch+json",
            json!([{"op": "add", "path": "/data/c", "value": "3"}]).to_string(),
        ),
        (
            configmaps("{}"),
            "",
            "application/strategic-merge-patch+json",
            json!({"data": {"d": "4"}}).to_string(),
        ),
        (
            configmaps("{}"),
            "?fieldManager=tester&force=true",
            "application/apply-patch+yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: NAME}\ndata: {e: '5'}\n".to_owned(),
        ),
        // Errors: a patch type kube-apiserver does not take, force on a merge patch, an
        // unknown field of an apply patch, an object that does not exist, a broken JSON patch.
        (configmaps("{}"), "", "text/plain", "x".to_owned()),
        (
            configmaps("{}"),
            "?force=true",
            "application/merge-patch+json",
            "{}".to_owned(),
        ),
        (
            configmaps("{}"),
            "?fieldManager=tester",
            "application/apply-patch+yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: NAME}\nbogus: 1\n".to_owned(),
        ),
        (
            typed_and_generic(
                &format!("namespaces/{NS}/configmaps/nosuch"),
                &format!("namespaces/{NS}/resources/core/v1/configmaps/nosuch"),
            ),
            "",
            "application/merge-patch+json",
            "{}".to_owned(),
        ),
        (
            configmaps("{}"),
            "",
            "application/json-patch+json",
            json!([{"op": "remove", "path": "/data/absent"}]).to_string(),
        ),
        (
            cpps("{}"),
            "",
            "application/merge-patch+json",
            json!({"metadata": {"labels": {"team": "a"}}}).to_string(),
        ),
    ];
    for ([typed, generic], query, content_type, body) in cases {
        let mut answers = Vec::new();
        for (path, name) in [(typed, "typed"), (generic, "generic")] {
            let path = path.replace("{}", name);
            let body = body.replace("NAME", name);
            let (status, value) = env
                .send(
                    "PATCH",
                    &format!("{path}{query}"),
                    content_type,
                    Some(&body),
                )
                .await;
            answers.push((status, stable(value)));
        }
        let [typed, generic] = [answers[0].clone(), answers[1].clone()];
        assert_ne!(
            typed.0,
            StatusCode::METHOD_NOT_ALLOWED,
            "{content_type} {body}"
        );
        let differing_names = |v: &Value| {
            v.to_string()
                .replace("typed", "NAME")
                .replace("generic", "NAME")
        };
        assert_eq!(
            (typed.0, differing_names(&typed.1)),
            (generic.0, differing_names(&generic.1)),
            "{content_type} {query} {body}"
        );
    }
    let patched = env
        .ok(
            "GET",
            &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/configmaps/typed"),
            None,
        )
        .await;
    assert_eq!(
        patched["data"],
        json!({"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"})
    );

    // The document describes the typed PATCH with the generic one's content types.
    let doc = env.ok("GET", "/openapi.json", None).await;
    let body_types = |path: &str| {
        let mut types: Vec<String> = doc["paths"][path]["patch"]["requestBody"]["content"]
            .as_object()
            .unwrap_or_else(|| panic!("no PATCH of {path}"))
            .keys()
            .cloned()
            .collect();
        types.sort();
        types
    };
    let generic = body_types(&format!(
        "{P}/instances/{{instance}}/namespaces/{{namespace}}/resources/{{group}}/{{version}}/{{resource}}/{{name}}"
    ));
    assert_eq!(
        body_types(&format!(
            "{P}/instances/{{instance}}/namespaces/{{namespace}}/{{kind}}/{{name}}"
        )),
        generic
    );
    assert_eq!(
        body_types(&format!("{P}/instances/{{instance}}/{{kind}}/{{name}}")),
        generic
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_unreachable_instance_is_deleted_only_when_forced() {
    let env = Env::start().await;
    let hc = env.host.client();
    let (_ctx, stop) = common::start_manager(&hc, common::fast_config());
    // Running, and counted once: no members.
    eventually("the instance counted", LIMIT, || async {
        let status = common::get_instance(&hc, INSTANCE).await?.status?;
        (status.state == InstanceState::Running && status.summary?.cluster_summary.total_num == 0)
            .then_some(())
    })
    .await;

    env.instance
        .cluster
        .faults()
        .add(kube_sandbox::FaultRule::all(
            kube_sandbox::FaultAction::Status(503),
        ));
    common::wait_state(&hc, INSTANCE, InstanceState::Unavailable, LIMIT).await;

    // Through the API: refused, saying why and how to force it.
    let (status, err) = env
        .call("DELETE", &format!("{P}/instances/{INSTANCE}"), None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("cannot be reached") && message.contains("force=true"),
        "{message}"
    );
    assert!(common::get_instance(&hc, INSTANCE).await.is_some());

    // On the host (kubectl delete): the finalizer stays, the condition says why.
    Api::<Instance>::all(hc.clone())
        .delete(INSTANCE, &DeleteParams::default())
        .await
        .unwrap();
    let blocked = eventually("the deletion blocked", LIMIT, || async {
        let status = common::get_instance(&hc, INSTANCE).await?.status?;
        status
            .conditions
            .into_iter()
            .find(|c| c.type_ == "DeletionBlocked" && c.status == "True")
    })
    .await;
    assert_eq!(blocked.reason, "ControlPlaneUnreachable");
    assert!(common::get_instance(&hc, INSTANCE).await.is_some());

    // Forced: completes.
    env.ok(
        "DELETE",
        &format!("{P}/instances/{INSTANCE}?force=true"),
        None,
    )
    .await;
    eventually("the instance gone", LIMIT, || async {
        common::get_instance(&hc, INSTANCE)
            .await
            .is_none()
            .then_some(())
    })
    .await;
    stop.cancel();
}
