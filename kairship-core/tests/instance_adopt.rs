//! `AdoptInstance` over REST and gRPC against sandbox API servers over real HTTP: a pasted
//! kubeconfig becomes a labelled Secret owned by a new Adopt-mode Instance, which the
//! controllers bring to RUNNING and the API then serves; deleting the Instance removes the
//! Secret. A bad kubeconfig is refused with `{code, message}` and leaves nothing behind, and
//! a failure after the Secret was stored takes the Secret back. The kubeconfig never appears
//! in an answer.

#![allow(clippy::unwrap_used)]

#[path = "common/api.rs"]
mod api_fixture;
mod common;

use std::sync::Arc;
use std::time::Duration;

use api_fixture::{ADMIN as TOKEN, AdminToken, ApiEnv, Everything, GrpcClient, P};
use common::{
    KAIRSHIP_NS, KarmadaInstance, adopt_instance, ensure_namespace, eventually, get_instance,
    wait_state,
};
use http::StatusCode;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kairship_core::grpc::{convert as grpc_convert, pb};
use kairship_core::instance::{INSTANCE_LABEL, Instance, InstanceState};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use serde_json::{Value, json};

const NS: &str = "demo";
const LIMIT: Duration = Duration::from_secs(30);

type Env = ApiEnv;

impl ApiEnv {
    /// The host (with the controllers running), one Karmada holding the ConfigMap `hello`
    /// in `demo`, and the API server (REST and gRPC) in front of them.
    async fn start() -> Env {
        let karmada = KarmadaInstance::start("karmada-pasted").await;
        ensure_namespace(&karmada.client(), NS).await;
        Api::<ConfigMap>::namespaced(karmada.client(), NS)
            .create(
                &PostParams::default(),
                &ConfigMap {
                    metadata: ObjectMeta {
                        name: Some("hello".into()),
                        ..ObjectMeta::default()
                    },
                    ..ConfigMap::default()
                },
            )
            .await
            .unwrap();
        ApiEnv::builder("karmada-pasted")
            .instance(karmada)
            .unregistered()
            .with_manager()
            .callers(Arc::new(AdminToken), Arc::new(Everything))
            .user_agent("kairship-adopt-test")
            .client_timings(Duration::from_secs(5), Duration::from_secs(1))
            .start()
            .await
    }

    fn kubeconfig(&self) -> String {
        self.instance.served.kubeconfig_yaml.clone()
    }

    /// The Karmada's server URL: what must never come back in an answer.
    fn server_url(&self) -> String {
        self.instance.served.url.clone()
    }

