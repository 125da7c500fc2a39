//! Console pages of the instances feature: the instance list, an instance's overview and
//! deleting one (the new-instance forms are in [`forms`], the edit page in [`edit`], creating
//! objects in an instance from YAML in [`create`]).

pub mod create;
pub mod edit;
pub mod forms;
pub mod kubeconfig;
pub mod view;

use std::collections::BTreeSet;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::routing::get;
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use self::view::{InstanceRow, InstancesQuery, Overview};
use crate::access::{Caller, InstanceResource, Verb};
use crate::api::{
    ApiError, DeleteInstanceRequest, GetInstanceRequest, KairshipApi, ListClustersRequest,
    ListInstancesRequest, ListOptions, ListResourcesRequest, ListWorkloadsRequest, ResourceKind,
    SortBy, SortDir,
};
use crate::console::request::{
    Shared, SignedForm, SignedIn, allowed, error_answer, html, is_htmx, see_other, status_of,
};

/// Workloads per page of the overview.
pub const WORKLOADS_PAGE_SIZE: u32 = 50;

/// Deployments the overview reads to suggest namespaces (any namespace can be typed in).
pub const NAMESPACE_SAMPLE: u32 = 200;

/// The API's list options for the instance query: search and sort always; paging only when no
/// state filter is applied (the state is filtered here, so the console pages what remains).
pub(in crate::console) fn instance_list_options(query: &InstancesQuery) -> ListOptions {
    let filtered = !query.state.is_empty();
    ListOptions {
        page: (!filtered).then(|| query.page()),
        page_size: (!filtered).then(|| query.size()),
        sort_by: match query.sort.as_str() {
            "creationTimestamp" => Some(SortBy::CreationTimestamp),
            "state" => Some(SortBy::State),
            _ => None,
        },
        sort_dir: (query.dir == "desc").then_some(SortDir::Desc),
        name: (!query.q.is_empty()).then(|| query.q.clone()),
        ..ListOptions::default()
    }
}

/// Keeps the items in `state` and returns the page asked for, the total and the pages.
pub fn filter_state_and_page(
    items: Vec<Value>,
    state: &str,
    page: u32,
    size: u32,
) -> (Vec<Value>, u64, u32) {
    let matching: Vec<Value> = items
        .into_iter()
        .filter(|o| {
            o.pointer("/status/state")
                .and_then(Value::as_str)
                .unwrap_or("UNKNOWN")
                == state
        })
        .collect();
    let total = matching.len() as u64;
    let pages = total.div_ceil(u64::from(size.max(1))) as u32;
    let start = (page.max(1) as usize - 1).saturating_mul(size as usize);
    let page_items = matching
        .into_iter()
        .skip(start)
        .take(size as usize)
        .collect();
    (page_items, total, pages)
}

pub(in crate::console) async fn instances(
    State(console): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<InstancesQuery>,
    signed: SignedIn,
) -> Response {
    let list = match console
        .api
        .list_instances(
            &signed.caller,
            ListInstancesRequest {
                options: instance_list_options(&query),
            },
        )
        .await
    {
        Ok(l) => l,
        Err(err) => {
            return html(
                status_of(&err),
                crate::console::page::error_page(Some(&signed.viewer()), "Instances", &err),
            );
        }
    };
    let (items, total, pages) = if query.state.is_empty() {
        (list.items, list.pagination.total, list.pagination.pages)
    } else {
        filter_state_and_page(list.items, &query.state, query.page(), query.size())
    };
    let rows = futures::future::join_all(items.iter().map(|o| {
        let name = o
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let console = &console;
        let caller = &signed.caller;
        async move {
            let can_delete = allowed(
                console,
                caller,
                Verb::Delete,
                InstanceResource::Instances,
                name,
            )
            .await;
            InstanceRow::from_object(o, can_delete)
        }
    }))
    .await;
    let can_create = console
        .authorizer
        .allowed(
            &signed.caller,
            Verb::Create,
            InstanceResource::Instances,
            None,
        )
        .await
        .unwrap_or(false);
    html(
        StatusCode::OK,
        view::instances_page(
            &signed.viewer(),
            &query,
            &rows,
            total,
            pages,
            can_create,
            is_htmx(&headers),
        ),
    )
}

/// The overview's query: the namespace of the workloads shown and their page.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct OverviewQuery {
    /// Namespace.
    pub ns: Option<String>,
    /// 1-based page of workloads.
    pub page: Option<u32>,
}

