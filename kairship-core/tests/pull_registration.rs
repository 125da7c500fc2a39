//! Pull registration over real HTTP: a sandbox host cluster with an Adopt-mode Instance, a
//! sandbox Karmada instance served over HTTPS (bootstrap token and client certificate
//! authentication, kube-controller-manager's CSR signer), and the Kairship API in front. The
//! credential the returned manifests hold is used as the karmada-agent would use it.

#![allow(clippy::unwrap_used)]

#[path = "common/api.rs"]
mod api_fixture;
mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use api_fixture::{ADMIN, AdminToken, ApiEnv, Everything, P};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::{CLUSTER_CRD, KarmadaInstance};
use http::StatusCode;
use kairship_core::access::WriteIdentity;
use kairship_core::grpc::pb;
use kairship_core::instance::Instance;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Api, Client};
use kube_sandbox::ServeOptions;
use serde_json::{Value, json};

const INSTANCE: &str = "inst-pull";
const LABEL: &str = "kairship.io/member-cluster";
/// What the connection controller records of a Karmada v1.19.0-rc.0 build.
const KARMADA_VERSION: &str = "v1.19.0-rc.0-18-gf8fdd02df";

fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn clusters_resource() -> ApiResource {
    ar("cluster.karmada.io", "v1alpha1", "Cluster", "clusters")
}

fn secrets_resource() -> ApiResource {
    ar("", "v1", "Secret", "secrets")
}

fn csrs_resource() -> ApiResource {
    ar(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
    )
}

type Env = ApiEnv;

impl ApiEnv {
    /// The instance serves HTTPS (client certificates authenticate); its CSR signer runs as
    /// Karmada's kube-controller-manager's does.
    async fn start() -> Env {
        Self::start_as(false).await
    }

    /// With `gateway`, Kairship reaches the instance as the user `kairship-gateway` holding
    /// exactly the ClusterRole of docs/kairship/access.md and writes impersonating the caller
    /// (`admin`, given every right inside the instance), as the chart deploys it.
    async fn start_as(gateway: bool) -> Env {
        let cluster = kube_sandbox::Cluster::new(INSTANCE);
        kube_sandbox::testing::install_crds(
            &cluster.client(),
            vec![
                serde_json::from_str(CLUSTER_CRD).unwrap(),
                common::load_crd("karmada/work.karmada.io_works.yaml"),
            ],
        )
        .await;
        let served = cluster
            .serve(ServeOptions {
                tls: true,
                ..ServeOptions::default()
            })
            .await
            .unwrap();
        let mut instance = KarmadaInstance { cluster, served };
        let mut builder = ApiEnv::builder(INSTANCE)
            .callers(Arc::new(AdminToken), Arc::new(Everything))
            .user_agent("kairship-pull-test")
            .without_discovery();
        if gateway {
            documented_gateway(&instance).await;
            instance.served.kubeconfig_yaml = instance
                .served
                .kubeconfig_yaml
                .replace(instance.cluster.auth().admin_token(), GATEWAY_TOKEN);
            builder = builder.write_identity(WriteIdentity::Impersonate);
        }
        let env = builder.instance(instance).start().await;
        // What the connection controller writes: the instance's Karmada version.
        Api::<Instance>::all(env.host.client())
            .patch_status(
                INSTANCE,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"karmadaVersion": KARMADA_VERSION}})),
            )
            .await
            .unwrap();
        env
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.call_as(method, path, ADMIN, body).await
    }

    fn admin(&self) -> Client {
        self.instance.client()
    }

    async fn register(&self, body: Value) -> Value {
        let (status, answer) = self
            .call(
                "POST",
                &format!("{P}/instances/{INSTANCE}/clusters:register"),
                Some(body),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        answer
    }
}

const GATEWAY_TOKEN: &str = "kairship-gateway-token";

/// The ClusterRole docs/kairship/access.md gives Kairship's identity in an instance, for the
/// user `kairship-gateway`; and every right inside the instance for the caller `admin`.
async fn documented_gateway(instance: &KarmadaInstance) {
    instance.cluster.auth().add_token(
        GATEWAY_TOKEN,
        kube_sandbox::auth::UserInfo::new("kairship-gateway", &[]),
    );
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/kairship/access.md"
    ))
    .unwrap();
    let start = doc.find("metadata: {name: kairship-gateway}").unwrap();
    let block = &doc[doc[..start].rfind("```yaml").unwrap() + 7..];
    let block = &block[..block.find("```").unwrap()];
    let mut objects: Vec<Value> = block
        .split("---")
        .map(|d| serde_saphyr::from_str::<Value>(d).unwrap())
        .collect();
    for o in &mut objects {
        if o["kind"] == "ClusterRoleBinding" {
            o["subjects"] = json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "kairship-gateway"}]);
        }
    }
    objects.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "everything"}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}));
    objects.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "admin-everything"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "admin"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "everything"}}));
    for o in objects {
        let kind = o["kind"].as_str().unwrap().to_owned();
        let resource = ar(
            "rbac.authorization.k8s.io",
            "v1",
            &kind,
            &format!("{}s", kind.to_lowercase()),
        );
        Api::<DynamicObject>::all_with(instance.client(), &resource)
            .create(&PostParams::default(), &serde_json::from_value(o).unwrap())
            .await
            .unwrap();
    }
}

