//! List queries (selectors, fuzzy name, sorting, pagination) and their evaluation over a set of
//! objects. Pure: the cache and the direct backend share it, so both answer alike.

use std::cmp::Ordering;
use std::sync::Arc;

use kube::core::{DynamicObject, Selector};

use super::error::RouterError;
use super::selector::{FieldSelector, labels_match, parse_label_selector};

/// The largest page size a client may ask for.
pub const MAX_PAGE_SIZE: u32 = 10_000;

/// What to sort by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortBy {
    /// `metadata.name` (then namespace).
    #[default]
    Name,
    /// `metadata.creationTimestamp` (then namespace and name).
    CreationTimestamp,
}

/// Sort direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortDir {
    /// Ascending.
    #[default]
    Asc,
    /// Descending.
    Desc,
}

/// A list request as the API receives it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// Kubernetes label selector syntax.
    pub label_selector: Option<String>,
    /// Kubernetes field selector syntax (`path=value`, `path!=value`).
    pub field_selector: Option<String>,
    /// Fuzzy name filter: case-insensitive substring of `metadata.name`.
    pub name: Option<String>,
    /// Sort key.
    pub sort_by: SortBy,
    /// Sort direction.
    pub sort_dir: SortDir,
    /// 1-based page number; defaults to 1.
    pub page: Option<u32>,
    /// Items per page; `None` returns every match on one page.
    pub page_size: Option<u32>,
}

/// A [`ListQuery`] with its selectors parsed and its paging validated.
#[derive(Clone, Debug)]
pub struct CompiledQuery {
    /// Parsed label selector.
    pub labels: Selector,
    /// Parsed field selector.
    pub fields: FieldSelector,
    /// Lower-cased fuzzy name filter.
    pub name: Option<String>,
    /// Sort key.
    pub sort_by: SortBy,
    /// Sort direction.
    pub sort_dir: SortDir,
    /// 1-based page.
    pub page: u32,
    /// Page size; `None` for everything.
    pub page_size: Option<u32>,
}

impl ListQuery {
    /// Parses selectors and validates paging.
    pub fn compile(&self) -> Result<CompiledQuery, RouterError> {
        let page = self.page.unwrap_or(1);
        if page == 0 {
            return Err(RouterError::InvalidQuery {
                parameter: "page",
                reason: "pages are numbered from 1".into(),
            });
        }
        if let Some(size) = self.page_size
            && (size == 0 || size > MAX_PAGE_SIZE)
        {
            return Err(RouterError::InvalidQuery {
                parameter: "pageSize",
                reason: format!("{size} is not between 1 and {MAX_PAGE_SIZE}"),
            });
        }
        Ok(CompiledQuery {
            labels: parse_label_selector(self.label_selector.as_deref().unwrap_or(""))?,
            fields: FieldSelector::parse(self.field_selector.as_deref().unwrap_or(""))?,
            name: self
                .name
                .as_deref()
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_lowercase),
            sort_by: self.sort_by,
            sort_dir: self.sort_dir,
            page,
            page_size: self.page_size,
        })
    }
}

/// Paging facts of a list answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pagination {
    /// Matching objects over all pages.
    pub total: usize,
    /// This page (1-based).
    pub page: u32,
    /// The page size used (the total when the whole list is one page).
    pub page_size: u32,
    /// Number of pages.
    pub pages: u32,
}

/// One page of a list answer.
#[derive(Clone, Debug)]
pub struct ObjectPage {
    /// The objects of this page, in order.
    pub items: Vec<Arc<DynamicObject>>,
    /// Paging facts.
    pub pagination: Pagination,
    /// The resourceVersion the answer reflects, when known.
    pub resource_version: Option<String>,
}

