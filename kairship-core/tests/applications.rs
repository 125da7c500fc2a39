//! Multicloud applications and the Job/CronJob verbs over real HTTP and gRPC: a sandbox host
//! cluster, a sandbox Karmada instance, the service behind the REST and gRPC routes.

#![allow(clippy::unwrap_used)]

#[path = "common/api.rs"]
mod api_fixture;
mod common;

use std::time::Duration;

use api_fixture::{ADMIN, ApiEnv, GrpcClient, P, VIEWER};
use common::KarmadaInstance;
use common::ensure_namespace;
use http::StatusCode;
use kairship_core::grpc::{applications as grpc_applications, convert as grpc_convert, pb};
use kairship_core::router::RouterConfig;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

const INSTANCE: &str = "inst-1";
const NS: &str = "team-a";

type Env = ApiEnv;

impl ApiEnv {
    async fn start() -> Env {
        let instance = KarmadaInstance::start(INSTANCE).await;
        ensure_namespace(&instance.client(), NS).await;
        ApiEnv::builder(INSTANCE)
            .instance(instance)
            .user_agent("kairship-applications-test")
            .router(RouterConfig {
                read_your_writes_timeout: Duration::from_secs(2),
            })
            .start()
            .await
    }

    async fn call(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        self.call_as(method, path, token, body).await
    }

    async fn ok(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.ok_as_admin(method, path, body).await
    }

    /// The status of `GET` on the object `kind/name` of the namespace.
    async fn status_of(&self, kind: &str, name: &str) -> StatusCode {
        let path = format!("{P}/instances/{INSTANCE}/namespaces/{NS}/{kind}/{name}");
        self.call("GET", &path, ADMIN, None).await.0
    }

    async fn get(&self, kind: &str, name: &str) -> Value {
        self.ok(
            "GET",
            &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/{kind}/{name}"),
            None,
        )
        .await
    }

    async fn grpc(&self, token: &'static str) -> GrpcClient {
        self.grpc_as(token).await
    }
}

fn apps_path() -> String {
    format!("{P}/instances/{INSTANCE}/namespaces/{NS}/applications")
}

/// A Deployment `name` with a Service on port 80, placed on east and west by weight, with an
/// image and replica override for east and env and args for west.
fn application(name: &str) -> Value {
    json!({
        "workload": {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {"replicas": 4, "template": {
                "metadata": {"labels": {"app": name, "tier": "front"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}},
        "service": {"ports": [{"port": 80, "targetPort": 8080}]},
        "placement": {"clusterNames": ["east", "west"], "weights": {"east": 3, "west": 1}},
        "overrides": [
            {"cluster": "east", "image": "registry.east.example/web/nginx:1.27-east", "replicas": 3},
            {"cluster": "west", "env": [{"name": "REGION", "value": "west"}], "args": ["--quiet"]},
        ],
    })
}

/// An object without what the server fills in differently on each create.
fn stable(mut object: Value) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generation",
        ] {
            meta.remove(field);
        }
    }
    // A Service's address is allocated anew on each create, dry runs included.
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    object
}

fn error_message(status: StatusCode, body: &Value) -> String {
    let message = body["message"].as_str().unwrap_or_default().to_owned();
    assert!(
        !message.is_empty() && body["code"].is_i64(),
        "{status}: {body}"
    );
    message
}

