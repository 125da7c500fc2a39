//! What an operator does once per cluster, as code: install the CRDs, and register a worker
//! with the computing cluster (namespace, kubeconfig Secret, ClusterBinding). Used by the
//! sandbox demo, examples and benchmarks; every step tolerates objects that already exist.

use crate::crd::{self, ClusterBinding};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use serde_json::json;
use std::collections::BTreeMap;

/// A worker to register with the computing cluster.
#[derive(Clone, Debug)]
pub struct WorkerRegistration<'a> {
    /// Name of the ClusterBinding.
    pub binding: &'a str,
    /// `spec.clusterID` (DNS label, at most 24 characters).
    pub cluster_id: &'a str,
    /// Namespace of the kubeconfig Secret in the computing cluster.
    pub secret_namespace: &'a str,
    /// `spec.mountNamespace`: the worker namespace that receives mapped objects.
    pub mount_namespace: &'a str,
    /// The worker's kubeconfig (YAML); stored, never logged.
    pub kubeconfig: &'a str,
}

/// The name of the Secret that holds a binding's kubeconfig.
pub fn kubeconfig_secret_name(binding: &str) -> String {
    format!("{binding}-kubeconfig")
}

async fn create_if_missing<K>(api: &Api<K>, object: &K) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Installs the ClusterBinding and ResourceLeasingPolicy CRDs.
pub async fn install_crds(client: &Client) -> Result<(), kube::Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crd::crds() {
        create_if_missing(&api, &crd).await?;
    }
    Ok(())
}

/// Creates the namespace, the kubeconfig Secret and the ClusterBinding for a worker.
pub async fn register_worker(
    computing: &Client,
    worker: &WorkerRegistration<'_>,
) -> Result<(), kube::Error> {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(worker.secret_namespace.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    create_if_missing(&Api::all(computing.clone()), &namespace).await?;
    let secret_name = kubeconfig_secret_name(worker.binding);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(secret_name.clone()),
            namespace: Some(worker.secret_namespace.to_string()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "kubeconfig".to_string(),
            ByteString(worker.kubeconfig.as_bytes().to_vec()),
        )])),
        ..Default::default()
    };
    create_if_missing(
        &Api::namespaced(computing.clone(), worker.secret_namespace),
        &secret,
    )
    .await?;
    let binding: ClusterBinding = serde_json::from_value(json!({
        "apiVersion": "cloud.tencent.com/v1beta1",
        "kind": "ClusterBinding",
        "metadata": {"name": worker.binding},
        "spec": {
            "clusterID": worker.cluster_id,
            "mountNamespace": worker.mount_namespace,
            "secretRef": {"name": secret_name, "namespace": worker.secret_namespace},
        },
    }))
    .map_err(kube::Error::SerdeError)?;
    create_if_missing(&Api::all(computing.clone()), &binding).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_follow_the_binding() {
        assert_eq!(kubeconfig_secret_name("worker-1"), "worker-1-kubeconfig");
    }
}
