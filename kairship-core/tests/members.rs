//! Joining member clusters for real, over real HTTP: a sandbox host cluster with an Adopt-mode
//! Instance, a sandbox Karmada instance with the emulated cluster-status controller, sandbox
//! member clusters served over loopback HTTP (with kube-controller-manager's token
//! controller), and the Kairship API (REST and gRPC) in front.

#![allow(clippy::unwrap_used)]

#[path = "common/api.rs"]
mod api_fixture;
mod common;

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api_fixture::{ADMIN, ApiEnv, P, VIEWER};
use common::{KarmadaInstance, ensure_namespace, eventually, install_karmada_crds};
use http::StatusCode;
use kairship_core::grpc::pb;
use kairship_core::karmada_sim::cluster_status;
use kube::api::{ListParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Api, Client};
use kube_sandbox::{ClusterOptions, ServeOptions, Served, SimNode};
use serde_json::{Value, json};

const INSTANCE: &str = "inst-1";
const LABEL: &str = "kairship.io/member-cluster";

/// Everything the service logs, to look for credentials in it.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;
    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

fn logs() -> Logs {
    static LOGS: std::sync::OnceLock<Logs> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Logs::default();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_writer(logs.clone())
            .finish();
        let _ = tracing::subscriber::set_global_default(subscriber);
        logs
    })
    .clone()
}

fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

struct Member {
    cluster: kube_sandbox::Cluster,
    served: Served,
}

impl Member {
    async fn start(name: &str) -> Member {
        let cluster = kube_sandbox::Cluster::with_options(
            name,
            ClusterOptions {
                workload_controllers: true,
                ..ClusterOptions::default()
            },
        );
        cluster
            .add_node(&SimNode::new(&format!("{name}-node-1"), "4", "8Gi"))
            .unwrap();
        let served = cluster.serve(ServeOptions::default()).await.unwrap();
        Member { cluster, served }
    }

    fn client(&self) -> Client {
        self.cluster.client()
    }

    /// `Kind namespace/name` of every object a join of `cluster` left in the member.
    async fn joined_objects(&self, cluster: &str) -> BTreeSet<String> {
        labelled(&self.client(), cluster).await
    }
}

async fn labelled(client: &Client, cluster: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let params = ListParams::default().labels(&format!("{LABEL}={cluster}"));
    for resource in [
        ar("", "v1", "Namespace", "namespaces"),
        ar("", "v1", "ServiceAccount", "serviceaccounts"),
        ar("", "v1", "Secret", "secrets"),
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
        ar("cluster.karmada.io", "v1alpha1", "Cluster", "clusters"),
    ] {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let Ok(list) = api.list(&params).await else {
            continue;
        };
        for o in list.items {
            let name = o.metadata.name.clone().unwrap();
            found.insert(match o.metadata.namespace {
                Some(ns) => format!("{} {ns}/{name}", resource.kind),
                None => format!("{} {name}", resource.kind),
            });
        }
    }
    found
}

type Env = ApiEnv;

impl ApiEnv {
    async fn start() -> Env {
        let instance = KarmadaInstance::start(INSTANCE).await;
        install_karmada_crds(
            &instance.client(),
            &[
                "work.karmada.io_resourcebindings.yaml",
                "work.karmada.io_clusterresourcebindings.yaml",
            ],
        )
        .await;
        let env = ApiEnv::builder(INSTANCE)
            .instance(instance)
            .user_agent("kairship-members-test")
            .start()
            .await;
        cluster_status::spawn(
            env.instance.client(),
            Duration::from_millis(300),
            env.stop.clone(),
        );
        env
    }