/// A Push member the instance already has: its credential Secret and its `Cluster`.
async fn other_member(env: &Env) {
    kube_sandbox::testing::ensure_namespace(&env.admin(), "karmada-cluster").await;
    Api::<DynamicObject>::namespaced_with(env.admin(), "karmada-cluster", &secrets_resource())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "other", "namespace": "karmada-cluster"},
                "data": {"token": STANDARD.encode("other-members-token")}}))
            .unwrap(),
        )
        .await
        .unwrap();
    Api::<DynamicObject>::all_with(env.admin(), &clusters_resource())
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": "other"},
                "spec": {"syncMode": "Push", "apiEndpoint": "https://other:6443",
                         "secretRef": {"namespace": "karmada-cluster", "name": "other"}}}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
}

/// A client of the instance from the kubeconfig in the manifests' `karmada-kubeconfig` Secret.
async fn agent_client(manifests: &[Value]) -> (Client, Value) {
    let secret = manifests.iter().find(|m| m["kind"] == "Secret").unwrap();
    let text = secret["stringData"]["karmada-kubeconfig"].as_str().unwrap();
    let parsed: Value = serde_json::from_str(text).unwrap();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(text).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    (Client::try_from(config).unwrap(), parsed)
}

fn code(result: Result<impl Sized, kube::Error>) -> u16 {
    match result {
        Ok(_) => 200,
        Err(kube::Error::Api(s)) => s.code,
        Err(other) => panic!("{other}"),
    }
}

async fn review(admin: &Client, user: &str, attributes: Value) -> bool {
    let body = json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": ["system:karmada:agents", "system:authenticated"],
                 "resourceAttributes": attributes},
    });
    let answer: Value = admin
        .request(
            http::Request::post("/apis/authorization.k8s.io/v1/subjectaccessreviews")
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&body).unwrap())
                .unwrap(),
        )
        .await
        .unwrap();
    answer["status"]["allowed"] == true
}

/// `Kind namespace/name` of every object carrying the join label of `cluster`.
async fn labelled(client: &Client, cluster: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let params = ListParams::default().labels(&format!("{LABEL}={cluster}"));
    for resource in [
        secrets_resource(),
        ar("rbac.authorization.k8s.io", "v1", "Role", "roles"),
        ar(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
        ),
        ar(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
        ),
        ar(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
        ),
        csrs_resource(),
        clusters_resource(),
    ] {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        for o in api.list(&params).await.unwrap().items {
            let name = o.metadata.name.clone().unwrap();
            found.insert(match o.metadata.namespace {
                Some(ns) => format!("{} {ns}/{name}", resource.kind),
                None => format!("{} {name}", resource.kind),
            });
        }
    }
    found
}

