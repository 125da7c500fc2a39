//! Sandbox clusters a test owns, and the setup most tests make first: namespaces and CRDs.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use tokio_util::sync::CancellationToken;

use crate::{Cluster, ClusterOptions};

/// The sandbox clusters of one test. On drop it cancels [`Sandboxes::token`] (the controllers
/// the test runs stop), then shuts every cluster down. A fixture keeps it as its first field,
/// so that this happens before the fixture's [`crate::Served`] handles stop serving.
#[derive(Default)]
pub struct Sandboxes {
    token: CancellationToken,
    clusters: Vec<Cluster>,
}

impl Sandboxes {
    /// No clusters yet.
    pub fn new() -> Sandboxes {
        Sandboxes::default()
    }

    /// A new cluster named `name`, shut down with the others.
    pub fn cluster(&mut self, name: &str) -> Cluster {
        self.cluster_with_options(name, ClusterOptions::default())
    }

    /// A new cluster with `options`, shut down with the others.
    pub fn cluster_with_options(&mut self, name: &str, options: ClusterOptions) -> Cluster {
        let cluster = Cluster::with_options(name, options);
        self.clusters.push(cluster.clone());
        cluster
    }

    /// Cancelled when the clusters shut down; what the test runs takes it or a child of it.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }
}

impl Drop for Sandboxes {
    fn drop(&mut self) {
        self.token.cancel();
        for cluster in &self.clusters {
            cluster.shutdown();
        }
    }
}

/// Creates namespace `name`.
pub async fn create_namespace(client: &Client, name: &str) {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap_or_else(|e| panic!("create namespace {name}: {e}"));
}

/// Creates namespace `name` unless it exists.
pub async fn ensure_namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let existing = api
        .get_opt(name)
        .await
        .unwrap_or_else(|e| panic!("get namespace {name}: {e}"));
    if existing.is_none() {
        create_namespace(client, name).await;
    }
}

/// Creates each of `crds`.
pub async fn install_crds(
    client: &Client,
    crds: impl IntoIterator<Item = CustomResourceDefinition>,
) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.create(&PostParams::default(), &crd)
            .await
            .unwrap_or_else(|e| panic!("create CRD {name}: {e}"));
    }
}