    /// Status and body text of a call.
    async fn call_text(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (StatusCode, String) {
        self.send_as(method, path, token, body).await
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let (status, text) = self.call_text(method, path, ADMIN, body).await;
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn ok(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, value) = self.call(method, path, body).await;
        assert_eq!(status, StatusCode::OK, "{method} {path}: {value}");
        value
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

    fn clusters(&self) -> Api<DynamicObject> {
        Api::all_with(
            self.instance.client(),
            &ar("cluster.karmada.io", "v1alpha1", "Cluster", "clusters"),
        )
    }

    fn karmada_secrets(&self, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(
            self.instance.client(),
            ns,
            &ar("", "v1", "Secret", "secrets"),
        )
    }
}

fn join_body(name: &str, member: &Member) -> Value {
    json!({
        "name": name,
        "kubeconfig": member.served.kubeconfig_yaml,
        "labels": {"env": "test"},
        "region": "eu-west-1",
        "provider": "sandbox",
        "taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}],
    })
}

/// The member-side objects a Push join of `name` creates, as docs/kairship/joining.md lists
/// them.
fn documented_member_objects(name: &str) -> BTreeSet<String> {
    [
        "Namespace karmada-cluster".to_owned(),
        format!("ServiceAccount karmada-cluster/karmada-{name}"),
        format!("Secret karmada-cluster/karmada-{name}-token"),
        format!("ClusterRole karmada-controller-manager:karmada-{name}"),
        format!("ClusterRoleBinding karmada-controller-manager:karmada-{name}"),
        "ServiceAccount karmada-cluster/karmada-impersonator".to_owned(),
        "Secret karmada-cluster/karmada-impersonator-token".to_owned(),
        "ClusterRole karmada-impersonator".to_owned(),
        "ClusterRoleBinding karmada-impersonator".to_owned(),
    ]
    .into_iter()
    .collect()
}

async fn ready(env: &Env, name: &str) -> Value {
    let clusters = env.clusters();
    eventually(
        "the member to become Ready",
        Duration::from_secs(30),
        || {
            let clusters = clusters.clone();
            async move {
                let c = clusters.get(name).await.ok()?;
                let c = serde_json::to_value(c).unwrap();
                let ready = c["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True");
                ready.then_some(c)
            }
        },
    )
    .await
}

#[tokio::test]
async fn push_join_makes_a_ready_member_with_exactly_the_documented_objects() {
    let logs = logs();
    let env = Env::start().await;
    let member = Member::start("member-1").await;
    let member_token = member.cluster.admin_token().to_owned();

    let (status, text) = env
        .call_text(
            "POST",
            &format!("{P}/instances/{INSTANCE}/clusters:join"),
            ADMIN,
            Some(join_body("m1", &member)),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(
        !text.contains(&member_token),
        "the answer holds the member's token"
    );
    let cluster: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(cluster["spec"]["syncMode"], "Push");
    assert_eq!(
        cluster["spec"]["apiEndpoint"],
        member.served.url.trim_end_matches('/')
    );
    assert_eq!(
        cluster["spec"]["secretRef"],
        json!({"namespace": "karmada-cluster", "name": "m1"})
    );
    assert_eq!(
        cluster["spec"]["impersonatorSecretRef"],
        json!({"namespace": "karmada-cluster", "name": "m1-impersonator"})
    );
    assert_eq!(cluster["spec"]["region"], "eu-west-1");
    assert_eq!(cluster["spec"]["taints"][0]["key"], "dedicated");
    assert_eq!(cluster["metadata"]["labels"]["env"], "test");

    // The emulated cluster-status controller reaches the member with the stored token.
    let ready = ready(&env, "m1").await;
    let conditions = ready["status"]["conditions"].as_array().unwrap();
    let reason_of = |t: &str| {
        conditions
            .iter()
            .find(|c| c["type"] == t)
            .map(|c| c["reason"].clone())
    };
    assert_eq!(reason_of("Ready"), Some(json!("ClusterReady")));
    assert_eq!(reason_of("CompleteAPIEnablements"), Some(json!("Complete")));
    assert_eq!(ready["status"]["nodeSummary"]["totalNum"], 1);
    assert!(ready["status"]["kubernetesVersion"].is_string());
    assert_eq!(
        ready["status"]["resourceSummary"]["allocatable"]["cpu"],
        "4"
    );

    // Exactly the documented objects in the member; the ServiceAccount's ClusterRole is
    // karmadactl's, the impersonator's may impersonate only who holds the cluster proxy in the
    // instance (here nobody but system:masters, which is never impersonated).
    assert_eq!(
        member.joined_objects("m1").await,
        documented_member_objects("m1")
    );
    let roles: Api<DynamicObject> = Api::all_with(
        member.client(),
        &ar(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
        ),
    );
    let imp = roles.get("karmada-impersonator").await.unwrap();
    assert_eq!(imp.data["rules"], json!([]));
    // The credentials in the instance.
    let secret = env
        .karmada_secrets("karmada-cluster")
        .get("m1")
        .await
        .unwrap();
    assert!(secret.data["data"]["token"].is_string());
    assert!(secret.data["data"]["caBundle"].is_string());
    assert!(
        env.karmada_secrets("karmada-cluster")
            .get("m1-impersonator")
            .await
            .is_ok()
    );

    // Joining again converges: same objects, same Cluster.
    let again = env
        .ok(
            "POST",
            &format!("{P}/instances/{INSTANCE}/clusters:join"),
            Some(join_body("m1", &member)),
        )
        .await;
    assert_eq!(again["metadata"]["uid"], cluster["metadata"]["uid"]);
    assert_eq!(
        member.joined_objects("m1").await,
        documented_member_objects("m1")
    );

    // A viewer may not join.
    let (status, _) = env
        .call_text(
            "POST",
            &format!("{P}/instances/{INSTANCE}/clusters:join"),
            VIEWER,
            Some(join_body("m9", &member)),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Reading the member back never shows credentials either.
    let (_, listed) = env
        .call_text(
            "GET",
            &format!("{P}/instances/{INSTANCE}/clusters"),
            ADMIN,
            None,
        )
        .await;
    assert!(!listed.contains(&member_token));
    // Nor the ServiceAccount token the join created.
    let token_secret: Api<DynamicObject> = Api::namespaced_with(
        member.client(),
        "karmada-cluster",
        &ar("", "v1", "Secret", "secrets"),
    );
    let sa_token = token_secret.get("karmada-m1-token").await.unwrap();
    let sa_token = {
        use base64::Engine;
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(sa_token.data["data"]["token"].as_str().unwrap())
                .unwrap(),
        )
        .unwrap()
    };
    assert!(sa_token.len() > 20);
    assert!(!text.contains(&sa_token) && !listed.contains(&sa_token));
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        !text.contains(&sa_token),
        "the logs hold the member's ServiceAccount token"
    );
    assert!(text.contains("joined member cluster"), "the join is logged");
    assert!(
        !text.contains(&member_token),
        "the logs hold the member's token"
    );
    assert!(!text.contains("sandbox-admin-"), "the logs hold a token");
}

#[tokio::test]
async fn a_join_failing_half_way_leaves_nothing_behind() {
    let env = Env::start().await;
    let member = Member::start("member-2").await;

    // A conflicting object in the instance: every member-side object is made before it.
    ensure_namespace(&env.instance.client(), "karmada-cluster").await;
    env.karmada_secrets("karmada-cluster")
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "m2"}}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let (status, body) = env
        .call(
            "POST",
            &format!("{P}/instances/{INSTANCE}/clusters:join"),
            Some(join_body("m2", &member)),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("Secret karmada-cluster/m2 in the instance"),
        "{message}"
    );
    assert!(
        message.contains("everything this call created was removed"),
        "{message}"
    );
    assert_eq!(member.joined_objects("m2").await, BTreeSet::new());
    assert!(
        member
            .client()
            .request_text(
                http::Request::get("/api/v1/namespaces/karmada-cluster")
                    .body(Vec::new())
                    .unwrap()
            )
            .await
            .is_err(),
        "the namespace the call created is gone"
    );
    assert_eq!(
        labelled(&env.instance.client(), "m2").await,
        BTreeSet::new()
    );
    assert!(env.clusters().get("m2").await.is_err());

