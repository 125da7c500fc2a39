//! Writes forwarded to the instance apiserver as raw Kubernetes requests.

use std::sync::Arc;

use async_trait::async_trait;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::Request;

use super::backend::{WriteBackend, WriteOutcome};
use super::clients::InstanceClients;
use super::error::RouterError;
use super::target::ResourceTarget;
use crate::access::{WriteIdentity, impersonation_headers};

/// A [`WriteBackend`] that sends each write to the instance apiserver unchanged and returns
/// its answer; apiserver errors (`409`, `422`, ...) come back as [`RouterError::Api`].
pub struct InstanceWriter {
    clients: Arc<dyn InstanceClients>,
    identity: WriteIdentity,
}

impl std::fmt::Debug for InstanceWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstanceWriter").finish_non_exhaustive()
    }
}

impl InstanceWriter {
    /// Writes through `clients`.
    pub fn new(clients: Arc<dyn InstanceClients>) -> Self {
        InstanceWriter {
            clients,
            identity: WriteIdentity::default(),
        }
    }

    /// Writes carry `identity`: with [`WriteIdentity::Impersonate`], a target made for a caller
    /// reaches the instance impersonating that caller.
    pub fn with_identity(mut self, identity: WriteIdentity) -> Self {
        self.identity = identity;
        self
    }

    async fn send(
        &self,
        target: &ResourceTarget,
        what: String,
        request: Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    ) -> Result<WriteOutcome, RouterError> {
        let request = request.map_err(|e| RouterError::InvalidQuery {
            parameter: "request",
            reason: format!("{what}: {e}"),
        })?;
        let mut request = request;
        if let (WriteIdentity::Impersonate, Some(caller)) = (self.identity, &target.acting_as) {
            request.headers_mut().extend(impersonation_headers(caller));
        }
        let client = self.clients.client(&target.instance).await?;
        let text = client
            .request_text(request)
            .await
            .map_err(|e| RouterError::from_kube(what.clone(), e))?;
        let object = if text.trim().is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_str(&text).map_err(|source| RouterError::Decode {
                target: what,
                source,
            })?
        };
        Ok(WriteOutcome { object })
    }
}

fn encode(target: &ResourceTarget, body: &serde_json::Value) -> Result<Vec<u8>, RouterError> {
    serde_json::to_vec(body).map_err(|source| RouterError::Decode {
        target: target.describe(),
        source,
    })
}

#[async_trait]
impl WriteBackend for InstanceWriter {
    async fn create(
        &self,
        target: &ResourceTarget,
        body: &serde_json::Value,
        params: &PostParams,
    ) -> Result<WriteOutcome, RouterError> {
        let request = Request::new(target.collection_path()).create(params, encode(target, body)?);
        self.send(target, format!("create {}", target.describe()), request)
            .await
    }

    async fn replace(
        &self,
        target: &ResourceTarget,
        name: &str,
        body: &serde_json::Value,
        params: &PostParams,
    ) -> Result<WriteOutcome, RouterError> {
        let request =
            Request::new(target.collection_path()).replace(name, params, encode(target, body)?);
        self.send(
            target,
            format!("replace {}: {name}", target.describe()),
            request,
        )
        .await
    }

    async fn patch(
        &self,
        target: &ResourceTarget,
        name: &str,
        patch: &Patch<serde_json::Value>,
        params: &PatchParams,
    ) -> Result<WriteOutcome, RouterError> {
        let request = Request::new(target.collection_path()).patch(name, params, patch);
        self.send(
            target,
            format!("patch {}: {name}", target.describe()),
            request,
        )
        .await
    }

    async fn delete(
        &self,
        target: &ResourceTarget,
        name: &str,
        params: &DeleteParams,
    ) -> Result<WriteOutcome, RouterError> {
        let request = Request::new(target.collection_path()).delete(name, params);
        self.send(
            target,
            format!("delete {}: {name}", target.describe()),
            request,
        )
        .await
    }
}
