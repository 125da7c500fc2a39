//! The backend traits: where reads are answered and where writes go.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, WatchEvent};

use super::error::RouterError;
use super::query::{ListQuery, ObjectPage};
use super::target::ResourceTarget;

/// A stream of watch events.
pub type EventStream = BoxStream<'static, Result<WatchEvent<DynamicObject>, RouterError>>;

/// Parameters of a watch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchQuery {
    /// Kubernetes label selector syntax.
    pub label_selector: Option<String>,
    /// Kubernetes field selector syntax.
    pub field_selector: Option<String>,
    /// Resume after this resourceVersion; `None` or `"0"` starts with the current objects as
    /// `ADDED` events.
    pub resource_version: Option<String>,
}

impl WatchQuery {
    /// Whether the watch resumes from a specific resourceVersion.
    pub fn resumes(&self) -> bool {
        self.resource_version
            .as_deref()
            .is_some_and(|rv| !rv.is_empty() && rv != "0")
    }
}

/// Answers reads (get, list, watch) of a resource of an instance.
#[async_trait]
pub trait ReadBackend: Send + Sync {
    /// One object by name (`target.namespace` names its namespace, if namespaced).
    async fn get(
        &self,
        target: &ResourceTarget,
        name: &str,
    ) -> Result<Arc<DynamicObject>, RouterError>;

    /// A filtered, sorted page of objects.
    async fn list(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError>;

    /// A page like [`ReadBackend::list`], for answers written out as JSON: when the page has
    /// [`ObjectPage::rendered`], those bytes are its objects and `items` may hold only each
    /// object's name and namespace (enough for [`ObjectPage::chunk`] and `continue` tokens). A backend that keeps objects as JSON
    /// answers without decoding them; the default is [`ReadBackend::list`].
    async fn list_rendered(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError> {
        self.list(target, query).await
    }

    /// Whether [`ReadBackend::get`] answers objects exactly as the instance stores them. One
    /// read back to be edited and written (kubectl apply, edit, a REST GET-modify-PUT) must be:
    /// a backend that prunes or annotates (Clusterpedia) says `false`, and the router reads
    /// single objects from the instance instead.
    fn objects_as_stored(&self) -> bool {
        true
    }

    /// A stream of changes.
    async fn watch(
        &self,
        target: &ResourceTarget,
        query: &WatchQuery,
    ) -> Result<EventStream, RouterError>;

    /// Whether the backend can answer reads of the resource right now; a cache starts on the
    /// first call and reports `false` until its initial list completed, and while its watch
    /// fails.
    async fn synced(&self, instance: &str, resource: &ApiResource) -> bool;

    /// The newest resourceVersion the backend has applied for the resource (`None`: nothing
    /// yet). A backend that reads the instance itself reports `u64::MAX`: it sees every write.
    fn seen_version(&self, instance: &str, resource: &ApiResource) -> Option<u64>;

    /// Waits up to `timeout` until [`ReadBackend::seen_version`] reaches `version`; returns
    /// whether it did. The default polls every millisecond.
    async fn wait_for_version(
        &self,
        instance: &str,
        resource: &ApiResource,
        version: u64,
        timeout: Duration,
    ) -> bool {
        let seen = || async { self.seen_version(instance, resource) };
        poll_for_version(version, timeout, Duration::from_millis(1), seen).await
    }
}

/// Asks `seen` for the newest applied resourceVersion until it reaches `version` or `timeout`
/// has passed, sleeping `interval` between asks (never past the deadline); returns whether it
/// did.
pub(super) async fn poll_for_version<F, Fut>(
    version: u64,
    timeout: Duration,
    interval: Duration,
    mut seen: F,
) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<u64>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if seen().await.is_some_and(|seen| seen >= version) {
            return true;
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return false;
        }
        tokio::time::sleep(interval.min(deadline - now)).await;
    }
}

/// The apiserver's answer to a write: the object (or `kind: Status` for some deletes).
#[derive(Clone, Debug, PartialEq)]
pub struct WriteOutcome {
    /// The response body.
    pub object: serde_json::Value,
}

impl WriteOutcome {
    /// `metadata.resourceVersion` of the answer, if any.
    pub fn resource_version(&self) -> Option<&str> {
        self.object
            .pointer("/metadata/resourceVersion")
            .and_then(serde_json::Value::as_str)
    }
}

/// Carries writes to an instance's apiserver.
#[async_trait]
pub trait WriteBackend: Send + Sync {
    /// POST `body` to the collection.
    async fn create(
        &self,
        target: &ResourceTarget,
        body: &serde_json::Value,
        params: &PostParams,
    ) -> Result<WriteOutcome, RouterError>;

    /// PUT `body` as object `name`.
    async fn replace(
        &self,
        target: &ResourceTarget,
        name: &str,
        body: &serde_json::Value,
        params: &PostParams,
    ) -> Result<WriteOutcome, RouterError>;

    /// PATCH object `name`.
    async fn patch(
        &self,
        target: &ResourceTarget,
        name: &str,
        patch: &Patch<serde_json::Value>,
        params: &PatchParams,
    ) -> Result<WriteOutcome, RouterError>;

    /// DELETE object `name`.
    async fn delete(
        &self,
        target: &ResourceTarget,
        name: &str,
        params: &DeleteParams,
    ) -> Result<WriteOutcome, RouterError>;
}
