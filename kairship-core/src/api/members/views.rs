//! Member-cluster views: what the members of an instance hold, read through Karmada's
//! aggregated cluster proxy (`/apis/cluster.karmada.io/v1alpha1/clusters/{name}/proxy/...`),
//! after the caller is authorized to read inside the instance as for any other read. Each
//! read goes out with the instance's credentials and the caller's `Impersonate-User` and
//! `Impersonate-Group`: Karmada authorizes the caller for
//! `clusters/proxy` and its proxy impersonates the caller in the member, so the member's own
//! RBAC decides and its audit log names the caller. Lists take the same options as every
//! other list; the selection, sorting and paging run here over what the members answered.

use std::sync::Arc;

use kube::api::{GetParams, ListParams};
use kube::core::DynamicObject;
use serde_json::Value;

use crate::access::{Caller, InstanceResource, Verb, impersonation_headers};
use crate::api::body::check_name;
use crate::api::error::ApiError;
use crate::api::inside::{Gvr, check_gvr};
use crate::api::kairship::{KairshipService, gvr, object_list, to_object};
use crate::api::kinds::resource_bindings_resource;
use crate::api::list::to_list_query;
use crate::api::{
    CLUSTER_ANNOTATION, GetMemberObjectRequest, ListMemberNodesRequest, ListMemberObjectsRequest,
    ListWorkloadPodsRequest, WorkloadKind,
};
use crate::api::{CORE_GROUP, ListOptions, Object, ObjectList};
use crate::router::{CompiledQuery, ResourceTarget};

/// Path of Karmada's cluster proxy for member `cluster`.
pub fn cluster_proxy_path(cluster: &str) -> String {
    format!("/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}/proxy")
}

/// The collection path of `gvr` (group `core` for the core group) in `namespace`.
pub(in crate::api) fn collection_path(gvr: Gvr<'_>, namespace: Option<&str>) -> String {
    let mut path = if gvr.group == CORE_GROUP || gvr.group.is_empty() {
        format!("/api/{}", gvr.version)
    } else {
        format!("/apis/{}/{}", gvr.group, gvr.version)
    };
    if let Some(ns) = namespace {
        path.push_str("/namespaces/");
        path.push_str(ns);
    }
    path.push('/');
    path.push_str(gvr.resource);
    path
}

/// A label selector (`a=b,c in (d,e)`) of a workload's `spec.selector`; `None` when the
/// workload has none.
pub fn selector_text(selector: &Value) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(labels) = selector["matchLabels"].as_object() {
        for (key, value) in labels {
            parts.push(format!("{key}={}", value.as_str().unwrap_or_default()));
        }
    }
    for expression in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = expression["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = expression["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match expression["operator"].as_str().unwrap_or_default() {
            "In" => parts.push(format!("{key} in ({})", values.join(","))),
            "NotIn" => parts.push(format!("{key} notin ({})", values.join(","))),
            "Exists" => parts.push(key.to_owned()),
            "DoesNotExist" => parts.push(format!("!{key}")),
            _ => {}
        }
    }
    (!parts.is_empty()).then(|| parts.join(","))
}

/// The label selector of the pods of `workload` (a Job's pods carry `job-name`).
pub fn pod_selector(kind: WorkloadKind, name: &str, workload: &Value) -> Option<String> {
    match kind {
        WorkloadKind::Jobs => Some(format!("job-name={name}")),
        WorkloadKind::Cronjobs => None,
        _ => selector_text(&workload["spec"]["selector"]),
    }
}