    // A conflicting object in the member: the call stops at step 3.
    let roles: Api<DynamicObject> = Api::all_with(
        member.client(),
        &ar(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
        ),
    );
    roles
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "karmada-controller-manager:karmada-m3"}, "rules": []}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let (status, body) = env
        .call(
            "POST",
            &format!("{P}/instances/{INSTANCE}/clusters:join"),
            Some(join_body("m3", &member)),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains(
            "step 3 (create ClusterRole karmada-controller-manager:karmada-m3 in the member)"
        ),
        "{message}"
    );
    assert_eq!(member.joined_objects("m3").await, BTreeSet::new());
    assert_eq!(
        labelled(&env.instance.client(), "m3").await,
        BTreeSet::new()
    );
    // The object it did not make is left alone.
    assert!(
        roles
            .get("karmada-controller-manager:karmada-m3")
            .await
            .is_ok()
    );

    // A member credential that may not create ClusterRoles: refused by the member at step 3,
    // undone with the same credential.
    member
        .cluster
        .auth()
        .add_token("limited-token", kube_sandbox::UserInfo::new("limited", &[]));
    let rbac = |kind: &str, plural: &str| -> Api<DynamicObject> {
        Api::all_with(
            member.client(),
            &ar("rbac.authorization.k8s.io", "v1", kind, plural),
        )
    };
    rbac("ClusterRole", "clusterroles")
        .create(&PostParams::default(), &serde_json::from_value(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "limited"},
            "rules": [
                {"apiGroups": [""], "resources": ["namespaces", "serviceaccounts", "secrets"], "verbs": ["*"]},
                {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterrolebindings"], "verbs": ["*"]},
            ]})).unwrap())
        .await
        .unwrap();
    rbac("ClusterRoleBinding", "clusterrolebindings")
        .create(&PostParams::default(), &serde_json::from_value(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "limited"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "limited"}})).unwrap())
        .await
        .unwrap();
    let limited = member
        .served
        .kubeconfig_yaml
        .replace(member.cluster.admin_token(), "limited-token");
    let mut body = join_body("m4", &member);
    body["kubeconfig"] = json!(limited);
    let (status, body) = env
        .call(
            "POST",
            &format!("{P}/instances/{INSTANCE}/clusters:join"),
            Some(body),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains("step 3 (create ClusterRole"), "{message}");
    assert!(!message.contains("limited-token"), "{message}");
    assert_eq!(member.joined_objects("m4").await, BTreeSet::new());
    assert!(env.clusters().get("m4").await.is_err());
}