impl CompiledQuery {
    /// Whether `object` in `namespace` (`None`: any) passes the selectors and the name filter.
    pub fn matches(&self, namespace: Option<&str>, object: &DynamicObject) -> bool {
        let meta = &object.metadata;
        if let Some(ns) = namespace
            && meta.namespace.as_deref() != Some(ns)
        {
            return false;
        }
        if let Some(needle) = &self.name {
            let name = meta.name.as_deref().unwrap_or_default();
            if !contains_ignore_case(name, needle) {
                return false;
            }
        }
        labels_match(&self.labels, meta.labels.as_ref())
            && (self.fields.selects_all() || self.fields.matches(object))
    }

    /// Filters, sorts and pages `objects`.
    pub fn select<I>(&self, namespace: Option<&str>, objects: I) -> ObjectPage
    where
        I: IntoIterator<Item = Arc<DynamicObject>>,
    {
        let mut matched: Vec<Arc<DynamicObject>> = objects
            .into_iter()
            .filter(|o| self.matches(namespace, o))
            .collect();
        let (sort_by, sort_dir) = (self.sort_by, self.sort_dir);
        matched.sort_unstable_by(|a, b| compare(sort_by, sort_dir, a, b));
        let total = matched.len();
        let (start, end, page_size, pages) = page_bounds(total, self.page, self.page_size);
        let items = if start < end {
            matched.drain(start..end).collect()
        } else {
            Vec::new()
        };
        ObjectPage {
            items,
            pagination: Pagination {
                total,
                page: self.page,
                page_size,
                pages,
            },
            resource_version: None,
        }
    }
}

/// Case-insensitive substring test; `needle` is already lower-case.
fn contains_ignore_case(haystack: &str, needle: &str) -> bool {
    if haystack.is_ascii() && needle.is_ascii() {
        haystack
            .as_bytes()
            .windows(needle.len().max(1))
            .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
            || needle.is_empty()
    } else {
        haystack.to_lowercase().contains(needle)
    }
}

/// `(start, end, page_size, pages)` of `page` over `total` items.
pub fn page_bounds(total: usize, page: u32, page_size: Option<u32>) -> (usize, usize, u32, u32) {
    let size = match page_size {
        Some(size) => size as usize,
        None => {
            let all = u32::try_from(total).unwrap_or(u32::MAX);
            let (start, end) = if page == 1 {
                (0, total)
            } else {
                (total, total)
            };
            return (start, end, all, u32::from(total > 0));
        }
    };
    let pages = u32::try_from(total.div_ceil(size.max(1))).unwrap_or(u32::MAX);
    let start = (page as usize - 1).saturating_mul(size).min(total);
    let end = start.saturating_add(size).min(total);
    (start, end, size as u32, pages)
}