#[tokio::test]
async fn an_application_creates_every_object_referring_to_each_other() {
    let env = Env::start().await;
    let result = env.ok("POST", &apps_path(), Some(application("web"))).await;
    assert_eq!(result["dryRun"], false);
    let kinds: Vec<(&str, &str)> = result["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("Deployment", "web"),
            ("Service", "web"),
            ("PropagationPolicy", "web"),
            ("OverridePolicy", "web-east"),
            ("OverridePolicy", "web-west"),
        ]
    );

    // Every object is stored, as the instance answers reads.
    let deployment = env.get("deployments", "web").await;
    let service = env.get("services", "web").await;
    let policy = env.get("propagationpolicies", "web").await;
    let east = env.get("overridepolicies", "web-east").await;
    let west = env.get("overridepolicies", "web-west").await;
    for object in [&deployment, &service, &policy, &east, &west] {
        assert_eq!(
            object["metadata"]["labels"]["kairship.io/application"], "web",
            "{object}"
        );
    }
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    assert_eq!(pod_labels, &json!({"app": "web", "tier": "front"}));
    assert_eq!(deployment["spec"]["selector"]["matchLabels"], *pod_labels);
    assert_eq!(&service["spec"]["selector"], pod_labels);
    assert_eq!(service["spec"]["ports"][0]["port"], 80);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], 8080);
    assert_eq!(
        policy["spec"]["resourceSelectors"],
        json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
               {"apiVersion": "v1", "kind": "Service", "name": "web"}])
    );
    let placement = &policy["spec"]["placement"];
    assert_eq!(
        placement["clusterAffinity"]["clusterNames"],
        json!(["east", "west"])
    );
    assert_eq!(
        placement["replicaScheduling"]["replicaSchedulingType"],
        "Divided"
    );
    assert_eq!(
        placement["replicaScheduling"]["weightPreference"]["staticWeightList"],
        json!([{"targetCluster": {"clusterNames": ["east"]}, "weight": 3},
               {"targetCluster": {"clusterNames": ["west"]}, "weight": 1}])
    );
    for (op, cluster) in [(&east, "east"), (&west, "west")] {
        assert_eq!(
            op["spec"]["resourceSelectors"],
            json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}])
        );
        assert_eq!(
            op["spec"]["overrideRules"][0]["targetCluster"]["clusterNames"],
            json!([cluster])
        );
    }
    let east_overriders = &east["spec"]["overrideRules"][0]["overriders"];
    let images: Vec<(&str, &str)> = east_overriders["imageOverrider"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["component"].as_str().unwrap(),
                o["value"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        images,
        [
            ("Registry", "registry.east.example"),
            ("Repository", "web/nginx"),
            ("Tag", "1.27-east")
        ]
    );
    assert_eq!(
        east_overriders["plaintext"],
        json!([{"path": "/spec/replicas", "operator": "replace", "value": 3}])
    );
    let west_overriders = &west["spec"]["overrideRules"][0]["overriders"];
    assert_eq!(
        west_overriders["argsOverrider"],
        json!([{"containerName": "web", "operator": "add", "value": ["--quiet"]}])
    );
    assert_eq!(
        west_overriders["plaintext"][0]["value"],
        json!([{"name": "REGION", "value": "west"}])
    );

    // The same call again fails at the first object and removes nothing that was there.
    let (status, body) = env
        .call("POST", &apps_path(), ADMIN, Some(application("web")))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let message = error_message(status, &body);
    assert!(
        message.starts_with("Deployment team-a/web (1st of 5 objects) was not created")
            && message.ends_with("nothing had been created"),
        "{message}"
    );
    assert_eq!(env.status_of("services", "web").await, StatusCode::OK);
}

#[tokio::test]
async fn a_failure_at_the_third_object_leaves_none_of_the_calls_objects() {
    let env = Env::start().await;
    // A PropagationPolicy already named as the application: the 3rd object fails.
    let taken = json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "web"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "other"}],
            "placement": {"clusterAffinity": {"clusterNames": ["east"]}}}});
    env.ok(
        "POST",
        &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/propagationpolicies"),
        Some(taken),
    )
    .await;
    let (status, body) = env
        .call("POST", &apps_path(), ADMIN, Some(application("web")))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], 6, "AlreadyExists: {body}");
    let message = error_message(status, &body);
    assert!(
        message.starts_with("PropagationPolicy team-a/web (3rd of 5 objects) was not created"),
        "{message}"
    );
    assert!(
        message.ends_with(
            "removed what this call had created: Service team-a/web, Deployment team-a/web"
        ),
        "{message}"
    );
    for (kind, name) in [
        ("deployments", "web"),
        ("services", "web"),
        ("overridepolicies", "web-east"),
        ("overridepolicies", "web-west"),
    ] {
        assert_eq!(
            env.status_of(kind, name).await,
            StatusCode::NOT_FOUND,
            "{kind}/{name}"
        );
    }
    // The policy that was there before the call is kept as it was.
    let kept = env.get("propagationpolicies", "web").await;
    assert_eq!(kept["spec"]["resourceSelectors"][0]["name"], "other");
    // Checked through the instance itself too, not only the cache.
    let deployments: Api<DynamicObject> = Api::namespaced_with(
        env.instance.client(),
        NS,
        &kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("apps", "v1", "Deployment"),
            "deployments",
        ),
    );
    assert!(deployments.get_opt("web").await.unwrap().is_none());
}

