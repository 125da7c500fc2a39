//! Reads straight from the instance apiserver: the fallback of the router, and the baseline the
//! cache is measured against.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};
use kube::Api;
use kube::api::{ListParams, WatchParams};
use kube::core::{ApiResource, DynamicObject, TypeMeta};

use super::backend::{EventStream, ReadBackend, WatchQuery};
use super::cached::CachedObject;
use super::clients::{InstanceClients, end_when_lost};
use super::error::RouterError;
use super::query::{ListQuery, ObjectPage};
use super::raw::{ItemForm, RawObject};
use super::target::ResourceTarget;

/// `object` with `apiVersion`/`kind` of `resource` when it has none: kube-apiserver leaves them
/// out of list items of its own kinds, and a decoded object (a get, a watch event, a list a
/// program reads) always has them, from whichever backend.
pub fn typed(mut object: DynamicObject, resource: &ApiResource) -> DynamicObject {
    if object.types.is_none() {
        object.types = Some(TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
    }
    object
}

/// Objects per page when a rendered list is read from the instance: its answer is read a page
/// at a time, as the cache's lists are, and only each object's JSON is kept.
const DIRECT_LIST_PAGE_SIZE: u32 = 500;

/// A [`ReadBackend`] that asks the instance apiserver on every read. Label and field selectors
/// are evaluated by the apiserver; fuzzy name, sorting and paging locally, exactly as the cache
/// does. Every read takes its client from the [`InstanceClients`] at that moment, and a watch
/// ends (`410 Expired`) once its instance is deleted or changes credentials.
pub struct DirectBackend {
    clients: Arc<dyn InstanceClients>,
}

impl std::fmt::Debug for DirectBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectBackend").finish_non_exhaustive()
    }
}

impl DirectBackend {
    /// Reads through `clients`.
    pub fn new(clients: Arc<dyn InstanceClients>) -> Self {
        DirectBackend { clients }
    }

    async fn api(&self, target: &ResourceTarget) -> Result<Api<DynamicObject>, RouterError> {
        let client = self.clients.client(&target.instance).await?;
        Ok(dynamic_api(client, target))
    }
}

/// A dynamic `Api` for `target`.
pub(crate) fn dynamic_api(client: kube::Client, target: &ResourceTarget) -> Api<DynamicObject> {
    match &target.namespace {
        Some(ns) => Api::namespaced_with(client, ns, &target.resource),
        None => Api::all_with(client, &target.resource),
    }
}

#[async_trait]
impl ReadBackend for DirectBackend {
    async fn get(
        &self,
        target: &ResourceTarget,
        name: &str,
    ) -> Result<Arc<DynamicObject>, RouterError> {
        let api = self.api(target).await?;
        api.get(name)
            .await
            .map(Arc::new)
            .map_err(|e| RouterError::from_kube(format!("{}: {name}", target.describe()), e))
    }

