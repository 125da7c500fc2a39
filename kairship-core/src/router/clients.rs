//! How backends reach an instance's apiserver.

use std::collections::HashMap;
use std::sync::RwLock;

use async_trait::async_trait;

use super::error::RouterError;

/// Gives a client for an instance's apiserver.
#[async_trait]
pub trait InstanceClients: Send + Sync {
    /// A client for `instance`.
    async fn client(&self, instance: &str) -> Result<kube::Client, RouterError>;
}

/// A fixed table of instance clients.
#[derive(Default)]
pub struct StaticInstanceClients {
    clients: RwLock<HashMap<String, kube::Client>>,
}

impl std::fmt::Debug for StaticInstanceClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self
            .clients
            .read()
            .map(|c| c.keys().cloned().collect())
            .unwrap_or_default();
        f.debug_struct("StaticInstanceClients")
            .field("instances", &names)
            .finish()
    }
}

impl StaticInstanceClients {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces the client of `instance`.
    pub fn insert(&self, instance: impl Into<String>, client: kube::Client) {
        self.clients
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(instance.into(), client);
    }

    /// Builder form of [`StaticInstanceClients::insert`].
    pub fn with(self, instance: impl Into<String>, client: kube::Client) -> Self {
        self.insert(instance, client);
        self
    }
}

#[async_trait]
impl InstanceClients for StaticInstanceClients {
    async fn client(&self, instance: &str) -> Result<kube::Client, RouterError> {
        self.clients
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(instance)
            .cloned()
            .ok_or_else(|| RouterError::UnknownInstance {
                instance: instance.to_owned(),
            })
    }
}
