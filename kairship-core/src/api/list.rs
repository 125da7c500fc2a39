//! List options: validation, translation to the router's [`ListQuery`], and the selection of
//! instances (which, unlike objects inside an instance, can also be sorted by state).

use std::sync::Arc;

use kube::core::DynamicObject;

use super::error::ApiError;
use super::types::{ListOptions, Pagination, SortBy, SortDir};
use crate::router::{self, ListQuery, page_bounds};

/// The router query of `options`, validated (selectors parse, `page >= 1`,
/// `1 <= pageSize <= MAX`); without `pageSize`, pages of [`router::MAX_PAGE_SIZE`].
/// `sortBy=state` is refused: only instances have a state.
pub fn to_list_query(options: &ListOptions) -> Result<ListQuery, ApiError> {
    let sort_by = match options.sort_by.unwrap_or_default() {
        SortBy::Name => router::SortBy::Name,
        SortBy::CreationTimestamp => router::SortBy::CreationTimestamp,
        SortBy::Namespace => router::SortBy::Namespace,
        SortBy::State => {
            return Err(ApiError::invalid_field(
                "sortBy",
                "state is only known for instances; use name or creationTimestamp",
            ));
        }
    };
    let query = ListQuery {
        label_selector: options.label_selector.clone(),
        field_selector: options.field_selector.clone(),
        name: options.name.clone(),
        namespaces: namespaces(options.namespaces.as_deref())?,
        sort_by,
        sort_field: options.sort_field.clone(),
        sort_dir: match options.sort_dir.unwrap_or_default() {
            SortDir::Asc => router::SortDir::Asc,
            SortDir::Desc => router::SortDir::Desc,
        },
        page: options.page,
        // The size applied is always the size reported: without `pageSize`, the maximum.
        page_size: Some(options.page_size.unwrap_or(router::MAX_PAGE_SIZE)),
    };
    query.compile()?;
    Ok(query)
}

/// The namespaces of a `namespaces` option (`a,b`), each a valid name.
fn namespaces(option: Option<&str>) -> Result<Vec<String>, ApiError> {
    let Some(list) = option else {
        return Ok(Vec::new());
    };
    let names: Vec<String> = list.split(',').map(|n| n.trim().to_owned()).collect();
    for name in &names {
        super::body::check_name("namespaces", name)?;
    }
    Ok(names)
}

/// The API form of the router's paging facts.
pub fn pagination(p: router::Pagination) -> Pagination {
    Pagination {
        total: u64::try_from(p.total).unwrap_or(u64::MAX),
        page: p.page,
        page_size: p.page_size,
        pages: p.pages,
    }
}

/// `status.state` of an Instance object (`UNKNOWN` when absent).
pub fn instance_state(object: &DynamicObject) -> &str {
    object
        .data
        .pointer("/status/state")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("UNKNOWN")
}