#[tokio::test]
async fn a_dry_run_returns_the_objects_and_creates_nothing() {
    let env = Env::start().await;
    let mut request = application("web");
    request["dryRun"] = json!(true);
    let result = env.ok("POST", &apps_path(), Some(request.clone())).await;
    assert_eq!(result["dryRun"], true);
    let objects = result["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 5);
    // As the instance would store them: defaults filled in, uid given.
    assert_eq!(objects[0]["kind"], "Deployment");
    assert!(objects[0]["metadata"]["uid"].is_string(), "{}", objects[0]);
    assert_eq!(objects[1]["spec"]["selector"]["app"], "web");
    for (kind, name) in [
        ("deployments", "web"),
        ("services", "web"),
        ("propagationpolicies", "web"),
        ("overridepolicies", "web-east"),
        ("overridepolicies", "web-west"),
    ] {
        assert_eq!(
            env.status_of(kind, name).await,
            StatusCode::NOT_FOUND,
            "{kind}/{name}"
        );
    }
    // The instance judges a dry run as a create: a taken name is refused, nothing created.
    env.ok(
        "POST",
        &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/services"),
        Some(json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 1}]}})),
    )
    .await;
    let (status, body) = env.call("POST", &apps_path(), ADMIN, Some(request)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        error_message(status, &body).starts_with("Service team-a/web (2nd of 5 objects)"),
        "{body}"
    );
    assert_eq!(
        env.status_of("deployments", "web").await,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn bad_requests_are_refused_before_anything_is_created() {
    let env = Env::start().await;
    // Members for placement by label and region.
    let clusters: Api<DynamicObject> = Api::all_with(
        env.instance.client(),
        &kairship_core::api::clusters_resource(),
    );
    for (name, env_label, region) in [("east", "prod", "eu"), ("west", "dev", "eu")] {
        let cluster = serde_json::from_value(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name, "labels": {"env": env_label}},
            "spec": {"region": region, "syncMode": "Push"}}))
        .unwrap();
        clusters
            .create(&PostParams::default(), &cluster)
            .await
            .unwrap();
    }
    let by_label = |cluster: &str| {
        let mut app = application("web");
        app["placement"] = json!({"clusterLabels": {"env": "prod"}, "regions": ["eu"]});
        app["overrides"] = json!([{"cluster": cluster, "replicas": 1}]);
        app
    };
    // Placement by label: an override of a selected cluster is fine (dry run).
    let mut fine = by_label("east");
    fine["dryRun"] = json!(true);
    let result = env.ok("POST", &apps_path(), Some(fine)).await;
    assert_eq!(
        result["objects"][2]["spec"]["placement"]["clusterAffinity"],
        json!({"labelSelector": {"matchLabels": {"env": "prod"}},
               "fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu"]}]}})
    );

    let mut unknown_kind = application("web");
    unknown_kind["workload"]["kind"] = json!("Pod");
    let mut empty_placement = application("web");
    empty_placement["placement"] = json!({});
    let mut outside = application("web");
    outside["overrides"][0]["cluster"] = json!("north");
    let mut bad_name = application("web");
    bad_name["workload"]["metadata"]["name"] = json!("Web App");
    let cases = [
        (
            unknown_kind,
            "workload.kind: \"Pod\" is not a workload kind",
        ),
        (empty_placement, "placement: selects no cluster"),
        (
            outside,
            "overrides: cluster \"north\" is not in the placement (clusterNames: east, west)",
        ),
        (
            bad_name,
            "workload.metadata.name: \"Web App\" is not a valid name",
        ),
        (
            by_label("west"),
            "overrides: cluster \"west\" is not in the placement (it selects east)",
        ),
    ];
    for (request, want) in cases {
        let (status, body) = env.call("POST", &apps_path(), ADMIN, Some(request)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{want}: {body}");
        assert_eq!(body["code"], 3, "{body}");
        assert!(
            error_message(status, &body).starts_with(want),
            "{want}: {body}"
        );
    }
    // Unknown fields in the request itself.
    let mut typo = application("web");
    typo["placement"]["clusterName"] = json!(["east"]);
    let (status, body) = env.call("POST", &apps_path(), ADMIN, Some(typo)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // A viewer may not create applications.
    let (status, body) = env
        .call("POST", &apps_path(), VIEWER, Some(application("web")))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        env.status_of("deployments", "web").await,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn rest_and_grpc_create_applications_alike() {
    let env = Env::start().await;
    let mut grpc = env.grpc(ADMIN).await;
    let to_pb = |name: &str, dry_run: bool| pb::CreateApplicationRequest {
        instance: INSTANCE.into(),
        namespace: NS.into(),
        workload: Some(
            grpc_convert::json_to_struct(application(name)["workload"].clone()).unwrap(),
        ),
        service: Some(pb::ApplicationService {
            r#type: None,
            ports: vec![pb::ApplicationPort {
                name: None,
                port: 80,
                target_port: Some(8080),
                protocol: None,
            }],
        }),
        placement: Some(pb::Placement {
            cluster_names: vec!["east".into(), "west".into()],
            weights: [("east".to_owned(), 3), ("west".to_owned(), 1)].into(),
            ..Default::default()
        }),
        overrides: vec![
            pb::ClusterOverride {
                cluster: "east".into(),
                image: Some("registry.east.example/web/nginx:1.27-east".into()),
                replicas: Some(3),
                ..Default::default()
            },
            pb::ClusterOverride {
                cluster: "west".into(),
                env: vec![pb::EnvVar {
                    name: "REGION".into(),
                    value: "west".into(),
                }],
                args: vec!["--quiet".into()],
                ..Default::default()
            },
        ],
        dry_run,
    };
    let stable_result = |result: Value| {
        let objects: Vec<Value> = result["objects"]
            .as_array()
            .unwrap()
            .iter()
            .cloned()
            .map(stable)
            .collect();
        (result["dryRun"].clone(), objects)
    };
    let mut rest_request = application("web");
    rest_request["dryRun"] = json!(true);
    let rest = env.ok("POST", &apps_path(), Some(rest_request)).await;
    let over_grpc = grpc
        .create_application(to_pb("web", true))
        .await
        .unwrap()
        .into_inner();
    let over_grpc =
        serde_json::to_value(grpc_applications::application_result_from_pb(over_grpc)).unwrap();
    assert_eq!(stable_result(over_grpc), stable_result(rest));

    // Created for real over gRPC: the REST reads show it.
    let created = grpc
        .create_application(to_pb("api", false))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(created.objects.len(), 5);
    assert_eq!(
        env.get("propagationpolicies", "api").await["spec"]["resourceSelectors"][1]["name"],
        "api"
    );

    // The same errors: the code and message of REST are gRPC's.
    let mut bad = to_pb("x", false);
    bad.placement = Some(pb::Placement::default());
    let status = grpc.create_application(bad).await.unwrap_err();
    let mut rest_bad = application("x");
    rest_bad["placement"] = json!({});
    let (rest_status, rest_body) = env.call("POST", &apps_path(), ADMIN, Some(rest_bad)).await;
    assert_eq!(status.code() as i64, rest_body["code"].as_i64().unwrap());
    assert_eq!(status.message(), rest_body["message"].as_str().unwrap());
    assert_eq!(rest_status, StatusCode::BAD_REQUEST);
    let status = grpc
        .create_application(to_pb("api", false))
        .await
        .unwrap_err();
    let (_, rest_body) = env
        .call("POST", &apps_path(), ADMIN, Some(application("api")))
        .await;
    assert_eq!(status.code() as i64, rest_body["code"].as_i64().unwrap());
    assert_eq!(status.message(), rest_body["message"].as_str().unwrap());
}

fn job(name: &str) -> Value {
    json!({"metadata": {"name": name, "labels": {"team": "a"}}, "spec": {"backoffLimit": 1,
        "template": {"metadata": {"labels": {"app": name}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}})
}

/// `kind` `name` of the namespace with one container, selected by `app: <name>`.
fn apps_object(kind: &str, name: &str) -> Value {
    let mut spec = json!({"selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": name, "image": "nginx:1.27"}]}}});
    if kind == "StatefulSet" {
        spec["serviceName"] = json!(name);
    }
    json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": spec})
}