fn binding(name: &str, cluster: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "default"},
                 "clusters": [{"name": cluster, "replicas": 1}]},
    }))
    .unwrap()
}

#[tokio::test]
async fn unjoin_is_refused_while_bindings_schedule_to_the_member_unless_forced() {
    let env = Env::start().await;
    let member = Member::start("member-3").await;
    env.ok(
        "POST",
        &format!("{P}/instances/{INSTANCE}/clusters:join"),
        Some(join_body("m5", &member)),
    )
    .await;
    ready(&env, "m5").await;
    let bindings: Api<DynamicObject> = Api::namespaced_with(
        env.instance.client(),
        "default",
        &ar(
            "work.karmada.io",
            "v1alpha2",
            "ResourceBinding",
            "resourcebindings",
        ),
    );
    bindings
        .create(&PostParams::default(), &binding("web-deployment", "m5"))
        .await
        .unwrap();

    let path = format!("{P}/instances/{INSTANCE}/clusters/m5");
    let refused = eventually("the refusal", Duration::from_secs(10), || async {
        let (status, body) = env.call("DELETE", &path, None).await;
        (status == StatusCode::BAD_REQUEST).then_some(body)
    })
    .await;
    assert_eq!(refused["code"], 9, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("ResourceBinding default/web-deployment"),
        "{refused}"
    );
    assert!(env.clusters().get("m5").await.is_ok());
    assert_eq!(
        member.joined_objects("m5").await,
        documented_member_objects("m5")
    );

    // Forced: the Cluster, its Secrets and the member's objects go.
    env.ok("DELETE", &format!("{path}?force=true"), None).await;
    eventually("the Cluster to go", Duration::from_secs(10), || async {
        env.clusters().get("m5").await.is_err().then_some(())
    })
    .await;
    assert_eq!(
        labelled(&env.instance.client(), "m5").await,
        BTreeSet::new()
    );
    // Including the namespace the join created (as `karmadactl unjoin` removes it).
    eventually(
        "the member objects to go",
        Duration::from_secs(10),
        || async { member.joined_objects("m5").await.is_empty().then_some(()) },
    )
    .await;

    // Unforced, with nothing scheduled there any more.
    env.ok(
        "POST",
        &format!("{P}/instances/{INSTANCE}/clusters:join"),
        Some(join_body("m6", &member)),
    )
    .await;
    bindings
        .create(&PostParams::default(), &binding("other", "m5"))
        .await
        .unwrap();
    env.ok(
        "DELETE",
        &format!("{P}/instances/{INSTANCE}/clusters/m6"),
        None,
    )
    .await;
    eventually("the m6 objects to go", Duration::from_secs(10), || async {
        member.joined_objects("m6").await.is_empty().then_some(())
    })
    .await;
}