#[tokio::test]
async fn the_pull_agent_may_reach_its_own_cluster_only() {
    let env = Env::start().await;
    other_member(&env).await;
    let answer = env
        .register(
            json!({"name": "edge-1", "region": "eu", "apiEndpoint": "https://edge-1.example:6443"}),
        )
        .await;
    let manifests: Vec<Value> = serde_json::from_value(answer["manifests"].clone()).unwrap();
    let (agent, kubeconfig) = agent_client(&manifests).await;
    // The credential is a client certificate of the agent's user; no token.
    let user = &kubeconfig["users"][0];
    assert_eq!(user["name"], "system:karmada:agent:edge-1");
    assert!(user["user"].get("token").is_none(), "{user}");
    assert!(user["user"]["client-certificate-data"].is_string());

    // Another member's credential and Cluster are out of reach.
    let secrets = Api::<DynamicObject>::namespaced_with(
        agent.clone(),
        "karmada-cluster",
        &secrets_resource(),
    );
    assert_eq!(code(secrets.get("other").await), 403);
    assert_eq!(code(secrets.list(&ListParams::default()).await), 403);
    let clusters = Api::<DynamicObject>::all_with(agent.clone(), &clusters_resource());
    let taint =
        Patch::Merge(json!({"spec": {"taints": [{"key": "evil", "effect": "NoSchedule"}]}}));
    assert_eq!(
        code(
            clusters
                .patch("other", &PatchParams::default(), &taint)
                .await
        ),
        403
    );
    assert_eq!(
        code(
            clusters
                .patch_status(
                    "other",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {}}))
                )
                .await
        ),
        403
    );
    let other_works = Api::<DynamicObject>::namespaced_with(
        agent.clone(),
        "karmada-es-other",
        &ar("work.karmada.io", "v1alpha1", "Work", "works"),
    );
    assert_eq!(code(other_works.list(&ListParams::default()).await), 403);
    // Its own Cluster: read it and write its status, as the agent does.
    let mut own = clusters.get("edge-1").await.unwrap();
    own.data["status"] = json!({"conditions": [{"type": "Ready", "status": "True",
        "reason": "ClusterReady", "message": "cluster is healthy and ready to accept workloads",
        "lastTransitionTime": "2026-11-28T20:00:00Z"}]});
    clusters
        .replace_status("edge-1", &PostParams::default(), &own)
        .await
        .unwrap();

    // The instance's authorizer says the same (SubjectAccessReview).
    let admin = env.admin();
    let agent_user = "system:karmada:agent:edge-1";
    for (attributes, allowed) in [
        (
            json!({"verb": "get", "resource": "secrets", "namespace": "karmada-cluster", "name": "other"}),
            false,
        ),
        (
            json!({"verb": "list", "resource": "secrets", "namespace": "karmada-cluster"}),
            false,
        ),
        (
            json!({"verb": "patch", "group": "cluster.karmada.io", "resource": "clusters", "name": "other"}),
            false,
        ),
        (
            json!({"verb": "update", "group": "cluster.karmada.io", "resource": "clusters", "subresource": "status", "name": "other"}),
            false,
        ),
        (
            json!({"verb": "update", "group": "cluster.karmada.io", "resource": "clusters", "subresource": "status", "name": "edge-1"}),
            true,
        ),
        (
            json!({"verb": "get", "resource": "secrets", "namespace": "karmada-cluster", "name": "edge-1"}),
            true,
        ),
        (
            json!({"verb": "list", "group": "work.karmada.io", "resource": "works", "namespace": "karmada-es-edge-1"}),
            true,
        ),
        (
            json!({"verb": "list", "group": "work.karmada.io", "resource": "works", "namespace": "karmada-es-other"}),
            false,
        ),
    ] {
        assert_eq!(
            review(&admin, agent_user, attributes.clone()).await,
            allowed,
            "{attributes}"
        );
    }

    // The CSR was posted with the bootstrap token, approved, and the token is gone.
    let token_id = answer["tokenId"].as_str().unwrap();
    let csrs = Api::<DynamicObject>::all_with(admin.clone(), &csrs_resource());
    let csr = csrs
        .list(&ListParams::default().labels(&format!("{LABEL}=edge-1")))
        .await
        .unwrap()
        .items
        .pop()
        .unwrap();
    assert_eq!(
        csr.data["spec"]["username"],
        format!("system:bootstrap:{token_id}")
    );
    assert_eq!(
        csr.data["spec"]["signerName"],
        "kubernetes.io/kube-apiserver-client"
    );
    assert_eq!(csr.data["status"]["conditions"][0]["type"], "Approved");
    assert!(
        Api::<DynamicObject>::namespaced_with(admin.clone(), "kube-system", &secrets_resource())
            .get_opt(&format!("bootstrap-token-{token_id}"))
            .await
            .unwrap()
            .is_none()
    );
    let expires: jiff::Timestamp = answer["expiration"].as_str().unwrap().parse().unwrap();
    assert!(
        expires
            > jiff::Timestamp::now()
                .checked_add(jiff::SignedDuration::from_hours(24 * 300))
                .unwrap()
    );
}

