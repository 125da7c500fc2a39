//! The ClusterBinding side of the syncer: reach the worker cluster through the binding's
//! Secret, and report how that went on the binding's status conditions (`Connected`,
//! `SyncerReady`) with a reason an operator can act on.

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::{Api, Client};
use kube_kit::client::{
    ClientError, ClientOptions, client_from_kubeconfig_yaml, describe_kube_error,
    kubeconfig_from_secret,
};

use super::clock::Clock;
use super::error::SyncError;
use crate::crd::{ClusterBinding, KUBECONFIG_SECRET_KEY, cluster_binding_condition};
use kube_kit::conditions::{condition, upsert_condition};

/// Why the worker cluster could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The binding names no Secret.
    #[error("ClusterBinding {binding} has no spec.secretRef.name")]
    NoSecretRef {
        /// Binding name.
        binding: String,
    },
    /// The Secret does not exist.
    #[error("Secret {namespace}/{name} of ClusterBinding {binding} not found")]
    SecretNotFound {
        /// Binding name.
        binding: String,
        /// Secret namespace.
        namespace: String,
        /// Secret name.
        name: String,
    },
    /// The Secret could not be read.
    #[error("cannot read Secret {namespace}/{name}: {reason}")]
    SecretUnreadable {
        /// Secret namespace.
        namespace: String,
        /// Secret name.
        name: String,
        /// What failed.
        reason: String,
    },
    /// The Secret has no usable `kubeconfig` key.
    #[error("Secret {namespace}/{name} {reason}")]
    KubeconfigMissing {
        /// Secret namespace.
        namespace: String,
        /// Secret name.
        name: String,
        /// What is wrong with the key.
        reason: String,
    },
    /// The kubeconfig could not be turned into a client.
    #[error("{0}")]
    InvalidKubeconfig(ClientError),
    /// The worker's API server did not answer.
    #[error("worker cluster of ClusterBinding {binding} is unreachable: {reason}")]
    Unreachable {
        /// Binding name.
        binding: String,
        /// What failed.
        reason: String,
    },
}

impl ConnectError {
    /// The condition reason for this error.
    pub fn reason(&self) -> &'static str {
        match self {
            ConnectError::NoSecretRef { .. } => "SecretRefMissing",
            ConnectError::SecretNotFound { .. } => "SecretNotFound",
            ConnectError::SecretUnreadable { .. } => "SecretUnreadable",
            ConnectError::KubeconfigMissing { .. } => "KubeconfigMissing",
            ConnectError::InvalidKubeconfig(_) => "InvalidKubeconfig",
            ConnectError::Unreachable { .. } => "WorkerUnreachable",
        }
    }
}

/// Builds the worker client from the binding's Secret (key `kubeconfig`; a Secret without a
/// namespace is looked up in `default_namespace`) and checks that the API server answers
/// within `probe_timeout`.
pub async fn connect_worker(
    computing: &Client,
    binding: &ClusterBinding,
    default_namespace: &str,
    options: &ClientOptions,
    probe_timeout: Duration,
) -> Result<Client, ConnectError> {
    let binding_name = binding.metadata.name.clone().unwrap_or_default();
    let secret_ref = &binding.spec.secret_ref;
    let name = secret_ref
        .name
        .clone()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ConnectError::NoSecretRef {
            binding: binding_name.clone(),
        })?;
    let namespace = secret_ref
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| default_namespace.to_owned());
    let secret = Api::<Secret>::namespaced(computing.clone(), &namespace)
        .get_opt(&name)
        .await
        .map_err(|e| ConnectError::SecretUnreadable {
            namespace: namespace.clone(),
            name: name.clone(),
            reason: describe_kube_error(&e),
        })?
        .ok_or_else(|| ConnectError::SecretNotFound {
            binding: binding_name.clone(),
            namespace: namespace.clone(),
            name: name.clone(),
        })?;
    let yaml =
        kubeconfig_from_secret(&secret).map_err(|reason| ConnectError::KubeconfigMissing {
            namespace: namespace.clone(),
            name: name.clone(),
            reason: format!(
                "{reason} (the worker's kubeconfig belongs under {KUBECONFIG_SECRET_KEY:?})"
            ),
        })?;
    let source = format!("secret {namespace}/{name}");
    let worker = client_from_kubeconfig_yaml(&yaml, None, options, &source)
        .await
        .map_err(ConnectError::InvalidKubeconfig)?;
    probe(&worker, probe_timeout)
        .await
        .map_err(|reason| ConnectError::Unreachable {
            binding: binding_name,
            reason,
        })?;
    Ok(worker)
}

/// Whether the API server behind `client` answers within `timeout`.
pub async fn probe(client: &Client, timeout: Duration) -> Result<(), String> {
    match tokio::time::timeout(timeout, client.apiserver_version()).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(err)) => Err(describe_kube_error(&err)),
        Err(_) => Err(format!("no answer within {timeout:?}")),
    }
}

/// The connection outcome as binding conditions: `Connected` and `SyncerReady`.
pub fn connection_conditions(
    outcome: Result<(), &ConnectError>,
    generation: Option<i64>,
    clock: &Clock,
) -> Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    let now = clock.now();
    match outcome {
        Ok(()) => vec![
            condition(
                cluster_binding_condition::CONNECTED,
                true,
                "Connected",
                "the worker cluster answers",
                generation,
                now,
            ),
            condition(
                cluster_binding_condition::SYNCER_READY,
                true,
                "Syncing",
                "the syncer is syncing virtual nodes",
                generation,
                now,
            ),
        ],
        Err(err) => vec![
            condition(
                cluster_binding_condition::CONNECTED,
                false,
                err.reason(),
                err.to_string(),
                generation,
                now,
            ),
            condition(
                cluster_binding_condition::SYNCER_READY,
                false,
                "WaitingForWorker",
                "the syncer waits for the worker cluster",
                generation,
                now,
            ),
        ],
    }
}

/// Writes `conditions` into the binding's status (read-modify-write, retried on conflict);
/// writes nothing when they are already there.
pub async fn update_binding_conditions(
    computing: &Client,
    binding_name: &str,
    conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
) -> Result<(), SyncError> {
    let api: Api<ClusterBinding> = Api::all(computing.clone());
    let fail = |source| SyncError::BindingStatus {
        name: binding_name.to_owned(),
        source,
    };
    for _ in 0..3 {
        let Some(mut binding) = api.get_opt(binding_name).await.map_err(fail)? else {
            return Ok(());
        };
        let status = binding.status.get_or_insert_with(Default::default);
        let mut changed = false;
        for new in conditions.iter().cloned() {
            changed |= upsert_condition(&mut status.conditions, new);
        }
        if !changed {
            return Ok(());
        }
        match api
            .replace_status(binding_name, &PostParams::default(), &binding)
            .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(err) => return Err(fail(err)),
        }
    }
    Ok(())
}
