//! Placement previews and drift over real HTTP, against a kube-sandbox Karmada instance run by
//! the Karmada emulation (`karmada_sim`: cluster status, the cluster proxy, the propagation
//! controllers) with three kube-sandbox members served over loopback, and Kairship's REST and
//! gRPC on top.
//!
//! The instance has four Clusters: `east`, `west` and `south` (Push members, labelled
//! `env=prod`; `south` tainted `dedicated=gpu:NoSchedule`) and `north` (labelled `env=dev`,
//! Pull mode, never reached). A preview answers what Karmada's scheduler decides for them; a
//! member copy edited by hand is drift until the edit is undone.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use common::{CLUSTER_CRD, eventually, load_crd};
use kairship_core::access::{
    AccessError, Authenticator, Authorizer, Caller, InstanceResource, Verb,
};
use kairship_core::api::{KairshipApi, KairshipService, ServiceConfig};
use kairship_core::grpc::pb;
use kairship_core::karmada_sim::cluster_proxy::with_cluster_proxy;
use kairship_core::karmada_sim::{cluster_status, execution_space, propagation};
use kairship_core::router::{
    DirectBackend, DiscoveryCache, EmbeddedCacheBackend, InstanceWriter, ReadWriteRouter,
    SplitRouter, StaticInstanceClients,
};
use kairship_core::server::{AppParts, app};
use kube::api::{Patch, PatchParams};
use kube_sandbox::{ClusterOptions, ServeOptions, Served, SimNode};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const INSTANCE: &str = "fleet";
const NS: &str = "demo";
const LIMIT: Duration = Duration::from_secs(30);

/// `admin` may use the instance; `outsider` may not (Kairship's own check).
struct Tokens;

#[async_trait]
impl Authenticator for Tokens {
    async fn authenticate(&self, token: &str) -> Result<Caller, AccessError> {
        match token {
            "admin" | "outsider" => Ok(Caller::new(token, vec![])),
            _ => Err(AccessError::Unauthenticated("unknown token".into())),
        }
    }
}

#[async_trait]
impl Authorizer for Tokens {
    async fn allowed(
        &self,
        caller: &Caller,
        _: Verb,
        _: InstanceResource,
        _: Option<&str>,
    ) -> Result<bool, AccessError> {
        Ok(caller.user != "outsider")
    }
}

async fn send(client: &kube::Client, method: &str, path: &str, body: Option<Value>) -> Value {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body.map(|b| b.to_string().into_bytes()).unwrap_or_default())
        .unwrap();
    let text = client.request_text(request).await.unwrap();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn deployment(name: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": name, "image": "nginx:1.27",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}
    })
}

/// A member with two nodes running the workload controllers; Kairship's caller `admin` may
/// read it (Karmada's cluster proxy impersonates the caller).
async fn member(name: &str) -> (kube_sandbox::Cluster, Served) {
    let cluster = kube_sandbox::Cluster::with_options(
        name,
        ClusterOptions {
            workload_controllers: true,
            ..ClusterOptions::default()
        },
    );
    for i in 0..2 {
        cluster
            .add_node(&SimNode::new(&format!("{name}-n{i}"), "4", "8Gi"))
            .unwrap();
    }
    let client = cluster.client();
    send(
        &client,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        Some(json!({
            "metadata": {"name": "reader"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]
        })),
    )
    .await;
    send(&client, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", Some(json!({
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "admin"}]
    }))).await;
    let served = cluster.serve(ServeOptions::default()).await.unwrap();
    (cluster, served)
}

