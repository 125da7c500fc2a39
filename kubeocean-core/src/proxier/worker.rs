//! The worker cluster's client, built from the binding's kubeconfig Secret like the syncer's
//! (see [`connect_worker`]) and kept for a while, so that a rotated Secret or a worker that
//! moved is picked up without a restart.

use std::time::{Duration, Instant};

use kube::{Api, Client};
use kube_kit::client::{ClientOptions, describe_kube_error};

use crate::crd::ClusterBinding;
use crate::syncer::binding::{ConnectError, connect_worker};

/// Why the worker client is not available.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The binding does not exist.
    #[error("ClusterBinding {binding} not found")]
    BindingNotFound {
        /// Binding name.
        binding: String,
    },
    /// The binding could not be read.
    #[error("cannot read ClusterBinding {binding}: {reason}")]
    BindingUnreadable {
        /// Binding name.
        binding: String,
        /// What failed.
        reason: String,
    },
    /// The worker could not be reached through the binding's Secret.
    #[error(transparent)]
    Connect(#[from] ConnectError),
}

/// Settings of [`WorkerClient`].
#[derive(Clone, Debug)]
pub struct WorkerSettings {
    /// Binding name.
    pub binding: String,
    /// Namespace of the Secret when the binding's `secretRef` names none.
    pub secret_namespace: String,
    /// Options of the worker client.
    pub options: ClientOptions,
    /// How long the worker may take to answer the connectivity probe.
    pub probe_timeout: Duration,
    /// How long a built client is reused.
    pub ttl: Duration,
}

/// Builds and caches the worker client.
pub struct WorkerClient {
    computing: Client,
    settings: WorkerSettings,
    cached: tokio::sync::Mutex<Option<(Instant, Client)>>,
}

impl WorkerClient {
    /// A cache that reads the binding through `computing`.
    pub fn new(computing: Client, settings: WorkerSettings) -> WorkerClient {
        WorkerClient {
            computing,
            settings,
            cached: tokio::sync::Mutex::new(None),
        }
    }

    /// The worker client, connecting if there is none or it is older than the TTL.
    pub async fn get(&self) -> Result<Client, WorkerError> {
        // Held across the connect so that concurrent requests wait for one attempt.
        let mut cached = self.cached.lock().await;
        if let Some((at, client)) = cached.as_ref()
            && at.elapsed() < self.settings.ttl
        {
            return Ok(client.clone());
        }
        let binding_name = &self.settings.binding;
        let binding = Api::<ClusterBinding>::all(self.computing.clone())
            .get_opt(binding_name)
            .await
            .map_err(|e| WorkerError::BindingUnreadable {
                binding: binding_name.clone(),
                reason: describe_kube_error(&e),
            })?
            .ok_or_else(|| WorkerError::BindingNotFound {
                binding: binding_name.clone(),
            })?;
        let client = connect_worker(
            &self.computing,
            &binding,
            &self.settings.secret_namespace,
            &self.settings.options,
            self.settings.probe_timeout,
        )
        .await?;
        *cached = Some((Instant::now(), client.clone()));
        Ok(client)
    }

    /// Drops the cached client after a transport failure, so the next request reconnects.
    pub async fn forget(&self) {
        *self.cached.lock().await = None;
    }
}

/// Whether an error says the connection itself failed (rather than the API server
/// answering with an error status).
pub fn is_transport_error(err: &kube::Error) -> bool {
    matches!(err, kube::Error::HyperError(_) | kube::Error::Service(_))
}
