//! `metrics.k8s.io/v1beta1` answered as metrics-server answers it through its APIService
//! (kubernetes-sigs/metrics-server `pkg/api/node.go`, `pkg/api/pod.go`, `pkg/api/filter.go`):
//!
//! - `nodes`: the Nodes matching the label selector (and a field selector on
//!   `metadata.name`), each with its usage once two scrapes are stored; `get` of a node
//!   that does not exist is the node lister's `node "x" not found`, of one without usage
//!   `nodemetrics.metrics.k8s.io "x" not found`;
//! - `pods`: the Running pods of the namespace (every namespace without one) matching the
//!   selectors (fields `metadata.name`, `metadata.namespace`), as metrics-server's pod
//!   informer holds only Running pods; `get` of another pod is `pods "x" not found`, of one
//!   without usage `podmetrics.metrics.k8s.io "ns/x" not found`.
//!
//! Lists are sorted by name (pods by namespace, then name) and carry no resourceVersion.

use serde_json::Value;

use super::Simulator;
use super::metrics_server::{list, node_metrics, pod_metrics, table};
use crate::apiserver::error::ApiError;
use crate::apiserver::resources::{GroupResource, METRICS_GROUP};
use crate::apiserver::store::Stored;
use crate::apiserver::table::IncludeObject;
use crate::sim::controllers::objects::at;
use crate::validation::selectors::{FieldSelector, LabelSelector};

/// One request to `metrics.k8s.io`.
pub struct MetricsRequest<'a> {
    /// `nodes` or `pods`.
    pub resource: &'a str,
    /// The namespace of the URL (pods), if any.
    pub namespace: Option<&'a str>,
    /// The object's name for a `get`.
    pub name: Option<&'a str>,
    /// `labelSelector` of a list.
    pub label_selector: &'a str,
    /// `fieldSelector` of a list.
    pub field_selector: &'a str,
    /// A Table was asked for, with this kind of row object.
    pub table: Option<IncludeObject>,
}

fn now_ns() -> i64 {
    i64::try_from(jiff::Timestamp::now().as_nanosecond()).unwrap_or(i64::MAX)
}

fn name_of(stored: &Stored) -> &str {
    at(&stored.value, &["metadata", "name"])
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn namespace_of(stored: &Stored) -> &str {
    at(&stored.value, &["metadata", "namespace"])
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn is_running(stored: &Stored) -> bool {
    at(&stored.value, &["status", "phase"]).and_then(Value::as_str) == Some("Running")
}

fn labels_of(stored: &Stored) -> Option<&Value> {
    at(&stored.value, &["metadata", "labels"])
}

/// The answer to a `get` or `list` of `metrics.k8s.io/v1beta1`.
pub fn answer(sim: &Simulator, request: &MetricsRequest<'_>) -> Result<Value, ApiError> {
    let state = &sim.state;
    let now = now_ns();
    let storage = sim.metrics_storage();
    let nodes_gr = GroupResource::new("", "nodes");
    let pods_gr = GroupResource::new("", "pods");
    let as_table = |items: Vec<Value>, list_kind: &str| match request.table {
        Some(include) => table(&items, include),
        None => list(list_kind, items),
    };
    let one = |object: Value| match request.table {
        Some(include) => table(&[object], include),
        None => object,
    };
    match (request.resource, request.name) {
        ("nodes", Some(name)) => {
            let node = state
                .store
                .get(&nodes_gr, "", name)
                .ok_or_else(|| ApiError::not_found("", "node", name))?;
            let usage = storage
                .node_usage(name)
                .ok_or_else(|| ApiError::not_found(METRICS_GROUP, "nodemetrics", name))?;
            Ok(one(node_metrics(name, labels_of(&node), &usage, now)))
        }
        ("nodes", None) => {
            let (labels, fields) = selectors(request)?;
            let nodes = state.store.list(&nodes_gr, None, None, 0, &|n| {
                labels.matches(n.labels())
                    && fields.matches(|f| (f == "metadata.name").then(|| name_of(n).to_owned()))
            });
            let items = nodes
                .items
                .iter()
                .filter_map(|node| {
                    let name = name_of(node);
                    let usage = storage.node_usage(name)?;
                    Some(node_metrics(name, labels_of(node), &usage, now))
                })
                .collect();
            Ok(as_table(items, "NodeMetricsList"))
        }
        ("pods", Some(name)) => {
            let namespace = request.namespace.unwrap_or_default();
            let pod = state
                .store
                .get(&pods_gr, namespace, name)
                .filter(|p| is_running(p))
                .ok_or_else(|| ApiError::not_found("", "pods", name))?;
            let usage = storage.pod_usage(namespace, name).ok_or_else(|| {
                ApiError::not_found(METRICS_GROUP, "podmetrics", &format!("{namespace}/{name}"))
            })?;
            Ok(one(pod_metrics(
                namespace,
                name,
                labels_of(&pod),
                &usage,
                now,
            )))
        }
        ("pods", None) => {
            let (labels, fields) = selectors(request)?;
            let pods = state
                .store
                .list(&pods_gr, request.namespace, None, 0, &|p| {
                    is_running(p)
                        && labels.matches(p.labels())
                        && fields.matches(|f| match f {
                            "metadata.name" => Some(name_of(p).to_owned()),
                            "metadata.namespace" => Some(namespace_of(p).to_owned()),
                            _ => None,
                        })
                });
            let mut items: Vec<(String, String, Value)> = pods
                .items
                .iter()
                .filter_map(|pod| {
                    let (namespace, name) = (namespace_of(pod), name_of(pod));
                    let usage = storage.pod_usage(namespace, name)?;
                    let object = pod_metrics(namespace, name, labels_of(pod), &usage, now);
                    Some((namespace.to_owned(), name.to_owned(), object))
                })
                .collect();
            items.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
            Ok(as_table(
                items.into_iter().map(|(_, _, o)| o).collect(),
                "PodMetricsList",
            ))
        }
        (other, _) => Err(ApiError::not_found(METRICS_GROUP, other, "")),
    }
}

/// The list's selectors; a malformed one is a 400, as the API server parses them first.
fn selectors(request: &MetricsRequest<'_>) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let labels = LabelSelector::parse(request.label_selector)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let fields = FieldSelector::parse(request.field_selector)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok((labels, fields))
}
