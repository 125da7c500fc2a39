//! Sandboxes for the controller tests: a host cluster with Kairship's, the operator's and
//! Clusterpedia's CRDs, and Karmada-instance clusters served over loopback HTTP with Karmada's
//! CRDs and member `Cluster` objects.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kairship_core::controllers::{Context, ControllerConfig, NoopRegistry, ReadBackend};
use kairship_core::instance::{
    DeletionPolicy, Instance, InstanceMode, InstanceSpec, InstanceState, SecretKeyReference,
};
use kairship_core::models::ObjectCondition;
use kairship_core::models::cluster::{
    Cluster, ClusterResourceSummary, ClusterSpec, ClusterStatus, NodeSummary,
};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use kube_kit::admin::Metrics;
use kube_sandbox::{ServeOptions, Served};
use tokio_util::sync::CancellationToken;

pub mod clusterpedia;

pub const KAIRSHIP_NS: &str = "kairship-system";

/// Karmada's `Cluster` is served by an aggregated apiserver upstream; here a small CRD.
pub const CLUSTER_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "clusters.cluster.karmada.io"},
  "spec": {
    "group": "cluster.karmada.io",
    "scope": "Cluster",
    "names": {"plural": "clusters", "singular": "cluster", "kind": "Cluster"},
    "versions": [{
      "name": "v1alpha1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
    }]
  }
}"#;

fn crd_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/upstream")
}

pub fn load_crd(relative: &str) -> CustomResourceDefinition {
    let path = crd_dir().join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap()
}

#[allow(unused_imports)]
pub use kube_sandbox::testing::ensure_namespace;
use kube_sandbox::testing::install_crds;

/// Polls `check` every 50 ms until it returns `Some`, for at most `limit`.
#[allow(unused_imports)]
pub use kube_sandbox::testing::eventually_some as eventually;

/// Installs Karmada's CRDs `deploy/crds/upstream/karmada/<file>` in an instance, beyond the ones
/// [`KarmadaInstance::start`] installs (bindings, Works).
pub async fn install_karmada_crds(client: &Client, files: &[&str]) {
    install_crds(
        client,
        files
            .iter()
            .map(|file| load_crd(&format!("karmada/{file}"))),
    )
    .await;
}

/// The host cluster with every CRD the controllers use.
pub async fn host() -> kube_sandbox::Cluster {
    let host = kube_sandbox::Cluster::new("host");
    let client = host.client();
    let mut crds = kairship_core::crds();
    crds.push(load_crd("karmada/operator.karmada.io_karmadas.yaml"));
    crds.push(load_crd(
        "clusterpedia/cluster.clusterpedia.io_pediaclusters.yaml",
    ));
    install_crds(&client, crds).await;
    ensure_namespace(&client, KAIRSHIP_NS).await;
    host
}

/// A Karmada instance: Karmada's CRDs, served over loopback HTTP.
pub struct KarmadaInstance {
    pub cluster: kube_sandbox::Cluster,
    pub served: Served,
}

impl KarmadaInstance {
    pub async fn start(name: &str) -> Self {
        Self::start_with(name, kube_sandbox::ClusterOptions::default()).await
    }

    /// An instance with `options` (e.g. serving Karmada's cluster proxy).
    #[allow(dead_code)]
    pub async fn start_with(name: &str, options: kube_sandbox::ClusterOptions) -> Self {
        let cluster = kube_sandbox::Cluster::with_options(name, options);
        let mut crds = vec![serde_json::from_str(CLUSTER_CRD).unwrap()];
        for file in [
            "karmada/policy.karmada.io_propagationpolicies.yaml",
            "karmada/policy.karmada.io_clusterpropagationpolicies.yaml",
            "karmada/policy.karmada.io_overridepolicies.yaml",
            "karmada/policy.karmada.io_clusteroverridepolicies.yaml",
        ] {
            crds.push(load_crd(file));
        }
        install_crds(&cluster.client(), crds).await;
        let served = cluster.serve(ServeOptions::default()).await.unwrap();
        Self { cluster, served }
    }

    pub fn client(&self) -> Client {
        self.cluster.client()
    }

    pub fn clusters(&self) -> Api<Cluster> {
        Api::all(self.client())
    }

    /// Creates a member cluster and sets its status.
    pub async fn add_member(&self, member: &Member) {
        let api = self.clusters();
        let created = api
            .create(
                &PostParams::default(),
                &Cluster::new(&member.name, ClusterSpec::default()),
            )
            .await
            .unwrap();
        let mut with_status = created;
        with_status.status = Some(member.status());
        api.replace_status(&member.name, &PostParams::default(), &with_status)
            .await
            .unwrap();
    }

    /// Replaces a member's status.
    pub async fn set_member(&self, member: &Member) {
        let api = self.clusters();
        let mut current = api.get(&member.name).await.unwrap();
        current.status = Some(member.status());
        api.replace_status(&member.name, &PostParams::default(), &current)
            .await
            .unwrap();
    }
}