    /// Status and raw body text.
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, String) {
        self.send_as(method, path, TOKEN, body).await
    }

    async fn grpc(&self) -> GrpcClient {
        self.grpc_as(TOKEN).await
    }

    fn secrets(&self) -> Api<Secret> {
        Api::namespaced(self.host.client(), KAIRSHIP_NS)
    }

    /// Names of the Secrets and Instances on the host.
    async fn host_objects(&self) -> (Vec<String>, Vec<String>) {
        let secrets = self.secrets().list(&Default::default()).await.unwrap();
        let instances = Api::<Instance>::all(self.host.client())
            .list(&Default::default())
            .await
            .unwrap();
        let names = |m: Vec<ObjectMeta>| m.into_iter().filter_map(|m| m.name).collect();
        (
            names(secrets.items.into_iter().map(|s| s.metadata).collect()),
            names(instances.items.into_iter().map(|i| i.metadata).collect()),
        )
    }

    /// Checks the stored Secret and Instance of `name`, waits until the controllers report it
    /// RUNNING and the API serves its ConfigMaps.
    async fn assert_adopted_and_served(&self, name: &str) {
        let secret = self
            .secrets()
            .get(&format!("{name}-kubeconfig"))
            .await
            .unwrap();
        assert_eq!(
            secret.data.as_ref().unwrap()["kubeconfig"].0,
            self.kubeconfig().as_bytes()
        );
        assert_eq!(
            secret.metadata.labels.as_ref().unwrap()[INSTANCE_LABEL],
            name
        );
        let instance = get_instance(&self.host.client(), name).await.unwrap();
        let owners = secret.metadata.owner_references.unwrap();
        assert_eq!(owners.len(), 1);
        assert_eq!(
            (owners[0].kind.as_str(), owners[0].name.as_str()),
            ("Instance", name)
        );
        assert_eq!(Some(&owners[0].uid), instance.metadata.uid.as_ref());
        wait_state(&self.host.client(), name, InstanceState::Running, LIMIT).await;
        let path = format!("{P}/instances/{name}/namespaces/{NS}/configmaps");
        eventually(&format!("{name} to be served"), LIMIT, || async {
            let (status, body) = self.call("GET", &path, None).await;
            (status == StatusCode::OK && body.contains("\"hello\"")).then_some(())
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pasted_kubeconfig_adopts_and_serves_the_instance_over_rest() {
    let env = Env::start().await;
    let (status, body) = env
        .call(
            "POST",
            &format!("{P}/instances/pasted/adopt"),
            Some(
                json!({"kubeconfig": env.kubeconfig(), "alias": "Pasted", "labels": {"team": "a"}}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(!body.contains(&env.server_url()), "{body}");
    assert!(!body.contains("clusters"), "{body}");
    let created: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(created["spec"]["mode"], "Adopt");
    assert_eq!(created["spec"]["alias"], "Pasted");
    assert_eq!(created["metadata"]["labels"]["team"], "a");
    assert_eq!(
        created["spec"]["kubeconfigSecretRef"],
        json!({"namespace": KAIRSHIP_NS, "name": "pasted-kubeconfig", "key": "kubeconfig"})
    );
    env.assert_adopted_and_served("pasted").await;

    // Deleting the Instance (no members) removes its Secret with it.
    let (status, body) = env
        .call("DELETE", &format!("{P}/instances/pasted"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    eventually("the instance and its Secret to be gone", LIMIT, || async {
        let (secrets, instances) = env.host_objects().await;
        (secrets.is_empty() && instances.is_empty()).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_kubeconfigs_are_refused_and_leave_nothing() {
    let env = Env::start().await;
    let good = env.kubeconfig();
    let no_context = good
        .lines()
        .filter(|l| !l.starts_with("current-context"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(
        no_context, good,
        "the sandbox kubeconfig names a current context"
    );
    for (what, kubeconfig, expected) in [
        ("empty", String::new(), "is empty"),
        (
            "not a kubeconfig",
            format!("{}\n  - [", env.server_url()),
            "does not parse",
        ),
        ("no current context", no_context, "no current-context"),
    ] {
        let (status, body) = env
            .call(
                "POST",
                &format!("{P}/instances/bad/adopt"),
                Some(json!({"kubeconfig": kubeconfig})),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {body}");
        let err: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(err["code"], 3, "{what}: {body}");
        let message = err["message"].as_str().unwrap();
        assert!(
            message.starts_with("kubeconfig") && message.contains(expected),
            "{what}: {message}"
        );
        assert!(!body.contains(&env.server_url()), "{what}: {body}");
    }
    let (status, body) = env
        .call(
            "POST",
            &format!("{P}/instances/bad/adopt"),
            Some(json!({"kubeconfig": good, "deletionPolicy": "Keep"})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("deletionPolicy"), "{body}");
    assert_eq!(env.host_objects().await, (vec![], vec![]));

    // The Instance cannot be created (the name is taken, with another Secret): the Secret
    // stored first is taken back; the existing Instance is untouched.
    let mut taken = adopt_instance("taken");
    taken.spec.kubeconfig_secret_ref.as_mut().unwrap().name = "elsewhere".into();
    Api::<Instance>::all(env.host.client())
        .create(&PostParams::default(), &taken)
        .await
        .unwrap();
    let (status, body) = env
        .call(
            "POST",
            &format!("{P}/instances/taken/adopt"),
            Some(json!({"kubeconfig": env.kubeconfig()})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(!body.contains(&env.server_url()), "{body}");
    let (secrets, instances) = env.host_objects().await;
    assert_eq!((secrets, instances), (vec![], vec!["taken".to_owned()]));
    let kept = get_instance(&env.host.client(), "taken").await.unwrap();
    assert_eq!(kept.spec.kubeconfig_secret_ref.unwrap().name, "elsewhere");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_adopts_from_a_pasted_kubeconfig_and_refuses_a_bad_one() {
    let env = Env::start().await;
    let mut grpc = env.grpc().await;
    let err = grpc
        .adopt_instance(pb::AdoptInstanceRequest {
            instance: "by-grpc".into(),
            kubeconfig: "kind: Config\ncurrent-context: nowhere\n".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("kubeconfig"), "{err:?}");
    assert_eq!(env.host_objects().await, (vec![], vec![]));

    let created = grpc
        .adopt_instance(pb::AdoptInstanceRequest {
            instance: "by-grpc".into(),
            kubeconfig: env.kubeconfig(),
            deletion_policy: Some("Retain".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let created = grpc_convert::struct_to_json(created);
    assert!(
        !created.to_string().contains(&env.server_url()),
        "{created}"
    );
    assert_eq!(created["spec"]["deletionPolicy"], "Retain");
    assert_eq!(
        created["spec"]["kubeconfigSecretRef"]["name"],
        "by-grpc-kubeconfig"
    );
    env.assert_adopted_and_served("by-grpc").await;

    // The same name again: AlreadyExists, and the stored Secret is not replaced.
    let err = grpc
        .adopt_instance(pb::AdoptInstanceRequest {
            instance: "by-grpc".into(),
            kubeconfig: env
                .kubeconfig()
                .replace(&env.server_url(), "http://127.0.0.1:1"),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::AlreadyExists, "{err:?}");
    let secret = env.secrets().get("by-grpc-kubeconfig").await.unwrap();
    assert_eq!(
        secret.data.unwrap()["kubeconfig"].0,
        env.kubeconfig().as_bytes()
    );
}