#[tokio::test]
async fn the_pull_manifests_run_karmadas_agent_release() {
    let env = Env::start().await;
    let answer = env
        .register(
            json!({"name": "edge-2", "region": "eu", "labels": {"tier": "edge"},
                         "apiEndpoint": "https://edge-2.example:6443"}),
        )
        .await;
    assert_eq!(
        answer["karmadaEndpoint"]
            .as_str()
            .unwrap()
            .trim_end_matches('/'),
        env.instance.served.url.trim_end_matches('/')
    );
    let manifests: Vec<Value> = serde_json::from_value(answer["manifests"].clone()).unwrap();
    let kinds: Vec<&str> = manifests
        .iter()
        .filter_map(|m| m["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Secret",
            "Deployment"
        ]
    );
    let docs: Vec<Value> = answer["yaml"]
        .as_str()
        .unwrap()
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .collect();
    assert_eq!(docs, manifests);
    let pod = &manifests[5]["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    // Karmada's release (the git suffix of the build cut off), not the Kubernetes version.
    assert_eq!(
        container["image"],
        "docker.io/karmada/karmada-agent:v1.19.0-rc.0"
    );
    let command: Vec<&str> = container["command"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for flag in [
        "--cluster-name=edge-2",
        "--cluster-api-endpoint=https://edge-2.example:6443",
        "--cluster-region=eu",
        "--metrics-bind-address=$(POD_IP):8080",
        "--health-probe-bind-address=$(POD_IP):10357",
    ] {
        assert!(command.contains(&flag), "{flag}: {command:?}");
    }
    assert_eq!(pod["priorityClassName"], "system-node-critical");
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    // The agent's kubeconfig reaches the instance (trusting its CA) as the agent.
    let (agent, _) = agent_client(&manifests).await;
    let own = Api::<DynamicObject>::all_with(agent, &clusters_resource())
        .get("edge-2")
        .await
        .unwrap();
    assert_eq!(own.data["spec"]["syncMode"], "Pull");
    assert_eq!(
        own.data["spec"]["apiEndpoint"],
        "https://edge-2.example:6443"
    );
    assert_eq!(own.metadata.labels.unwrap()["tier"], "edge");

    // A member API server accepts every manifest as it is.
    let member = kube_sandbox::Cluster::new("pull-member");
    for manifest in &manifests {
        let api_version = manifest["apiVersion"].as_str().unwrap();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let kind = manifest["kind"].as_str().unwrap();
        let resource = ar(group, version, kind, &format!("{}s", kind.to_lowercase()));
        let api: Api<DynamicObject> = match manifest["metadata"]["namespace"].as_str() {
            Some(ns) => Api::namespaced_with(member.client(), ns, &resource),
            None => Api::all_with(member.client(), &resource),
        };
        api.create(
            &PostParams::default(),
            &serde_json::from_value(manifest.clone()).unwrap(),
        )
        .await
        .unwrap_or_else(|e| panic!("{kind}: {e}"));
    }

    // gRPC registers alike (another certificate, the same kinds).
    let channel = tonic::transport::Endpoint::from_shared(env.base.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = pb::kairship_service_client::KairshipServiceClient::new(channel);
    let mut request = tonic::Request::new(pb::RegisterMemberRequest {
        instance: INSTANCE.into(),
        name: "edge-2".into(),
        api_endpoint: Some("https://edge-2.example:6443".into()),
        ..Default::default()
    });
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {ADMIN}").parse().unwrap());
    let again = grpc.register_member(request).await.unwrap().into_inner();
    assert_ne!(again.token_id, answer["tokenId"].as_str().unwrap());
    assert_eq!(again.manifests.len(), manifests.len());

    // Unjoining removes what the registrations created in the instance.
    let (status, body) = env
        .call(
            "DELETE",
            &format!("{P}/instances/{INSTANCE}/clusters/edge-2"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let left = labelled(&env.admin(), "edge-2").await;
    let still: Vec<&String> = left.iter().filter(|o| !o.starts_with("Cluster ")).collect();
    assert!(still.is_empty(), "{left:?}");
}

#[tokio::test]
async fn the_documented_gateway_role_suffices_to_register() {
    let env = Env::start_as(true).await;
    let answer = env
        .register(json!({"name": "edge-3", "apiEndpoint": "https://edge-3.example:6443"}))
        .await;
    let manifests: Vec<Value> = serde_json::from_value(answer["manifests"].clone()).unwrap();
    let (agent, _) = agent_client(&manifests).await;
    Api::<DynamicObject>::all_with(agent, &clusters_resource())
        .get("edge-3")
        .await
        .unwrap();
    // The approval is Kairship's own (its identity in the instance), the rest the caller's.
    let csrs = Api::<DynamicObject>::all_with(env.admin(), &csrs_resource());
    let csr = csrs
        .list(&ListParams::default().labels(&format!("{LABEL}=edge-3")))
        .await
        .unwrap()
        .items
        .pop()
        .unwrap();
    assert_eq!(csr.data["status"]["conditions"][0]["type"], "Approved");
    let audit: Vec<_> = env
        .instance
        .cluster
        .audit_events()
        .into_iter()
        .filter(|e| e.subresource == "approval")
        .collect();
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0].user, "kairship-gateway");
    assert_eq!(audit[0].code, 200);
}
