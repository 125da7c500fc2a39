//! The resources an instance serves (`ListApiResources`), read from its discovery as kubectl
//! reads it: aggregated discovery (`/api` and `/apis` answering an `APIGroupDiscoveryList`)
//! first, the legacy documents (`/api`, `/apis`, then one `APIResourceList` per group version)
//! where the instance serves no aggregated form or marks a group version stale. Answers are
//! kept per instance identity for [`FRESH_FOR`], then revalidated with the aggregated
//! documents' `ETag`, so a CRD created in the instance is listed within seconds and an
//! unchanged instance costs two `304 Not Modified`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroupList, APIResourceList, APIVersions};
use serde::Deserialize;

use super::types::ApiResourceInfo;
use crate::api::CORE_GROUP;
use crate::router::{InstanceClients, InstanceIdentity, RouterError};

/// How long an instance's answer is used without asking it again.
pub const FRESH_FOR: Duration = Duration::from_secs(2);

/// The `Accept` of an aggregated discovery request, with plain JSON (the legacy documents) as
/// the fallback a server without aggregated discovery answers with, as kubectl sends it
/// (client-go `discovery/discovery_client.go`, `AcceptV2`).
const AGGREGATED_ACCEPT: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

// ---- the aggregated discovery wire format, kubernetes
// `staging/src/k8s.io/api/apidiscovery/v2/types.go` (`APIGroupDiscoveryList` and below).

/// `APIGroupDiscoveryList`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct GroupDiscoveryList {
    /// `kind`: `APIGroupDiscoveryList` (a legacy document has another).
    #[serde(default)]
    pub kind: String,
    /// The groups, by priority.
    #[serde(default)]
    pub items: Vec<GroupDiscovery>,
}

/// `APIGroupDiscovery`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct GroupDiscovery {
    /// `metadata.name` is the group; empty for the core group.
    #[serde(default)]
    pub metadata: GroupMetadata,
    /// Versions, preferred first.
    #[serde(default)]
    pub versions: Vec<VersionDiscovery>,
}

/// The part of `ObjectMeta` a group carries.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct GroupMetadata {
    /// The group's name.
    #[serde(default)]
    pub name: String,
}

/// `APIVersionDiscovery`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct VersionDiscovery {
    /// `v1`, ...
    #[serde(default)]
    pub version: String,
    /// The resources of the version.
    #[serde(default)]
    pub resources: Vec<ResourceDiscovery>,
    /// `Current`, or `Stale` when the server could not refresh an aggregated API's document.
    #[serde(default)]
    pub freshness: Option<String>,
}

/// `APIResourceDiscovery`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDiscovery {
    /// Plural.
    #[serde(default)]
    pub resource: String,
    /// The kind of its objects (`group` and `version` empty: the resource's own).
    #[serde(default)]
    pub response_kind: Option<ResponseKind>,
    /// `Namespaced` or `Cluster`.
    #[serde(default)]
    pub scope: String,
    /// Singular name.
    #[serde(default)]
    pub singular_resource: String,
    /// Verbs.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Short names.
    #[serde(default)]
    pub short_names: Vec<String>,
    /// Categories.
    #[serde(default)]
    pub categories: Vec<String>,
    /// Subresources.
    #[serde(default)]
    pub subresources: Vec<SubresourceDiscovery>,
}

/// `GroupVersionKind` of a response.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ResponseKind {
    /// Kind.
    #[serde(default)]
    pub kind: String,
}

/// `APISubresourceDiscovery`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SubresourceDiscovery {
    /// `status`, `scale`, ...
    #[serde(default)]
    pub subresource: String,
}

/// The resources of one group version, known or still to be read from its legacy document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Read (from an aggregated document).
    Known(Vec<ApiResourceInfo>),
    /// To be read from `/api/{version}` or `/apis/{group}/{version}`.
    Legacy {
        /// Group; empty for the core group.
        group: String,
        /// Version.
        version: String,
        /// Whether it is the group's preferred version.
        preferred: bool,
    },
}

/// The group as the API spells it: `core` for the core group.
fn api_group(group: &str) -> String {
    if group.is_empty() {
        CORE_GROUP.to_owned()
    } else {
        group.to_owned()
    }
}

