//! Recording the writes the service makes inside instances: a [`WriteBackend`] that passes each
//! write on and records how it ended.

use std::sync::Arc;

use async_trait::async_trait;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};

use super::{AuditObject, AuditRecordSpec, AuditSink, current_door};
use crate::access::WriteIdentity;
use crate::router::{ResourceTarget, RouterError, WriteBackend, WriteOutcome};

/// Passes writes to `inner` and records each one in `sink`, with the caller the target acts
/// for, the door of the request ([`super::through`]) and the answer's code.
pub struct AuditedWriter {
    inner: Arc<dyn WriteBackend>,
    sink: Arc<dyn AuditSink>,
    identity: WriteIdentity,
}

impl AuditedWriter {
    /// Records the writes of `inner`, which reaches instances as `identity` says.
    pub fn new(
        inner: Arc<dyn WriteBackend>,
        sink: Arc<dyn AuditSink>,
        identity: WriteIdentity,
    ) -> AuditedWriter {
        AuditedWriter {
            inner,
            sink,
            identity,
        }
    }

    fn record(
        &self,
        target: &ResourceTarget,
        verb: &str,
        name: Option<&str>,
        subresource: &str,
        result: &Result<WriteOutcome, RouterError>,
    ) {
        // Writes made for no caller are Kairship's own (controllers, set-up): not audited here.
        let Some(caller) = &target.acting_as else {
            return;
        };
        let (code, message) = match result {
            Ok(_) => (if verb == "create" { 201 } else { 200 }, None),
            Err(error) => (error.http_status(), Some(error.to_string())),
        };
        let acting_as = match self.identity {
            WriteIdentity::Impersonate => caller.user.clone(),
            WriteIdentity::Instance => "kairship".to_string(),
        };
        let object = AuditObject {
            group: target.resource.group.clone(),
            version: target.resource.version.clone(),
            resource: target.resource.plural.clone(),
            subresource: subresource.to_string(),
            namespace: target.namespace.clone().unwrap_or_default(),
            name: name.unwrap_or_default().to_string(),
        };
        self.sink.record(AuditRecordSpec::new(
            caller,
            acting_as,
            target.instance.clone(),
            current_door(),
            verb,
            object,
            code,
            message,
        ));
    }
}

impl std::fmt::Debug for AuditedWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditedWriter").finish_non_exhaustive()
    }
}

#[async_trait]
impl WriteBackend for AuditedWriter {
    async fn create(
        &self,
        target: &ResourceTarget,
        body: &serde_json::Value,
        params: &PostParams,
    ) -> Result<WriteOutcome, RouterError> {
        let result = self.inner.create(target, body, params).await;
        let name = body.pointer("/metadata/name").and_then(|n| n.as_str());
        self.record(target, "create", name, "", &result);
        result
    }

    async fn replace(
        &self,
        target: &ResourceTarget,
        name: &str,
        body: &serde_json::Value,
        params: &PostParams,
    ) -> Result<WriteOutcome, RouterError> {
        let result = self.inner.replace(target, name, body, params).await;
        self.record(target, "update", Some(name), "", &result);
        result
    }

    async fn patch(
        &self,
        target: &ResourceTarget,
        name: &str,
        patch: &Patch<serde_json::Value>,
        params: &PatchParams,
    ) -> Result<WriteOutcome, RouterError> {
        let result = self.inner.patch(target, name, patch, params).await;
        self.record(target, "patch", Some(name), "", &result);
        result
    }

    async fn delete(
        &self,
        target: &ResourceTarget,
        name: &str,
        params: &DeleteParams,
    ) -> Result<WriteOutcome, RouterError> {
        let result = self.inner.delete(target, name, params).await;
        self.record(target, "delete", Some(name), "", &result);
        result
    }
}
