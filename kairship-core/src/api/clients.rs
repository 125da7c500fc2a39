//! Instance clients from the host cluster: the kubeconfig of each Instance (its
//! `kubeconfigSecretRef`, or the Secret the karmada-operator publishes), kept briefly.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use kube::core::Status;
use kube::{Api, Client};
use kube_kit::client::{ClientOptions, client_from_kubeconfig_yaml};
use tokio::time::Instant;

use crate::controllers::connection::find_kubeconfig;
use crate::instance::Instance;
use crate::router::{InstanceClients, RouterError};

struct Cached {
    /// Identity of the kubeconfig the client was built from (Secret and its resourceVersion).
    key: String,
    client: Client,
    checked: Instant,
}

/// [`InstanceClients`] that look each Instance up on the host cluster and build a client from
/// its kubeconfig Secret. A client is reused for `refresh` before the Instance and Secret are
/// read again; it is rebuilt only when the Secret changed.
pub struct HostInstanceClients {
    host: Client,
    options: ClientOptions,
    timeout: Duration,
    refresh: Duration,
    cache: Mutex<HashMap<String, Cached>>,
}

impl std::fmt::Debug for HostInstanceClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostInstanceClients")
            .field("timeout", &self.timeout)
            .field("refresh", &self.refresh)
            .finish_non_exhaustive()
    }
}

fn unavailable(instance: &str, message: String) -> RouterError {
    RouterError::Api {
        target: format!("instance {instance}"),
        status: Box::new(Status::failure(&message, "ServiceUnavailable").with_code(503)),
    }
}

impl HostInstanceClients {
    /// Clients for the instances of `host`; `options` apply to every instance client, each
    /// host read may take `timeout`, and a client is re-checked after `refresh`.
    pub fn new(host: Client, options: ClientOptions, timeout: Duration, refresh: Duration) -> Self {
        HostInstanceClients {
            host,
            options,
            timeout,
            refresh,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn cached(&self, instance: &str, fresh_only: bool) -> Option<(String, Client)> {
        let cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache
            .get(instance)
            .filter(|c| !fresh_only || c.checked.elapsed() < self.refresh)
            .map(|c| (c.key.clone(), c.client.clone()))
    }

    fn store(&self, instance: &str, key: String, client: Client) {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(
                instance.to_owned(),
                Cached {
                    key,
                    client,
                    checked: Instant::now(),
                },
            );
    }

    /// Forgets the client of `instance` (after it was deleted).
    pub fn forget(&self, instance: &str) {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(instance);
    }
}

#[async_trait]
impl InstanceClients for HostInstanceClients {
    async fn client(&self, instance: &str) -> Result<Client, RouterError> {
        if let Some((_, client)) = self.cached(instance, true) {
            return Ok(client);
        }
        let api: Api<Instance> = Api::all(self.host.clone());
        let found = tokio::time::timeout(self.timeout, api.get_opt(instance))
            .await
            .map_err(|_| {
                unavailable(
                    instance,
                    format!("the host cluster did not answer within {:?}", self.timeout),
                )
            })?
            .map_err(|e| RouterError::from_kube(format!("instance {instance}"), e))?;
        let Some(object) = found else {
            self.forget(instance);
            return Err(RouterError::UnknownInstance {
                instance: instance.to_owned(),
            });
        };
        let kubeconfig = find_kubeconfig(&self.host, &object, self.timeout)
            .await
            .map_err(|e| unavailable(instance, e.to_string()))?
            .ok_or_else(|| {
                unavailable(
                    instance,
                    format!("instance {instance} has no kubeconfig published yet"),
                )
            })?;
        if let Some((key, client)) = self.cached(instance, false)
            && key == kubeconfig.key
        {
            self.store(instance, key, client.clone());
            return Ok(client);
        }
        let client =
            client_from_kubeconfig_yaml(&kubeconfig.yaml, None, &self.options, &kubeconfig.key)
                .await
                .map_err(|e| unavailable(instance, format!("instance {instance}: {e}")))?;
        self.store(instance, kubeconfig.key, client.clone());
        Ok(client)
    }
}