/// The parts of an aggregated document, in its order: each group's versions as listed
/// (preferred first), a stale version left to its legacy document.
pub fn aggregated_parts(doc: &GroupDiscoveryList) -> Vec<Part> {
    let mut parts = Vec::new();
    for group in &doc.items {
        for (i, version) in group.versions.iter().enumerate() {
            let preferred = i == 0;
            if version.freshness.as_deref() == Some("Stale") {
                parts.push(Part::Legacy {
                    group: group.metadata.name.clone(),
                    version: version.version.clone(),
                    preferred,
                });
                continue;
            }
            let resources = version
                .resources
                .iter()
                .map(|r| ApiResourceInfo {
                    group: api_group(&group.metadata.name),
                    version: version.version.clone(),
                    preferred,
                    resource: r.resource.clone(),
                    singular: r.singular_resource.clone(),
                    kind: r
                        .response_kind
                        .as_ref()
                        .map(|k| k.kind.clone())
                        .unwrap_or_default(),
                    namespaced: r.scope == "Namespaced",
                    verbs: r.verbs.clone(),
                    short_names: r.short_names.clone(),
                    categories: r.categories.clone(),
                    subresources: r
                        .subresources
                        .iter()
                        .map(|s| s.subresource.clone())
                        .collect(),
                })
                .collect();
            parts.push(Part::Known(resources));
        }
    }
    parts
}

/// The group versions of the legacy `/api` (`core`) or `/apis` documents, each group's
/// preferred version first, as parts to read.
pub fn legacy_parts(core: Option<&APIVersions>, groups: Option<&APIGroupList>) -> Vec<Part> {
    let mut parts = Vec::new();
    for (i, version) in core.iter().flat_map(|c| c.versions.iter()).enumerate() {
        parts.push(Part::Legacy {
            group: String::new(),
            version: version.clone(),
            preferred: i == 0,
        });
    }
    for group in groups.iter().flat_map(|g| g.groups.iter()) {
        let preferred = group
            .preferred_version
            .as_ref()
            .map(|p| p.version.clone())
            .or_else(|| group.versions.first().map(|v| v.version.clone()));
        let mut versions: Vec<&str> = preferred.iter().map(String::as_str).collect();
        for v in &group.versions {
            if !versions.contains(&v.version.as_str()) {
                versions.push(&v.version);
            }
        }
        for version in versions {
            parts.push(Part::Legacy {
                group: group.name.clone(),
                version: version.to_owned(),
                preferred: preferred.as_deref() == Some(version),
            });
        }
    }
    parts
}

/// The resources of a legacy `APIResourceList` of `group`/`version`: each `a/b` entry is a
/// subresource `b` of `a`, listed under it.
pub fn legacy_resources(
    group: &str,
    version: &str,
    preferred: bool,
    list: &APIResourceList,
) -> Vec<ApiResourceInfo> {
    let mut out: Vec<ApiResourceInfo> = Vec::new();
    for r in list.resources.iter().filter(|r| !r.name.contains('/')) {
        out.push(ApiResourceInfo {
            group: api_group(group),
            version: version.to_owned(),
            preferred,
            resource: r.name.clone(),
            singular: r.singular_name.clone(),
            kind: r.kind.clone(),
            namespaced: r.namespaced,
            verbs: r.verbs.clone(),
            short_names: r.short_names.clone().unwrap_or_default(),
            categories: r.categories.clone().unwrap_or_default(),
            subresources: Vec::new(),
        });
    }
    for r in &list.resources {
        if let Some((parent, sub)) = r.name.split_once('/')
            && let Some(p) = out.iter_mut().find(|p| p.resource == parent)
        {
            p.subresources.push(sub.to_owned());
        }
    }
    out
}

/// An answer of the instance.
enum Fetched {
    /// `304 Not Modified`: the document of the `ETag` sent.
    Unchanged,
    /// The body and its `ETag`.
    Body(Bytes, Option<String>),
    /// `404`: nothing served there.
    Missing,
}