struct Env {
    instance: kube_sandbox::Cluster,
    members: Vec<(kube_sandbox::Cluster, Served)>,
    base: String,
    http: reqwest::Client,
    shutdown: CancellationToken,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Env {
    async fn start() -> Env {
        kube_kit::client::install_crypto_provider();
        let instance = kube_sandbox::Cluster::with_options(
            INSTANCE,
            with_cluster_proxy(ClusterOptions::default()),
        );
        let admin = instance.client();
        let mut crds = vec![serde_json::from_str(CLUSTER_CRD).unwrap()];
        for file in [
            "karmada/policy.karmada.io_propagationpolicies.yaml",
            "karmada/policy.karmada.io_clusterpropagationpolicies.yaml",
            "karmada/policy.karmada.io_overridepolicies.yaml",
            "karmada/policy.karmada.io_clusteroverridepolicies.yaml",
            "karmada/work.karmada.io_resourcebindings.yaml",
            "karmada/work.karmada.io_clusterresourcebindings.yaml",
            "karmada/work.karmada.io_works.yaml",
        ] {
            crds.push(load_crd(file));
        }
        kube_sandbox::testing::install_crds(&admin, crds).await;
        for ns in ["karmada-cluster", NS] {
            kube_sandbox::testing::ensure_namespace(&admin, ns).await;
        }
        send(&admin, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", Some(json!({
            "metadata": {"name": "cluster-proxy"},
            "rules": [{"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/proxy"], "verbs": ["*"]}]
        }))).await;
        send(&admin, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", Some(json!({
            "metadata": {"name": "cluster-proxy"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-proxy"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "admin"}]
        }))).await;
        let mut members = Vec::new();
        for name in ["east", "west", "south"] {
            let (cluster, served) = member(name).await;
            let secret = json!({"token": b64(cluster.admin_token()), "caBundle": b64(served.cluster_ca_pem())});
            send(
                &admin,
                "POST",
                "/api/v1/namespaces/karmada-cluster/secrets",
                Some(json!({"metadata": {"name": name}, "data": secret})),
            )
            .await;
            let mut spec = json!({"syncMode": "Push", "apiEndpoint": served.url,
                "secretRef": {"namespace": "karmada-cluster", "name": name},
                "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": name}});
            if name == "south" {
                spec["taints"] =
                    json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]);
            }
            send(
                &admin,
                "POST",
                "/apis/cluster.karmada.io/v1alpha1/clusters",
                Some(json!({
                    "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                    "metadata": {"name": name, "labels": {"env": "prod"}}, "spec": spec
                })),
            )
            .await;
            members.push((cluster, served));
        }
        send(&admin, "POST", "/apis/cluster.karmada.io/v1alpha1/clusters", Some(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "north", "labels": {"env": "dev"}}, "spec": {"syncMode": "Pull"}
        }))).await;
        // North's karmada-agent reports it Ready (without a report Karmada taints a Pull
        // cluster not-ready, then unreachable).
        send(&admin, "PUT", "/apis/cluster.karmada.io/v1alpha1/clusters/north/status", Some({
            let mut north = send(&admin, "GET", "/apis/cluster.karmada.io/v1alpha1/clusters/north", None).await;
            north["status"] = json!({"conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady",
                "message": "cluster is healthy and ready to accept workloads",
                "lastTransitionTime": "2026-11-28T20:00:00Z"}]});
            north
        })).await;
        let shutdown = CancellationToken::new();
        cluster_status::spawn(admin.clone(), Duration::from_secs(1), shutdown.clone());
        execution_space::spawn(admin.clone(), Duration::from_secs(1), shutdown.clone());
        propagation::spawn(admin.clone(), shutdown.clone());

        let served = instance.serve(ServeOptions::default()).await.unwrap();
        let instance_client = kube::Client::try_from(
            kube::Config::from_custom_kubeconfig(served.kubeconfig().unwrap(), &Default::default())
                .await
                .unwrap(),
        )
        .unwrap();
        std::mem::forget(served);
        let clients = Arc::new(StaticInstanceClients::new().with(INSTANCE, instance_client));
        let router: Arc<dyn ReadWriteRouter> = Arc::new(SplitRouter::new(
            Arc::new(EmbeddedCacheBackend::new(clients.clone())),
            Arc::new(DirectBackend::new(clients.clone())),
            Arc::new(InstanceWriter::new(clients.clone())),
        ));
        let host = kube_sandbox::Cluster::new("host");
        let api: Arc<dyn KairshipApi> = Arc::new(
            KairshipService::new(
                host.client(),
                router,
                Arc::new(Tokens),
                ServiceConfig::default(),
            )
            .with_discovery(clients, Arc::new(DiscoveryCache::default())),
        );
        std::mem::forget(host);
        let grpc = kairship_core::grpc::routes(api.clone(), Arc::new(Tokens))
            .await
            .unwrap();
        let app = app(AppParts {
            api,
            authenticator: Arc::new(Tokens),
            proxy: None,
            grpc: Some(grpc),
            console: None,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Env {
            instance,
            members,
            base: format!("http://{addr}"),
            http: reqwest::Client::new(),
            shutdown,
        }
    }

    async fn rest(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self
            .http
            .request(
                method.parse().unwrap(),
                format!(
                    "{}/apis/kairship.io/v1alpha1/instances/{INSTANCE}{path}",
                    self.base
                ),
            )
            .bearer_auth("admin");
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn grpc(
        &self,
    ) -> pb::kairship_service_client::KairshipServiceClient<tonic::transport::Channel> {
        let channel = tonic::transport::Endpoint::from_shared(self.base.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        pb::kairship_service_client::KairshipServiceClient::new(channel)
    }

    fn member(&self, name: &str) -> kube::Client {
        self.members
            .iter()
            .find(|(c, _)| c.name() == name)
            .unwrap()
            .0
            .client()
    }

    /// Waits until every Push member is Ready (the emulated cluster-status controller has
    /// probed it), so that previews and propagation see the members' status.
    async fn members_ready(&self) {
        // Ready, and without the taints Karmada's cluster controller keeps until they are.
        eventually("the members to be Ready and untainted", LIMIT, || async {
            let list = send(
                &self.instance.client(),
                "GET",
                "/apis/cluster.karmada.io/v1alpha1/clusters",
                None,
            )
            .await;
            let ready = list["items"]
                .as_array()?
                .iter()
                .filter(|c| {
                    let untainted = c["spec"]["taints"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .all(|t| {
                            !t["key"]
                                .as_str()
                                .unwrap_or_default()
                                .starts_with("cluster.karmada.io/")
                        });
                    untainted
                        && c["status"]["conditions"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
                .count();
            (ready == 4).then_some(())
        })
        .await;
    }
}

fn with_token<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", "Bearer admin".parse().unwrap());
    request
}

/// `(cluster, replicas)` of a preview's chosen clusters.
fn split(preview: &Value) -> Vec<(String, i64)> {
    preview["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["cluster"].as_str().unwrap().to_owned(),
                c["replicas"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// `(cluster, exclusion, reason)` of a preview's clusters left out.
fn left_out(preview: &Value) -> Vec<(String, String, String)> {
    preview["leftOut"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["cluster"].as_str().unwrap().to_owned(),
                l["exclusion"].as_str().unwrap().to_owned(),
                l["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn owned(rows: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    rows.iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect()
}

const AFFINITY: &str = "cluster(s) did not match the placement cluster affinity constraint";
const GPU_TAINT: &str = "cluster(s) had untolerated taint {dedicated=gpu:NoSchedule}";

#[tokio::test]
async fn a_preview_answers_the_split_and_why_each_cluster_is_left_out() {
    let env = Env::start().await;
    env.members_ready().await;
    // Cluster affinity by label (env=prod: east, west, south), south tainted, static weights
    // east 2, west 1, south 3. Karmada filters first (pkg/scheduler/framework/plugins:
    // tainttoleration leaves south out, clusteraffinity leaves north out), then divides the 6
    // replicas by the weights of the clusters left (pkg/scheduler/core/assignment.go
    // assignByStaticWeightStrategy; Webster, pkg/util/helper/webstermethod.go: 2:1 of 6 is
    // 4 and 2).
    let policy = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
            "placement": {
                "clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}},
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": [
                        {"targetCluster": {"clusterNames": ["east"]}, "weight": 2},
                        {"targetCluster": {"clusterNames": ["west"]}, "weight": 1},
                        {"targetCluster": {"clusterNames": ["south"]}, "weight": 3}]}}
            }
        }
    });
    let (code, preview) = env
        .rest(
            "POST",
            "/placements:preview",
            Some(json!({"policy": policy, "workload": deployment("web", 6)})),
        )
        .await;
    assert_eq!(code, 200, "{preview}");
    assert_eq!(preview["replicas"], 6);
    assert_eq!(preview["replicaSchedulingType"], "Divided");
    assert_eq!(
        split(&preview),
        [("east".to_owned(), 4), ("west".to_owned(), 2)]
    );
    let expected = owned(&[
        ("north", "ClusterAffinity", AFFINITY),
        ("south", "Taint", GPU_TAINT),
    ]);
    assert_eq!(left_out(&preview), expected);
    assert!(preview.get("message").is_none(), "{preview}");

    // The same through a reference to a Deployment of the instance, and over gRPC.
    send(
        &env.instance.client(),
        "POST",
        &format!("/apis/apps/v1/namespaces/{NS}/deployments"),
        Some(deployment("web", 6)),
    )
    .await;
    let reference = json!({"group": "apps", "version": "v1", "resource": "deployments", "namespace": NS, "name": "web"});
    let (code, by_reference) = env
        .rest(
            "POST",
            "/placements:preview",
            Some(json!({"policy": policy, "workloadRef": reference})),
        )
        .await;
    assert_eq!(code, 200, "{by_reference}");
    assert_eq!(split(&by_reference), split(&preview));
    let mut grpc = env.grpc().await;
    let answer = grpc
        .preview_placement(with_token(pb::PreviewPlacementRequest {
            instance: INSTANCE.into(),
            policy: Some(kairship_core::grpc::convert::json_to_struct(policy.clone()).unwrap()),
            workload_ref: Some(pb::WorkloadReference {
                group: "apps".into(),
                version: "v1".into(),
                resource: "deployments".into(),
                namespace: Some(NS.into()),
                name: "web".into(),
            }),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    let grpc_split: Vec<(String, i64)> = answer
        .clusters
        .iter()
        .map(|c| (c.cluster.clone(), i64::from(c.replicas)))
        .collect();
    assert_eq!(grpc_split, split(&preview));
    let grpc_left: Vec<(String, String, String)> = answer
        .left_out
        .iter()
        .map(|l| (l.cluster.clone(), l.exclusion.clone(), l.reason.clone()))
        .collect();
    assert_eq!(grpc_left, expected);

    // The application call's placement previews as the policy it creates.
    let (code, app) = env
        .rest(
            "POST",
            "/placements:preview",
            Some(json!({
                "placement": {"clusterNames": ["east", "west", "south"], "weights": {"east": 1, "west": 1, "south": 1}},
                "workload": deployment("web", 4)
            })),
        )
        .await;
    assert_eq!(code, 200, "{app}");
    assert_eq!(
        split(&app),
        [("east".to_owned(), 2), ("west".to_owned(), 2)]
    );
    assert_eq!(
        left_out(&app),
        owned(&[
            ("north", "ClusterAffinity", AFFINITY),
            ("south", "Taint", GPU_TAINT)
        ])
    );
}

#[tokio::test]
async fn a_placement_selecting_nothing_is_an_empty_answer_and_bad_input_a_400() {
    let env = Env::start().await;
    env.members_ready().await;
    let nowhere = json!({"kind": "PropagationPolicy",
        "spec": {"placement": {"clusterAffinity": {"clusterNames": ["nowhere"]}}}});
    let (code, preview) = env
        .rest(
            "POST",
            "/placements:preview",
            Some(json!({"policy": nowhere, "workload": deployment("web", 2)})),
        )
        .await;
    assert_eq!(code, 200, "{preview}");
    assert_eq!(preview["clusters"], json!([]));
    // Taint toleration filters before cluster affinity (the plugin order of
    // pkg/scheduler/framework/plugins/registry.go), so south keeps its taint as the reason.
    let every = owned(&[
        ("east", "ClusterAffinity", AFFINITY),
        ("north", "ClusterAffinity", AFFINITY),
        ("south", "Taint", GPU_TAINT),
        ("west", "ClusterAffinity", AFFINITY),
    ]);
    assert_eq!(left_out(&preview), every);
    // FitError.Error (pkg/scheduler/framework/types.go): every reason counted, sorted.
    assert_eq!(
        preview["message"],
        "0/4 clusters are available: 1 cluster(s) had untolerated taint {dedicated=gpu:NoSchedule}, 3 cluster(s) did not match the placement cluster affinity constraint."
    );

    // Malformed input: a 400 naming the field.
    for (body, field) in [
        (
            json!({"policy": {"kind": "PropagationPolicy", "spec": {"placement": {"replicaScheduling": {"replicaSchedulingType": "Tripled"}}}},
                "workload": deployment("web", 2)}),
            "policy.spec.placement.replicaScheduling.replicaSchedulingType",
        ),
        (
            json!({"policy": {"kind": "PropagationPolicy", "spec": {"placement": {"clusterAffinity": "east"}}},
                "workload": deployment("web", 2)}),
            "policy.spec.placement.clusterAffinity",
        ),
        (json!({"policy": nowhere}), "workload"),
        (
            json!({"policy": nowhere, "workloadRef": {"group": "apps", "version": "v1", "resource": "deployments", "name": "Bad_Name"}}),
            "workloadRef.name",
        ),
    ] {
        let (code, err) = env.rest("POST", "/placements:preview", Some(body)).await;
        assert_eq!(code, 400, "{err}");
        assert_eq!(
            err["details"][0]["fieldViolations"][0]["field"], field,
            "{err}"
        );
    }
    let (code, err) = env
        .rest(
            "POST",
            "/placements:preview",
            Some(json!({"policy": nowhere, "workload": deployment("web", 2), "replicas": 3})),
        )
        .await;
    assert_eq!(code, 400, "unknown fields are refused: {err}");
}

/// The drift answer's members as `(cluster, state, [paths])`.
fn members(drift: &Value) -> Vec<(String, String, Vec<String>)> {
    drift["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["cluster"].as_str().unwrap().to_owned(),
                m["state"].as_str().unwrap().to_owned(),
                m["fields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f["path"].as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect()
}

fn in_sync(clusters: &[&str]) -> Vec<(String, String, Vec<String>)> {
    clusters
        .iter()
        .map(|c| ((*c).to_owned(), "InSync".to_owned(), Vec::new()))
        .collect()
}

#[tokio::test]
async fn a_member_copy_edited_by_hand_is_drift_until_reverted() {
    let env = Env::start().await;
    env.members_ready().await;
    let admin = env.instance.client();
    send(
        &admin,
        "POST",
        &format!("/apis/apps/v1/namespaces/{NS}/deployments"),
        Some(deployment("web", 2)),
    )
    .await;
    send(&admin, "POST", &format!("/apis/policy.karmada.io/v1alpha1/namespaces/{NS}/propagationpolicies"), Some(json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
            "placement": {"clusterAffinity": {"clusterNames": ["east", "west"]}}}
    }))).await;
    let drift_path = format!("/namespaces/{NS}/resources/apps/v1/deployments/web/drift");
    // Propagated, the copies match what Karmada applies.
    let drift = eventually("both copies in sync", LIMIT, || async {
        let (code, drift) = env.rest("GET", &drift_path, None).await;
        (code == 200 && members(&drift) == in_sync(&["east", "west"])).then_some(drift)
    })
    .await;
    assert_eq!(drift["kind"], "Deployment");
    let (code, all) = env.rest("GET", "/drift", None).await;
    assert_eq!(code, 200, "{all}");
    assert_eq!(all["items"], json!([]), "{all}");
    // Karmada propagates the namespace to every member, north too; north (Pull mode, no
    // endpoint) cannot be read through the cluster proxy, and says so.
    let unreachable: Vec<&str> = all["unreachable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["cluster"].as_str().unwrap())
        .collect();
    assert_eq!(unreachable, ["north"], "{all}");
    assert!(all["checked"].as_u64().unwrap() >= 2, "{all}");

    // By hand in east, as `kubectl label` does: Karmada keeps labels it does not manage
    // (RetainClusterFields), so the copy stays changed, and only that field is drift.
    let east = kube::Api::<kube::core::DynamicObject>::namespaced_with(
        env.member("east"),
        NS,
        &kube::core::ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&()),
    );
    let by_hand = PatchParams {
        field_manager: Some("kubectl-label".into()),
        ..PatchParams::default()
    };
    east.patch(
        "web",
        &by_hand,
        &Patch::Merge(json!({"metadata": {"labels": {"tier": "hand-edited"}}})),
    )
    .await
    .unwrap();
    let (code, drift) = env.rest("GET", &drift_path, None).await;
    assert_eq!(code, 200, "{drift}");
    assert_eq!(
        members(&drift),
        vec![
            (
                "east".to_owned(),
                "Drifted".to_owned(),
                vec!["metadata.labels.tier".to_owned()]
            ),
            ("west".to_owned(), "InSync".to_owned(), vec![]),
        ],
        "{drift}"
    );
    let field = &drift["members"][0]["fields"][0];
    assert_eq!(field["live"], "hand-edited");
    assert!(field.get("applied").is_none(), "{field}");
    let (_, all) = env.rest("GET", "/drift", None).await;
    let items = all["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{all}");
    assert_eq!(
        (items[0]["kind"].as_str(), items[0]["name"].as_str()),
        (Some("Deployment"), Some("web"))
    );
    assert_eq!(
        members(&items[0]),
        vec![(
            "east".to_owned(),
            "Drifted".to_owned(),
            vec!["metadata.labels.tier".to_owned()]
        )]
    );
    // gRPC answers alike.
    let mut grpc = env.grpc().await;
    let answer = grpc
        .get_instance_drift(with_token(pb::GetInstanceDriftRequest {
            instance: INSTANCE.into(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.items.len(), 1);
    assert_eq!(answer.items[0].members[0].state, "Drifted");
    assert_eq!(
        answer.items[0].members[0].fields[0].path,
        "metadata.labels.tier"
    );

    // Undone, no drift is left.
    east.patch(
        "web",
        &by_hand,
        &Patch::Merge(json!({"metadata": {"labels": {"tier": null}}})),
    )
    .await
    .unwrap();
    let (_, drift) = env.rest("GET", &drift_path, None).await;
    assert_eq!(members(&drift), in_sync(&["east", "west"]), "{drift}");
    let (_, all) = env.rest("GET", "/drift", None).await;
    assert_eq!(all["items"], json!([]), "{all}");

    // A template that does not exist is a 404; a caller who may not read the instance, a 403.
    let (code, _) = env
        .rest(
            "GET",
            &format!("/namespaces/{NS}/resources/apps/v1/deployments/nope/drift"),
            None,
        )
        .await;
    assert_eq!(code, 404);
    let response = env
        .http
        .get(format!(
            "{}/apis/kairship.io/v1alpha1/instances/{INSTANCE}/drift",
            env.base
        ))
        .bearer_auth("outsider")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
}