#[tokio::test]
async fn labels_taints_and_location_are_updated_over_rest_and_grpc() {
    let env = Env::start().await;
    let member = Member::start("member-4").await;
    env.ok(
        "POST",
        &format!("{P}/instances/{INSTANCE}/clusters:join"),
        Some(join_body("m7", &member)),
    )
    .await;
    let path = format!("{P}/instances/{INSTANCE}/clusters/m7");
    let updated = env
        .ok("PATCH", &path, Some(json!({"labels": {"env": null, "gpu": "true"}, "taints": [], "zone": "z1", "region": ""})))
        .await;
    assert_eq!(updated["metadata"]["labels"].get("env"), None);
    assert_eq!(updated["metadata"]["labels"]["gpu"], "true");
    assert_eq!(updated["metadata"]["labels"][LABEL], "m7");
    assert_eq!(
        updated["spec"]
            .get("taints")
            .map_or(0, |t| t.as_array().map_or(0, Vec::len)),
        0
    );
    // Karmada v1.19 keeps zones in `spec.zones`; the deprecated `zone` stays unset.
    assert_eq!(updated["spec"]["zones"], json!(["z1"]));
    assert_eq!(updated["spec"].get("zone"), None);
    assert_eq!(updated["spec"].get("region"), None);
    assert_eq!(updated["spec"]["secretRef"]["name"], "m7");

    let (status, body) = env
        .call(
            "PATCH",
            &path,
            Some(json!({"taints": [{"key": "k", "effect": "Sometimes"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = env
        .call_text("PATCH", &path, VIEWER, Some(json!({"zone": "z2"})))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let mut grpc = env.grpc().await;
    let mut request = tonic::Request::new(pb::UpdateMemberRequest {
        instance: INSTANCE.into(),
        cluster: "m7".into(),
        labels: [("tier".to_owned(), "gold".to_owned())].into(),
        remove_labels: vec!["gpu".into()],
        taints: Some(pb::MemberTaints {
            items: vec![pb::MemberTaint {
                key: "t".into(),
                value: None,
                effect: "NoExecute".into(),
            }],
        }),
        provider: Some("aws".into()),
        region: None,
        zone: None,
    });
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {ADMIN}").parse().unwrap());
    let answer = grpc.update_member(request).await.unwrap().into_inner();
    let answer = kairship_core::grpc::convert::struct_to_json(answer);
    assert_eq!(answer["metadata"]["labels"]["tier"], "gold");
    assert_eq!(answer["metadata"]["labels"].get("gpu"), None);
    assert_eq!(answer["spec"]["taints"][0]["effect"], "NoExecute");
    assert_eq!(answer["spec"]["provider"], "aws");
    assert_eq!(answer["spec"]["zones"], json!(["z1"]));

    // A kubeconfig that would run a program on the server is refused before anything is made.
    let marker = std::env::temp_dir().join(format!("kairship-exec-{}", std::process::id()));
    let exec = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"{}\"}}\n\
         users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: touch\n      args: [\"{}\"]\n\
         contexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n",
        member.served.url,
        marker.display()
    );
    let (status, body) = env
        .call(
            "POST",
            &format!("{P}/instances/{INSTANCE}/clusters:join"),
            Some(json!({"name": "m8", "kubeconfig": exec})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["message"].as_str().unwrap().contains("exec"), "{body}");
    assert!(!marker.exists(), "the exec plugin ran");
    assert_eq!(member.joined_objects("m8").await, BTreeSet::new());

    // A gRPC join answers like REST: a bad name is INVALID_ARGUMENT, code 3 in both.
    let mut request = tonic::Request::new(pb::JoinMemberRequest {
        instance: INSTANCE.into(),
        name: "Bad_Name".into(),
        kubeconfig: member.served.kubeconfig_yaml.clone(),
        ..Default::default()
    });
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {ADMIN}").parse().unwrap());
    let status = grpc.join_member(request).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert!(!status.message().contains(member.cluster.admin_token()));
}