/// `GET path` with `accept` (and `If-None-Match: etag`).
async fn fetch(
    client: &kube::Client,
    instance: &str,
    path: &str,
    accept: &str,
    etag: Option<&str>,
) -> Result<Fetched, RouterError> {
    let what = format!("{instance}: discovery {path}");
    let mut request = http::Request::get(path).header(http::header::ACCEPT, accept);
    if let Some(etag) = etag {
        request = request.header(http::header::IF_NONE_MATCH, etag);
    }
    let request = request
        .body(kube::client::Body::empty())
        .map_err(|e| RouterError::from_kube(&what, kube::Error::HttpError(e)))?;
    let answer = client
        .send(request)
        .await
        .map_err(|e| RouterError::from_kube(&what, e))?;
    let status = answer.status();
    let etag = answer
        .headers()
        .get(http::header::ETAG)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if status == http::StatusCode::NOT_MODIFIED {
        return Ok(Fetched::Unchanged);
    }
    if status == http::StatusCode::NOT_FOUND {
        return Ok(Fetched::Missing);
    }
    let body = answer
        .into_body()
        .collect_bytes()
        .await
        .map_err(|e| RouterError::from_kube(&what, e))?;
    if !status.is_success() {
        let status = serde_json::from_slice::<kube::core::Status>(&body).unwrap_or_else(|_| {
            kube::core::Status::failure(&String::from_utf8_lossy(&body), "")
                .with_code(status.as_u16())
        });
        return Err(RouterError::Api {
            target: what,
            status: Box::new(status),
        });
    }
    Ok(Fetched::Body(body, etag))
}

fn decode<T: serde::de::DeserializeOwned>(
    instance: &str,
    path: &str,
    body: &[u8],
) -> Result<T, RouterError> {
    serde_json::from_slice(body).map_err(|source| RouterError::Decode {
        target: format!("{instance}: discovery {path}"),
        source,
    })
}

/// What one discovery root (`/api` or `/apis`) answered.
#[derive(Clone, Debug)]
struct Root {
    /// The aggregated document's `ETag`, to revalidate it; `None` for a legacy answer.
    etag: Option<String>,
    parts: Vec<Part>,
}

/// Reads one root, revalidating `known` when it came from an aggregated document.
async fn read_root(
    client: &kube::Client,
    instance: &str,
    path: &str,
    known: Option<&Root>,
) -> Result<Root, RouterError> {
    let known_etag = known.and_then(|k| k.etag.as_deref());
    match fetch(client, instance, path, AGGREGATED_ACCEPT, known_etag).await? {
        Fetched::Unchanged => match known {
            Some(root) => Ok(root.clone()),
            // A 304 to a request without If-None-Match: ask plainly.
            None => Box::pin(read_root(client, instance, path, None)).await,
        },
        Fetched::Missing => Ok(Root {
            etag: None,
            parts: Vec::new(),
        }),
        Fetched::Body(body, etag) => {
            let doc: GroupDiscoveryList = decode(instance, path, &body)?;
            if doc.kind == "APIGroupDiscoveryList" {
                return Ok(Root {
                    etag,
                    parts: aggregated_parts(&doc),
                });
            }
            // A server without aggregated discovery answers the legacy document.
            let parts = if path == "/api" {
                legacy_parts(Some(&decode::<APIVersions>(instance, path, &body)?), None)
            } else {
                legacy_parts(None, Some(&decode::<APIGroupList>(instance, path, &body)?))
            };
            Ok(Root { etag: None, parts })
        }
    }
}

/// The resources of `parts`, reading the legacy ones (concurrently), and whether every one
/// could be read. A group version whose document cannot be read (an aggregated API that is
/// down) is left out, as `kubectl api-resources` leaves it out, so one broken APIService does
/// not hide the others.
async fn resolve(
    client: &kube::Client,
    instance: &str,
    parts: &[Part],
) -> (Vec<ApiResourceInfo>, bool) {
    let reads = parts.iter().map(|part| async move {
        match part {
            Part::Known(resources) => Some(resources.clone()),
            Part::Legacy {
                group,
                version,
                preferred,
            } => {
                let path = if group.is_empty() {
                    format!("/api/{version}")
                } else {
                    format!("/apis/{group}/{version}")
                };
                let read = fetch(client, instance, &path, "application/json", None).await;
                let list = match read {
                    Ok(Fetched::Body(body, _)) => decode::<APIResourceList>(instance, &path, &body),
                    Ok(_) => Ok(APIResourceList::default()),
                    Err(err) => Err(err),
                };
                match list {
                    Ok(list) => Some(legacy_resources(group, version, *preferred, &list)),
                    Err(err) => {
                        tracing::debug!(instance, path, error = %err, "a group version's discovery cannot be read; left out");
                        None
                    }
                }
            }
        }
    });
    let read = futures::future::join_all(reads).await;
    let complete = read.iter().all(Option::is_some);
    (read.into_iter().flatten().flatten().collect(), complete)
}

