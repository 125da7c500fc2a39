//! `AdoptInstance` over REST and gRPC against sandbox API servers over real HTTP: a pasted
//! kubeconfig becomes a labelled Secret owned by a new Adopt-mode Instance, which the
//! controllers bring to RUNNING and the API then serves; deleting the Instance removes the
//! Secret. A bad kubeconfig is refused with `{code, message}` and leaves nothing behind, and
//! a failure after the Secret was stored takes the Secret back. The kubeconfig never appears
//! in an answer.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::{
    KAIRSHIP_NS, KarmadaInstance, adopt_instance, ensure_namespace, eventually, fast_config,
    get_instance, start_manager, wait_state,
};
use http::StatusCode;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kairship_core::access::{
    AccessError, Authenticator, Authorizer, Caller, InstanceResource, Verb,
};
use kairship_core::api::server::{AppParts, app, serve};
use kairship_core::api::{HostInstanceClients, KairshipApi, KairshipService, ServiceConfig};
use kairship_core::grpc::{convert as grpc_convert, pb};
use kairship_core::instance::{INSTANCE_LABEL, Instance, InstanceState};
use kairship_core::router::{
    DirectBackend, DiscoveryCache, EmbeddedCacheBackend, InstanceClients, InstanceWriter,
    ReadWriteRouter, SplitRouter,
};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kube_kit::client::ClientOptions;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const NS: &str = "demo";
const P: &str = "/apis/kairship.io/v1alpha1";
const TOKEN: &str = "admin-token";
const LIMIT: Duration = Duration::from_secs(30);

struct Admin;

#[async_trait]
impl Authenticator for Admin {
    async fn authenticate(&self, token: &str) -> Result<Caller, AccessError> {
        if token == TOKEN {
            Ok(Caller::new("admin", vec![]))
        } else {
            Err(AccessError::Unauthenticated("unknown token".into()))
        }
    }
}

#[async_trait]
impl Authorizer for Admin {
    async fn allowed(
        &self,
        _: &Caller,
        _: Verb,
        _: InstanceResource,
        _: Option<&str>,
    ) -> Result<bool, AccessError> {
        Ok(true)
    }
}

#[derive(Clone)]
struct Bearer;

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        req.metadata_mut()
            .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
        Ok(req)
    }
}

struct Env {
    host: kube_sandbox::Cluster,
    karmada: KarmadaInstance,
    base: String,
    http: reqwest::Client,
    stop: CancellationToken,
    manager_stop: CancellationToken,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.stop.cancel();
        self.manager_stop.cancel();
    }
}

impl Env {
    /// The host (with the controllers running), one Karmada holding the ConfigMap `hello`
    /// in `demo`, and the API server (REST and gRPC) in front of them.
    async fn start() -> Env {
        kube_kit::client::install_crypto_provider();
        let host = common::host().await;
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
        let (_, manager_stop) = start_manager(&host.client(), fast_config());
        let stop = CancellationToken::new();
        let host_clients = Arc::new(HostInstanceClients::new(
            host.client(),
            ClientOptions::new("kairship-adopt-test"),
            Duration::from_secs(5),
            Duration::from_secs(1),
        ));
        tokio::spawn(host_clients.clone().watch_instances(stop.clone()));
        let clients: Arc<dyn InstanceClients> = host_clients;
        let router: Arc<dyn ReadWriteRouter> = Arc::new(SplitRouter::new(
            Arc::new(EmbeddedCacheBackend::new(clients.clone())),
            Arc::new(DirectBackend::new(clients.clone())),
            Arc::new(InstanceWriter::new(clients.clone())),
        ));
        let api: Arc<dyn KairshipApi> = Arc::new(
            KairshipService::new(
                host.client(),
                router,
                Arc::new(Admin),
                ServiceConfig::default(),
            )
            .with_discovery(clients, Arc::new(DiscoveryCache::default())),
        );
        let grpc = kairship_core::grpc::routes(api.clone(), Arc::new(Admin))
            .await
            .unwrap();
        let app = app(AppParts {
            api,
            authenticator: Arc::new(Admin),
            proxy: None,
            grpc: Some(grpc),
            console: None,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, app, None, stop.clone()));
        Env {
            host,
            karmada,
            base: format!("http://{addr}"),
            http: reqwest::Client::new(),
            stop,
            manager_stop,
        }
    }

    fn kubeconfig(&self) -> String {
        self.karmada.served.kubeconfig_yaml.clone()
    }

    /// The Karmada's server URL: what must never come back in an answer.
    fn server_url(&self) -> String {
        self.karmada.served.url.clone()
    }

    /// Status and raw body text.
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, String) {
        let mut req = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .bearer_auth(TOKEN);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        (resp.status(), resp.text().await.unwrap())
    }

    async fn grpc(
        &self,
    ) -> pb::kairship_service_client::KairshipServiceClient<
        tonic::service::interceptor::InterceptedService<tonic::transport::Channel, Bearer>,
    > {
        let channel = tonic::transport::Endpoint::from_shared(self.base.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        pb::kairship_service_client::KairshipServiceClient::with_interceptor(channel, Bearer)
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