const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";

#[tokio::test]
async fn statefulsets_and_daemonsets_restart_as_kubectl_rollout_restart() {
    let env = Env::start().await;
    let ns_path = format!("{P}/instances/{INSTANCE}/namespaces/{NS}");
    let apps = format!("{ns_path}/resources/apps/v1");
    env.ok(
        "POST",
        &format!("{apps}/statefulsets"),
        Some(apps_object("StatefulSet", "db")),
    )
    .await;
    env.ok(
        "POST",
        &format!("{apps}/daemonsets"),
        Some(apps_object("DaemonSet", "agent")),
    )
    .await;

    // REST: the template annotation, as `kubectl rollout restart` sets it.
    let restarted = env
        .ok("POST", &format!("{ns_path}/statefulsets/db:restart"), None)
        .await;
    let at = restarted["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(at.ends_with('Z') && at.len() == 20, "{at}");
    let stored = env
        .ok("GET", &format!("{apps}/statefulsets/db"), None)
        .await;
    assert_eq!(
        stored["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT],
        at.as_str()
    );
    // They have no pause, and the viewer may not restart them.
    let (status, body) = env
        .call(
            "POST",
            &format!("{ns_path}/daemonsets/agent:pause"),
            ADMIN,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(error_message(status, &body).contains(":restart"), "{body}");
    let (status, _) = env
        .call(
            "POST",
            &format!("{ns_path}/daemonsets/agent:restart"),
            VIEWER,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = env
        .call(
            "POST",
            &format!("{ns_path}/daemonsets/gone:restart"),
            ADMIN,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // gRPC: DeploymentAction with the kind.
    let mut grpc = env.grpc(ADMIN).await;
    let request = |verb: pb::DeploymentVerb, kind: &str| pb::DeploymentActionRequest {
        instance: INSTANCE.into(),
        namespace: NS.into(),
        name: "agent".into(),
        action: verb as i32,
        kind: Some(kind.into()),
    };
    let restarted = grpc
        .deployment_action(request(pb::DeploymentVerb::Restart, "daemonsets"))
        .await
        .unwrap()
        .into_inner();
    let restarted = grpc_convert::struct_to_json(restarted);
    assert!(
        restarted["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT].is_string(),
        "{restarted}"
    );
    let err = grpc
        .deployment_action(request(pb::DeploymentVerb::Pause, "daemonsets"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    let err = grpc
        .deployment_action(request(pb::DeploymentVerb::Restart, "jobs"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
}

#[tokio::test]
async fn jobs_restart_and_cronjobs_pause_and_resume() {
    let env = Env::start().await;
    let ns_path = format!("{P}/instances/{INSTANCE}/namespaces/{NS}");
    let old = env
        .ok("POST", &format!("{ns_path}/jobs"), Some(job("once")))
        .await;
    let old_uid = old["metadata"]["uid"].as_str().unwrap().to_owned();
    let old_selector = old["spec"]["selector"].clone();
    assert!(
        old_selector.to_string().contains(&old_uid),
        "{old_selector}"
    );

    // Restart: a new Job of the same spec, with a selector and labels of its own uid.
    let restarted = env
        .ok("POST", &format!("{ns_path}/jobs/once:restart"), None)
        .await;
    let new_uid = restarted["metadata"]["uid"].as_str().unwrap().to_owned();
    assert_ne!(new_uid, old_uid);
    assert!(
        restarted["spec"]["selector"].to_string().contains(&new_uid),
        "{restarted}"
    );
    assert!(!restarted.to_string().contains(&old_uid), "{restarted}");
    assert_eq!(restarted["metadata"]["labels"]["team"], "a");
    assert_eq!(
        restarted["spec"]["template"]["metadata"]["labels"]["app"],
        "once"
    );
    let stored = env.get("jobs", "once").await;
    assert_eq!(stored["metadata"]["uid"], new_uid.as_str());

    // A Job that still runs pods is not restarted: 409 with the reason.
    let jobs: Api<DynamicObject> = Api::namespaced_with(
        env.instance.client(),
        NS,
        &kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("batch", "v1", "Job"),
            "jobs",
        ),
    );
    jobs.patch_status(
        "once",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"active": 1}})),
    )
    .await
    .unwrap();
    kube_sandbox::testing::wait::eventually("the cache sees the running job", || async {
        env.get("jobs", "once").await["status"]["active"] == 1
    })
    .await;
    let (status, body) = env
        .call("POST", &format!("{ns_path}/jobs/once:restart"), ADMIN, None)
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(
        error_message(status, &body),
        "job team-a/once is still running (1 active pods): wait for it to finish, or delete \
         it, before restarting it"
    );
    let (status, body) = env
        .call("POST", &format!("{ns_path}/jobs/gone:restart"), ADMIN, None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = env
        .call("POST", &format!("{ns_path}/jobs/once:pause"), ADMIN, None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(error_message(status, &body).contains(":restart"), "{body}");
    let (status, _) = env
        .call(
            "POST",
            &format!("{ns_path}/jobs/once:restart"),
            VIEWER,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // CronJobs: pause, pause again (409), resume, resume again (409).
    env.ok(
        "POST",
        &format!("{ns_path}/cronjobs"),
        Some(
            json!({"metadata": {"name": "tick"}, "spec": {"schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
        ),
    )
    .await;
    let paused = env
        .ok("POST", &format!("{ns_path}/cronjobs/tick:pause"), None)
        .await;
    assert_eq!(paused["spec"]["suspend"], true);
    let (status, body) = env
        .call(
            "POST",
            &format!("{ns_path}/cronjobs/tick:pause"),
            ADMIN,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(
        error_message(status, &body),
        "cronjob team-a/tick is already paused"
    );
    // The same over gRPC.
    let mut grpc = env.grpc(ADMIN).await;
    let resumed = grpc
        .cron_job_action(pb::CronJobActionRequest {
            instance: INSTANCE.into(),
            namespace: NS.into(),
            name: "tick".into(),
            action: pb::CronJobVerb::Resume as i32,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        grpc_convert::struct_to_json(resumed)["spec"]["suspend"],
        false
    );
    let (status, body) = env
        .call(
            "POST",
            &format!("{ns_path}/cronjobs/tick:resume"),
            ADMIN,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let err = grpc
        .cron_job_action(pb::CronJobActionRequest {
            instance: INSTANCE.into(),
            namespace: NS.into(),
            name: "tick".into(),
            action: pb::CronJobVerb::Resume as i32,
        })
        .await
        .unwrap_err();
    assert_eq!(err.message(), body["message"].as_str().unwrap());
    let (status, _) = env
        .call(
            "POST",
            &format!("{ns_path}/cronjobs/none:pause"),
            ADMIN,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Job restart over gRPC once the Job has finished.
    jobs.patch_status(
        "once",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"active": 0, "succeeded": 1}})),
    )
    .await
    .unwrap();
    kube_sandbox::testing::wait::eventually("the cache sees the finished job", || async {
        env.get("jobs", "once").await["status"]["active"] == 0
    })
    .await;
    let again = grpc
        .restart_job(pb::RestartJobRequest {
            instance: INSTANCE.into(),
            namespace: NS.into(),
            name: "once".into(),
        })
        .await
        .unwrap()
        .into_inner();
    let again = grpc_convert::struct_to_json(again);
    assert_ne!(again["metadata"]["uid"], new_uid.as_str());
    assert!(
        again
            .get("status")
            .is_none_or(|s| s.get("succeeded").is_none())
    );
}

#[tokio::test]
async fn every_workload_kind_makes_an_application() {
    let env = Env::start().await;
    let pod = json!({"spec": {"restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox:1.36"}]}});
    let always = json!({"spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}});
    let cases = [
        (
            "StatefulSet",
            "apps/v1/statefulsets",
            json!({"replicas": 2, "serviceName": "db", "template": always}),
        ),
        (
            "DaemonSet",
            "apps/v1/daemonsets",
            json!({"template": always}),
        ),
        ("Job", "batch/v1/jobs", json!({"template": pod})),
        (
            "CronJob",
            "batch/v1/cronjobs",
            json!({"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": pod}}}),
        ),
    ];
    for (kind, resource, spec) in cases {
        let name = kind.to_ascii_lowercase();
        let request = json!({
            "workload": {"kind": kind, "metadata": {"name": name}, "spec": spec},
            "placement": {"clusterNames": ["east"]},
            "overrides": [{"cluster": "east", "image": "busybox:1.37", "args": ["-x"]}],
        });
        let result = env.ok("POST", &apps_path(), Some(request)).await;
        assert_eq!(result["objects"].as_array().unwrap().len(), 3, "{kind}");
        let stored = env
            .ok(
                "GET",
                &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/resources/{resource}/{name}"),
                None,
            )
            .await;
        assert_eq!(stored["kind"], kind);
        assert_eq!(
            stored["metadata"]["labels"]["kairship.io/application"],
            name.as_str()
        );
        let policy = env.get("propagationpolicies", &name).await;
        assert_eq!(
            policy["spec"]["resourceSelectors"][0]["kind"], kind,
            "{policy}"
        );
        let op = env.get("overridepolicies", &format!("{name}-east")).await;
        let overriders = &op["spec"]["overrideRules"][0]["overriders"];
        let template = if kind == "CronJob" {
            "/spec/jobTemplate/spec/template"
        } else {
            "/spec/template"
        };
        assert_eq!(
            overriders["imageOverrider"][0]["predicate"]["path"],
            format!("{template}/spec/containers/0/image"),
            "{op}"
        );
        assert_eq!(overriders["argsOverrider"][0]["containerName"], "c");
    }
}