/// Everything the overview of `instance` shows, from the API as `caller`.
pub async fn load_overview(
    api: &dyn KairshipApi,
    caller: &Caller,
    instance: &str,
    query: &OverviewQuery,
) -> Result<Overview, ApiError> {
    let object = api
        .get_instance(
            caller,
            GetInstanceRequest {
                instance: instance.to_owned(),
            },
        )
        .await?;
    let list = |kind| ListResourcesRequest {
        instance: instance.to_owned(),
        kind,
        namespace: None,
        options: ListOptions::default(),
    };
    let (clusters, deployments, pp, cpp, op, cop) = futures::try_join!(
        api.list_clusters(
            caller,
            ListClustersRequest {
                instance: instance.to_owned(),
                options: ListOptions::default(),
            }
        ),
        // Only to suggest namespaces: a bounded sample, not every Deployment.
        api.list_resources(
            caller,
            ListResourcesRequest {
                options: ListOptions {
                    page_size: Some(NAMESPACE_SAMPLE),
                    ..ListOptions::default()
                },
                ..list(ResourceKind::Deployments)
            }
        ),
        api.list_resources(caller, list(ResourceKind::Propagationpolicies)),
        api.list_resources(caller, list(ResourceKind::Clusterpropagationpolicies)),
        api.list_resources(caller, list(ResourceKind::Overridepolicies)),
        api.list_resources(caller, list(ResourceKind::Clusteroverridepolicies)),
    )?;
    let namespaces: Vec<String> = deployments
        .items
        .iter()
        .chain(&pp.items)
        .chain(&op.items)
        .filter_map(|d| d.pointer("/metadata/namespace").and_then(Value::as_str))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let namespace = query
        .ns
        .clone()
        .filter(|n| !n.is_empty())
        .or_else(|| namespaces.first().cloned())
        .unwrap_or_else(|| "default".to_owned());
    let page = query.page.unwrap_or(1).max(1);
    let workloads = api
        .list_workloads(
            caller,
            ListWorkloadsRequest {
                instance: instance.to_owned(),
                namespace: namespace.clone(),
                options: ListOptions {
                    page: Some(page),
                    page_size: Some(WORKLOADS_PAGE_SIZE),
                    ..ListOptions::default()
                },
            },
        )
        .await?;
    let mut namespaces = namespaces;
    if !namespaces.contains(&namespace) {
        namespaces.push(namespace.clone());
    }
    Ok(Overview {
        instance: object,
        clusters: clusters.items,
        namespaces,
        namespace,
        workloads_total: workloads.pagination.total,
        workloads_page: (page, workloads.pagination.pages),
        workloads: workloads.items,
        propagation: pp.items.into_iter().chain(cpp.items).collect(),
        overrides: op.items.into_iter().chain(cop.items).collect(),
        can_write: false,
        can_update: false,
        can_delete: false,
        recent_events: Some(
            crate::console::workloads::load_events(api, caller, instance, None, None).await,
        ),
    })
}

pub(in crate::console) async fn overview(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(instance): Path<String>,
    Query(query): Query<OverviewQuery>,
    signed: SignedIn,
) -> Response {
    match load_overview(console.api.as_ref(), &signed.caller, &instance, &query).await {
        Ok(mut o) => {
            let may = |verb, resource| allowed(&console, &signed.caller, verb, resource, &instance);
            (o.can_write, o.can_update, o.can_delete) = futures::join!(
                may(Verb::Create, InstanceResource::Proxy),
                may(Verb::Update, InstanceResource::Instances),
                may(Verb::Delete, InstanceResource::Instances),
            );
            html(
                StatusCode::OK,
                view::overview_page(&signed.viewer(), &instance, &o, is_htmx(&headers)),
            )
        }
        Err(err) => error_answer(&signed, &instance, &err),
    }
}

pub(in crate::console) async fn delete_confirm(
    Path(instance): Path<String>,
    signed: SignedIn,
) -> Response {
    html(
        StatusCode::OK,
        view::delete_instance_page(&signed.viewer(), &instance, None),
    )
}

pub(in crate::console) async fn delete_instance(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(instance): Path<String>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    match console
        .api
        .delete_instance(
            &signed.caller,
            DeleteInstanceRequest {
                instance: instance.clone(),
                force: fields.get("force").is_some_and(|v| v == "true"),
            },
        )
        .await
    {
        Ok(_) => see_other(&headers, "/ui/instances"),
        Err(err) => html(
            status_of(&err),
            view::delete_instance_page(&signed.viewer(), &instance, Some(&err)),
        ),
    }
}

/// The instance list, an instance's overview, its deletion and creating resources in it.
pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/ui/instances", get(instances))
        .route("/ui/instances/{instance}", get(overview))
        .route(
            "/ui/instances/{instance}/edit",
            get(edit::edit_form).post(edit::edit),
        )
        .route(
            "/ui/instances/{instance}/delete",
            get(delete_confirm).post(delete_instance),
        )
        .merge(create::routes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn state_filter_pages_what_remains() {
        let items: Vec<Value> = (0..5)
            .map(|i| {
                json!({"metadata": {"name": format!("i{i}")},
                       "status": {"state": if i % 2 == 0 { "RUNNING" } else { "UNAVAILABLE" }}})
            })
            .chain([json!({"metadata": {"name": "none"}})])
            .collect();
        let (page, total, pages) = filter_state_and_page(items.clone(), "RUNNING", 2, 2);
        assert_eq!((total, pages), (3, 2));
        assert_eq!(page.len(), 1);
        assert_eq!(page[0]["metadata"]["name"], "i4");
        let (page, total, _) = filter_state_and_page(items, "UNKNOWN", 1, 20);
        assert_eq!((page.len(), total), (1, 1));
    }

    #[test]
    fn list_options_follow_the_query() {
        let q = InstancesQuery {
            q: "kar".into(),
            sort: "state".into(),
            dir: "desc".into(),
            page: Some(2),
            ..Default::default()
        };
        let o = instance_list_options(&q);
        assert_eq!(o.name.as_deref(), Some("kar"));
        assert_eq!(o.sort_by, Some(SortBy::State));
        assert_eq!(o.sort_dir, Some(SortDir::Desc));
        assert_eq!((o.page, o.page_size), (Some(2), Some(20)));
        let filtered = instance_list_options(&InstancesQuery {
            state: "RUNNING".into(),
            ..Default::default()
        });
        assert_eq!((filtered.page, filtered.page_size), (None, None));
    }
}