/// The member clusters a ResourceBinding schedules to.
pub fn binding_clusters(binding: &Value) -> Vec<String> {
    binding["spec"]["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect()
}

/// The items of a member's list answer as objects marked with the member's name.
fn marked_items(
    list: Value,
    cluster: &str,
    api_version: &str,
    kind: &str,
) -> Vec<Arc<DynamicObject>> {
    let Value::Array(items) = list["items"].clone() else {
        return Vec::new();
    };
    items
        .into_iter()
        .filter_map(|mut item| {
            if item.get("apiVersion").is_none() {
                item["apiVersion"] = Value::String(api_version.to_owned());
            }
            if item.get("kind").is_none() {
                item["kind"] = Value::String(kind.to_owned());
            }
            let annotations = &mut item["metadata"]["annotations"];
            if !annotations.is_object() {
                *annotations = Value::Object(Default::default());
            }
            annotations[CLUSTER_ANNOTATION] = Value::String(cluster.to_owned());
            serde_json::from_value::<DynamicObject>(item)
                .ok()
                .map(Arc::new)
        })
        .collect()
}

/// The kind of a list answer's items (`PodList` -> `Pod`).
fn item_kind(list: &Value) -> String {
    list["kind"]
        .as_str()
        .and_then(|k| k.strip_suffix("List"))
        .unwrap_or_default()
        .to_owned()
}

impl KairshipService {
    /// One GET through the cluster proxy of `cluster` in `instance`, made as `caller`.
    pub(in crate::api) async fn member_request(
        &self,
        caller: &Caller,
        instance: &str,
        cluster: &str,
        request: Result<http::Request<Vec<u8>>, kube::core::request::Error>,
        what: &str,
    ) -> Result<Value, ApiError> {
        let mut request = request.map_err(|e| ApiError::invalid(format!("{what}: {e}")))?;
        // Name and groups only: Karmada's proxy forwards no uid to the member, so asking the
        // instance to impersonate one would only need a right (`uids`) for nothing.
        let caller = Caller {
            uid: None,
            ..caller.clone()
        };
        request.headers_mut().extend(impersonation_headers(&caller));
        let Some(discovery) = &self.discovery else {
            return Err(ApiError::unavailable(
                "member clusters cannot be reached: this server has no instance clients",
            ));
        };
        let client = discovery.clients.client(instance).await?;
        match client.request::<Value>(request).await {
            Ok(value) => Ok(value),
            Err(kube::Error::Api(status)) => Err(ApiError::from_kube_status(
                &status,
                &format!("{what} (member cluster {cluster} of instance {instance})"),
            )),
            Err(other) => Err(ApiError::unavailable(format!(
                "{what}: member cluster {cluster} of instance {instance} did not answer: {}",
                kube_kit::client::describe_kube_error(&other)
            ))),
        }
    }

    /// Lists `gvr` in member `cluster` as `caller` (`selector`: a label selector sent to the
    /// member).
    async fn member_list(
        &self,
        caller: &Caller,
        instance: &str,
        cluster: &str,
        gvr: Gvr<'_>,
        namespace: Option<&str>,
        selector: Option<&str>,
    ) -> Result<Vec<Arc<DynamicObject>>, ApiError> {
        let path = format!(
            "{}{}",
            cluster_proxy_path(cluster),
            collection_path(gvr, namespace)
        );
        let mut params = ListParams::default();
        if let Some(selector) = selector {
            params = params.labels(selector);
        }
        let request = kube::core::Request::new(path).list(&params);
        let what = format!("list {}", gvr.resource);
        let list = self
            .member_request(caller, instance, cluster, request, &what)
            .await?;
        let api_version = list["apiVersion"].as_str().unwrap_or_default().to_owned();
        let kind = item_kind(&list);
        Ok(marked_items(list, cluster, &api_version, &kind))
    }

    /// Checks the names and the options of a member read, then authorizes it.
    async fn authorize_member_read(
        &self,
        caller: &Caller,
        instance: &str,
        names: &[(&str, &str)],
        options: Option<&ListOptions>,
        what: &str,
    ) -> Result<Option<CompiledQuery>, ApiError> {
        check_name("instance", instance)?;
        for (field, name) in names {
            check_name(field, name)?;
        }
        let query = match options {
            Some(options) => Some(to_list_query(options)?.compile()?),
            None => None,
        };
        let verb = if options.is_some() {
            Verb::List
        } else {
            Verb::Get
        };
        self.authorize(caller, verb, InstanceResource::Proxy, Some(instance), what)
            .await?;
        Ok(query)
    }

    /// [`KairshipApi::list_workload_pods`](crate::api::KairshipApi::list_workload_pods).
    pub(in crate::api) async fn workload_pods(
        &self,
        caller: &Caller,
        req: ListWorkloadPodsRequest,
    ) -> Result<ObjectList, ApiError> {
        let query = self
            .authorize_member_read(
                caller,
                &req.instance,
                &[("namespace", &req.namespace), ("name", &req.name)],
                Some(&req.options),
                &format!("list the pods of {} {}", req.kind.kind(), req.name),
            )
            .await?
            .ok_or_else(|| ApiError::internal("a list without a query"))?;
        if !req
            .options
            .namespaces
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            return Err(ApiError::invalid_field(
                "namespaces",
                "the pods of a workload are in its namespace",
            ));
        }
        let workload_gvr = gvr(req.kind.group(), "v1", req.kind.plural());
        let resource = kube::core::ApiResource {
            group: req.kind.group().to_owned(),
            version: "v1".to_owned(),
            api_version: req.kind.api_version().to_owned(),
            kind: req.kind.kind().to_owned(),
            plural: workload_gvr.resource.to_owned(),
        };
        let target = ResourceTarget::namespaced(&req.instance, resource, &req.namespace);
        let workload = self.router.get(&target, &req.name).await?;
        let workload = to_object(workload.as_ref(), "the workload")?;
        let Some(selector) = pod_selector(req.kind, &req.name, &workload) else {
            return Err(ApiError::invalid_field(
                "kind",
                format!(
                    "{} have no pods of their own: list the pods of their Jobs",
                    req.kind
                ),
            ));
        };
        let bindings =
            ResourceTarget::namespaced(&req.instance, resource_bindings_resource(), &req.namespace);
        let clusters = match self
            .router
            .get(&bindings, &req.kind.binding_name(&req.name))
            .await
        {
            Ok(binding) => binding_clusters(&to_object(binding.as_ref(), "the binding")?),
            Err(err) if err.is_not_found() => Vec::new(),
            Err(err) => return Err(err.into()),
        };
        let pods = gvr(CORE_GROUP, "v1", "pods");
        let lists = futures::future::join_all(clusters.iter().map(|cluster| {
            self.member_list(
                caller,
                &req.instance,
                cluster,
                pods,
                Some(&req.namespace),
                Some(&selector),
            )
        }))
        .await;
        let mut items = Vec::new();
        for list in lists {
            items.extend(list?);
        }
        object_list(query.select(None, items))
    }

    /// [`KairshipApi::list_member_nodes`](crate::api::KairshipApi::list_member_nodes).
    pub(in crate::api) async fn member_nodes(
        &self,
        caller: &Caller,
        req: ListMemberNodesRequest,
    ) -> Result<ObjectList, ApiError> {
        let query = self
            .authorize_member_read(
                caller,
                &req.instance,
                &[("cluster", &req.cluster)],
                Some(&req.options),
                &format!("list the nodes of member cluster {}", req.cluster),
            )
            .await?
            .ok_or_else(|| ApiError::internal("a list without a query"))?;
        let items = self
            .member_list(
                caller,
                &req.instance,
                &req.cluster,
                gvr(CORE_GROUP, "v1", "nodes"),
                None,
                None,
            )
            .await?;
        object_list(query.select(None, items))
    }

    /// [`KairshipApi::list_member_objects`](crate::api::KairshipApi::list_member_objects).
    pub(in crate::api) async fn member_objects(
        &self,
        caller: &Caller,
        req: ListMemberObjectsRequest,
    ) -> Result<ObjectList, ApiError> {
        let target = gvr(&req.group, &req.version, &req.resource);
        check_gvr(target)?;
        let mut names = vec![("cluster", req.cluster.as_str())];
        if let Some(ns) = &req.namespace {
            names.push(("namespace", ns));
        }
        let query = self
            .authorize_member_read(
                caller,
                &req.instance,
                &names,
                Some(&req.options),
                &format!("list {} of member cluster {}", req.resource, req.cluster),
            )
            .await?
            .ok_or_else(|| ApiError::internal("a list without a query"))?;
        let items = self
            .member_list(
                caller,
                &req.instance,
                &req.cluster,
                target,
                req.namespace.as_deref(),
                None,
            )
            .await?;
        object_list(query.select(None, items))
    }

    /// [`KairshipApi::get_member_object`](crate::api::KairshipApi::get_member_object).
    pub(in crate::api) async fn member_object(
        &self,
        caller: &Caller,
        req: GetMemberObjectRequest,
    ) -> Result<Object, ApiError> {
        let target = gvr(&req.group, &req.version, &req.resource);
        check_gvr(target)?;
        let mut names = vec![("cluster", req.cluster.as_str()), ("name", &req.name)];
        if let Some(ns) = &req.namespace {
            names.push(("namespace", ns));
        }
        self.authorize_member_read(
            caller,
            &req.instance,
            &names,
            None,
            &format!("read {} of member cluster {}", req.resource, req.cluster),
        )
        .await?;
        let mut object = self
            .member_get(
                caller,
                &req.instance,
                &req.cluster,
                target,
                req.namespace.as_deref(),
                &req.name,
            )
            .await?;
        let annotations = &mut object["metadata"]["annotations"];
        if !annotations.is_object() {
            *annotations = Value::Object(Default::default());
        }
        annotations[CLUSTER_ANNOTATION] = Value::String(req.cluster.clone());
        Ok(object)
    }

    /// One object of member `cluster`, as the member holds it, read as `caller`.
    pub(in crate::api) async fn member_get(
        &self,
        caller: &Caller,
        instance: &str,
        cluster: &str,
        gvr: Gvr<'_>,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, ApiError> {
        let path = format!(
            "{}{}",
            cluster_proxy_path(cluster),
            collection_path(gvr, namespace)
        );
        let request = kube::core::Request::new(path).get(name, &GetParams::default());
        self.member_request(
            caller,
            instance,
            cluster,
            request,
            &format!("read {} {name}", gvr.resource),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_are_written_as_kubernetes_reads_them() {
        let cases = [
            (json!({"matchLabels": {"app": "web"}}), Some("app=web")),
            (
                json!({"matchLabels": {"app": "web"}, "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["a", "b"]},
                    {"key": "canary", "operator": "DoesNotExist"},
                    {"key": "zone", "operator": "NotIn", "values": ["x"]},
                    {"key": "team", "operator": "Exists"}
                ]}),
                Some("app=web,tier in (a,b),!canary,zone notin (x),team"),
            ),
            (json!({}), None),
        ];
        for (selector, want) in cases {
            assert_eq!(selector_text(&selector).as_deref(), want, "{selector}");
        }
        assert_eq!(
            pod_selector(WorkloadKind::Jobs, "pi", &json!({})).as_deref(),
            Some("job-name=pi")
        );
        assert_eq!(pod_selector(WorkloadKind::Cronjobs, "c", &json!({})), None);
    }

    #[test]
    fn paths_reach_the_member_through_the_cluster_proxy() {
        assert_eq!(
            format!(
                "{}{}",
                cluster_proxy_path("m1"),
                collection_path(gvr("core", "v1", "pods"), Some("demo"))
            ),
            "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/namespaces/demo/pods"
        );
        assert_eq!(
            collection_path(gvr("apps", "v1", "deployments"), None),
            "/apis/apps/v1/deployments"
        );
    }

    #[test]
    fn listed_items_carry_their_cluster_and_kind() {
        let list = json!({"apiVersion": "v1", "kind": "PodList", "items": [
            {"metadata": {"name": "p1", "namespace": "demo"}},
            {"metadata": {"name": "p2", "namespace": "demo", "annotations": {"a": "b"}}}
        ]});
        let kind = item_kind(&list);
        let items = marked_items(list, "east", "v1", &kind);
        assert_eq!(items.len(), 2);
        for item in &items {
            let annotations = item.metadata.annotations.as_ref().unwrap();
            assert_eq!(annotations[CLUSTER_ANNOTATION], "east");
            assert_eq!(item.types.as_ref().unwrap().kind, "Pod");
        }
        assert_eq!(
            binding_clusters(
                &json!({"spec": {"clusters": [{"name": "a"}, {"name": "b", "replicas": 1}]}})
            ),
            ["a", "b"]
        );
    }
}