/// Every resource `client`'s server serves, read as [`ServedResources`] reads it (nothing
/// kept), and whether every group version could be read (`what` names the server in errors).
pub async fn read_all(client: &kube::Client, what: &str) -> (Vec<ApiResourceInfo>, bool) {
    let (core, apis) = futures::join!(
        read_root(client, what, "/api", None),
        read_root(client, what, "/apis", None)
    );
    let roots_read = core.is_ok() && apis.is_ok();
    let parts: Vec<Part> = core.into_iter().chain(apis).flat_map(|r| r.parts).collect();
    let (items, complete) = resolve(client, what, &parts).await;
    (items, roots_read && complete)
}

struct Entry {
    identity: InstanceIdentity,
    checked: Instant,
    core: Root,
    apis: Root,
    items: Arc<Vec<ApiResourceInfo>>,
}

/// The resources each instance serves, per instance identity (see the module's comment).
pub struct ServedResources {
    fresh_for: Duration,
    entries: Mutex<HashMap<String, Entry>>,
}

impl std::fmt::Debug for ServedResources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedResources")
            .field("fresh_for", &self.fresh_for)
            .finish_non_exhaustive()
    }
}

impl Default for ServedResources {
    fn default() -> Self {
        Self::new(FRESH_FOR)
    }
}