    async fn list(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError> {
        let compiled = query.compile()?;
        let api = self.api(target).await?;
        let mut params = ListParams::default();
        if let Some(labels) = query.label_selector.as_deref().filter(|s| !s.is_empty()) {
            params = params.labels(labels);
        }
        if let Some(fields) = query.field_selector.as_deref().filter(|s| !s.is_empty()) {
            params = params.fields(fields);
        }
        let list = api
            .list(&params)
            .await
            .map_err(|e| RouterError::from_kube(target.describe(), e))?;
        let mut page = compiled.select(
            target.namespace.as_deref(),
            list.items
                .into_iter()
                .map(|o| Arc::new(typed(o, &target.resource))),
        );
        page.resource_version = list.metadata.resource_version;
        Ok(page)
    }

    /// The instance's list read a page at a time, each object kept as the JSON it sent (never
    /// decoded into a tree many times its size), selected, sorted and paged as the cache does.
    /// Queries reading beyond the indexed metadata decode the objects ([`ReadBackend::list`]).
    async fn list_rendered(
        &self,
        target: &ResourceTarget,
        query: &ListQuery,
    ) -> Result<ObjectPage, RouterError> {
        let compiled = query.compile()?;
        if compiled.reads_beyond_metadata() {
            return self.list(target, query).await;
        }
        let client = self.clients.client(&target.instance).await?;
        let api: Api<RawObject> = match &target.namespace {
            Some(ns) => Api::namespaced_with(client, ns, &target.resource),
            None => Api::all_with(client, &target.resource),
        };
        let mut params = ListParams::default().limit(DIRECT_LIST_PAGE_SIZE);
        if let Some(labels) = query.label_selector.as_deref().filter(|s| !s.is_empty()) {
            params = params.labels(labels);
        }
        if let Some(fields) = query.field_selector.as_deref().filter(|s| !s.is_empty()) {
            params = params.fields(fields);
        }
        let mut namespaces: HashMap<String, Arc<str>> = HashMap::new();
        let mut objects: Vec<Arc<CachedObject>> = Vec::new();
        let mut version = None;
        let mut form = None;
        loop {
            let list = api
                .list(&params)
                .await
                .map_err(|e| RouterError::from_kube(target.describe(), e))?;
            // Every page of a chunked list is of the first page's resourceVersion.
            version = version.or(list.metadata.resource_version);
            for raw in list.items {
                let form = *form.get_or_insert_with(|| {
                    ItemForm::of_item(&raw).unwrap_or_else(|| ItemForm::guess(&target.resource))
                });
                let shared = |ns: &str| {
                    namespaces
                        .entry(ns.to_owned())
                        .or_insert_with(|| Arc::from(ns))
                        .clone()
                };
                match raw.into_cached(&target.resource, form, shared) {
                    Ok(object) => objects.push(Arc::new(object)),
                    Err(reason) => {
                        tracing::warn!(target = %target.describe(), %reason, "cannot index a listed object; left out");
                    }
                }
            }
            match list.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(next) => params.continue_token = Some(next),
                None => break,
            }
        }
        let namespace = target.namespace.as_deref();
        objects.retain(|o| compiled.matches(namespace, o.as_ref()));
        let (page, pagination) = compiled.select_by(namespace, objects, |o| o.as_ref());
        Ok(ObjectPage {
            items: page.iter().map(|o| Arc::new(o.identity_object())).collect(),
            pagination,
            resource_version: version,
            rendered: Some(page.iter().map(|o| o.json.clone()).collect()),
        })
    }

    async fn watch(
        &self,
        target: &ResourceTarget,
        query: &WatchQuery,
    ) -> Result<EventStream, RouterError> {
        let connection = self.clients.connect(&target.instance).await?;
        let api = dynamic_api(connection.client, target);
        // Bookmarks only when asked: the proxy's callers did not ask, and a BOOKMARK passed to
        // kubectl prints as `<unknown>`.
        let mut params = WatchParams::default().disable_bookmarks();
        if let Some(labels) = query.label_selector.as_deref().filter(|s| !s.is_empty()) {
            params = params.labels(labels);
        }
        if let Some(fields) = query.field_selector.as_deref().filter(|s| !s.is_empty()) {
            params = params.fields(fields);
        }
        // Unset stays unset ("most recent", as the caller asked), not "0" ("any").
        let version = query.resource_version.as_deref().unwrap_or("");
        let described = target.describe();
        let stream = api
            .watch(&params, version)
            .await
            .map_err(|e| RouterError::from_kube(described.clone(), e))?;
        let events = stream
            .map_err(move |e| RouterError::from_kube(described.clone(), e))
            .boxed();
        // An open watch must not outlive the instance (or credentials) it was opened for.
        Ok(end_when_lost(
            events,
            &self.clients,
            &target.instance,
            &connection.identity,
        ))
    }

    async fn synced(&self, _instance: &str, _resource: &ApiResource) -> bool {
        true
    }

    fn seen_version(&self, _instance: &str, _resource: &ApiResource) -> Option<u64> {
        Some(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::GroupVersionKind;

    #[test]
    fn list_items_get_their_type() {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apps", "v1", "Deployment"),
            "deployments",
        );
        let bare: DynamicObject =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "web"}})).unwrap();
        let filled = typed(bare, &resource);
        let types = filled.types.unwrap();
        assert_eq!(
            (types.api_version.as_str(), types.kind.as_str()),
            ("apps/v1", "Deployment")
        );
        // What the object says is kept.
        let own: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}))
        .unwrap();
        assert_eq!(typed(own, &resource).types.unwrap().kind, "ConfigMap");
    }
}