/// A member cluster's reported state.
#[derive(Clone, Debug)]
pub struct Member {
    pub name: String,
    pub ready: bool,
    pub nodes: (i32, i32),
    pub cpu: String,
    pub memory: String,
    pub pods: String,
    pub allocated_cpu: String,
}

impl Member {
    pub fn new(
        name: &str,
        ready: bool,
        nodes: (i32, i32),
        cpu: &str,
        memory: &str,
        pods: &str,
    ) -> Self {
        Self {
            name: name.into(),
            ready,
            nodes,
            cpu: cpu.into(),
            memory: memory.into(),
            pods: pods.into(),
            allocated_cpu: "100m".into(),
        }
    }

    pub fn status(&self) -> ClusterStatus {
        let q = |s: &str| Quantity(s.to_owned());
        ClusterStatus {
            kubernetes_version: Some("v1.31.2".into()),
            conditions: vec![ObjectCondition {
                type_: "Ready".into(),
                status: if self.ready { "True" } else { "False" }.into(),
                ..ObjectCondition::default()
            }],
            node_summary: Some(NodeSummary {
                total_num: self.nodes.0,
                ready_num: self.nodes.1,
            }),
            resource_summary: Some(ClusterResourceSummary {
                allocatable: BTreeMap::from([
                    ("cpu".to_owned(), q(&self.cpu)),
                    ("memory".to_owned(), q(&self.memory)),
                    ("pods".to_owned(), q(&self.pods)),
                ]),
                allocated: BTreeMap::from([("cpu".to_owned(), q(&self.allocated_cpu))]),
                ..ClusterResourceSummary::default()
            }),
            ..ClusterStatus::default()
        }
    }
}

/// Stores `kubeconfig` in the host Secret `kairship-system/<name>` under key `kubeconfig`.
pub async fn put_kubeconfig_secret(host: &Client, name: &str, key: &str, kubeconfig: &str) {
    let api: Api<Secret> = Api::namespaced(host.clone(), KAIRSHIP_NS);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            key.to_owned(),
            ByteString(kubeconfig.as_bytes().to_vec()),
        )])),
        ..Secret::default()
    };
    api.create(&PostParams::default(), &secret).await.unwrap();
}

/// Registers `karmada` on the host as the Adopt-mode Instance `name`: its kubeconfig Secret,
/// then the Instance.
pub async fn register_adopted(host: &Client, name: &str, karmada: &KarmadaInstance) {
    register_adopted_with(host, name, &karmada.served.kubeconfig_yaml).await;
}

/// Registers the Adopt-mode Instance `name` reaching its Karmada with `kubeconfig`.
pub async fn register_adopted_with(host: &Client, name: &str, kubeconfig: &str) {
    put_kubeconfig_secret(
        host,
        &format!("{name}-kubeconfig"),
        "kubeconfig",
        kubeconfig,
    )
    .await;
    Api::<Instance>::all(host.clone())
        .create(&PostParams::default(), &adopt_instance(name))
        .await
        .unwrap();
}

/// An Adopt-mode Instance reading its kubeconfig from `kairship-system/<name>-kubeconfig`.
pub fn adopt_instance(name: &str) -> Instance {
    Instance::new(
        name,
        InstanceSpec {
            mode: InstanceMode::Adopt,
            kubeconfig_secret_ref: Some(SecretKeyReference {
                namespace: KAIRSHIP_NS.into(),
                name: format!("{name}-kubeconfig"),
                key: Some("kubeconfig".into()),
            }),
            provision: None,
            alias: None,
            deletion_policy: DeletionPolicy::Delete,
        },
    )
}

pub fn fast_config() -> ControllerConfig {
    ControllerConfig {
        read_backend: ReadBackend::Embedded,
        probe_interval: Duration::from_millis(200),
        request_timeout: Duration::from_secs(2),
        failure_threshold: 3,
        cache_sync_timeout: Duration::from_secs(10),
        deletion_recheck: Duration::from_millis(300),
    }
}

/// Runs the controllers against `host` until the returned token is cancelled.
pub fn start_manager(host: &Client, config: ControllerConfig) -> (Arc<Context>, CancellationToken) {
    let ctx = Context::new(
        host.clone(),
        config,
        Arc::new(NoopRegistry),
        &Metrics::new(),
    );
    let stop = CancellationToken::new();
    tokio::spawn(kairship_core::controllers::run(ctx.clone(), stop.clone()));
    (ctx, stop)
}

pub async fn get_instance(host: &Client, name: &str) -> Option<Instance> {
    Api::<Instance>::all(host.clone())
        .get_opt(name)
        .await
        .unwrap()
}

/// Waits until the Instance's state is `state`, returning it.
pub async fn wait_state(
    host: &Client,
    name: &str,
    state: InstanceState,
    limit: Duration,
) -> Instance {
    eventually(&format!("instance {name} to be {state}"), limit, || async {
        get_instance(host, name)
            .await
            .filter(|i| i.status.as_ref().is_some_and(|s| s.state == state))
    })
    .await
}