impl ServedResources {
    /// Answers kept for `fresh_for` before they are revalidated.
    pub fn new(fresh_for: Duration) -> Self {
        ServedResources {
            fresh_for,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The resources `instance` serves, connecting through `clients` (an instance that is gone
    /// answers [`RouterError::UnknownInstance`] and is forgotten).
    pub async fn list(
        &self,
        clients: &dyn InstanceClients,
        instance: &str,
    ) -> Result<Arc<Vec<ApiResourceInfo>>, RouterError> {
        let connection = match clients.connect(instance).await {
            Ok(c) => c,
            Err(err) => {
                if let RouterError::UnknownInstance { .. } = &err {
                    self.lock().remove(instance);
                }
                return Err(err);
            }
        };
        let known = {
            let mut entries = self.lock();
            // Nothing learnt from another Karmada of this name (or other credentials) is used.
            entries.retain(|name, e| clients.current(name).as_ref() == Some(&e.identity));
            match entries.get(instance) {
                Some(e) if e.identity != connection.identity => None,
                Some(e) if e.checked.elapsed() < self.fresh_for => return Ok(e.items.clone()),
                Some(e) => Some((e.core.clone(), e.apis.clone())),
                None => None,
            }
        };
        let client = &connection.client;
        let (core, apis) = futures::future::try_join(
            read_root(client, instance, "/api", known.as_ref().map(|k| &k.0)),
            read_root(client, instance, "/apis", known.as_ref().map(|k| &k.1)),
        )
        .await?;
        let parts: Vec<Part> = core.parts.iter().chain(&apis.parts).cloned().collect();
        let items = Arc::new(resolve(client, instance, &parts).await.0);
        self.lock().insert(
            instance.to_owned(),
            Entry {
                identity: connection.identity,
                checked: Instant::now(),
                core,
                apis,
                items: items.clone(),
            },
        );
        Ok(items)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aggregated_documents_list_resources_with_their_subresources_preferred_first() {
        // Shaped as kube-apiserver v1.36 answers `GET /apis` (apps, autoscaling) and a stale
        // aggregated group.
        let doc: GroupDiscoveryList = serde_json::from_value(json!({
            "kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {},
            "items": [
                {"metadata": {"name": "apps"}, "versions": [{"version": "v1", "freshness": "Current",
                    "resources": [{"resource": "deployments",
                        "responseKind": {"group": "", "version": "", "kind": "Deployment"},
                        "scope": "Namespaced", "singularResource": "deployment",
                        "verbs": ["get", "list"], "shortNames": ["deploy"], "categories": ["all"],
                        "subresources": [{"subresource": "scale", "responseKind": {"group": "autoscaling",
                            "version": "v1", "kind": "Scale"}, "verbs": ["get"]},
                            {"subresource": "status", "verbs": ["get"]}]}]}]},
                {"metadata": {"name": "autoscaling"}, "versions": [
                    {"version": "v2", "resources": [{"resource": "horizontalpodautoscalers",
                        "responseKind": {"kind": "HorizontalPodAutoscaler"}, "scope": "Namespaced",
                        "verbs": ["list"]}]},
                    {"version": "v1", "resources": [{"resource": "horizontalpodautoscalers",
                        "responseKind": {"kind": "HorizontalPodAutoscaler"}, "scope": "Namespaced",
                        "verbs": ["list"]}]}]},
                {"metadata": {"name": "metrics.k8s.io"}, "versions": [
                    {"version": "v1beta1", "freshness": "Stale", "resources": []}]}
            ]
        }))
        .unwrap();
        let parts = aggregated_parts(&doc);
        assert_eq!(parts.len(), 4);
        let Part::Known(apps) = &parts[0] else {
            panic!("{parts:?}")
        };
        assert_eq!(
            apps,
            &[ApiResourceInfo {
                group: "apps".into(),
                version: "v1".into(),
                preferred: true,
                resource: "deployments".into(),
                singular: "deployment".into(),
                kind: "Deployment".into(),
                namespaced: true,
                verbs: vec!["get".into(), "list".into()],
                short_names: vec!["deploy".into()],
                categories: vec!["all".into()],
                subresources: vec!["scale".into(), "status".into()],
            }]
        );
        let preferred: Vec<(String, bool)> = parts[1..3]
            .iter()
            .map(|p| match p {
                Part::Known(r) => (r[0].version.clone(), r[0].preferred),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            preferred,
            [("v2".to_owned(), true), ("v1".to_owned(), false)]
        );
        assert_eq!(
            parts[3],
            Part::Legacy {
                group: "metrics.k8s.io".into(),
                version: "v1beta1".into(),
                preferred: true
            }
        );
        // The core group has no name; the API spells it `core`.
        let core: GroupDiscoveryList = serde_json::from_value(json!({
            "kind": "APIGroupDiscoveryList",
            "items": [{"metadata": {}, "versions": [{"version": "v1", "resources": [
                {"resource": "nodes", "responseKind": {"kind": "Node"}, "scope": "Cluster",
                 "verbs": ["list"]}]}]}]
        }))
        .unwrap();
        let Part::Known(nodes) = &aggregated_parts(&core)[0] else {
            panic!()
        };
        assert_eq!(
            (nodes[0].group.as_str(), nodes[0].namespaced),
            ("core", false)
        );
    }

    #[test]
    fn legacy_documents_list_preferred_versions_first_and_subresources_under_parents() {
        let core: APIVersions = serde_json::from_value(json!({"versions": ["v1"],
            "serverAddressByClientCIDRs": []}))
        .unwrap();
        let groups: APIGroupList = serde_json::from_value(json!({"groups": [
            {"name": "autoscaling", "versions": [
                {"groupVersion": "autoscaling/v1", "version": "v1"},
                {"groupVersion": "autoscaling/v2", "version": "v2"}],
             "preferredVersion": {"groupVersion": "autoscaling/v2", "version": "v2"}}]}))
        .unwrap();
        let want = [
            ("", "v1", true),
            ("autoscaling", "v2", true),
            ("autoscaling", "v1", false),
        ];
        let got: Vec<(String, String, bool)> = legacy_parts(Some(&core), Some(&groups))
            .into_iter()
            .map(|p| match p {
                Part::Legacy {
                    group,
                    version,
                    preferred,
                } => (group, version, preferred),
                other => panic!("{other:?}"),
            })
            .collect();
        let want: Vec<(String, String, bool)> = want
            .iter()
            .map(|(g, v, p)| ((*g).to_owned(), (*v).to_owned(), *p))
            .collect();
        assert_eq!(got, want);
        let list: APIResourceList = serde_json::from_value(json!({
            "groupVersion": "v1",
            "resources": [
                {"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod",
                 "verbs": ["get", "list"], "shortNames": ["po"], "categories": ["all"]},
                {"name": "pods/log", "singularName": "", "namespaced": true, "kind": "Pod",
                 "verbs": ["get"]},
                {"name": "pods/exec", "singularName": "", "namespaced": true,
                 "kind": "PodExecOptions", "verbs": ["create", "get"]},
                {"name": "bindings", "singularName": "binding", "namespaced": true,
                 "kind": "Binding", "verbs": ["create"]}
            ]
        }))
        .unwrap();
        let resources = legacy_resources("", "v1", true, &list);
        let summary: Vec<(&str, &str, Vec<&str>)> = resources
            .iter()
            .map(|r| {
                (
                    r.group.as_str(),
                    r.resource.as_str(),
                    r.subresources.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("core", "pods", vec!["log", "exec"]),
                ("core", "bindings", vec![])
            ]
        );
        assert_eq!(resources[0].short_names, ["po"]);
    }

    /// A client of `cluster` whose discovery requests ask for plain JSON only: what a server
    /// without aggregated discovery answers to kubectl's `Accept`.
    fn legacy_only_client(cluster: &kube_sandbox::Cluster) -> kube::Client {
        let token =
            http::HeaderValue::from_str(&format!("Bearer {}", cluster.admin_token())).unwrap();
        let service = tower::ServiceBuilder::new()
            .map_request(move |mut req: http::Request<kube::client::Body>| {
                req.headers_mut()
                    .insert(http::header::AUTHORIZATION, token.clone());
                let aggregated = req
                    .headers()
                    .get(http::header::ACCEPT)
                    .and_then(|a| a.to_str().ok())
                    .is_some_and(|a| a.contains("apidiscovery.k8s.io"));
                if aggregated {
                    req.headers_mut().insert(
                        http::header::ACCEPT,
                        http::HeaderValue::from_static("application/json"),
                    );
                }
                req
            })
            .service(cluster.router());
        kube::Client::new(service, "default")
    }

    #[tokio::test]
    async fn the_legacy_documents_give_the_list_aggregated_discovery_gives() {
        let cluster = kube_sandbox::Cluster::new("served-resources");
        let clients = crate::router::StaticInstanceClients::new();
        clients.insert("aggregated", cluster.client());
        clients.insert("legacy", legacy_only_client(&cluster));
        // That client really gets the legacy documents.
        let probe = http::Request::get("/apis")
            .header(http::header::ACCEPT, AGGREGATED_ACCEPT)
            .body(Vec::new())
            .unwrap();
        let text = legacy_only_client(&cluster)
            .request_text(probe)
            .await
            .unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["kind"], "APIGroupList");
        let served = ServedResources::default();
        let aggregated = served.list(&clients, "aggregated").await.unwrap();
        let legacy = served.list(&clients, "legacy").await.unwrap();
        assert!(aggregated.len() > 50, "{}", aggregated.len());
        // The same resources, group versions in the same order; within one group version
        // the legacy document keeps the server's order, the aggregated one sorts by name.
        let sorted = |list: &[ApiResourceInfo]| {
            let mut list = list.to_vec();
            for r in &mut list {
                r.subresources.sort();
            }
            let mut order: Vec<(String, String)> = Vec::new();
            for r in &list {
                let gv = (r.group.clone(), r.version.clone());
                if order.last() != Some(&gv) {
                    order.push(gv);
                }
            }
            list.sort_by(|a, b| {
                (&a.group, &a.version, &a.resource).cmp(&(&b.group, &b.version, &b.resource))
            });
            (order, list)
        };
        assert_eq!(sorted(&legacy), sorted(&aggregated));
        let hpa: Vec<(&str, bool)> = aggregated
            .iter()
            .filter(|r| r.resource == "horizontalpodautoscalers")
            .map(|r| (r.version.as_str(), r.preferred))
            .collect();
        assert_eq!(hpa, [("v2", true), ("v1", false)]);
        // Fresh answers are kept; an unknown instance is refused.
        assert!(Arc::ptr_eq(
            &aggregated,
            &served.list(&clients, "aggregated").await.unwrap()
        ));
        let unknown = served.list(&clients, "nowhere").await.unwrap_err();
        assert!(
            matches!(unknown, RouterError::UnknownInstance { .. }),
            "{unknown}"
        );
    }
}