fn compare(by: SortBy, dir: SortDir, a: &DynamicObject, b: &DynamicObject) -> Ordering {
    let (ma, mb) = (&a.metadata, &b.metadata);
    let by_name = || {
        ma.name
            .cmp(&mb.name)
            .then_with(|| ma.namespace.cmp(&mb.namespace))
    };
    let ord = match by {
        SortBy::Name => by_name(),
        SortBy::CreationTimestamp => ma
            .creation_timestamp
            .as_ref()
            .map(|t| t.0)
            .cmp(&mb.creation_timestamp.as_ref().map(|t| t.0))
            .then_with(by_name),
    };
    match dir {
        SortDir::Asc => ord,
        SortDir::Desc => ord.reverse(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(ns: &str, name: &str, created: &str, labels: serde_json::Value) -> Arc<DynamicObject> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": ns, "creationTimestamp": created,
                             "labels": labels},
            }))
            .unwrap(),
        )
    }

    fn fixture() -> Vec<Arc<DynamicObject>> {
        vec![
            obj("a", "web-1", "2024-01-03T00:00:00Z", json!({"app": "web"})),
            obj("a", "db", "2024-01-01T00:00:00Z", json!({"app": "db"})),
            obj("b", "Web-2", "2024-01-02T00:00:00Z", json!({"app": "web"})),
            obj("b", "cache", "2024-01-04T00:00:00Z", json!({})),
        ]
    }

    fn names(page: &ObjectPage) -> Vec<String> {
        page.items
            .iter()
            .map(|o| o.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    #[test]
    fn select_table() {
        let q = |f: fn(&mut ListQuery)| {
            let mut q = ListQuery::default();
            f(&mut q);
            q
        };
        // (query, namespace, names on the page, total, pages)
        type Case<'a> = (ListQuery, Option<&'a str>, Vec<&'a str>, usize, u32);
        let cases: Vec<Case> = vec![
            (q(|_| {}), None, vec!["Web-2", "cache", "db", "web-1"], 4, 1),
            (q(|_| {}), Some("a"), vec!["db", "web-1"], 2, 1),
            (
                q(|q| q.name = Some("WEB".into())),
                None,
                vec!["Web-2", "web-1"],
                2,
                1,
            ),
            (
                q(|q| q.label_selector = Some("app=web".into())),
                None,
                vec!["Web-2", "web-1"],
                2,
                1,
            ),
            (
                q(|q| q.field_selector = Some("metadata.namespace=b".into())),
                None,
                vec!["Web-2", "cache"],
                2,
                1,
            ),
            (
                q(|q| q.sort_dir = SortDir::Desc),
                None,
                vec!["web-1", "db", "cache", "Web-2"],
                4,
                1,
            ),
            (
                q(|q| q.sort_by = SortBy::CreationTimestamp),
                None,
                vec!["db", "Web-2", "web-1", "cache"],
                4,
                1,
            ),
            (
                q(|q| {
                    q.sort_by = SortBy::CreationTimestamp;
                    q.sort_dir = SortDir::Desc;
                    q.page_size = Some(3);
                }),
                None,
                vec!["cache", "web-1", "Web-2"],
                4,
                2,
            ),
            (
                q(|q| {
                    q.page_size = Some(3);
                    q.page = Some(2);
                }),
                None,
                vec!["web-1"],
                4,
                2,
            ),
            (
                q(|q| {
                    q.page_size = Some(3);
                    q.page = Some(3);
                }),
                None,
                vec![],
                4,
                2,
            ),
            (
                q(|q| {
                    q.page_size = Some(2);
                    q.name = Some("zzz".into());
                }),
                None,
                vec![],
                0,
                0,
            ),
        ];
        for (query, ns, want, total, pages) in cases {
            let page = query.compile().unwrap().select(ns, fixture());
            assert_eq!(names(&page), want, "{query:?}");
            assert_eq!(page.pagination.total, total, "{query:?}");
            assert_eq!(page.pagination.pages, pages, "{query:?}");
        }
    }

    #[test]
    fn bad_paging_is_rejected() {
        for (page, size, param) in [
            (Some(0), None, "page"),
            (None, Some(0), "pageSize"),
            (None, Some(MAX_PAGE_SIZE + 1), "pageSize"),
        ] {
            let err = ListQuery {
                page,
                page_size: size,
                ..Default::default()
            }
            .compile()
            .unwrap_err();
            assert!(
                matches!(err, RouterError::InvalidQuery { parameter, .. } if parameter == param),
                "{err}"
            );
        }
    }

    #[test]
    fn page_bounds_table() {
        for (total, page, size, want) in [
            (10, 1, Some(3), (0, 3, 3, 4)),
            (10, 4, Some(3), (9, 10, 3, 4)),
            (10, 5, Some(3), (10, 10, 3, 4)),
            (0, 1, Some(3), (0, 0, 3, 0)),
            (7, 1, None, (0, 7, 7, 1)),
            (7, 2, None, (7, 7, 7, 1)),
            (0, 1, None, (0, 0, 0, 0)),
        ] {
            assert_eq!(
                page_bounds(total, page, size),
                want,
                "{total} {page} {size:?}"
            );
        }
    }

    #[test]
    fn fuzzy_is_case_insensitive_substring() {
        for (hay, needle, want) in [
            ("nginx-web", "web", true),
            ("NGINX", "ginx", true),
            ("nginx", "xng", false),
            ("Ünïcode", "ünï", true),
        ] {
            assert_eq!(contains_ignore_case(hay, needle), want, "{hay} {needle}");
        }
    }
}