/// Filters, sorts and pages Instance objects as `options` ask (sorting by name, creation time
/// or state — alphabetically, ties by name).
pub fn select_instances(
    objects: Vec<Arc<DynamicObject>>,
    options: &ListOptions,
) -> Result<(Vec<Arc<DynamicObject>>, Pagination), ApiError> {
    if options.namespaces.is_some() {
        return Err(ApiError::invalid_field(
            "namespaces",
            "instances are not in namespaces",
        ));
    }
    if options.sort_field.is_some() {
        return Err(ApiError::invalid_field(
            "sortField",
            "instances are sorted by name, creationTimestamp or state",
        ));
    }
    if options.sort_by == Some(SortBy::Namespace) {
        return Err(ApiError::invalid_field(
            "sortBy",
            "instances are not in namespaces; use name, creationTimestamp or state",
        ));
    }
    let by_state = options.sort_by == Some(SortBy::State);
    let mut filter_options = options.clone();
    if by_state {
        filter_options.sort_by = Some(SortBy::Name);
    }
    let mut query = to_list_query(&filter_options)?;
    let (page, page_size) = (query.page.unwrap_or(1), query.page_size);
    // Filter and sort everything first; page after the state sort below.
    query.page = None;
    query.page_size = None;
    let compiled = query.compile()?;
    let mut matched = compiled.select(None, objects).items;
    if by_state {
        let desc = options.sort_dir == Some(SortDir::Desc);
        matched.sort_by(|a, b| {
            let ord = instance_state(a)
                .cmp(instance_state(b))
                .then_with(|| a.metadata.name.cmp(&b.metadata.name));
            if desc { ord.reverse() } else { ord }
        });
    }
    let total = matched.len();
    let (start, end, size, pages) = page_bounds(total, page, page_size);
    let items = if start < end {
        matched.drain(start..end).collect()
    } else {
        Vec::new()
    };
    Ok((
        items,
        Pagination {
            total: u64::try_from(total).unwrap_or(u64::MAX),
            page,
            page_size: size,
            pages,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Code;
    use serde_json::json;

    fn instance(
        name: &str,
        state: Option<&str>,
        created: &str,
        labels: serde_json::Value,
    ) -> Arc<DynamicObject> {
        let mut value = json!({
            "apiVersion": "kairship.io/v1alpha1", "kind": "Instance",
            "metadata": {"name": name, "creationTimestamp": created, "labels": labels},
            "spec": {"mode": "Adopt"},
        });
        if let Some(state) = state {
            value["status"] = json!({"state": state});
        }
        Arc::new(serde_json::from_value(value).unwrap())
    }

    fn fixture() -> Vec<Arc<DynamicObject>> {
        vec![
            instance(
                "prod-b",
                Some("RUNNING"),
                "2024-01-02T00:00:00Z",
                json!({"env": "prod"}),
            ),
            instance(
                "prod-a",
                Some("UNAVAILABLE"),
                "2024-01-03T00:00:00Z",
                json!({"env": "prod"}),
            ),
            instance("dev", None, "2024-01-01T00:00:00Z", json!({"env": "dev"})),
            instance("stage", Some("RUNNING"), "2024-01-04T00:00:00Z", json!({})),
        ]
    }

    fn names(items: &[Arc<DynamicObject>]) -> Vec<&str> {
        items
            .iter()
            .map(|o| o.metadata.name.as_deref().unwrap())
            .collect()
    }

    #[test]
    fn select_instances_table() {
        let opts = |f: &dyn Fn(&mut ListOptions)| {
            let mut o = ListOptions::default();
            f(&mut o);
            o
        };
        let cases: Vec<(ListOptions, Vec<&str>, u64, u32)> = vec![
            (
                opts(&|_| {}),
                vec!["dev", "prod-a", "prod-b", "stage"],
                4,
                1,
            ),
            (
                opts(&|o| o.sort_by = Some(SortBy::State)),
                vec!["prod-b", "stage", "prod-a", "dev"],
                4,
                1,
            ),
            (
                opts(&|o| {
                    o.sort_by = Some(SortBy::State);
                    o.sort_dir = Some(SortDir::Desc);
                }),
                vec!["dev", "prod-a", "stage", "prod-b"],
                4,
                1,
            ),
            (
                opts(&|o| o.sort_by = Some(SortBy::CreationTimestamp)),
                vec!["dev", "prod-b", "prod-a", "stage"],
                4,
                1,
            ),
            (
                opts(&|o| o.name = Some("PROD".into())),
                vec!["prod-a", "prod-b"],
                2,
                1,
            ),
            (
                opts(&|o| o.label_selector = Some("env=prod".into())),
                vec!["prod-a", "prod-b"],
                2,
                1,
            ),
            (
                opts(&|o| {
                    o.sort_by = Some(SortBy::State);
                    o.page_size = Some(3);
                    o.page = Some(2);
                }),
                vec!["dev"],
                4,
                2,
            ),
            (
                opts(&|o| {
                    o.page_size = Some(2);
                    o.page = Some(5);
                }),
                vec![],
                4,
                2,
            ),
        ];
        for (options, want, total, pages) in cases {
            let (items, pagination) = select_instances(fixture(), &options).unwrap();
            assert_eq!(names(&items), want, "{options:?}");
            assert_eq!(pagination.total, total, "{options:?}");
            assert_eq!(pagination.pages, pages, "{options:?}");
        }
    }

    #[test]
    fn page_size_is_the_size_applied() {
        // (pageSize asked, pageSize reported, pages) over the 4 instances of the fixture.
        for (asked, reported, pages) in [
            (None, router::MAX_PAGE_SIZE, 1),
            (Some(3), 3, 2),
            (Some(10), 10, 1),
        ] {
            let options = ListOptions {
                page_size: asked,
                ..ListOptions::default()
            };
            assert_eq!(
                to_list_query(&options).unwrap().page_size,
                Some(reported),
                "{asked:?}"
            );
            let (_, pagination) = select_instances(fixture(), &options).unwrap();
            assert_eq!(
                (pagination.page_size, pagination.pages, pagination.total),
                (reported, pages, 4),
                "{asked:?}"
            );
        }
    }

    #[test]
    fn bad_options_are_invalid_arguments_naming_the_parameter() {
        let cases = [
            (
                ListOptions {
                    page: Some(0),
                    ..ListOptions::default()
                },
                "page",
            ),
            (
                ListOptions {
                    page_size: Some(0),
                    ..ListOptions::default()
                },
                "pageSize",
            ),
            (
                ListOptions {
                    page_size: Some(router::MAX_PAGE_SIZE + 1),
                    ..ListOptions::default()
                },
                "pageSize",
            ),
            (
                ListOptions {
                    label_selector: Some("a in (".into()),
                    ..ListOptions::default()
                },
                "labelSelector",
            ),
            (
                ListOptions {
                    sort_by: Some(SortBy::State),
                    ..ListOptions::default()
                },
                "sortBy",
            ),
        ];
        for (options, field) in cases {
            let err = to_list_query(&options).unwrap_err();
            assert_eq!(err.code, Code::InvalidArgument, "{options:?}");
            assert!(err.message.starts_with(field), "{}", err.message);
        }
        // Instances accept sortBy=state but still refuse bad paging.
        let err = select_instances(
            fixture(),
            &ListOptions {
                sort_by: Some(SortBy::State),
                page: Some(0),
                ..ListOptions::default()
            },
        )
        .unwrap_err();
        assert!(err.message.starts_with("page"), "{}", err.message);
    }
}
